"""``python -m harness``: a small Claude-Code-like command line built from the chapters.

Interactive (``harness``) or one-shot (``harness -p "prompt"``); offline with the demo model
unless ``ANTHROPIC_API_KEY`` is set. The agent is :func:`~harness.cli.assemble.assemble`'s:
every mechanism of the course on one loop. This module only reads flags and lines, runs
prompts, and prints what happens. ``harness --help`` lists the flags and the exit codes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.text import Text

from harness import messages as m
from harness.cli.assemble import MODES, Harness, Options, assemble, sessions_for
from harness.cli.commands import COMMANDS, Shell, dispatch
from harness.cli.report import Ending, Exit, ending, event_record, json_line, result_record
from harness.cli.terminal import (
    Activity,
    Progress,
    ProgressClock,
    Reader,
    print_event,
    terminal_approver,
)
from harness.events import AssistantReplied, Event
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

    # -- sessions --------------------------------------------------------------------------

    def approver(self) -> Approver:
        if self.one_shot and not (sys.stdin.isatty() and sys.stderr.isatty()):
            return _nobody
        return terminal_approver(self.reader, self.console, self.activity)

    def open(self, session: str | None) -> Harness:
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
            prompt = sys.stdin.read()
        started = time.monotonic()
        if self.args.output_format == "stream-json":
            self.out.print(json_line(self.init_record(harness)), markup=False)
        end = self.run(harness, prompt)
        took = round((time.monotonic() - started) * 1000)
        if self.args.output_format == "text":
            if end.text:
                self.out.print(end.text, markup=False)
            if end.exit != Exit.DONE:
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
        """List this folder's sessions, newest first, and ask which to resume."""
        found = list(reversed(self.sessions.ids_on_disk()))[:20]
        if not found:
            return None
        self.console.print(Text("Sessions in this folder, newest first:", style="bold"))
        for i, session_id in enumerate(found, 1):
            self.console.print(Text(f"  {i:>2}. {describe(self.sessions, session_id)}"))
        answer = self.reader.read(f"Resume which? [1-{len(found)}, Enter for 1] ").strip()
        index = int(answer) if answer.isdigit() else 1
        return found[min(max(index, 1), len(found)) - 1]


def describe(sessions: Sessions, session_id: str) -> str:
    """A session in one line: its id, when it last changed, its size and first prompt."""
    path = sessions.path(session_id)
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))
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


def main(argv: Sequence[str] | None = None) -> int:
    """The command line. Returns the exit code (see :class:`~harness.cli.report.Exit`)."""
    args = parser().parse_args(argv)
    if args.max_turns < 1:
        print("harness: --max-turns must be at least 1", file=sys.stderr)
        return int(Exit.USAGE)
    if args.cont and args.resume:
        print("harness: use --continue or --resume, not both", file=sys.stderr)
        return int(Exit.USAGE)
    try:
        program = Program(args)
        session: str | None = "latest" if args.cont else args.resume
        if session == PICK:
            session = program.pick()
            if session is None:
                print("harness: no sessions in this folder to resume", file=sys.stderr)
                return int(Exit.USAGE)
        try:
            harness = program.open(session)
        except SessionNotFound as error:
            print(f"harness: {error}", file=sys.stderr)
            return int(Exit.USAGE)
        return program.one(harness) if program.one_shot else program.interactive(harness)
    except KeyboardInterrupt:
        return int(Exit.INTERRUPTED)
    except EOFError:
        return int(Exit.DONE)


def run_module() -> None:
    """``python -m harness``."""
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    raise SystemExit(main())
