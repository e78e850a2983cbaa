"""Traces under hostile conditions: any setting string, a receiver that never answers,
parallel children that retry, a fallback model's replies, a tool name the model made up,
and a trace with no spans or one."""

from __future__ import annotations

import socket
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import reachable
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.trace import StatusCode

from harness import Agent, FakeClock, ScriptedModel, faults, reply, tool_call
from harness.cli.tracing import session_tracing
from harness.loop import ModelRequest
from harness.notebook.waterfall import cost_spike, waterfall
from harness.recovery import Recovery, RecoveryPolicy
from harness.tools.builtins import builtin_tools
from harness.tracing import TraceSettingError, TraceSettings, Tracing, exporting_provider, in_memory
from harness.tracing import names as n
from harness.tracing.settings import parse_trace

# --- the settings -------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(
    value=st.one_of(
        st.text(max_size=60),
        st.builds(
            lambda scheme, rest: f"{scheme}://{rest}",
            st.sampled_from(["http", "https", "HTTP", "ftp", ""]),
            st.text(max_size=40),
        ),
    )
)
def test_any_trace_setting_is_off_on_an_endpoint_or_a_clear_error(value: str) -> None:
    try:
        enabled, endpoint = parse_trace(value)
    except TraceSettingError as error:
        assert "HARNESS_TRACE" in str(error)
        return
    if endpoint is not None:
        assert enabled
        assert endpoint.split("://", 1)[0].lower() in ("http", "https")
        assert endpoint.isprintable() and not any(c.isspace() for c in endpoint)


@settings(max_examples=150, deadline=None)
@given(trace=st.text(max_size=30), capture=st.text(max_size=10))
def test_settings_from_any_environment_never_raise_anything_but_the_clear_error(
    trace: str, capture: str
) -> None:
    env = {"HARNESS_TRACE": trace, n.CAPTURE_CONTENT_ENV: capture}
    try:
        found = TraceSettings.from_env(env)
    except TraceSettingError:
        return
    assert found.capture_content == (capture.strip().lower() == "true")


@pytest.mark.parametrize(
    "value", ["http://[::1", "http://host:99999", "http://a b/v1", "http://h\x00"]
)
def test_a_url_the_exporter_could_never_use_is_said_and_the_session_goes_on_untraced(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert session_tracing(value, {}) is None
    assert "tracing is off for this session" in capsys.readouterr().err


# --- a receiver that never answers --------------------------------------------------------------


@pytest.fixture
def silent() -> Iterator[str]:
    """A port that accepts connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    port = server.getsockname()[1]
    with reachable(("127.0.0.1", port)):
        yield f"http://127.0.0.1:{port}/v1/traces"
    server.close()
    for connection in held:
        connection.close()


def test_a_receiver_that_hangs_holds_up_neither_a_span_nor_the_exit_past_the_export_timeout(
    silent: str,
) -> None:
    provider = exporting_provider(silent, timeout=0.5)
    tracer = provider.get_tracer("test")
    for i in range(50):
        tracer.start_span(f"span {i}").end()  # each is queued: nothing waits for the receiver
    closing = threading.Thread(target=provider.shutdown, daemon=True)
    closing.start()
    closing.join(20)  # only bounds a failure: the timeout (0.5 s) ends it
    assert not closing.is_alive(), "the exit waited on a receiver that never answers"


# --- parallel children, fallbacks, made-up names -----------------------------------------------


def test_a_childs_retry_is_its_second_attempt_even_when_a_sibling_called_in_between() -> None:
    """Parallel subagents' calls go through the parent's plugins from their own threads."""
    clock = FakeClock()
    agent = Agent(ScriptedModel([reply("b"), reply("a")], clock=clock), clock=clock)
    provider, exporter = in_memory()
    tracing = Tracing(provider, capture_content=False).attach(agent)
    asked = [{"role": "user", "content": "hi"}]
    first = ModelRequest(model="m", max_tokens=10, messages=asked, purpose="subagent")
    second = ModelRequest(model="m", max_tokens=10, messages=list(asked), purpose="subagent")

    def fail(request: ModelRequest) -> object:
        raise faults.overloaded()

    def answer(request: ModelRequest) -> object:
        return agent.model.create(**request.kwargs())

    sibling_done = threading.Event()

    def child_a() -> None:  # fails, waits while its sibling calls, then retries
        with pytest.raises(Exception):  # noqa: B017 - the overload, as the model raises it
            tracing.call_model(agent, first, fail)  # type: ignore[arg-type]
        sibling = threading.Thread(
            target=lambda: tracing.call_model(agent, second, answer)  # type: ignore[arg-type]
        )
        sibling.start()
        sibling.join(20)
        sibling_done.set()
        tracing.call_model(agent, first, answer)  # type: ignore[arg-type]

    thread = threading.Thread(target=child_a)
    thread.start()
    thread.join(20)
    assert sibling_done.is_set()
    attempts = [(s.attributes or {})[n.ATTEMPT] for s in exporter.get_finished_spans()]
    assert attempts == [1, 1, 2]


def test_the_costs_on_the_spans_are_the_meters_after_a_fallback_to_another_model(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    model = ScriptedModel([reply("Fine.")], clock=clock)
    model.schedule(faults.overloaded(), faults.overloaded())
    policy = RecoveryPolicy(fallback_model="claude-opus-4-5", fallback_after=2)
    agent = Agent(model, workspace=tmp_path, clock=clock, plugins=[Recovery(policy)])
    provider, exporter = in_memory()
    tracing = Tracing(provider, capture_content=False).attach(agent)
    list(tracing.run(agent, "hello"))
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    served = [s for s in chats if s.status.status_code != StatusCode.ERROR]
    assert [(s.attributes or {})[n.REQUEST_MODEL] for s in served] == ["claude-opus-4-5"]
    assert sum(float(str((s.attributes or {})[n.COST_USD])) for s in served) == pytest.approx(
        agent.meter.total.total
    )


def test_a_tool_name_the_model_made_up_stays_out_of_the_spans_without_content_capture(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    steps = [reply(tool_calls=[tool_call("SECRET_PLAN_ZX9", x=1)]), reply("ok")]
    agent = Agent(
        ScriptedModel(steps, clock=clock), tools=builtin_tools(), workspace=tmp_path, clock=clock
    )
    provider, exporter = in_memory()
    tracing = Tracing(provider, capture_content=False).attach(agent)
    list(tracing.run(agent, "go"))
    for span in exporter.get_finished_spans():
        assert "SECRET_PLAN" not in span.name + str(dict(span.attributes or {}))
        assert all("SECRET_PLAN" not in str(dict(e.attributes or {})) for e in span.events)


# --- the waterfall, with nothing to draw --------------------------------------------------------


def test_the_waterfall_and_the_spike_finder_take_an_empty_or_one_span_trace() -> None:
    provider, exporter = in_memory()
    tracer = provider.get_tracer("test")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        waterfall([])
        assert cost_spike([]) is None
        span = tracer.start_span("chat m", attributes={n.OPERATION: n.CHAT, n.COST_USD: 0.5})
        span.end()
        (one,) = exporter.get_finished_spans()
        waterfall([one])
        assert cost_spike([one]) is None


# --- content capture, on what a conversation may hold ------------------------------------------

TEXT = st.text(max_size=30)  # lone surrogates included: a file name's undecodable bytes
VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
BLOCK = st.dictionaries(
    st.sampled_from(["type", "text", "id", "name", "input", "tool_use_id", "content"]),
    st.one_of(st.sampled_from(["text", "tool_use", "tool_result", "image"]), VALUE),
    max_size=6,
)
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant"]), "content": st.one_of(TEXT, st.lists(BLOCK))}
)


@settings(max_examples=80, deadline=None)
@given(messages=st.lists(MESSAGE, max_size=4))
def test_captured_content_of_any_conversation_is_valid_text_within_the_limit(
    messages: list[dict[str, object]],
) -> None:
    from harness.tracing import content

    said = content.input_messages(messages)
    assert len(said) <= n.CONTENT_MAX
    said.encode("utf-8")  # a lone surrogate would fail the exporter's whole batch


@settings(max_examples=50, deadline=None)
@given(messages=st.lists(MESSAGE, min_size=1, max_size=3))
def test_a_call_with_content_capture_on_goes_through_whatever_the_conversation_holds(
    messages: list[dict[str, object]],
) -> None:
    clock = FakeClock()
    agent = Agent(ScriptedModel([reply("ok")], clock=clock), clock=clock)
    provider, exporter = in_memory()
    tracing = Tracing(provider, capture_content=True).attach(agent)
    answer = agent.model.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    request = ModelRequest(model="m", max_tokens=10, messages=messages)
    assert tracing.call_model(agent, request, lambda r: answer) is answer
    (span,) = exporter.get_finished_spans()
    assert n.INPUT_MESSAGES in (span.attributes or {})


def test_a_plugin_made_without_a_capture_choice_reads_only_the_content_switch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HARNESS_TRACE", "banana")  # the command line's business, not the plugin's
    monkeypatch.setenv(n.CAPTURE_CONTENT_ENV, "true")
    provider, _ = in_memory()
    assert Tracing(provider).capture is True
