"""A model that takes time: each reply waits on the clock as long as a real one would.

The scripted model answers at once, which is right for most chapters and wrong for two
questions of chapter 15: how long a session takes (the evals report wall time) and where the
time goes (a trace's waterfall). :class:`TimedModel` wraps any model and, once a reply is
back, waits on the session's clock: on a :class:`~harness.clock.FakeClock` that wait takes no
real time, so a session's wall time comes out the same on every run.

The figures are our choice, in the range people observe for Claude's current models rather
than a documented figure (the API documents none): about half a second before the first
token, a prompt read at about 20,000 tokens a second, and replies written at about 60 tokens a
second. A cache read is about ten times faster to take in than a fresh prompt (the prompt-
caching page says caching cuts latency for long prompts; it does not say by how much).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from anthropic.types import Message, Usage

from harness.clock import Clock
from harness.model.base import Model

FIRST_TOKEN_SECONDS = 0.5
"""Before the first token, whatever the request (our choice)."""
INPUT_TOKENS_PER_SECOND = 20_000.0
"""How fast a prompt that is not cached is taken in (our choice)."""
CACHED_SPEEDUP = 10.0
"""How much faster a cache read is taken in than a fresh prompt (our choice)."""
OUTPUT_TOKENS_PER_SECOND = 60.0
"""How fast a reply is written (our choice)."""


@dataclass(frozen=True)
class Latency:
    """How long a reply takes, from its usage."""

    first_token: float = FIRST_TOKEN_SECONDS
    input_per_second: float = INPUT_TOKENS_PER_SECOND
    cached_speedup: float = CACHED_SPEEDUP
    output_per_second: float = OUTPUT_TOKENS_PER_SECOND

    def seconds(self, usage: Usage) -> float:
        """The time a reply with ``usage`` takes, from the request to its last token."""
        fresh = usage.input_tokens + (usage.cache_creation_input_tokens or 0)
        cached = usage.cache_read_input_tokens or 0
        taken_in = (fresh + cached / self.cached_speedup) / self.input_per_second
        return self.first_token + taken_in + usage.output_tokens / self.output_per_second


class TimedModel:
    """``model``, whose every reply waits ``latency.seconds(reply.usage)`` on ``clock``.

    A call that fails (an overload, a prompt too long) fails after the first-token wait, as
    an API error comes back before any token. Everything else is ``model``'s own.
    """

    def __init__(self, model: Model, clock: Clock, latency: Latency | None = None) -> None:
        self.model = model
        self.clock = clock
        self.latency = latency or Latency()

    def create(
        self,
        *,
        model: str,
        max_tokens: int,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **extra: Any,
    ) -> Message:
        try:
            reply = self.model.create(
                model=model,
                max_tokens=max_tokens,
                messages=messages,
                system=system,
                tools=tools,
                **extra,
            )
        except Exception:
            self.clock.sleep(self.latency.first_token)
            raise
        self.clock.sleep(self.latency.seconds(reply.usage))
        return reply

    def count_tokens(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        return self.model.count_tokens(model=model, messages=messages, system=system, tools=tools)

    def __getattr__(self, name: str) -> Any:
        # The wrapped model's own attributes (a scripted model's requests, its window...).
        return getattr(self.model, name)
