"""Chapter 00's exercise checks: the solution passes, the stub and plausible slips do not."""

from __future__ import annotations

import anthropic
import pytest
from anthropic.types import Usage

from harness import pricing
from harness.exercises import ch00
from tests.solutions import load

solutions = load("ch00")


def stub(*args: object) -> float:
    raise NotImplementedError


def test_the_solutions_pass() -> None:
    assert ch00.check_turn_cost(solutions.turn_cost)
    assert ch00.check_next_step(solutions.next_step)


@pytest.mark.parametrize("check", [ch00.check_turn_cost, ch00.check_next_step])
def test_a_stub_is_told_not_yet_with_a_hint(check: object) -> None:
    verdict = check(stub)  # type: ignore[operator]
    assert not verdict
    assert str(verdict).startswith("not yet: ")
    assert "stub" in str(verdict) and "\nhint: " in str(verdict)


def test_turn_cost_that_calls_cost_of_is_refused() -> None:
    def shortcut(usage: Usage, model: str) -> float:
        return pricing.cost_of(usage, model).total

    verdict = ch00.check_turn_cost(shortcut)
    assert not verdict and "cost_of" in str(verdict)


def test_turn_cost_that_calls_cost_of_under_another_name_is_refused() -> None:
    from harness.pricing import cost_of as price_it

    def shortcut(usage: Usage, model: str) -> float:
        return price_it(usage, model).total

    assert not ch00.check_turn_cost(shortcut)


def test_turn_cost_with_every_write_at_the_5_minute_price_is_rejected() -> None:
    def slip(usage: Usage, model: str) -> float:
        p = pricing.price_of(model)
        return (
            usage.input_tokens * p.input
            + (usage.cache_creation_input_tokens or 0) * p.cache_write_5m
            + (usage.cache_read_input_tokens or 0) * p.cache_read
            + usage.output_tokens * p.output
        ) / 1_000_000

    verdict = ch00.check_turn_cost(slip)
    assert not verdict and "claude-haiku-4-5" in str(verdict)


def test_turn_cost_divided_by_a_thousand_is_rejected() -> None:
    def slip(usage: Usage, model: str) -> float:
        return float(solutions.turn_cost(usage, model)) * 1_000

    assert not ch00.check_turn_cost(slip)


def test_next_step_that_compacts_on_every_400_is_rejected() -> None:
    def slip(error: Exception) -> str:
        if isinstance(error, anthropic.BadRequestError):
            return "compact"
        return str(solutions.next_step(error))

    verdict = ch00.check_next_step(slip)
    assert not verdict and "400 invalid request" in str(verdict)


def test_next_step_that_reads_status_codes_only_is_told_what_it_raised() -> None:
    def slip(error: Exception) -> str:
        status = error.status_code  # type: ignore[attr-defined]  # connection errors have none
        return {429: "wait", 529: "back off", 500: "back off"}.get(status, "stop")

    verdict = ch00.check_next_step(slip)
    assert not verdict and "AttributeError" in str(verdict)


def test_next_step_that_forgets_529_is_a_server_error_is_rejected() -> None:
    def slip(error: Exception) -> str:
        if isinstance(error, anthropic.InternalServerError) and not isinstance(
            error, anthropic.OverloadedError
        ):
            return "back off"
        if isinstance(error, anthropic.OverloadedError):
            return "wait"
        return str(solutions.next_step(error))

    assert not ch00.check_next_step(slip)
