"""The recovery policy: how many attempts, how long to wait, when to fall back or escalate.

:class:`RecoveryPolicy` holds what :class:`~harness.recovery.plugin.Recovery` does, as numbers,
with Claude Code's (observed) as the defaults but one (``max_attempts``), and two policies to
compare it with: the SDK's own retries and a naive retry loop. :data:`CONTINUATION_PROMPT` is
what the model is told when a cut reply is kept and it is asked to go on.
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# Claude Code's wording (observed: quoted from query.ts in third-party analyses).
CONTINUATION_PROMPT = (
    "Output token limit hit. Resume directly — no apology, no recap of what you were doing. "
    "Pick up mid-thought if that is where the cut happened. Break remaining work into smaller "
    "pieces."
)


class RecoveryPolicy(BaseModel):
    """What :class:`Recovery` does, as numbers. The defaults are Claude Code's (observed), but
    for ``max_attempts``: Claude Code retries 10 times after the first call (11 attempts); ours
    counts attempts, 10 with the first (our choice, one retry fewer)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(10, ge=1)
    """Attempts per model call, the first included (Claude Code: 11, 10 of them retries)."""
    base_delay: float = Field(0.5, gt=0)
    """Seconds before the 2nd attempt; doubled for each one after."""
    max_delay: float = Field(32.0, gt=0)
    """The doubling stops here (before jitter)."""
    jitter: float = Field(0.25, ge=0, le=1)
    """A random share of the delay: added (Claude Code) or subtracted (the SDK)."""
    jitter_mode: Literal["add", "subtract"] = "add"
    honour_retry_after: bool = True
    """Wait as long as ``retry-after-ms`` / ``retry-after`` say. Only a naive retry loop
    ignores them (and, by retrying early, gets refused again)."""
    max_wait: float = Field(600.0, gt=0)
    """The longest Retry-After obeyed; a longer one ends the run instead (our choice: an
    agent that sits silent for an hour helps nobody). A wait is never cut short."""
    fallback_model: str | None = None
    """The model to switch to after ``fallback_after`` consecutive 529s (None: keep retrying)."""
    fallback_after: int = Field(3, ge=1)
    escalate_to: int | None = Field(64_000, gt=0)
    """Output tokens for the one re-send of a reply cut at ``max_tokens`` (None: never)."""
    max_continuations: int = Field(3, ge=0)
    """Times in a row a reply cut even after escalation is kept and the model asked to go on."""
    diminishing_after: int = Field(3, ge=1)
    diminishing_tokens: int = Field(500, ge=0)
    """Continuations stop early once ``diminishing_after`` in a row each added fewer output
    tokens than this (Claude Code applies this rule to its token-budget continuation)."""
    reactive_compact: bool = True
    """Compact once and retry when a request of the loop is too long, or its reply was cut at
    the end of the context window (``model_context_window_exceeded``)."""
    seed: int | None = 0
    """Seed of the jitter (None: a new one each time). Fixed by default: same waits each run."""

    @classmethod
    def sdk_default(cls) -> RecoveryPolicy:
        """The Anthropic SDK's own retries (``max_retries=2``), for comparison: 3 attempts,
        ``min(0.5 · 2^(n-1), 8)`` s less up to 25 %, Retry-After first; nothing else."""
        return cls(
            max_attempts=3,
            max_delay=8.0,
            jitter_mode="subtract",
            max_wait=4_294_967.0,  # the SDK waits as long as it is told (up to time.sleep's limit)
            escalate_to=None,
            max_continuations=0,
            reactive_compact=False,
        )

    @classmethod
    def naive(cls, attempts: int = 5, wait: float = 1.0) -> RecoveryPolicy:
        """What a first attempt at retrying looks like: a fixed wait, Retry-After ignored,
        nothing else (for comparison)."""
        return cls(
            max_attempts=attempts,
            base_delay=wait,
            max_delay=wait,
            jitter=0.0,
            honour_retry_after=False,
            escalate_to=None,
            max_continuations=0,
            reactive_compact=False,
        )

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """The wait after failed attempt ``attempt`` (1, 2, ...) when the API named none."""
        base = min(self.base_delay * 2.0 ** min(attempt - 1, 64), self.max_delay)
        share = rng.uniform(0, self.jitter)
        return base * (1 + share) if self.jitter_mode == "add" else base * (1 - share)
