"""Evals (chapter 15): which mechanism matters, measured offline on tasks that need them.

Each chapter measured its mechanism on its own scripted session. This package asks the
question the other way round: take the full harness (what the command line assembles), leave
out *one* mechanism, run the same tasks, and see what is lost: tasks not finished, dollars,
turns, tokens, time. The result is the table "what each mechanism is worth".

* ``configs``: :class:`Configuration`, the full harness and one configuration per mechanism
  left out, each applied to the harness ``assemble`` built (never a second assembly);
* ``policy``: what the offline tasks' scripted model is made of: a policy that reads the
  request, and :class:`Interfering`, what happens *to* a session (faults, a killed process);
* ``trial``: :class:`EvalTask` (setup, prompt, policy, a check of the outcome) and
  :class:`Trial`, one task under one configuration;
* ``tasks_long``, ``tasks_context``, ``tasks_failures``: the tasks, listed in ``tasks``;
* ``runner``: :func:`run_task`, :func:`run_suite` and the :class:`Outcome` of each;
* ``table``: :func:`ablation_table`, the table itself;
* ``inspect_tasks``: the same tasks as Inspect tasks (``inspect eval``), offline or live.
"""

from __future__ import annotations

from harness.evals.configs import CONFIGURATIONS, FULL, Configuration, configuration
from harness.evals.policy import Interfering, ProcessKilled
from harness.evals.runner import Outcome, run_suite, run_task
from harness.evals.table import AblationTable, Row, ablation_table
from harness.evals.tasks import TASKS, task
from harness.evals.trial import EvalTask, Trial

__all__ = [
    "CONFIGURATIONS",
    "FULL",
    "TASKS",
    "AblationTable",
    "Configuration",
    "EvalTask",
    "Interfering",
    "Outcome",
    "ProcessKilled",
    "Row",
    "Trial",
    "ablation_table",
    "configuration",
    "run_suite",
    "run_task",
    "task",
]
