"""The terminal side of the command line: printing events, progress on long waits, asking.

Output goes through ``rich`` (styles, tables, a spinner that redraws itself in place);
input through ``prompt_toolkit`` (line editing, history, completion of slash commands, and
Ctrl-C / Ctrl-D as exceptions a program can handle). Both are chosen over hand-written
escape codes: they know the terminal's width and capabilities, and fall back to plain text
when the output is a pipe. When the standard input is not a terminal (a script pipes the
prompts in), plain ``input()`` reads it.

Progress: :class:`Progress` is a ``call_model`` layer that names every model call while it
waits (thinking, compacting, updating the session memory, a subagent at work), and
:class:`ProgressClock` shows a retry's wait with its length, so a long wait never looks
like a hang; while tools run it names them (:func:`running`, or a ``label`` function of a
later chapter's: chapter 14 names an MCP tool's server), as the tool runner reports them
starting. The spinner line also carries the
session's status (:attr:`Activity.status`: the todo list's summary, plan mode), whatever it
is waiting for.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO

from anthropic.types import Message
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import WordCompleter
from prompt_toolkit.history import InMemoryHistory
from rich.console import Console
from rich.status import Status
from rich.table import Table
from rich.text import Text

from harness import messages as m
from harness.clock import Clock, RealClock
from harness.events import (
    AssistantReplied,
    Event,
    ModelCalled,
    PermissionDecided,
    ToolFinished,
    ToolStarted,
    TurnEnded,
)
from harness.loop import BaseAgent, ModelRequest, Plugin, ToolProgress
from harness.tools.permissions import Approval, ApprovalRequest, Approver

WAITING = {
    "turn": "thinking…",
    "compaction": "compacting the conversation…",
    "memory": "updating the session memory…",
    "subagent": "a subagent is at work…",
    "fork": "a fork is at work…",
}
"""What the spinner says while a model call of each purpose is under way."""


class Activity:
    """One spinner line that says what the program is waiting for (or nothing), and after
    it the session's status, if it has one."""

    def __init__(self, console: Console, *, enabled: bool = True) -> None:
        self.console = console
        self.enabled = enabled and console.is_terminal
        self._status: Status | None = None
        self._text = ""
        self.status: Callable[[], str] = str
        """The session's status in a few words (``""``: none), read at every redraw."""

    def line(self, text: str) -> str:
        """The spinner's words: ``text``, then the status after a dot if there is one."""
        status = self.status()
        return f"{text} · {status}" if status else text

    def show(self, text: str) -> None:
        self._text = text
        if not self.enabled:
            return
        if self._status is None:
            self._status = self.console.status(Text(self.line(text)), spinner="dots")
            self._status.start()
        else:
            self._status.update(Text(self.line(text)))

    def refresh(self) -> None:
        """Redraw the line with the status as it is now (the todo list just changed)."""
        if self._status is not None:
            self._status.update(Text(self.line(self._text)))

    def hide(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def running(names: Sequence[str], describe: Callable[[str], str] = str) -> str:
    """What the spinner says while these tools run: each name once, in order, as
    ``describe`` shows it (chapter 14's names an MCP tool's server)."""
    shown = [describe(name) for name in dict.fromkeys(names)]
    return f"running {', '.join(shown)}…" if shown else "working…"


class Progress(Plugin):
    """The outermost ``call_model`` layer: the spinner names the call it waits for; and
    while a reply's tools run, their names (as the tool runner reports them starting)."""

    def __init__(self, activity: Activity, describe: Callable[[str], str] = str) -> None:
        self.activity = activity
        self.describe = describe
        """How the spinner shows a tool's name (the name itself, unless told otherwise)."""

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        purpose = request.purpose
        label = WAITING.get(purpose) or f"{purpose.replace('-', ' ')} at work…"
        self.activity.show(label)
        try:
            return call(request)
        finally:
            self.activity.show("working…")

    def on_tool_progress(self, agent: BaseAgent, progress: ToolProgress) -> None:
        if progress.state != "started":
            self.activity.show("working…")
            return
        reply = agent.messages[-1] if agent.messages else None
        calls = {str(u["id"]): str(u["name"]) for u in m.tool_uses(reply)} if reply else {}
        names = [calls.get(i, "a tool") for i in progress.tool_use_ids]
        self.activity.show(running(names, self.describe))


class ProgressClock:
    """The real clock, but a wait (a retry's backoff) shows on the spinner with its length."""

    def __init__(self, activity: Activity, inner: Clock | None = None) -> None:
        self.activity = activity
        self.inner = inner or RealClock()

    def now(self) -> float:
        return self.inner.now()

    def sleep(self, seconds: float) -> None:
        self.activity.show(f"waiting {seconds:.1f} s before trying again…")
        self.inner.sleep(seconds)


# -- reading -----------------------------------------------------------------------------------


class NoInput(Exception):
    """The standard input cannot be read: it is closed, or not text, or reading it failed.

    Not the end of the input (that is ``EOFError``, and ends a session normally): the
    command line reports this in one line and exits with :attr:`~harness.cli.report.Exit.USAGE`.
    """


class Reader:
    """Reads a line: prompt_toolkit at a terminal, ``input()`` otherwise.

    Raises ``KeyboardInterrupt`` on Ctrl-C, ``EOFError`` on Ctrl-D or the end of input, and
    :class:`NoInput` when the standard input cannot be read at all.
    """

    def __init__(self, commands: Sequence[str] = (), *, stdin: TextIO | None = None) -> None:
        # A program started with its standard input closed (``harness <&-``) has
        # ``sys.stdin`` None: the reader says so when asked for a line, not before.
        self.stdin: TextIO | None = stdin if stdin is not None else sys.stdin
        self.session: PromptSession[str] | None = None
        if self.stdin is not None and isatty(self.stdin) and isatty(sys.stdout):
            self.session = PromptSession(
                history=InMemoryHistory(),
                completer=WordCompleter(list(commands), sentence=True),
            )

    def complete(self, commands: Sequence[str]) -> None:
        """Complete these commands at the prompt from now on (a session's own, say)."""
        if self.session is not None:
            self.session.completer = WordCompleter(list(commands), sentence=True)

    @property
    def closed(self) -> bool:
        """Whether there is no standard input at all (its descriptor was closed)."""
        return self.stdin is None or self.stdin.closed

    def read(self, prompt: str) -> str:
        if self.session is not None:
            try:
                return self.session.prompt(prompt)
            except asyncio.CancelledError:
                # A Ctrl-C that lands while the prompt is starting, before it reads keys,
                # reaches asyncio's own SIGINT handler, which cancels the prompt's task.
                raise KeyboardInterrupt from None
        if sys.stdout is not None:  # None: started with its standard output closed
            sys.stdout.write(prompt)
            sys.stdout.flush()
        line = self._guarded(lambda stdin: stdin.readline())
        if not line:
            raise EOFError
        return line.rstrip("\n")

    def read_all(self) -> str:
        """Everything left on the standard input (``-p -``)."""
        return self._guarded(lambda stdin: stdin.read())

    def _guarded(self, read: Callable[[TextIO], str]) -> str:
        """``read(stdin)``, with every way it can fail as :class:`NoInput`."""
        if self.stdin is None or self.stdin.closed:
            raise NoInput("the standard input is closed")
        try:
            return read(self.stdin)
        except UnicodeDecodeError as error:
            raise NoInput(f"the standard input is not {error.encoding} text") from None
        except (OSError, ValueError) as error:  # a folder, a dead terminal, a closed file
            why = error.strerror if isinstance(error, OSError) and error.strerror else error
            raise NoInput(f"the standard input cannot be read: {why}") from None


def isatty(stream: TextIO | None) -> bool:
    """Whether ``stream`` is a terminal (False for no stream, or a closed one)."""
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False


def terminal_approver(
    reader: Reader,
    console: Console,
    activity: Activity,
    texts: Mapping[str, str] | None = None,
) -> Approver:
    """Chapter 02's approver, asking at the terminal: ``y`` runs the call, anything else
    refuses it (and the words after ``n`` go to the model as the reason).

    The call's input is shown as JSON, cut at 400 characters. ``texts`` names, per tool, a
    field that is shown whole, as text, one line per line (the plan of ``exit_plan_mode``:
    what a person approves must be read, not guessed from a JSON string cut short)."""

    def approve(request: ApprovalRequest) -> Approval:
        activity.hide()
        field = (texts or {}).get(request.tool)
        body = request.input.get(field) if field is not None else None
        if isinstance(body, str):
            rest = {k: v for k, v in request.input.items() if k != field}
            args = f" {json.dumps(rest, ensure_ascii=False)}" if rest else ""
            console.print(
                Text(
                    f"? {request.tool} wants to run{args}, with this {field}:", style="bold yellow"
                )
            )
            for line in readable(body).splitlines() or [""]:
                console.print(Text(f"    {line}"))
        else:
            args = json.dumps(request.input, ensure_ascii=False)
            if len(args) > 400:
                args = args[:399] + "…"
            console.print(Text(f"? {request.tool} wants to run: {args}", style="bold yellow"))
        console.print(Text(f"  ({request.reason})", style="dim"))
        try:
            answer = reader.read("  Allow? [y/N, or n and a reason] ").strip()
        except (EOFError, NoInput):  # no answer is a refusal
            answer = ""
        head, _, note = answer.partition(" ")
        if head.lower() in ("y", "yes"):
            activity.show(f"running {request.tool}…")
            return Approval(True, "approved at the terminal")
        activity.show("working…")
        return Approval(False, f"refused at the terminal{': ' + note if note.strip() else ''}")

    return approve


def readable(text: str) -> str:
    """``text`` safe to print as it is: every control character but the line break (an
    escape sequence that would move the cursor or recolour the terminal, say) shown as
    ``\\x1b``; tabs as spaces, Windows line ends as plain ones."""
    flat = text.replace("\r\n", "\n").expandtabs(4)
    return "".join(
        f"\\x{ord(c):02x}" if c != "\n" and (ord(c) < 32 or 127 <= ord(c) < 160) else c
        for c in flat
    )


# -- printing ----------------------------------------------------------------------------------

STYLES: dict[type[Event], str] = {
    ToolStarted: "cyan",
    ToolFinished: "green",
    PermissionDecided: "dim",
    TurnEnded: "dim",
    ModelCalled: "dim",
}


def print_event(console: Console, event: Event, *, verbose: bool = False) -> None:
    """One event, one line (a reply: its text in full, since that is the answer)."""
    if isinstance(event, ModelCalled) and not verbose:
        return
    if isinstance(event, AssistantReplied):
        for block in event.message.content:
            if block.type == "text" and block.text.strip():
                console.print(Text(block.text.strip()))
        if verbose:
            console.print(Text(str(event), style="dim"))
        return
    if isinstance(event, TurnEnded) and not verbose:
        return
    line = readable(str(event))  # a tool's or a hook's output may hold escape sequences
    style = STYLES.get(type(event), "")
    if isinstance(event, ToolFinished) and event.is_error:
        style = "red"
    elif not style and line.lstrip().startswith(("⚠", "■")):
        style = "yellow"
    elif not style:
        style = "magenta"
    console.print(Text(line, style=style))


def table(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], *, numbers: bool = True
) -> Table:
    """A plain table; with ``numbers``, every column but the first is right-aligned."""
    out = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for i, name in enumerate(columns):
        out.add_column(name, justify="right" if numbers and i else "left")
    for row in rows:
        out.add_row(*row)
    return out
