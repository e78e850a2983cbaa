"""Chapter 10: subagents and forks."""

from __future__ import annotations

from harness import messages as m
from harness.events import Event, MaxTurnsReached, TurnEnded
from harness.subagents import BudgetSpent

PLACEHOLDER = "[Not run in this fork: the parent conversation runs this call.]"

CUT = ("max_tokens", "model_context_window_exceeded", "pause_turn")


def status_of(events: list[Event]) -> str:
    """Exercise 1: 'complete', 'partial' or 'failed', from how a child's run ended."""
    if not events:
        return "failed"  # it never ran
    last = events[-1]
    if isinstance(last, TurnEnded):
        if last.stop_reason in CUT:
            return "partial"  # its last reply was cut short: keep what it wrote
        if last.stop_reason == "refusal":
            return "failed"
        return "complete"
    if isinstance(last, (MaxTurnsReached, BudgetSpent)):
        return "partial"  # stopped mid-work: the capsule carries what it did so far
    return "failed"


def fork_messages_for(parent_messages: list[m.MessageDict], directive: str) -> list[m.MessageDict]:
    """Exercise 2: a fork child's messages, sharing the parent's bytes up to the directive."""
    out = list(parent_messages)  # a new list; the parent's messages are reused, not changed
    last = out[-1]
    pending = m.tool_uses(last) if last["role"] == "assistant" else []
    results = [m.tool_result(str(use["id"]), PLACEHOLDER) for use in pending]
    out.append(m.user([*results, m.text(directive)]))
    return out
