"""The keeper: a small process that runs one background command and dies with the harness.

A background command must not outlive the harness that started it, however the harness
ends. An orderly end is easy (stop every shell on the way out); a ``kill -9`` of the harness
runs no code at all. What does survive a ``kill -9`` is the kernel's bookkeeping: when a
process dies, every file descriptor it held is closed. So the harness does not start the
command itself. It starts this keeper, with a pipe to the keeper's standard input that only
the harness holds, and the keeper starts the command:

* the command runs in a process group (a session) of its own, so one signal reaches it and
  every process it started (``npm test`` and its workers);
* the keeper copies the command's output (stdout and stderr, interleaved as they came) to the
  log file, up to ``cap`` bytes; past the cap it keeps reading (a command blocked on a full
  pipe would never finish) and counts what it drops;
* when its standard input reaches end-of-file, the keeper kills the command's whole group with
  ``SIGKILL``: the harness closed the pipe to stop the command, or the harness died and the
  kernel closed it. Claude Code stops a background shell the same way, ``SIGKILL`` to the
  process tree (its ``ShellCommand.kill``, through the ``tree-kill`` package), with no grace
  period;
* when the command ends by itself, whatever it left behind in its group (``server &``) is
  killed too: nobody would stop it later;
* ``SIGTERM`` or ``SIGHUP`` to the keeper (a closed terminal, a system shutting down) kills the
  group as well; ``SIGINT`` is ignored: Ctrl-C in the terminal is the harness's to handle.

What escapes: a process that leaves the group (a grandchild that calls ``setsid``, a daemon
that double-forks) is out of reach of the group's signal; and a ``kill -9`` of the keeper
itself runs none of this. Under chapter 02's ``unshare`` sandbox the first does not escape:
the command's first process is process 1 of a PID namespace of its own, and when it dies the
kernel kills every process in that namespace, ``setsid`` or not.

Its protocol with the harness: one JSON line on stdout when the command has started
(``{"pid": ...}``), one when it has ended (``{"returncode": ..., "dropped": ...}``, the
return code negative for a signal, as :mod:`subprocess` reports it). It imports only the
standard library: it is run as ``python -I <this file>``, so it starts in a few
milliseconds and never imports the harness (nor its dependencies, nor anything a workspace
could put on ``sys.path``).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
from types import FrameType

CHUNK = 65_536
"""Bytes read from the command's output at a time."""
DRAIN_SECONDS = 2.0
"""After the command's group is killed, how long output still in the pipe is read before the
keeper gives up on it (a process that left the group may hold the pipe open for ever)."""


def _kill(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(group, signal.SIGKILL)


class _Log:
    """The log file, written up to ``cap`` bytes; what comes after is counted, not written."""

    def __init__(self, path: str, cap: int) -> None:
        # O_EXCL | O_NOFOLLOW: a new file of our own, never through a link someone placed.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        self.fd = os.open(path, flags, 0o600)
        self.cap = cap
        self.written = 0
        self.dropped = 0

    def write(self, data: bytes) -> None:
        room = max(self.cap - self.written, 0)
        kept = data[:room]
        if kept:
            os.write(self.fd, kept)  # a regular file: one write takes it all
            self.written += len(kept)
        self.dropped += len(data) - len(kept)


def _drain(output: int, log: _Log, seconds: float) -> None:
    """Read what is left in the pipe, for at most ``seconds``."""
    os.set_blocking(output, False)
    with selectors.DefaultSelector() as selector:
        selector.register(output, selectors.EVENT_READ)
        while selector.select(timeout=seconds):
            try:
                data = os.read(output, CHUNK)
            except BlockingIOError:
                continue
            if not data:
                return
            log.write(data)


def _watch(
    process: subprocess.Popen[bytes], output: int, harness: int, log: _Log, group: int
) -> bool:
    """Copy output to the log until the command's first process exits; kill the group if the
    harness's pipe closes first. Returns whether the output pipe reached its end."""
    # A pidfd is readable once the process exits (Linux 5.3): the command is over when its
    # first process is, even if something it left behind still holds the output pipe.
    exit_fd = _pidfd(process.pid)
    ended = False
    with selectors.DefaultSelector() as selector:
        selector.register(output, selectors.EVENT_READ, "output")
        try:
            selector.register(harness, selectors.EVENT_READ, "harness")
        except (OSError, ValueError):  # not a pipe (a file, /dev/null): no harness to wait on
            _kill(group)
        if exit_fd is not None:
            selector.register(exit_fd, selectors.EVENT_READ, "exit")
        while True:
            ready = selector.select(timeout=None if exit_fd is not None else 0.05)
            if any(key.data == "exit" for key, _ in ready) or (
                exit_fd is None and process.poll() is not None
            ):
                break
            for key, _ in ready:
                data = os.read(key.fd, CHUNK)
                if key.data == "output" and data:
                    log.write(data)
                elif key.data == "output":  # every writer closed its end
                    selector.unregister(output)
                    ended = True
                elif not data:  # the harness closed the pipe, or died: stop the command now
                    selector.unregister(harness)
                    _kill(group)
    if exit_fd is not None:
        os.close(exit_fd)
    return ended


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:  # an older kernel
        return None
    return fd


def keep(argv: list[str], log_path: str, cap: int) -> int:
    """Run ``argv`` as described above; return the keeper's exit code (0: it did its job)."""
    group: list[int] = []  # the command's group, once there is one

    def on_signal(signum: int, frame: FrameType | None) -> None:
        for pid in group:
            _kill(pid)
        if not group:  # before the command started: nothing to stop, just go
            os._exit(1)

    # Handlers first, so a signal in between never leaves the command behind. SIGINT gets a
    # handler, not SIG_IGN: an ignored signal stays ignored in the programs the command execs.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        log = _Log(log_path, cap)
    except OSError as error:  # its folder gone, or a file already there: say so, and go
        _say({"error": f"the log could not be made: {error.strerror or error}"})
        return 1
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: one killpg reaches all it starts
        )
    except OSError as error:
        said = f"the command could not start: {error}"
        os.write(log.fd, f"{said}\n".encode())  # where the model reads its output
        _say({"error": said})
        return 1
    group.append(process.pid)
    _say({"pid": process.pid})
    assert process.stdout is not None
    output = process.stdout.fileno()
    finished = _watch(process, output, sys.stdin.fileno(), log, process.pid)
    process.wait()
    _kill(process.pid)  # what the command left running in its group goes with it
    if not finished:
        _drain(output, log, DRAIN_SECONDS)
    if log.dropped:
        note = f"\n[{log.dropped:,} bytes dropped: this log keeps the first {cap:,} bytes]\n"
        os.write(log.fd, note.encode())
    os.close(log.fd)
    _say({"returncode": process.returncode, "dropped": log.dropped})
    return 0


def _say(record: dict[str, object]) -> None:
    with contextlib.suppress(OSError):  # the harness is gone: nobody to tell
        print(json.dumps(record), flush=True)


def main(arguments: list[str]) -> int:
    """``keeper.py LOG CAP -- COMMAND...``"""
    if len(arguments) < 4 or arguments[2] != "--":
        print("usage: keeper.py LOG CAP -- COMMAND...", file=sys.stderr)
        return 2
    return keep(arguments[3:], arguments[0], int(arguments[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
