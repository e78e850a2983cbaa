"""The sessions a person names: ``--continue``'s latest, an id, a transcript file, a list.

:func:`transcript_path` turns ``--resume``'s and ``--continue``'s argument into the file to
load, checked with ``stat`` (a regular file, never a folder nor a named pipe, which opening
would wait on forever); :func:`describe` shows a session in one line for ``--resume``
without an id; :func:`expand` reads ``~`` in a path as a shell would. Moved out of
:mod:`harness.cli.assemble` and :mod:`harness.cli.program` (which still offer
:func:`transcript_path`, :func:`expand` and :func:`describe`) to keep each to one idea.
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

from harness import messages as m
from harness.resume import SessionNotFound, Sessions
from harness.transcript import load


def expand(path: Path) -> Path:
    """``~`` and ``~user`` expanded; a ``~user`` with no such user stays as written, as in a
    shell (``Path.expanduser`` would raise)."""
    try:
        return path.expanduser()
    except RuntimeError:
        return path


def transcript_path(sessions: Sessions, session: str | Path | None) -> Path | None:
    """The transcript ``session`` names (see :func:`~harness.cli.assemble.assemble`), or
    None for a new session.

    Raises :class:`~harness.resume.SessionNotFound` when there is none, or when what is there
    is not a regular file (a folder or a named pipe called ``<id>.jsonl``: reading it would
    fail, or wait forever for a writer). Checked with ``stat``, never by opening it.
    """
    if session is None:
        return None
    if session == "latest":
        found = sessions.latest() or next(reversed(sessions.ids_on_disk()), None)
        if found is None:
            raise SessionNotFound("no earlier session in this folder to continue")
        return _regular(sessions.path(found), f"no session {found} in {sessions.folder.name}")
    text = str(session)
    if text.endswith(".jsonl"):
        return _regular(expand(Path(text)).absolute(), f"no transcript at {text}")
    return _regular(sessions.path(text), f"no session {text} in {sessions.folder.name}")


def _regular(path: Path, missing: str) -> Path:
    """``path`` if it is a regular file (through any symbolic link), else SessionNotFound:
    ``missing`` when there is nothing there."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # ValueError: a NUL in the name
        raise SessionNotFound(missing) from None
    if not stat.S_ISREG(mode):
        kind = (
            "a folder"
            if stat.S_ISDIR(mode)
            else "a named pipe"
            if stat.S_ISFIFO(mode)
            else "not a regular file"
        )
        raise SessionNotFound(f"{path} is {kind}, not a transcript")
    return path


def regular_session(sessions: Sessions, session_id: str) -> bool:
    """Whether the session's file is a regular file (found by ``stat``, never by opening it:
    opening a named pipe waits for a writer)."""
    try:
        return stat.S_ISREG(os.stat(sessions.path(session_id)).st_mode)
    except (OSError, ValueError, SessionNotFound):
        return False


def inside(path: Path, folder: Path) -> bool:
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
    said = (REMINDER.sub("", m.text_of(msg)) for msg in session.messages if msg["role"] == "user")
    first = short(next((text for text in said if text.strip()), ""), 50)
    return f"{session_id[:8]}  {when}  {len(session.messages):>3} messages  {first}"


# A progress file's briefing is sent in front of the first prompt: not what the person said.
REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def short(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


__all__ = ["describe", "expand", "inside", "regular_session", "short", "transcript_path"]
