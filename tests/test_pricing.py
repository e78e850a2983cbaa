"""Prices as dated data, and a request's cost split the way the bill splits it."""

from __future__ import annotations

from datetime import date

import pytest
from anthropic.types import CacheCreation, Usage

from harness.pricing import PRICES, Cost, cost_of, price_of


def usage(
    input: int = 0,
    output: int = 0,
    cache_write: int = 0,
    cache_write_1h: int | None = None,
    cache_read: int = 0,
) -> Usage:
    breakdown = (
        None
        if cache_write_1h is None
        else CacheCreation(
            ephemeral_5m_input_tokens=cache_write - cache_write_1h,
            ephemeral_1h_input_tokens=cache_write_1h,
        )
    )
    return Usage(
        input_tokens=input,
        output_tokens=output,
        cache_creation_input_tokens=cache_write,
        cache_read_input_tokens=cache_read,
        cache_creation=breakdown,
    )


# --- price_of ---------------------------------------------------------------------------


def test_sonnet_4_5_costs_3_in_and_15_out_per_million() -> None:
    price = price_of("claude-sonnet-4-5")
    assert (price.input, price.output) == (3.00, 15.00)


def test_dated_model_id_has_the_price_of_its_alias() -> None:
    assert price_of("claude-sonnet-4-5-20250929") == price_of("claude-sonnet-4-5")


def test_sonnet_4_0_alias_is_sonnet_4() -> None:
    assert price_of("claude-sonnet-4-0") == price_of("claude-sonnet-4")
    assert price_of("claude-sonnet-4-20250514") == price_of("claude-sonnet-4")


def test_unknown_model_raises_key_error_naming_the_known_ones() -> None:
    with pytest.raises(KeyError) as raised:
        price_of("claude-imaginary-9")
    message = str(raised.value)
    assert "claude-imaginary-9" in message
    assert "claude-sonnet-4-5" in message
    assert "claude-haiku-4-5" in message


def test_sonnet_5_5_cache_read_is_0_20_the_day_before_the_price_change() -> None:
    assert price_of("claude-sonnet-5-5", on=date(2026, 10, 6)).cache_read == 0.20


def test_sonnet_5_5_cache_read_is_0_10_from_2026_10_07() -> None:
    assert price_of("claude-sonnet-5-5", on=date(2026, 10, 7)).cache_read == 0.10


def test_prices_default_to_the_table_date_which_is_after_the_change() -> None:
    assert price_of("claude-sonnet-5-5").cache_read == 0.10


def test_sonnet_5_5_price_change_touches_only_cache_reads() -> None:
    before = price_of("claude-sonnet-5-5", on=date(2026, 10, 6))
    after = price_of("claude-sonnet-5-5", on=date(2026, 10, 7))
    assert before.model_dump(exclude={"cache_read", "since"}) == after.model_dump(
        exclude={"cache_read", "since"}
    )


@pytest.mark.parametrize("model", sorted(PRICES))
def test_cache_writes_cost_1_25x_for_5_minutes_and_2x_for_an_hour(model: str) -> None:
    # The documented multipliers still hold for writes on every model in the table; a typo in
    # the table shows up here.
    for price in PRICES[model]:
        assert price.cache_write_5m == pytest.approx(1.25 * price.input)
        assert price.cache_write_1h == pytest.approx(2 * price.input)


@pytest.mark.parametrize("model", sorted(PRICES))
def test_cache_reads_cost_at_most_a_tenth_of_input(model: str) -> None:
    for price in PRICES[model]:
        assert price.cache_read <= 0.1 * price.input + 1e-12


@pytest.mark.parametrize("model", sorted(PRICES))
def test_price_rows_are_in_date_order(model: str) -> None:
    dates = [price.since for price in PRICES[model]]
    assert dates == sorted(dates)


# --- cost_of ----------------------------------------------------------------------------


def test_a_million_input_tokens_on_sonnet_4_5_cost_3_dollars() -> None:
    cost = cost_of(usage(input=1_000_000), "claude-sonnet-4-5")
    assert cost == Cost(input=3.0)
    assert cost.total == pytest.approx(3.0)


def test_a_million_output_tokens_on_sonnet_4_5_cost_15_dollars() -> None:
    assert cost_of(usage(output=1_000_000), "claude-sonnet-4-5").output == pytest.approx(15.0)


def test_cost_splits_input_cache_writes_reads_and_output() -> None:
    # On Sonnet 4.5, by hand:
    #   input        200,000 x $3.00/M                      = $0.60
    #   cache write  200,000 x $3.75/M (5 min)
    #              + 100,000 x $6.00/M (1 hour)  = 0.75 + 0.60 = $1.35
    #   cache read 1,000,000 x $0.30/M                      = $0.30
    #   output        10,000 x $15.00/M                     = $0.15
    cost = cost_of(
        usage(
            input=200_000,
            cache_write=300_000,
            cache_write_1h=100_000,
            cache_read=1_000_000,
            output=10_000,
        ),
        "claude-sonnet-4-5",
    )
    assert cost.input == pytest.approx(0.60)
    assert cost.cache_write == pytest.approx(1.35)
    assert cost.cache_read == pytest.approx(0.30)
    assert cost.output == pytest.approx(0.15)
    assert cost.total == pytest.approx(2.40)


def test_cache_writes_without_a_breakdown_are_billed_at_the_5_minute_price() -> None:
    # 400,000 x $6.25/M on Opus 4.5 = $2.50
    cost = cost_of(usage(cache_write=400_000), "claude-opus-4-5")
    assert cost.cache_write == pytest.approx(2.50)


def test_one_hour_writes_cost_more_than_five_minute_writes() -> None:
    five = cost_of(usage(cache_write=100_000, cache_write_1h=0), "claude-haiku-4-5")
    hour = cost_of(usage(cache_write=100_000, cache_write_1h=100_000), "claude-haiku-4-5")
    # $1.25/M vs $2.00/M on Haiku 4.5
    assert (five.cache_write, hour.cache_write) == (pytest.approx(0.125), pytest.approx(0.20))


def test_cache_reads_are_cheaper_after_the_sonnet_5_5_price_change() -> None:
    reads = usage(cache_read=1_000_000)
    before = cost_of(reads, "claude-sonnet-5-5", on=date(2026, 10, 6))
    after = cost_of(reads, "claude-sonnet-5-5", on=date(2026, 10, 7))
    assert (before.cache_read, after.cache_read) == (pytest.approx(0.20), pytest.approx(0.10))


def test_cost_of_an_unknown_model_raises_key_error() -> None:
    with pytest.raises(KeyError):
        cost_of(usage(input=1), "gpt-4")


def test_costs_add_field_by_field() -> None:
    total = Cost(input=1, cache_write=2, cache_read=3, output=4) + Cost(
        input=10, cache_write=20, cache_read=30, output=40
    )
    assert total == Cost(input=11, cache_write=22, cache_read=33, output=44)
    assert total.total == 110


def test_an_empty_usage_costs_nothing() -> None:
    assert cost_of(usage(), "claude-opus-5").total == 0


# --- the table against a maintained source ---------------------------------------------------


def _base(value: object) -> float:
    """A genai-prices price: a number, or tiered prices whose base tier we use."""
    return float(getattr(value, "base", value))  # type: ignore[arg-type]


@pytest.mark.parametrize("model", sorted(PRICES))
def test_every_current_price_matches_genai_prices(model: str) -> None:
    # genai-prices (pydantic's maintained price data, bundled with the package, so offline)
    # is the cross-check: when a price changes, this test says which row is out of date.
    # It keeps current prices only, so the dated history stays in our table.
    genai_prices = pytest.importorskip("genai_prices")
    found = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=1_000, output_tokens=1_000),
        model_ref=model,
        provider_id="anthropic",
    ).model_price
    ours = price_of(model)
    theirs = (
        _base(found.input_mtok),
        _base(found.cache_write_mtok),
        _base(found.cache_write_1h_mtok),
        _base(found.cache_read_mtok),
        _base(found.output_mtok),
    )
    assert (ours.input, ours.cache_write_5m, ours.cache_write_1h, ours.cache_read, ours.output) == (
        pytest.approx(theirs)
    )


def test_the_price_table_shows_each_model_once_with_its_earlier_price() -> None:
    from harness.notebook import price_table

    lines = str(price_table()).splitlines()[3:]
    names = [line.split()[0] for line in lines]
    assert sorted(names) == sorted(PRICES)
    (sonnet_5_5,) = [line for line in lines if line.startswith("claude-sonnet-5-5 ")]
    assert "0.10" in sonnet_5_5 and "cache read 0.20 before 2026-10-07" in sonnet_5_5
