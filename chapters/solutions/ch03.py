"""Chapter 03: the system prompt and the prompt cache."""

from __future__ import annotations

import copy
import dataclasses

from harness.loop import ModelRequest
from harness.model.cache import LOOKBACK_BLOCKS
from harness.prompt import with_breakpoints


def blocks_added(n_calls: int, text: bool = True) -> int:
    """Exercise 1: the blocks one turn adds to the prefix."""
    reply_blocks = (1 if text else 0) + n_calls  # the line of text, one tool_use per call
    return reply_blocks + n_calls  # then one tool_result per call


def widest_turn(text: bool = True) -> int:
    """Exercise 1: the most parallel calls the moving breakpoint alone bridges.

    The breakpoint checks LOOKBACK_BLOCKS positions, itself first: the previous entry is
    found if it is at most LOOKBACK_BLOCKS - 1 blocks back, so the turn must add fewer than
    LOOKBACK_BLOCKS blocks. The answer is the largest n whose turn does (a turn of n calls
    adds at least 2n blocks, so no n from LOOKBACK_BLOCKS on can).
    """
    return max(n for n in range(LOOKBACK_BLOCKS) if blocks_added(n, text) < LOOKBACK_BLOCKS)


HOUR = {"type": "ephemeral", "ttl": "1h"}


def with_hour_prefix(request: ModelRequest) -> ModelRequest:
    """Exercise 2: with_breakpoints, with the tools and the static system prompt for an hour."""
    request = with_breakpoints(request)
    tools = copy.deepcopy(request.tools)
    if tools:
        tools[-1]["cache_control"] = dict(HOUR)
    system = copy.deepcopy(request.system)
    for block in system if isinstance(system, list) else []:
        if block.get("cache_control"):
            block["cache_control"] = dict(HOUR)
    return dataclasses.replace(request, tools=tools, system=system)
