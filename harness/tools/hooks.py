"""Tool hooks: your code around every tool call, as in Claude Code's settings.

* ``PreToolUse`` runs before a call (after its input is validated, before permissions). It
  may block the call (the model gets the reason as an error result) or replace its input.
* ``PostToolUse`` runs after a call and may replace the result the model will see.

Claude Code configures all its hooks in one place; here each kind lives with the mechanism
it hooks into. These two belong to the tool runner. The Stop hook belongs to the loop
(``stop_hooks=`` in ``harness.loop``): it runs when the model is about to end its turn and
may send it back to work, as Claude Code's Stop hook with ``decision: "block"`` does.

A hook that raises is reported as an event and otherwise ignored: a broken hook never stops
the loop (Claude Code treats a hook's unexpected failure as non-blocking the same way).
Each hook has a ``matcher``: a tool name, ``"write_file|edit_file"``, or ``"*"`` for all.

A PreToolUse hook may also take part in the permission decision, as Claude Code's
``permissionDecision`` does: ``"deny"`` refuses the call (like ``block``), ``"allow"`` skips
the question a person would have been asked (a deny or ask *rule* still wins: a hook cannot
allow what the user's rules refuse), and ``"ask"`` asks even when the rules would allow it.
Hooks that report what they did themselves (chapter 13's hooks from settings) hand their
events back in ``events``; the runner yields them in order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from harness.events import Event, HookReported
from harness.tools.permissions import Decision

HookDecision = Literal["allow", "ask", "deny"]


@dataclass(frozen=True)
class ToolUse:
    """What a tool hook sees of a call."""

    tool_use_id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class PreToolUseResult:
    """Return one from a PreToolUse hook to block the call or change its input."""

    block: bool = False
    reason: str = ""
    input: dict[str, Any] | None = None
    decision: HookDecision | None = None
    """``"allow"``: no question asked (rules still apply); ``"ask"``: always ask;
    ``"deny"``: refuse, as ``block`` does. When several hooks decide, deny wins over ask,
    and ask over allow (Claude Code's precedence)."""
    events: tuple[Event, ...] = ()
    """What the hook reports about itself, yielded by the runner."""


@dataclass(frozen=True)
class PostToolUseResult:
    """Return one from a PostToolUse hook to report events as well as (maybe) a new text."""

    text: str | None = None
    events: tuple[Event, ...] = ()


PreToolUseHook = Callable[[ToolUse], PreToolUseResult | None]
PostToolUseHook = Callable[[ToolUse, str, bool], str | PostToolUseResult | None]
"""Gets the call, the result text and whether it is an error; returns a new text (or a
:class:`PostToolUseResult`) or None."""


def _check_matcher(matcher: str) -> None:
    """A bad matcher is refused when the hook is added, not in the middle of a run."""
    if matcher == "*":
        return
    try:
        re.compile(matcher)
    except re.error as error:
        raise ValueError(f"hook matcher {matcher!r} is not a valid pattern: {error}") from None


def _matches(matcher: str, name: str) -> bool:
    return matcher == "*" or re.fullmatch(matcher, name) is not None


@dataclass
class Hooks:
    pre_tool_use: list[tuple[str, PreToolUseHook]] = field(default_factory=list)
    post_tool_use: list[tuple[str, PostToolUseHook]] = field(default_factory=list)

    def on_pre_tool_use(self, hook: PreToolUseHook, matcher: str = "*") -> PreToolUseHook:
        _check_matcher(matcher)
        self.pre_tool_use.append((matcher, hook))
        return hook

    def on_post_tool_use(self, hook: PostToolUseHook, matcher: str = "*") -> PostToolUseHook:
        _check_matcher(matcher)
        self.post_tool_use.append((matcher, hook))
        return hook

    def pre(self, name: str) -> list[PreToolUseHook]:
        return [hook for matcher, hook in self.pre_tool_use if _safe_matches(matcher, name)]

    def post(self, name: str) -> list[PostToolUseHook]:
        return [hook for matcher, hook in self.post_tool_use if _safe_matches(matcher, name)]


def _safe_matches(matcher: str, name: str) -> bool:
    # Lists can be filled directly, past the check in on_*: a bad pattern then matches nothing.
    try:
        return _matches(matcher, name)
    except re.error:
        return False


def with_hook_ask(
    decision: Decision, reason: str, hook: HookDecision | None, hook_reason: str
) -> tuple[Decision, str]:
    """The rules' decision with a PreToolUse hook's ``ask`` taken in: it asks even when the
    rules allow (a deny still wins). A hook's ``allow`` is taken in by the rules themselves
    (``Permissions.decide(..., pre_approved=...)``): it answers only the mode's own question,
    so a deny or ask rule, plan mode and the command-substitution check still win, as in
    Claude Code (``resolveHookPermissionDecision`` in openclaude
    ``src/services/tools/toolHooks.ts``)."""
    if hook != "ask" or decision == "deny":
        return decision, reason
    why = f": {hook_reason}" if hook_reason else ""
    return "ask", f"a PreToolUse hook asks for approval{why}" + (
        f"; {reason}" if decision == "ask" else ""
    )


def apply_pre_hook(
    use: ToolUse, verdict: PreToolUseResult
) -> Generator[Event, None, tuple[ToolUse, str | None]]:
    """A PreToolUse hook's verdict applied to the call: blocked (with the model's error
    text), or its input replaced; yields the event that says which."""
    if verdict.block or verdict.decision == "deny":
        yield HookReported("PreToolUse", use.name, "blocked", verdict.reason)
        return (
            use,
            f"A PreToolUse hook blocked this call: {verdict.reason or 'no reason given'}",
        )
    if verdict.input is not None:
        yield HookReported(
            "PreToolUse", use.name, "changed input", json.dumps(verdict.input, default=str)
        )
        return replace(use, input=dict(verdict.input)), None
    return use, None
