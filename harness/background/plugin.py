"""``BackgroundWork``: background shells in the loop.

One plugin, at the loop's named points (chapter 01):

* its tools (:meth:`BackgroundWork.tools`): ``bash`` with ``run_in_background``,
  ``task_output`` and ``task_stop`` (:mod:`harness.background.tools`);
* ``call_model``: a shell that finished since the model last heard of it is announced on the
  next of the loop's own requests (never a side request), in Claude Code's words: a
  ``<task-notification>`` with the task id, the call that started it, the output file, the
  status and a one-line summary. It goes on the copy that is sent, after the cache
  breakpoint (chapter 12's :func:`~harness.planning.reminders.with_reminder`), and the shell
  counts as announced once the reply has come back (a call that failed announces nothing).
  Claude Code queues the notification as a user message that stays in the conversation, and
  when the session is idle it starts a turn for it by itself; here it waits for your next
  prompt, and is sent once;
* after a compaction (any tier: a cleared tool result may be the one that gave the task id),
  the next request reminds the model which shells still run, since the summary may not say;
* events for the notebook and the command line: a shell started, finished, stopped, and the
  model told;
* :meth:`BackgroundWork.close` stops every shell: call it when the session ends.

Put it after prompt caching and before error recovery in the agent's plugins (where chapter
12's planning goes), so the notification is after the breakpoint and a retried call carries
the same one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from anthropic.types import Message

from harness import messages as m
from harness.background.shells import BackgroundShells, ShellError, ShellInfo, Status
from harness.background.tools import background_tools
from harness.compaction.events import Compacted
from harness.events import Event
from harness.loop import BaseAgent, ModelRequest, Plugin, Rewrite
from harness.planning.reminders import system_reminder, with_reminder
from harness.tools.base import Tool

STILL_RUNNING = (
    "Background shells you started before the conversation was compacted are still "
    "running:\n{shells}\nUse task_output to read their new output and task_stop to stop "
    "them. You will be notified when one finishes."
)


def duration(seconds: float) -> str:
    """``45s``, ``2m 0s``, ``1h 3m``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60}s"
    return f"{whole // 3600}h {whole % 3600 // 60}m"


def summary(info: ShellInfo) -> str:
    """Claude Code's one-line summary of a finished background command."""
    said = f'Background command "{info.label}"'
    code = info.exit_code
    if info.status == "completed":
        return f"{said} completed" + (f" (exit code {code})" if code is not None else "")
    if info.status == "failed":
        return f"{said} failed" + (f" with exit code {code}" if code is not None else "")
    if info.status == "killed":
        return f"{said} was stopped"
    return f"{said} is running"


def task_notification(info: ShellInfo) -> str:
    """Claude Code's ``<task-notification>`` for a finished shell."""
    use = f"\n<tool-use-id>{info.tool_use_id}</tool-use-id>" if info.tool_use_id else ""
    return (
        f"<task-notification>\n<task-id>{info.task_id}</task-id>{use}\n"
        f"<output-file>{info.log}</output-file>\n<status>{info.status}</status>\n"
        f"<summary>{escape(summary(info))}</summary>\n</task-notification>"
    )


def still_running(shells: list[ShellInfo]) -> str:
    """The reminder after a compaction: which shells still run."""
    lines = [
        f"- {s.task_id}: {s.command!r}"
        + (f" ({s.description})" if s.description else "")
        + f", running for {duration(s.runtime)}, output: {s.log}"
        for s in shells
    ]
    return system_reminder(STILL_RUNNING.format(shells="\n".join(lines)))


@dataclass(frozen=True)
class ShellStarted(Event):
    task_id: str
    command: str

    def __str__(self) -> str:
        return f"⧉ background shell {self.task_id} started: {self.command}"


@dataclass(frozen=True)
class ShellFinished(Event):
    task_id: str
    status: Status
    exit_code: int | None
    runtime: float

    def __str__(self) -> str:
        code = f", exit code {self.exit_code}" if self.exit_code is not None else ""
        took = duration(self.runtime)
        return f"⧉ background shell {self.task_id} {self.status} after {took}{code}"


@dataclass(frozen=True)
class ShellStopped(Event):
    task_id: str
    runtime: float

    def __str__(self) -> str:
        return f"⧉ background shell {self.task_id} stopped after {duration(self.runtime)}"


@dataclass(frozen=True)
class ShellsNotified(Event):
    """The model was told: finished shells announced, or running ones recalled after a
    compaction."""

    task_ids: tuple[str, ...]
    kind: str
    """``finished`` (a ``<task-notification>`` each) or ``still running``."""

    def __str__(self) -> str:
        return f"⧉ model told of {', '.join(self.task_ids)} ({self.kind})"


class BackgroundWork(Plugin):
    """The session's background shells, in the loop."""

    def __init__(self, shells: BackgroundShells | None = None) -> None:
        self.shells = shells if shells is not None else BackgroundShells()
        self.notified: list[tuple[str, ...]] = []
        """The task ids each notification told of, in order (for tests and notebooks)."""
        self._seen: dict[str, Status] = {}
        self._compacted = False
        self._calls: set[str] = set()
        """The ids of this agent's own tool calls (a shell started by any other call was
        started by a child: a subagent or a fork)."""
        self._scanned = 0
        self._owners: dict[str, bool] = {}
        """By task id: whether this agent started the shell (else a child did)."""

    def tools(self) -> list[Tool[Any]]:
        """``bash`` (with ``run_in_background``), ``task_output``, ``task_stop``."""
        return background_tools(self.shells)

    def close(self) -> None:
        """Stop every shell. Safe to call twice."""
        self.shells.close()

    # -- the loop's points --------------------------------------------------------------------

    def before_request(self, agent: BaseAgent) -> Rewrite | None:
        self._report(agent)
        return None

    def after_tools(self, agent: BaseAgent, results: list[Any]) -> None:
        self._calls.update(str(r.get("tool_use_id", "")) for r in results)
        self._learn_calls(agent)
        self._stop_childrens()
        self._report(agent)

    def on_rewrite(self, agent: BaseAgent, rewrite: Rewrite) -> None:
        if isinstance(rewrite.event, Compacted):
            self._compacted = True

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        if request.purpose != "turn":
            return call(request)
        self._report(agent)
        finished = self.shells.unannounced()
        if finished:
            request = with_reminder(request, "\n".join(task_notification(i) for i in finished))
        running = self.shells.running() if self._compacted else []
        if running:
            request = with_reminder(request, still_running(running))
        reply = call(request)  # raises: nothing was told, and the next request tries again
        self._compacted = False
        if finished:
            ids = tuple(i.task_id for i in finished)
            self.shells.mark_announced(ids)
            self.notified.append(ids)
            agent.emit(ShellsNotified(ids, "finished"))
        if running:
            agent.emit(ShellsNotified(tuple(i.task_id for i in running), "still running"))
        return reply

    # -- inside --------------------------------------------------------------------------------

    def _learn_calls(self, agent: BaseAgent) -> None:
        """Add the calls of the replies since the last look (a batch cut short by Ctrl-C or
        an approval never reached ``after_tools`` with its results)."""
        messages = agent.messages
        start = self._scanned if self._scanned <= len(messages) else 0  # 0: rewritten
        for message in messages[start:]:
            if message["role"] == "assistant":
                self._calls.update(str(u["id"]) for u in m.tool_uses(message))
        self._scanned = len(messages)

    def _stop_childrens(self) -> None:
        """Stop the shells the children of this batch left running, and never announce any
        shell of theirs.

        A subagent or a fork has its parent's tools, so its ``bash`` starts shells in this
        session. When the parent's batch is over, every child it ran has ended, and nobody
        is left who knows the shell's id: as Claude Code does when an agent exits
        (``killShellTasksForAgent``), its shells are stopped and the notifications meant for
        it dropped. A shell with no call id was started outside the loop (by you): it stays.
        """
        for info in self.shells.list():
            if info.task_id in self._owners:
                continue
            mine = not info.tool_use_id or info.tool_use_id in self._calls
            self._owners[info.task_id] = mine
            if mine:
                continue
            if info.status == "running":
                with contextlib.suppress(ShellError):  # it ended meanwhile
                    self.shells.stop(info.task_id)
            self.shells.mark_announced([info.task_id])

    def _report(self, agent: BaseAgent) -> None:
        """An event for each shell that started, finished or was stopped since the last look."""
        for info in self.shells.list():
            before = self._seen.get(info.task_id)
            if before == info.status:
                continue
            self._seen[info.task_id] = info.status
            if before is None:
                agent.emit(ShellStarted(info.task_id, info.command))
            if info.status == "killed":
                agent.emit(ShellStopped(info.task_id, info.runtime))
            elif info.status != "running":
                agent.emit(ShellFinished(info.task_id, info.status, info.exit_code, info.runtime))
