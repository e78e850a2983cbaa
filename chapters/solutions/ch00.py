"""Chapter 00: the model and the course."""

from __future__ import annotations

import anthropic
from anthropic.types import Usage

from harness import pricing


def turn_cost(usage: Usage, model: str) -> float:
    """Exercise 1: the total USD of one call, each kind of token at its own price."""
    price = pricing.price_of(model)
    written = usage.cache_creation_input_tokens or 0
    written_1h = usage.cache_creation.ephemeral_1h_input_tokens if usage.cache_creation else 0
    per_million = (
        usage.input_tokens * price.input
        + (written - written_1h) * price.cache_write_5m
        + written_1h * price.cache_write_1h
        + (usage.cache_read_input_tokens or 0) * price.cache_read
        + usage.output_tokens * price.output
    )
    return per_million / 1_000_000


def next_step(error: Exception) -> str:
    """Exercise 2: what a harness does after a failed call, by class first."""
    if isinstance(error, anthropic.RateLimitError):
        return "wait"  # for retry-after seconds when the header is there
    if isinstance(error, anthropic.APIConnectionError):  # timeouts are connection errors too
        return "back off"
    if isinstance(error, anthropic.InternalServerError):  # 500s and 529 (OverloadedError)
        return "back off"
    if isinstance(error, anthropic.BadRequestError) and "prompt is too long" in str(error):
        return "compact"
    return "stop"  # any other 4xx: the same request will fail the same way
