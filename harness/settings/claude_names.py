"""Our tools under Claude Code's names, so hook scripts written for Claude Code run unchanged.

A hook script from the hooks documentation reads ``tool_name == "Bash"`` and
``tool_input.command``, or ``tool_input.file_path`` after ``Edit|Write``. Our tools are
called ``bash``, ``edit_file`` ... and take ``path`` relative to the workspace. So a hook sees
each call as Claude Code would send it (:func:`to_claude`), and an ``updatedInput`` it sends
back is turned into our input again (:func:`from_claude`).

==============  ===========  =====================================================
ours            Claude Code  input fields (ours -> Claude Code's)
==============  ===========  =====================================================
``read_file``   ``Read``     path -> file_path (absolute), offset, limit
``write_file``  ``Write``    path -> file_path (absolute), content
``edit_file``   ``Edit``     path -> file_path (absolute), old_string, new_string,
                             replace_all
``bash``        ``Bash``     command; timeout seconds -> milliseconds; cwd: ours only
``glob``        ``Glob``     pattern, path (absolute)
``grep``        ``Grep``     pattern, path (absolute), glob, output_mode,
                             case_insensitive -> ``-i``, head_limit
==============  ===========  =====================================================

Claude Code's input schemas: documented per tool under "PreToolUse input" in
https://code.claude.com/docs/en/hooks (checked 2026-11-27 through the thevibeworks/claude-code-docs
copy of 2026-08-22: ``file_path`` "always absolute", Bash ``timeout`` "in milliseconds", Grep
``-i``); observed in its tools' ``inputSchema`` (openclaude ``src/tools/*Tool/``):
``file_path`` must be absolute; ``Bash.timeout`` is in milliseconds; Grep's
case-insensitive flag is ``-i``. A tool not in the table keeps its name and input.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

CLAUDE_NAMES: dict[str, str] = {
    "read_file": "Read",
    "write_file": "Write",
    "edit_file": "Edit",
    "bash": "Bash",
    "glob": "Glob",
    "grep": "Grep",
}
"""Our tool name -> Claude Code's."""

OUR_NAMES: dict[str, str] = {claude: ours for ours, claude in CLAUDE_NAMES.items()}

_FIELDS: dict[str, dict[str, str]] = {
    "read_file": {"path": "file_path"},
    "write_file": {"path": "file_path"},
    "edit_file": {"path": "file_path"},
    "grep": {"case_insensitive": "-i"},
}
"""Per tool, our field -> Claude Code's, where the names differ."""

_PATHS: dict[str, str] = {
    "read_file": "path",
    "write_file": "path",
    "edit_file": "path",
    "glob": "path",
    "grep": "path",
}
"""The field of ours that is a path (relative to the workspace; absolute for Claude Code)."""

_OURS_ONLY: dict[str, tuple[str, ...]] = {"bash": ("cwd",)}
"""Fields Claude Code's tool does not have: not sent, and kept from the original input."""


def claude_name(tool: str) -> str:
    """Claude Code's name for our tool (``bash`` -> ``Bash``); other names as they are."""
    return CLAUDE_NAMES.get(tool, tool)


def names_of(tool: str) -> tuple[str, ...]:
    """The names a hook matcher may select ``tool`` by: Claude Code's first, then ours."""
    claude = claude_name(tool)
    return (claude,) if claude == tool else (claude, tool)


def _absolute(path: object, root: Path) -> object:
    if not isinstance(path, str) or not path:
        return path
    return str(root / path) if not Path(path).is_absolute() else path


def _relative(path: object, root: Path) -> object:
    """An absolute path inside the workspace as ours (relative); anything else unchanged
    (the tool decides what to do with a path outside the workspace)."""
    if not isinstance(path, str) or not Path(path).is_absolute():
        return path
    try:
        return Path(path).relative_to(root).as_posix() or "."
    except ValueError:
        return path


def to_claude(tool: str, input: Mapping[str, Any], workspace: Path) -> dict[str, Any]:
    """Our call's input as Claude Code's tool would take it."""
    renames = _FIELDS.get(tool, {})
    path_field = _PATHS.get(tool)
    skip = _OURS_ONLY.get(tool, ())
    out: dict[str, Any] = {}
    for key, value in input.items():
        if key in skip:
            continue
        if key == path_field:
            value = _absolute(value, workspace)
        if tool == "bash" and key == "timeout" and _is_number(value):
            value = int(value * 1000)
        out[renames.get(key, key)] = value
    return out


def from_claude(
    tool: str, claude_input: Mapping[str, Any], original: Mapping[str, Any], workspace: Path
) -> dict[str, Any]:
    """A hook's ``updatedInput`` (in Claude Code's shape) as our tool's input.

    Claude Code's ``updatedInput`` replaces the whole input; fields only our tool has
    (``bash``'s ``cwd``) are kept from ``original``, since the hook never saw them. A field
    neither tool knows is passed on, and our tool's validation refuses it with a message.
    """
    renames = {claude: ours for ours, claude in _FIELDS.get(tool, {}).items()}
    path_field = _PATHS.get(tool)
    out: dict[str, Any] = {k: original[k] for k in _OURS_ONLY.get(tool, ()) if k in original}
    for key, value in claude_input.items():
        ours = renames.get(key, key)
        if ours == path_field:
            value = _relative(value, workspace)
        if tool == "bash" and ours == "timeout" and _is_number(value):
            value = value / 1000
        if tool == "bash" and ours in ("description", "run_in_background"):
            continue  # Claude Code's Bash has them; ours does not, and they change nothing
        out[ours] = value
    return out


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


__all__ = [
    "CLAUDE_NAMES",
    "OUR_NAMES",
    "claude_name",
    "from_claude",
    "names_of",
    "to_claude",
]
