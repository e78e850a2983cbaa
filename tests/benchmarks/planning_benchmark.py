"""What a todo list buys on a long task: chapter 12's task on 20 seeds, with and without.

    uv run python tests/benchmarks/planning_benchmark.py [--seeds N]

The task (``harness.notebook.planning``): migrate twelve modules, one ``migrate`` call each,
over a 40K window that auto-compacts about twice. A scripted policy plays the model: it can
only know what its context shows. The summary a compaction asks for is lossy in the two
ways summaries are (it leaves out a step done with probability 0.25, and counts the step
announced next as done with probability 0.5: our choice, seeded). Without a plan the agent
believes the summary; with one it writes its todo list, updates it with each call, and the
harness pins the list so every compaction puts it back.

Per arm it prints the mean over the seeds of: steps completed (of 12), steps repeated, steps
skipped, turns, compactions, cost in USD (``harness.pricing``, the course's model), and the
share of prompt tokens read from the cache; then each seed's line. Deterministic: the same
numbers on every run (``FakeClock``, seeded summaries).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.notebook.planning import STEPS, TaskRun, run_long_task

SEEDS = 20

COLUMNS = ("completed", "repeated", "skipped", "turns", "compactions", "cost", "cache_read_share")


def row(run: TaskRun) -> dict[str, float]:
    return {
        "completed": run.completed,
        "repeated": run.repeated,
        "skipped": run.skipped,
        "turns": run.turns,
        "compactions": run.compactions,
        "cost": run.cost,
        "cache_read_share": run.cache_read_share,
    }


def figures(seeds: int = SEEDS) -> list[dict[str, object]]:
    """One row per arm (``plan`` False, then True): the mean of each column over the seeds."""
    out: list[dict[str, object]] = []
    for plan in (False, True):
        rows = [row(run_long_task(plan=plan, seed=seed)) for seed in range(seeds)]
        means = {k: statistics.fmean(r[k] for r in rows) for k in COLUMNS}
        out.append({"plan": plan, "seeds": seeds, **means})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=SEEDS)
    seeds = parser.parse_args(argv).seeds
    print(f"chapter 12's long task: {STEPS} steps, {seeds} seeds, means per arm\n")
    header = (
        f"{'arm':<12}{'done':>6}{'repeated':>10}{'skipped':>9}{'turns':>7}"
        f"{'compactions':>13}{'cost':>9}{'cache read':>12}"
    )
    print(header)
    for arm in figures(seeds):
        name = "todo list" if arm["plan"] else "no plan"
        print(
            f"{name:<12}{arm['completed']:>6.2f}{arm['repeated']:>10.2f}{arm['skipped']:>9.2f}"
            f"{arm['turns']:>7.2f}{arm['compactions']:>13.2f}{arm['cost']:>9.4f}"
            f"{arm['cache_read_share']:>11.1%}"
        )
    print("\nper seed (calls to migrate, in order):")
    for plan in (False, True):
        for seed in range(seeds):
            run = run_long_task(plan=plan, seed=seed)
            name = "todo list" if plan else "no plan"
            print(
                f"  {name:<10} seed {seed:>2}: {run.completed:>2} done, {run.repeated} repeated, "
                f"{run.skipped} skipped, {run.turns} turns, ${run.cost:.4f}"
            )


if __name__ == "__main__":
    main()
