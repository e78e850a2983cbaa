"""The builtin workspace tools: read, write and edit files, find files, search them, run bash.

Every path goes through :meth:`Workspace.resolve`, so the file tools cannot leave the
workspace (invariant 5), and every path shown to the model is workspace-relative, never
absolute. ``bash`` lives in :mod:`harness.tools.shell` and is *not* confined by path checks.

The limits are Claude Code's observed numbers (third-party analyses of the CLI, not official
documentation); each constant says which tool it comes from.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import Field

from harness.tools.base import Tool, ToolContext, ToolError, ToolInput, tool
from harness.tools.shell import bash

# Claude Code's Read tool: 2000 lines by default, lines cut at 2000 characters, files over
# 256 KB refused unless a window (offset/limit) is asked for.
READ_DEFAULT_LIMIT = 2000
READ_MAX_LINE_CHARS = 2000
READ_MAX_FILE_BYTES = 256 * 1024
# A NUL byte in the first 8 KiB means binary: the same sniff git and GNU grep use.
BINARY_SNIFF_BYTES = 8192
# Claude Code's Glob returns at most 100 paths; its Grep's head_limit plays the same role.
GLOB_MAX_RESULTS = 100
GREP_DEFAULT_HEAD_LIMIT = 100


def _resolve(context: ToolContext, path: str) -> tuple[Path, str]:
    """The real path and the path to show the model; a path outside becomes a ToolError."""
    try:
        return context.workspace.resolve(path), context.workspace.relative(path)
    except (PermissionError, ValueError) as error:  # PathEscape, or a NUL byte in the path
        raise ToolError(str(error)) from None


def _is_binary(path: Path) -> bool:
    with path.open("rb") as f:
        return b"\0" in f.read(BINARY_SNIFF_BYTES)


def _clip(line: str) -> str:
    if len(line) <= READ_MAX_LINE_CHARS:
        return line
    return (
        line[:READ_MAX_LINE_CHARS] + f"… [line cut: {len(line) - READ_MAX_LINE_CHARS} more chars]"
    )


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
    real, rel = _resolve(context, args.path)
    if real.is_dir():
        raise ToolError(f"{rel} is a directory, not a file; use glob to list what is in it")
    if not real.is_file():
        raise ToolError(f"file not found: {rel}")
    try:
        return _read_window(real, rel, args.offset, args.limit)
    except OSError as error:  # e.g. no permission; strerror keeps the absolute path out
        raise ToolError(f"could not read {rel}: {error.strerror or error}") from None


def _read_window(real: Path, rel: str, offset: int | None, limit: int | None) -> str:
    if _is_binary(real):
        raise ToolError(f"{rel} is a binary file; read_file only reads text")
    size = real.stat().st_size
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
    last = 0
    more = False
    # Text mode reads "\n", "\r\n" and "\r" endings alike, the same line numbers grep reports.
    with real.open(encoding="utf-8", errors="replace") as f:
        for last, line in enumerate(f, start=1):
            if last >= start + limit:
                more = True
                break
            if last >= start:
                text = _clip(line.rstrip("\n"))
                shown.append(f"{last:>6}\t{text}")
    if not shown:
        return f"{rel} has only {last} lines; offset {start} is past the end."
    end = start + len(shown) - 1
    if more:
        shown.append(
            f"\n[Showing lines {start}-{end} of {rel}; more lines follow. "
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
    if not args.old_string:
        raise ToolError("old_string is empty; to create a file, use write_file")
    if args.old_string == args.new_string:
        raise ToolError("old_string and new_string are the same; there is nothing to change")
    text = _read_text(real, rel)
    old, new = args.old_string, args.new_string
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
    if count > 1 and not args.replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {rel}; add surrounding lines to make it "
            "unique, or set replace_all to true to replace every occurrence"
        )
    real.write_text(text.replace(old, new), encoding="utf-8", newline="")
    return f"Edited {rel}: replaced {count} occurrence{'s' if count > 1 else ''}"


class GlobInput(ToolInput):
    pattern: str = Field(description='A glob pattern such as "**/*.py" or "src/*.md".')
    path: str | None = Field(
        default=None,
        description="The directory to search in, relative to the workspace root. "
        "Default: the workspace root.",
    )


@tool(GlobInput, read_only=True)
def glob(args: GlobInput, context: ToolContext) -> str:
    """Find files by name pattern ("**/*.py" for every Python file at any depth, "*.md" for
    Markdown files in one directory). Returns workspace-relative paths of files (not
    directories), most recently modified first, at most 100; if there are more, narrow the
    pattern or the path. Use grep to search inside files."""
    base, rel_base = _resolve(context, args.path or ".")
    if not base.is_dir():
        raise ToolError(f"not a directory: {rel_base}")
    if PurePosixPath(args.pattern).is_absolute() or ".." in PurePosixPath(args.pattern).parts:
        raise ToolError("the pattern must be relative and without '..'; use path to choose where")
    found: list[tuple[float, str]] = []
    try:
        matches = list(base.glob(args.pattern))
    except ValueError as error:  # an empty or malformed pattern
        raise ToolError(f"invalid glob pattern {args.pattern!r}: {error}") from None
    show_hidden = any(part.startswith(".") for part in PurePosixPath(args.pattern).parts)
    for match in matches:
        if not show_hidden and _hidden(match.relative_to(base)):
            continue
        try:  # a symlink inside may point outside: check where each match really is
            real = context.workspace.resolve(match)
        except PermissionError:
            continue
        if real.is_file():
            rel = match.relative_to(context.workspace.root).as_posix()
            found.append((-real.stat().st_mtime, rel))
    if not found:
        return "No files found"
    found.sort()  # newest first; the same mtime falls back to the name, so output is stable
    paths = [rel for _, rel in found[:GLOB_MAX_RESULTS]]
    if len(found) > GLOB_MAX_RESULTS:
        paths.append(
            f"[Showing {GLOB_MAX_RESULTS} of {len(found)} files; use a more specific "
            "pattern or path.]"
        )
    return "\n".join(paths)


class GrepInput(ToolInput):
    pattern: str = Field(description=r'A Python regular expression, e.g. "def \w+\(" or "TODO".')
    path: str | None = Field(
        default=None,
        description="A file or directory to search, relative to the workspace root. "
        "Default: the whole workspace.",
    )
    glob: str | None = Field(
        default=None, description='Only search files whose path matches, e.g. "*.py".'
    )
    output_mode: Literal["files_with_matches", "content", "count"] = Field(
        default="files_with_matches",
        description='"files_with_matches": the paths of matching files (default); '
        '"content": matching lines as path:line_number:line; "count": path:number_of_matches.',
    )
    case_insensitive: bool = Field(default=False, description="Ignore upper/lower case.")
    head_limit: int = Field(
        default=GREP_DEFAULT_HEAD_LIMIT, ge=1, description="Return at most this many lines."
    )


def _hidden(relative: Path) -> bool:
    """Dot-files and dot-directories (``.git``, ``.tool-results``) are skipped unless asked
    for, as ripgrep does by default: stored outputs and VCS internals are not project code."""
    return any(part.startswith(".") for part in relative.parts)


def _files_under(context: ToolContext, base: Path) -> list[tuple[str, Path]]:
    """Every file under ``base`` that is really inside the workspace, as (rel, real), sorted."""
    if base.is_file():
        candidates = [base]
    else:  # os.walk does not descend into symlinked directories
        candidates = []
        for directory, subdirs, names in os.walk(base):
            subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
            candidates += [Path(directory, n) for n in names if not n.startswith(".")]
    files = []
    for path in candidates:
        try:
            real = context.workspace.resolve(path)
        except PermissionError:
            continue
        if real.is_file():
            files.append((path.relative_to(context.workspace.root).as_posix(), real))
    return sorted(files)


@tool(GrepInput, read_only=True)
def grep(args: GrepInput, context: ToolContext) -> str:
    """Search file contents with a Python regular expression. By default lists the files
    that match; output_mode "content" shows the matching lines (path:line_number:line) and
    "count" the number of matching lines per file. Narrow the search with path (a file or a
    directory) and glob (e.g. "*.py"). Binary files are skipped. Results are sorted by path,
    at most head_limit (default 100) lines. Use glob to find files by name."""
    try:
        regex = re.compile(args.pattern, re.IGNORECASE if args.case_insensitive else 0)
    except re.error as error:
        raise ToolError(f"invalid regular expression {args.pattern!r}: {error}") from None
    base, rel_base = _resolve(context, args.path or ".")
    if not base.exists():
        raise ToolError(f"path not found: {rel_base}")
    file_glob = args.glob.removeprefix("**/") if args.glob else None
    results: list[str] = []
    for rel, real in _files_under(context, base):
        if file_glob and not PurePosixPath(rel).match(file_glob):
            continue
        try:
            if _is_binary(real):
                continue
            with real.open(encoding="utf-8", errors="replace") as f:
                hits = [
                    (n, line.rstrip("\n"))
                    for n, line in enumerate(f, start=1)
                    if regex.search(line)
                ]
        except OSError:  # unreadable: skip it, as grep -s does
            continue
        if not hits:
            continue
        if args.output_mode == "files_with_matches":
            results.append(rel)
        elif args.output_mode == "count":
            results.append(f"{rel}:{len(hits)}")
        else:
            results.extend(f"{rel}:{n}:{_clip(line)}" for n, line in hits)
    if not results:
        return "No matches found"
    shown = results[: args.head_limit]
    if len(results) > args.head_limit:
        shown.append(
            f"[Showing {args.head_limit} of {len(results)} lines; raise head_limit or "
            "narrow the search with path or glob.]"
        )
    return "\n".join(shown)


def builtin_tools() -> list[Tool[Any]]:
    """The six workspace tools, in the fixed order they are offered to the model."""
    return [read_file, write_file, edit_file, glob, grep, bash]
