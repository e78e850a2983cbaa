"""Reminders: a short note added to the next request when the model has let its list go.

Claude Code adds ``<system-reminder>`` text to what it sends (observed in its transcripts and
in public reports): one of them says that the todo tool has not been used for a while, and
carries the current list. Third-party analyses of its source give the cadence: at least 10
assistant turns since the last write *and* since the last reminder. We keep that cadence
(:data:`REMINDER_TURNS`), fire only while items are open (an empty or finished list needs
no nudge, our choice), and write the wording ourselves.

Where a reminder goes matters to the prompt cache (chapter 03). It is added to the copy of
the request that is sent, *after* the block that carries the moving cache breakpoint, and it
is not kept in the conversation. So the cached prefix is the same with it or without it,
and the next request, which no longer has it, still reads that prefix. (Kept in the
conversation, as Claude Code keeps its reminders, it would become part of the prefix: also
cache-safe, at the cost of its tokens on every later request.) Put it *before* the
breakpoint, and each reminder costs a cache write that the next request cannot read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness import messages as m
from harness.loop import ModelRequest
from harness.planning.todos import TodoList

REMINDER_TURNS = 10
"""Assistant turns without a todo write, and between two reminders, before the next one
(Claude Code's cadence, as analyses of its source report it)."""

PLAN_REMINDER_TURNS = 5
"""Assistant turns between two plan-mode reminders while plan mode is on (Claude Code's
``PLAN_MODE_ATTACHMENT_CONFIG``, as analyses of its source report it; it also alternates a
full and a short wording, which we do not)."""

TODO_REMINDER = (
    "You have not updated your todo list for a while. If you are working through it, mark "
    "what is done and what you are doing now; if it no longer matches the work, rewrite it. "
    "Do not mention this reminder to the user.\n\nYour todo list now:\n{checklist}"
)

PLAN_MODE_REMINDER = (
    "Plan mode is on: the user wants a plan before any change. Only read-only tools will run. "
    "Read what you need, then present your plan with exit_plan_mode; the user approves it or "
    "tells you what to change. Do not edit files or run commands that change anything."
)


def system_reminder(text: str) -> str:
    """``text`` in Claude Code's ``<system-reminder>`` tags."""
    return f"<system-reminder>\n{text}\n</system-reminder>"


def todo_reminder(todo_list: TodoList) -> str:
    """The reminder's text for ``todo_list``."""
    return system_reminder(TODO_REMINDER.format(checklist=todo_list.render()))


@dataclass
class ReminderClock:
    """Counts assistant turns, and says when a todo reminder is due."""

    every: int = REMINDER_TURNS
    turns: int = 0
    """Assistant turns so far (the loop's own replies)."""
    last_write: int = 0
    """The turn of the last todo write (0: never)."""
    last_reminder: int = 0
    """The turn of the last reminder (0: never)."""

    def due(self, todo_list: TodoList) -> bool:
        """A reminder goes with the next request: items are open, and ``every`` turns have
        passed since the last write and since the last reminder."""
        return (
            bool(todo_list.open)
            and self.turns - self.last_write >= self.every
            and self.turns - self.last_reminder >= self.every
        )


def with_reminder(request: ModelRequest, text: str) -> ModelRequest:
    """``request`` with ``text`` as a last block of its last message, on a copy.

    The last message of a loop request is a user message (a prompt or tool results); text
    after ``tool_result`` blocks is valid there. The agent's conversation is not touched, and
    a ``cache_control`` already on the block before stays where it is, before the reminder.
    Under automatic caching (a top-level ``cache_control``), the breakpoint is made explicit on
    that block, since the API would otherwise put it on the reminder.
    """
    messages = list(request.messages)
    if not messages or messages[-1].get("role") != "user":
        return request
    last = messages[-1]
    blocks = m.blocks(last)
    extra = request.extra
    automatic = extra.get("cache_control")
    if automatic is not None and blocks:
        # Automatic caching puts its breakpoint on the last block, which would be the
        # reminder: put it, explicitly, on the block before, where the next request (which
        # has no reminder) finds the entry. A breakpoint already there is kept as it is.
        blocks = [*blocks[:-1], {"cache_control": dict(automatic), **blocks[-1]}]
        extra = {k: v for k, v in extra.items() if k != "cache_control"}
    messages[-1] = {**last, "content": [*blocks, m.text(text)]}
    return replace(request, messages=messages, extra=extra)
