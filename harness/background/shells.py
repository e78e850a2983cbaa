"""The session's background shells: started, read, stopped, listed, and stopped at the end.

:class:`BackgroundShells` is the manager the tools and the plugin share. Each shell has a
task id (Claude Code's form: ``b`` and eight characters of ``0-9a-z``), a log file in a
folder of the harness's own (a new temporary folder unless you name one; never the
workspace, where a command could replace it), a status (``running``, then ``completed``
for exit code 0, ``failed`` otherwise, or ``killed`` when it was stopped: Claude Code's
four) and whether the model has been told it finished. The commands themselves come from a
spawner: :class:`~harness.background.processes.Processes` runs them for real,
:class:`~harness.background.scripted.Scripted` plays stand-ins on the clock.

Every shell is stopped by :meth:`BackgroundShells.close` (the manager is a context
manager), and by the interpreter's exit if nobody closed it; the keeper process stops it if
the harness dies without running any code at all.
"""

from __future__ import annotations

import builtins
import os
import re
import secrets
import shutil
import stat
import string
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from harness.background.logs import READ_CAP_CHARS, LogReader, capped
from harness.background.processes import Ended, Processes
from harness.clock import Clock, RealClock
from harness.tools.base import ToolContext
from harness.tools.shell import BashInput

LOG_CAP_BYTES = 16 * 1024 * 1024
"""The most a log file keeps (our choice; what comes after is counted, and a note says how
much was dropped). Claude Code caps its task output files at 5 GB and kills the command
past that (``MAX_TASK_OUTPUT_BYTES``)."""

MAX_RUNNING = 32
"""The most shells one session runs at once (our choice: Claude Code documents no limit).
Each real one is a keeper process, a thread of the harness and the command itself; a model
caught in a loop of ``run_in_background`` calls is told to stop some first instead of
filling the process table."""
NOTE_BYTES = 4096
"""Room past the log's cap for the keeper's closing note (it says how much was dropped)."""
SHOWN_ID_CHARS = 64
"""The most of an unknown task id an error repeats back (the model may send a page)."""

Status = Literal["running", "completed", "failed", "killed"]
_ALPHABET = string.digits + string.ascii_lowercase
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def random_id() -> str:
    """Claude Code's task id for a background shell: ``b`` and 8 characters of ``0-9a-z``."""
    return "b" + "".join(secrets.choice(_ALPHABET) for _ in range(8))


def counted_ids(prefix: str = "b") -> Callable[[], str]:
    """Ids ``b1``, ``b2``, ...: the same on every run (for notebooks and tests)."""
    count = iter(range(1, 1_000_000_000))
    return lambda: f"{prefix}{next(count)}"


class ShellError(Exception):
    """A request about a shell that cannot be met (no such id, not running); the text says
    why, in Claude Code's words."""


class Job(Protocol):
    """A started command, as a spawner returns it."""

    @property
    def pid(self) -> int | None: ...

    def ended(self) -> Ended | None: ...

    def wait(self, timeout: float) -> Ended | None: ...

    def kill(self) -> Ended | None: ...


class Spawner(Protocol):
    """Starts commands in the background, and runs them in the foreground."""

    scripted: bool

    def start(
        self, command: str, *, cwd: Path, workspace: Path, log: Path, cap: int, clock: Clock
    ) -> Job: ...

    def foreground(self, args: BashInput, context: ToolContext, clock: Clock) -> str: ...


@dataclass(frozen=True)
class ShellInfo:
    """One shell as it stands."""

    task_id: str
    command: str
    description: str
    status: Status
    exit_code: int | None
    started: float
    runtime: float
    """Seconds on the clock since it started, or until it ended."""
    log: Path
    tool_use_id: str = ""
    announced: bool = False
    """Whether the model was told it finished (a notification, a read of its end, a stop)."""
    dropped: int = 0
    pid: int | None = None

    @property
    def label(self) -> str:
        """What the shell is called in a summary: its description, else its command."""
        return self.description or self.command


@dataclass(frozen=True)
class Reading:
    """What :meth:`BackgroundShells.read_new` found: the shell, and its new output."""

    shell: ShellInfo
    output: str


@dataclass
class _Shell:
    task_id: str
    command: str
    description: str
    tool_use_id: str
    log: Path
    job: Job
    started: float
    reader: LogReader
    status: Status = "running"
    ended: Ended | None = None
    announced: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


def _stop_all(jobs: list[Job], temporary: list[Path]) -> None:
    for job in jobs:
        job.kill()
    for folder in temporary:
        shutil.rmtree(folder, ignore_errors=True)


class BackgroundShells:
    """The background shells of one session."""

    def __init__(
        self,
        folder: str | Path | None = None,
        *,
        clock: Clock | None = None,
        spawner: Spawner | None = None,
        ids: Callable[[], str] | None = None,
        log_cap: int = LOG_CAP_BYTES,
        read_cap: int = READ_CAP_CHARS,
    ) -> None:
        self.clock: Clock = clock or RealClock()
        self.spawner: Spawner = spawner or Processes()
        self.ids = ids or random_id
        self.log_cap = log_cap
        self.read_cap = read_cap
        self._folder = Path(folder) if folder is not None else None
        self._shells: dict[str, _Shell] = {}
        self._lock = threading.Lock()
        self._jobs: list[Job] = []
        self._temporary: list[Path] = []
        self._identity: os.stat_result | None = None
        """The log folder as the harness made it (a replaced folder is then refused)."""
        self._closed = False
        self._starting: set[str] = set()
        """Ids handed out to shells still being started."""
        # Stop what still runs when the interpreter exits, if nobody closed the manager.
        self._finalizer = weakref.finalize(self, _stop_all, self._jobs, self._temporary)

    def __repr__(self) -> str:  # never the folder's path: it would end up in notebook outputs
        return f"BackgroundShells({len(self._shells)} shells, {len(self.running())} running)"

    def __enter__(self) -> BackgroundShells:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def folder(self) -> Path:
        """Where the logs are (made on first use; subagents start shells in parallel
        threads, so once)."""
        with self._lock:
            if self._folder is None:
                self._folder = Path(tempfile.mkdtemp(prefix="harness-background-"))
                self._temporary.append(self._folder)
            elif self._identity is None:
                self._folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if self._identity is None:
                self._identity = os.stat(self._folder, follow_symlinks=False)
                if not stat.S_ISDIR(self._identity.st_mode):
                    self._identity = None
                    raise ShellError(f"the log folder is not a folder: {self._folder}")
            return self._folder

    # -- starting and stopping ---------------------------------------------------------------

    def start(
        self,
        command: str,
        *,
        cwd: Path,
        workspace: Path,
        description: str = "",
        tool_use_id: str = "",
    ) -> ShellInfo:
        """Start ``command`` in ``cwd`` and return at once. Refused (:class:`ShellError`)
        once the session is closed, or with :data:`MAX_RUNNING` shells running."""
        with self._lock:
            if self._closed:
                raise ShellError("the background shells of this session were closed")
        folder = self.folder
        running = len(self.running())
        with self._lock:  # subagents start shells from parallel threads
            if self._closed:
                raise ShellError("the background shells of this session were closed")
            if running + len(self._starting) >= MAX_RUNNING:
                raise ShellError(
                    f"{MAX_RUNNING} background shells are already running in this session: "
                    "stop one you no longer need with task_stop first"
                )
            task_id = self.ids()
            if (
                not _SAFE_ID.fullmatch(task_id)
                or task_id in self._shells
                or task_id in self._starting
            ):
                raise ValueError(f"not a new, safe task id: {task_id!r}")
            self._starting.add(task_id)
        log = folder / f"{task_id}.output"  # Claude Code's name: <task id>.output
        started = self.clock.now()
        try:
            job = self.spawner.start(
                command, cwd=cwd, workspace=workspace, log=log, cap=self.log_cap, clock=self.clock
            )
        finally:
            with self._lock:
                self._starting.discard(task_id)
        reader = LogReader(log, folder=self._identity, limit=self.log_cap + NOTE_BYTES)
        shell = _Shell(task_id, command, description, tool_use_id, log, job, started, reader)
        with self._lock:
            closed = self._closed
            if not closed:
                self._shells[task_id] = shell
                self._jobs.append(job)
        if closed:  # closed by another thread while it started: it must not run on
            job.kill()
            raise ShellError("the background shells of this session were closed")
        return self._info(shell)

    def stop(self, task_id: str) -> ShellInfo:
        """Kill a running shell and every process it started. Its status becomes ``killed``,
        and the model is not told again (it asked, as in Claude Code)."""
        shell = self._get(task_id)
        with shell.lock:
            self._refresh(shell)
            if shell.status != "running":
                raise ShellError(f"Task {task_id} is not running (status: {shell.status})")
            shell.ended = shell.job.kill() or Ended(None, self.clock.now())
            shell.status = "killed"
            shell.announced = True
        return self._info(shell)

    def close(self) -> None:
        """Stop every running shell (and remove the log folder if it is a temporary one).
        Safe to call twice."""
        with self._lock:
            self._closed = True
            shells = list(self._shells.values())
        for shell in shells:
            with shell.lock:
                self._refresh(shell)
                if shell.status == "running":
                    shell.ended = shell.job.kill() or Ended(None, self.clock.now())
                    shell.status = "killed"
        self._finalizer()

    stop_all = close

    # -- reading -----------------------------------------------------------------------------

    def read_new(self, task_id: str) -> Reading:
        """The output written since the last read (at most :attr:`read_cap` characters: the
        tail, after a line that says where the whole log is); a read of a finished shell's
        end counts as telling the model it finished, and says why it could not run, if it
        could not."""
        shell = self._get(task_id)
        with shell.lock:
            self._refresh(shell)
            final = shell.status != "running"
            text = shell.reader.read(final=final)
            if final:
                shell.announced = True
                error = shell.ended.error if shell.ended is not None else ""
                if error and error not in text:  # the log could not say it: say it here
                    text += f"[{error}]\n"
            return Reading(self._info(shell), capped(text, shell.log, self.read_cap))

    def tail(self, task_id: str, size: int) -> bytes:
        """The last ``size`` bytes of a shell's log, for a person to look at: what the model
        reads next is not moved. Raises :class:`~harness.background.logs.LogUnreadable` for
        a log that is no longer the harness's own file."""
        shell = self._get(task_id)
        return shell.reader.tail(size)

    def wait(self, task_id: str, timeout: float) -> ShellInfo:
        """Wait up to ``timeout`` seconds for a shell to end (real seconds for a real
        command; a stand-in sleeps the clock)."""
        shell = self._get(task_id)
        if shell.status == "running":
            shell.job.wait(timeout)
        with shell.lock:
            self._refresh(shell)
            return self._info(shell)

    def foreground(self, args: BashInput, context: ToolContext) -> str:
        """Run a command in the foreground, with the spawner's foreground path."""
        return self.spawner.foreground(args, context, self.clock)

    # -- listing -----------------------------------------------------------------------------

    def get(self, task_id: str) -> ShellInfo:
        shell = self._get(task_id)
        with shell.lock:
            self._refresh(shell)
            return self._info(shell)

    def list(self) -> builtins.list[ShellInfo]:
        """Every shell of the session, in the order they started."""
        return [self.get(task_id) for task_id in self._ids()]

    def running(self) -> builtins.list[ShellInfo]:
        return [info for info in self.list() if info.status == "running"]

    def unannounced(self) -> builtins.list[ShellInfo]:
        """Shells that ended and the model has not been told about."""
        return [i for i in self.list() if i.status != "running" and not i.announced]

    def mark_announced(self, task_ids: Iterable[str]) -> None:
        for task_id in task_ids:
            shell = self._get(task_id)
            with shell.lock:
                shell.announced = True

    # -- inside ------------------------------------------------------------------------------

    def _ids(self) -> builtins.list[str]:
        with self._lock:
            return list(self._shells)

    def _get(self, task_id: str) -> _Shell:
        with self._lock:
            shell = self._shells.get(task_id)
        if shell is None:
            shown = task_id if len(task_id) <= SHOWN_ID_CHARS else task_id[:SHOWN_ID_CHARS] + "…"
            raise ShellError(f"No task found with ID: {shown}")
        return shell

    def _refresh(self, shell: _Shell) -> None:
        if shell.status != "running":
            return
        ended = shell.job.ended()
        if ended is not None:
            shell.ended = ended
            shell.status = "completed" if ended.returncode == 0 else "failed"

    def _info(self, shell: _Shell) -> ShellInfo:
        ended = shell.ended
        until = ended.at if ended is not None else self.clock.now()
        return ShellInfo(
            task_id=shell.task_id,
            command=shell.command,
            description=shell.description,
            status=shell.status,
            exit_code=ended.exit_code if ended is not None else None,
            started=shell.started,
            runtime=max(until - shell.started, 0.0),
            log=shell.log,
            tool_use_id=shell.tool_use_id,
            announced=shell.announced,
            dropped=ended.dropped if ended is not None else 0,
            pid=shell.job.pid,
        )
