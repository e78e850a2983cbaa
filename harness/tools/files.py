"""The file tools: read, write and edit a file of the workspace, and the checks they share.

Every path goes through :meth:`Workspace.resolve`, so the file tools cannot leave the
workspace (invariant 5), and every path shown to the model is workspace-relative, never
absolute. The helpers here (a path resolved or refused, a binary file sniffed, a long line
clipped) serve the search tools of :mod:`harness.tools.search` too.

The limits are Claude Code's observed numbers (third-party analyses of the CLI, not official
documentation); each constant says which tool it comes from.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

from pydantic import Field

from harness.tools.base import ToolContext, ToolError, ToolInput, tool
from harness.tools.storage import STORED_PREFIX

# Claude Code's Read tool: 2000 lines by default, lines cut at 2000 characters, files over
# 256 KB refused unless a window (offset/limit) is asked for.
READ_DEFAULT_LIMIT = 2000
READ_MAX_LINE_CHARS = 2000
READ_MAX_FILE_BYTES = 256 * 1024
# Claude Code's Read refuses to return more than 25,000 tokens at once (observed); this one
# stops at about that many characters' worth (4 a token) and says where to read on.
READ_MAX_OUTPUT_CHARS = 100_000
# A NUL byte in the first 8 KiB means binary: the same sniff git and GNU grep use.
BINARY_SNIFF_BYTES = 8192


def _resolve(context: ToolContext, path: str) -> tuple[Path, str]:
    """The real path and the path to show the model; a path outside becomes a ToolError."""
    try:
        return context.workspace.resolve(path), context.workspace.relative(path)
    except (PermissionError, ValueError) as error:  # PathEscape, BadPath
        raise ToolError(str(error)) from None


def _resolve_readable(context: ToolContext, path: str) -> tuple[Path | bytes, str]:
    """Like :func:`_resolve`, and ``@tool-results/<id>.txt`` names a stored result: its
    bytes, read once by the storage from the file it checked (a path opened again could be
    another file by then)."""
    if not path.startswith(STORED_PREFIX):
        return _resolve(context, path)
    if context.storage is None:
        raise ToolError(f"{path} is a stored result, and this session stores none")
    try:
        return context.storage.stored_bytes(path), path
    except OSError as error:
        raise ToolError(str(error)) from None


def _open_readable(real: Path | bytes) -> BinaryIO:
    """A workspace file, or a stored result's bytes, to read."""
    return io.BytesIO(real) if isinstance(real, bytes) else real.open("rb")


def _clip(line: str, cut: int = 0) -> str:
    """A line for display: at most READ_MAX_LINE_CHARS, saying how much was left out."""
    if len(line) > READ_MAX_LINE_CHARS:
        line, cut = line[:READ_MAX_LINE_CHARS], cut + len(line) - READ_MAX_LINE_CHARS
    return line + f"… [line cut: {cut} more chars]" if cut else line


def _lines(f: TextIO, max_chars: int) -> Iterator[tuple[str, int]]:
    """Each line of ``f`` without its newline, cut at ``max_chars``, and how many characters
    were cut. A line is never read whole into memory: a 1 GB file with no newline costs
    ``max_chars``, not 1 GB."""
    while line := f.readline(max_chars + 1):
        if line.endswith("\n"):
            yield line[:-1], 0
        elif len(line) <= max_chars:
            yield line, 0  # the last line, with no newline
        else:
            cut = len(line) - max_chars
            while rest := f.readline(65_536):  # skip the rest of the line, a chunk at a time
                if rest.endswith("\n"):
                    cut += len(rest) - 1
                    break
                cut += len(rest)
            yield line[:max_chars], cut


def _read_text(real: Path, rel: str) -> str:
    """A whole text file, newlines kept as they are, for tools that write it back."""
    if not real.is_file():
        raise ToolError(f"{rel} is a directory" if real.is_dir() else f"file not found: {rel}")
    try:
        with real.open(encoding="utf-8", newline="") as f:
            return f.read()
    except UnicodeDecodeError:
        raise ToolError(f"{rel} is not UTF-8 text, so it cannot be edited as text") from None
    except OSError as error:  # e.g. no permission; strerror keeps the absolute path out
        raise ToolError(f"could not read {rel}: {error.strerror or error}") from None


class ReadFileInput(ToolInput):
    path: str = Field(description="The file to read, relative to the workspace root.")
    offset: int | None = Field(
        default=None, ge=1, description="The line number to start at (1-based). Default: 1."
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        description=f"How many lines to read. Default: {READ_DEFAULT_LIMIT}.",
    )


@tool(ReadFileInput, read_only=True, spill=False)
def read_file(args: ReadFileInput, context: ToolContext) -> str:
    """Read a text file from the workspace. Lines come numbered like `cat -n` (line number,
    a tab, the line), starting at `offset` (1-based, default 1), at most `limit` lines
    (default 2000). Lines longer than 2000 characters are cut. Files over 256 KB need an
    offset and limit: read them a window at a time, or search them with grep first. Binary
    files are refused. The line numbers are not part of the file: leave them out of
    edit_file's old_string. If the output says more lines follow, call again with the
    offset it gives."""
    real, rel = _resolve_readable(context, args.path)
    if isinstance(real, Path) and real.is_dir():
        raise ToolError(f"{rel} is a directory, not a file; use glob to list what is in it")
    if isinstance(real, Path) and not real.is_file():
        raise ToolError(f"file not found: {rel}")
    try:
        with _open_readable(real) as raw:
            return _read_window(raw, rel, args.offset, args.limit)
    except OSError as error:  # e.g. no permission; strerror keeps the absolute path out
        raise ToolError(f"could not read {rel}: {error.strerror or error}") from None


def _read_window(raw: BinaryIO, rel: str, offset: int | None, limit: int | None) -> str:
    if b"\0" in raw.read(BINARY_SNIFF_BYTES):
        raise ToolError(f"{rel} is a binary file; read_file only reads text")
    size = raw.seek(0, os.SEEK_END)
    raw.seek(0)
    if size > READ_MAX_FILE_BYTES and offset is None and limit is None:
        raise ToolError(
            f"{rel} is {size / 1024:.0f} KB, over the {READ_MAX_FILE_BYTES // 1024} KB limit for "
            "a whole-file read; use offset and limit to read part of it, or grep to find "
            "what you need"
        )
    if size == 0:
        return f"{rel} exists but is empty."
    start = offset or 1
    limit = limit or READ_DEFAULT_LIMIT
    shown: list[str] = []
    size_so_far = 0
    last = 0
    more = full = False
    # Text mode reads "\n", "\r\n" and "\r" endings alike, the same line numbers grep reports.
    with io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as f:
        for last, (line, cut) in enumerate(_lines(f, READ_MAX_LINE_CHARS), start=1):
            if last >= start + limit:
                more = True
                break
            if last >= start:
                entry = f"{last:>6}\t{_clip(line, cut)}"
                if size_so_far + len(entry) > READ_MAX_OUTPUT_CHARS - 300:  # room for the note
                    more = full = True
                    break
                shown.append(entry)
                size_so_far += len(entry) + 1
    if not shown:
        return f"{rel} has only {last} lines; offset {start} is past the end."
    end = start + len(shown) - 1
    if more:
        why = f" (a read returns at most {READ_MAX_OUTPUT_CHARS:,} characters)" if full else ""
        shown.append(
            f"\n[Showing lines {start}-{end} of {rel}{why}; more lines follow. "
            f"Call read_file with offset={end + 1} to read on.]"
        )
    return "\n".join(shown)


class WriteFileInput(ToolInput):
    path: str = Field(description="The file to write, relative to the workspace root.")
    content: str = Field(description="The complete new content of the file.")


@tool(WriteFileInput)
def write_file(args: WriteFileInput, context: ToolContext) -> str:
    """Write a file in the workspace, replacing all of its content if it exists, and creating
    any missing parent directories. For a change to part of an existing file, prefer
    edit_file: it sends only the change and cannot drop the rest of the file by accident."""
    real, rel = _resolve(context, args.path)
    if real.is_dir():
        raise ToolError(f"{rel} is a directory; give the path of a file")
    existed = real.exists()
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
        real.write_text(args.content, encoding="utf-8", newline="")
    except OSError as error:  # e.g. a parent "directory" that is a file
        raise ToolError(f"could not write {rel}: {error.strerror or error}") from None
    content = args.content
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    noun = "line" if lines == 1 else "lines"
    return f"Wrote {lines} {noun} to {rel} ({'overwrote it' if existed else 'new file'})"


class EditFileInput(ToolInput):
    path: str = Field(description="The file to edit, relative to the workspace root.")
    old_string: str = Field(
        description="The exact text to replace, including whitespace and indentation, "
        "without read_file's line-number prefix."
    )
    new_string: str = Field(description="The text to put in its place (must differ).")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of exactly one."
    )


@tool(EditFileInput)
def edit_file(args: EditFileInput, context: ToolContext) -> str:
    """Replace exact text in a file. old_string must match the file exactly (whitespace and
    indentation included) and, unless replace_all is true, exactly once: if it occurs
    several times, include a few surrounding lines to pick the one you mean. Read the file
    first so you copy the text exactly. To create a new file, use write_file."""
    # Claude Code also refuses to edit a file the model has not read in this session (and
    # one changed on disk since it was read). This teaching version skips that bookkeeping.
    real, rel = _resolve(context, args.path)
    text, count = replace_text(
        _read_text(real, rel), args.old_string, args.new_string, args.replace_all, rel
    )
    real.write_text(text, encoding="utf-8", newline="")
    return f"Edited {rel}: replaced {count} occurrence{'s' if count > 1 else ''}"


def replace_text(text: str, old: str, new: str, replace_all: bool, rel: str) -> tuple[str, int]:
    """``edit_file``'s rule on a text: ``old`` must occur exactly once (or ``replace_all``).

    Returns the new text and how many places changed; a :class:`ToolError` says why not. Also
    used where an edit_file call is applied to text that is not in the workspace (chapter 07's
    memory file).
    """
    if not old:
        raise ToolError("old_string is empty; to create a file, use write_file")
    if old == new:
        raise ToolError("old_string and new_string are the same; there is nothing to change")
    if (
        old not in text and "\r\n" in text and "\r" not in old
    ):  # the model saw "\n" endings through read_file
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"old_string not found in {rel}; it must match the file exactly, including "
            "whitespace and indentation (read the file again and copy the text)"
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {rel}; add surrounding lines to make it "
            "unique, or set replace_all to true to replace every occurrence"
        )
    return text.replace(old, new), count
