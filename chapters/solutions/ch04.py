"""Chapter 04: context budget and microcompact."""

from __future__ import annotations

import copy

from harness import messages as m
from harness import tokens
from harness.compaction.microcompact import KEEP_RECENT, MicrocompactResult, microcompact


def effective_window(window: int, max_output: int) -> int:
    """Exercise 1: the window less the room kept for the reply, capped at 20K."""
    return window - min(max_output, 20_000)


def auto_compact_threshold(window: int, max_output: int) -> int:
    """Exercise 1: 13K below the effective window."""
    return effective_window(window, max_output) - 13_000


def microcompact_keep_errors(
    messages: list[m.MessageDict], keep: int = KEEP_RECENT
) -> MicrocompactResult:
    """Exercise 2: clear what ``microcompact`` clears, except results with ``is_error``."""
    errors = {
        b["tool_use_id"] for msg in messages for b in m.tool_results(msg) if b.get("is_error")
    }
    cleared = microcompact(messages, keep=keep)
    out = list(messages)
    for i, (old, new) in enumerate(zip(messages, cleared.messages, strict=True)):
        if new is old:
            continue
        blocks = [  # put back every error block as it was
            copy.deepcopy(o) if o.get("type") == "tool_result" and o["tool_use_id"] in errors else n
            for o, n in zip(old["content"], new["content"], strict=True)
        ]
        if blocks != old["content"]:  # something other than an error was cleared
            out[i] = {**new, "content": blocks}
    freed = tokens.estimate_request(messages) - tokens.estimate_request(out)
    first = next(
        (i for i, (a, b) in enumerate(zip(messages, out, strict=True)) if a is not b), None
    )
    ids = tuple(c for c in cleared.cleared if c not in errors)
    return MicrocompactResult(out, ids, freed, first)
