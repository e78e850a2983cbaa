"""Plan mode: read, think, present a plan, and change nothing until a person approves it.

Chapter 02's permissions already have the mode: in ``plan`` only read-only tools run and
everything else is denied. What plan mode adds is the way out, the ``exit_plan_mode`` tool
(Claude Code's ``ExitPlanMode``): the model calls it with its plan, and the call goes
through the approver like any call a rule says to ask about (an ask rule names it while the
mode is on). So a person approves at the terminal or in a widget (chapter 02), or the call
waits as a durable approval in the store, to be decided hours later in another process
(chapter 09); nothing here knows which.

* Approved: the call runs. The mode goes back to what it was before (``default`` if plan
  mode was where the session started), and the plan's steps become the todo list.
* Rejected: the call does not run; the model gets the refusal with the person's reason, as
  for any denied call, and stays in plan mode to revise the plan.

Claude Code also lets the person choose the mode to continue in, and keeps the plan in a
file; here the plan lives in the call's input (and so in the transcript) and its steps in
the todo list.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

from pydantic import Field

from harness.planning.todos import MAX_TEXT, MAX_TODOS, TodoItem, TodoList, Todos
from harness.tools.base import Tool, ToolContext, ToolInput
from harness.tools.permissions import Mode, Permissions, Rule

EXIT_PLAN_TOOL = "exit_plan_mode"

APPROVED_TEXT = (
    "The user approved your plan. Plan mode is off: you may now change files and run "
    "commands. Your todo list holds the plan's steps; keep it current as you work."
)

# A step of a plan: a top-level list item ("1. ", "2) ", "- ", "* "), not an indented one.
_STEP = re.compile(r"^(?:\d{1,3}[.)]|[-*+])\s+(?:\[[ xX~]\]\s+)?(?P<text>\S.*)$")


class ExitPlanModeInput(ToolInput):
    plan: str = Field(min_length=1, max_length=50_000)
    """The plan, in Markdown. Its top-level list items (numbered or bulleted) are its steps:
    they become the todo list once the plan is approved."""


def plan_steps(plan: str) -> list[str]:
    """The steps of a Markdown plan: its top-level list items, in order, each on one line.

    A plan with no list is one step (the plan itself, cut to fit), so an approved plan always
    leaves something on the list. At most :data:`~harness.planning.todos.MAX_TODOS` steps.
    """
    steps = []
    for line in plan.splitlines():
        found = _STEP.match(line)
        if found is not None:
            text = " ".join(found.group("text").replace("**", "").split())
            if text:
                steps.append(text[:MAX_TEXT])
    if not steps:
        flat = " ".join(plan.split())
        steps = [flat[:MAX_TEXT]] if flat else []
    return steps[:MAX_TODOS]


@dataclass
class PlanMode:
    """Plan mode over a :class:`~harness.tools.permissions.Permissions`: on, off, and the
    approved plan. Built on permissions already in plan mode, it is on from the start."""

    permissions: Permissions
    todos: Todos
    after: Mode = "default"
    """The mode to go back to when a plan is approved."""
    plans: list[str] = field(default_factory=list)
    """Every approved plan, in order."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if self.active:
            self._ask_to_exit(True)

    @property
    def active(self) -> bool:
        return self.permissions.mode == "plan"

    def enter(self) -> None:
        """Turn plan mode on (remembering the mode to come back to)."""
        with self._lock:
            if not self.active:
                self.after = self.permissions.mode
                self.permissions.mode = "plan"
            self._ask_to_exit(True)

    def leave(self) -> None:
        """Turn plan mode off, back to :attr:`after`."""
        with self._lock:
            if self.active:
                self.permissions.mode = self.after
            self._ask_to_exit(False)

    def approved(self, plan: str) -> TodoList:
        """What an approved plan does: plan mode off, its steps the new todo list."""
        self.leave()
        self.plans.append(plan)
        steps = plan_steps(plan)
        items = [
            TodoItem(
                content=step,
                activeForm=step,
                status="in_progress" if i == 0 else "pending",
            )
            for i, step in enumerate(steps)
        ]
        return self.todos.write(items)

    def _ask_to_exit(self, on: bool) -> None:
        rules = [r for r in self.permissions.ask if str(r) != EXIT_PLAN_TOOL]
        self.permissions.ask[:] = [*rules, Rule.parse(EXIT_PLAN_TOOL)] if on else rules


def exit_plan_mode_tool(plan_mode: PlanMode) -> Tool[ExitPlanModeInput]:
    """The ``exit_plan_mode`` tool. It runs only once approved (the ask rule sends every call
    to the approver); running, it ends plan mode and makes the plan the todo list."""

    def exit_plan(args: ExitPlanModeInput, context: ToolContext) -> str:
        todo_list = plan_mode.approved(args.plan)
        return f"{APPROVED_TEXT}\n\n{todo_list.render()}"

    description = (
        "In plan mode, present your plan to the user for approval: a short Markdown plan whose "
        "numbered or bulleted top-level items are its steps. Approved, plan mode ends and the "
        "steps become your todo list; refused, you get the user's reason and stay in plan mode. "
        "Use it only in plan mode, once you have read what you need."
    )
    return Tool(EXIT_PLAN_TOOL, description, ExitPlanModeInput, exit_plan, read_only=False)
