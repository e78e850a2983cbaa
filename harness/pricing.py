"""What a request costs, from its ``usage``.

Prices are data, not multipliers in code: newer models no longer follow the old "cache read
is 0.1x input" rule exactly, and prices change on dates. The table below is the API's
pricing page as seen in November 2026 (USD per million tokens).
"""

from __future__ import annotations

import re
from datetime import date

from anthropic.types import Usage
from pydantic import BaseModel, ConfigDict

PRICES_AS_OF = date(2026, 11, 1)
PRICES_SOURCE = "Anthropic API pricing page, as seen 2026-11"


class Price(BaseModel):
    """USD per million tokens, for one model from one date on."""

    model_config = ConfigDict(frozen=True)

    input: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    output: float
    since: date = date(2000, 1, 1)


def _price(i: float, w5: float, w1: float, r: float, o: float, since: date | None = None) -> Price:
    return Price(
        input=i,
        cache_write_5m=w5,
        cache_write_1h=w1,
        cache_read=r,
        output=o,
        since=since or date(2000, 1, 1),
    )


_OPUS = _price(5.00, 6.25, 10.00, 0.50, 25.00)
_SONNET_4 = _price(3.00, 3.75, 6.00, 0.30, 15.00)
_SONNET_5 = _price(2.00, 2.50, 4.00, 0.20, 10.00)

# Model id -> prices, newest last. A model with a price change has two rows.
PRICES: dict[str, list[Price]] = {
    "claude-opus-4-5": [_OPUS],
    "claude-opus-4-6": [_OPUS],
    "claude-opus-4-7": [_OPUS],
    "claude-opus-4-8": [_OPUS],
    "claude-opus-5": [_OPUS],
    "claude-sonnet-4": [_SONNET_4],
    "claude-sonnet-4-5": [_SONNET_4],
    "claude-sonnet-4-6": [_SONNET_4],
    "claude-sonnet-5": [_SONNET_5],
    "claude-sonnet-5-5": [
        _SONNET_5,
        _price(2.00, 2.50, 4.00, 0.10, 10.00, since=date(2026, 10, 7)),
    ],
    "claude-haiku-4-5": [_price(1.00, 1.25, 2.00, 0.10, 5.00)],
    # Haiku 5.5's prices hold for prompts up to 100K tokens; longer prompts cost more.
    "claude-haiku-5-5": [_price(0.10, 0.125, 0.20, 0.01, 0.50)],
}


def price_of(model: str, on: date = PRICES_AS_OF) -> Price:
    """Prices for a model id (a dated id such as ``claude-sonnet-4-5-20250929`` works too)."""
    name = re.sub(r"-\d{8}$", "", model)
    if name == "claude-sonnet-4-0":
        name = "claude-sonnet-4"
    rows = PRICES.get(name)
    if rows is None:
        known = ", ".join(sorted(PRICES))
        raise KeyError(f"no price known for model {model!r}; known: {known}")
    current = [row for row in rows if row.since <= on]
    return (current or rows)[-1]


class Cost(BaseModel):
    """The cost of one request, in USD, split the way the bill splits it."""

    model_config = ConfigDict(frozen=True)

    input: float = 0.0
    cache_write: float = 0.0
    cache_read: float = 0.0
    output: float = 0.0

    @property
    def total(self) -> float:
        return self.input + self.cache_write + self.cache_read + self.output

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            input=self.input + other.input,
            cache_write=self.cache_write + other.cache_write,
            cache_read=self.cache_read + other.cache_read,
            output=self.output + other.output,
        )


def cost_of(usage: Usage, model: str, on: date = PRICES_AS_OF) -> Cost:
    """What one request cost: each kind of token at its own price.

    ``input_tokens`` counts only uncached prompt tokens; cache writes and reads are billed
    separately (``cache_creation_input_tokens``, ``cache_read_input_tokens``), the 1-hour
    share of writes at the 1-hour price.
    """
    p = price_of(model, on)
    per = 1_000_000
    writes = usage.cache_creation_input_tokens or 0
    writes_1h = usage.cache_creation.ephemeral_1h_input_tokens if usage.cache_creation else 0
    writes_5m = writes - writes_1h
    return Cost(
        input=usage.input_tokens * p.input / per,
        cache_write=(writes_5m * p.cache_write_5m + writes_1h * p.cache_write_1h) / per,
        cache_read=(usage.cache_read_input_tokens or 0) * p.cache_read / per,
        output=usage.output_tokens * p.output / per,
    )


def prompt_tokens(usage: Usage) -> int:
    """The whole prompt of a request: uncached input + cache writes + cache reads."""
    return (
        usage.input_tokens
        + (usage.cache_creation_input_tokens or 0)
        + (usage.cache_read_input_tokens or 0)
    )


class MeteredCall(BaseModel):
    """One model call's usage and what it cost."""

    model_config = ConfigDict(frozen=True)

    model: str
    usage: Usage
    cost: Cost | None
    """``None`` when the price table does not know the model (the run goes on regardless)."""

    @property
    def prompt_tokens(self) -> int:
        """The whole prompt: uncached input + cache writes + cache reads."""
        return prompt_tokens(self.usage)


class CostMeter(BaseModel):
    """Every model call of a run, with its cost; the agent keeps one (``agent.meter``)."""

    calls: list[MeteredCall] = []

    def record(self, model: str, usage: Usage) -> MeteredCall:
        try:
            cost: Cost | None = cost_of(usage, model)
        except KeyError:
            cost = None
        call = MeteredCall(model=model, usage=usage, cost=cost)
        self.calls.append(call)
        return call

    @property
    def total(self) -> Cost:
        """The cost of every priced call (see :attr:`unpriced` for the others)."""
        return sum((c.cost for c in self.calls if c.cost is not None), Cost())

    @property
    def unpriced(self) -> int:
        """How many calls used a model missing from the price table."""
        return sum(1 for c in self.calls if c.cost is None)

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def cache_read_tokens(self) -> int:
        return sum(c.usage.cache_read_input_tokens or 0 for c in self.calls)

    @property
    def cache_read_share(self) -> float:
        """Share of all prompt tokens that were read from the cache."""
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else 0.0
