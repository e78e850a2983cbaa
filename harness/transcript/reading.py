"""Reading a transcript file: its lines parsed into entries, from the start or from a byte
offset.

:func:`read_entries` parses every line; :func:`last_boundary_offset` finds where the last
compact boundary starts without parsing what lies before it (the loader's fast path);
:func:`iter_lines` gives the lines as text, for showing. A path that is not a regular file
is :class:`NotATranscript`, found before it is opened.
"""

from __future__ import annotations

import mmap
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from harness.transcript.entries import BadLine, Entry, parse_line

BOUNDARY_MARK = b'"compact_boundary"'


class NotATranscript(OSError):
    """The path is not a regular file (a folder, a pipe, a device), so it is no transcript.
    An ``OSError``, so callers that catch those for a missing file catch this too."""


def _regular_file(path: str | Path) -> os.stat_result:
    """The path's status, if it is a regular file (checked without opening it: opening a
    named pipe waits for a writer, forever if none comes); else :class:`NotATranscript`."""
    status = os.stat(path)
    if not stat.S_ISREG(status.st_mode):
        kind = (
            "a folder"
            if stat.S_ISDIR(status.st_mode)
            else "a named pipe (FIFO)"
            if stat.S_ISFIFO(status.st_mode)
            else "a socket"
            if stat.S_ISSOCK(status.st_mode)
            else "a device"
            if stat.S_ISCHR(status.st_mode) or stat.S_ISBLK(status.st_mode)
            else "not a regular file"
        )
        raise NotATranscript(
            f"{os.fspath(path)} is {kind}, not a transcript: give the path of a session's "
            ".jsonl file"
        )
    return status


def read_entries(path: str | Path, *, start: int = 0, first_line: int = 1) -> list[Entry | BadLine]:
    """Every line of ``path`` from byte ``start``, parsed (blank lines are skipped).

    ``path`` must be a regular file (else :class:`NotATranscript`, before it is opened)."""
    out: list[Entry | BadLine] = []
    _regular_file(path)
    with open(path, "rb") as handle:
        handle.seek(start)
        number = first_line - 1
        previous: bytes | None = None
        for chunk in handle:
            if previous is not None:
                number += 1
                if previous.strip():
                    out.append(parse_line(previous, number))
            previous = chunk
        if previous is not None:
            number += 1
            if previous.strip():
                out.append(parse_line(previous, number, last=True))
    return out


def last_boundary_offset(path: str | Path) -> tuple[int, int] | None:
    """Where the last main-chain compact boundary starts: (byte offset, line number).

    Searches backwards for the marker and parses only the candidate lines (a tool result
    that mentions "compact_boundary" is not a boundary). ``None`` if there is none.
    """
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return None
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            end = size
            while (hit := view.rfind(BOUNDARY_MARK, 0, end)) != -1:
                start = view.rfind(b"\n", 0, hit) + 1
                stop = view.find(b"\n", hit)
                stop = size if stop == -1 else stop
                entry = parse_line(view[start:stop], 0)
                if isinstance(entry, Entry) and entry.is_boundary and not entry.is_sidechain:
                    return start, _count_lines(view, start) + 1
                end = start
    return None


def _count_lines(view: mmap.mmap, stop: int, chunk: int = 4 * 1024 * 1024) -> int:
    count = 0
    for at in range(0, stop, chunk):
        count += view[at : min(at + chunk, stop)].count(b"\n")
    return count


def iter_lines(path: str | Path) -> Iterator[str]:
    """The file's lines, as text (for showing a transcript)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        yield from handle
