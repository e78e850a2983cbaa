"""The recovery plugin: retries, fallback, escalation, continuation and reactive compaction.

:class:`Recovery` wraps every model call (``call_model``) and answers a cut reply
(``after_reply``, ``on_stop``), doing what its :class:`~harness.recovery.policy.RecoveryPolicy`
says; :class:`Attempt` records each attempt at a call, for timelines.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import anthropic
from anthropic.types import Message

from harness import messages as m
from harness.compaction.auto import AutoCompact
from harness.compaction.pinned import PinnedFacts
from harness.compaction.summary import SUMMARY_MAX_TOKENS, CompactionError, summarise
from harness.events import Event
from harness.loop import BaseAgent, ModelRequest, Plugin, StopRun
from harness.model import faults
from harness.pricing import prompt_tokens
from harness.recovery.events import (
    Continued,
    Escalated,
    FellBack,
    GaveUp,
    PromptTooLong,
    Retrying,
    StoppedContinuing,
    WindowExceeded,
)
from harness.recovery.failures import Failure, classify, retry_after
from harness.recovery.policy import CONTINUATION_PROMPT, RecoveryPolicy

WINDOW_EXCEEDED = "model_context_window_exceeded"
"""The stop reason of a reply that ran into the end of the context window (the API returns it
instead of a 400 when the prompt leaves too little room: "Handling stop reasons",
platform.claude.com). Claude Code turns it into an API error message ("The model has reached
its context window limit"), never an answer."""
WINDOW_CAUSE = "the reply reached the end of the context window (model_context_window_exceeded)"
WINDOW_ADVICE = (
    "The conversation leaves the model no room to answer: compact it (/compact), or start a "
    "new session with what matters."
)


@dataclass(frozen=True)
class Attempt:
    """One attempt at a model call, for timelines: when, on which model, how it ended."""

    start: float
    model: str
    purpose: str
    outcome: str
    """``ok``, ``cut`` (stopped at max_tokens), or the failure's kind."""
    waited: float = 0.0
    """Seconds waited after it before the next attempt."""


class _Unrecovered(Exception):
    def __init__(self, error: anthropic.APIError, failure: Failure, reason: str) -> None:
        super().__init__(reason)
        self.error, self.failure, self.reason = error, failure, reason


class Recovery(Plugin):
    """Retries, fallback, escalation, continuation and reactive compaction, around every call.

    One per agent: it counts consecutive 529s and continuations across that agent's calls.
    ``attempts`` keeps every attempt (for timelines and the benchmark).
    """

    def __init__(
        self,
        policy: RecoveryPolicy | None = None,
        *,
        pinned: PinnedFacts | None = None,
        compact: Callable[[BaseAgent], Event] | None = None,
    ) -> None:
        self.policy = policy or RecoveryPolicy()
        self.pinned = pinned
        """Facts to check after a reactive compaction (default: the AutoCompact plugin's)."""
        self._compact = compact
        self.rng = random.Random(self.policy.seed)
        self.attempts: list[Attempt] = []
        self.overloaded = 0
        """529s in a row, across calls (reset by any other outcome)."""
        self.fallback: str | None = None
        """The model in use instead of the configured one, once the fallback has happened."""
        self.continuations = 0
        self._small_continuations = 0

    # -- around each call ------------------------------------------------------------------------

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        turn = request.purpose == "turn"
        compacted = escalated = refilled = False
        while True:
            if self.fallback is not None:
                request = replace(request, model=self.fallback)
            target = self.policy.escalate_to
            if turn and self.continuations and target and request.max_tokens < target:
                request = replace(request, max_tokens=target)  # continuing: keep the room
            try:
                reply = self._with_retries(agent, request, call)
            except _Unrecovered as failed:
                if not turn:
                    raise failed.error from None  # its sender decides (a compaction fails)
                too_long = failed.failure.kind == "prompt_too_long"
                if too_long and not compacted and self.policy.reactive_compact:
                    compacted = True
                    size, maximum = faults.prompt_too_long_sizes(failed.error) or (0, 0)
                    agent.emit(PromptTooLong(size, maximum))
                    request = self._compact_once(agent, request, failed.failure)
                    continue
                raise StopRun(self._gave_up(failed, compacted)) from failed.error
            if turn and reply.stop_reason == WINDOW_EXCEEDED:  # cut there: never an answer
                request = self._compact_after_cut(agent, request, reply, again=refilled)
                refilled = True
                continue
            cut = reply.stop_reason == "max_tokens"
            if turn and cut and not escalated and target and request.max_tokens < target:
                escalated = True  # once per turn: thrown away, billed, asked again with room
                agent.emit(Escalated(request.max_tokens, target))
                request = replace(request, max_tokens=target)
                continue
            return reply

    def _with_retries(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        policy, attempt = self.policy, 0
        while True:
            attempt += 1
            start = agent.clock.now()
            try:
                reply = call(request)
            except anthropic.APIError as error:
                failure = classify(error)
                record = Attempt(start, request.model, request.purpose, failure.kind)
                self.attempts.append(record)
                self.overloaded = self.overloaded + 1 if failure.kind == "overloaded" else 0
                if not failure.retryable:
                    raise _Unrecovered(error, failure, "not retryable") from error
                switch = policy.fallback_model
                if (
                    failure.kind == "overloaded"
                    and switch is not None
                    and self.overloaded >= policy.fallback_after
                    and request.model != switch
                ):
                    agent.emit(FellBack(request.model, switch, self.overloaded))
                    self.fallback, self.overloaded, attempt = switch, 0, 0
                    request = replace(request, model=switch)
                    continue  # at once, on a model that has room, with a fresh count
                if attempt >= policy.max_attempts:
                    raise _Unrecovered(
                        error, failure, f"{attempt} attempt{'s' if attempt > 1 else ''} failed"
                    ) from error
                asked = retry_after(error, agent.clock.now()) if policy.honour_retry_after else None
                if asked is not None and asked > policy.max_wait:
                    reason = (
                        f"the API asked to wait {asked:,.0f} s, longer than the policy's "
                        f"max_wait of {policy.max_wait:,.0f} s"
                    )
                    raise _Unrecovered(error, failure, reason) from error
                delay = asked if asked is not None else policy.backoff(attempt, self.rng)
                source: Literal["retry-after", "backoff"] = (
                    "retry-after" if asked is not None else "backoff"
                )
                agent.emit(
                    Retrying(
                        attempt,
                        policy.max_attempts,
                        delay,
                        source,
                        failure.cause,
                        request.model,
                        request.purpose,
                        start,
                    )
                )
                self.attempts[-1] = replace(record, waited=delay)
                agent.clock.sleep(delay)
                continue
            self.overloaded = 0
            outcome = "cut" if reply.stop_reason in ("max_tokens", WINDOW_EXCEEDED) else "ok"
            self.attempts.append(Attempt(start, request.model, request.purpose, outcome))
            return reply

    # -- prompt too long, or a reply cut at the window's end ----------------------------------

    def _compact_once(
        self, agent: BaseAgent, request: ModelRequest, failure: Failure
    ) -> ModelRequest:
        """Compact the conversation (chapter 05's full compaction) and rebuild the request.

        The summary request goes through ``agent.call`` like any other, so it is retried and
        falls back too; it is a side request, so it can never compact in its turn.
        """
        try:
            event = (self._compact or self._summarise)(agent)
        except (CompactionError, m.InvalidConversation) as error:
            reason = f"the reactive compaction failed ({error})"
            raise StopRun(GaveUp(failure.kind, failure.cause, reason, failure.advice)) from error
        agent.emit(event)
        return replace(request, messages=list(agent.messages))

    def _compact_after_cut(
        self, agent: BaseAgent, request: ModelRequest, reply: Message, *, again: bool
    ) -> ModelRequest:
        """A reply cut at the window's end is thrown away (it was billed) and the conversation
        compacted once, as for a prompt too long; cut there ``again`` in the same turn (or with
        reactive compaction off), the run ends."""
        if again or not self.policy.reactive_compact:
            reason = (
                "cut again after a reactive compaction" if again else "reactive compaction is off"
            )
            raise StopRun(GaveUp(WINDOW_EXCEEDED, WINDOW_CAUSE, reason, WINDOW_ADVICE))
        agent.emit(WindowExceeded(prompt_tokens(reply.usage), reply.usage.output_tokens))
        window = Failure(WINDOW_EXCEEDED, False, WINDOW_CAUSE, WINDOW_ADVICE)
        return self._compact_once(agent, request, window)

    def _summarise(self, agent: BaseAgent) -> Event:
        auto = next((p for p in agent.plugins if isinstance(p, AutoCompact)), None)
        pinned = self.pinned or (auto.pinned if auto is not None else None)
        report = summarise(
            agent,
            pinned=pinned,
            trigger="reactive",
            hooks=auto.hooks if auto is not None else None,
            summary_max_tokens=auto.summary_max_tokens if auto is not None else SUMMARY_MAX_TOKENS,
        )
        return agent.apply(report.rewrite("reactive"))

    def _gave_up(self, failed: _Unrecovered, compacted: bool) -> GaveUp:
        reason = failed.reason
        if failed.failure.kind == "prompt_too_long":
            reason = (
                "still too long after a reactive compaction"
                if compacted
                else "reactive compaction is off"
            )
        return GaveUp(failed.failure.kind, failed.failure.cause, reason, failed.failure.advice)

    # -- a reply cut even after escalation ---------------------------------------------------------

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        asked = agent.messages[-2] if len(agent.messages) >= 2 else None
        if asked is None or m.text_of(asked) != CONTINUATION_PROMPT:  # a fresh reply
            self.continuations = self._small_continuations = 0

    def on_stop(self, agent: BaseAgent, reply: Message) -> str | None:
        """Ask a cut reply's model to continue, while continuing still helps."""
        if reply.stop_reason != "max_tokens":
            return None
        policy = self.policy
        if self.continuations:  # this reply answered a continuation: did it add much?
            small = reply.usage.output_tokens < policy.diminishing_tokens
            self._small_continuations = self._small_continuations + 1 if small else 0
        if self._small_continuations >= policy.diminishing_after:
            agent.emit(
                StoppedContinuing(
                    f"diminishing returns: {self._small_continuations} continuations in a row "
                    f"added under {policy.diminishing_tokens} tokens each"
                )
            )
            return None
        if self.continuations >= policy.max_continuations:
            if policy.max_continuations:
                agent.emit(StoppedContinuing(f"{policy.max_continuations} continuations used"))
            return None
        self.continuations += 1
        agent.emit(
            Continued(self.continuations, policy.max_continuations, reply.usage.output_tokens)
        )
        return CONTINUATION_PROMPT
