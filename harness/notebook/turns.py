"""Turns of a conversation, shaped to show what the cache's lookback counts (chapter 03).

Each function returns the messages one turn adds after the previous request: parallel calls
(one line of text, then every call at once), narrated calls (a line of text before each call),
a prompt of pasted screenshots, or a sequential loop (one call a reply). Chapter 03 sends them
through the cache simulator, and its exercise 1 checks against the same shapes.
:func:`positions_between` says how many positions a turn added, as the lookback counts them
(``harness.model.cache.positions``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.model.cache import positions, prefix_blocks

Message = dict[str, Any]


def call(i: int) -> dict[str, Any]:
    """The ``i``-th ``tool_use`` block: a search."""
    return {
        "type": "tool_use",
        "id": f"toolu_{i:02}",
        "name": "grep",
        "input": {"pattern": f"r{i}"},
    }


def result(i: int) -> dict[str, Any]:
    """The ``tool_result`` block that answers :func:`call` ``(i)``."""
    return {"type": "tool_result", "tool_use_id": f"toolu_{i:02}", "content": f"app/tax.py:{i}"}


def parallel_turn(n: int, start: int = 0) -> list[Message]:
    """One line and ``n`` parallel calls; then their ``n`` results (ids from ``start``)."""
    said = [{"type": "text", "text": "All at once."}, *map(call, range(start, start + n))]
    return [
        {"role": "assistant", "content": said},
        {"role": "user", "content": [*map(result, range(start, start + n))]},
    ]


def narrated_turn(n: int, start: int = 0) -> list[Message]:
    """A line of text before each of ``n`` calls; then their ``n`` results."""
    said = [
        block
        for i in range(start, start + n)
        for block in ({"type": "text", "text": f"Now {i}."}, call(i))
    ]
    return [
        {"role": "assistant", "content": said},
        {"role": "user", "content": [*map(result, range(start, start + n))]},
    ]


def pasted_turn(n: int) -> list[Message]:
    """An answer; then your next prompt: ``n`` screenshots and a question."""
    shot = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    prompt = [*[shot] * n, {"type": "text", "text": "Why do these totals differ?"}]
    return [{"role": "assistant", "content": "Done."}, {"role": "user", "content": prompt}]


def sequential_rounds(n: int, start: int = 0) -> list[Message]:
    """``n`` sequential calls: each reply one call, each next message its result."""
    out: list[Message] = []
    for i in range(start, start + n):
        out += [
            {"role": "assistant", "content": [call(i)]},
            {"role": "user", "content": [result(i)]},
        ]
    return out


def positions_between(
    tools: Sequence[Mapping[str, Any]] | None,
    system: str | Sequence[Mapping[str, Any]] | None,
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
) -> int:
    """How many positions ``after`` (``before`` plus a turn) adds, as the lookback counts them."""
    return (
        positions(prefix_blocks(tools, system, after))[-1]
        - positions(prefix_blocks(tools, system, before))[-1]
    )
