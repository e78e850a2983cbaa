"""Tier 4: auto-compact. Before each request, make the conversation fit, cheapest tier first.

Before a request whose context is at or over the threshold (Claude Code: window − min(max
output, 20K) − 13K, so 167K of a 200K window), the tiers are tried in order, stopping as
soon as the context is back under it:

1. microcompact: clear old tool results (no model call; breaks the cache from there on),
   kept only if it brings the context under the threshold less the margin;
2. session-memory compaction, when one is given (``session_memory=``, chapter 07's
   ``SessionMemoryCompaction``: the session's memory instead of the old messages, no model
   call), under the same rule;
3. full compaction: a summary written by the model.

Each tier only proposes a new conversation (a ``Rewrite``); the loop puts it in place.
Whichever tier proposes it, the pinned facts (``pinned=``) are checked on it the way the
summary checks them (``PinnedFacts.put_back``): a fact in neither the new conversation nor the
system prompt goes back at its end, *before* the tier is judged (so the room the facts take
counts), and the tier's event says so. Clearing an old ``read_file`` of CLAUDE.md is enough
to lose a rule; the check is what puts it back.

A circuit breaker stops all this after 3 failures in a row (Claude Code's number), and at
once when a compaction "did not help": it left the context above the threshold less a
margin, so the very next request would compact again, forever (a loop users have hit in
several agents). Its state is visible (``auto.breaker``, for an ``AutoCompact`` called
``auto``) and an event says when it trips. The summary request goes through ``agent.call``,
which never runs ``before_request``, so it can never trigger an auto-compaction of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from anthropic.types import Message

from harness import messages as m
from harness.compaction.context import ContextTracker, context_size
from harness.compaction.events import BreakerTripped, Compacted, CompactionFailed
from harness.compaction.microcompact import KEEP_RECENT, microcompact
from harness.compaction.pinned import PinnedFacts, PutBack
from harness.compaction.summary import (
    SUMMARY_MAX_TOKENS,
    CompactionError,
    CompactionHooks,
    CompactionReport,
    summarise,
)
from harness.loop import BaseAgent, Plugin, Rewrite
from harness.tokens import ContextBudget

MAX_CONSECUTIVE_FAILURES = 3


@dataclass
class CircuitBreaker:
    """Counts consecutive failures; once tripped, auto-compaction stays off for the session."""

    limit: int = MAX_CONSECUTIVE_FAILURES
    failures: int = 0
    tripped: bool = False
    reason: str = ""

    def success(self) -> None:
        self.failures = 0

    def failure(self, reason: str) -> bool:
        """Record a failure; True if this one tripped the breaker."""
        self.failures += 1
        if self.failures >= self.limit and not self.tripped:
            self.trip(f"{self.failures} consecutive failures; last: {reason}")
            return True
        return False

    def trip(self, reason: str) -> None:
        self.tripped = True
        self.reason = reason


def default_summary_budget(budget: ContextBudget) -> int:
    """Claude Code's 20K, or less when the window leaves less room at the threshold.

    A summary is asked for when the prompt is at the threshold, so the reply has about
    ``window - threshold`` tokens left; 1K of that goes to the compaction instruction and the
    estimate's error. A budget larger than the room would let a long summary run into the
    end of the window, and a cut-off summary is refused (200K window: 20K; 40K window with
    4K output: 16K).
    """
    return min(SUMMARY_MAX_TOKENS, budget.window - budget.auto_compact_threshold - 1_000)


def _joined(detail: str, kept: PutBack) -> str:
    """A tier's detail, and what the pinned-fact check put back, if anything."""
    return "; ".join(part for part in (detail, kept.detail) if part)


SessionMemoryTier = Callable[[BaseAgent], Rewrite | None]
"""Tier 2: a new conversation built from session memory, or None if it has none to offer
(``harness.compaction.session_memory.SessionMemoryCompaction`` is one)."""


class AutoCompact(Plugin):
    """Keeps the conversation under the auto-compact threshold, tier by tier."""

    def __init__(
        self,
        budget: ContextBudget | None = None,
        *,
        pinned: PinnedFacts | None = None,
        keep: int = KEEP_RECENT,
        margin: float = 0.1,
        session_memory: SessionMemoryTier | None = None,
        breaker: CircuitBreaker | None = None,
        summary_max_tokens: int | None = None,
        hooks: CompactionHooks | None = None,
    ) -> None:
        if not 0.0 <= margin < 1.0:
            raise ValueError(
                f"margin must be in [0, 1), not {margin}: it is a share of the threshold"
            )
        self.budget = budget or ContextBudget()
        self.pinned = pinned or PinnedFacts()
        self.keep = keep
        self.margin = margin
        """A compaction must leave the context below ``threshold × (1 − margin)``."""
        self.session_memory = session_memory
        self.breaker = breaker or CircuitBreaker()
        self.summary_max_tokens = summary_max_tokens or default_summary_budget(self.budget)
        """Output budget of a summary (default: :func:`default_summary_budget`)."""
        self.hooks = hooks or CompactionHooks()
        self.tracker = ContextTracker()
        self.last_report: CompactionReport | None = None

    @property
    def threshold(self) -> int:
        return self.budget.auto_compact_threshold

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        self.tracker.after_reply(agent, reply)

    def before_request(self, agent: BaseAgent) -> Rewrite | None:
        if self.breaker.tripped:
            return None
        size = self.tracker.size(agent)
        if size < self.threshold:
            return None
        rewrite = self._microcompact(agent, size) or self._session_memory(agent)
        if rewrite is not None:
            self.breaker.success()
            return rewrite
        return self._summarise(agent)

    def _fits(self, agent: BaseAgent, messages: list[m.MessageDict]) -> int | None:
        """The size of ``messages`` as the next request, if it is clearly under the threshold."""
        request = agent.request()
        after = context_size(messages, system=request.system, tools=request.tools)
        return after if after < self.threshold * (1 - self.margin) else None

    def _put_back(self, agent: BaseAgent, messages: list[m.MessageDict]) -> PutBack:
        """The pinned-fact check on a tier's conversation, against the agent's system prompt.

        Every fact missing from the result goes back, as after a summary, not only the ones
        the tier itself removed: one rule for every tier, so whichever tier ran, every pinned
        fact is in the context afterwards.
        """
        return self.pinned.put_back(messages, system=agent.request().system)

    def _microcompact(self, agent: BaseAgent, size: int) -> Rewrite | None:
        """Clear old results if that alone brings the context clearly under the threshold.

        Tried on a copy first: if clearing is not enough, the conversation is summarised as
        it was, so the summary request still reads its whole prefix from cache (a cleared
        result early on would make it miss from there). And clearing only just under the
        threshold would leave the next request over it again, clearing one or two results
        per turn and breaking the cache every time. A pinned fact whose only copy was in a
        cleared result is put back first, and counts towards the size.
        """
        result = microcompact(agent.messages, keep=self.keep)
        if not result.cleared:
            return None
        kept = self._put_back(agent, result.messages)
        if (after := self._fits(agent, kept.messages)) is None:
            return None
        event = Compacted("microcompact", "threshold", size, after, _joined(result.detail, kept))
        return Rewrite(kept.messages, event)

    def _session_memory(self, agent: BaseAgent) -> Rewrite | None:
        """Tier 2's conversation, pinned facts checked, under the same rule: kept only if
        clearly under. Facts put back are added to its event (a ``Compacted``)."""
        rewrite = self.session_memory(agent) if self.session_memory is not None else None
        if rewrite is None:
            return None
        kept = self._put_back(agent, rewrite.messages)
        if (after := self._fits(agent, kept.messages)) is None:
            return None
        event = rewrite.event
        if kept.facts and isinstance(event, Compacted):
            event = replace(event, tokens_after=after, detail=_joined(event.detail, kept))
        return Rewrite(kept.messages, event)

    def _summarise(self, agent: BaseAgent) -> Rewrite | None:
        try:
            report = summarise(
                agent,
                pinned=self.pinned,
                trigger="auto",
                hooks=self.hooks,
                summary_max_tokens=self.summary_max_tokens,
            )
        except CompactionError as error:
            tripped = self.breaker.failure(str(error))
            agent.emit(CompactionFailed("summary", str(error), self.breaker.failures))
            if tripped:
                agent.emit(BreakerTripped(self.breaker.reason))
            return None
        self.tracker.invalidate()
        limit = int(self.threshold * (1 - self.margin))
        if report.tokens_after >= limit:
            self.breaker.trip(
                f"compaction did not help: {report.tokens_after:,} tokens left, the next request "
                f"would compact again (must be under {limit:,})"
            )
            agent.emit(BreakerTripped(self.breaker.reason))
        else:
            self.breaker.success()
        self.last_report = report
        return report.rewrite("threshold")
