"""Chapter 03's exercise checks: the solution passes, the stub and plausible slips do not."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from harness.exercises import ch03
from harness.loop import ModelRequest
from harness.model.cache import LOOKBACK_POSITIONS
from harness.prompt import with_breakpoints
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch03")
HOUR = {"type": "ephemeral", "ttl": "1h"}


def stub(*args: object) -> Any:
    raise NotImplementedError


def test_the_solutions_pass() -> None:
    assert ch03.check_widest_turn(solutions.positions_added, solutions.widest_turn)
    assert ch03.check_with_hour_prefix(solutions.with_hour_prefix)


def test_the_stubs_are_told_not_yet_with_a_hint() -> None:
    for verdict in (ch03.check_widest_turn(stub, stub), ch03.check_with_hour_prefix(stub)):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)


def test_a_stub_is_told_its_first_case_and_where_the_recipe_is() -> None:
    both = str(ch03.check_widest_turn(stub, stub))
    assert "positions_added(1, narrated=False) should be 3" in both and "ch03.hint(1)" in both
    half = str(ch03.check_widest_turn(solutions.positions_added, stub))
    assert "`widest_turn` is still the stub" in half and "positions_added is right" in half
    hour = str(ch03.check_with_hour_prefix(stub))
    assert "first case:" in hour and "ch03.hint(2)" in hour


def test_no_stub_answer_holds_a_line_of_the_recipe_or_the_answer() -> None:
    for number, verdict in [
        (1, ch03.check_widest_turn(stub, stub)),
        (1, ch03.check_widest_turn(solutions.positions_added, stub)),
        (2, ch03.check_with_hour_prefix(stub)),
    ]:
        text = str(verdict)
        for line in ch03.hint(number).text.splitlines():
            assert line.strip() not in text, line
        assert "copy.deepcopy" not in text and "dataclasses.replace" not in text
        assert "2 * n_calls" not in text and "range(lookback + 1)" not in text


def test_hint_gives_each_recipe_and_refuses_a_third() -> None:
    assert "positions_added(n, narrated) < lookback" in str(ch03.hint(1))
    assert "dataclasses.replace" in str(ch03.hint(2))
    with pytest.raises(ValueError, match="no exercise 3"):
        ch03.hint(3)


# -- exercise 1 ---------------------------------------------------------------------------------


def test_the_simulator_counts_parallel_calls_as_one_position_and_narrated_ones_apart() -> None:
    # What the check compares with, so that the exercise teaches the API's rule: 15 parallel
    # calls keep the entry in reach; ten calls with a line of text before each do not.
    assert ch03.moving_breakpoint_reads(15, narrated=False) == (3, True)
    assert ch03.moving_breakpoint_reads(9, narrated=True) == (19, True)
    assert ch03.moving_breakpoint_reads(10, narrated=True) == (21, False)
    assert ch03.moving_breakpoint_reads(8, narrated=True, lookback=15) == (17, False)


def test_counting_blocks_instead_of_positions_is_rejected() -> None:
    def slip(n_calls: int, narrated: bool = False) -> int:  # the rule before runs counted as one
        return (n_calls if narrated else 1) + n_calls + n_calls

    verdict = ch03.check_widest_turn(slip, solutions.widest_turn)
    assert not verdict
    assert "positions_added(2, narrated=False) is 5, but that turn adds 3 positions" in str(verdict)


def test_the_old_answer_a_wide_parallel_turn_misses_is_rejected() -> None:
    def slip(narrated: bool = False, lookback: int = LOOKBACK_POSITIONS) -> int | None:
        blocks = [(1 if narrated else 0) * n + 1 + 2 * n for n in range(lookback + 1)]
        return max(n for n, b in enumerate(blocks) if b < lookback)  # 9 parallel calls

    verdict = ch03.check_widest_turn(solutions.positions_added, slip)
    assert not verdict
    assert "widest_turn(narrated=False, lookback=20) is 9, but every turn of 1 to 40" in str(
        verdict
    )


def test_a_parallel_turn_given_a_number_instead_of_none_is_rejected() -> None:
    def slip(narrated: bool = False, lookback: int = LOOKBACK_POSITIONS) -> int | None:
        return solutions.widest_turn(narrated, lookback) or 40  # "at least every width I tried"

    verdict = ch03.check_widest_turn(solutions.positions_added, slip)
    assert not verdict and "widest_turn(narrated=False, lookback=20) is 40, but" in str(verdict)


def test_none_for_a_narrated_turn_is_rejected() -> None:
    def slip(narrated: bool = False, lookback: int = LOOKBACK_POSITIONS) -> int | None:
        return None  # "runs count as one position, so nothing breaks it any more"

    verdict = ch03.check_widest_turn(solutions.positions_added, slip)
    assert not verdict
    assert "widest_turn(narrated=True, lookback=20) is None, but a turn of 10 calls" in str(verdict)


def test_counting_20_positions_back_as_in_reach_is_rejected() -> None:
    def slip(narrated: bool = False, lookback: int = LOOKBACK_POSITIONS) -> int | None:
        fits = [
            n for n in range(lookback + 1) if solutions.positions_added(n, narrated) <= lookback
        ]
        return None if max(fits) == lookback else max(fits)  # one position too many

    verdict = ch03.check_widest_turn(solutions.positions_added, slip)
    assert not verdict and "widest_turn(narrated=True, lookback=21) is 10" in str(verdict)


def test_a_hard_coded_nine_is_rejected() -> None:
    def slip(narrated: bool = False, lookback: int = LOOKBACK_POSITIONS) -> int | None:
        return 9 if narrated else None  # right for 20 positions only

    verdict = ch03.check_widest_turn(solutions.positions_added, slip)
    assert not verdict and "lookback=15) is 9" in str(verdict)


def test_forgetting_the_results_is_rejected() -> None:
    def slip(n_calls: int, narrated: bool = False) -> int:
        return 2 * n_calls if narrated else 2

    verdict = ch03.check_widest_turn(slip, solutions.widest_turn)
    assert not verdict and "positions_added(1, narrated=False) is 2" in str(verdict)


def test_a_widest_turn_as_a_fraction_is_rejected() -> None:
    def slip(narrated: bool = False, lookback: int = LOOKBACK_POSITIONS) -> float | None:
        return (lookback - 2) / 2 if narrated else None  # the bound, not a count of calls

    verdict = ch03.check_widest_turn(solutions.positions_added, slip)
    assert not verdict and "whole number of calls, or None" in str(verdict)


# -- exercise 2 ---------------------------------------------------------------------------------


def test_everything_for_an_hour_is_rejected() -> None:
    def slip(request: ModelRequest) -> ModelRequest:
        marked = solutions.with_hour_prefix(request)
        messages = copy.deepcopy(marked.messages)
        for message in messages:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("cache_control"):
                    block["cache_control"] = dict(HOUR)
        return dataclasses.replace(marked, messages=messages)

    verdict = ch03.check_with_hour_prefix(slip)
    assert not verdict and "5 minutes" in str(verdict)


def test_marking_the_agents_own_system_blocks_is_rejected() -> None:
    def slip(request: ModelRequest) -> ModelRequest:
        request = with_breakpoints(request)
        for block in request.system if isinstance(request.system, list) else []:
            if block.get("cache_control"):
                block["cache_control"] = dict(HOUR)  # in place: the agent's own blocks
        tools = copy.deepcopy(request.tools)
        if tools:
            tools[-1]["cache_control"] = dict(HOUR)
        return dataclasses.replace(request, tools=tools)

    verdict = ch03.check_with_hour_prefix(slip)
    assert not verdict and "changed the request it was given" in str(verdict)


def test_only_the_system_block_for_an_hour_is_refused_as_the_api_would() -> None:
    def slip(request: ModelRequest) -> ModelRequest:
        request = with_breakpoints(request)  # the tools get 5 minutes
        system = copy.deepcopy(request.system)
        for block in system if isinstance(system, list) else []:
            if block.get("cache_control"):
                block["cache_control"] = dict(HOUR)
        return dataclasses.replace(request, system=system)

    verdict = ch03.check_with_hour_prefix(slip)
    assert not verdict and "tool" in str(verdict)


def test_the_plain_breakpoints_miss_after_the_break() -> None:
    verdict = ch03.check_with_hour_prefix(with_breakpoints)
    assert not verdict and "not 1h" in str(verdict)


def test_marking_only_the_first_system_block_is_rejected() -> None:
    def slip(request: ModelRequest) -> ModelRequest:
        request = with_breakpoints(request)
        tools = copy.deepcopy(request.tools)
        if tools:
            tools[-1]["cache_control"] = dict(HOUR)
        system = copy.deepcopy(request.system)
        if isinstance(system, list) and system:
            system[0]["cache_control"] = dict(HOUR)  # the first block, not the marked one
        return dataclasses.replace(request, tools=tools, system=system)

    verdict = ch03.check_with_hour_prefix(slip)
    assert not verdict and "two blocks, the breakpoint on the second" in str(verdict)


def test_a_request_without_tools_must_not_crash() -> None:
    def slip(request: ModelRequest) -> ModelRequest:
        request = with_breakpoints(request)
        tools = copy.deepcopy(request.tools)
        tools[-1]["cache_control"] = dict(HOUR)  # type: ignore[index]
        system = copy.deepcopy(request.system)
        for block in system if isinstance(system, list) else []:
            if block.get("cache_control"):
                block["cache_control"] = dict(HOUR)
        return dataclasses.replace(request, tools=tools, system=system)

    verdict = ch03.check_with_hour_prefix(slip)
    assert not verdict and "for a request with no tools, your code raised TypeError" in str(verdict)


def test_a_string_system_prompt_must_be_left_as_it_is() -> None:
    def slip(request: ModelRequest) -> ModelRequest:
        request = with_breakpoints(request)
        tools = copy.deepcopy(request.tools)
        if tools:
            tools[-1]["cache_control"] = dict(HOUR)
        system = request.system
        if isinstance(system, str):  # "make it a block so it can carry the hour"
            system = [{"type": "text", "text": system, "cache_control": dict(HOUR)}]
        else:
            system = copy.deepcopy(system)
            for block in system or []:
                if block.get("cache_control"):
                    block["cache_control"] = dict(HOUR)
        return dataclasses.replace(request, tools=tools, system=system)

    verdict = ch03.check_with_hour_prefix(slip)
    assert not verdict and "one string" in str(verdict)


# -- mutation tests ------------------------------------------------------------------------------

EQUIVALENT_WIDEST: dict[str, str] = {}  # every mutant of positions_added and widest_turn fails
EQUIVALENT_HOUR: dict[str, str] = {}


def test_every_mutant_of_the_widest_turn_solution_is_caught() -> None:
    assert_exercise_caught("ch03", 1, EQUIVALENT_WIDEST)


def test_every_mutant_of_the_hour_prefix_solution_is_caught() -> None:
    assert_exercise_caught("ch03", 2, EQUIVALENT_HOUR)
