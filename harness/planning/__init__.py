"""Planning (chapter 12): a todo list the model writes, reminders, plan mode, a progress file.

* ``todos`` -- the list: items, validation, the checklist it is shown and kept as.
* ``tool`` -- the ``todo_write`` tool.
* ``reminders`` -- when a reminder is due, its words, and where in the request it goes.
* ``plan_mode`` -- plan mode's way out: ``exit_plan_mode``, through the approver.
* ``progress`` -- the progress file a new session starts from.
* ``plugin`` -- :class:`Planning`, all of it at the loop's named points.
"""

from __future__ import annotations

from harness.planning.plan_mode import (
    EXIT_PLAN_TOOL,
    ExitPlanModeInput,
    PlanMode,
    exit_plan_mode_tool,
    plan_steps,
)
from harness.planning.plugin import Planning, PlanningProblem, TodosReminded, list_in
from harness.planning.progress import (
    PROGRESS_FILE,
    Progress,
    ProgressFile,
    ProgressFileError,
    parse_progress,
)
from harness.planning.reminders import (
    PLAN_REMINDER_TURNS,
    REMINDER_TURNS,
    ReminderClock,
    todo_reminder,
    with_reminder,
)
from harness.planning.todos import (
    MAX_TODOS,
    RESULT_TEXT,
    TodoItem,
    TodoList,
    Todos,
    TodoWriteInput,
    parse_checklist,
)
from harness.planning.tool import TODO_TOOL, todo_tool

__all__ = [
    "EXIT_PLAN_TOOL",
    "MAX_TODOS",
    "PLAN_REMINDER_TURNS",
    "PROGRESS_FILE",
    "REMINDER_TURNS",
    "RESULT_TEXT",
    "TODO_TOOL",
    "ExitPlanModeInput",
    "PlanMode",
    "Planning",
    "PlanningProblem",
    "Progress",
    "ProgressFile",
    "ProgressFileError",
    "ReminderClock",
    "TodoItem",
    "TodoList",
    "TodoWriteInput",
    "Todos",
    "TodosReminded",
    "exit_plan_mode_tool",
    "list_in",
    "parse_checklist",
    "parse_progress",
    "plan_steps",
    "todo_reminder",
    "todo_tool",
    "with_reminder",
]
