"""What each turn of a long session costs, compacted or left to grow (chapter 05).

A window of a million tokens does not make a million-token prompt a good idea: every turn sends
the whole conversation again, so a turn costs in proportion to the prompt. This module works
that out in numbers, without running a session: a session whose prompt grows by the same
amount every turn, priced with the harness's own price table (:func:`harness.pricing.cost_of`,
through a :class:`~harness.pricing.CostMeter`) and chapter 03's cache rule for a breakpoint that
moves with the conversation: each request reads the previous request's prompt from the cache and
writes what was added since, at the 5-minute write price.

Left to grow, the cost of a turn rises with the prompt. Compacted at a threshold, a summary
request (the conversation plus the instruction, read from the cache, and a summary written at
the output price) replaces the conversation with a smaller one (the parts no compaction touches,
the summary, the files read again), whose first request writes it to the cache again. What the
model leaves out is listed in :class:`LongSession`'s docstring.
"""

from __future__ import annotations

from dataclasses import dataclass

from anthropic.types import Usage

from harness.pricing import CostMeter


@dataclass(frozen=True)
class LongSession:
    """The shape of a long coding session, in tokens. Simplified on purpose: every turn adds
    the same ``growth`` and writes the same ``output``; the cache never expires (each request
    comes within five minutes of the last); every summary is ``summary_output`` long and leaves
    a prompt of ``after`` tokens; no tool result is cleared between compactions (no
    microcompact); and each model has one price whatever the prompt's size (the price table has
    no long-context tier)."""

    first: int = 20_000
    """The first request's prompt: tool definitions, system prompt, your task."""
    fixed: int = 15_000
    """The start of the prompt that no compaction changes (tools and system prompt): a request
    after a compaction still reads it from the cache."""
    growth: int = 4_000
    """What each turn adds to the prompt: the model's reply and the tool results it asked for."""
    output: int = 500
    """Output tokens of each reply."""
    instruction: int = 250
    """The compaction instruction added to the summary request (about ``COMPACT_INSTRUCTION``)."""
    summary_output: int = 8_000
    """Output tokens of each summary."""
    after: int = 40_000
    """The prompt after a compaction: the fixed part, the summary, the files read again."""

    def __post_init__(self) -> None:
        for name in ("first", "growth", "after"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)}")
        for name in ("output", "instruction", "summary_output"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} cannot be negative, not {getattr(self, name)}")
        if not 0 <= self.fixed <= min(self.first, self.after):
            raise ValueError(
                f"fixed ({self.fixed:,}) is part of every prompt: at most first "
                f"({self.first:,}) and after ({self.after:,})"
            )

    def uncompacted_prompt(self, turn: int) -> int:
        """The prompt of turn ``turn`` (from 1) if nothing is ever compacted."""
        return self.first + (turn - 1) * self.growth

    def turns_to_fill(self, window: int) -> int:
        """How many turns fit before the uncompacted prompt would pass ``window`` tokens."""
        if window < self.first:
            raise ValueError(f"the first request ({self.first:,}) is over the window ({window:,})")
        return (window - self.first) // self.growth + 1


@dataclass(frozen=True)
class TurnCost:
    """One turn of the loop: the request it sent and what the turn cost."""

    turn: int
    prompt: int
    """Prompt tokens of the turn's request."""
    cost: float
    """USD: the turn's request, plus the summary request before it when it compacted."""
    compacted: bool
    """A compaction (a summary request) came just before this turn's request."""


@dataclass(frozen=True)
class SessionCost:
    """Every turn of a session, and the meter that priced every request."""

    turns: tuple[TurnCost, ...]
    meter: CostMeter
    """Every request, summary requests included, in the order sent."""

    @property
    def total(self) -> float:
        """USD for the whole session."""
        return self.meter.total.total

    @property
    def compactions(self) -> int:
        return sum(turn.compacted for turn in self.turns)

    @property
    def largest_prompt(self) -> int:
        return max((turn.prompt for turn in self.turns), default=0)


def _usage(*, read: int, written: int, output: int) -> Usage:
    """A request's usage under the moving-breakpoint rule: nothing uncached."""
    return Usage(
        input_tokens=0,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=written,
        output_tokens=output,
    )


def session_cost(
    model: str, session: LongSession, *, turns: int, compact_at: int | None = None
) -> SessionCost:
    """Price ``turns`` turns of ``session`` on ``model``, compacting before any request whose
    prompt would be over ``compact_at`` tokens (``None``: never compact)."""
    if turns < 1:
        raise ValueError(f"turns must be at least 1, not {turns}")
    if compact_at is not None and compact_at <= max(session.after, session.first):
        raise ValueError(
            f"compact_at ({compact_at:,}) must be above the first prompt ({session.first:,}) "
            f"and the prompt a compaction leaves ({session.after:,}), or every turn would compact"
        )
    meter = CostMeter()
    out: list[TurnCost] = []
    previous = 0  # the previous request's prompt: what the cache holds
    for turn in range(1, turns + 1):
        prompt = session.first if turn == 1 else previous + session.growth
        before = len(meter.calls)
        compacted = compact_at is not None and prompt > compact_at
        if compacted:  # the summary request: the conversation so far plus the instruction
            written = prompt - previous + session.instruction
            summary = _usage(read=previous, written=written, output=session.summary_output)
            meter.record(model, summary)
            previous, prompt = session.fixed, session.after  # only the fixed part is still cached
        request = _usage(read=previous, written=prompt - previous, output=session.output)
        meter.record(model, request)
        priced = [call.cost for call in meter.calls[before:]]
        if any(cost is None for cost in priced):
            raise KeyError(f"no price known for model {model!r}")
        cost = sum(c.total for c in priced if c is not None)
        out.append(TurnCost(turn, prompt, cost, compacted))
        previous = prompt
    return SessionCost(tuple(out), meter)
