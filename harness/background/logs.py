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
from pathlib import Path

READ_CAP_CHARS = 32_000
"""The most one read returns: the newest characters, after a line that says where the whole
output is (Claude Code's ``formatTaskOutput``, with its default ``TASK_MAX_OUTPUT_DEFAULT``
of 32,000 characters). The tail, not head and tail as chapter 02's ``bash`` keeps: what a
test run or a build says last (the summary, the error) is what the model needs."""


class LogReader:
    """Reads a log file from where the last read stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        """Bytes of the file read so far."""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._done = False

    def read(self, *, final: bool = False) -> str:
        """The text written since the last read. ``final``: the command has ended, so bytes
        held back for a character that never came are given out (as replacement
        characters); after a final read, later reads return ``""``."""
        if self._done:
            return ""
        data = b""
        try:
            # O_NOFOLLOW: the harness's own file, never through a link someone put in its place.
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:  # the command has not written (or started) yet
            pass
        else:
            with os.fdopen(fd, "rb") as file:
                file.seek(self.offset)
                data = file.read()
        self.offset += len(data)
        text = self._decoder.decode(data, final=final)
        self._done = final
        return text


def capped(text: str, log: Path, limit: int = READ_CAP_CHARS) -> str:
    """``text`` if it fits in ``limit`` characters; else, as Claude Code words it, a line
    that says where the whole output is and then the last characters that fit."""
    if len(text) <= limit:
        return text
    header = f"[Truncated. Full output: {log}]\n\n"
    room = max(limit - len(header), 0)
    return header + (text[len(text) - room :] if room else "")
