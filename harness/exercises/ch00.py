"""Chapter 00's exercises: price a turn by hand, and tell the failures apart."""

from __future__ import annotations

import math
from collections.abc import Callable

from anthropic.types import CacheCreation, Usage

from harness import pricing
from harness.exercises import NotYet, exercise, forbid, refers_to
from harness.model import faults


def _usage(inp: int, out: int, read: int = 0, w5: int = 0, w1: int = 0) -> Usage:
    return Usage(
        input_tokens=inp,
        output_tokens=out,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=w5 + w1,
        cache_creation=CacheCreation(ephemeral_5m_input_tokens=w5, ephemeral_1h_input_tokens=w1),
    )


# Each case exercises one part of the arithmetic: plain input and output, cache reads, 5-minute
# and 1-hour writes, a dated model id, and a price that changed on a date.
TURN_COST_CASES: list[tuple[Usage, str]] = [
    (_usage(1_200, 300), "claude-sonnet-4-6"),
    (_usage(50_000, 800), "claude-haiku-4-5"),
    (_usage(40, 2_000, read=60_000, w5=3_000), "claude-opus-4-7"),
    (_usage(10, 500, w5=4_000, w1=6_000), "claude-haiku-4-5"),
    (_usage(5, 900, read=120_000), "claude-sonnet-5-5"),
    (_usage(7_000, 64_000), "claude-sonnet-4-5-20250929"),
]

_TURN_COST_HINT = (
    "prices are USD per million tokens; input_tokens already leaves out the cached tokens; "
    "usage.cache_creation.ephemeral_1h_input_tokens of the cache writes cost the 1-hour price, "
    "the rest the 5-minute price."
)


@exercise("turn_cost", _TURN_COST_HINT)
def check_turn_cost(turn_cost: Callable[[Usage, str], float]) -> str:
    """Exercise 1: ``turn_cost(usage, model)`` is the total USD of one call, done by hand."""
    if refers_to(turn_cost, pricing.cost_of):
        raise NotYet(
            "turn_cost calls pricing.cost_of, the very function it is checked against.",
            "do the arithmetic yourself from pricing.price_of(model).",
        )
    for usage, model in TURN_COST_CASES:
        expected = pricing.cost_of(usage, model).total
        with forbid(pricing, "cost_of", "turn_cost calls pricing.cost_of; do the arithmetic."):
            got = turn_cost(usage, model)
        if not isinstance(got, int | float) or not math.isclose(
            got, expected, rel_tol=1e-9, abs_tol=1e-12
        ):
            raise NotYet(f"for {model} and {_shown(usage)}, expected ${expected:.6f}, got {got!r}.")
    return f"turn_cost prices all {len(TURN_COST_CASES)} usages right"


def _shown(usage: Usage) -> str:
    w1 = usage.cache_creation.ephemeral_1h_input_tokens if usage.cache_creation else 0
    return (
        f"input {usage.input_tokens:,}, output {usage.output_tokens:,}, cache read "
        f"{usage.cache_read_input_tokens or 0:,}, cache write "
        f"{usage.cache_creation_input_tokens or 0:,} (1-hour {w1:,})"
    )


NEXT_STEPS = ("wait", "back off", "compact", "stop")


def next_step_cases() -> list[tuple[str, Exception, str]]:
    """(what it is, the error, the right next step): every failure chapter 00 shows, and more."""
    return [
        ("429 rate limited", faults.rate_limited(retry_after=30), "wait"),
        ("429 without retry-after", faults.rate_limited(retry_after=None), "wait"),
        ("529 overloaded", faults.overloaded(), "back off"),
        ("500 server error", faults.server_error(), "back off"),
        ("connection error", faults.connection_error(), "back off"),
        ("timeout", faults.timeout(), "back off"),
        ("400 prompt too long", faults.prompt_too_long(212_000, 200_000), "compact"),
        (
            "400 invalid request",
            faults.invalid_request("messages.1: `tool_use` ids were found without results"),
            "stop",
        ),
        ("401 bad key", faults.authentication_error(), "stop"),
    ]


@exercise(
    "next_step",
    "tell the failures apart by class first (RateLimitError, APIConnectionError, "
    "InternalServerError, BadRequestError); a connection error has no status code, and only "
    "a prompt-too-long 400 is worth compacting for.",
)
def check_next_step(next_step: Callable[[Exception], str]) -> str:
    """Exercise 2: ``next_step(error)`` says what a harness does after a failed call."""
    for what, error, expected in next_step_cases():
        got = next_step(error)
        if got not in NEXT_STEPS:
            raise NotYet(f"for a {what}, next_step returned {got!r}; answer one of {NEXT_STEPS}.")
        if got != expected:
            raise NotYet(
                f"for a {what} ({type(error).__name__}), expected {expected!r}, got {got!r}."
            )
    return f"next_step answers all {len(next_step_cases())} failures right"


__all__ = ["NEXT_STEPS", "TURN_COST_CASES", "check_next_step", "check_turn_cost", "next_step_cases"]
