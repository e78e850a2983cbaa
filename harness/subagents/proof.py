"""The proof that sibling forks share their prompt prefix, byte for byte."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.loop import ModelRequest
from harness.model.cache import prefix_blocks

# -- the proof: siblings share their prefix byte for byte ------------------------------------


@dataclass(frozen=True)
class SiblingPrefix:
    """How one sibling's request compares with the first sibling's."""

    bytes: int
    """Size of its prompt, serialised in the cache's order: tools, system, messages."""
    shared: int
    """Bytes equal to the first sibling's, from the start."""
    diverges_at: str | None
    """The first block that differs (``messages[7].content[2]``), or None if none does."""
    directive_at: str
    """Where its last block, the directive, sits."""

    @property
    def only_directive_differs(self) -> bool:
        return self.diverges_at in (None, self.directive_at)


def serialise(request: ModelRequest | Mapping[str, Any]) -> bytes:
    """A request's prompt as the cache reads it: tools, then system, then each message's
    blocks, as compact JSON (``cache_control`` left in: it is part of the bytes sent)."""
    body = request.kwargs() if isinstance(request, ModelRequest) else dict(request)
    parts: list[Any] = [*(body.get("tools") or [])]
    system = body.get("system")
    parts += [system] if isinstance(system, str) else list(system or [])
    for message in body.get("messages", []):
        parts.append(message.get("role"))
        content = message.get("content")
        parts += [content] if isinstance(content, str) else list(content or [])
    return b"".join(
        json.dumps(p, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for p in parts
    )


def prefix_report(requests: Sequence[ModelRequest | Mapping[str, Any]]) -> list[SiblingPrefix]:
    """Compare each sibling's first request with the first sibling's, byte for byte and
    block by block (the cache's blocks, :func:`harness.model.cache.prefix_blocks`)."""
    bodies = [r.kwargs() if isinstance(r, ModelRequest) else dict(r) for r in requests]
    if not bodies:
        return []

    def blocks_of(body: Mapping[str, Any]) -> list[str]:
        found = prefix_blocks(body.get("tools"), body.get("system"), body["messages"])
        return [f"{b.where}\0{b.digest}" for b in found]

    first, first_blocks = serialise(bodies[0]), blocks_of(bodies[0])
    out: list[SiblingPrefix] = []
    for body in bodies:
        data, blocks = serialise(body), blocks_of(body)
        shared = next(
            (i for i, (a, b) in enumerate(zip(first, data, strict=False)) if a != b),
            min(len(first), len(data)),
        )
        differs = [x for x, y in zip(blocks, first_blocks, strict=False) if x != y]
        if not differs and len(blocks) != len(first_blocks):
            differs = [blocks[min(len(blocks), len(first_blocks)) - 1]]
        where = differs[0].split("\0")[0] if differs else None
        out.append(SiblingPrefix(len(data), shared, where, blocks[-1].split("\0")[0]))
    return out
