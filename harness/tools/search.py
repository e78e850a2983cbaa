"""The search tools: ``glob`` finds files by name, ``grep`` searches inside them with RE2.

Both stay inside the workspace (each match is resolved, a symlink that leads out is skipped),
skip dot-files unless asked for, and cap what they return, saying how to narrow the search.
``grep`` compiles its pattern with RE2, which matches in linear time whatever the pattern
(:func:`compile_pattern` says why). The caps are Claude Code's observed numbers.
"""

from __future__ import annotations

import io
import os
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import re2  # google-re2: linear-time matching, see grep
from pydantic import Field

from harness.tools.base import ToolContext, ToolError, ToolInput, tool
from harness.tools.files import (
    BINARY_SNIFF_BYTES,
    _clip,
    _lines,
    _open_readable,
    _resolve,
    _resolve_readable,
)
from harness.tools.storage import STORED_PREFIX

# Claude Code's Glob returns at most 100 paths; its Grep's head_limit plays the same role.
GLOB_MAX_RESULTS = 100
GREP_DEFAULT_HEAD_LIMIT = 100
# Our choice: grep searches the first million characters of a line (ripgrep has no limit, but
# it does not hold a whole line as one Python string); memory stays bounded on any file.
GREP_MAX_LINE_CHARS = 1_000_000


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
    pattern: str = Field(
        description=r'A regular expression (RE2 syntax, as ripgrep\'s), e.g. "def \w+\(" or "TODO".'
    )
    path: str | None = Field(
        default=None,
        description="A file or directory to search, relative to the workspace root (or a "
        "stored result, @tool-results/...). Default: the whole workspace.",
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
    """Dot-files and dot-directories (``.git``, ``.venv``) are skipped unless asked for, as
    ripgrep does by default: VCS internals and environments are not project code."""
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
        except (PermissionError, ValueError):  # outside, hard-linked, or an unusable name
            continue
        if real.is_file():
            files.append((path.relative_to(context.workspace.root).as_posix(), real))
    return sorted(files)


def compile_pattern(pattern: str, *, case_insensitive: bool = False) -> Any:
    """``pattern`` compiled by RE2, or a ToolError that says what is wrong with it.

    Why RE2 and not Python's ``re``: ``re`` backtracks, and a pattern such as ``(a+)+$`` on a
    line of 40 ``a`` and a ``!`` takes it minutes (each extra ``a`` doubles the time); a model
    can write such a pattern by accident, and grep would hang the run. RE2 (Google's engine,
    the ``google-re2`` package) matches in time linear in the text, whatever the pattern.
    Claude Code's Grep is ripgrep, whose default engine makes the same promise, with the same
    price: no backreferences (``\1``) and no lookaround (``(?=...)``, ``(?<=...)``).
    """
    options = re2.Options()
    options.log_errors = False  # the error goes back to the model, not to stderr
    options.case_sensitive = not case_insensitive
    try:
        return re2.compile(pattern, options=options)
    except re2.error as error:
        reason = (
            error.args[0].decode() if error.args and isinstance(error.args[0], bytes) else error
        )
        raise ToolError(
            f"invalid regular expression {pattern!r}: {reason}. The syntax is RE2's (as "
            "ripgrep's): no backreferences or lookaround"
        ) from None


@tool(GrepInput, read_only=True)
def grep(args: GrepInput, context: ToolContext) -> str:
    """Search file contents with a regular expression (RE2 syntax, as ripgrep: no
    backreferences or lookaround). By default lists the files that match; output_mode
    "content" shows the matching lines (path:line_number:line) and "count" the number of
    matching lines per file. Narrow the search with path (a file or a directory) and glob
    (e.g. "*.py"). Binary files are skipped. Results are sorted by path, at most head_limit
    (default 100) lines. Use glob to find files by name."""
    regex = compile_pattern(args.pattern, case_insensitive=args.case_insensitive)
    path = args.path or "."
    if path.startswith(STORED_PREFIX):
        stored, rel = _resolve_readable(context, path)
        files: list[tuple[str, Path | bytes]] = [(rel, stored)]
    else:
        base, rel_base = _resolve(context, path)
        if not base.exists():
            raise ToolError(f"path not found: {rel_base}")
        files = list(_files_under(context, base))
    file_glob = args.glob.removeprefix("**/") if args.glob else None
    results: list[str] = []
    total = 0  # result lines found; only the first head_limit are kept in memory
    for rel, real in files:
        if file_glob and not PurePosixPath(rel).match(file_glob):
            continue
        try:
            with _open_readable(real) as raw:
                if b"\0" in raw.read(BINARY_SNIFF_BYTES):
                    continue
                raw.seek(0)
                hits = 0
                f = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
                for n, (line, cut) in enumerate(_lines(f, GREP_MAX_LINE_CHARS), start=1):
                    if regex.search(line) is None:
                        continue
                    hits += 1
                    if args.output_mode == "content":
                        total += 1
                        if len(results) < args.head_limit:
                            results.append(f"{rel}:{n}:{_clip(line, cut)}")
        except OSError:  # unreadable: skip it, as grep -s does
            continue
        if hits and args.output_mode != "content":
            total += 1
            if len(results) < args.head_limit:
                results.append(rel if args.output_mode == "files_with_matches" else f"{rel}:{hits}")
    if not results:
        return "No matches found"
    if total > args.head_limit:
        results.append(
            f"[Showing {args.head_limit} of {total} lines; raise head_limit or "
            "narrow the search with path or glob.]"
        )
    return "\n".join(results)
