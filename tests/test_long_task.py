"""Chapter 12's long task: twelve steps over a small window, two compactions, with and without
the todo list (``harness.notebook.planning``).

Runs are deterministic (a seeded lossy summary, a scripted policy), so the facts below are
exact; each test asserts the behaviour the chapter shows, not a timing.
"""

from __future__ import annotations

from functools import cache
from statistics import mean

from harness.compaction.events import Compacted
from harness.compaction.summary import is_compaction_request
from harness.events import ToolFinished
from harness.notebook.planning import STEPS, TaskRun, long_task, run_long_task
from harness.planning.plugin import TODO_HEADING

PLAN_SEEDS = range(5)
NO_PLAN_SEEDS = range(20)


@cache
def run(plan: bool, seed: int) -> TaskRun:
    return run_long_task(plan=plan, seed=seed)


def test_with_the_plan_every_step_is_done_once() -> None:
    for seed in PLAN_SEEDS:
        done = run(True, seed)
        assert (done.completed, done.repeated, done.skipped) == (STEPS, 0, 0), f"seed {seed}"
        assert sorted(done.calls) == sorted(set(done.calls))


def test_the_plan_runs_go_through_two_compactions() -> None:
    for seed in PLAN_SEEDS:
        assert run(True, seed).compactions == 2, f"seed {seed}"


def test_with_the_plan_progress_never_goes_back_and_ends_at_twelve() -> None:
    for seed in PLAN_SEEDS:
        by_turn = run(True, seed).done_by_turn
        assert list(by_turn) == sorted(by_turn)
        assert by_turn[-1] == STEPS


def test_without_the_plan_steps_are_repeated_and_skipped() -> None:
    runs = [run(False, seed) for seed in NO_PLAN_SEEDS]
    assert sum(r.repeated for r in runs) >= 1
    assert sum(r.skipped for r in runs) >= 1
    assert any(r.repeated and r.skipped for r in runs)  # both in one run, too
    assert all(r.compactions >= 1 for r in runs)


def test_without_the_plan_a_step_is_repeated_only_after_a_compaction() -> None:
    repeats = 0
    for seed in NO_PLAN_SEEDS:
        done = run(False, seed)
        first_compaction = next(i for i, e in enumerate(done.events) if isinstance(e, Compacted))
        finished = [
            i
            for i, e in enumerate(done.events)
            if isinstance(e, ToolFinished) and e.name == "migrate" and not e.is_error
        ]
        assert len(finished) == len(done.calls)
        for n, module in enumerate(done.calls):
            if module in done.calls[:n]:  # a step done before, done again
                repeats += 1
                assert finished[n] > first_compaction, f"seed {seed}: {module} repeated early"
    assert repeats == sum(run(False, seed).repeated for seed in NO_PLAN_SEEDS) > 0


def test_the_chapters_figures_over_twenty_seeds() -> None:
    without = [run(False, seed) for seed in NO_PLAN_SEEDS]
    assert mean(r.completed for r in without) == 11.5
    assert mean(r.repeated for r in without) == 3.25
    assert mean(r.skipped for r in without) == 0.5
    assert round(mean(r.cost for r in without), 3) == 0.150
    with_plan = [run(True, seed) for seed in PLAN_SEEDS]
    assert round(mean(r.cost for r in with_plan), 3) == 0.164
    # The plan costs output tokens: more per run than without it, for no repeated work.
    assert mean(r.cost for r in with_plan) > mean(r.cost for r in without)


def test_after_each_compaction_the_plan_run_reads_its_list_from_the_context() -> None:
    task = long_task(plan=True, seed=0)
    done = task.run()
    assert done.compactions == 2
    summaries = [i for i, r in enumerate(task.model.requests) if is_compaction_request(r)]
    assert len(summaries) == 2
    for i in summaries:
        after = task.model.requests[i + 1]  # the first request built on the summary
        assert TODO_HEADING in str(after.messages[0])
