"""The rules on breakpoints: automatic caching, and the requests the API refuses.

:func:`with_automatic` applies a top-level ``cache_control``: it acts as a breakpoint on the
last block that can carry one. :func:`check_breakpoints` refuses what the API refuses with a
400: over :data:`MAX_BREAKPOINTS` breakpoints, a 1-hour one after a 5-minute one, a
top-level ``cache_control`` with no place left or a clashing ``ttl``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from harness.model import faults
from harness.model.cache.prefix import TTL, PrefixBlock, prefix_blocks

MAX_BREAKPOINTS = 4


def with_automatic(
    blocks: list[PrefixBlock], control: Mapping[str, Any] | None
) -> list[PrefixBlock]:
    """The blocks as the cache sees them once a top-level ``cache_control`` is applied.

    ``control`` is the request's top-level ``cache_control`` (``None``: automatic caching is
    off, the blocks are returned as they are). It becomes a breakpoint on the last block that
    can carry one; as the API documents it: nothing changes if that block already carries the
    same marker; a different ``ttl`` there, or 4 block breakpoints already, is a 400 (the
    wording of both errors is our guess); with no block that can carry one, nothing is cached.
    """
    if not control:
        return blocks
    ttl: TTL = "1h" if control.get("ttl") == "1h" else "5m"
    target = next((i for i in range(len(blocks) - 1, -1, -1) if blocks[i].cacheable), None)
    if target is None:
        return blocks
    already = blocks[target].breakpoint
    if already == ttl:
        return blocks
    if already is not None:
        raise faults.invalid_request(
            f"cache_control: the top-level cache_control has ttl={ttl!r}, but the last "
            f"cacheable block ({blocks[target].where}) already has ttl={already!r}"
        )
    explicit = sum(1 for b in blocks if b.breakpoint)
    if explicit >= MAX_BREAKPOINTS:
        raise faults.invalid_request(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided, and "
            f"the request has {explicit}: no place is left for the top-level cache_control."
        )
    out = list(blocks)
    out[target] = replace(blocks[target], breakpoint=ttl)
    return out


def check_breakpoints(
    tools: Sequence[Mapping[str, Any]] | None,
    system: str | Sequence[Mapping[str, Any]] | None,
    messages: Sequence[Mapping[str, Any]],
    automatic: Mapping[str, Any] | None = None,
) -> None:
    """Refuse what the API refuses (400): over 4 breakpoints, a 1-hour one after a 5-minute one,
    a top-level ``cache_control`` (``automatic``) with no place left or a clashing ``ttl``."""
    blocks = with_automatic(prefix_blocks(tools, system, messages), automatic)
    _check_breakpoints(blocks, [i for i, b in enumerate(blocks) if b.breakpoint])


def _check_breakpoints(blocks: list[PrefixBlock], marks: list[int]) -> None:
    if len(marks) > MAX_BREAKPOINTS:
        raise faults.invalid_request(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {len(marks)}."
        )
    seen_5m = False
    for i in marks:
        if blocks[i].breakpoint == "5m":
            seen_5m = True
        elif seen_5m:
            raise faults.invalid_request(
                "a cache_control block with ttl='1h' must not come after one with ttl='5m'"
            )
