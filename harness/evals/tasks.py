"""The offline tasks of the ablation, in one list.

Each needs some mechanisms (:attr:`~harness.evals.trial.EvalTask.needs` names the
configurations that should break it or make it clearly dearer):

* :data:`~harness.evals.tasks_long.LONG_TASK`: a long task over a small window;
* :data:`~harness.evals.tasks_memory.SMALL_STEPS`: many small steps (session memory, tier 2);
* :data:`~harness.evals.tasks_context.EXPLORE`: exploring in a subagent;
* :data:`~harness.evals.tasks_context.RENAME`: many turns over one prefix (the prompt cache);
* :data:`~harness.evals.tasks_failures.FAULT_STORM`: the API failing in every way it does;
* :data:`~harness.evals.tasks_failures.CRASH`: the process killed, then resumed;
* :data:`~harness.evals.tasks_failures.APPROVAL`: a write that waits two hours for a person;
* :data:`~harness.evals.tasks_background.TESTS_IN_BACKGROUND`: a 2-minute test suite while
  other work goes on.
"""

from __future__ import annotations

from harness.evals.tasks_background import TESTS_IN_BACKGROUND
from harness.evals.tasks_context import EXPLORE, RENAME
from harness.evals.tasks_failures import APPROVAL, CRASH, FAULT_STORM
from harness.evals.tasks_long import LONG_TASK
from harness.evals.tasks_memory import SMALL_STEPS
from harness.evals.trial import EvalTask

TASKS: tuple[EvalTask, ...] = (
    LONG_TASK,
    SMALL_STEPS,
    EXPLORE,
    RENAME,
    FAULT_STORM,
    CRASH,
    APPROVAL,
    TESTS_IN_BACKGROUND,
)


def task(name: str) -> EvalTask:
    """The task called ``name`` (raises :class:`KeyError` naming the known ones)."""
    for found in TASKS:
        if found.name == name:
            return found
    raise KeyError(f"no task called {name!r}; the tasks are: {', '.join(t.name for t in TASKS)}")


__all__ = [
    "APPROVAL",
    "CRASH",
    "EXPLORE",
    "FAULT_STORM",
    "LONG_TASK",
    "RENAME",
    "SMALL_STEPS",
    "TASKS",
    "TESTS_IN_BACKGROUND",
    "task",
]
