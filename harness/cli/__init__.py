"""``python -m harness``: a small Claude-Code-like command line built from the chapters.

Interactive (``harness``) or one-shot (``harness -p "prompt"``); offline with the demo model
unless ``ANTHROPIC_API_KEY`` is set. The agent is :func:`~harness.cli.assemble.assemble`'s:
every mechanism of the course on one loop. This package only reads flags and lines, runs
prompts, and prints what happens. ``harness --help`` lists the flags and the exit codes.

Whatever a person gets wrong (a flag, a closed standard input, a sessions folder that cannot
be written, a session that is a folder or a pipe) ends as one line on stderr and an exit
code (:class:`~harness.cli.report.Exit`), before any model call. A transcript outside the
sessions folder is copied in and the copy resumed: the command line appends only to files of
its own folder.

The pieces:

* ``program``: :class:`Program`, one invocation: the one-shot and the interactive runs;
* ``assemble``: the agent, every mechanism of the course on one loop, and its sessions;
* ``commands``: the slash commands of the interactive mode;
* ``mcp``: the MCP servers of a run: started, approved, shown by ``/mcp``, stopped;
* ``sessions``: the sessions a person names (``--resume``, ``--continue``);
* ``terminal``: printing events, progress on long waits, and asking for approvals;
* ``todos``: the todo list and plan mode at the terminal (chapter 12);
* ``report``: how a run ended (its exit code), what fills the context, what it cost;
* ``demo``: the scripted model that answers offline.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

# ``harness.cli.assemble`` is the function, as it always was (it hides the module of that
# name; ``importlib.import_module("harness.cli.assemble")`` reaches the module).
from harness.cli.assemble import (
    MODES,
    Harness,
    Options,
    assemble,
    sessions_for,
    transcript_path,
)
from harness.cli.program import Program
from harness.cli.report import Exit
from harness.cli.sessions import describe
from harness.cli.terminal import NoInput, Reader
from harness.cli.tracing import FLAG_HELP as TRACE_FLAG_HELP
from harness.mcp.config import given_config
from harness.memory import MemoryFormatError
from harness.planning import PROGRESS_FILE
from harness.resume import SessionNotFound

__all__ = [
    "EPILOG",
    "MODES",
    "PICK",
    "Exit",
    "Harness",
    "Options",
    "Program",
    "assemble",
    "describe",
    "main",
    "parser",
    "run_module",
    "sessions_for",
    "transcript_path",
    "unwritable",
]

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
    p.add_argument(
        "--progress",
        nargs="?",
        const=Path(PROGRESS_FILE),
        type=Path,
        metavar="PATH",
        help=f"start from a progress file and keep it current (default name {PROGRESS_FILE})",
    )
    p.add_argument(
        "--mcp-config",
        action="append",
        default=[],
        metavar="FILE_OR_JSON",
        help='MCP servers from a file or a JSON string ({"mcpServers": ...}); may repeat',
    )
    p.add_argument(
        "--strict-mcp-config",
        action="store_true",
        help="use only the servers of --mcp-config, none from .mcp.json or ~/.claude.json",
    )
    p.add_argument(
        "--trace", nargs="?", const="1", default=None, metavar="URL", help=TRACE_FLAG_HELP
    )
    p.add_argument("--verbose", action="store_true", help="print every event, model calls too")
    return p


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
    for flag, path in (("--sessions", args.sessions), ("--progress", args.progress)):
        if path is not None and "\0" in str(path):
            return f"{flag}: a path cannot hold a NUL character"
    try:
        args.mcp_given = [given_config(value) for value in args.mcp_config]
    except ValueError as error:
        return f"--mcp-config: {error}"
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
    program: Program | None = None
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
    finally:  # however the run ends, its MCP servers stop with it
        if program is not None:
            program.close()


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
