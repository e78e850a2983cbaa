"""What compaction tells the loop: one event per compaction, failure, or breaker trip."""

from __future__ import annotations

from dataclasses import dataclass

from harness.events import Event


@dataclass(frozen=True)
class Compacted(Event):
    tier: str
    """``microcompact`` (tier 1), ``session_memory`` (tier 2) or ``summary`` (tier 3)."""
    trigger: str
    """Why now: ``count``, ``time``, ``threshold`` (auto-compact), ``manual``, ``reactive``."""
    tokens_before: int
    tokens_after: int
    detail: str = ""

    def __str__(self) -> str:
        return (
            f"⇊ {self.tier} ({self.trigger}): {self.tokens_before:,} → {self.tokens_after:,} "
            f"tokens{'; ' + self.detail if self.detail else ''}"
        )


@dataclass(frozen=True)
class CompactionFailed(Event):
    tier: str
    reason: str
    failures: int
    """Consecutive failures so far (the breaker trips at 3)."""

    def __str__(self) -> str:
        return f"⚠ {self.tier} compaction failed ({self.failures} in a row): {self.reason}"


@dataclass(frozen=True)
class BreakerTripped(Event):
    reason: str

    def __str__(self) -> str:
        return f"⛔ auto-compact stopped (circuit breaker): {self.reason}"
