"""The sessions folder: one workspace's transcripts, and the index that names them.

* :class:`Sessions` is one workspace's folder of transcripts, laid out as Claude Code lays
  out ``~/.claude/projects/<folder>/<session-id>.jsonl``, with a small index that maps names
  (``latest``, a workflow step) to session ids.
* The **flush gate**: :meth:`Sessions.bind` refuses to point a name at a session whose
  transcript does not hold a complete message on disk (:func:`is_flushed`). A pointer written
  first and a crash before the transcript would leave a name that leads nowhere, and the next
  start would begin again with no memory (a reviewed pull request in an agent gateway added
  such a gate before persisting a session binding).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.atomic import write_atomic
from harness.clock import Clock, RealClock
from harness.transcript import (
    Entry,
    NotATranscript,
    Transcript,
    parse_line,
    project_folder,
    random_ids,
)

INDEX = "sessions.json"


class SessionNotFound(LookupError):
    """No session has that id (or no session was ever bound as the latest)."""


class NotFlushed(RuntimeError):
    """The flush gate refused to point a name at a session not yet safely on disk."""


def is_flushed(path: Path) -> bool:
    """Whether ``path`` holds at least one complete message entry, ended by a newline.

    Reads from the end, a chunk at a time, so it costs the same on a 1 GB file. A path that
    is not a regular file (a folder, a named pipe, whose open would wait) is never opened.
    """
    if not path.is_file():
        return False
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            end = size
            tail = b""
            while end > 0:
                start = max(0, end - 65_536)
                handle.seek(start)
                tail = handle.read(end - start) + tail
                lines = tail.split(b"\n")
                complete = lines[1:-1] if start > 0 else lines[:-1]
                for line in reversed(complete):
                    entry = parse_line(line, 0)
                    if isinstance(entry, Entry) and entry.type in ("user", "assistant"):
                        return True
                tail = lines[0] if start > 0 else b""
                end = start
    except OSError:
        return False
    return False


@dataclass
class Sessions:
    """The transcripts of one workspace: ``root/projects/<folder>/<session-id>.jsonl``.

    ``root`` is Claude Code's ``~/.claude``; the course keeps it inside the workspace
    (``.harness``) so that a notebook leaves nothing behind in your home folder.
    """

    root: Path
    cwd: Path
    clock: Clock = field(default_factory=RealClock)
    ids: Callable[[], str] = random_ids

    @classmethod
    def for_workspace(
        cls,
        workspace: str | Path,
        *,
        clock: Clock | None = None,
        ids: Callable[[], str] = random_ids,
    ) -> Sessions:
        """The sessions of ``workspace``, kept in its ``.harness`` folder."""
        workspace = Path(workspace).resolve()
        return cls(workspace / ".harness", workspace, clock or RealClock(), ids)

    @property
    def folder(self) -> Path:
        return self.root / "projects" / project_folder(self.cwd)

    def path(self, session_id: str) -> Path:
        if not session_id or "/" in session_id or "\\" in session_id or session_id in (".", ".."):
            raise SessionNotFound(f"{session_id!r} is not a session id")
        return self.folder / f"{session_id}.jsonl"

    def new(self, *, fsync: bool = True) -> Transcript:
        """A writer for a new session (the file appears with its first entry)."""
        session_id = self.ids()
        return Transcript(
            path=self.path(session_id),
            session_id=session_id,
            cwd=str(self.cwd),
            clock=self.clock,
            ids=self.ids,
            fsync=fsync,
        )

    def import_file(self, path: str | Path) -> str:
        """Copy the transcript at ``path`` into a new session of this folder; its id.

        Resuming a file outside the folder (or a link to one) would append the new run to
        it, a file that is not this folder's to change. The copy is a new regular file here,
        byte for byte the original, so the loader sees the same entries; the original is
        only read. Raises :class:`~harness.transcript.NotATranscript` (an ``OSError``) if
        ``path`` is not a regular file, checked on the open file (a named pipe is opened
        without waiting for a writer), and ``OSError`` if it cannot be read or copied (no
        copy is left behind then).
        """
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        handle = os.open(path, flags)
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            os.close(handle)
            raise NotATranscript(f"{path} is not a regular file, so it is no transcript")
        with open(handle, "rb") as source:
            self.folder.mkdir(parents=True, exist_ok=True)
            for _ in range(100):  # a new id, never an existing file (the ids are random)
                session_id = self.ids()
                target = self.path(session_id)
                try:
                    copy = open(target, "xb")  # noqa: SIM115 (closed below, removed on failure)
                except FileExistsError:
                    continue
                break
            else:
                raise FileExistsError(f"no free session id in {self.folder}")
            try:
                with copy:
                    while chunk := source.read(1 << 20):
                        copy.write(chunk)
                    copy.flush()
                    os.fsync(copy.fileno())
            except BaseException:
                target.unlink(missing_ok=True)
                raise
        return session_id

    def ids_on_disk(self) -> list[str]:
        """Every session in the folder, oldest first (by the file's last change)."""
        if not self.folder.is_dir():
            return []
        found = [p for p in self.folder.glob("*.jsonl") if p.is_file()]  # no pipe, no folder
        files = sorted(found, key=lambda p: (p.stat().st_mtime, p.name))
        return [p.stem for p in files]

    # -- the index and its gate --------------------------------------------------------------

    def index(self) -> dict[str, str]:
        """Names to session ids. A missing or unreadable index is an empty one."""
        try:
            data = json.loads((self.folder / INDEX).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return (
            {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}
            if isinstance(data, dict)
            else {}
        )

    def bind(self, name: str, session_id: str) -> None:
        """Point ``name`` at ``session_id`` (and ``latest`` too), through the flush gate.

        Raises :class:`NotFlushed`, and writes nothing, unless the session's transcript
        already holds a complete message on disk. The index is replaced atomically.
        """
        if not is_flushed(self.path(session_id)):
            raise NotFlushed(
                f"session {session_id} has no complete message on disk yet; a pointer to it "
                "would lead nowhere after a crash, so none is written"
            )
        index = self.index()
        index[name] = session_id
        index["latest"] = session_id
        write_atomic(self.folder / INDEX, json.dumps(index, indent=1, sort_keys=True) + "\n")

    def lookup(self, name: str) -> str | None:
        """The session ``name`` points at, if its transcript is still there."""
        session_id = self.index().get(name)
        if session_id is None or not self.path(session_id).exists():
            return None
        return session_id

    def latest(self) -> str | None:
        """The latest bound session (Claude Code's ``--continue``)."""
        return self.lookup("latest")
