"""Traces of a session (chapter 15): spans, their times and costs, and what they never carry."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from unittest import mock

import anthropic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from harness import Agent, FakeClock, ScriptedModel, faults, reply, tool_call
from harness.approvals.resuming import ApprovalApplied
from harness.clock import FAKE_EPOCH
from harness.compaction.events import Compacted
from harness.loop import Plugin, Rewrite
from harness.model.latency import Latency, TimedModel
from harness.recovery import Recovery
from harness.tools.builtins import builtin_tools
from harness.tracing import TraceSettingError, TraceSettings, Tracing, in_memory, parse_trace
from harness.tracing import names as n
from harness.tracing.events import event_attributes

NS = 1_000_000_000


def session(
    workspace: Path,
    steps: Sequence[object],
    *,
    faults_first: Sequence[Exception] = (),
    capture: bool = False,
    plugins: Sequence[Plugin] = (),
) -> tuple[Agent, Tracing, InMemorySpanExporter]:
    clock = FakeClock()
    model = ScriptedModel(list(steps), clock=clock)  # type: ignore[arg-type]
    if faults_first:
        model.schedule(*faults_first)
    agent = Agent(
        TimedModel(model, clock),
        tools=builtin_tools(),
        workspace=workspace,
        clock=clock,
        plugins=[Recovery(), *plugins],
    )
    provider, exporter = in_memory(seed=1)
    tracing = Tracing(provider, capture_content=capture, session_id="sess-1").attach(agent)
    return agent, tracing, exporter


def finished(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return list(exporter.get_finished_spans())


def by_name(spans: Sequence[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return sorted((s for s in spans if s.name.startswith(prefix)), key=lambda s: s.start_time or 0)


def parent_of(span: ReadableSpan, spans: Sequence[ReadableSpan]) -> ReadableSpan:
    assert span.parent is not None
    return next(s for s in spans if s.context.span_id == span.parent.span_id)


READS = [
    reply(
        "Reading both.",
        tool_calls=[tool_call("read_file", path="a.txt"), tool_call("read_file", path="b.txt")],
    ),
    reply("Both say hello."),
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("hello\n")
    (tmp_path / "b.txt").write_text("hello again\n")
    return tmp_path


def test_a_run_is_one_trace_of_turns_with_their_model_calls_and_tool_calls(
    workspace: Path,
) -> None:
    agent, tracing, exporter = session(workspace, READS)
    list(tracing.run(agent, "Read a.txt and b.txt."))
    spans = finished(exporter)
    (run,) = by_name(spans, "invoke_agent")
    turns = by_name(spans, "turn")
    chats = by_name(spans, "chat")
    tools = by_name(spans, "execute_tool")
    assert [t.name for t in turns] == ["turn 1", "turn 2"]
    assert {s.context.trace_id for s in spans} == {run.context.trace_id}
    assert all(parent_of(t, spans) is run for t in turns)
    assert [parent_of(c, spans).name for c in chats] == ["turn 1", "turn 2"]
    assert [parent_of(t, spans).name for t in tools] == ["turn 1", "turn 1"]
    assert [t.name for t in tools] == ["execute_tool read_file"] * 2
    assert {t.attributes[n.TOOL_CALL_ID] for t in tools} == {"toolu_0001", "toolu_0002"}
    first = chats[0].attributes
    assert first[n.OPERATION] == "chat" and first[n.PROVIDER] == "anthropic"
    assert first[n.REQUEST_MODEL] == agent.config.model
    assert first[n.REQUEST_MAX_TOKENS] == agent.config.max_tokens
    assert first[n.FINISH_REASONS] == ("tool_use",)
    assert first[n.RESPONSE_ID] == "msg_0001"
    assert first[n.CONVERSATION_ID] == "sess-1"
    assert run.attributes[n.OPERATION] == "invoke_agent"
    assert run.attributes["harness.run.ending"] == "TurnEnded"


def test_input_tokens_are_the_whole_prompt_with_cache_reads_and_writes_apart(
    workspace: Path,
) -> None:
    agent, tracing, exporter = session(workspace, READS)
    list(tracing.run(agent, "Read a.txt and b.txt."))
    for span, call in zip(by_name(finished(exporter), "chat"), agent.meter.calls, strict=True):
        usage = call.usage
        read = usage.cache_read_input_tokens or 0
        written = usage.cache_creation_input_tokens or 0
        assert span.attributes[n.INPUT_TOKENS] == usage.input_tokens + read + written
        assert span.attributes[n.CACHE_READ_TOKENS] == read
        assert span.attributes[n.CACHE_WRITE_TOKENS] == written
        assert span.attributes[n.OUTPUT_TOKENS] == usage.output_tokens


def test_the_costs_on_the_spans_add_up_to_the_cost_meter(workspace: Path) -> None:
    agent, tracing, exporter = session(workspace, READS)
    list(tracing.run(agent, "Read a.txt and b.txt."))
    spans = finished(exporter)
    costs = [float(s.attributes[n.COST_USD]) for s in by_name(spans, "chat")]
    assert sum(costs) == pytest.approx(agent.meter.total.total)
    (run,) = by_name(spans, "invoke_agent")
    assert run.attributes[n.COST_USD] == pytest.approx(agent.meter.total.total)


def test_each_retry_is_an_attempt_span_of_its_own_under_the_turn(workspace: Path) -> None:
    agent, tracing, exporter = session(workspace, READS, faults_first=[faults.overloaded()])
    list(tracing.run(agent, "Read a.txt and b.txt."))
    spans = finished(exporter)
    failed, ok = by_name(spans, "chat")[:2]
    assert parent_of(failed, spans) is parent_of(ok, spans)
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes[n.ERROR_TYPE] == "OverloadedError"
    assert failed.attributes["http.response.status_code"] == 529
    assert n.COST_USD not in failed.attributes
    assert (failed.attributes[n.ATTEMPT], ok.attributes[n.ATTEMPT]) == (1, 2)
    assert (failed.end_time or 0) < (ok.start_time or 0)  # the backoff lies between them
    turn = parent_of(ok, spans)
    assert [e.name for e in turn.events if e.name == "Retrying"] == ["Retrying"]


def test_span_times_are_the_agents_clock_and_the_trace_is_the_same_on_every_run(
    workspace: Path,
) -> None:
    def once() -> list[tuple[object, ...]]:
        agent, tracing, exporter = session(workspace, READS)
        list(tracing.run(agent, "Read a.txt and b.txt."))
        return [
            (s.name, s.start_time, s.end_time, dict(s.attributes or {}), s.context.span_id)
            for s in finished(exporter)
        ]

    first = once()
    assert first == once()
    run = next(row for row in first if str(row[0]).startswith("invoke_agent"))
    assert run[1] == int(FAKE_EPOCH) * NS
    chat = next(row for row in first if str(row[0]).startswith("chat"))
    attributes = chat[3]
    assert isinstance(attributes, dict)
    # A reply takes TimedModel's time: here, with no cache, fresh input and output.
    expected = Latency().first_token + attributes[n.INPUT_TOKENS] / Latency().input_per_second
    expected += attributes[n.OUTPUT_TOKENS] / Latency().output_per_second
    assert (int(chat[2]) - int(chat[1])) / NS == pytest.approx(expected, abs=1e-6)  # type: ignore[call-overload]


def test_closing_a_run_early_ends_every_span_it_opened(workspace: Path) -> None:
    agent, tracing, exporter = session(workspace, READS)
    run = tracing.run(agent, "Read a.txt and b.txt.")
    for event in run:
        if type(event).__name__ == "AssistantReplied":
            break
    run.close()
    spans = finished(exporter)
    assert [s.name for s in by_name(spans, "invoke_agent")] == ["invoke_agent harness"]
    assert [s.name for s in by_name(spans, "turn")] == ["turn 1"]
    assert by_name(spans, "invoke_agent")[0].attributes["harness.run.closed_early"] is True


def test_a_run_that_raises_ends_its_spans_and_says_which_error(workspace: Path) -> None:
    clock = FakeClock()
    model = ScriptedModel([reply("never")], clock=clock)
    model.schedule(faults.server_error())
    agent = Agent(model, tools=builtin_tools(), workspace=workspace, clock=clock)
    provider, exporter = in_memory()
    tracing = Tracing(provider, capture_content=False).attach(agent)
    with pytest.raises(anthropic.InternalServerError):
        list(tracing.run(agent, "hello"))
    spans = exporter.get_finished_spans()
    assert {s.name for s in spans} == {
        "invoke_agent harness",
        "turn 1",
        f"chat {agent.config.model}",
    }
    (run,) = [s for s in spans if s.name.startswith("invoke_agent")]
    assert run.status.status_code == StatusCode.ERROR
    assert run.attributes[n.ERROR_TYPE] == "InternalServerError"
    assert run.status.description is None  # the message may quote what failed: not without capture


class _Rewriter(Plugin):
    """Rewrites the conversation (to itself) before the second request, like a compaction."""

    def before_request(self, agent: Agent) -> Rewrite | None:  # type: ignore[override]
        if len(agent.messages) == 3:
            return Rewrite(list(agent.messages), Compacted("microcompact", "count", 900, 400, "x"))
        return None


def test_the_harness_events_are_span_events_with_their_numbers_and_kinds(workspace: Path) -> None:
    agent, tracing, exporter = session(workspace, READS, plugins=[_Rewriter()])
    list(tracing.run(agent, "Read a.txt and b.txt."))
    events = [e for s in finished(exporter) for e in s.events if e.name == "Compacted"]
    assert len(events) == 1  # said once: when it happened, not again as the loop yields it
    assert dict(events[0].attributes or {}) == {
        "tier": "microcompact",
        "trigger": "count",
        "tokens_before": 900,
        "tokens_after": 400,
    }


# --- privacy --------------------------------------------------------------------------------------

SECRET = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZ23456789", min_size=12, max_size=24)


def everything_said(spans: Sequence[ReadableSpan]) -> str:
    """Every name, attribute, event and status text of ``spans``, as one string."""
    parts: list[str] = []
    for s in spans:
        parts += [s.name, json.dumps(dict(s.attributes or {}), default=str)]
        parts += [str(s.status.description), json.dumps(dict(s.resource.attributes), default=str)]
        for e in s.events:
            parts += [e.name, json.dumps(dict(e.attributes or {}), default=str)]
    return "\n".join(parts)


def secret_session(tmp: Path, prompt: str, path: str, content: str, capture: bool) -> str:
    (tmp / "notes.txt").write_text(content)
    steps = [
        reply(tool_calls=[tool_call("read_file", path="notes.txt")]),
        reply(tool_calls=[tool_call("write_file", path=path, content=content)]),
        reply(tool_calls=[tool_call("read_file", path=f"missing-{path}")]),  # an error result
        reply(f"Done with {content}."),
    ]
    clock = FakeClock()
    agent = Agent(
        ScriptedModel(steps, clock=clock),
        tools=builtin_tools(),
        workspace=tmp,
        clock=clock,
        plugins=[Recovery()],
        permission_mode="accept_edits",
    )
    provider, exporter = in_memory()
    tracing = Tracing(provider, capture_content=capture).attach(agent)
    list(tracing.run(agent, prompt))
    return everything_said(exporter.get_finished_spans())


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(prompt=SECRET, path=SECRET, content=SECRET, key=SECRET)
def test_no_prompt_tool_input_or_output_or_key_reaches_a_span_unless_content_capture_is_on(
    tmp_path_factory: pytest.TempPathFactory, prompt: str, path: str, content: str, key: str
) -> None:
    tmp = tmp_path_factory.mktemp("secrets")
    with mock.patch.dict(os.environ, {"ANTHROPIC_API_KEY": f"sk-ant-{key}"}):
        said = secret_session(tmp, f"Please {prompt} now", f"{path}.txt", content, capture=False)
    for secret in (prompt, path, content, key):
        assert secret not in said


def test_with_content_capture_on_the_prompt_and_tool_content_are_in_the_spans(
    tmp_path: Path,
) -> None:
    said = secret_session(tmp_path, "Please PROMPT42 now", "PATH42.txt", "CONTENT42", capture=True)
    for secret in ("PROMPT42", "PATH42", "CONTENT42"):
        assert secret in said


# --- the setting --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", (False, None)),
        ("0", (False, None)),
        ("off", (False, None)),
        ("1", (True, None)),
        ("true", (True, None)),
        ("http://localhost:6006", (True, "http://localhost:6006/v1/traces")),
        ("http://collector:4318/v1/traces", (True, "http://collector:4318/v1/traces")),
    ],
)
def test_the_trace_setting_is_off_on_or_an_endpoint(
    value: str, expected: tuple[bool, str | None]
) -> None:
    assert parse_trace(value) == expected


@pytest.mark.parametrize("value", ["banana", "ftp://host/x", "http://"])
def test_a_trace_setting_that_is_none_of_those_is_a_clear_error(value: str) -> None:
    with pytest.raises(TraceSettingError, match="HARNESS_TRACE"):
        parse_trace(value)


def test_tracing_is_off_by_default_and_content_capture_is_a_setting_of_its_own() -> None:
    assert TraceSettings.from_env({}) == TraceSettings(False, None, False)
    on = TraceSettings.from_env(
        {"HARNESS_TRACE": "1", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    )
    assert on == TraceSettings(True, None, True)
    assert TraceSettings.from_env({"HARNESS_TRACE": "0"}, flag="1").enabled  # the flag wins


def test_a_traced_run_puts_the_plugin_innermost_even_if_a_plugin_came_after_it(
    workspace: Path,
) -> None:
    agent, tracing, exporter = session(workspace, READS)
    agent.plugins.append(Plugin())  # joined after attach: the tracing layer is no longer last
    list(tracing.run(agent, "Read a.txt and b.txt."))
    assert agent.plugins[-1] is tracing
    assert len(by_name(finished(exporter), "chat")) == 2


def test_an_applied_approvals_outcome_and_approver_stay_out_of_its_span_event() -> None:
    applied = ApprovalApplied(
        "apr_1", "write_file", "approved by SECRETNAME", True, "SECRET", False
    )
    assert event_attributes(applied) == {"ran": True, "is_error": False}
