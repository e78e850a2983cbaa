"""Permissions: may this tool call run? Allow, ask a person, or deny.

Rules name a tool and optionally a pattern on what it touches, as in Claude Code's
settings: ``bash(git *)`` matches ``git`` and every command starting with ``git ``,
``write_file(docs/**)`` matches writes anywhere under ``docs/``. A command pattern follows the
examples of Claude Code's permissions documentation (code.claude.com/docs/en/permissions): a
``*`` matches anything, spaces included, anywhere in the pattern; a pattern whose only ``*``
ends it after a space (``git diff *``) also matches the bare prefix (``git diff``), the word
boundary that keeps ``ls *`` from matching ``lsof``; and the legacy suffix ``:*``
(``git diff:*``), which the documentation calls equivalent to a space and ``*`` but deprecated,
is read as that (``git diff *``). The order of precedence is fixed:

    deny rule  >  ask rule  >  allow rule  >  the mode's default

Modes (Claude Code's ``default``, ``acceptEdits``, ``plan``, ``bypassPermissions``):

* ``default``: read-only tools run; everything else asks.
* ``accept_edits``: file edits run too; the shell still asks.
* ``plan``: read-only tools only; anything that changes something is denied.
* ``bypass``: everything runs (deny rules still win: they are the last line of defence),
  except a shell command no rule can check (below), which still asks.

Shell commands are split on ``&&``, ``||``, ``;``, ``|``, ``&`` and newlines, and every part
must be allowed on its own, so ``git status && rm -rf ~`` is not let through by ``bash(git *)``.
A command with ``$(...)``, backticks or ``<(...)`` cannot be checked part by part, so it asks
in every mode, ``bypass`` included (``plan`` denies it, as any command): no rule, and no mode,
can see the command inside. (Claude Code parses the shell far more thoroughly; this splitter
honours quotes and backslashes but is a teaching version.)
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from harness.tools.workspace import Workspace

Mode = Literal["default", "accept_edits", "plan", "bypass"]
Decision = Literal["allow", "ask", "deny"]

EDIT_TOOLS = frozenset({"write_file", "edit_file"})
# Which input field a rule's pattern is matched against, per tool. Tools not listed here can
# only be named whole ("my_tool"), not with a pattern.
SUBJECT_FIELDS: dict[str, str] = {
    "bash": "command",
    "read_file": "path",
    "write_file": "path",
    "edit_file": "path",
    "glob": "path",
    "grep": "path",
}


def _glob_regex(pattern: str, *, path: bool) -> re.Pattern[str]:
    """``*`` matches within a path segment (anything at all in a command), ``**`` anything.

    In a path, ``**/`` is zero or more directories (as in gitignore), so ``docs/**/*.md``
    covers ``docs/a.md`` too: a deny rule written that way must not miss the top level.
    """
    out = []
    i = 0
    while i < len(pattern):
        if path and pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*" if path else ".*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]" if path else ".")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


LEGACY_SUFFIX = ":*"
"""Claude Code's older spelling of a trailing space and ``*`` in a command rule
(``Bash(npm:*)``)."""


def _command_regex(pattern: str) -> re.Pattern[str]:
    """A command pattern as Claude Code's documentation describes it.

    ``*`` matches any characters at all; ``npm run test *`` (a single ``*``, at the end, after
    a space) matches ``npm run test`` and ``npm run test`` followed by a space and anything:
    a word boundary, so ``ls *`` does not match ``lsof`` while ``ls*`` does. ``npm:*``, the
    legacy form, means ``npm *``.
    """
    if pattern.endswith(LEGACY_SUFFIX):
        pattern = pattern[: -len(LEGACY_SUFFIX)] + " *"
    if pattern.endswith(" *") and pattern.count("*") == 1:
        prefix = _glob_regex(pattern[:-2], path=False).pattern.removesuffix(r"\Z")
        return re.compile(prefix + r"(?: .*)?\Z", re.DOTALL)
    return _glob_regex(pattern, path=False)


@dataclass(frozen=True)
class Rule:
    """``tool`` or ``tool(pattern)``."""

    tool: str
    pattern: str | None = None

    @classmethod
    def parse(cls, text: str) -> Rule:
        match = re.fullmatch(r"\s*([A-Za-z0-9_*-]+)\s*(?:\((.*)\))?\s*", text, re.DOTALL)
        if match is None:
            raise ValueError(
                f"not a permission rule: {text!r} (expected 'tool' or 'tool(pattern)')"
            )
        return cls(match.group(1), match.group(2))

    def __str__(self) -> str:
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"

    def names(self, tool: str) -> bool:
        """Whether the rule is about ``tool``, as Claude Code reads the tool-name position
        (code.claude.com/docs/en/permissions): the exact name; ``mcp__server``, every tool of
        that MCP server (chapter 14); or a glob, ``*`` standing for any characters and
        matching the whole name (``mcp__*``, ``mcp__github__get_*``)."""
        if tool == self.tool:
            return True
        if "*" in self.tool:
            glob = ".*".join(re.escape(part) for part in self.tool.split("*"))
            return re.fullmatch(glob, tool, re.DOTALL) is not None
        if not self.tool.startswith("mcp__") or self.pattern is not None:
            return False
        server = self.tool.removeprefix("mcp__")
        return "__" not in server and tool.startswith(f"mcp__{server}__")

    @property
    def anchored(self) -> bool:
        """Whether a glob in the tool's name follows a literal ``mcp__<server>__``, the only
        globs an allow rule may use (``*`` or ``mcp__*`` would approve tools nobody named)."""
        if "*" not in self.tool:
            return True
        prefix = self.tool.split("*", 1)[0]
        parts = prefix.split("__")
        return prefix.startswith("mcp__") and len(parts) >= 3 and all(parts[1:2])

    def matches(self, tool: str, subject: str | None) -> bool:
        if not self.names(tool):
            return False
        if self.pattern is None:
            return True
        if subject is None:
            return False
        if tool == "bash":
            return _command_regex(self.pattern).match(subject) is not None
        return _glob_regex(self.pattern, path=True).match(subject) is not None


_SEPARATORS = ("&&", "||", ";", "|", "&", "\n")
# Substitutions run a command inside another one, where no rule can see it.
_SUBSTITUTIONS = ("$(", "`", "<(", ">(")


def _is_redirection(command: str, i: int) -> bool:
    """``2>&1``, ``<&3``, ``&>file``: an ``&`` that is part of a redirection, not a separator."""
    return (i > 0 and command[i - 1] in "<>") or command.startswith(">", i + 1)


def split_command(command: str) -> list[str] | None:
    """The simple commands in a shell line, or ``None`` if it cannot be checked part by part."""
    if any(s in command for s in _SUBSTITUTIONS):
        return None
    parts: list[str] = []
    current: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(command):
        ch = command[i]
        if ch == "\\" and quote != "'":  # escapes the next character (not inside '...')
            current.append(command[i : i + 2])
            i += 2
            continue
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            current.append(ch)
            i += 1
            continue
        separator = next((s for s in _SEPARATORS if command.startswith(s, i)), None)
        if separator and not (separator == "&" and _is_redirection(command, i)):
            parts.append("".join(current).strip())
            current = []
            i += len(separator)
            continue
        current.append(ch)
        i += 1
    parts.append("".join(current).strip())
    return [p for p in parts if p]


@dataclass
class Permissions:
    """A mode plus allow / ask / deny rules. ``decide`` says what happens to one call."""

    mode: Mode = "default"
    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    workspace: Workspace | None = None
    """Used to normalise paths before matching (``./docs/a.md`` and ``docs/a.md`` are one)."""

    def __post_init__(self) -> None:
        if self.mode not in get_args(Mode):  # a misspelt mode must not act as "default"
            known = ", ".join(get_args(Mode))
            raise ValueError(f"unknown permission mode {self.mode!r}: use one of {known}")
        loose = [str(rule) for rule in self.allow if not rule.anchored]
        if loose:  # Claude Code skips them with a warning; a rule that does nothing is an error
            raise ValueError(
                f"allow rules may use a glob only after mcp__<server>__: {', '.join(loose)}"
            )

    @classmethod
    def from_rules(
        cls,
        mode: Mode = "default",
        *,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
        workspace: Workspace | None = None,
    ) -> Permissions:
        return cls(
            mode=mode,
            allow=[Rule.parse(r) for r in allow],
            ask=[Rule.parse(r) for r in ask],
            deny=[Rule.parse(r) for r in deny],
            workspace=workspace,
        )

    def _subjects(
        self, tool: str, input: Mapping[str, Any], workspace: Workspace | None
    ) -> list[str] | None:
        name = SUBJECT_FIELDS.get(tool)
        value = input.get(name) if name else None
        if value is None:
            return [] if tool != "bash" else None
        text = str(value)
        if tool == "bash":
            return split_command(text)
        if workspace is not None:
            # A path that leaves the workspace (PathEscape) or that no file system takes
            # (BadPath, a ValueError) is refused by the tool itself; rules see it raw.
            with contextlib.suppress(PermissionError, ValueError):
                text = workspace.relative(text)
        return [text]

    def decide(
        self,
        tool: str,
        input: Mapping[str, Any],
        *,
        read_only: bool,
        workspace: Workspace | None = None,
        pre_approved: str | None = None,
    ) -> tuple[Decision, str]:
        """The decision for one call, and the reason (which rule or mode).

        ``workspace`` is where the tool will run (the runner passes its own), so that
        ``./secrets/k`` cannot slip past ``deny: write_file(secrets/**)``; it defaults to
        :attr:`workspace`. ``pre_approved`` says why the mode's own question is answered
        already (a PreToolUse hook allowed the call, chapter 13): then the mode allows what it
        would have asked about, and nothing else changes: a deny or ask rule, plan mode and
        the command-substitution check still decide as they would.
        """
        subjects = self._subjects(tool, input, workspace or self.workspace)
        if subjects is None:  # a substitution: no part can be trusted on its own
            raw = str(input.get("command", ""))
            if (rule := next((r for r in self.deny if r.matches(tool, raw)), None)) is not None:
                return "deny", f"deny rule {rule}"
            if self.mode == "plan":  # plan denies whatever may change something, this too
                return self._mode_default(tool, read_only)
            return "ask", "command substitution cannot be checked part by part (asks in every mode)"
        each: list[str | None] = list(subjects) if subjects else [None]

        def hit(rules: list[Rule], every: bool) -> Rule | None:
            found = [next((r for r in rules if r.matches(tool, s)), None) for s in each]
            if every:
                return found[0] if all(found) else None
            return next((r for r in found if r is not None), None)

        if (rule := hit(self.deny, every=False)) is not None:
            return "deny", f"deny rule {rule}"
        if (rule := hit(self.ask, every=False)) is not None:
            return "ask", f"ask rule {rule}"
        if (rule := hit(self.allow, every=True)) is not None:
            return "allow", f"allow rule {rule}"
        return self._mode_default(tool, read_only, pre_approved)

    def _mode_default(
        self, tool: str, read_only: bool, pre_approved: str | None = None
    ) -> tuple[Decision, str]:
        if self.mode == "bypass":
            return "allow", "bypass mode"
        if read_only:
            return "allow", f"{self.mode} mode: read-only tool"
        if self.mode == "plan":
            return "deny", "plan mode: only read-only tools may run"
        if self.mode == "accept_edits" and tool in EDIT_TOOLS:
            return "allow", "accept_edits mode: file edits are accepted"
        if pre_approved is not None:
            return "allow", pre_approved
        return "ask", f"{self.mode} mode: {tool} changes things"


@dataclass(frozen=True)
class ApprovalRequest:
    """What a person (or a policy) is asked to approve: the exact call."""

    tool_use_id: str
    tool: str
    input: dict[str, Any]
    reason: str


@dataclass(frozen=True)
class Approval:
    approved: bool
    reason: str = ""


@dataclass(frozen=True)
class Deferred:
    """The answer of an approver that will decide later, maybe hours later, in another
    process (chapter 09's approval store). The call does not run; the calls after it in the
    reply wait with it, and the run stops. ``ticket`` names the decision to wait for."""

    ticket: str
    reason: str = ""


Approver = Callable[[ApprovalRequest], Approval | Deferred | bool]
"""Called for every ``ask``: a terminal prompt, a notebook widget, a policy, or a store
that defers the decision."""


def deny_all(request: ApprovalRequest) -> Approval:
    """The safe default when nobody is there to ask."""
    return Approval(False, "no one was asked to approve it (no approver configured)")


def policy(allow: Callable[[ApprovalRequest], bool], reason: str = "policy") -> Approver:
    """An approver that decides by rule, so a run is reproducible (tests, stored notebooks)."""

    def approve(request: ApprovalRequest) -> Approval:
        ok = allow(request)
        return Approval(ok, f"{reason}: {'approved' if ok else 'refused'}")

    return approve


def terminal(request: ApprovalRequest) -> Approval:
    """Ask at the terminal (the command line uses this)."""
    answer = input(f"Allow {request.tool} {request.input}? ({request.reason}) [y/N] ")
    ok = answer.strip().lower() in ("y", "yes")
    return Approval(ok, "approved at the terminal" if ok else "refused at the terminal")
