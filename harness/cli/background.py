"""Chapter 15 on the command line: ``/bashes``, the session's background shells.

Claude Code's ``/tasks`` (``/bashes`` is its alias) opens a dialog that lists the session's
background tasks, shows one's output and stops it. Here the same three are words after the
command:

* ``/bashes``: a table of the session's shells: id, status, how long it ran, exit code, and
  the command (or its description);
* ``/bashes <id>``: that shell, and the last lines of its log (read from the file: what the
  model reads next with ``task_output`` is not moved);
* ``/bashes stop <id>``: stop it, with every process it started.

The shells are the session's: they stop when it ends (``/exit``, the end of input or of
``-p``, an error, a second Ctrl-C). ``/clear`` starts a new session without them: Claude Code
keeps background tasks across ``/clear``, and we choose not to, so a new conversation is
never told of work it did not start. A first Ctrl-C stops the model's turn and leaves them
running, as Esc does in Claude Code.
"""

from __future__ import annotations

from collections import deque

from rich.console import Console
from rich.text import Text

from harness.background import BackgroundWork, ShellError, ShellInfo
from harness.background.plugin import duration
from harness.cli.sessions import short
from harness.cli.terminal import readable, table

TAIL_LINES = 20
"""Lines of a shell's log ``/bashes <id>`` shows (our choice)."""
TAIL_BYTES = 64 * 1024
"""The most of the log's end that is read to find them (our choice)."""


def shell_rows(work: BackgroundWork) -> list[tuple[str, str, str, str, str]]:
    """One row per shell: id, status, runtime, exit code, what it runs."""
    return [
        (
            info.task_id,
            info.status,
            duration(info.runtime),
            "" if info.exit_code is None else str(info.exit_code),
            short(readable(info.label), 70),
        )
        for info in work.shells.list()
    ]


def show_shells(console: Console, work: BackgroundWork | None, argument: str = "") -> None:
    """``/bashes``, ``/bashes <id>`` and ``/bashes stop <id>``."""
    if work is None:
        console.print(Text("Background shells are off in this session.", style="dim"))
        return
    words = argument.split()
    if len(words) == 2 and words[0].lower() in ("stop", "kill"):
        _stop(console, work, words[1])
        return
    if len(words) == 1:
        _show_one(console, work, words[0])
        return
    if words:
        console.print(Text("Usage: /bashes, /bashes <id>, /bashes stop <id>", style="yellow"))
        return
    rows = shell_rows(work)
    if not rows:
        console.print(
            Text(
                "No background shells in this session (the model starts one with bash and "
                "run_in_background).",
                style="dim",
            )
        )
        return
    columns = ["id", "status", "runtime", "exit code", "command"]
    console.print(table("Background shells", columns, rows, numbers=False))
    console.print(Text("/bashes <id> shows one's output; /bashes stop <id> stops it.", style="dim"))


def _stop(console: Console, work: BackgroundWork, task_id: str) -> None:
    try:
        info = work.shells.stop(task_id)
    except ShellError as error:
        console.print(Text(readable(str(error)), style="yellow"))
        return
    console.print(Text(f"Stopped {info.task_id} ({readable(info.label)}).", style="magenta"))


def _show_one(console: Console, work: BackgroundWork, task_id: str) -> None:
    try:
        info = work.shells.get(task_id)
    except ShellError as error:
        console.print(Text(readable(str(error)), style="yellow"))
        return
    console.print(Text(_heading(info), style="bold"))
    console.print(Text(f"  output: {info.log}", style="dim"))
    try:
        lines = tail(work, info)
    except OSError as error:  # swapped for a link or a FIFO, or its folder gone
        console.print(
            Text(f"  (its output cannot be read: {readable(str(error))})", style="yellow")
        )
        return
    if not lines:
        console.print(Text("  (no output yet)", style="dim"))
    for line in lines:
        console.print(Text(f"  {readable(line)}"))


def _heading(info: ShellInfo) -> str:
    code = f", exit code {info.exit_code}" if info.exit_code is not None else ""
    return f"{info.task_id}: {readable(info.label)} ({info.status}, {duration(info.runtime)}{code})"


def tail(work: BackgroundWork, info: ShellInfo, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` lines of a shell's log, read as the model's reads are (the
    harness's own file or nothing: never through a link, never waiting on a FIFO). Raises
    ``OSError`` if it is no longer the harness's file."""
    data = work.shells.tail(info.task_id, TAIL_BYTES)
    text = data.decode("utf-8", errors="replace")
    return list(deque(text.rstrip("\n").splitlines(), maxlen=lines)) if text.strip() else []


__all__ = ["TAIL_LINES", "shell_rows", "show_shells", "tail"]
