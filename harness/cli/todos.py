"""The todo list and plan mode at the terminal (chapter 12).

The session's :class:`~harness.planning.Planning` holds the list the model writes and the
permission mode plan mode changes. The command line shows both:

* :func:`status`: a few words the spinner carries after what it waits for (``plan mode ·
  3/12 done · now: Running the tests``);
* :class:`Seen`: a line printed when the list or the mode has changed since it was last
  shown (so a pipe, which has no spinner, sees it too);
* :func:`checklist`: what ``/todos`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group
from rich.text import Text

from harness.cli.terminal import readable
from harness.planning import Planning

NO_TODOS = "no todos yet"


def mode_of(planning: Planning) -> str:
    """The session's permission mode, as the banner names it (``""`` if unknown)."""
    return planning.plan_mode.permissions.mode if planning.plan_mode is not None else ""


def status(planning: Planning) -> str:
    """``plan mode`` while it is on, and the list's summary while it has items (``""``:
    nothing to say)."""
    parts = []
    if planning.plan_mode is not None and planning.plan_mode.active:
        parts.append("plan mode")
    todo_list = planning.todos.current
    if todo_list.items:
        parts.append(readable(todo_list.summary()))
    return " · ".join(parts)


@dataclass
class Seen:
    """The list's summary and the mode as last shown; :meth:`changes` says what is new."""

    planning: Planning
    summary: str = ""
    mode: str = ""

    @classmethod
    def now(cls, planning: Planning) -> Seen:
        return cls(planning, _summary(planning), mode_of(planning))

    def changes(self) -> list[Text]:
        """A line for the mode and one for the list, each if it changed since last time."""
        out = []
        mode, summary = mode_of(self.planning), _summary(self.planning)
        if mode != self.mode:
            out.append(Text(f"permissions {mode} (was {self.mode})", style="bold"))
            self.mode = mode
        if summary != self.summary:
            out.append(Text(f"☑ todos: {readable(summary) or 'none'}", style="cyan"))
            self.summary = summary
        return out


def checklist(planning: Planning) -> Group:
    """``/todos``: the summary and the checklist (``- [x]`` done, ``- [~]`` under way), or
    :data:`NO_TODOS`; where the list is kept, and whether plan mode is on."""
    todo_list = planning.todos.current
    lines: list[Text] = []
    if not todo_list.items:
        lines.append(Text(f"{NO_TODOS} (the model writes its list with todo_write)", style="dim"))
    else:
        lines.append(Text(f"Todos: {readable(todo_list.summary())}", style="bold"))
        lines += [Text(line) for line in readable(todo_list.render()).splitlines()]
    if planning.progress is not None:
        lines.append(Text(f"kept in {planning.progress.path.name}", style="dim"))
    if planning.plan_mode is not None and planning.plan_mode.active:
        lines.append(Text("plan mode is on: nothing changes until you approve a plan", style="dim"))
    return Group(*lines)


def _summary(planning: Planning) -> str:
    todo_list = planning.todos.current
    return todo_list.summary() if todo_list.items else ""
