"""Views of the prompt cache (chapter 03)."""

from __future__ import annotations

from collections.abc import Sequence

from anthropic.types import CacheMissReason

from harness import pricing
from harness.model.cache import prefix_blocks
from harness.model.scripted import Request
from harness.notebook.views import Rendered, table, usd

# --- the prompt cache (chapter 03) ---------------------------------------------------------


def prefix_table(request: Request) -> Rendered:
    """A request as the prompt cache sees it: its blocks in prefix order (tools, then system,
    then messages), each with its tokens, the size of the prefix up to it, and its breakpoint
    (``5m`` or ``1h``) if it carries ``cache_control``."""
    blocks = prefix_blocks(request.tools, request.system, request.messages)
    rows: list[list[object]] = []
    running = 0
    for block in blocks:
        running += block.tokens
        mark = f"◆ {block.breakpoint}" if block.breakpoint else ""
        rows.append([block.where, f"{block.tokens:,}", f"{running:,}", mark])
    return table(["block", "tokens", "prefix up to here", "breakpoint"], rows)


def cache_table(
    requests: Sequence[Request],
    calls: Sequence[pricing.MeteredCall],
    *,
    first: int = 1,
    diagnostics: bool = False,
) -> Rendered:
    """One row per model call: how its prompt split between cache reads, cache writes and
    uncached input, what the call cost, and the cache's explanation in words.

    ``requests`` are the scripted model's (those that got a reply carry their ``cache``
    split); ``calls`` are the agent's meter, in the same order. Calls are numbered from
    ``first``. ``diagnostics=True`` adds what the API's cache diagnostics would say of each
    call against the one before (``cache_miss_reason``; ``null``: nothing diverged).
    """
    answered = [r for r in requests if r.cache is not None]
    if len(answered) != len(calls):
        raise ValueError(f"{len(answered)} answered requests but {len(calls)} metered calls")
    rows: list[list[object]] = []
    for n, (request, call) in enumerate(zip(answered, calls, strict=True), start=first):
        split = request.cache
        assert split is not None
        cost = usd(call.cost.total) if call.cost is not None else "?"
        rows.append(
            [
                n,
                f"{call.prompt_tokens:,}",
                f"{split.read:,}",
                f"{split.written:,}",
                f"{split.uncached:,}",
                cost,
                split.explanation,
            ]
        )
        if diagnostics:
            rows[-1].append(miss_reason_text(split.miss_reason))
    headers = ["call", "prompt", "cache read", "cache write", "uncached", "cost", "the cache says"]
    if diagnostics:
        headers.append("cache_miss_reason")
    return table(headers, rows)


def miss_reason_text(reason: CacheMissReason | None) -> str:
    """A ``cache_miss_reason`` in one line: its type, and the tokens it says were missed."""
    if reason is None:
        return "null"
    missed = getattr(reason, "cache_missed_input_tokens", None)
    return reason.type if missed is None else f"{reason.type} ({missed:,} tokens)"
