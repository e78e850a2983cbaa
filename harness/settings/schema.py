"""The ``hooks`` section of a Claude Code settings file, checked entry by entry.

The documented shape (code.claude.com/docs/en/hooks) is::

    {"hooks": {"PreToolUse": [{"matcher": "Bash",
                               "hooks": [{"type": "command", "command": "...", "timeout": 30}]}]}}

an event name maps to a list of *matcher groups*; each group has an optional ``matcher`` and a
list of hook handlers. Claude Code validates this with zod schemas (``src/schemas/hooks.ts``);
here pydantic models do the same for each level, and :func:`hooks_in` walks the section one
entry at a time, so that one bad entry is a problem string naming file and field while the
rest of the section still counts. Nothing here raises on bad input.

Each ``command`` handler becomes one :class:`ConfiguredHook`: the flat record the runner
(``harness.settings.hooks``) and the trust gate (``harness.settings.trust``) work with. Other
handler types Claude Code has (``prompt``, ``agent``, ``http``) are reported as not supported.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

Scope = Literal["user", "project", "local", "managed"]
"""Where a settings file lives: the home folder (``~/.claude/settings.json``), the project
(``.claude/settings.json``, shared through git), the project but yours only
(``.claude/settings.local.json``), or the machine's managed policy
(``/etc/claude-code/managed-settings.json`` on Linux), which only an administrator can write."""

HOOK_EVENTS: tuple[str, ...] = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "UserPromptSubmit",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
)
"""Every event Claude Code knows (``HOOK_EVENTS`` in openclaude's
``src/entrypoints/sdk/coreSchemas.ts``). A key outside this list is an unknown event."""

HARNESS_EVENTS: frozenset[str] = frozenset(
    {
        "PreToolUse",
        "PostToolUse",
        "UserPromptSubmit",
        "Stop",
        "SessionStart",
        "PreCompact",
        "SessionEnd",
    }
)
"""The events this harness runs hooks for. A hook for another documented event is kept out
of the result and reported ("not run by this harness"), so nobody wonders why it is silent."""

HANDLER_TYPES: tuple[str, ...] = ("command", "prompt", "agent", "http")
"""The handler types Claude Code documents; only ``command`` is run here."""

DEFAULT_TIMEOUT = 600.0
"""Seconds a command hook may run when its entry gives no ``timeout``: Claude Code's default
(``TOOL_HOOK_EXECUTION_TIMEOUT_MS = 10 * 60 * 1000`` in openclaude ``src/utils/hooks.ts``;
the hooks reference says 600 for command hooks)."""

EVENT_TIMEOUTS: dict[str, float] = {"UserPromptSubmit": 30.0, "SessionEnd": 1.5}
"""Events whose command hooks default to less (the hooks reference, checked 2026-11-27:
UserPromptSubmit "lowers the command ... default to 30", since it holds up every prompt;
SessionEnd hooks "have a default timeout of 1.5 seconds"; Claude Code also shares that 1.5 s
among all SessionEnd hooks and raises it to the longest configured one, up to 60 s: here
each hook has its own timeout)."""

MAX_TIMEOUT = 24 * 60 * 60.0
"""Our cap on a configured timeout (Claude Code has none): a larger one is lowered to this,
with a problem, so a typo of ``1e12`` cannot make a hook wait for ever."""

MAX_MATCHER_LENGTH = 1_000
"""Our cap on a matcher's length: a longer one is refused (it is a mistake or an attack)."""

MAX_COMMAND_LENGTH = 100_000
"""Our cap on a command's length (shell command lines are far shorter in practice)."""

_SIMPLE_MATCHER = re.compile(r"[A-Za-z0-9_\-, |]+")

MATCHER_EVENTS: frozenset[str] = frozenset(
    {
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PermissionRequest",
        "PermissionDenied",
        "SessionStart",
        "Setup",
        "PreCompact",
        "PostCompact",
        "Notification",
        "SessionEnd",
        "StopFailure",
        "SubagentStart",
        "SubagentStop",
        "Elicitation",
        "ElicitationResult",
        "ConfigChange",
        "InstructionsLoaded",
        "FileChanged",
    }
)
"""The events whose hooks are filtered by ``matcher`` (openclaude ``src/utils/hooks.ts``, the
``matchQuery`` switch: tool name, SessionStart's source, PreCompact's trigger, SessionEnd's
reason...). For the others (UserPromptSubmit, Stop, ...) a matcher is ignored: every hook runs."""


def matcher_matches(matcher: str, value: str) -> bool:
    """Whether Claude Code's ``matcher`` selects ``value`` (a tool name, a source, a trigger).

    The documented rules (code.claude.com/docs/en/hooks, "matcher patterns"): ``""`` or
    ``"*"`` matches everything; a matcher of only letters, digits, ``_``, ``-``, spaces,
    commas and ``|`` is an exact name or a list of exact names (``"Edit|Write"``,
    ``"Edit, Write"``); anything else is a regular expression searched anywhere in the value
    (JavaScript's ``RegExp.test``, unanchored), so ``"Notebook.*"`` matches
    ``"NotebookEdit"`` and ``"mcp__memory"`` alone matches no tool. An invalid expression
    matches nothing. (openclaude's ``matchesPattern`` in ``src/utils/hooks.ts`` is the older
    rule, letters, digits, ``_`` and ``|`` only; for tool names both agree.) Python's ``re``
    stands in for JavaScript's; the two agree on the common syntax.
    """
    if matcher in ("", "*"):
        return True
    if _SIMPLE_MATCHER.fullmatch(matcher):
        names = {part.strip() for part in re.split(r"[|,]", matcher)}
        return value in names - {""}
    try:
        return re.search(matcher, value) is not None
    except (re.error, RecursionError, OverflowError):
        return False


def matcher_problem(matcher: str) -> str | None:
    """Why ``matcher`` can never work (too long, or an invalid expression), else None."""
    if len(matcher) > MAX_MATCHER_LENGTH:
        return f"is {len(matcher)} characters long (at most {MAX_MATCHER_LENGTH})"
    if matcher in ("", "*") or _SIMPLE_MATCHER.fullmatch(matcher):
        return None
    try:
        re.compile(matcher)
    except (re.error, RecursionError, OverflowError) as error:
        return f"{_short(matcher)} is not a valid regular expression ({error})"
    return None


@dataclass(frozen=True)
class ConfiguredHook:
    """One command hook from a settings file: what to run, when, and where it came from."""

    event: str
    """The event it runs on: ``"PreToolUse"``, ``"Stop"``, ... (see :data:`HOOK_EVENTS`)."""
    matcher: str
    """``""`` or ``"*"`` for all; else Claude Code's matcher (see :func:`matcher_matches`)."""
    command: str
    """The shell command line."""
    timeout: float
    """Seconds it may run (:data:`DEFAULT_TIMEOUT` when the file gives none)."""
    source: Path
    """The settings file it came from."""
    scope: Scope
    """``"user"`` (the home folder), ``"project"`` or ``"local"`` (the workspace), or
    ``"managed"`` (the machine's policy)."""

    def matches(self, value: str | None) -> bool:
        """Whether this hook runs for ``value`` (a tool name, ``"manual"``, ``"startup"``...).

        For an event without matchers (:data:`MATCHER_EVENTS`), or with ``value`` None, the
        matcher is ignored and the hook always runs, as in Claude Code.
        """
        if value is None or self.event not in MATCHER_EVENTS:
            return True
        return matcher_matches(self.matcher, value)


class CommandHandler(BaseModel):
    """A ``{"type": "command", "command": ..., "timeout": ...}`` entry. Other documented keys
    (``statusMessage``, ``shell``, ``once``, ``async``, ``if``) are allowed and looked at by
    :func:`hooks_in`; unknown keys are ignored, as Claude Code's zod objects do."""

    model_config = ConfigDict(extra="allow", frozen=True)

    type: Literal["command"]
    command: str = Field(max_length=MAX_COMMAND_LENGTH)
    timeout: float | None = None

    @field_validator("command", mode="before")
    @classmethod
    def _a_command_line(cls, value: object) -> object:
        if not isinstance(value, str):
            raise ValueError(f"must be a string, not {type(value).__name__}")
        if not value.strip():
            raise ValueError("must not be empty")
        if "\x00" in value:
            raise ValueError("contains a NUL character")
        return value

    @field_validator("timeout", mode="before")
    @classmethod
    def _a_positive_number(cls, value: object) -> object:
        # pydantic would accept True (as 1) and "30" (as 30.0): Claude Code's zod would not.
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be a number of seconds, not {type(value).__name__}")
        if isinstance(value, int) and value > MAX_TIMEOUT:
            return float(MAX_TIMEOUT + 1)  # a huge integer: lowered later, not an overflow
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"must be a positive number of seconds, not {_short(value)}")
        return value


class MatcherGroup(BaseModel):
    """A ``{"matcher": ..., "hooks": [...]}`` entry; its handlers are checked one by one."""

    model_config = ConfigDict(extra="allow", frozen=True)

    matcher: str = ""
    hooks: list[Any]


def unique_commands(matched: Sequence[ConfiguredHook]) -> list[ConfiguredHook]:
    """The hooks to run for one event once those that matched are known: one per command.

    Claude Code runs an identical command only once per event even when several groups (or
    several files) list it; the one kept sits where the command first appears and is the
    last listed, so its timeout wins (``new Map(...)`` keyed by shell, command and ``if`` in
    openclaude ``src/utils/hooks.ts``, "Deduplicate hooks by command").
    """
    last: dict[str, ConfiguredHook] = {}
    for hook in matched:
        last[hook.command] = hook  # a dict keeps a key's first position, takes its last value
    return list(last.values())


def _describe(where: str, error: ValidationError) -> str:
    """A pydantic error as one line naming each field: ``a.b.timeout: must be ...``."""
    parts = []
    for item in error.errors():
        field = ".".join(str(p) for p in item["loc"])
        message = str(item["msg"]).removeprefix("Value error, ")
        parts.append(f"{where}.{field}: {message}" if field else f"{where}: {message}")
    return "; ".join(parts)


def _short(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters (and safe for any value)."""
    try:
        text = repr(value)
    except ValueError:  # an integer of more than 4300 digits has no repr (int_max_str_digits)
        text = f"<a {type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def hooks_in(
    data: object,
    source: Path,
    scope: Scope,
    *,
    events: Collection[str] = HARNESS_EVENTS,
) -> tuple[list[ConfiguredHook], list[str]]:
    """The command hooks of one parsed settings file, and a problem line per bad entry.

    ``data`` is the whole parsed file (normally a dict); its ``"hooks"`` key is read. Each
    problem names the file and the field (``hooks.PreToolUse[0].hooks[1].timeout``). A bad
    handler is skipped and its neighbours kept; a bad group or event skips only itself.
    Hooks for documented events outside ``events`` are reported and left out. Never raises.
    (Claude Code itself rejects the whole file when any field fails its schema:
    ``parseSettingsFileUncached`` in openclaude ``src/utils/settings/settings.ts``.)
    """
    found: list[ConfiguredHook] = []
    problems: list[str] = []

    def problem(message: str) -> None:
        problems.append(f"{source}: {message}")

    if not isinstance(data, Mapping) or "hooks" not in data:
        return found, problems
    section = data["hooks"]
    if not isinstance(section, Mapping):
        problem(f"hooks: must be an object of events, not {type(section).__name__} (ignored)")
        return found, problems
    for event, groups in section.items():
        where = f"hooks.{_key(event)}"
        if event not in HOOK_EVENTS:
            problem(f"{where}: is not a Claude Code hook event (ignored)")
            continue
        if not isinstance(groups, list):
            problem(f"{where}: must be a list of matcher groups, not {type(groups).__name__}")
            continue
        for g, raw_group in enumerate(groups):
            here = f"{where}[{g}]"
            if not isinstance(raw_group, Mapping):
                problem(f"{here}: must be an object, not {type(raw_group).__name__} (ignored)")
                continue
            try:
                group = MatcherGroup.model_validate(raw_group)
            except ValidationError as error:
                problem(_describe(here, error) + " (group ignored)")
                continue
            if event in MATCHER_EVENTS:
                why = matcher_problem(group.matcher)
                if why is not None:
                    problem(f"{here}.matcher: {why} (group ignored)")
                    continue
            for h, raw_handler in enumerate(group.hooks):
                at = f"{here}.hooks[{h}]"
                default = EVENT_TIMEOUTS.get(str(event), DEFAULT_TIMEOUT)
                handler = _handler(raw_handler, at, problem, default)
                if handler is None:
                    continue
                if event not in events:
                    problem(f"{at}: is a {event} hook, an event this harness does not run")
                    continue
                command, timeout = handler
                found.append(ConfiguredHook(event, group.matcher, command, timeout, source, scope))
    return found, problems


def _key(event: object) -> str:
    """An event key fit for a message (it may be any string, however long or strange)."""
    text = str(event)
    return text if text.isidentifier() and len(text) <= 60 else _short(text)


def _handler(
    raw: object, where: str, problem: Callable[[str], None], default: float = DEFAULT_TIMEOUT
) -> tuple[str, float] | None:
    """One handler entry as (command, timeout), or None after reporting why it is skipped."""
    if not isinstance(raw, Mapping):
        problem(f"{where}: must be an object, not {type(raw).__name__} (skipped)")
        return None
    kind = raw.get("type")
    if kind != "command":
        if isinstance(kind, str) and kind in HANDLER_TYPES:
            problem(f'{where}: is a "{kind}" hook, which this harness does not run (skipped)')
        elif kind is None:
            problem(f'{where}.type: is missing (must be "command"; skipped)')
        else:
            problem(f'{where}.type: must be "command", not {_short(kind)} (skipped)')
        return None
    try:
        handler = CommandHandler.model_validate(dict(raw))
    except ValidationError as error:
        problem(_describe(where, error) + " (skipped)")
        return None
    if "if" in raw:
        # Claude Code runs the hook only when the call matches this permission rule; running
        # it for every call instead could block calls its author never meant to.
        problem(f"{where}.if: conditional hooks are not supported (skipped)")
        return None
    shell = raw.get("shell", "bash")
    if shell != "bash":
        problem(f'{where}.shell: only "bash" is supported, not {_short(shell)} (skipped)')
        return None
    timeout = default if handler.timeout is None else handler.timeout
    if timeout > MAX_TIMEOUT:
        problem(f"{where}.timeout: {_short(raw.get('timeout'))} s is lowered to {MAX_TIMEOUT:g} s")
        timeout = MAX_TIMEOUT
    if raw.get("async") is True or raw.get("asyncRewake") is True:
        problem(f"{where}.async: background hooks are not supported: it runs in the foreground")
    return handler.command, timeout


__all__ = [
    "DEFAULT_TIMEOUT",
    "EVENT_TIMEOUTS",
    "HANDLER_TYPES",
    "HARNESS_EVENTS",
    "HOOK_EVENTS",
    "MATCHER_EVENTS",
    "MAX_TIMEOUT",
    "CommandHandler",
    "ConfiguredHook",
    "MatcherGroup",
    "Scope",
    "hooks_in",
    "matcher_matches",
    "matcher_problem",
    "unique_commands",
]
