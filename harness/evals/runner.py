"""The runner: each task under each configuration, and what each run cost.

:func:`run_task` runs one task under one configuration in a fresh folder and returns an
:class:`Outcome`: whether the task was done (its check, on the workspace and the
conversation), what it cost by chapter 00's :class:`~harness.pricing.CostMeter`, its turns,
its tokens, and its wall time on the session's clock. :func:`run_suite` does it for every
pair.

Why a runner of our own beside Inspect (:mod:`harness.evals.inspect_tasks`, which runs the same
tasks): a notebook must run offline, in seconds, with the same numbers every time, on the
course's own dependencies. This runner puts every session on a
:class:`~harness.clock.FakeClock` (a retry's 20 s wait and a 2-minute test suite take no real
time, and the wall time is the same on every run) and runs one trial after the other; Inspect
would add some 80 packages and over a second of imports to every notebook that shows the
table. Inspect is what to use for the same tasks live, in parallel, with its logs and viewer:
through it each trial still runs on its own fake clock offline, and the outcomes are the same
as here (a test checks it).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.compaction.events import Compacted
from harness.evals.configs import CONFIGURATIONS, Configuration
from harness.evals.tasks import TASKS
from harness.evals.trial import EvalTask, Trial
from harness.events import AssistantReplied, ModelCalled
from harness.pricing import CostMeter
from harness.recovery import PromptTooLong


@dataclass(frozen=True)
class Outcome:
    """One task under one configuration."""

    task: str
    configuration: str
    finished: bool
    """The task's check passed on what the session left behind."""
    why: str
    """What the check found wrong, or why a run stopped (``""`` when finished cleanly)."""
    cost_usd: float
    turns: int
    """Replies of the session's main loop, across its processes (a subagent's not counted)."""
    input_tokens: int
    """Prompt tokens read at the full price (neither written to nor read from the cache)."""
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    wall_seconds: float
    """Time on the session's clock, less the time it waited for a person."""
    calls: int
    """Model calls of every kind: the loop's, retries, summaries, extractions, subagents'."""
    peak_context: int
    """The largest request of the main loop, in tokens (by ``harness.tokens``): what a
    subagent keeps small, and what runs over the window without compaction."""
    compactions: int
    """Compactions of the main conversation, of any tier (microcompact included)."""
    over_window: int
    """Requests the API refused as longer than the window (each one then compacted by error
    recovery, if it is there)."""
    summaries: int = 0
    """Compactions of the main conversation that were a summary: a model call each (what
    session memory, tier 2, saves when it has kept up)."""

    @property
    def tokens(self) -> int:
        """Every token billed: prompts (cached or not) and output."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain values (for Inspect's score metadata, a JSON file, a data frame)."""
        return asdict(self)


def outcome_of(trial: Trial) -> Outcome:
    """What ``trial`` did, once its task was driven to the end."""
    meter = CostMeter(calls=list(trial.meters()))
    problem = trial.task.check(trial.workspace, trial.conversation)
    why = "" if problem is None else "; ".join([*trial.problems, problem])
    return Outcome(
        task=trial.task.name,
        configuration=trial.configuration.name,
        finished=problem is None,
        why=why,
        cost_usd=meter.total.total,
        turns=sum(isinstance(e, AssistantReplied) for e in trial.events),
        input_tokens=sum(c.usage.input_tokens for c in meter.calls),
        output_tokens=sum(c.usage.output_tokens for c in meter.calls),
        cache_read_tokens=meter.cache_read_tokens,
        cache_write_tokens=sum(c.usage.cache_creation_input_tokens or 0 for c in meter.calls),
        wall_seconds=trial.clock.now() - trial.started - trial.waited,
        calls=len(meter.calls),
        peak_context=max(
            (e.estimated_tokens for e in trial.events if isinstance(e, ModelCalled)), default=0
        ),
        compactions=sum(isinstance(e, Compacted) for e in trial.events),
        over_window=sum(isinstance(e, PromptTooLong) for e in trial.events),
        summaries=sum(isinstance(e, Compacted) and e.tier == "summary" for e in trial.events),
    )


def trial_root(task: EvalTask) -> Path:
    """A new temporary folder for a trial of ``task``. Paths under it reach the model (a
    background shell's log, say), so every runner makes its folders alike: the same length,
    the same tokens, the same figures."""
    slug = re.sub(r"[^a-z0-9]+", "-", task.name.lower()).strip("-")
    return Path(tempfile.mkdtemp(prefix=f"eval-{slug}-"))


def run_task(
    task: EvalTask,
    configuration: Configuration,
    *,
    root: Path | None = None,
    live: bool = False,
    env: Mapping[str, str] | None = None,
) -> Outcome:
    """Run ``task`` under ``configuration`` and say how it went.

    ``root``: an empty folder for the trial (default: a temporary one, removed after).
    ``live``: the real model (``ANTHROPIC_API_KEY`` in ``env``, default the process
    environment) on the real clock, instead of the task's policy on a fake clock.
    """
    if root is not None:
        return _run(task, configuration, root, live, env)
    folder = trial_root(task)
    try:
        return _run(task, configuration, folder, live, env)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(
    task: EvalTask,
    configuration: Configuration,
    root: Path,
    live: bool,
    env: Mapping[str, str] | None,
) -> Outcome:
    trial = Trial(task, configuration, root, live=live, env=dict(env or {}))
    try:
        task.setup(trial.workspace)
        task.drive(trial)
        return outcome_of(trial)
    finally:
        trial.close()


def run_suite(
    tasks: Iterable[EvalTask] | None = None,
    configurations: Iterable[Configuration] = CONFIGURATIONS,
) -> list[Outcome]:
    """Every task under every configuration, one after the other (tasks in the outer loop).
    ``tasks``: default, the course's offline tasks (:data:`harness.evals.tasks.TASKS`)."""
    tasks = TASKS if tasks is None else tasks
    chosen = list(configurations)
    return [run_task(task, config) for task in tasks for config in chosen]


__all__ = ["Outcome", "outcome_of", "run_suite", "run_task"]
