"""Chapter 03's exercise checks: the solution passes, the stub and plausible slips do not."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from harness.exercises import ch03
from harness.loop import ModelRequest
from harness.model.cache import LOOKBACK_BLOCKS
from harness.prompt import with_breakpoints
from tests.solutions import load

solutions = load("ch03")
HOUR = {"type": "ephemeral", "ttl": "1h"}


def stub(*args: object) -> Any:
    raise NotImplementedError


def test_the_solutions_pass() -> None:
    assert ch03.check_widest_turn(solutions.blocks_added, solutions.widest_turn)
    assert ch03.check_with_hour_prefix(solutions.with_hour_prefix)


def test_the_stubs_are_told_not_yet_with_a_hint() -> None:
    for verdict in (ch03.check_widest_turn(stub, stub), ch03.check_with_hour_prefix(stub)):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)


# -- exercise 1 ---------------------------------------------------------------------------------


def test_blocks_added_that_forgets_the_tool_results_is_rejected() -> None:
    def slip(n_calls: int, text: bool = True) -> int:
        return (1 if text else 0) + n_calls

    verdict = ch03.check_widest_turn(slip, solutions.widest_turn)
    assert not verdict and "blocks_added(1" in str(verdict)


def test_widest_turn_that_counts_20_blocks_back_as_in_reach_is_rejected() -> None:
    def slip(text: bool = True) -> int:  # "at most 20 blocks back": one too many
        n = 0
        while solutions.blocks_added(n + 1, text) <= LOOKBACK_BLOCKS:
            n += 1
        return n

    verdict = ch03.check_widest_turn(solutions.blocks_added, slip)
    assert not verdict and "widest_turn(False) is 10" in str(verdict)


def test_a_hard_coded_ten_is_rejected() -> None:
    assert not ch03.check_widest_turn(solutions.blocks_added, lambda text=True: 10)


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
