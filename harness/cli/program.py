"""The program: one invocation of the command line, its terminal, and its current session.

:class:`Program` reads the options into an :class:`~harness.cli.assemble.Options`, opens
(or resumes) a session with :func:`~harness.cli.assemble.assemble`, and runs prompts in one of
the two modes: one-shot (``-p``: the answer, or JSON, on stdout and the rest on stderr) or
interactive (a prompt line, slash commands, Ctrl-C to stop a turn). It also lists this
folder's sessions for ``--resume`` without an id (:func:`describe`, one line each).

Chapter 12's planning shows here too: the spinner carries the todo list's summary, a line
says when the list or the permission mode changed (an approved plan ends plan mode), the
plan of ``exit_plan_mode`` is shown whole before a person answers, and a progress file's
briefing goes in front of the session's first prompt.

Chapter 13's configuration too: what could not be read (a broken settings file, a SKILL.md
with bad front matter) is said once on stderr as the session opens; the folder-trust question
is asked at the terminal the first time a project's hook would run (one-shot mode without a
terminal never trusts: the project's hooks do not run); the user's slash commands and skills
complete at the prompt and run as ``/name arguments``, in one-shot mode too; SessionEnd
hooks run when the session ends (``/clear``, ``/exit``, the end of input).

Chapter 14's MCP servers: they start as the first session opens (a project's server once a
person approved it: asked at the terminal, never in one-shot mode without one), what went
wrong is said once on stderr, ``/clear`` keeps them, and :meth:`Program.close` stops them
however the run ends (:mod:`harness.cli.mcp`). The spinner names each tool while it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.text import Text

from harness.cli.assemble import (
    MODES,
    Harness,
    Options,
    assemble,
    sessions_for,
    transcript_path,
)
from harness.cli.commands import COMMANDS, Shell, dispatch
from harness.cli.extensions import AskTrust, expand_command, never_trust, terminal_trust
from harness.cli.mcp import (
    STARTING,
    Approve,
    McpServers,
    home_folder,
    init_servers,
    summary,
    terminal_approval,
    tool_label,
)
from harness.cli.report import Ending, Exit, ending, event_record, json_line, result_record
from harness.cli.sessions import describe, inside, regular_session, short
from harness.cli.terminal import (
    Activity,
    NoInput,
    Progress,
    ProgressClock,
    Reader,
    isatty,
    print_event,
    readable,
    terminal_approver,
)
from harness.cli.todos import Seen, status
from harness.cli.tracing import session_tracing
from harness.events import AssistantReplied, Event
from harness.planning import EXIT_PLAN_TOOL
from harness.resume import NotFlushed, SessionNotFound
from harness.settings.files import MANAGED_DIR_LINUX
from harness.tools.permissions import Approval, ApprovalRequest, Approver


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
            progress=args.progress,
            managed_dir=MANAGED_DIR_LINUX,
        )
        self.sessions = sessions_for(self.options, clock=self.clock)
        self.mcp = McpServers(
            self.options.workspace,
            home_folder(),
            ask=self.server_asker(),
            given=getattr(args, "mcp_given", []),
            strict=args.strict_mcp_config,
            context_window=self.options.window,
        )
        self.shown: Event | None = None
        """The last event printed (a run's ending is not printed again after it)."""
        self.tracing = session_tracing(getattr(args, "trace", None), os.environ)
        """Chapter 15's traces: ``None`` unless ``--trace`` or ``HARNESS_TRACE`` asked."""

    # -- sessions --------------------------------------------------------------------------

    def approver(self) -> Approver:
        if self.one_shot and not (isatty(sys.stdin) and isatty(sys.stderr)):
            return _nobody
        return terminal_approver(
            self.reader, self.console, self.activity, texts={EXIT_PLAN_TOOL: "plan"}
        )

    def asker(self) -> AskTrust:
        """Who answers the folder-trust question: the terminal, or nobody (then no)."""
        if self.one_shot and not (isatty(sys.stdin) and isatty(sys.stderr)):
            return never_trust
        return terminal_trust(self.reader, self.console, self.activity)

    def server_asker(self) -> Approve | None:
        """Who approves a project's MCP server: the terminal, or nobody (then it stays off)."""
        if self.one_shot and not (isatty(sys.stdin) and isatty(sys.stderr)):
            return None
        return terminal_approval(self.reader, self.console, self.activity, Path.cwd())

    def close(self) -> None:
        """Stop the MCP servers and send the last spans (the program is ending)."""
        try:
            self.mcp.close()
        finally:
            if self.tracing is not None:
                self.tracing.close()

    def open(self, session: str | Path | None) -> Harness:
        """A new session (or ``session`` resumed), the spinner showing its status; a progress
        file or a configuration file that cannot be used is said in one line on stderr, and
        the session goes on."""
        if not self.mcp.checked and self.mcp.enabled:
            self.activity.show(STARTING)
        try:
            harness = assemble(
                self.options,
                approver=self.approver(),
                clock=self.clock,
                extra=[Progress(self.activity, tool_label)],
                sessions=self.sessions,
                session=session,
                ask_trust=self.asker(),
                mcp=self.mcp,
            )
        finally:
            self.activity.hide()
        for problem in self.mcp.unsaid():
            print(f"harness: {readable(problem)}", file=sys.stderr)
        extensions = harness.extensions
        if extensions is not None:
            for problem in extensions.problems:
                print(f"harness: skipped {readable(problem)}", file=sys.stderr)
            extensions.problems.clear()  # said once; the trust gate adds any later ones
            names = [f"/{c}" for c in COMMANDS] + [
                f"/{name}" for name in extensions.skills.commands.names()
            ]
            self.reader.complete(names)
        planning = harness.planning
        self.activity.status = lambda: status(planning)
        planning.todos.listeners.append(lambda _list: self.activity.refresh())
        if harness.progress_error is not None:
            print(
                f"harness: {harness.progress_error}; the session goes on without a progress "
                "file, and the file is left as it is",
                file=sys.stderr,
            )
        return harness

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
        seen = Seen.now(harness.planning)
        progress = harness.planning.progress
        if progress is not None and not progress.task:  # the file names the task it was for
            progress.task = short(prompt, 200)
        if harness.briefing:  # what the progress file says, sent once, before the prompt
            prompt, harness.briefing = f"{harness.briefing}\n\n{prompt}", ""
        run: Generator[Event, None, None]
        if self.tracing is not None:  # chapter 15: the same events, inside a trace
            run = self.tracing.run(harness, prompt)
        else:
            run = harness.agent.run(prompt)  # type: ignore[assignment]
        self.activity.show("working…")
        try:
            for event in run:
                events.append(event)
                if stream:
                    self.out.print(json_line(event_record(event, harness.session_id)), markup=False)
                elif not self.quiet and not (self.one_shot and _final(event)):
                    print_event(self.console, event, verbose=self.args.verbose)
                    self.shown = event
                if not stream and not self.quiet:
                    for line in seen.changes():
                        self.console.print(line)
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

    def end(self, harness: Harness, reason: str) -> None:
        """Stop the session's background shells, then run its SessionEnd hooks (their
        outcomes said unless quiet)."""
        try:
            harness.close()  # chapter 15: a session's shells end with it, whatever follows
        finally:
            if harness.extensions is not None:
                for event in harness.extensions.hooks.end_session(reason):
                    if not self.quiet:
                        print_event(self.console, event, verbose=self.args.verbose)

    def one(self, harness: Harness) -> int:
        try:
            return self._one(harness)
        finally:
            self.end(harness, "other")

    def _one(self, harness: Harness) -> int:
        prompt = self.args.prompt
        if prompt == "-":
            prompt = self.reader.read_all()
            if not prompt.strip():
                raise NoInput("-p - found no prompt on the standard input (it was empty)")
        if harness.extensions is not None and prompt.lstrip().startswith("/"):
            try:  # the user's own /command, expanded as at the prompt
                prompt = expand_command(harness.extensions, prompt) or prompt
            except ValueError as error:
                print(f"harness: {error}", file=sys.stderr)
                return int(Exit.FAILED)
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
        shell.servers = self.mcp
        shell.prompt = lambda text: self.run(shell.harness, text)
        shell.end = self.end
        try:
            return self._interactive(shell)
        finally:
            self.end(shell.harness, "prompt_input_exit")

    def _interactive(self, shell: Shell) -> int:
        harness = shell.harness
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
        if servers := summary(self.mcp):
            self.console.print(Text(servers, style="dim"))
        if harness.resumed is not None:
            self.console.print(Text(str(harness.resumed.event), style="magenta"))
        for line in Seen(harness.planning, mode=self.options.permission_mode).changes():
            self.console.print(line)  # the list a resumed session or a progress file holds

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
            "mcp_servers": init_servers(self.mcp),
            "cwd": ".",
        }

    def pick(self) -> str | None:
        """List this folder's sessions, newest first, and ask which to resume (only regular
        files: a folder or a pipe named ``<id>.jsonl`` is no session)."""
        found = [
            s for s in reversed(self.sessions.ids_on_disk()) if regular_session(self.sessions, s)
        ]
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
        if path is None or inside(path, self.sessions.folder):
            return path
        copied = self.sessions.import_file(path)
        print(
            f"harness: copied {path} into new session {copied}; the original is not changed",
            file=sys.stderr,
        )
        return copied


def _final(event: Event) -> bool:
    """The reply that ends the run: in one-shot mode its text goes to stdout instead."""
    return isinstance(event, AssistantReplied) and event.message.stop_reason != "tool_use"


def _nobody(request: ApprovalRequest) -> Approval:
    return Approval(
        False,
        "no terminal to ask (one-shot mode without one): allow it with --permission-mode "
        "or run interactively",
    )


__all__ = ["Program", "describe"]
