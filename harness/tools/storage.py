"""Oversized tool results, spilled to storage; and the cap every tool result is held to.

A tool can return far more than the model should carry in its context for the rest of the
session: a 2 MB log, a grep over a whole repository. Claude Code's "tool result storage"
writes such an output to a file and gives the model a preview and the file's path instead;
the model reads the rest back, a window at a time, only if it needs it. Nothing is lost
(the full output is on disk), and the context stays small.

Where the files live matters. Claude Code keeps them in its session folder, outside the
project, where the model's tools cannot redirect them. So does this storage: a folder the
harness makes for itself (a new temporary folder unless you name one), never the workspace.
Were it in the workspace, a model could replace the folder with a symlink (``ln -s /tmp
.tool-results``) and every later spill would be written wherever the link pointed. The model
names a stored result by a path of its own, ``@tool-results/<id>.txt``, which ``read_file``
and ``grep`` understand. The harness reads it back as an untrusted file: through
:func:`~harness.tools.owned.open_owned`, which checks the folder and the file it opened (not
the name, which could be swapped between a check and the read), and only if the open file is
the very one it wrote (the same inode, the same size).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
import threading
import weakref
from pathlib import Path

from harness.tools.owned import NotOwned, open_owned

# Claude Code's observed numbers (third-party analyses of the CLI): results over 50,000
# characters are persisted, and the model sees the first 2,000 as a preview.
SPILL_THRESHOLD_CHARS = 50_000
PREVIEW_CHARS = 2_000
# Our choice: no tool_result is longer than this, whatever the tool (about 25K tokens, the cap
# Claude Code's Read puts on one read, as observed). Spilled results are far below it; this is
# for tools that are never spilled, error messages, hooks' rewrites, and a storage that failed.
MAX_RESULT_CHARS = 100_000

STORED_PREFIX = "@tool-results/"
"""How the model names a stored result: ``@tool-results/toolu_0001.txt``."""

_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
_STORED_NAME = re.compile(r"[A-Za-z0-9_-]{1,100}\.txt")


def format_size(size: int) -> str:
    """``812 bytes``, ``2.0 KB``, ``123.4 KB``, ``1.5 MB``."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def preview_of(output: str, length: int) -> str:
    """The first ``length`` characters, cut at a line end if one is in the last 20%."""
    head = output[:length]
    if len(head) < len(output):
        line_end = head.rfind("\n")
        if line_end >= 0.8 * length:
            head = head[:line_end]
    return head


def cap_output(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """``text`` if it fits in ``limit`` characters, else its head and tail around a marker."""
    if len(text) <= limit:
        return text
    keep = limit - 64  # room for the marker, so the result stays within the limit
    head, tail = text[: keep // 2], text[len(text) - (keep - keep // 2) :]
    cut = len(text) - len(head) - len(tail)
    return f"{head}\n\n[… {cut} characters truncated …]\n\n{tail}"


def stored_name(tool_use_id: str) -> str:
    """The file name for a call's output. An id that is not a safe file name (``../x``,
    ``a/b``, a thousand characters) is never used as one: its hash is."""
    if _SAFE_ID.fullmatch(tool_use_id):
        return f"{tool_use_id}.txt"
    return f"id-{hashlib.sha256(tool_use_id.encode('utf-8', 'surrogatepass')).hexdigest()[:24]}.txt"


def _remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


class StoredResultError(NotOwned):
    """A stored result that cannot be read: unknown, or no longer the harness's own file."""


class ResultStorage:
    """Spills tool outputs over ``threshold`` characters to files in a folder of its own.

    ``directory`` is made on the first spill (a new temporary folder if not given) and
    checked on every use: if it was replaced (by a symlink, or another folder), nothing is
    written or read there. A temporary folder lives as long as the storage: it is removed by
    :meth:`close`, or when the storage is garbage-collected. A folder you name is kept (give
    one to keep stored results on disk after the session). A result is read back only by the
    storage that wrote it, and only while its file is the one written.
    """

    def __init__(
        self,
        directory: str | Path | None = None,
        *,
        threshold: int = SPILL_THRESHOLD_CHARS,
        preview: int = PREVIEW_CHARS,
    ) -> None:
        self.threshold = threshold
        self.preview = preview
        self._directory = Path(directory) if directory is not None else None
        self._folder: os.stat_result | None = None  # the folder as we made it
        # Each file as written: (device, inode, size). A file read back must be that one.
        self._written: dict[str, tuple[int, int, int]] = {}
        self._lock = threading.Lock()  # read-only tools run in parallel threads
        self._cleanup: weakref.finalize[[Path], ResultStorage] | None = None

    def __repr__(self) -> str:
        # Never the folder's absolute path: it would end up in notebook outputs.
        return f"ResultStorage(threshold={self.threshold:,}, preview={self.preview:,})"

    @property
    def directory(self) -> Path:
        """The folder, made if it does not exist yet."""
        with self._lock:
            if self._directory is None:
                self._directory = Path(tempfile.mkdtemp(prefix="harness-tool-results-"))
                self._cleanup = weakref.finalize(self, _remove, self._directory)
            elif self._folder is None:
                self._directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            if self._folder is None:
                info = os.lstat(self._directory)
                if not stat.S_ISDIR(info.st_mode):
                    raise StoredResultError(f"the storage folder is not a folder: {info.st_mode:o}")
                self._folder = info
            return self._directory

    def close(self) -> None:
        """Remove the temporary folder, if this storage made one (a named folder is kept)."""
        if self._cleanup is not None:
            self._cleanup()

    def _checked_directory(self) -> Path:
        directory = self.directory
        info, made = os.lstat(directory), self._folder  # ``made`` is set by self.directory
        if made is None or (info.st_dev, info.st_ino) != (made.st_dev, made.st_ino):
            raise StoredResultError(
                "the storage folder was replaced since the harness made it (by a symlink or "
                "another folder); nothing is written or read there"
            )
        return directory

    def spill(self, tool_use_id: str, output: str, *, force: bool = False) -> str:
        """Return ``output`` unchanged if len(output) <= threshold (and not ``force``, which
        the tool runner uses to keep one turn's results within their budget); otherwise store it and
        return a message with its size, the path to read it by, how to read it, and the first
        ``preview`` characters (cut at a line end if one is in the preview's last 20%).

        If it cannot be stored (a full disk, a replaced folder), the output is cut to
        ``MAX_RESULT_CHARS`` instead, and the message says why: nothing a tool returns can
        break the run.
        """
        if len(output) <= self.threshold and not force:
            return output
        name = stored_name(tool_use_id)
        try:
            self._write(name, output)
        except OSError as error:
            reason = error.strerror or str(error)
            note = f"[The full output could not be stored ({reason}); it was cut to fit.]\n"
            return note + cap_output(output, MAX_RESULT_CHARS - len(note))
        preview = preview_of(output, self.preview)
        more = "\n..." if len(preview) < len(output) else ""
        return (
            "<persisted-output>\n"
            f"Output too large ({format_size(len(output.encode('utf-8', 'replace')))}). "
            f"Full output saved to: {STORED_PREFIX}{name}\n"
            "Use read_file with offset and limit to read it, or grep to search it.\n\n"
            f"Preview (first {format_size(self.preview)}):\n"
            f"{preview}{more}\n"
            "</persisted-output>"
        )

    def _write(self, name: str, output: str) -> None:
        directory = self._checked_directory()
        # Atomic and link-proof: a new file of our own (O_EXCL: never an existing name, never
        # through a symlink), renamed over the old one (a rename replaces a link, never follows).
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="replace", newline="") as f:
                f.write(output)
                f.flush()
                info = os.fstat(f.fileno())
            os.replace(temporary, directory / name)
            self._written[name] = (info.st_dev, info.st_ino, info.st_size)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def path_of(self, stored: str) -> Path:
        """The file behind ``@tool-results/<name>``, checked now: the plain file the harness
        wrote, in the folder it made. Raises :class:`StoredResultError` otherwise. A path
        says where the file is, not what it will be when opened again: read it with
        :meth:`stored_bytes`, which checks the very file it reads."""
        os.close(self._open(stored)[0])
        return self.directory / stored.removeprefix(STORED_PREFIX)

    def stored_bytes(self, stored: str) -> bytes:
        """The bytes of ``@tool-results/<name>``, read from the file the harness wrote for it.

        Refused with :class:`StoredResultError`: an unknown name, a folder that is not the one
        the harness made, and a file that is not the one it wrote there, whatever replaced it
        (a link, a FIFO, a hard link, another file, the same file grown or cut). The check is
        on the open file, so nothing swapped in after it is read; and no more is read than
        was written, so a file made huge is never read whole.
        """
        fd, size = self._open(stored)
        with os.fdopen(fd, "rb") as file:
            data = file.read(size + 1)  # one byte more: a file grown since is refused
        if len(data) != size:
            raise StoredResultError(f"{stored} is no longer a result the harness stored")
        return data

    def read(self, tool_use_id: str) -> str:
        """The full output stored for ``tool_use_id``."""
        data = self.stored_bytes(STORED_PREFIX + stored_name(tool_use_id))
        return data.decode("utf-8", errors="replace")

    def _open(self, stored: str) -> tuple[int, int]:
        """An open file descriptor for a stored result, checked, and the size it was written
        with."""
        name = stored.removeprefix(STORED_PREFIX)
        written = self._written.get(name) if _STORED_NAME.fullmatch(name) else None
        if written is None or self._folder is None:
            raise StoredResultError(f"no stored result is named {stored!r}")
        directory = self._checked_directory()  # a clear "replaced" for a swapped folder
        replaced = StoredResultError(f"{stored} is no longer a result the harness stored")
        try:
            fd = open_owned(directory / name, self._folder)
        except NotOwned:  # its message has the folder's absolute path: not for the model
            raise replaced from None
        if fd is None:
            raise StoredResultError(f"no stored result is named {stored!r} (it was removed)")
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino, info.st_size) != written:
            os.close(fd)
            raise replaced
        return fd, written[2]
