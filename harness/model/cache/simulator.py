"""The prompt cache itself: entries keyed by model and prefix digest, read and written.

:class:`PromptCache` looks a request up, writes its breakpoints, and says how its tokens
split in a :class:`CacheResult`, with why not more was read in its own words.

A breakpoint reads the longest cached prefix ending at it or at a block boundary within
:data:`LOOKBACK_POSITIONS` positions, its own position counted first, and then writes the prefix
up to itself. Positions are what the API counts, not blocks: a run of consecutive ``tool_use``
blocks is one position, and so is a run of consecutive ``tool_result`` blocks (documented on the
prompt caching page, https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
"How automatic prefix checking works", which states it for the Claude API; checked
2026-11-26). So a reply with fifteen parallel
calls and the message with their fifteen results add two positions, not thirty; a reply that
puts a line of text before each call adds two positions per call. An entry lives 5 minutes
(or 1 hour), and each read renews it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from anthropic.types import CacheMissReason

from harness.clock import Clock, FakeClock
from harness.model.cache.breakpoints import _check_breakpoints, with_automatic
from harness.model.cache.minimums import minimum_cacheable_tokens
from harness.model.cache.misses import Fingerprint, diagnose, fingerprint
from harness.model.cache.prefix import TTL_SECONDS, PrefixBlock, positions

LOOKBACK_POSITIONS = 20


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
    lookback: int = LOOKBACK_POSITIONS
    """How many positions a breakpoint checks, its own first (see :func:`positions`)."""
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

        position = positions(blocks)
        read_end = 0  # blocks [0, read_end) come from the cache
        for mark in marks:
            j = mark
            while j >= 0 and position[mark] - position[j] < self.lookback:
                entry = self.entries.get((model, blocks[j].digest))
                if entry is not None:
                    entry.expires_at = now + entry.ttl  # a read renews the entry
                    read_end = max(read_end, j + 1)
                    break
                j -= 1

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
            f" (the cached prefix ends {self.lookback} or more positions before every "
            "breakpoint, out of the lookback's reach)"
        )
