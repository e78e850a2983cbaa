"""The prompt cache, simulated by the API's documented rules.

The API caches *prefixes* of a request. The prefix runs in a fixed order, tools, then the
system prompt, then the messages, block by block, and is only ever cached up to a block
that carries ``cache_control`` (a breakpoint). On the next request:

* a breakpoint reads the longest cached prefix ending at it or at one of the blocks before
  it, 20 positions in all, the breakpoint counted first (the lookback), and then writes the
  prefix up to itself;
* at most 4 breakpoints are allowed (a 5th is a 400);
* *automatic caching*: one ``cache_control`` at the top level of the request (not on a
  block) acts as a breakpoint on the last block that can carry one, and so moves forward as
  the conversation grows. It takes one of the 4 places; a request whose last block already
  carries the same marker is unchanged, one with a different ``ttl`` there is a 400, and one
  with 4 block breakpoints already is a 400 (no place left);
* an entry lives 5 minutes (or 1 hour with ``"ttl": "1h"``), and each read renews it;
* a prefix shorter than the model's minimum is silently not cached. The minimum is per
  model and not monotonic across generations: 1,024 tokens for Sonnet 4.5 and 4.6 (the
  default model), 4,096 for Opus 4.5, Opus 4.6 and Haiku 4.5, 2,048 for Opus 4.7, 512 for
  Opus 5 (the table is :data:`MINIMUM_CACHEABLE_TOKENS`);
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
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, Literal

from anthropic.types import (
    CacheMissMessagesChanged,
    CacheMissModelChanged,
    CacheMissReason,
    CacheMissSystemChanged,
    CacheMissToolsChanged,
    CacheMissUnavailable,
)

from harness import tokens
from harness.clock import Clock, FakeClock
from harness.model import faults

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20

# The minimum cacheable prefix is data, like prices (harness.pricing): it differs by model,
# and it changes when models do.
MINIMUMS_AS_OF = date(2026, 9, 19)
MINIMUMS_SOURCE = (
    "Anthropic API docs, Prompt caching > Cache limitations, as quoted 2026-09-19 in "
    "affaan-m/ECC#3173; Sonnet 3.7 and Haiku 3 from the same table as quoted 2026-02-21 in "
    "anthropics/anthropic-sdk-python#1194"
)

# Model id (without its date suffix) -> the shortest prefix, in tokens, the API will cache.
MINIMUM_CACHEABLE_TOKENS: dict[str, int] = {
    "claude-opus-5": 512,  # documented; first only reported by users
    "claude-fable-5": 512,
    "claude-mythos-5": 512,
    "claude-opus-4-8": 1024,
    "claude-opus-4-7": 2048,
    "claude-mythos-preview": 2048,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-sonnet-5": 1024,
    # anthropic-sdk-python#1194 reports caching from 2,048 on Sonnet 4.6 in practice (and one
    # gateway's docs say 2,048); the API docs say 1,024, and so do we.
    "claude-sonnet-4-6": 1024,
    "claude-sonnet-4-5": 1024,
    "claude-sonnet-4": 1024,
    "claude-3-7-sonnet": 1024,
    "claude-haiku-4-5": 4096,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}

# For a model the table does not know: the minimum of most Sonnet and Opus models.
DEFAULT_MINIMUM_TOKENS = 1024


def minimum_cacheable_tokens(model: str) -> int:
    """The shortest prefix ``model`` caches, from :data:`MINIMUM_CACHEABLE_TOKENS`.

    A dated id (``claude-opus-4-5-20251101``), a ``-latest`` alias and a ``-0`` alias
    (``claude-opus-4-0``) find their model's row. A model the table does not know (newer than
    it, or not a Claude id) gets :data:`DEFAULT_MINIMUM_TOKENS`, 1,024: a guess, not a fact.

    >>> minimum_cacheable_tokens("claude-opus-4-5-20251101")
    4096
    """
    name = re.sub(r"-(\d{8}|latest)$", "", model)
    if name not in MINIMUM_CACHEABLE_TOKENS and name.endswith("-0"):
        name = name[:-2]
    return MINIMUM_CACHEABLE_TOKENS.get(name, DEFAULT_MINIMUM_TOKENS)


TTL = Literal["5m", "1h"]


@dataclass(frozen=True)
class PrefixBlock:
    """One block of the request's prefix, with the digest of the prefix up to it."""

    where: str
    """Where the block sits: ``tools[1] (grep)``, ``system[0]``, ``messages[4].content[0]``."""
    tokens: int
    digest: str
    """Hash of every block up to and including this one (``cache_control`` left out)."""
    breakpoint: TTL | None
    cacheable: bool = True
    """Whether the block can carry ``cache_control`` (thinking blocks and empty text cannot):
    automatic caching skips back over the ones that cannot."""


def _cacheable(block: Mapping[str, Any]) -> bool:
    kind = block.get("type")
    if kind in ("thinking", "redacted_thinking"):
        return False
    return not (kind == "text" and not block.get("text"))


def _canonical(block: Mapping[str, Any]) -> str:
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(plain, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _ttl(block: Mapping[str, Any]) -> TTL | None:
    control = block.get("cache_control")
    if not control:
        return None
    return "1h" if control.get("ttl") == "1h" else "5m"


def prefix_blocks(
    tools: Sequence[Mapping[str, Any]] | None,
    system: str | Sequence[Mapping[str, Any]] | None,
    messages: Sequence[Mapping[str, Any]],
) -> list[PrefixBlock]:
    """The request as the cache sees it: blocks in prefix order, with their token counts.

    The counts add up to ``tokens.estimate_request`` of the same request: the tool-use system
    prompt is counted with the first tool, each message's overhead with its first block.
    """
    items: list[tuple[str, Mapping[str, Any], int]] = []
    for i, tool in enumerate(tools or []):
        extra = tokens.TOOL_USE_SYSTEM_PROMPT if i == 0 else 0
        items.append((f"tools[{i}] ({tool.get('name')})", tool, extra + tokens.estimate_tool(tool)))
    if isinstance(system, str):
        items.append(("system", {"type": "text", "text": system}, tokens.estimate_system(system)))
    else:
        for i, block in enumerate(system or []):
            items.append((f"system[{i}]", block, tokens.estimate_block(block)))
    for i, message in enumerate(messages):
        content = message.get("content", "")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        for j, block in enumerate(parts):
            overhead = tokens.MESSAGE_OVERHEAD if j == 0 else 0
            size = tokens.estimate_block(block)
            keyed = {"role": message.get("role"), **block} if j == 0 else block
            items.append((f"messages[{i}].content[{j}]", keyed, overhead + size))
    out: list[PrefixBlock] = []
    running = hashlib.sha256()
    for where, block, size in items:
        running.update(_canonical(block).encode())
        running.update(b"\x1e")
        digest = running.copy().hexdigest()[:16]
        out.append(PrefixBlock(where, size, digest, _ttl(block), _cacheable(block)))
    return out


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


@dataclass(frozen=True)
class Fingerprint:
    """What the API keeps of a request to diagnose the next one: its model, the digests of
    its prefix blocks (with their sizes), and its other prompt-affecting parameters."""

    model: str
    blocks: tuple[PrefixBlock, ...]
    others: str = ""
    """``tool_choice``, ``thinking`` and ``output_config``, serialised: when only these
    differ the API answers ``unavailable``."""


PROMPT_AFFECTING = ("tool_choice", "thinking", "output_config")


def fingerprint(
    model: str,
    tools: Sequence[Mapping[str, Any]] | None,
    system: str | Sequence[Mapping[str, Any]] | None,
    messages: Sequence[Mapping[str, Any]],
    extra: Mapping[str, Any] | None = None,
) -> Fingerprint:
    others = {k: v for k, v in (extra or {}).items() if k in PROMPT_AFFECTING}
    return Fingerprint(
        model,
        tuple(prefix_blocks(tools, system, messages)),
        json.dumps(others, sort_keys=True, default=str),
    )


_SECTIONS = ("tools", "system", "messages")


def _section(block: PrefixBlock) -> str:
    return block.where.split("[")[0]


def diagnose(previous: Fingerprint | None, current: Fingerprint) -> CacheMissReason | None:
    """What the API's cache diagnostics say of ``current`` against ``previous``.

    The API compares the two requests' structure, whether or not the cache hit, and names the
    first place they diverge: ``model_changed``, ``tools_changed``, ``system_changed`` or
    ``messages_changed`` (an earlier message differs, rather than new ones appended), each
    with ``cache_missed_input_tokens``; ``unavailable`` when only other prompt-affecting
    parameters differ; ``None`` (the API's ``diagnostics: null``) when nothing diverged, as
    after an expired entry. ``previous_message_not_found`` is the caller's to say (the API
    keeps fingerprints only of requests that asked for diagnostics).

    ``cache_missed_input_tokens`` is approximate in the API; ours is the previous request's
    tokens from the first difference on, what a matching prefix would have let this one read.
    """
    if previous is None:
        return None
    old, new = previous.blocks, current.blocks
    if previous.model != current.model:
        missed = sum(b.tokens for b in old)
        return CacheMissModelChanged(type="model_changed", cache_missed_input_tokens=missed)
    first = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a.digest != b.digest),
        min(len(old), len(new)),
    )
    if first >= len(old):  # the same, or only new blocks appended
        if previous.others != current.others:
            return CacheMissUnavailable(type="unavailable")
        return None
    sections = [_section(old[first])] + ([_section(new[first])] if first < len(new) else [])
    where = min(sections, key=_SECTIONS.index)
    missed = sum(b.tokens for b in old[first:])
    if where == "tools":
        return CacheMissToolsChanged(type="tools_changed", cache_missed_input_tokens=missed)
    if where == "system":
        return CacheMissSystemChanged(type="system_changed", cache_missed_input_tokens=missed)
    return CacheMissMessagesChanged(type="messages_changed", cache_missed_input_tokens=missed)


@dataclass(frozen=True)
class CacheResult:
    """How one request's prompt split between cache reads, cache writes and plain input."""

    read: int
    written_5m: int
    written_1h: int
    uncached: int
    breakpoints: int
    read_until: str | None
    """The last block read from cache (``None``: nothing was read)."""
    explanation: str
    """In words: what was read and written, or why nothing was (the simulator's own words;
    :attr:`miss_reason` says it in the API's vocabulary)."""
    miss_reason: CacheMissReason | None = None
    """What the API's ``diagnostics.cache_miss_reason`` would say of this request against the
    one this cache saw just before it (see :func:`diagnose`); ``None``: nothing diverged."""

    @property
    def written(self) -> int:
        return self.written_5m + self.written_1h

    @property
    def total(self) -> int:
        return self.read + self.written + self.uncached


@dataclass
class _Entry:
    ttl: float
    expires_at: float


@dataclass
class PromptCache:
    """A prompt cache for one workspace: entries keyed by model and prefix digest."""

    clock: Clock = field(default_factory=FakeClock)
    minimum_tokens: int | None = None
    """The shortest prefix that is cached. ``None``: each model's own minimum, from
    :data:`MINIMUM_CACHEABLE_TOKENS`; a number overrides it for every model."""
    lookback: int = LOOKBACK_BLOCKS
    entries: dict[tuple[str, str], _Entry] = field(default_factory=dict)
    _last: dict[str, tuple[list[PrefixBlock], float, int]] = field(default_factory=dict)
    _previous: Fingerprint | None = None

    def process(
        self,
        *,
        model: str,
        tools: Sequence[Mapping[str, Any]] | None,
        system: str | Sequence[Mapping[str, Any]] | None,
        messages: Sequence[Mapping[str, Any]],
        automatic: Mapping[str, Any] | None = None,
    ) -> CacheResult:
        """Look the request up, write its breakpoints, and say how its tokens split.

        ``automatic`` is the request's top-level ``cache_control``, if it has one.
        """
        current = fingerprint(model, tools, system, messages)
        blocks = with_automatic(list(current.blocks), automatic)
        marks = [i for i, b in enumerate(blocks) if b.breakpoint]
        _check_breakpoints(blocks, marks)
        now = self.clock.now()
        self.entries = {k: e for k, e in self.entries.items() if e.expires_at > now}
        cumulative = [0]
        for b in blocks:
            cumulative.append(cumulative[-1] + b.tokens)

        read_end = 0  # blocks [0, read_end) come from the cache
        for mark in marks:
            for j in range(mark, max(-1, mark - self.lookback), -1):
                entry = self.entries.get((model, blocks[j].digest))
                if entry is not None:
                    entry.expires_at = now + entry.ttl  # a read renews the entry
                    read_end = max(read_end, j + 1)
                    break

        write_end = read_end
        written_1h = 0
        for mark in marks:
            if cumulative[mark + 1] < self.minimum_for(model):
                continue  # too short to cache: silently skipped, as the API does
            ttl = blocks[mark].breakpoint or "5m"
            self.entries[(model, blocks[mark].digest)] = _Entry(
                TTL_SECONDS[ttl], now + TTL_SECONDS[ttl]
            )
            if mark + 1 > write_end:
                if ttl == "1h":
                    written_1h += cumulative[mark + 1] - cumulative[write_end]
                write_end = mark + 1
        read = cumulative[read_end]
        written = cumulative[write_end] - read
        explanation = self._explain(model, blocks, marks, read_end, write_end, now)
        self._last[model] = (blocks, now, write_end)
        miss_reason = diagnose(self._previous, current)
        self._previous = current
        return CacheResult(
            read=read,
            written_5m=written - written_1h,
            written_1h=written_1h,
            uncached=cumulative[-1] - read - written,
            breakpoints=len(marks),
            read_until=blocks[read_end - 1].where if read_end else None,
            explanation=explanation,
            miss_reason=miss_reason,
        )

    def minimum_for(self, model: str) -> int:
        """The minimum cacheable prefix this cache applies to ``model``'s requests."""
        if self.minimum_tokens is not None:
            return self.minimum_tokens
        return minimum_cacheable_tokens(model)

    def _explain(
        self,
        model: str,
        blocks: list[PrefixBlock],
        marks: list[int],
        read_end: int,
        write_end: int,
        now: float,
    ) -> str:
        if not marks:
            return "no cache_control breakpoint: nothing can be cached"
        if write_end == 0 and read_end == 0:
            size = sum(b.tokens for b in blocks[: marks[-1] + 1])
            minimum = f"{self.minimum_for(model):,}-token minimum"
            return f"prefix of {size:,} tokens is below the {minimum}: not cached"
        head = f"read up to {blocks[read_end - 1].where}" if read_end else "nothing read"
        reason = self._why_stopped(model, blocks, marks, read_end, now)
        tail = f"; wrote up to {blocks[write_end - 1].where}" if write_end > read_end else ""
        return f"{head}{reason}{tail}"

    def _why_stopped(
        self, model: str, blocks: list[PrefixBlock], marks: list[int], read_end: int, now: float
    ) -> str:
        previous = self._last.get(model)
        if previous is None:
            return " (first request: the cache was empty)"
        old, when, old_write_end = previous
        if read_end >= old_write_end:
            return ""  # everything the last request cached was found
        first_change = next(
            (i for i, (a, b) in enumerate(zip(old, blocks, strict=False)) if a.digest != b.digest),
            min(len(old), len(blocks)),
        )
        if first_change < old_write_end:
            if first_change >= len(blocks):
                return " (this request is shorter than the prefix cached last time)"
            return f" (first change since the last request: {blocks[first_change].where})"
        idle = now - when
        ttl = old[old_write_end - 1].breakpoint or "5m"  # the last entry it wrote
        if idle > TTL_SECONDS[ttl]:
            span = "1-hour" if ttl == "1h" else "5-minute"
            return f" (idle {idle / 60:.1f} min, longer than the {span} TTL: the entry expired)"
        if all(mark < old_write_end - 1 for mark in marks):
            return " (every breakpoint comes before the end of the prefix cached last time)"
        return (
            f" (the cached prefix ends {self.lookback} or more blocks before every breakpoint, "
            "out of the lookback's reach)"
        )


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
