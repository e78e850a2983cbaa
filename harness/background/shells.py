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
import re
import secrets
import shutil
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
        """Where the logs are (made on first use)."""
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="harness-background-"))
            self._temporary.append(self._folder)
        else:
            self._folder.mkdir(mode=0o700, parents=True, exist_ok=True)
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
        """Start ``command`` in ``cwd`` and return at once."""
        if not self._finalizer.alive:
            raise ShellError("the background shells of this session were closed")
        task_id = self.ids()
        if not _SAFE_ID.fullmatch(task_id) or task_id in self._shells:
            raise ValueError(f"not a new, safe task id: {task_id!r}")
        log = self.folder / f"{task_id}.output"  # Claude Code's name: <task id>.output
        started = self.clock.now()
        job = self.spawner.start(
            command, cwd=cwd, workspace=workspace, log=log, cap=self.log_cap, clock=self.clock
        )
        shell = _Shell(
            task_id, command, description, tool_use_id, log, job, started, LogReader(log)
        )
        with self._lock:
            self._shells[task_id] = shell
            self._jobs.append(job)
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
        """The output written since the last read (at most :attr:`read_cap` characters, head
        and tail, then where the whole log is); a read of a finished shell's end counts as
        telling the model it finished."""
        shell = self._get(task_id)
        with shell.lock:
            self._refresh(shell)
            final = shell.status != "running"
            text = shell.reader.read(final=final)
            if final:
                shell.announced = True
            return Reading(self._info(shell), capped(text, shell.log, self.read_cap))

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
            raise ShellError(f"No task found with ID: {task_id}")
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
