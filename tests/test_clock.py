"""The injected clock: FakeClock moves only when told to, and records every sleep."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.clock import FAKE_EPOCH, Clock, FakeClock, RealClock, isoformat


def test_fake_epoch_is_the_first_second_of_2026_utc() -> None:
    assert datetime(2026, 1, 1, tzinfo=UTC).timestamp() == FAKE_EPOCH


def test_fake_clock_starts_at_the_fake_epoch_by_default() -> None:
    assert FakeClock().now() == FAKE_EPOCH


def test_fake_clock_starts_where_it_is_told() -> None:
    assert FakeClock(start=1_000.0).now() == 1_000.0


def test_fake_clock_does_not_move_on_its_own() -> None:
    clock = FakeClock()
    first = clock.now()
    time.sleep(0.01)
    assert clock.now() == first


def test_sleep_advances_now_by_the_time_slept() -> None:
    clock = FakeClock()
    clock.sleep(30)
    assert clock.now() == FAKE_EPOCH + 30


def test_sleeps_are_recorded_in_order() -> None:
    clock = FakeClock()
    for seconds in (0.5, 1.0, 30):
        clock.sleep(seconds)
    assert clock.sleeps == [0.5, 1.0, 30]


def test_sleep_takes_no_real_time() -> None:
    clock = FakeClock()
    started = time.monotonic()
    clock.sleep(3600)
    assert time.monotonic() - started < 1


def test_sleeping_zero_seconds_is_allowed_and_recorded() -> None:
    clock = FakeClock()
    clock.sleep(0)
    assert clock.sleeps == [0]
    assert clock.now() == FAKE_EPOCH


def test_advance_moves_time_without_recording_a_sleep() -> None:
    clock = FakeClock()
    clock.advance(300)
    assert clock.now() == FAKE_EPOCH + 300
    assert clock.sleeps == []


def test_sleep_refuses_a_negative_time() -> None:
    clock = FakeClock()
    with pytest.raises(ValueError, match="negative"):
        clock.sleep(-1)
    assert clock.now() == FAKE_EPOCH
    assert clock.sleeps == []


def test_advance_refuses_a_negative_time() -> None:
    clock = FakeClock()
    with pytest.raises(ValueError, match="forward"):
        clock.advance(-0.001)
    assert clock.now() == FAKE_EPOCH


@pytest.mark.parametrize("seconds", [math.nan, math.inf])
def test_sleep_refuses_a_non_finite_time_as_time_sleep_does(seconds: float) -> None:
    clock = FakeClock()
    with pytest.raises(ValueError):
        clock.sleep(seconds)
    assert clock.now() == FAKE_EPOCH


@pytest.mark.parametrize("seconds", [math.nan, math.inf])
def test_advance_refuses_a_non_finite_time(seconds: float) -> None:
    clock = FakeClock()
    with pytest.raises(ValueError):
        clock.advance(seconds)
    assert clock.now() == FAKE_EPOCH


@given(st.lists(st.floats(min_value=0, max_value=1e6), max_size=20))
def test_now_is_the_start_plus_everything_slept(sleeps: list[float]) -> None:
    clock = FakeClock()
    for seconds in sleeps:
        clock.sleep(seconds)
    assert clock.sleeps == sleeps
    assert clock.now() == pytest.approx(FAKE_EPOCH + sum(sleeps))


def test_isoformat_of_the_fake_epoch_is_claude_code_transcript_format() -> None:
    assert isoformat(FAKE_EPOCH) == "2026-01-01T00:00:00.000Z"


def test_isoformat_keeps_milliseconds() -> None:
    assert isoformat(FAKE_EPOCH + 61.25) == "2026-01-01T00:01:01.250Z"


def test_isoformat_is_in_utc_whatever_the_local_timezone() -> None:
    one_day = 24 * 3600
    assert isoformat(FAKE_EPOCH + one_day + 13 * 3600).startswith("2026-01-02T13:00:00")


def test_fake_clock_repr_shows_the_time_readably() -> None:
    clock = FakeClock()
    clock.sleep(90)
    assert repr(clock) == "FakeClock(2026-01-01T00:01:30.000Z)"


def test_real_clock_satisfies_the_clock_protocol() -> None:
    assert isinstance(RealClock(), Clock)


def test_fake_clock_satisfies_the_clock_protocol() -> None:
    assert isinstance(FakeClock(), Clock)


def test_real_clock_reads_the_machine_clock() -> None:
    before = time.time()
    now = RealClock().now()
    after = time.time()
    assert before <= now <= after


def test_real_clock_does_not_wait_for_zero_or_negative_sleeps() -> None:
    started = time.monotonic()
    RealClock().sleep(0)
    RealClock().sleep(-5)
    assert time.monotonic() - started < 0.5
