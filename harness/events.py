"""What the loop tells the world: typed events, one per thing that happened.

``Agent.run`` yields these. Notebooks render them, the command line prints them, tests
assert on them. Each has a one-line ``str()`` for quick reading. Other mechanisms define
their own events in their own modules.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from anthropic.types import Message


def _short(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@dataclass(frozen=True)
class Event:
    """Base class of everything ``Agent.run`` yields."""


@dataclass(frozen=True)
class ModelCalled(Event):
    turn: int
    messages: int
    estimated_tokens: int
    """The request's size by ``harness.tokens`` before it was sent."""

    def __str__(self) -> str:
        return (
            f"→ model call {self.turn}: {self.messages} messages, ~{self.estimated_tokens:,} tokens"
        )


@dataclass(frozen=True)
class AssistantReplied(Event):
    turn: int
    message: Message

    def __str__(self) -> str:
        parts = []
        for block in self.message.content:
            if block.type == "text":
                parts.append(repr(_short(block.text, 60)))
            elif block.type == "tool_use":
                parts.append(f"[{block.name}]")
        usage = self.message.usage
        read = usage.cache_read_input_tokens or 0
        written = usage.cache_creation_input_tokens or 0
        # The whole prompt: the API's input_tokens counts only what came after the last cache
        # breakpoint, which is 0 when the cache covers the prompt ("in 0" reads as a bug).
        counts = f"in {usage.input_tokens + read + written:,}"
        if read or written:
            counts += f" (cache: {read:,} read, {written:,} written)"
        counts += f", out {usage.output_tokens:,}"
        return (
            f"← reply {self.turn}: {' '.join(parts) or '(empty)'}  "
            f"(stop: {self.message.stop_reason}; {counts})"
        )


@dataclass(frozen=True)
class ToolStarted(Event):
    tool_use_id: str
    name: str
    input: dict[str, Any]

    def __str__(self) -> str:
        args = _short(json.dumps(self.input, ensure_ascii=False), 70)
        return f"  ⚙ {self.name} {args}"


@dataclass(frozen=True)
class ToolFinished(Event):
    tool_use_id: str
    name: str
    content: str
    """The result as the model will see it (text; other blocks are summarised)."""
    is_error: bool

    def __str__(self) -> str:
        mark = "✗" if self.is_error else "✓"
        return f"  {mark} {self.name} → {_short(self.content, 70)}"


@dataclass(frozen=True)
class PermissionDecided(Event):
    tool_use_id: str
    name: str
    decision: str
    """``allow`` or ``deny``: what finally happened."""
    reason: str
    """Why: which rule or mode decided, and what the approver said if it was asked."""

    def __str__(self) -> str:
        return f"  🔒 {self.name}: {self.decision} ({self.reason})"


@dataclass(frozen=True)
class AwaitingApproval(Event):
    """A call needs a person's approval that will come later: the run stops here.

    Resume it with ``approval_id`` (``harness.approvals.resume``, chapter 09), in this
    process or another one. The calls after it in the same reply (``waiting``) have not run
    either; they run once it is decided."""

    approval_id: str
    tool_use_id: str
    name: str
    input: dict[str, Any]
    reason: str
    waiting: tuple[str, ...] = ()

    def __str__(self) -> str:
        args = _short(json.dumps(self.input, ensure_ascii=False), 50)
        later = f", {len(self.waiting)} later call(s) wait too" if self.waiting else ""
        return f"⏸ awaiting approval {self.approval_id}: {self.name} {args}{later}"


@dataclass(frozen=True)
class HookReported(Event):
    hook: str
    """Which hook: ``Stop``, ``PreToolUse``, ``PostToolUse``, ``PreCompact``, ..."""
    name: str
    """The tool, or ``""`` for a hook that is not about one."""
    outcome: str
    """``blocked``, ``changed input``, ``changed result``, ``continued``, or ``failed``."""
    detail: str

    def __str__(self) -> str:
        target = f" {self.name}" if self.name else ""
        return f"  ⚑ {self.hook}{target}: {self.outcome} ({_short(self.detail, 60)})"


@dataclass(frozen=True)
class TurnEnded(Event):
    turn: int
    stop_reason: str | None

    def __str__(self) -> str:
        return f"■ done after {self.turn} model call(s): {self.stop_reason}"


@dataclass(frozen=True)
class MaxTurnsReached(Event):
    max_turns: int

    def __str__(self) -> str:
        return f"■ stopped: max_turns ({self.max_turns}) reached"


@dataclass(frozen=True)
class PromptRefused(Event):
    reason: str
    """Why the prompt was not sent; the conversation was left as it was."""

    def __str__(self) -> str:
        return f"■ prompt refused: {self.reason}"


@dataclass(frozen=True)
class RewriteRefused(Event):
    plugin: str
    """The plugin whose ``before_request`` returned the conversation."""
    reason: str
    """What the API would have refused in it; the conversation was left as it was."""

    def __str__(self) -> str:
        return f"⚠ {self.plugin}: rewrite refused ({_short(self.reason, 70)})"


def describe_failure(hook: Callable[..., Any], error: BaseException) -> str:
    """How a hook that raised is reported (a broken hook never stops the loop)."""
    label = getattr(hook, "__name__", type(hook).__name__)
    return f"hook {label} raised {type(error).__name__}: {error}"
