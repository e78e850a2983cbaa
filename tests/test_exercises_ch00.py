"""Chapter 00's exercise checks: the solution passes, the stub and plausible slips do not."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic.types import Usage

from harness import pricing
from harness.exercises import ch00
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch00")


def stub(*args: object) -> Any:
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


def test_a_stub_hears_the_first_case_and_where_the_recipe_is() -> None:
    verdict = str(ch00.check_turn_cost(stub))
    assert "first case: turn_cost(" in verdict and "$0.0081" in verdict
    assert "ch00.hint(1)" in verdict
    assert "ch00.hint(2)" in str(ch00.check_next_step(stub))


def test_hint_gives_each_recipe_and_refuses_an_unknown_number() -> None:
    assert "price_of" in str(ch00.hint(1)) and "1_000_000" in str(ch00.hint(1))
    assert "RateLimitError" in str(ch00.hint(2))
    with pytest.raises(ValueError, match="no exercise 3"):
        ch00.hint(3)


EQUIVALENT_TURN_COST: dict[str, str] = {}  # every mutant behaves differently: none listed
EQUIVALENT_NEXT_STEP: dict[str, str] = {}


def test_every_mutant_of_the_turn_cost_solution_is_caught() -> None:
    assert_exercise_caught("ch00", 1, EQUIVALENT_TURN_COST)


def test_every_mutant_of_the_next_step_solution_is_caught() -> None:
    assert_exercise_caught("ch00", 2, EQUIVALENT_NEXT_STEP)


# -- exercise 1: price a turn by hand -----------------------------------------------------------


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


def test_turn_cost_that_assumes_the_cache_creation_breakdown_is_always_there_is_rejected() -> None:
    """A usage built with only input and output tokens (as the chapter's plot builds them), or
    one from a response without the breakdown, has ``cache_creation=None``."""

    def slip(usage: Usage, model: str) -> float:
        p = pricing.price_of(model)
        written = usage.cache_creation_input_tokens or 0
        written_1h = usage.cache_creation.ephemeral_1h_input_tokens  # type: ignore[union-attr]
        return (
            usage.input_tokens * p.input
            + (written - written_1h) * p.cache_write_5m
            + written_1h * p.cache_write_1h
            + (usage.cache_read_input_tokens or 0) * p.cache_read
            + usage.output_tokens * p.output
        ) / 1_000_000

    verdict = ch00.check_turn_cost(slip)
    assert not verdict and "AttributeError" in str(verdict)


def test_turn_cost_that_ignores_cache_writes_without_a_breakdown_is_rejected() -> None:
    def slip(usage: Usage, model: str) -> float:
        if usage.cache_creation is None:
            p = pricing.price_of(model)
            return (usage.input_tokens * p.input + usage.output_tokens * p.output) / 1_000_000
        return float(solutions.turn_cost(usage, model))

    verdict = ch00.check_turn_cost(slip)
    assert not verdict and "usage.cache_creation is None" in str(verdict)


# -- exercise 2: what to do after a failure -----------------------------------------------------


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


def test_next_step_that_backs_off_on_every_failure_it_does_not_know_is_rejected() -> None:
    """ "Stop" only for the 4xx it names: a 404 for a misspelt model would be retried forever."""

    def slip(error: Exception) -> str:
        if isinstance(error, anthropic.RateLimitError):
            return "wait"
        if isinstance(error, anthropic.BadRequestError):
            return "compact" if "prompt is too long" in str(error) else "stop"
        if isinstance(error, anthropic.AuthenticationError):
            return "stop"
        return "back off"

    verdict = ch00.check_next_step(slip)
    assert not verdict and "404 unknown model" in str(verdict)


def test_next_step_that_backs_off_only_for_the_codes_it_has_seen_is_rejected() -> None:
    def slip(error: Exception) -> str:
        if isinstance(error, anthropic.APIConnectionError):
            return "back off"
        status = getattr(error, "status_code", None)
        if status in (500, 529):
            return "back off"
        return str(solutions.next_step(error)) if status != 503 else "stop"

    verdict = ch00.check_next_step(slip)
    assert not verdict and "503 service unavailable" in str(verdict)
