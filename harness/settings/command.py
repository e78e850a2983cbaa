"""Running one command hook: a shell command, the event's JSON on stdin, a time limit.

As Claude Code runs a ``command`` hook (``execCommandHook`` in openclaude
``src/utils/hooks.ts``): the command line goes to the shell whole (Node's ``spawn(command,
{shell: true})``, which is ``/bin/sh -c command`` on Linux and macOS), the event's JSON is
written to its stdin followed by a newline and stdin is closed, ``CLAUDE_PROJECT_DIR`` names
the project, and the command is stopped when its timeout passes.

What this module adds, so that no hook can hurt the run that called it:

* the command gets its own process group, and a timeout kills the whole group (a hook that
  started ``sleep 1000 &`` leaves nothing behind);
* stdout and stderr are read while the command runs, and only the first
  :data:`MAX_OUTPUT_BYTES` of each are kept: a hook that prints gigabytes costs time, never
  memory;
* bytes that are not UTF-8 are replaced, never raised on;
* nothing raises: a command that cannot start, exits with any code, or is killed comes back as
  a :class:`HookRun` that says so.

The environment is the harness's own, without the Anthropic credentials (our choice: a hook
is the user's code and needs their ``PATH`` and ``HOME``, but not the key the harness pays
with) and without ``OTEL_*`` variables (as Claude Code), plus ``CLAUDE_PROJECT_DIR``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

MAX_OUTPUT_BYTES = 256 * 1024
"""Bytes kept of each of stdout and stderr (our choice; the rest is read and dropped)."""

SHELL = "/bin/sh"
"""Node's ``shell: true`` on Linux and macOS, which is how Claude Code starts a hook."""

HIDDEN_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
"""Left out of a hook's environment (our choice)."""

HIDDEN_PREFIXES = ("OTEL_",)
"""Variables left out by prefix: Claude Code "removes ``OTEL_*`` exporter variables from every
subprocess it spawns, including hooks" (https://code.claude.com/docs/en/hooks, "Common input
fields", checked 2026-11-27 through the thevibeworks/claude-code-docs copy of 2026-08-22)."""

_CHUNK = 64 * 1024
_GRACE = 1.0
"""Seconds to wait for the rest of the output once the command exited or was killed (a child
it left in the background may hold its pipes open); then the group is killed (our choice:
Claude Code waits for the pipes to close, up to the timeout)."""


@dataclass(frozen=True)
class HookCall:
    """What to run: the command line, its stdin, where, with what, for how long."""

    command: str
    stdin: str
    cwd: Path
    timeout: float
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables set on top of the harness's environment (``CLAUDE_PROJECT_DIR``)."""


@dataclass(frozen=True)
class HookRun:
    """What came of running a hook's command. Never an exception."""

    exit_code: int | None
    """The command's exit code; ``None`` if it did not exit on its own (timed out, could not
    start). Killed by a signal: the negative signal number, as ``subprocess`` reports it."""
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str = ""
    """Why it could not run at all (no such directory, no shell), else ``""``."""
    stdout_dropped: int = 0
    """Bytes of stdout past :data:`MAX_OUTPUT_BYTES`, read and thrown away."""
    stderr_dropped: int = 0


Runner = Callable[[HookCall], HookRun]
"""Runs a :class:`HookCall` (``run_command``; tests pass their own)."""


def hook_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """The harness's environment without the credentials and ``OTEL_*``, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in HIDDEN_VARIABLES and not k.startswith(HIDDEN_PREFIXES)
    }
    env.update(extra)
    return env


class _Capped:
    """Reads a pipe to its end in a thread, keeping at most ``limit`` bytes."""

    def __init__(self, pipe: IO[bytes], limit: int) -> None:
        self.pipe = pipe
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # the pipe closed under us
            while chunk := self.pipe.read1(_CHUNK):  # type: ignore[attr-defined]
                room = self.limit - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
                self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        return bytes(self.kept).decode("utf-8", errors="replace")


def _write_stdin(pipe: IO[bytes], data: bytes) -> None:
    # A hook that never reads its stdin, or exits first, must not make the write fail.
    with contextlib.suppress(OSError, ValueError):
        pipe.write(data)
    with contextlib.suppress(OSError, ValueError):
        pipe.close()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)


def _join(threads: tuple[threading.Thread, ...], seconds: float) -> None:
    """Join ``threads``, all of them within ``seconds`` in total."""
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


def run_command(call: HookCall, *, max_output: int = MAX_OUTPUT_BYTES) -> HookRun:
    """Run ``call.command`` with ``/bin/sh -c``; always return a :class:`HookRun`."""
    try:
        process = subprocess.Popen(
            [SHELL, "-c", call.command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=call.cwd,
            env=hook_environment(call.env),
            start_new_session=True,  # its own process group: a timeout kills all of it
        )
    except (OSError, ValueError) as error:
        return HookRun(None, error=f"could not start: {type(error).__name__}: {error}")
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    out = _Capped(process.stdout, max_output)
    err = _Capped(process.stderr, max_output)
    writer = threading.Thread(
        target=_write_stdin,
        args=(process.stdin, (call.stdin + "\n").encode("utf-8", errors="replace")),
        daemon=True,
    )
    writer.start()
    timed_out = False
    try:
        process.wait(timeout=max(call.timeout, 0.0))
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(process)
        process.wait()
    _join((out.thread, err.thread), _GRACE)
    if out.thread.is_alive() or err.thread.is_alive():  # a child in the background holds
        _kill_group(process)  # the pipes open: end it, and stop reading
        _join((out.thread, err.thread), _GRACE)
    for pipe in (process.stdout, process.stderr):
        with contextlib.suppress(OSError):
            pipe.close()
    writer.join(_GRACE)
    return HookRun(
        exit_code=None if timed_out else process.returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        stdout_dropped=out.dropped,
        stderr_dropped=err.dropped,
    )


__all__ = [
    "MAX_OUTPUT_BYTES",
    "HookCall",
    "HookRun",
    "Runner",
    "hook_environment",
    "run_command",
]
