"""The scripted model itself: ``ScriptedModel``, a deterministic stand-in for the Messages API.

* ``usage`` is computed, never typed in: input tokens by ``harness.tokens`` (the same
  estimator the harness uses to plan), output tokens from the reply. The prompt is split
  between cache reads, cache writes and plain input by a prompt-cache simulator
  (``harness.model.cache``, chapter 03); with no ``cache_control`` in a request, as in
  chapters 00-02, the cache fields are present and zero. A top-level ``cache_control``
  (``create(..., cache_control={"type": "ephemeral"})``) is automatic caching, simulated as
  the API documents it.
* A request with ``diagnostics={"previous_message_id": ...}`` gets the API's cache
  diagnostics back in ``Message.diagnostics``: why its prefix diverged from that earlier
  response's request (``harness.model.cache.diagnose``), ``previous_message_not_found`` if
  that request did not ask for diagnostics, and ``None`` when nothing diverged.
* Faults can be scheduled apart from the script (``faults=[...]``, or a function of the
  request): each call first takes the next scheduled fault, and raises it if there is one,
  without using a script step, as a retried request gets the answer the first one would have.
  (A fault can also be a script step, which uses the step up.)
* The same request, sent again after a reply was cut at ``max_tokens`` (only ``max_tokens``
  and the model may differ), gets the same step again, as a model regenerates the same answer:
  a harness that re-sends a cut request with more room gets the whole reply.
* Ids are counters (``msg_0001``, ``toolu_0001``), so stored notebook outputs never change.
* ``.requests`` keeps every request received, for display and for assertions.
* It answers one request at a time: calls from several threads (parallel subagents,
  chapter 10) wait their turn, so its counters, its script and its cache stay consistent.
  Which thread goes first is up to the threads; :meth:`ScriptedModel.script_when` gives
  each conversation a script of its own, so the answers do not depend on that order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from anthropic.types import (
    CacheCreation,
    CacheMissPreviousMessageNotFound,
    Diagnostics,
    Message,
    StopReason,
    Usage,
)

from harness import tokens
from harness.clock import Clock, FakeClock
from harness.messages import as_block, fresh, normalize, validate
from harness.model import faults
from harness.model.cache import (
    Fingerprint,
    PromptCache,
    check_breakpoints,
    diagnose,
    fingerprint,
)
from harness.model.models import DEFAULT_MAX_OUTPUT, context_window_of, max_output_of
from harness.model.scripted.replies import _apply_stop_sequences, _fit, _regeneration_key
from harness.model.scripted.rules import (
    _api_message,
    _json_error,
    _max_tokens_error,
    _system_error,
    _tool_search_error,
    _tools_error,
)
from harness.model.scripted.script import (
    Fault,
    FaultSchedule,
    Reply,
    Request,
    ScriptExhausted,
    Step,
    _preview,
)
from harness.model.scripted.streaming import ScriptedStream


class ScriptedModel:
    """A deterministic stand-in for ``anthropic.Anthropic().messages``.

    >>> model = ScriptedModel([reply("Hello!")])
    >>> model.create(model="claude-sonnet-5-5", max_tokens=100,
    ...              messages=[{"role": "user", "content": "Hi"}]).content[0].text
    'Hello!'
    """

    def __init__(
        self,
        script: Iterable[Step] = (),
        *,
        context_window: int | None = None,
        max_output: int | None = None,
        clock: Clock | None = None,
        id_prefix: str = "",
        cache: PromptCache | None = None,
        faults: FaultSchedule = (),
    ) -> None:
        self.script: list[Step] = list(script)
        self.faults: list[Fault] | Callable[[Request], Fault] = (
            faults if callable(faults) else list(faults)
        )
        """Faults to raise before the script is consulted: a list, one per call, or a function
        of each request (see :meth:`schedule`)."""
        self.context_window = context_window
        """The window every request is held to; ``None``: each request's model's, from the
        course's model table (``harness.model.models``), as the API holds each model to its own."""
        self.max_output = max_output
        """The most ``max_tokens`` may ask for; ``None``: each request's model's, likewise."""
        self.clock: Clock = clock or FakeClock()
        self.cache = cache or PromptCache(clock=self.clock)
        """The prompt cache this model's requests go through (on the same clock)."""
        self.id_prefix = id_prefix
        self.requests: list[Request] = []
        self.responders: list[tuple[Callable[[Request], bool], Callable[[Request], Step]]] = []
        """Answer matching requests without using a script step (see :meth:`answer_when`)."""
        self._position = 0
        self._ids = {"msg": 0, "toolu": 0}
        self._fingerprints: dict[str, Fingerprint] = {}
        self._cut: tuple[str, Step] | None = None
        """The last request whose reply was cut at max_tokens (as a key), and its step."""
        self._lock = threading.RLock()
        """Kept by response id, for requests that asked for diagnostics (as the API does)."""

    # -- the script ------------------------------------------------------------------------

    def answer_when(
        self, matches: Callable[[Request], bool], respond: Callable[[Request], Step]
    ) -> None:
        """Answer every request that ``matches`` with ``respond(request)``, off the script.

        For requests whose timing the script cannot know, such as a compaction request that
        the harness sends whenever the context fills up: the model answers it (with a
        summary built from what was sent) and the script goes on where it was.
        """
        self.responders.append((matches, respond))

    def script_when(self, matches: Callable[[Request], bool], steps: Iterable[Step]) -> None:
        """Answer every request that ``matches`` from ``steps``, in order, off the main script.

        One conversation's own script: when several agents share this model and run at once
        (parallel subagents), the order their requests arrive in is not fixed, but each
        still gets its own replies in its own order. Match on what only that conversation
        holds, such as its task (:func:`said`).
        """
        queue = list(steps)
        used = 0

        def respond(request: Request) -> Step:
            nonlocal used
            if used >= len(queue):
                raise ScriptExhausted(
                    f"a conversation's own script has {len(queue)} step(s) and all were used. "
                    f"Last request: {_preview(request)}"
                )
            used += 1
            return queue[used - 1]

        self.answer_when(matches, respond)

    def schedule(self, *faults: Fault) -> None:
        """Raise these on the next calls, one per call, before the script is consulted.

        ``model.schedule(faults.overloaded(), faults.overloaded(), None, faults.timeout())``:
        two 529s, a call that goes through, a timeout. Retried requests do not use up script
        steps, so the script stays the conversation you meant.
        """
        if callable(self.faults):
            raise TypeError("this model's faults come from a function; it cannot also queue them")
        self.faults.extend(faults)

    def _next_fault(self, request: Request) -> Fault:
        if callable(self.faults):
            return self.faults(request)
        return self.faults.pop(0) if self.faults else None

    def extend(self, steps: Iterable[Step]) -> None:
        """Add more steps at the end of the script."""
        self.script.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self.script) - self._position

    def _next_step(self, request: Request) -> Step:
        if self._position >= len(self.script):
            raise ScriptExhausted(
                f"the script has {len(self.script)} step(s) and all were used; request "
                f"#{len(self.requests)} has no reply. Last request: {_preview(request)}"
            )
        step = self.script[self._position]
        self._position += 1
        return step

    def _new_id(self, kind: Literal["msg", "toolu"]) -> str:
        self._ids[kind] += 1
        return f"{kind}_{self.id_prefix}{self._ids[kind]:04d}"

    # -- the Messages API ------------------------------------------------------------------

    def count_tokens(
        self,
        *,
        model: str = "",
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        """Input tokens of a request, as :meth:`create` would bill them."""
        return tokens.estimate_request(messages, system=system, tools=tools)

    def create(
        self,
        *,
        model: str,
        max_tokens: int,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **extra: Any,
    ) -> Message:
        with self._lock:  # one request at a time (see the module's docstring)
            return self._create(model, max_tokens, messages, system, tools, extra)

    def _create(
        self,
        model: str,
        max_tokens: int,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None,
        tools: Sequence[Mapping[str, Any]] | None,
        extra: dict[str, Any],
    ) -> Message:
        request = Request(
            model=model,
            max_tokens=max_tokens,
            messages=fresh(normalize(messages)),
            system=fresh(
                system if isinstance(system, str) or system is None else [dict(b) for b in system]
            ),
            tools=fresh([dict(t) for t in tools]) if tools is not None else None,
            extra=fresh(extra),
            input_tokens=0,
        )
        self.requests.append(request)
        self._check(request)
        # Counted once the request is known to be well formed (the estimate reads every block).
        request = replace(
            request, input_tokens=self.count_tokens(messages=messages, system=system, tools=tools)
        )
        self.requests[-1] = request
        check_breakpoints(
            request.tools, request.system, request.messages, request.extra.get("cache_control")
        )
        if (fault := self._next_fault(request)) is not None:
            raise fault
        window = self.window_for(request.model)
        if request.input_tokens > window:
            raise faults.prompt_too_long(request.input_tokens, window)
        key = _regeneration_key(request)
        if self._cut is not None and self._cut[0] == key:  # the same request after a cut
            step = self._cut[1]
        else:
            responder = next(
                (respond for matches, respond in self.responders if matches(request)), None
            )
            step = responder(request) if responder is not None else self._next_step(request)
        self._cut = None
        original = step
        if callable(step) and not isinstance(step, (Reply, BaseException)):
            step = step(request)
        if isinstance(step, BaseException):
            raise step
        message = self._message(request, step)
        if message.stop_reason == "max_tokens":
            self._cut = (key, original)
        return message

    def window_for(self, model: str) -> int:
        """The context window a request for ``model`` is held to: :attr:`context_window` if
        set, else the model's own (the default model's: 1M; an unknown model's: 200K)."""
        return self.context_window or context_window_of(model)

    def output_for(self, model: str) -> int:
        """The most output tokens a request for ``model`` may ask for: :attr:`max_output` if
        set, else the model's own, else the default model's (128K)."""
        return self.max_output or max_output_of(model) or DEFAULT_MAX_OUTPUT

    def stream(self, **params: Any) -> ScriptedStream:
        """``client.messages.stream(...)``: the same replies as :meth:`create`, as a stream."""
        return ScriptedStream(lambda: self.create(**params))

    def _check(self, request: Request) -> None:
        """Refuse a malformed request as the API does, with its status code and wording.

        In the API's order as far as it shows: a body it cannot parse first, then the
        request's fields, then the conversation. (Its cache breakpoints and its size are
        checked once it is counted, in :meth:`create`.)
        """
        for error in (
            _json_error(request),
            _max_tokens_error(request.max_tokens),
            _system_error(request.system),
            _tools_error(request.tools),
            _tool_search_error(request),
        ):
            if error is not None:
                raise faults.invalid_request(error)
        if request.max_tokens > (most := self.output_for(request.model)):
            raise faults.invalid_request(
                f"max_tokens: {request.max_tokens} > {most}, which is the maximum "
                f"allowed number of output tokens for {request.model}"
            )
        # The API merges consecutive same-role messages into one turn instead of refusing
        # them; the harness keeps roles alternating as its own rule (messages.validate), but
        # the scripted model refuses only what the API refuses.
        problems = [p for p in validate(request.messages) if p.kind != "roles_not_alternating"]
        if problems:
            raise faults.invalid_request(_api_message(problems[0], request.messages))

    def _message(self, request: Request, step: Reply) -> Message:
        # A stop sequence ends generation where it appears, before any token limit that lies
        # further on is reached, so it is applied to the scripted reply first.
        step, stop_sequence = _apply_stop_sequences(step, request.extra.get("stop_sequences") or [])
        room = self.window_for(request.model) - request.input_tokens
        budget = min(request.max_tokens, room)
        content, cut = _fit(step, budget, self._new_id)
        stop_reason: StopReason
        if cut:
            stop_sequence = None
            stop_reason = (
                "max_tokens" if request.max_tokens <= room else ("model_context_window_exceeded")
            )
        elif stop_sequence is not None:
            stop_reason = "stop_sequence"
        else:
            stop_reason = step.stop_reason or ("tool_use" if step.tool_calls else "end_turn")
        # A cut reply used its whole budget, whatever part of it could be kept (a tool call
        # cut in the middle is dropped here, but its tokens were generated and are billed).
        output_tokens = (
            budget if cut else sum(tokens.estimate_block(as_block(block)) for block in content)
        )
        usage = self._usage(request, output_tokens)
        message_id = self._new_id("msg")
        # Diagnostics appear only in a reply to a request that asked for them, as from the API.
        asked = "diagnostics" in request.extra
        extra = {"diagnostics": self._diagnostics(request, message_id)} if asked else {}
        return Message(
            id=message_id,
            type="message",
            role="assistant",
            model=request.model,
            content=list(content),
            stop_reason=stop_reason,
            stop_sequence=stop_sequence,
            usage=usage,
            **extra,
        )

    def _diagnostics(self, request: Request, message_id: str) -> Diagnostics | None:
        """The API's cache diagnostics, for a request that asked for them (else ``None``)."""
        asked = request.extra.get("diagnostics")
        if not isinstance(asked, Mapping):
            return None
        current = fingerprint(
            request.model, request.tools, request.system, request.messages, request.extra
        )
        self._fingerprints[message_id] = current
        previous_id = asked.get("previous_message_id")
        if previous_id is None:  # the first turn: opted in, nothing to compare with
            return None
        previous = self._fingerprints.get(previous_id)
        if previous is None:
            return Diagnostics(
                cache_miss_reason=CacheMissPreviousMessageNotFound(
                    type="previous_message_not_found"
                )
            )
        reason = diagnose(previous, current)
        return Diagnostics(cache_miss_reason=reason) if reason is not None else None

    def _usage(self, request: Request, output_tokens: int) -> Usage:
        """Usage as the API reports it: the prompt split by the cache simulator (chapter 03)."""
        split = self.cache.process(
            model=request.model,
            tools=request.tools,
            system=request.system,
            messages=request.messages,
            automatic=request.extra.get("cache_control"),
        )
        for i in range(len(self.requests) - 1, -1, -1):  # by identity: equal requests may repeat
            if self.requests[i] is request:
                self.requests[i] = replace(request, cache=split)
                break
        return Usage(
            input_tokens=split.uncached,
            output_tokens=output_tokens,
            cache_creation_input_tokens=split.written,
            cache_read_input_tokens=split.read,
            cache_creation=CacheCreation(
                ephemeral_5m_input_tokens=split.written_5m,
                ephemeral_1h_input_tokens=split.written_1h,
            ),
            service_tier="standard",
        )
