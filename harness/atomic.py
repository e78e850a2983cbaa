"""Atomic writes: a file replaced whole, so that a crash leaves the old file or the new one.

:func:`write_atomic` writes a new file beside the old one, flushes it to disk and moves it
over the old one in one step, so a crash leaves the old file or the new one, never half of
either (and the next write removes the temporary file a killed writer left:
:func:`stale_temporaries`). Session memory writes ``MEMORY.md`` this way; the resumable
transcript and the notebooks' saved transcripts use it too.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

_WRITING: set[str] = set()
"""The temporary files this process is writing now (any thread): never stale."""
_WRITING_LOCK = threading.Lock()


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that a crash at any moment leaves a whole file.

    The text goes to a temporary file in the same folder, is flushed to the disk (``fsync``),
    and is then moved over the old file with ``os.replace``, one step the file system does
    whole. The folder is synced too, so the move itself survives a power cut (POSIX). Never
    delete-then-write: a crash between the two would lose the memory.

    A process killed before the move leaves its temporary file behind. So the temporary file
    is named ``.<name>.<pid>-<random>.tmp``, and each write, once its own file is in place,
    removes the ones of the same target left by a process that is gone
    (:func:`stale_temporaries`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp", dir=path.parent
    )
    try:
        with _being_written(temporary):
            with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    if hasattr(os, "O_DIRECTORY"):  # not on Windows, where the rename is already durable
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    for stale in stale_temporaries(path):  # the write is done: tidying can only help
        with contextlib.suppress(OSError):
            os.unlink(stale)


@contextlib.contextmanager
def _being_written(temporary: str) -> Iterator[None]:
    """Mark ``temporary`` as this process's write in progress (another thread's write of the
    same target must not take it for a dead writer's)."""
    key = os.path.abspath(temporary)
    with _WRITING_LOCK:
        _WRITING.add(key)
    try:
        yield
    finally:
        with _WRITING_LOCK:
            _WRITING.discard(key)


def stale_temporaries(path: Path) -> list[Path]:
    """The temporary files of ``path``'s earlier writes whose writer is gone.

    They are told from a live writer's by the process id in their name, not by their age: a
    slow write of a large file is not stale however long it takes, and a dead writer's file is
    stale at once. A file of a process that is still running is kept (whatever it is doing:
    if its id was reused, the file waits for that process to end), and so is one this process
    is writing now, from another thread. Other targets' files are never touched, nor
    temporary files without a process id (from before this naming). On Windows, where a
    process cannot be asked whether it runs without being ended, only this process's own
    leftovers count. Limit: a folder shared between machines or containers would need their
    names in the file name too, as process ids are only meaningful on one machine.
    """
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(\d+)-[a-z0-9_]+\.tmp$")
    folder = os.path.abspath(path.parent)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    with _WRITING_LOCK:
        writing = set(_WRITING)
    out: list[Path] = []
    for name in sorted(names):
        found = pattern.match(name)
        full = os.path.join(folder, name)
        if found is None or full in writing:
            continue
        pid = int(found.group(1))
        if pid == os.getpid() or not _running(pid):
            out.append(Path(full))
    return out


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists (True when it cannot be told: nothing is removed)."""
    if os.name != "posix":  # os.kill would end the process there
        return True
    if pid <= 0:  # 0 and -1 are groups of processes, not a writer
        return False
    try:
        os.kill(pid, 0)  # signal 0: only asks whether it exists
    except ProcessLookupError:
        return False
    except OverflowError:  # not a process id this system can have
        return False
    except OSError:  # PermissionError: it exists, another user's
        return True
    return True


__all__ = ["stale_temporaries", "write_atomic"]
