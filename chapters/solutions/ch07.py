"""Chapter 07: session memory."""

from __future__ import annotations

from harness import messages as m
from harness import tokens


def due(context: int, at_last: int | None, calls_since: int) -> bool:
    """Exercise 1: 10K tokens first, then 5K tokens of growth; 3 tool calls each time."""
    if calls_since < 3:
        return False
    if at_last is None:
        return context >= 10_000
    return context - at_last >= 5_000


def cut_point(messages: list[m.MessageDict], min_tokens: int, min_messages: int) -> int:
    """Exercise 2: the first message to keep: enough tokens and messages, no pair split."""
    start, kept = len(messages), 0
    while start > 0 and (kept < min_tokens or len(messages) - start < min_messages):
        start -= 1
        kept += tokens.estimate_message(messages[start])
    while start > 0 and messages[start]["role"] == "user" and m.tool_results(messages[start]):
        start -= 1  # keep the reply whose calls these results answer
    return start
