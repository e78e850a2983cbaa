"""``Planning``: the todo list, its reminders, plan mode and the progress file, in the loop.

One plugin, at the loop's named points (chapter 01), beside the others:

* its tools: ``todo_write`` (and ``exit_plan_mode`` when plan mode is set up): add
  :meth:`Planning.tools` to the agent's tools;
* ``call_model``: the reminders, on the copy of each of the loop's own requests that is sent
  (never a side request: a compaction's summary needs no nudge). Put this plugin *after*
  prompt caching in the agent's plugins, so that the breakpoint is already on the last real
  block and the reminder goes after it (chapter 03: the cache survives it);
* ``after_reply``: counts the model's turns, for the reminder's cadence;
* the todo list is *pinned* (chapter 05's pinned facts): after every compaction, whichever
  tier, the current checklist is looked for in the new context and put back if a summary
  lost it. Give the same ``PinnedFacts`` to auto-compact and to ``Planning``;
* :meth:`Planning.restore`: a resumed session (chapter 08) gets its list back from the
  conversation: the last ``todo_write`` that was accepted, or a checklist put back later;
* the progress file is written whenever the list changes, and read by :meth:`start`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from anthropic.types import Message
from pydantic import ValidationError

from harness import messages as m
from harness.compaction.pinned import PinnedFact, PinnedFacts
from harness.events import Event
from harness.loop import BaseAgent, ModelRequest, Plugin
from harness.planning.plan_mode import PlanMode, exit_plan_mode_tool
from harness.planning.progress import ProgressFile, ProgressFileError
from harness.planning.reminders import (
    PLAN_MODE_REMINDER,
    PLAN_REMINDER_TURNS,
    REMINDER_TURNS,
    ReminderClock,
    system_reminder,
    todo_reminder,
    with_reminder,
)
from harness.planning.todos import TodoList, Todos, parse_checklist
from harness.planning.tool import TODO_TOOL, todo_tool
from harness.tools.base import Tool
from harness.tools.permissions import Permissions

TODO_HEADING = "Your todo list (todo_write), as last written:"
WRITERS = frozenset({TODO_TOOL, "TodoWrite"})
"""Tools whose input is a whole todo list: ours, and Claude Code's (same fields), so a resumed
Claude Code transcript gives its list back too."""
TODO_END = "(end of the todo list)"


@dataclass(frozen=True)
class TodosReminded(Event):
    """A reminder went with a request (not kept in the conversation)."""

    kind: str
    """``todos`` or ``plan_mode``."""
    open_items: int

    def __str__(self) -> str:
        if self.kind == "plan_mode":
            return "⏰ plan-mode reminder sent"
        return f"⏰ todo reminder sent ({self.open_items} open)"


@dataclass(frozen=True)
class PlanningProblem(Event):
    """Something around the list failed (the progress file could not be read or written);
    the session goes on without it."""

    reason: str

    def __str__(self) -> str:
        return f"⚠ planning: {self.reason}"


class Planning(Plugin):
    """The session's todo list and what keeps it alive."""

    def __init__(
        self,
        *,
        todos: Todos | None = None,
        pinned: PinnedFacts | None = None,
        permissions: Permissions | None = None,
        progress: ProgressFile | None = None,
        reminder_turns: int | None = REMINDER_TURNS,
    ) -> None:
        """``permissions``: the agent's (its tool runner's), to set up plan mode with an
        ``exit_plan_mode`` tool; ``reminder_turns=None`` turns the todo reminders off."""
        self.todos = todos or Todos()
        self.pinned = pinned or PinnedFacts()
        self.pinned.live.append(self.pinned_fact)
        self.plan_mode = PlanMode(permissions, self.todos) if permissions is not None else None
        self.progress = progress
        self.progress_error: str | None = None
        """Why :meth:`start` could not use the progress file (then the session has none)."""
        self.clock = ReminderClock(every=reminder_turns or 0)
        self.reminders_on = reminder_turns is not None
        self.reminded: list[int] = []
        """The turns whose request carried a todo reminder."""
        self._plan_reminded: int | None = None
        """The turn of the last plan-mode reminder (``None``: none since plan mode began)."""
        self.todos.listeners.append(self._changed)

    # -- set-up ------------------------------------------------------------------------------

    def tools(self) -> list[Tool[Any]]:
        """The tools to give the agent: ``todo_write``, and ``exit_plan_mode`` with plan mode."""
        out: list[Tool[Any]] = [todo_tool(self.todos)]
        if self.plan_mode is not None:
            out.append(exit_plan_mode_tool(self.plan_mode))
        return out

    def start(self) -> str:
        """Read the progress file, if there is one: its checklist becomes the todo list, and
        the returned text (``""`` if none) goes in front of the session's first prompt. A file
        that cannot be used is left alone and turned off (:attr:`progress_error` says why; a
        ``PlanningProblem`` event says it too, at the next run)."""
        if self.progress is None:
            return ""
        try:
            found = self.progress.read()
        except ProgressFileError as error:
            # A file a person broke (or one that is not ours) is theirs to fix: it is left as
            # it is, and this session keeps no progress file rather than write over it.
            name = self.progress.path.name
            self.progress_error = f"the progress file {name} was not used: {error}"
            self.progress = None
            self._problem(self.progress_error)
            return ""
        if found is None:
            return ""
        self.todos.restore(found.todos)
        return found.briefing(self.progress.path.name)

    def restore(self, conversation: Sequence[m.MessageDict]) -> TodoList:
        """Put back the list a resumed conversation holds (see :func:`list_in`)."""
        found = list_in(conversation)
        if found is not None:
            self.todos.restore(found)
        return self.todos.current

    # -- the loop's points --------------------------------------------------------------------

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        if request.purpose != "turn":
            return call(request)
        if self.plan_mode is not None and self.plan_mode.active:
            last = self._plan_reminded
            if last is None or self.clock.turns - last >= PLAN_REMINDER_TURNS:
                request = with_reminder(request, system_reminder(PLAN_MODE_REMINDER))
                self._plan_reminded = self.clock.turns
                agent.emit(TodosReminded("plan_mode", len(self.todos.current.open)))
        else:
            self._plan_reminded = None
        todo_list = self.todos.current
        if self.reminders_on and self.clock.due(todo_list):
            request = with_reminder(request, todo_reminder(todo_list))
            self.clock.last_reminder = self.clock.turns
            self.reminded.append(self.clock.turns + 1)
            agent.emit(TodosReminded("todos", len(todo_list.open)))
        return call(request)

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        self.clock.turns += 1
        for problem in self._drain_problems():
            agent.emit(PlanningProblem(problem))

    def after_tools(self, agent: BaseAgent, results: list[m.Block]) -> None:
        for problem in self._drain_problems():
            agent.emit(PlanningProblem(problem))

    # -- the pinned list ----------------------------------------------------------------------

    def pinned_fact(self) -> PinnedFact | None:
        """The checklist as a pinned fact (``None`` while the list is empty)."""
        todo_list = self.todos.current
        if not todo_list.items:
            return None
        return PinnedFact(f"{TODO_HEADING}\n{todo_list.render()}\n{TODO_END}", "todo list")

    # -- inside --------------------------------------------------------------------------------

    def _changed(self, todo_list: TodoList) -> None:
        self.clock.last_write = self.clock.turns
        if self.progress is not None:
            self.progress.write(todo_list)  # a failure lands in todos.problems

    def _problem(self, reason: str) -> None:
        self.todos.problems.append(reason)

    def _drain_problems(self) -> list[str]:
        out, self.todos.problems[:] = list(self.todos.problems), []
        return out


def list_in(conversation: Sequence[m.MessageDict]) -> TodoList | None:
    """The latest todo list a conversation holds, or ``None``.

    Reading back from the end: a ``todo_write`` call (or Claude Code's ``TodoWrite``, whose input
    has the same fields) whose result was not an error (its input
    is the list, validated again), or a text block with the pinned checklist (what a
    compaction put back). A call refused, or an input that no longer validates (a hand-edited
    transcript), is passed over for an earlier one.
    """
    refused = {
        str(b.get("tool_use_id"))
        for msg in conversation
        if msg.get("role") == "user"
        for b in m.blocks(msg)
        if b.get("type") == "tool_result" and b.get("is_error")
    }
    for msg in reversed(conversation):
        for block in reversed(m.blocks(msg)):
            kind = block.get("type")
            if kind == "tool_use" and block.get("name") in WRITERS:
                if str(block.get("id")) in refused:
                    continue
                try:
                    return TodoList.of(_items(block.get("input")))
                except (ValidationError, TypeError, ValueError):
                    continue
            if kind == "text" and TODO_HEADING in str(block.get("text", "")):
                text = str(block.get("text", ""))
                start = text.rindex(TODO_HEADING) + len(TODO_HEADING)
                end = text.find(TODO_END, start)
                found = parse_checklist(text[start : end if end >= 0 else None])
                if found.items:
                    return found
    return None


def _items(raw: object) -> list[Any]:
    if isinstance(raw, str):  # an input kept as JSON text
        raw = json.loads(raw)
    if not isinstance(raw, dict) or not isinstance(raw.get("todos"), list):
        raise TypeError("a todo_write input is an object with a todos list")
    return list(raw["todos"])
