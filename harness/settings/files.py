"""Claude Code's settings files: found, read, checked and merged in Claude Code's order.

Claude Code reads up to four files (code.claude.com/docs/en/settings, "Settings files"):

* user: ``~/.claude/settings.json``, you in every project;
* project: ``<project>/.claude/settings.json``, everyone in the project (checked in);
* local: ``<project>/.claude/settings.local.json``, you in this project (not checked in);
* managed: ``managed-settings.json`` (+ ``managed-settings.d/*.json``) in
  ``/etc/claude-code`` on Linux, the organisation's policy, which users cannot override;

and merges them in that order, later over earlier (``SETTING_SOURCES`` in openclaude
``src/utils/settings/constants.ts``: user, project, local, command-line flag, policy). A
value set in two files is the later one's; objects merge key by key; lists are
*concatenated* (``settingsMergeCustomizer``, "Arrays are concatenated and deduplicated").
The ``hooks`` section is an object of lists, so hooks from every file add up: a project
cannot remove your hooks, nor you the project's (except with ``disableAllHooks``).

A file that cannot be used (unreadable, not UTF-8, not JSON, not an object, a folder, huge)
is a problem string naming the file, never an exception out of :func:`load_settings`; a bad
entry in a good file skips only itself (:func:`harness.settings.schema.hooks_in`).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.settings.schema import (
    HARNESS_EVENTS,
    ConfiguredHook,
    Scope,
    hooks_in,
)

MAX_SETTINGS_BYTES = 1024 * 1024
"""Our cap on a settings file's size (Claude Code has none): a real one is a few kilobytes."""

MAX_DEPTH = 64
"""Our cap on how deeply a settings file's objects and lists may nest."""

MANAGED_DIR_LINUX = Path("/etc/claude-code")
"""Where Linux keeps the managed policy files (``getManagedFilePath`` in openclaude
``src/utils/settings/managedPath.ts``; macOS ``/Library/Application Support/ClaudeCode``,
Windows ``C:\\Program Files\\ClaudeCode``). :func:`load_settings` reads it only when asked."""


class SettingsError(ValueError):
    """A settings file that cannot be used at all; ``str()`` names the file and why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class SettingsFile:
    """One settings file that was read: where, which scope, and its parsed JSON object."""

    path: Path
    scope: Scope
    data: Mapping[str, Any] = field(compare=False, repr=False)


@dataclass(frozen=True)
class Settings:
    """Every settings file that counts, merged: what :func:`load_settings` returns."""

    files: tuple[SettingsFile, ...]
    """The files read, lowest precedence first (user, project, local, managed)."""
    problems: tuple[str, ...]
    """One line per file or entry that could not be used, naming the file and the field."""
    hooks: tuple[ConfiguredHook, ...]
    """The command hooks that may run, in Claude Code's order (file by file, then as listed),
    after ``disableAllHooks`` and ``allowManagedHooksOnly`` are applied."""
    values: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """All the files merged as Claude Code merges them (:func:`merge_settings`)."""
    disable_all_hooks: bool = False
    """Whether a file turned hooks off (``disableAllHooks: true``)."""


def settings_paths(
    workspace: Path, home: Path | None, managed_dir: Path | None = None
) -> list[tuple[Scope, Path]]:
    """The settings files Claude Code would read, lowest precedence first.

    The project files are looked for in ``workspace`` itself (Claude Code uses the folder
    it was started in, not a parent or the git root). Managed policy files come last, and
    only when ``managed_dir`` is given: ``managed-settings.json`` then the ``.json`` files
    of ``managed-settings.d/`` in name order (later ones win, as in Claude Code).
    """
    paths: list[tuple[Scope, Path]] = []
    if home is not None:
        paths.append(("user", home / ".claude" / "settings.json"))
    paths.append(("project", workspace / ".claude" / "settings.json"))
    paths.append(("local", workspace / ".claude" / "settings.local.json"))
    if managed_dir is not None:
        paths.append(("managed", managed_dir / "managed-settings.json"))
        paths.extend(("managed", p) for p in _drop_ins(managed_dir / "managed-settings.d"))
    return paths


def _drop_ins(folder: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / n for n in names if n.endswith(".json") and not n.startswith(".")]


def read_settings_file(path: Path, *, max_bytes: int = MAX_SETTINGS_BYTES) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when there is no such file.

    An empty (or blank) file is ``{}``, as in Claude Code. Raises :class:`SettingsError`
    when the file exists but cannot be used: a folder or a device in its place, unreadable,
    larger than ``max_bytes`` (:data:`MAX_SETTINGS_BYTES`), not UTF-8, not JSON (``NaN`` and
    ``Infinity`` included, which Python would accept and JavaScript would not), not an object,
    or nested deeper than :data:`MAX_DEPTH`. A UTF-8 byte-order mark is allowed.
    """
    raw = _read_bytes(path, max_bytes)
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SettingsError(path, f"is not UTF-8 text (bad byte at offset {error.start})") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise SettingsError(path, f"is not valid JSON ({error.msg} at {where})") from None
    except (ValueError, RecursionError) as error:
        raise SettingsError(path, f"is not valid JSON ({_first_line(error)})") from None
    if not isinstance(data, dict):
        raise SettingsError(path, f"must hold a JSON object, not {_json_kind(data)}")
    if nesting_depth(data) > MAX_DEPTH:
        raise SettingsError(path, f"nests objects or lists deeper than {MAX_DEPTH} levels")
    return data


def _read_bytes(path: Path, max_bytes: int = MAX_SETTINGS_BYTES) -> bytes | None:
    """The file's bytes (at most the cap), None when absent. Never blocks on a pipe: the
    file is opened without waiting and must turn out to be a regular file."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None  # no file, or .claude is itself a file: nothing to read, as in Claude Code
    except IsADirectoryError:
        raise SettingsError(path, "is a folder, not a file") from None
    except OSError as error:
        raise SettingsError(path, f"cannot be read ({error.strerror or error})") from None
    try:
        info = os.fstat(descriptor)
        if stat.S_ISDIR(info.st_mode):
            raise SettingsError(path, "is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise SettingsError(path, "is not a regular file (a device, pipe or socket)")
        if info.st_size > max_bytes:
            raise SettingsError(path, f"is {info.st_size} bytes (at most {max_bytes})")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(descriptor, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:  # it grew after fstat
            raise SettingsError(path, f"is more than {max_bytes} bytes")
        return b"".join(chunks)
    except OSError as error:
        raise SettingsError(path, f"cannot be read ({error.strerror or error})") from None
    finally:
        os.close(descriptor)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _first_line(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text.splitlines()[0][:200]


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else type(value).__name__


def nesting_depth(value: object, limit: int = MAX_DEPTH) -> int:
    """How deeply ``value`` nests (iteratively: a hostile file cannot exhaust the stack); it
    stops counting once past ``limit``."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if deepest > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def merge_settings(lower: Mapping[str, Any], higher: Mapping[str, Any]) -> dict[str, Any]:
    """``higher`` over ``lower`` as Claude Code merges settings (lodash ``mergeWith`` with
    ``settingsMergeCustomizer``, openclaude ``src/utils/settings/settings.ts``): objects
    merge key by key, lists are concatenated without repeating a plain value, anything else
    is replaced. Neither argument is changed."""
    merged: dict[str, Any] = dict(lower)
    for key, value in higher.items():
        old = merged.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            merged[key] = merge_settings(old, value)
        elif isinstance(old, list) and isinstance(value, list):
            merged[key] = _concatenate(old, value)
        else:
            merged[key] = value
    return merged


def _concatenate(first: list[Any], second: list[Any]) -> list[Any]:
    """``first + second`` without repeating a string, number, boolean or null (lodash
    ``uniq``: JavaScript's SameValueZero, so ``1`` and ``1.0`` are one value but ``1`` and
    ``true`` are two; objects and lists are all kept, each being a different object)."""
    seen: set[tuple[str, object]] = set()
    out: list[Any] = []
    for item in [*first, *second]:
        key = _plain_key(item)
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        out.append(item)
    return out


def _plain_key(item: object) -> tuple[str, object] | None:
    """A key equal for values JavaScript counts as the same; None for objects and lists."""
    if item is None or isinstance(item, bool | str):
        return (type(item).__name__, item)
    if isinstance(item, int | float):
        try:
            return ("number", float(item))
        except OverflowError:  # an integer too large for a float: JavaScript's Infinity
            return ("number", item)
    return None


def load_settings(
    workspace: Path,
    home: Path | None,
    *,
    managed_dir: Path | None = None,
    events: Collection[str] = HARNESS_EVENTS,
) -> Settings:
    """Read every settings file that applies to ``workspace``, in Claude Code's order.

    ``home`` is the user's home folder (None: no user file). ``managed_dir`` is where the
    machine's policy lives (:data:`MANAGED_DIR_LINUX`; None, the default, reads none).
    Never raises for a bad file: each becomes a line of ``problems``. A file reached twice
    (the workspace *is* the home folder) is read once, as the first scope that names it.

    Which hooks count follows Claude Code (``getHooksFromAllowedSources`` in openclaude
    ``src/utils/hooks/hooksConfigSnapshot.ts``): a managed ``disableAllHooks: true`` turns
    every hook off; a managed ``allowManagedHooksOnly: true`` keeps only managed hooks; a
    ``disableAllHooks: true`` that wins the merge elsewhere keeps only managed hooks (a user
    cannot turn the organisation's hooks off).
    """
    files: list[SettingsFile] = []
    problems: list[str] = []
    seen: set[str] = set()
    for scope, path in settings_paths(workspace, home, managed_dir):
        key = _identity(path)
        if key in seen:
            continue
        seen.add(key)
        try:
            data = read_settings_file(path)
        except SettingsError as error:
            problems.append(f"{error} (the file is ignored)")
            continue
        if data is not None:
            files.append(SettingsFile(path, scope, data))

    values: dict[str, Any] = {}
    hooks: list[ConfiguredHook] = []
    for file in files:
        for flag in ("disableAllHooks", "allowManagedHooksOnly"):
            if flag in file.data and not isinstance(file.data[flag], bool):
                kind = _json_kind(file.data[flag])
                problems.append(f"{file.path}: {flag}: must be true or false, not {kind} (ignored)")
        values = merge_settings(values, _without_bad_flags(file.data))
        found, trouble = hooks_in(file.data, file.path, file.scope, events=events)
        hooks.extend(found)
        problems.extend(trouble)

    managed = [f for f in files if f.scope == "managed"]
    managed_values: dict[str, Any] = {}
    for file in managed:
        managed_values = merge_settings(managed_values, _without_bad_flags(file.data))
    disabled = values.get("disableAllHooks") is True
    if managed_values.get("disableAllHooks") is True:
        hooks = []
    elif managed_values.get("allowManagedHooksOnly") is True or disabled:
        hooks = [h for h in hooks if h.scope == "managed"]
    return Settings(
        files=tuple(files),
        problems=tuple(problems),
        hooks=tuple(hooks),
        values=values,
        disable_all_hooks=disabled,
    )


def _without_bad_flags(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """``data`` less a ``disableAllHooks`` / ``allowManagedHooksOnly`` that is not a boolean."""
    bad = [k for k in ("disableAllHooks", "allowManagedHooksOnly") if k in data]
    bad = [k for k in bad if not isinstance(data[k], bool)]
    return {k: v for k, v in data.items() if k not in bad} if bad else data


def _identity(path: Path) -> str:
    """One name per file, however it is reached (symbolic links, ``..``)."""
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):  # a symbolic-link loop: Path.resolve raises
        return os.path.abspath(path)


__all__ = [
    "MANAGED_DIR_LINUX",
    "MAX_DEPTH",
    "MAX_SETTINGS_BYTES",
    "Settings",
    "SettingsError",
    "SettingsFile",
    "load_settings",
    "merge_settings",
    "read_settings_file",
    "settings_paths",
]
