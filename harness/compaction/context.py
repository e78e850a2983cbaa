"""Knowing where you stand: how big the conversation is before the next request.

Counting tokens exactly needs the API (a round trip per request). Claude Code does what
this module does: it takes the exact figure the API gave for the last reply (its ``usage``:
the whole prompt plus the output, which is now part of the conversation) and adds an
estimate of only what was appended since (tool results, a new prompt). The estimate's
error is then confined to a few messages instead of the whole conversation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from anthropic.types import Message

from harness import tokens
from harness.loop import BaseAgent, Plugin
from harness.messages import MessageDict
from harness.pricing import prompt_tokens


@dataclass(frozen=True, eq=False)
class Anchor:
    """The last reply's exact size, and the conversation it measured."""

    index: int
    """Index of the assistant message that reply became."""
    tokens: int
    """Prompt plus output tokens of that reply, from its ``usage``."""
    prefix: tuple[MessageDict, ...] = ()
    """The message objects it measured (``messages[: index + 1]``). Compaction replaces the
    messages it changes with new objects, so a rewritten prefix is noticed here without every
    compaction having to say so (and holding the old objects keeps their ids from being
    reused by new ones)."""

    def holds_for(self, messages: Sequence[MessageDict]) -> bool:
        """Whether ``messages`` still starts with exactly the messages this anchor measured."""
        if self.index >= len(messages):
            return False
        if not self.prefix:
            return True
        return len(self.prefix) == self.index + 1 and all(
            a is b for a, b in zip(self.prefix, messages[: self.index + 1], strict=True)
        )


def context_size(
    messages: Sequence[MessageDict],
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    anchor: Anchor | None = None,
) -> int:
    """Tokens the next request will hold: anchored on the last usage if there is one."""
    if anchor is None or not anchor.holds_for(messages):
        return tokens.estimate_request(messages, system=system, tools=tools)
    added = sum(tokens.estimate_message(message) for message in messages[anchor.index + 1 :])
    return anchor.tokens + added


class ContextTracker(Plugin):
    """Keeps the anchor up to date; other plugins ask it how big the context is."""

    def __init__(self) -> None:
        self.anchor: Anchor | None = None

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        self.anchor = Anchor(
            len(agent.messages) - 1,
            prompt_tokens(reply.usage) + reply.usage.output_tokens,
            tuple(agent.messages),
        )

    def invalidate(self) -> None:
        """The conversation was rewritten: use the estimate alone until the next reply."""
        self.anchor = None

    def size(self, agent: BaseAgent) -> int:
        request = agent.request()
        return context_size(
            request.messages, system=request.system, tools=request.tools, anchor=self.anchor
        )


__all__ = ["Anchor", "ContextTracker", "context_size", "prompt_tokens"]
