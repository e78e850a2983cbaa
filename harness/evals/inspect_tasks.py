"""The ablation's tasks as Inspect tasks (https://inspect.aisi.org.uk/): ``inspect eval``.

Inspect is the UK AI Security Institute's open-source eval framework: datasets, solvers,
scorers, metrics, parallel runs, logs and a log viewer. Here it runs the harness's own tasks:

* the **dataset** is the tasks (one sample per task and configuration: its prompt, with the
  task's and the configuration's names in the sample's metadata);
* the **solver** runs the assembled harness under the configuration on that task (the
  harness's own model boundary does the work, not Inspect's model);
* the **scorer** is the task's check, on the workspace and the conversation the run left;
  each score's metadata holds the cost, turns, tokens and wall time, and the task's metrics
  sum or average them.

Offline, Inspect's model is ``mockllm/model`` and the harness's scripted policies answer::

    uv run --group evals inspect eval harness/evals/inspect_tasks.py --model mockllm/model
    uv run --group evals inspect eval harness/evals/inspect_tasks.py --model mockllm/model \\
        -T configuration="no recovery"

Live, name an Anthropic model: the harness's live model (``ANTHROPIC_API_KEY``) runs it, with
that model id, on the real clock (every task, several dollars: try ``-T tasks="fault storm"``)::

    uv run --group evals inspect eval harness/evals/inspect_tasks.py \\
        --model anthropic/claude-haiku-4-5 -T configuration=full

Inspect is an optional dependency (the ``evals`` group): importing this module needs it; the
rest of ``harness.evals`` does not. :func:`run_through_inspect` runs the suite through
``inspect_ai.eval`` and returns the same :class:`~harness.evals.runner.Outcome` list as
:func:`~harness.evals.runner.run_suite` (a test checks they are equal).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    accuracy,
    metric,
    scorer,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver

from harness.evals.configs import CONFIGURATIONS, Configuration, configuration
from harness.evals.runner import Outcome, outcome_of, trial_root
from harness.evals.tasks import TASKS
from harness.evals.tasks import task as task_named
from harness.evals.trial import EvalTask, Trial

_trials: dict[str, tuple[Trial, Path]] = {}
"""Each sample's trial, from its solver to its scorer (by the sample's uuid)."""


def _names(given: str | Sequence[str], known: Iterable[str]) -> list[str]:
    """``"a, b"`` or ``["a", "b"]`` (``-T name=a,b`` on Inspect's command line), or ``""``:
    all of ``known``; checked against ``known``."""
    every = list(known)
    parts = given.split(",") if isinstance(given, str) else list(given)
    wanted = [n.strip() for n in parts if n.strip()] or every
    unknown = [n for n in wanted if n not in every]
    if unknown:
        raise ValueError(f"unknown: {', '.join(unknown)}; known: {', '.join(every)}")
    return wanted


def samples(tasks: Sequence[EvalTask], configurations: Sequence[Configuration]) -> list[Sample]:
    """One sample per task and configuration (the tasks in the outer loop, as the plain
    runner orders them)."""
    return [
        Sample(
            input=t.prompt,
            id=f"{t.name} | {c.name}",
            metadata={"task": t.name, "configuration": c.name},
        )
        for t in tasks
        for c in configurations
    ]


@solver
def run_harness() -> Solver:
    """Run the assembled harness on the sample's task, under the sample's configuration.
    Offline (``mockllm``) the task's scripted policy answers; with an ``anthropic/`` model,
    the live model does the work."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        chosen = task_named(str(state.metadata["task"]))
        config = configuration(str(state.metadata["configuration"]))
        model = str(state.model)
        live = not model.startswith("mockllm/")
        env: dict[str, str] = {}
        if live:
            import os

            env = {**os.environ, "HARNESS_MODEL": model.split("/", 1)[-1]}
        folder = trial_root(chosen)
        trial = Trial(chosen, config, folder, live=live, env=env)

        def drive() -> None:  # synchronous, like the harness: in a thread of its own
            chosen.setup(trial.workspace)
            chosen.drive(trial)

        await asyncio.to_thread(drive)
        _trials[state.uuid] = (trial, folder)
        last = trial.conversation[-1] if trial.conversation else None
        if last is not None and last["role"] == "assistant":
            content = last["content"]
            state.output.completion = (
                content
                if isinstance(content, str)
                else " ".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
            )
        state.completed = True
        return state

    return solve


def _summed(key: str) -> Metric:
    def compute(scores: list[SampleScore]) -> float:
        return float(sum((s.score.metadata or {}).get(key, 0) for s in scores))

    return compute


@metric
def cost_usd() -> Metric:
    """Dollars, every sample together (the cost meter's)."""
    return _summed("cost_usd")


@metric
def turns() -> Metric:
    """Turns of the main loops, every sample together."""
    return _summed("turns")


@metric
def tokens() -> Metric:
    """Tokens billed (prompts, cached or not, and output), every sample together."""
    return _summed("tokens")


@metric
def wall_seconds() -> Metric:
    """Wall time on each session's clock, every sample together."""
    return _summed("wall_seconds")


@scorer(metrics=[accuracy(), cost_usd(), turns(), tokens(), wall_seconds()])
def task_check() -> Scorer:
    """The task's own check of the workspace and the conversation; the run's figures go in
    the score's metadata (an :class:`~harness.evals.runner.Outcome` as a dict)."""

    async def score(state: TaskState, target: Target) -> Score:
        trial, folder = _trials.pop(state.uuid)
        try:
            outcome = outcome_of(trial)
        finally:
            trial.close()
            shutil.rmtree(folder, ignore_errors=True)
        return Score(
            value=CORRECT if outcome.finished else INCORRECT,
            explanation=outcome.why or "the check passed",
            metadata={**outcome.as_dict(), "tokens": outcome.tokens},
        )

    return score


@task
def ablation(configuration: str | list[str] = "", tasks: str | list[str] = "") -> Task:
    """The ablation's tasks, under the named configurations (comma-separated; ``""``: all of
    them, the full harness first) and tasks (``""``: all)."""
    configs = [
        c
        for name in _names(configuration, (c.name for c in CONFIGURATIONS))
        for c in CONFIGURATIONS
        if c.name == name
    ]
    chosen = [task_named(n) for n in _names(tasks, (t.name for t in TASKS))]
    return Task(
        dataset=MemoryDataset(samples(chosen, configs), name="harness ablation"),
        solver=run_harness(),
        scorer=task_check(),
        name="ablation",
    )


def run_through_inspect(
    tasks: Sequence[EvalTask] = TASKS,
    configurations: Sequence[Configuration] = CONFIGURATIONS,
    *,
    log_dir: Path | None = None,
    **options: Any,
) -> list[Outcome]:
    """Run the suite with ``inspect_ai.eval`` (offline: ``mockllm/model``) and return the
    outcomes in the plain runner's order, from the scores' metadata."""
    spec = ablation(configuration=[c.name for c in configurations], tasks=[t.name for t in tasks])
    found: dict[str, Outcome] = {}
    with tempfile.TemporaryDirectory(prefix="inspect-logs-") as logs:
        [log] = eval(
            spec,
            model="mockllm/model",
            log_dir=str(log_dir or logs),
            display="none",
            **options,
        )
        if log.status != "success" or log.samples is None:  # read while the log is there
            raise RuntimeError(f"the Inspect run did not succeed: {log.status} {log.error}")
        for sample in log.samples:
            [score] = (sample.scores or {}).values()
            data = {k: v for k, v in (score.metadata or {}).items() if k != "tokens"}
            found[str(sample.id)] = Outcome(**data)
    return [found[f"{t.name} | {c.name}"] for t in tasks for c in configurations]


__all__ = ["ablation", "run_harness", "run_through_inspect", "samples", "task_check"]
