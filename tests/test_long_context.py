"""Chapter 05's cost-per-turn model of a long session: left to grow, a turn costs in
proportion to its prompt; compacted, the prompt and the cost stay bounded; and every dollar
of every turn is one the meter recorded."""

from __future__ import annotations

import itertools
import math

import pytest
from anthropic.types import Usage
from hypothesis import given
from hypothesis import strategies as st

from harness.model import DEFAULT_MODEL
from harness.notebook.long_context import LongSession, session_cost
from harness.pricing import cost_of, price_of

SESSION = LongSession()
MILLION = 1_000_000


def test_left_to_grow_a_turn_costs_more_by_the_same_amount_every_turn() -> None:
    turns = SESSION.turns_to_fill(MILLION)
    grown = session_cost(DEFAULT_MODEL, SESSION, turns=turns)
    price = price_of(DEFAULT_MODEL)
    # From turn 2 on, a turn reads the previous prompt (growth more every turn) and writes
    # and outputs the same amounts: its cost is linear in its prompt.
    step = SESSION.growth * price.cache_read / 1e6
    costs = [turn.cost for turn in grown.turns]
    for earlier, later in itertools.pairwise(costs[1:]):
        assert later - earlier == pytest.approx(step, rel=1e-9, abs=1e-12)
    assert [turn.prompt for turn in grown.turns] == [
        SESSION.uncompacted_prompt(n) for n in range(1, turns + 1)
    ]
    assert grown.largest_prompt <= MILLION < grown.largest_prompt + SESSION.growth
    assert grown.compactions == 0


def test_a_turn_is_priced_by_the_price_table_under_the_moving_breakpoint_rule() -> None:
    grown = session_cost(DEFAULT_MODEL, SESSION, turns=3)
    third = Usage(
        input_tokens=0,
        cache_read_input_tokens=SESSION.uncompacted_prompt(2),
        cache_creation_input_tokens=SESSION.growth,
        output_tokens=SESSION.output,
    )
    first = Usage(
        input_tokens=0,
        cache_read_input_tokens=0,
        cache_creation_input_tokens=SESSION.first,
        output_tokens=SESSION.output,
    )
    assert grown.turns[2].cost == pytest.approx(cost_of(third, DEFAULT_MODEL).total)
    assert grown.turns[0].cost == pytest.approx(cost_of(first, DEFAULT_MODEL).total)


def test_compacted_the_prompt_and_the_cost_of_a_turn_stay_bounded() -> None:
    turns = SESSION.turns_to_fill(MILLION)
    compacted = session_cost(DEFAULT_MODEL, SESSION, turns=turns, compact_at=160_000)
    grown = session_cost(DEFAULT_MODEL, SESSION, turns=turns)
    assert compacted.largest_prompt <= 160_000
    # After the first (which writes its whole prompt), a turn that did not compact never costs
    # more than the uncompacted turn at the threshold.
    at_threshold = next(t.cost for t in grown.turns if t.prompt == 160_000)
    assert max(t.cost for t in compacted.turns[1:] if not t.compacted) == at_threshold
    # Compactions come at a steady rhythm: one every (threshold - after) / growth turns or so.
    rhythm = (160_000 - SESSION.after) // SESSION.growth + 1
    assert compacted.compactions == (turns - SESSION.turns_to_fill(160_000) - 1) // rhythm + 1
    assert compacted.total < grown.total


def test_a_compacted_turn_pays_for_the_summary_and_for_writing_the_new_context() -> None:
    compacted = session_cost(DEFAULT_MODEL, SESSION, turns=60, compact_at=160_000)
    index = next(i for i, t in enumerate(compacted.turns) if t.compacted)
    turn = compacted.turns[index]
    before = compacted.turns[index - 1].prompt
    summary = Usage(
        input_tokens=0,
        cache_read_input_tokens=before,
        cache_creation_input_tokens=SESSION.growth + SESSION.instruction,
        output_tokens=SESSION.summary_output,
    )
    request = Usage(
        input_tokens=0,
        cache_read_input_tokens=SESSION.fixed,
        cache_creation_input_tokens=SESSION.after - SESSION.fixed,
        output_tokens=SESSION.output,
    )
    expected = cost_of(summary, DEFAULT_MODEL).total + cost_of(request, DEFAULT_MODEL).total
    assert turn.prompt == SESSION.after
    assert turn.cost == pytest.approx(expected)


sessions = st.builds(
    LongSession,
    first=st.integers(1_000, 50_000),
    fixed=st.integers(0, 1_000),
    growth=st.integers(100, 20_000),
    output=st.integers(0, 4_000),
    instruction=st.integers(0, 1_000),
    summary_output=st.integers(0, 20_000),
    after=st.integers(1_000, 60_000),
)


@given(sessions, st.integers(1, 400), st.one_of(st.none(), st.integers(61_000, 400_000)))
def test_the_turns_add_up_to_what_the_meter_recorded(
    session: LongSession, turns: int, compact_at: int | None
) -> None:
    result = session_cost(DEFAULT_MODEL, session, turns=turns, compact_at=compact_at)
    assert len(result.turns) == turns
    assert len(result.meter.calls) == turns + result.compactions
    assert math.isclose(sum(t.cost for t in result.turns), result.total, rel_tol=1e-9)
    if compact_at is not None:
        assert result.largest_prompt <= compact_at


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"growth": 0}, "growth must be positive"),
        ({"output": -1}, "output cannot be negative"),
        ({"fixed": 30_000}, "fixed"),
    ],
)
def test_a_session_that_cannot_be_is_refused(changes: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LongSession(**changes)


def test_a_threshold_that_would_compact_every_turn_is_refused() -> None:
    with pytest.raises(ValueError, match="every turn would compact"):
        session_cost(DEFAULT_MODEL, SESSION, turns=10, compact_at=SESSION.after)
    with pytest.raises(ValueError, match="turns must be at least 1"):
        session_cost(DEFAULT_MODEL, SESSION, turns=0)


def test_a_model_without_a_price_is_refused() -> None:
    with pytest.raises(KeyError, match="no price known"):
        session_cost("claude-unknown-1", SESSION, turns=2)
