"""Error recovery (chapter 06): what the harness does when a model call fails or is cut short.

:class:`Recovery` is a :class:`~harness.loop.Plugin` that wraps every model call (the loop
itself does not change). For each way a call can go wrong it does what Claude Code does
(numbers as observed in third-party analyses of the CLI; the SDK's from its source):

* **A passing failure** (429 rate limit, 529 overloaded, other 5xx, 408, 409, a dropped
  connection, a reply whose stream was cut before its end, a timeout): wait and send the
  same request again, at most 10 attempts. The wait is ``min(0.5 · 2^(n-1), 32)`` seconds
  plus 0-25 % jitter, unless the API said how long (``retry-after-ms``, then ``retry-after``
  in seconds or as an HTTP date), which always wins; an ``x-should-retry`` header overrides
  the status code either way. Waits go through the agent's ``Clock``: with a ``FakeClock``
  nothing really sleeps.
* **Overloaded, again and again**: after 3 consecutive 529s, switch to the fallback model (if
  one is configured), with an event. The cost meter prices each call at the model that
  served it.
* **A mistake in the request** (400 other than prompt-too-long, 401, 403, 404, 413, 422):
  retrying sends the same mistake, so the run ends at once with an event that says what to
  fix.
* **Prompt too long**: compact the conversation once (chapter 05's full compaction) and send
  it again; a second prompt-too-long in the same turn ends the run.
* **A reply cut at max_tokens**: the reply is thrown away (billed, never appended) and the
  same request is sent once more with 64K of room. If that is cut too, it is kept and the
  model is asked to continue, at most 3 times, stopping early when continuations stop adding
  anything (3 in a row under 500 tokens each). A tool call cut in the middle never runs: the
  loop keeps tool calls only from a reply that stopped to make them.

Side requests (a compaction's summary, a memory extraction) go through the same path, so they
get the same retries and fallback; they never compact or escalate, and when they fail the
API's error goes back to the code that sent them. Every transition is an event of this module,
one line each; a run that cannot go on ends with :class:`GaveUp` instead of an exception.

Put ``Recovery`` first in ``plugins=[...]``: the first plugin is the outermost layer, so each
retry goes through every other layer (cache breakpoints, say) again.
"""

from __future__ import annotations

import email.utils
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import anthropic
from anthropic.types import Message
from pydantic import BaseModel, ConfigDict, Field

from harness import messages as m
from harness.compaction.auto import AutoCompact
from harness.compaction.pinned import PinnedFacts
from harness.compaction.summary import SUMMARY_MAX_TOKENS, CompactionError, summarise
from harness.events import Event
from harness.loop import BaseAgent, ModelRequest, Plugin, StopRun
from harness.model import faults
from harness.model.live import StreamCut

# Claude Code's wording (observed: quoted from query.ts in third-party analyses).
CONTINUATION_PROMPT = (
    "Output token limit hit. Resume directly — no apology, no recap of what you were doing. "
    "Pick up mid-thought if that is where the cut happened. Break remaining work into smaller "
    "pieces."
)

# -- the policy ---------------------------------------------------------------------------------


class RecoveryPolicy(BaseModel):
    """What :class:`Recovery` does, as numbers. The defaults are Claude Code's (observed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(10, ge=1)
    """Attempts per model call, the first included."""
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
    """Compact once and retry when a request of the loop is too long."""
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


# -- reading an error ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Failure:
    """What a failed call means: its kind, whether to try again, and what a person can do."""

    kind: str
    """``overloaded``, ``rate_limited``, ``server``, ``timeout``, ``connection``,
    ``conflict``, ``prompt_too_long``, ``bad_request``, ``authentication``, ``permission``,
    ``not_found``, ``too_large``, ``unprocessable`` or ``unknown``."""
    retryable: bool
    cause: str
    """One line: the status and the API's error type (``529 overloaded_error``)."""
    advice: str
    """What to do about it, for the person reading the event."""


_ADVICE = {
    "overloaded": "The API is overloaded (not your fault); try again in a few minutes, or "
    "configure a fallback model.",
    "rate_limited": "Your organisation's rate limit was reached; wait, lower max_tokens or "
    "the prompt's size, or ask for a higher limit.",
    "server": "The API failed on its side; try again later (status.anthropic.com).",
    "timeout": "No answer came in time; check the network, or try a smaller request.",
    "connection": "The API could not be reached; check the network and ANTHROPIC_BASE_URL.",
    "stream_cut": "The reply's stream ended before its end (the connection closed early); "
    "the partial reply was discarded. If it keeps happening, check the network or a proxy "
    "that cuts long responses.",
    "conflict": "The request clashed with another one; try again.",
    "prompt_too_long": "The conversation is longer than the context window; compact it "
    "(/compact) or start a new session.",
    "bad_request": "The request was malformed; the API's message says which field (a bug in "
    "the harness or a plugin, not something a retry can fix).",
    "authentication": "Set ANTHROPIC_API_KEY to a valid key (the key is missing, wrong or "
    "revoked).",
    "permission": "This key may not use this model or feature; check the workspace's "
    "permissions in the console.",
    "not_found": "The model id is wrong or retired; check HARNESS_MODEL or AgentConfig.model.",
    "too_large": "The request is larger than the API accepts (32 MB); remove large images or "
    "documents.",
    "unprocessable": "The API could not process this request as given; the message says why.",
    "unknown": "An unexpected error; the message says what the API sent.",
}
_BY_STATUS = {
    400: "bad_request",
    401: "authentication",
    403: "permission",
    404: "not_found",
    408: "timeout",
    409: "conflict",
    413: "too_large",
    422: "unprocessable",
    429: "rate_limited",
    529: "overloaded",
}
_RETRYABLE = {"overloaded", "rate_limited", "server", "timeout", "connection", "conflict"}


def is_prompt_too_long(error: BaseException) -> bool:
    """A 400 whose message says the prompt is longer than the window (the API's wording)."""
    return faults.prompt_too_long_sizes(error) is not None


def classify(error: anthropic.APIError) -> Failure:
    """Read an API error as the SDK raises it: by status code, then ``x-should-retry``.

    Never by searching the message for words (prompt-too-long aside, whose only sign is its
    message): the status code and the error's class say what kind of failure it is.
    """
    if isinstance(error, StreamCut):  # a subclass of APIConnectionError: its kind, said plainly
        after = error.last_event or "no event"
        cause = f"stream cut after {after} (no message_stop)"
        return Failure("connection", True, cause, _ADVICE["stream_cut"])
    if isinstance(error, anthropic.APITimeoutError):  # a subclass of APIConnectionError
        return Failure("timeout", True, "timeout (no answer in time)", _ADVICE["timeout"])
    if isinstance(error, anthropic.APIConnectionError):
        return Failure("connection", True, "connection error", _ADVICE["connection"])
    if not isinstance(error, anthropic.APIStatusError):
        return Failure("unknown", False, type(error).__name__, _ADVICE["unknown"])
    status = error.status_code
    kind = _BY_STATUS.get(status, "server" if status >= 500 else "unknown")
    if is_prompt_too_long(error):
        kind = "prompt_too_long"
    error_type: str = error.type or ""
    if not error_type and isinstance(error.body, dict):
        inner = error.body.get("error")
        error_type = str(inner.get("type", "")) if isinstance(inner, dict) else ""
    cause = f"{status} {error_type}".strip()
    retryable = kind in _RETRYABLE
    # The API may say itself whether a retry can help; the SDK obeys it, and so do we.
    should = error.response.headers.get("x-should-retry")
    if should in ("true", "false") and kind != "prompt_too_long":
        retryable = should == "true"
        cause += f" (x-should-retry: {should})"
    return Failure(kind, retryable, cause, _ADVICE[kind])


def retry_after(error: anthropic.APIError, now: float) -> float | None:
    """Seconds the API asked us to wait, or None: ``retry-after-ms``, then ``retry-after``
    (seconds, or an HTTP date measured against ``now``, the agent's clock).

    Written here rather than borrowed from the SDK (``BaseClient._parse_retry_after_header``,
    private) because the SDK measures a date against the machine's clock, and ours must use
    the agent's, so that a fake clock gives the same waits every run.
    """
    if not isinstance(error, anthropic.APIStatusError):
        return None
    headers = error.response.headers
    for name, scale in (("retry-after-ms", 1_000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            if name == "retry-after-ms":
                continue
            parsed = email.utils.parsedate_tz(value)
            if parsed is None:
                return None
            try:
                seconds = email.utils.mktime_tz(parsed) - now
            except (ValueError, OverflowError):  # a date no clock can hold (year 99999)
                return None
        return max(0.0, seconds) if math.isfinite(seconds) else None
    return None


# -- events -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Retrying(Event):
    """A call failed and will be sent again after ``delay`` seconds."""

    attempt: int
    """The attempt that failed (1 is the first)."""
    max_attempts: int
    delay: float
    source: Literal["retry-after", "backoff"]
    cause: str
    model: str
    purpose: str
    at: float
    """The agent's clock when the wait began."""

    def __str__(self) -> str:
        side = "" if self.purpose == "turn" else f" ({self.purpose} request)"
        return (
            f"↻ {self.cause} on attempt {self.attempt} of {self.max_attempts}{side}: "
            f"waiting {self.delay:.2f} s ({self.source})"
        )


@dataclass(frozen=True)
class FellBack(Event):
    """Too many consecutive 529s: the rest of the session uses the fallback model."""

    from_model: str
    to_model: str
    overloaded: int

    def __str__(self) -> str:
        return (
            f"⇄ {self.overloaded} consecutive 529s: switched from {self.from_model} to "
            f"{self.to_model}"
        )


@dataclass(frozen=True)
class Escalated(Event):
    """A reply cut at ``max_tokens`` was thrown away; the same request goes again with more."""

    cut_at: int
    to: int

    def __str__(self) -> str:
        return (
            f"⇡ reply cut at {self.cut_at:,} output tokens: discarded, asking again with "
            f"{self.to:,}"
        )


@dataclass(frozen=True)
class Continued(Event):
    """A reply cut even after escalation was kept, and the model asked to continue."""

    continuation: int
    max_continuations: int
    output_tokens: int

    def __str__(self) -> str:
        return (
            f"… reply cut at {self.output_tokens:,} output tokens: kept, asking the model to "
            f"continue ({self.continuation} of {self.max_continuations})"
        )


@dataclass(frozen=True)
class StoppedContinuing(Event):
    """No more continuations: the limit was reached, or they stopped adding anything."""

    reason: str

    def __str__(self) -> str:
        return f"■ no more continuations: {self.reason}"


@dataclass(frozen=True)
class PromptTooLong(Event):
    """A request of the loop was too long; a reactive compaction follows."""

    tokens: int
    maximum: int

    def __str__(self) -> str:
        return (
            f"⚠ prompt too long ({self.tokens:,} > {self.maximum:,} tokens): compacting once, "
            "then sending it again"
        )


@dataclass(frozen=True)
class GaveUp(Event):
    """The run ended because a model call could not be made to work."""

    kind: str
    cause: str
    reason: str
    """Why recovery stopped trying (not retryable, attempts used up, ...)."""
    advice: str
    """What to fix."""

    def __str__(self) -> str:
        return f"■ gave up: {self.cause}, {self.reason}. {self.advice}"


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


# -- the plugin ---------------------------------------------------------------------------------


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
        compacted = escalated = False
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
                    request = self._compact_once(agent, request, failed)
                    continue
                raise StopRun(self._gave_up(failed, compacted)) from failed.error
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
            outcome = "cut" if reply.stop_reason == "max_tokens" else "ok"
            self.attempts.append(Attempt(start, request.model, request.purpose, outcome))
            return reply

    # -- prompt too long ---------------------------------------------------------------------

    def _compact_once(
        self, agent: BaseAgent, request: ModelRequest, failed: _Unrecovered
    ) -> ModelRequest:
        """Compact the conversation (chapter 05's full compaction) and rebuild the request.

        The summary request goes through ``agent.call`` like any other, so it is retried and
        falls back too; it is a side request, so it can never compact in its turn.
        """
        size, maximum = faults.prompt_too_long_sizes(failed.error) or (0, 0)
        agent.emit(PromptTooLong(size, maximum))
        try:
            event = (self._compact or self._summarise)(agent)
        except (CompactionError, m.InvalidConversation) as error:
            reason = f"the reactive compaction failed ({error})"
            raise StopRun(
                GaveUp("prompt_too_long", failed.failure.cause, reason, failed.failure.advice)
            ) from error
        agent.emit(event)
        return replace(request, messages=list(agent.messages))

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
