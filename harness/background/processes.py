"""Real background commands: each one under a keeper process (:mod:`.keeper`).

:class:`Processes` is the spawner the session uses: ``start`` runs a command the way
chapter 02's ``bash`` runs it (the same sandbox argv, the same allowlisted environment, the
workspace as working directory) but under a keeper, which copies its output to the log and
kills its process group when told to, or when the harness dies. ``foreground`` is chapter
02's own path, unchanged.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from harness.clock import Clock
from harness.tools.base import ToolContext
from harness.tools.sandbox import Sandbox, detect_sandbox, warn_if_unsandboxed
from harness.tools.shell import BashInput, _run, command_environment

KEEPER = Path(__file__).with_name("keeper.py")
STOP_WAIT_SECONDS = 10.0
"""How long a stop waits for the keeper to report the command gone (it takes milliseconds;
this only bounds a keeper that hangs, which is then killed with the group)."""

ERROR_CHARS = 500
"""The most of a keeper's ``error`` (why a command could not start) that is kept."""
LINE_BYTES = 4096
"""The longest report line read from a keeper (its reports are a few dozen bytes)."""
KEEPER_GONE = "its keeper process ended without saying how (killed?); the command was stopped"


def report(line: bytes) -> dict[str, int | str]:
    """What one line from a keeper says, checked: only the fields of its protocol, each of
    the type and range it can have. Anything else (a line that is not JSON, a ``pid`` of 0,
    which ``killpg`` would take for the harness's own group, ``true`` for a number) is left
    out, so a keeper that says nonsense can never point a signal at the wrong processes."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(record, dict):
        return {}
    said: dict[str, int | str] = {}
    pid, code, dropped = record.get("pid"), record.get("returncode"), record.get("dropped")
    if type(pid) is int and 1 < pid < 2**22:  # Linux's pid_max is at most 2**22
        said["pid"] = pid
    if type(code) is int and -64 <= code <= 255:  # -signal, or an exit status
        said["returncode"] = code
    if type(dropped) is int and dropped >= 0:
        said["dropped"] = dropped
    if isinstance(record.get("error"), str):
        said["error"] = record["error"][:ERROR_CHARS]
    return said


@dataclass(frozen=True)
class Ended:
    """How a background command ended."""

    returncode: int | None
    """As :mod:`subprocess` gives it (negative: killed by that signal); None: unknown (its
    keeper died without saying)."""
    at: float
    """When the harness learned of it (seconds on the session's clock)."""
    dropped: int = 0
    """Output bytes past the log's cap that were not kept."""
    error: str = ""
    """Why the command could not start, if it could not."""

    @property
    def exit_code(self) -> int | None:
        """The shell's way of saying it: a signal ``n`` is ``128 + n`` (137 for ``SIGKILL``,
        the code Claude Code reports for a killed background command)."""
        if self.returncode is None:
            return None
        return 128 - self.returncode if self.returncode < 0 else self.returncode


class KeptProcess:
    """One command under its keeper; a thread reads the keeper's two reports."""

    def __init__(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], log: Path, cap: int, clock: Clock
    ) -> None:
        self.clock = clock
        self.log = log
        self.pid: int | None = None
        """The command's first process (its group's id), once the keeper said it."""
        self._ended: Ended | None = None
        self._done = threading.Event()
        self.keeper = subprocess.Popen(
            [sys.executable, "-I", str(KEEPER), str(log), str(cap), "--", *argv],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,  # the harness's end: closed (or the harness gone) -> stop
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._started = threading.Event()
        threading.Thread(target=self._listen, daemon=True, name="background-keeper").start()
        self._started.wait(STOP_WAIT_SECONDS)  # the pid, so a stop can always reach the group

    def _listen(self) -> None:
        assert self.keeper.stdout is not None
        said: dict[str, int | str] = {}
        while line := self.keeper.stdout.readline(LINE_BYTES):
            said.update(report(line))
            if "pid" in said and self.pid is None:  # the first pid it gives is the group
                self.pid = int(said["pid"])
            self._started.set()
        self.keeper.wait()
        code, dropped = said.get("returncode"), said.get("dropped", 0)
        error = str(said.get("error", ""))
        if code is None and self.pid is not None:
            # The keeper died without its last report (kill -9): its command runs on, with
            # nobody left to stop it. Its group is ours to stop (Linux never reuses an id
            # that is still a group's).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            error = error or KEEPER_GONE
            with contextlib.suppress(OSError):
                self._note(f"\n[{KEEPER_GONE}]\n")
        self._ended = Ended(
            code if isinstance(code, int) else None,
            self.clock.now(),
            dropped if isinstance(dropped, int) else 0,
            error,
        )
        self._started.set()
        self._done.set()

    def _note(self, text: str) -> None:
        """Add a line to the log, where the model reads the output (a file we made: appended
        to only if it is still a plain file of ours)."""
        flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = os.open(self.log, flags)
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                os.write(fd, text.encode())
        finally:
            os.close(fd)

    def ended(self) -> Ended | None:
        return self._ended if self._done.is_set() else None

    def wait(self, timeout: float) -> Ended | None:
        """Wait up to ``timeout`` real seconds for the command to end."""
        self._done.wait(timeout)
        return self.ended()

    def kill(self) -> Ended | None:
        """Stop the command and every process in its group; wait until it is gone."""
        if self.keeper.stdin is not None:
            with contextlib.suppress(OSError):
                self.keeper.stdin.close()  # the keeper's signal to kill the group
        if not self._done.wait(STOP_WAIT_SECONDS):  # a keeper that hangs: do its job for it
            if self.pid is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)
            self.keeper.kill()
            self._done.wait(STOP_WAIT_SECONDS)
        return self.ended()


class Processes:
    """Runs commands for real, in chapter 02's sandbox (by default the best this machine
    offers, :func:`~harness.tools.sandbox.detect_sandbox`)."""

    scripted = False

    def __init__(self, sandbox: Sandbox | None = None) -> None:
        self._sandbox = sandbox

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = detect_sandbox()
            warn_if_unsandboxed(self._sandbox)
        return self._sandbox

    def start(
        self, command: str, *, cwd: Path, workspace: Path, log: Path, cap: int, clock: Clock
    ) -> KeptProcess:
        argv = self.sandbox.argv(command, workspace=workspace, cwd=cwd)
        env = command_environment(cwd, workspace)
        return KeptProcess(argv, cwd=cwd, env=env, log=log, cap=cap, clock=clock)

    def foreground(self, args: BashInput, context: ToolContext, clock: Clock) -> str:
        """Chapter 02's ``bash``, as it is."""
        return _run(args, context, self.sandbox)
