"""Stand-in commands on the clock, for teaching and evals offline.

A real two-minute test suite takes two minutes. :class:`ScriptedCommand` is a stand-in that
takes two minutes *of the session's clock*: on a :class:`~harness.clock.FakeClock` the
conversation can be shown waiting for it (foreground ``bash`` sleeps the clock for its whole
run) or going on without it (in the background it "finishes" once the clock has passed its
end), deterministically and in milliseconds. Nothing runs: the output is the one written in
the script. :class:`Scripted` is the spawner that knows these stand-ins by their command
line, and it plugs into the same manager, tools and plugin as the real
:class:`~harness.background.processes.Processes`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.background.processes import Ended
from harness.clock import Clock
from harness.tools.base import ToolContext, ToolError
from harness.tools.shell import BASH_MAX_OUTPUT_CHARS, BashInput
from harness.tools.storage import cap_output

NOT_FOUND = 127
"""A shell's exit code for a command it cannot find."""
KILLED = -9
"""How a stopped stand-in ended: as if by ``SIGKILL`` (exit code 137)."""


@dataclass(frozen=True)
class ScriptedCommand:
    """A command that takes ``seconds`` on the clock, writes ``output`` and exits with
    ``exit_code``. ``output`` is text written when it ends, or ``(second, text)`` pieces,
    each written once the clock has passed that many seconds since the start."""

    seconds: float = 120.0
    output: str | Sequence[tuple[float, str]] = ""
    exit_code: int = 0

    def pieces(self) -> list[tuple[float, str]]:
        if isinstance(self.output, str):
            return [(self.seconds, self.output)] if self.output else []
        return sorted((min(max(at, 0.0), self.seconds), text) for at, text in self.output)

    def text(self) -> str:
        return "".join(text for _, text in self.pieces())


class ScriptedRun:
    """One stand-in, started at ``started`` on ``clock``, writing its pieces to ``log``."""

    pid = None

    def __init__(
        self, command: ScriptedCommand, *, clock: Clock, log: Path, cap: int, started: float
    ) -> None:
        self.command = command
        self.clock = clock
        self.log = log
        self.cap = cap
        self.started = started
        self._pieces = command.pieces()
        self._written = 0  # pieces in the log so far
        self._bytes = 0
        self._ended: Ended | None = None
        # Two task_output calls on one shell run in parallel threads (both read-only): one
        # catches up at a time, or both would write the same pieces to the log.
        self._lock = threading.Lock()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        os.close(os.open(log, flags, 0o600))

    @property
    def end(self) -> float:
        return self.started + self.command.seconds

    def _catch_up(self) -> None:
        """Write the pieces whose time has come; end the run if the clock passed its end."""
        with self._lock:
            self._catch_up_now()

    def _catch_up_now(self) -> None:
        if self._ended is not None:
            return
        now = self.clock.now()
        due = [text for at, text in self._pieces[self._written :] if self.started + at <= now]
        self._written += len(due)
        data = "".join(due).encode("utf-8")
        if data:
            kept = data[: max(self.cap - self._bytes, 0)]
            self._bytes += len(data)
            with self.log.open("ab") as file:
                file.write(kept)
        if now >= self.end:
            self._ended = Ended(self.command.exit_code, self.end, max(self._bytes - self.cap, 0))

    def ended(self) -> Ended | None:
        self._catch_up()
        return self._ended

    def wait(self, timeout: float) -> Ended | None:
        """Sleep the clock until the run ends, or for ``timeout`` seconds if that is sooner."""
        self._catch_up()
        if self._ended is None:
            self.clock.sleep(max(min(self.end - self.clock.now(), timeout), 0.0))
        return self.ended()

    def kill(self) -> Ended | None:
        with self._lock:
            self._catch_up_now()
            if self._ended is None:
                self._ended = Ended(KILLED, self.clock.now(), max(self._bytes - self.cap, 0))
            return self._ended


class Scripted:
    """The spawner of stand-ins: ``commands`` maps a command line to its stand-in; any
    other command "is not found" (exit code 127)."""

    scripted = True

    def __init__(self, commands: Mapping[str, ScriptedCommand]) -> None:
        self.commands = dict(commands)

    def _find(self, command: str) -> ScriptedCommand:
        found = self.commands.get(command.strip())
        if found is not None:
            return found
        known = ", ".join(repr(c) for c in self.commands) or "none"
        said = f"bash: {command.strip()}: command not found (stand-ins known: {known})\n"
        return ScriptedCommand(seconds=0.0, output=said, exit_code=NOT_FOUND)

    def start(
        self, command: str, *, cwd: Path, workspace: Path, log: Path, cap: int, clock: Clock
    ) -> ScriptedRun:
        return ScriptedRun(self._find(command), clock=clock, log=log, cap=cap, started=clock.now())

    def foreground(self, args: BashInput, context: ToolContext, clock: Clock) -> str:
        """The stand-in in the foreground: the clock sleeps for its whole run (or until the
        timeout, when chapter 02's ``bash`` would kill it) and the output comes back as
        chapter 02's ``bash`` returns it."""
        command = self._find(args.command)
        if command.seconds > args.timeout:
            clock.sleep(args.timeout)
            so_far = "".join(t for at, t in command.pieces() if at <= args.timeout).rstrip("\n")
            message = f"Command timed out after {args.timeout:g} s and was killed."
            if so_far:
                message += f" Output before it was killed:\n{so_far}"
            raise ToolError(cap_output(message, BASH_MAX_OUTPUT_CHARS))
        clock.sleep(command.seconds)
        parts = [command.text().rstrip("\n")]
        if command.exit_code:
            parts.append(f"exit code: {command.exit_code}")
        output = "\n".join(part for part in parts if part)
        return cap_output(output, BASH_MAX_OUTPUT_CHARS) or "(no output)"
