"""``python -m harness``: a small Claude-Code-like command line built from the chapters.

Interactive (``harness``) or one-shot (``harness -p "prompt"``); offline with the demo model
unless ``ANTHROPIC_API_KEY`` is set. The agent is :func:`~harness.cli.assemble.assemble`'s:
every mechanism of the course on one loop. This module only reads flags and lines, runs
prompts, and prints what happens. ``harness --help`` lists the flags and the exit codes.

Whatever a person gets wrong (a flag, a closed standard input, a sessions folder that cannot
be written, a session that is a folder or a pipe) ends as one line on stderr and an exit
code (:class:`~harness.cli.report.Exit`), before any model call. A transcript outside the
sessions folder is copied in and the copy resumed: the command line appends only to files of
its own folder.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
import time
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.text import Text

from harness import messages as m
from harness.cli.assemble import (
    MODES,
    Harness,
    Options,
    assemble,
    sessions_for,
    transcript_path,
)
from harness.cli.commands import COMMANDS, Shell, dispatch
from harness.cli.report import Ending, Exit, ending, event_record, json_line, result_record
from harness.cli.terminal import (
    Activity,
    NoInput,
    Progress,
    ProgressClock,
    Reader,
    isatty,
    print_event,
    terminal_approver,
)
from harness.events import AssistantReplied, Event
from harness.memory import MemoryFormatError
from harness.resume import NotFlushed, SessionNotFound, Sessions
from harness.tools.permissions import Approval, ApprovalRequest, Approver
from harness.transcript import load

EPILOG = "exit codes: " + ", ".join(f"{int(e)} {e.name.lower().replace('_', ' ')}" for e in Exit)
PICK = "\0pick"
"""``--resume`` given without an id: show the sessions and ask which."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="harness",
        description="An agent harness in your terminal, built one chapter at a time. "
        "Offline with a scripted demo model unless ANTHROPIC_API_KEY is set.",
        epilog=EPILOG,
    )
    p.add_argument(
        "-p",
        "--print",
        dest="prompt",
        metavar="PROMPT",
        help="answer one prompt and exit ('-' reads it from stdin)",
    )
    p.add_argument(
        "-c",
        "--continue",
        dest="cont",
        action="store_true",
        help="continue the latest session of this folder",
    )
    p.add_argument(
        "-r",
        "--resume",
        nargs="?",
        const=PICK,
        metavar="ID",
        help="resume a session by id (or a .jsonl transcript); without an id, pick one",
    )
    p.add_argument(
        "--model", help="the model id to ask for (default: HARNESS_MODEL or the course's)"
    )
    p.add_argument(
        "--permission-mode",
        choices=sorted(MODES),
        default="default",
        help="when tool calls ask first (default: anything that changes something)",
    )
    p.add_argument(
        "--max-turns",
        type=int,
        default=50,
        metavar="N",
        help="model calls per prompt before the run stops (default 50)",
    )
    p.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        default="text",
        help="with -p: the answer as text, one JSON result, or one JSON line per event",
    )
    p.add_argument(
        "--sessions",
        type=Path,
        metavar="DIR",
        help="where transcripts live (default ./.harness; ~/.claude for Claude Code's)",
    )
    p.add_argument("--verbose", action="store_true", help="print every event, model calls too")
    return p


class Program:
    """One invocation: the options, the terminal, and the current session."""

    def __init__(self, args: argparse.Namespace, *, stdin: TextIO | None = None) -> None:
        self.args = args
        self.one_shot = args.prompt is not None
        machine = self.one_shot and args.output_format != "text"
        # In one-shot mode stdout carries only the answer (or JSON): the rest goes to stderr.
        self.out = Console(highlight=False, soft_wrap=True)
        self.console = Console(stderr=self.one_shot, highlight=False, soft_wrap=True)
        self.quiet = machine and not args.verbose
        self.activity = Activity(self.console, enabled=not self.quiet)
        self.reader = Reader([f"/{c}" for c in COMMANDS], stdin=stdin)
        self.clock = ProgressClock(self.activity)
        self.options = Options(
            workspace=Path.cwd(),
            model=args.model,
            permission_mode=MODES[args.permission_mode],
            max_turns=args.max_turns,
            sessions_root=args.sessions,
        )
        self.sessions = sessions_for(self.options, clock=self.clock)
        self.shown: Event | None = None
        """The last event printed (a run's ending is not printed again after it)."""

    # -- sessions --------------------------------------------------------------------------

    def approver(self) -> Approver:
        if self.one_shot and not (isatty(sys.stdin) and isatty(sys.stderr)):
            return _nobody
        return terminal_approver(self.reader, self.console, self.activity)

    def open(self, session: str | Path | None) -> Harness:
        return assemble(
            self.options,
            approver=self.approver(),
            clock=self.clock,
            extra=[Progress(self.activity)],
            sessions=self.sessions,
            session=session,
        )

    def bind(self, harness: Harness) -> None:
        """Point ``--continue`` at this session, once its transcript holds a message."""
        with contextlib.suppress(NotFlushed, SessionNotFound, OSError):
            self.sessions.bind("cli", harness.session_id)

    # -- a prompt --------------------------------------------------------------------------

    def run(self, harness: Harness, prompt: str) -> Ending:
        """Run one prompt, printing (or streaming) its events; Ctrl-C stops it cleanly."""
        events: list[Event] = []
        interrupted = False
        stream = self.one_shot and self.args.output_format == "stream-json"
        run: Generator[Event, None, None] = harness.agent.run(prompt)  # type: ignore[assignment]
        self.activity.show("working…")
        try:
            for event in run:
                events.append(event)
                if stream:
                    self.out.print(json_line(event_record(event, harness.session_id)), markup=False)
                elif not self.quiet and not (self.one_shot and _final(event)):
                    print_event(self.console, event, verbose=self.args.verbose)
                    self.shown = event
        except KeyboardInterrupt:
            interrupted = True
        finally:
            run.close()  # answers any call cut short, so the conversation stays valid
            self.activity.hide()
            self.bind(harness)
        if interrupted and not self.quiet:
            self.console.print(
                Text(
                    "⏹ interrupted: the turn stopped and the conversation is still valid "
                    "(calls cut short are answered as interrupted)",
                    style="yellow",
                )
            )
        return ending(events, interrupted=interrupted)

    # -- the two modes ---------------------------------------------------------------------

    def one(self, harness: Harness) -> int:
        prompt = self.args.prompt
        if prompt == "-":
            prompt = self.reader.read_all()
            if not prompt.strip():
                raise NoInput("-p - found no prompt on the standard input (it was empty)")
        started = time.monotonic()
        if self.args.output_format == "stream-json":
            self.out.print(json_line(self.init_record(harness)), markup=False)
        end = self.run(harness, prompt)
        took = round((time.monotonic() - started) * 1000)
        if self.args.output_format == "text":
            if end.text:
                self.out.print(end.text, markup=False)
            if end.exit != Exit.DONE and str(self.shown) != end.reason:  # not said twice
                self.console.print(Text(f"■ {end.reason}", style="yellow"))
        else:
            record = result_record(end, harness.agent.meter, harness.session_id, took)
            self.out.print(json_line(record), markup=False)
        return int(end.exit)

    def interactive(self, harness: Harness) -> int:
        shell = Shell(harness, self.console, self.activity, lambda: self.open(None))
        self.banner(harness)
        armed = False  # a Ctrl-C just happened: the next one at the prompt exits
        while True:
            try:
                line = self.reader.read("› ")
            except KeyboardInterrupt:
                if armed:
                    return int(Exit.INTERRUPTED)
                armed = True
                self.console.print(Text("(Ctrl-C again to exit, or /exit)", style="dim"))
                continue
            except EOFError:
                return int(Exit.DONE)
            if not line.strip():
                continue
            armed = False
            if line.strip().startswith("/"):
                if not dispatch(shell, line):
                    return int(Exit.DONE)
                continue
            end = self.run(shell.harness, line)
            armed = end.exit == Exit.INTERRUPTED

    def banner(self, harness: Harness) -> None:
        mode = (
            "live: the Anthropic API answers"
            if self.options.live
            else ("offline: the demo model answers (set ANTHROPIC_API_KEY to go live)")
        )
        agent = harness.agent
        self.console.print(Text(f"harness · {mode}", style="bold"))
        self.console.print(
            Text(
                f"model {agent.config.model} · permissions {self.options.permission_mode} · "
                f"session {harness.session_id[:8]} · /help for commands",
                style="dim",
            )
        )
        if harness.resumed is not None:
            self.console.print(Text(str(harness.resumed.event), style="magenta"))

    def init_record(self, harness: Harness) -> dict[str, object]:
        agent = harness.agent
        return {
            "type": "system",
            "subtype": "init",
            "session_id": harness.session_id,
            "model": agent.config.model,
            "live": self.options.live,
            "permission_mode": self.options.permission_mode,
            "tools": [t["name"] for t in agent.tools.definitions()],
            "cwd": ".",
        }

    def pick(self) -> str | None:
        """List this folder's sessions, newest first, and ask which to resume (only regular
        files: a folder or a pipe named ``<id>.jsonl`` is no session)."""
        found = [s for s in reversed(self.sessions.ids_on_disk()) if _regular(self.sessions, s)]
        found = found[:20]
        if not found:
            return None
        self.console.print(Text("Sessions in this folder, newest first:", style="bold"))
        for i, session_id in enumerate(found, 1):
            self.console.print(Text(f"  {i:>2}. {describe(self.sessions, session_id)}"))
        answer = self.reader.read(f"Resume which? [1-{len(found)}, Enter for 1] ").strip()
        index = int(answer) if answer.isdecimal() else 1  # "²" is a digit, not a number
        return found[min(max(index, 1), len(found)) - 1]

    def target(self, session: str | None) -> str | Path | None:
        """What to resume: ``session`` as :func:`assemble` takes it, the session file checked
        (a regular file, or :class:`SessionNotFound`). A file outside the sessions folder (or
        a link to one) is copied into a new session first, so the run never appends to it."""
        path = transcript_path(self.sessions, session)
        if path is None or _inside(path, self.sessions.folder):
            return path
        copied = self.sessions.import_file(path)
        print(
            f"harness: copied {path} into new session {copied}; the original is not changed",
            file=sys.stderr,
        )
        return copied


def _regular(sessions: Sessions, session_id: str) -> bool:
    """Whether the session's file is a regular file (found by ``stat``, never by opening it:
    opening a named pipe waits for a writer)."""
    try:
        return stat.S_ISREG(os.stat(sessions.path(session_id)).st_mode)
    except (OSError, ValueError, SessionNotFound):
        return False


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is a file of ``folder`` itself, links followed: not a link out of
    it, nor a file in a subfolder (a subagent's sidechain)."""
    return path.resolve() == folder.resolve() / path.name


def describe(sessions: Sessions, session_id: str) -> str:
    """A session in one line: its id, when it last changed, its size and first prompt."""
    path = sessions.path(session_id)
    try:
        status = os.stat(path)
    except OSError as error:
        return f"{session_id[:8]}  (unreadable: {error.strerror})"
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(status.st_mtime))
    if not stat.S_ISREG(status.st_mode):  # never opened: a pipe would wait for a writer
        return f"{session_id[:8]}  {when}  (not a transcript: not a regular file)"
    try:
        session = load(path)
    except (OSError, ValueError) as error:
        return f"{session_id[:8]}  {when}  (unreadable: {error})"
    said = (m.text_of(msg) for msg in session.messages if msg["role"] == "user")
    first = next((text for text in said if text.strip()), "")
    first = " ".join(first.split())
    first = first if len(first) <= 50 else first[:49] + "…"
    return f"{session_id[:8]}  {when}  {len(session.messages):>3} messages  {first}"


def _final(event: Event) -> bool:
    """The reply that ends the run: in one-shot mode its text goes to stdout instead."""
    return isinstance(event, AssistantReplied) and event.message.stop_reason != "tool_use"


def _nobody(request: ApprovalRequest) -> Approval:
    return Approval(
        False,
        "no terminal to ask (one-shot mode without one): allow it with --permission-mode "
        "or run interactively",
    )


def unwritable(folder: Path) -> str | None:
    """Why a transcript could not be written in ``folder``, or None if it could.

    Checked without creating anything: the nearest part of the path that exists must be a
    folder the program may write in (a file there, or a read-only folder, would leave the
    session unrecorded). ``os.access`` answers for this user (root may write anywhere).
    """
    for place in (folder, *folder.parents):
        try:
            mode = os.stat(place).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue  # not there yet: it would be created, if its parent allows
        except (OSError, ValueError) as error:
            return f"{place} cannot be reached ({getattr(error, 'strerror', None) or error})"
        if not stat.S_ISDIR(mode):
            return f"{place} is a file, not a folder"
        if not os.access(place, os.W_OK | os.X_OK):
            return f"{place} is not writable"
        return None
    return f"none of {folder} exists"


def _usage(message: str) -> int:
    """One line on stderr; the exit code for a usage error."""
    print(f"harness: {message}", file=sys.stderr)
    return int(Exit.USAGE)


def _problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the flags themselves, beyond what argparse checks."""
    if args.max_turns < 1:
        return "--max-turns must be at least 1"
    if args.cont and args.resume:
        return "use --continue or --resume, not both"
    if args.sessions is not None and "\0" in str(args.sessions):
        return "--sessions: a path cannot hold a NUL character"
    return None


def _stdin_problem(args: argparse.Namespace, reader: Reader) -> str | None:
    """Why this invocation cannot run with the standard input it has (a closed one)."""
    if not reader.closed:
        return None
    if args.prompt == "-":
        return "-p - reads the prompt from the standard input, which is closed"
    if args.resume == PICK:
        return "--resume without an id asks which session, but the standard input is closed"
    if args.prompt is None:
        return (
            "the standard input is closed, so there is nothing to read prompts from "
            "(give one with -p PROMPT)"
        )
    return None


def _memory_note(harness: Harness) -> str:
    """The resumed session's memory file could not be used: which file, which line, why."""
    error = harness.memory_error
    if isinstance(error, MemoryFormatError):
        where = f"{error.path or harness.memory.path} line {error.line}: {error.problem}"
    else:
        where = str(error)
    return (
        f"harness: {where}; session memory is off for this session and the file is left as "
        "it is (fix it, then resume again)"
    )


def _oserror(error: OSError) -> str:
    """An ``OSError`` in one line, naming the file."""
    if error.strerror and error.filename:
        return f"{error.filename}: {error.strerror}"
    return str(error)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line. Returns the exit code (see :class:`~harness.cli.report.Exit`).

    Everything a person can get wrong is one line on stderr and :attr:`Exit.USAGE`, found
    before the first model call: bad flags (argparse's message), a closed standard input
    where one is needed, a sessions folder transcripts cannot be written to, nothing (or
    not a transcript) to resume.
    """
    try:
        args = parser().parse_args(argv)
    except SystemExit as stop:  # --help (0), or a flag argparse refused (it said why)
        return stop.code if isinstance(stop.code, int) else int(Exit.USAGE)
    if (problem := _problem(args)) is not None:
        return _usage(problem)
    try:
        Path.cwd()
    except OSError as error:
        return _usage(f"the current folder cannot be used ({error.strerror})")
    try:
        program = Program(args)
        if (problem := _stdin_problem(args, program.reader)) is not None:
            return _usage(problem)
        if (why := unwritable(program.sessions.folder)) is not None:
            flag = "--sessions" if args.sessions is not None else "the default (./.harness)"
            return _usage(f"transcripts cannot be written under {flag}: {why}")
        session: str | None = "latest" if args.cont else args.resume
        if session == PICK:
            session = program.pick()
            if session is None:
                return _usage("no sessions in this folder to resume")
        try:
            harness = program.open(program.target(session))
        except SessionNotFound as error:
            return _usage(str(error))
        except OSError as error:  # the transcript cannot be read, or copied
            return _usage(_oserror(error))
        if harness.memory_error is not None:
            print(_memory_note(harness), file=sys.stderr)
        return program.one(harness) if program.one_shot else program.interactive(harness)
    except KeyboardInterrupt:
        return int(Exit.INTERRUPTED)
    except EOFError:
        return int(Exit.DONE)
    except NoInput as error:
        return _usage(str(error))


def run_module() -> None:
    """``python -m harness``: no traceback reaches the user. An error :func:`main` did not
    expect (a bug) is one line and exit code 1; ``HARNESS_DEBUG=1`` shows the traceback."""
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    try:
        code = main()
    except Exception as error:
        if os.environ.get("HARNESS_DEBUG"):
            raise
        print(
            f"harness: unexpected error (a bug; HARNESS_DEBUG=1 shows where): "
            f"{type(error).__name__}: {error}",
            file=sys.stderr,
        )
        code = int(Exit.FAILED)
    raise SystemExit(code)
