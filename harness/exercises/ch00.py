"""Chapter 00's exercises: price a turn by hand, and tell the failures apart."""

from __future__ import annotations

import math
from collections.abc import Callable

from anthropic.types import CacheCreation, Usage

from harness import pricing
from harness.exercises import NotYet, exercise, forbid, hints, refers_to
from harness.model import faults

# -- exercise 1: price a turn by hand -----------------------------------------------------------


def _usage(inp: int, out: int, read: int = 0, w5: int = 0, w1: int = 0) -> Usage:
    return Usage(
        input_tokens=inp,
        output_tokens=out,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=w5 + w1,
        cache_creation=CacheCreation(ephemeral_5m_input_tokens=w5, ephemeral_1h_input_tokens=w1),
    )


# Each case exercises one part of the arithmetic: plain input and output, cache reads, 5-minute
# and 1-hour writes, a dated model id, a price that changed on a date, and two usages without
# the `cache_creation` breakdown (None): one built with only input and output tokens, as the
# chapter's plot builds them, and one whose writes are all 5-minute writes.
TURN_COST_CASES: list[tuple[Usage, str]] = [
    (_usage(1_200, 300), "claude-sonnet-4-6"),
    (_usage(50_000, 800), "claude-haiku-4-5"),
    (_usage(40, 2_000, read=60_000, w5=3_000), "claude-opus-4-7"),
    (_usage(10, 500, w5=4_000, w1=6_000), "claude-haiku-4-5"),
    (_usage(5, 900, read=120_000), "claude-sonnet-5-5"),
    (_usage(7_000, 64_000), "claude-sonnet-4-5-20250929"),
    (Usage(input_tokens=3_000, output_tokens=400), "claude-sonnet-4-6"),
    (
        Usage(
            input_tokens=20,
            output_tokens=600,
            cache_read_input_tokens=30_000,
            cache_creation_input_tokens=8_000,
            cache_creation=None,
        ),
        "claude-haiku-4-5",
    ),
]

_TURN_COST_HINT = (
    "each kind of token in the usage has its own price in pricing.price_of(model); the "
    "chapter's table of usage fields says what each field counts, the exercise says how the "
    "cache writes split into two durations, and the prices are per million tokens."
)
_TURN_COST_FIRST = (
    "turn_cost(usage with input 1,200 and output 300, 'claude-sonnet-4-6') should be $0.0081: "
    "Sonnet 4.6 charges $3 per million input tokens and $15 per million output tokens."
)
_TURN_COST_RECIPE = """\
1. price = pricing.price_of(model): USD per million tokens for each kind of token.
2. written = usage.cache_creation_input_tokens or 0 (the field can be None).
3. written_1h = usage.cache_creation.ephemeral_1h_input_tokens when usage.cache_creation is
   set; when it is None there is no breakdown, so written_1h = 0 (every write is a 5-minute
   write).
4. Add up, each count times its price: input_tokens * price.input,
   (written - written_1h) * price.cache_write_5m, written_1h * price.cache_write_1h,
   (usage.cache_read_input_tokens or 0) * price.cache_read, output_tokens * price.output.
5. Divide the sum by 1_000_000 and return it."""


@exercise("turn_cost", _TURN_COST_HINT, first=_TURN_COST_FIRST, number=1)
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
    if usage.cache_creation is None:
        split = "usage.cache_creation is None"
    else:
        split = f"1-hour {usage.cache_creation.ephemeral_1h_input_tokens:,}"
    return (
        f"input {usage.input_tokens:,}, output {usage.output_tokens:,}, cache read "
        f"{usage.cache_read_input_tokens or 0:,}, cache write "
        f"{usage.cache_creation_input_tokens or 0:,} ({split})"
    )


# -- exercise 2: what to do after a failure -----------------------------------------------------

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
        ("503 service unavailable", faults.status_error(503), "back off"),
        ("400 prompt too long", faults.prompt_too_long(212_000, 200_000), "compact"),
        (
            "400 invalid request",
            faults.invalid_request("messages.1: `tool_use` ids were found without results"),
            "stop",
        ),
        ("401 bad key", faults.authentication_error(), "stop"),
        ("404 unknown model", faults.status_error(404, "model: claude-sonet-4-6"), "stop"),
    ]


_NEXT_STEP_HINT = (
    "tell the failures apart by the SDK's exception classes first (the chapter's failures "
    "each showed theirs, and some classes are subclasses of others); not every failure has a "
    "status code, and only one kind of 400 is worth compacting for."
)
_NEXT_STEP_FIRST = (
    "next_step(faults.rate_limited(retry_after=30)) should be 'wait': a 429 says how long to "
    "wait before the same request can succeed."
)
_NEXT_STEP_RECIPE = """\
Test the exception's class, in this order, and return at the first that matches:
1. anthropic.RateLimitError (429) -> "wait" (retry-after says how long, when it is there).
2. anthropic.APIConnectionError -> "back off": no answer came (APITimeoutError is one), so
   there is no status code to read.
3. anthropic.InternalServerError -> "back off": every 5xx, 529's OverloadedError and 503's
   ServiceUnavailableError included.
4. anthropic.BadRequestError whose str(error) contains "prompt is too long" -> "compact".
5. Anything else (another 400, 401, 403, 404, ...) -> "stop": the same request would fail the
   same way."""


@exercise("next_step", _NEXT_STEP_HINT, first=_NEXT_STEP_FIRST, number=2)
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


hint = hints(__name__, {1: _TURN_COST_RECIPE, 2: _NEXT_STEP_RECIPE})

__all__ = [
    "NEXT_STEPS",
    "TURN_COST_CASES",
    "check_next_step",
    "check_turn_cost",
    "hint",
    "next_step_cases",
]
