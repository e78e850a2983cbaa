"""Reading a background command's log: only what is new, never half a character.

A background command writes to its log file while the model reads it, so a read can end in
the middle of a UTF-8 character (``é`` is two bytes, an emoji four). Decoding that read on
its own would turn the cut character into two replacement characters, one at the end of
this read and one at the start of the next. :class:`LogReader` keeps its place in the file
and hands the bytes to the standard library's incremental UTF-8 decoder, which holds back
the first bytes of a cut character until the rest arrives (and, at the very end, turns
bytes that never form a character into one replacement character each, as ``bytes.decode``
with ``errors="replace"`` does). So the pieces read one after another always add up to the
whole log decoded at once.
"""

from __future__ import annotations

import codecs
import os
import sys
from pathlib import Path

from harness.tools.owned import NotOwned
from harness.tools.owned import open_owned as open_owned  # importable from here, as before

READ_CAP_CHARS = 32_000
"""The most one read returns: the newest characters, after a line that says where the whole
output is (Claude Code's ``formatTaskOutput``, with its default ``TASK_MAX_OUTPUT_DEFAULT``
of 32,000 characters). The tail, not head and tail as chapter 02's ``bash`` keeps: what a
test run or a build says last (the summary, the error) is what the model needs."""


LogUnreadable = NotOwned
"""A log that is no longer the harness's own file: its folder was replaced or removed, or the
file became a link, a FIFO, a device or a hard link to another file. The log is read back as
an untrusted file, with chapter 02's :func:`~harness.tools.owned.open_owned` (the one stored
tool results are read back with), which refuses such a file with this error."""


class LogReader:
    """Reads a log file from where the last read stopped.

    ``folder``: the ``os.stat`` of the folder the harness made for its logs (the log is then
    refused if the folder was replaced); ``limit``: the most bytes the log can hold (the
    keeper's cap and its closing note), so a file swapped for a huge one is never read whole.
    """

    def __init__(
        self, path: Path, *, folder: os.stat_result | None = None, limit: int | None = None
    ) -> None:
        self.path = path
        self.folder = folder
        self.limit = limit
        self.offset = 0
        """Bytes of the file read so far."""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._done = False

    def read(self, *, final: bool = False) -> str:
        """The text written since the last read. ``final``: the command has ended, so bytes
        held back for a character that never came are given out (as replacement
        characters); after a final read, later reads return ``""``. Raises
        :class:`LogUnreadable` for a log that is no longer the harness's own file, or one
        removed after it was read."""
        if self._done:
            return ""
        data = self._bytes(self.offset, self._room())
        self.offset += len(data)
        text = self._decoder.decode(data, final=final)
        self._done = final
        return text

    def tail(self, size: int) -> bytes:
        """The last ``size`` bytes the log holds now (up to ``limit``), without moving the
        place :meth:`read` goes on from (``/bashes <id>`` shows them)."""
        fd = self._open()
        if fd is None:
            return b""
        with os.fdopen(fd, "rb") as file:
            end = min(os.fstat(file.fileno()).st_size, self.limit or sys.maxsize)
            start = max(end - size, 0)
            file.seek(start)
            return file.read(end - start)

    def _room(self) -> int:
        return max(self.limit - self.offset, 0) if self.limit is not None else -1

    def _open(self) -> int | None:
        fd = open_owned(self.path, self.folder)
        if fd is None and self.offset > 0:
            raise LogUnreadable(f"{self.path.name} was removed after it was read")
        return fd

    def _bytes(self, offset: int, room: int) -> bytes:
        if room == 0:
            return b""
        fd = self._open()
        if fd is None:  # the command has not written (or started) yet
            return b""
        with os.fdopen(fd, "rb") as file:
            file.seek(offset)
            return file.read(room)


def capped(text: str, log: Path, limit: int = READ_CAP_CHARS) -> str:
    """``text`` if it fits in ``limit`` characters; else, as Claude Code words it, a line
    that says where the whole output is and then the last characters that fit."""
    if len(text) <= limit:
        return text
    header = f"[Truncated. Full output: {log}]\n\n"
    room = max(limit - len(header), 0)
    return header + (text[len(text) - room :] if room else "")
