"""Chapter 03: the system prompt and the prompt cache."""

from __future__ import annotations

import copy
import dataclasses

from harness.loop import ModelRequest
from harness.model.cache import LOOKBACK_POSITIONS
from harness.prompt import with_breakpoints


def positions_added(n_calls: int, narrated: bool = False) -> int:
    """Exercise 1: the positions one turn adds to the prefix, as the lookback counts them."""
    # Narrated: text, call, text, call... (no two calls touch). In parallel: one line, one run.
    reply = 2 * n_calls if narrated else 2
    return reply + 1  # the results: one run of tool_result blocks


def widest_turn(narrated: bool = False, lookback: int = LOOKBACK_POSITIONS) -> int | None:
    """Exercise 1: the most calls the moving breakpoint alone bridges; None if no number of
    calls breaks it.

    The breakpoint checks ``lookback`` positions, its own first, so the turn must add fewer
    than ``lookback`` positions. A narrated turn adds two a call, so ``lookback`` calls never
    fit; if even that many fit, the turn's positions do not grow with its calls.
    """
    widest = max(n for n in range(lookback + 1) if positions_added(n, narrated) < lookback)
    return None if widest == lookback else widest


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
