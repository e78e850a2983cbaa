"""The prompt cache, simulated by the API's documented rules.

The API caches *prefixes* of a request. The prefix runs in a fixed order, tools, then the
system prompt, then the messages, block by block, and is only ever cached up to a block
that carries ``cache_control`` (a breakpoint). On the next request:

* a breakpoint reads the longest cached prefix ending at it or at one of the blocks before
  it, 20 positions in all, the breakpoint counted first (the lookback), and then writes the
  prefix up to itself. A position is a block, except that a run of consecutive ``tool_use``
  blocks is one position, and so is a run of consecutive ``tool_result`` blocks: many parallel
  calls do not push the previous entry out of reach, a reply that alternates text and calls
  or a message of many text or image blocks does (:func:`positions`);
* at most 4 breakpoints are allowed (a 5th is a 400);
* *automatic caching*: one ``cache_control`` at the top level of the request (not on a
  block) acts as a breakpoint on the last block that can carry one, and so moves forward as
  the conversation grows. It takes one of the 4 places; a request whose last block already
  carries the same marker is unchanged, one with a different ``ttl`` there is a 400, and one
  with 4 block breakpoints already is a 400 (no place left);
* an entry lives 5 minutes (or 1 hour with ``"ttl": "1h"``), and each read renews it;
* a prefix shorter than the model's minimum is silently not cached. The minimum is per
  model and not monotonic across generations (the table is
  :data:`MINIMUM_CACHEABLE_TOKENS`, in ``minimums``);
* any change to a block changes every prefix that contains it: the request misses from
  the first changed block on.

Why a request missed is said twice: :attr:`CacheResult.explanation` in the simulator's own
words (what was read and written, and why not more), and :attr:`CacheResult.miss_reason` in
the API's vocabulary, the ``diagnostics.cache_miss_reason`` the API returns when a request
names the previous response (:func:`diagnose`, with the SDK's own classes).

Usage then splits the prompt three ways: ``cache_read_input_tokens`` (the prefix found),
``cache_creation_input_tokens`` (from there to the last breakpoint, written now) and
``input_tokens`` (the rest, after the last breakpoint).

Simplified, and said so: the real cache is per workspace (isolated between workspaces since
5 February 2026, between organisations before) and per model, and is best-effort (a hit is
likely, not promised); entries here never get evicted early. Token counts come from
``harness.tokens``, so they add up exactly to the request's estimate.

The pieces:

* ``prefix``: the request as :class:`PrefixBlock`\\ s in prefix order, with their digests,
  and the positions the lookback counts.
* ``minimums``: the minimum cacheable prefix of each model, dated and sourced.
* ``breakpoints``: automatic caching (:func:`with_automatic`) and the 400s on breakpoints.
* ``misses``: :class:`Fingerprint` and :func:`diagnose`, a miss in the API's words.
* ``simulator``: :class:`PromptCache`, the cache itself, and its :class:`CacheResult`.
"""

from __future__ import annotations

from harness.model.cache.breakpoints import MAX_BREAKPOINTS, check_breakpoints, with_automatic
from harness.model.cache.minimums import (
    DEFAULT_MINIMUM_TOKENS,
    MINIMUM_CACHEABLE_TOKENS,
    MINIMUMS_AS_OF,
    MINIMUMS_SOURCE,
    minimum_cacheable_tokens,
)
from harness.model.cache.misses import PROMPT_AFFECTING, Fingerprint, diagnose, fingerprint
from harness.model.cache.prefix import TTL, TTL_SECONDS, PrefixBlock, positions, prefix_blocks
from harness.model.cache.simulator import (
    LOOKBACK_POSITIONS,
    CacheResult,
    PromptCache,
)

__all__ = [
    "DEFAULT_MINIMUM_TOKENS",
    "LOOKBACK_POSITIONS",
    "MAX_BREAKPOINTS",
    "MINIMUMS_AS_OF",
    "MINIMUMS_SOURCE",
    "MINIMUM_CACHEABLE_TOKENS",
    "PROMPT_AFFECTING",
    "TTL",
    "TTL_SECONDS",
    "CacheResult",
    "Fingerprint",
    "PrefixBlock",
    "PromptCache",
    "check_breakpoints",
    "diagnose",
    "fingerprint",
    "minimum_cacheable_tokens",
    "positions",
    "prefix_blocks",
    "with_automatic",
]
