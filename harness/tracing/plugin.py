"""The tracing plugin: a session as OpenTelemetry spans, timed by the agent's clock.

One trace per run::

    invoke_agent harness            the run (Tracing.run, or Tracing.trace around any run)
      turn 1                        a model call and the tools it asked for
        chat claude-sonnet-4-5      one attempt at the call (a retry is a second span)
        execute_tool read_file      one tool call
      chat claude-sonnet-4-5        a side request between turns (a compaction's summary)
      turn 2 ...

The ``chat`` spans come from ``call_model``: put :class:`Tracing` last among the plugins
(:meth:`Tracing.attach` does), so it is the innermost layer and sees each attempt that
chapter 06's recovery makes. (The conventions' own inference span covers a logical call with
its retries; the turn span plays that part here, and its attempts show what an HTTP
instrumentation would show under it.) Tool spans come from ``on_tool_progress``, which the
tool runner reports from the loop's thread as each batch starts and ends: calls that ran in
parallel share their batch's start and end. Every time is the agent's clock, given to the SDK
in nanoseconds, so on a :class:`~harness.clock.FakeClock` the trace is the same on every run.
Parents are passed as explicit contexts, never the SDK's "current span", so threads cannot
mix them up.

Privacy: no prompt, reply, tool input or output, file content or key goes in a span unless
``capture_content`` is on (see :mod:`harness.tracing.settings`). An error is recorded by its
class name; its message (which may quote what failed) only with content capture.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Generator, Iterable
from typing import Any

import anthropic
from anthropic.types import Message
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from harness import messages as m
from harness.events import AssistantReplied, Event, ModelCalled, TurnEnded
from harness.loop import BaseAgent, ModelRequest, Plugin, Rewrite, ToolProgress
from harness.pricing import cost_of, prompt_tokens
from harness.tracing import content, settings
from harness.tracing import names as n
from harness.tracing.events import AS_SPANS, event_attributes

AGENT = "harness"
"""``gen_ai.agent.name`` of the run span, and the second word of its name."""
TOOL_ERROR = "tool_error"
"""``error.type`` of a tool call whose result is an error (our name: the conventions leave
it to the instrumentation)."""


class Tracing(Plugin):
    """Spans for one agent's runs, model calls and tool calls (see the module's docstring).

    ``provider`` is an OpenTelemetry ``TracerProvider`` (:func:`~harness.tracing.in_memory`,
    :func:`~harness.tracing.exporting_provider`); ``None`` uses the global one, which is a
    no-op until something sets it. ``capture_content`` ``None`` reads the environment.
    """

    def __init__(
        self,
        provider: trace.TracerProvider | None = None,
        *,
        capture_content: bool | None = None,
        session_id: str | None = None,
        agent_name: str = AGENT,
    ) -> None:
        source = provider or trace.get_tracer_provider()
        self.tracer = source.get_tracer("harness.tracing")
        if capture_content is None:
            capture_content = settings.capture_content(os.environ)  # not HARNESS_TRACE: not ours
        self.capture = capture_content
        self.session_id = session_id
        """``gen_ai.conversation.id`` of every span, when known (the transcript's session)."""
        self.agent_name = agent_name
        self._lock = threading.Lock()
        self._run: Span | None = None
        self._turn: Span | None = None
        self._tools: dict[str, Span] = {}
        self._attempts = threading.local()
        """The request whose attempt failed last, and its attempt number, per thread:
        parallel subagents call through this plugin from their own threads, and a retry
        happens in the thread of the call that failed."""
        self._totals: dict[str, float] = {}
        self._said: list[Event] = []
        """Rewrites' events already on the trace (held, so no other object takes their id)."""

    def attach(self, agent: BaseAgent) -> Tracing:
        """Add this plugin to ``agent``, last: the innermost ``call_model`` layer."""
        if self in agent.plugins:
            agent.plugins.remove(self)
        agent.plugins.append(self)
        return self

    # -- a run ---------------------------------------------------------------------------------

    def run(self, agent: BaseAgent, prompt: str) -> Generator[Event, None, None]:
        """``agent.run(prompt)``, traced: the same events, with the run's spans around them."""
        return self.trace(agent, agent.run(prompt), prompt=prompt)

    def trace(
        self, agent: BaseAgent, events: Iterable[Event], *, prompt: str | None = None
    ) -> Generator[Event, None, None]:
        """Yield ``events`` (a run of ``agent``: ``agent.run``, a resumed approval's
        continuation...) inside a run span; turns start at each ``ModelCalled``.

        Everything still open is ended when the run ends, raises, or is closed early. The
        plugin puts itself last among ``agent``'s plugins first, if it is not there already
        (a plugin added after :meth:`attach` would wrap the calls from inside).
        """
        if not agent.plugins or agent.plugins[-1] is not self:
            self.attach(agent)
        attributes: dict[str, AttributeValue] = {
            n.OPERATION: n.INVOKE_AGENT,
            n.PROVIDER: n.ANTHROPIC,
            n.AGENT_NAME: self.agent_name,
            n.REQUEST_MODEL: agent.config.model,
            **self._conversation(),
        }
        if prompt is not None and self.capture:
            attributes[n.INPUT_MESSAGES] = _captured(content.prompt_messages, prompt)
        run = self.tracer.start_span(
            f"{n.INVOKE_AGENT} {self.agent_name}",
            context=Context(),  # a new trace, whatever the SDK thinks is current
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=_ns(agent),
        )
        with self._lock:
            self._run, self._totals = run, {}
        last: Event | None = None
        iterator = iter(events)
        try:
            for event in iterator:
                last = event
                self._see(agent, event)
                yield event
        except GeneratorExit:  # the caller stopped early (Ctrl-C): not an error of the run
            run.set_attribute("harness.run.closed_early", True)
            raise
        except BaseException as error:
            run.set_attribute(n.ERROR_TYPE, type(error).__name__)
            run.set_status(Status(StatusCode.ERROR, self._describe(error)))
            raise
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()  # the run answers calls cut short (after_tools ends their turn)
            self._end_all(agent, last)

    def _see(self, agent: BaseAgent, event: Event) -> None:
        with self._lock:
            if isinstance(event, ModelCalled):
                self._end_turn(agent)
                self._turn = self.tracer.start_span(
                    f"turn {event.turn}",
                    context=_within(self._run),
                    kind=SpanKind.INTERNAL,
                    attributes={n.TURN: event.turn, **self._conversation()},
                    start_time=_ns(agent),
                )
            elif isinstance(event, AssistantReplied) and self._turn is not None:
                self._turn.set_attribute(n.STOP_REASON, event.message.stop_reason or "")
            elif isinstance(event, TurnEnded):
                self._end_turn(agent)
            elif any(e is event for e in self._said):
                self._said.remove(event)  # a rewrite's event, already on the trace
            elif not isinstance(event, AS_SPANS):
                self._event(agent, event)

    def _event(self, agent: BaseAgent, event: Event) -> None:
        span = self._turn or self._run
        if span is not None:
            span.add_event(type(event).__name__, event_attributes(event), timestamp=_ns(agent))

    def _end_all(self, agent: BaseAgent, last: Event | None) -> None:
        with self._lock:
            for span in self._tools.values():
                span.end(end_time=_ns(agent))
            self._tools.clear()
            self._end_turn(agent)
            run, self._run = self._run, None
            self._said.clear()
            if run is None:
                return
            for key, value in self._totals.items():
                run.set_attribute(key, round(value, 9) if key == n.COST_USD else int(value))
            if last is not None:
                run.set_attribute("harness.run.ending", type(last).__name__)
            run.end(end_time=_ns(agent))

    def _end_turn(self, agent: BaseAgent) -> None:
        turn, self._turn = self._turn, None
        if turn is not None:
            turn.end(end_time=_ns(agent))

    # -- the named points ----------------------------------------------------------------------

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        state = self._attempts
        failed: weakref.ref[ModelRequest] | None = getattr(state, "failed", None)
        retry = failed is not None and failed() is request
        attempt: int = state.attempt + 1 if retry else 1
        state.failed, state.attempt = None, attempt
        attributes: dict[str, AttributeValue] = {
            n.OPERATION: n.CHAT,
            n.PROVIDER: n.ANTHROPIC,
            n.REQUEST_MODEL: request.model,
            n.REQUEST_MAX_TOKENS: request.max_tokens,
            n.PURPOSE: request.purpose,
            n.ATTEMPT: attempt,
            **self._conversation(),
        }
        if self.capture:
            attributes[n.INPUT_MESSAGES] = _captured(content.input_messages, request.messages)
        span = self.tracer.start_span(
            f"{n.CHAT} {request.model}",
            context=self._parent(),
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=_ns(agent),
        )
        try:
            reply = call(request)
        except BaseException as error:
            state.failed = weakref.ref(request)
            span.set_attribute(n.ERROR_TYPE, type(error).__name__)
            if isinstance(error, anthropic.APIStatusError):
                span.set_attribute("http.response.status_code", error.status_code)
            span.set_status(Status(StatusCode.ERROR, self._describe(error)))
            span.end(end_time=_ns(agent))
            raise
        span.set_attributes(self._reply_attributes(reply, request))
        span.end(end_time=_ns(agent))
        return reply

    def _reply_attributes(self, reply: Message, request: ModelRequest) -> dict[str, AttributeValue]:
        usage = reply.usage
        model = reply.model or request.model
        counts = {
            n.INPUT_TOKENS: prompt_tokens(usage),
            n.OUTPUT_TOKENS: usage.output_tokens,
            n.CACHE_READ_TOKENS: usage.cache_read_input_tokens or 0,
            n.CACHE_WRITE_TOKENS: usage.cache_creation_input_tokens or 0,
        }
        out: dict[str, AttributeValue] = {
            n.RESPONSE_MODEL: model,
            n.RESPONSE_ID: reply.id,
            n.FINISH_REASONS: [reply.stop_reason or ""],
            **counts,
        }
        totals: dict[str, float] = dict(counts)
        try:
            cost = round(cost_of(usage, model).total, 9)
        except KeyError:  # a model the price table does not know: no cost, as the meter says
            cost = None
        if cost is not None:
            out[n.COST_USD] = totals[n.COST_USD] = cost
        if self.capture:
            out[n.OUTPUT_MESSAGES] = _captured(content.output_messages, reply)
        with self._lock:
            for key, value in totals.items():
                self._totals[key] = self._totals.get(key, 0.0) + value
        return out

    def on_tool_progress(self, agent: BaseAgent, progress: ToolProgress) -> None:
        if progress.state == "started":
            uses = _uses(agent)
            with self._lock:
                parent = _within(self._turn or self._run)
                for tool_use_id in progress.tool_use_ids:
                    use = uses.get(tool_use_id, {})
                    name = str(use.get("name", "unknown"))
                    attributes: dict[str, AttributeValue] = {
                        n.OPERATION: n.EXECUTE_TOOL,
                        n.TOOL_NAME: name,
                        n.TOOL_CALL_ID: tool_use_id,
                        **self._conversation(),
                    }
                    if self.capture:
                        attributes[n.TOOL_ARGUMENTS] = _captured(
                            content.as_json, use.get("input", {})
                        )
                    self._tools[tool_use_id] = self.tracer.start_span(
                        f"{n.EXECUTE_TOOL} {name}",
                        context=parent,
                        kind=SpanKind.INTERNAL,
                        attributes=attributes,
                        start_time=_ns(agent),
                    )
        elif progress.state == "finished":
            with self._lock:
                for result in progress.results:
                    span = self._tools.pop(str(result.get("tool_use_id")), None)
                    if span is None:  # refused or never run: no span was started
                        continue
                    if self.capture:
                        span.set_attribute(n.TOOL_RESULT, _captured(content.result_text, result))
                    if result.get("is_error"):
                        span.set_attribute(n.ERROR_TYPE, TOOL_ERROR)
                        span.set_status(Status(StatusCode.ERROR))
                    span.end(end_time=_ns(agent))

    def on_rewrite(self, agent: BaseAgent, rewrite: Rewrite) -> None:
        # Said here, when it happens (before the next call), rather than when the loop yields
        # it; a compaction made outside the loop (``/compact``) is only ever seen here.
        with self._lock:
            self._said.append(rewrite.event)
            self._event(agent, rewrite.event)

    def after_tools(self, agent: BaseAgent, results: list[m.Block]) -> None:
        with self._lock:  # the turn is over once its results are in the conversation
            self._end_turn(agent)

    # -- helpers -------------------------------------------------------------------------------

    def _parent(self) -> Context:
        """A model call's parent: the one tool running (a subagent's or a fork's calls go
        through the parent's ``call``), else the turn, else the run."""
        with self._lock:
            tools = list(self._tools.values())
            span = tools[0] if len(tools) == 1 else (self._turn or self._run)
            return _within(span)

    def _conversation(self) -> dict[str, AttributeValue]:
        return {n.CONVERSATION_ID: self.session_id} if self.session_id else {}

    def _describe(self, error: BaseException) -> str | None:
        return content.clip(f"{type(error).__name__}: {error}") if self.capture else None


def _captured(render: Callable[[Any], str], value: Any) -> str:
    """Content as an attribute, cut to size; a value it cannot render is named, never let
    to fail the call it describes."""
    try:
        return content.clip(render(value))
    except Exception as error:  # a trace must never cost the session a call
        return f"[not captured: {type(error).__name__}]"


def _ns(agent: BaseAgent) -> int:
    """The agent's clock, in the nanoseconds OpenTelemetry counts in (whole seconds apart
    from the fraction: ``now * 1e9`` is past a float's exact integers and would round)."""
    now = agent.clock.now()
    whole = int(now)
    return whole * 1_000_000_000 + round((now - whole) * 1e9)


def _within(span: Span | None) -> Context:
    """A context whose parent is ``span`` (a root when ``None``), never the current one."""
    return trace.set_span_in_context(span, Context()) if span is not None else Context()


def _uses(agent: BaseAgent) -> dict[str, dict[str, Any]]:
    """The tool calls of the conversation's last reply, by id (the calls now running)."""
    for message in reversed(agent.messages):
        if message["role"] == "assistant":
            return {str(u["id"]): dict(u) for u in m.tool_uses(message)}
    return {}
