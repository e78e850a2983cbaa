"""A reply whose stream was cut before ``message_stop`` is a failure to retry, never a turn.

When a server closes the connection cleanly partway through a reply, the SDK's stream ends
without an error and its snapshot has no stop reason. ``AnthropicModel`` raises ``StreamCut``
(a subclass of the SDK's ``APIConnectionError``) instead; recovery (chapter 06) sends the
request again, and nothing of the cut reply reaches the conversation.

The wire tests go through the real SDK over a loopback socket (``tests/local_api.py``, which
can cut its streams at any event); the offline ones use ``faults.cut_stream()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from conftest import reachable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import Agent, AgentConfig, FakeClock
from harness import messages as m
from harness.events import Event, TurnEnded
from harness.model import DEFAULT_MODEL, AnthropicModel, ScriptedModel, faults, reply, tool_call
from harness.model.live import StreamCut
from harness.recovery import Recovery, Retrying, classify
from tests.local_api import Cut, LocalMessagesAPI, stream_events
from tests.small_tools import count

MODEL = DEFAULT_MODEL  # the course's model
ANSWER = "The three modules round half up, to cents, in the same way. " * 3
SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture
def server() -> Iterator[LocalMessagesAPI]:
    with LocalMessagesAPI(ScriptedModel(id_prefix="cut")) as api, reachable(api.address):
        yield api


def live(api: LocalMessagesAPI) -> AnthropicModel:
    return AnthropicModel(api_key="any-key", base_url=api.url)


def events_of(step: Any) -> list[str]:
    """The event types the server streams for ``step``, in order."""
    message = ScriptedModel([step], id_prefix="cut").create(
        model=MODEL, max_tokens=4_000, messages=[m.user("Go")]
    )
    return [name for name, _ in stream_events(message)]


steps = st.one_of(
    st.just(reply(ANSWER)),
    st.just(reply("Counting.", tool_calls=[tool_call("count", n=3)])),
    st.just(reply(tool_calls=[tool_call("count", n=2), tool_call("count", n=5)])),
)


# -- the wire ---------------------------------------------------------------------------------


@SETTINGS
@given(step=steps, data=st.data(), broken=st.booleans())
def test_every_cut_before_message_stop_raises_the_retryable_stream_cut(
    server: LocalMessagesAPI, step: Any, data: st.DataObject, broken: bool
) -> None:
    names = events_of(step)
    at = data.draw(st.integers(0, names.index("message_stop")), label="events sent")
    server.model.extend([step])
    server.cut(Cut(at, broken=broken))

    with pytest.raises(StreamCut) as raised:
        live(server).create(model=MODEL, max_tokens=4_000, messages=[m.user("Go")])

    assert isinstance(raised.value, anthropic.APIConnectionError)
    failure = classify(raised.value)
    assert failure.retryable and failure.kind == "connection"
    if not broken:  # a clean close: the last event that arrived is named (the SDK skips pings)
        arrived = [name for name in names[:at] if name != "ping"]
        assert raised.value.last_event == (arrived[-1] if arrived else None)
        assert "stream cut after" in failure.cause


@pytest.mark.parametrize("first_dropped", ["message_delta", "message_stop", "content_block_stop"])
def test_a_stream_cut_from_a_given_event_on_is_refused(
    server: LocalMessagesAPI, first_dropped: str
) -> None:
    server.model.extend([reply(ANSWER)])
    server.cut(first_dropped)

    with pytest.raises(StreamCut, match="discarded"):
        live(server).create(model=MODEL, max_tokens=4_000, messages=[m.user("Go")])


def test_a_stream_that_reaches_message_stop_is_the_reply(server: LocalMessagesAPI) -> None:
    server.model.extend([reply(ANSWER)])
    server.cut(len(events_of(reply(ANSWER))))  # a "cut" after the last event: nothing dropped

    got = live(server).create(model=MODEL, max_tokens=4_000, messages=[m.user("Go")])

    assert got.stop_reason == "end_turn"
    assert [b.text for b in got.content if b.type == "text"] == [ANSWER]


# -- an agent with recovery, over the wire ------------------------------------------------------


def run_live_agent(api: LocalMessagesAPI, tmp_path: Path) -> tuple[list[Event], Agent]:
    clock = FakeClock()
    agent = Agent(
        live(api),
        tools=[count],
        workspace=tmp_path,
        clock=clock,
        plugins=[Recovery()],
        config=AgentConfig(model=MODEL, max_tokens=4_000),
    )
    return list(agent.run("Do the three modules round the same way?")), agent


@settings(SETTINGS, max_examples=12)
@given(data=st.data())
def test_an_agent_with_recovery_retries_cut_streams_and_ends_with_the_whole_answer(
    server: LocalMessagesAPI, tmp_path: Path, data: st.DataObject
) -> None:
    calling = reply("Counting first.", tool_calls=[tool_call("count", n=3)])
    answering = reply(ANSWER)
    # Each reply is cut 0-2 times (each time at a generated event before message_stop), then
    # goes whole: the model behind the server makes the same reply again on each attempt.
    plan: list[Cut | None] = []
    script: list[Any] = []
    for step in (calling, answering):
        last = events_of(step).index("message_stop")
        cuts = data.draw(st.lists(st.integers(0, last), max_size=2), label="cuts")
        plan += [*(Cut(at) for at in cuts), None]  # cut, cut, then whole
        script += [step] * (len(cuts) + 1)
    server.model = ScriptedModel(script, id_prefix="cut")
    server.cuts = []
    server.cut(*plan)

    events, agent = run_live_agent(server, tmp_path)

    assert isinstance(events[-1], TurnEnded)
    retried = [e for e in events if isinstance(e, Retrying)]
    assert len(retried) == len(plan) - 2
    assert all(e.cause.startswith("stream cut after") for e in retried)
    assert m.text_of(agent.messages[-1]) == ANSWER
    # Nothing of a cut reply is in the conversation: one call, its result, the answer.
    assert [x["role"] for x in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert len(m.tool_uses(agent.messages[1])) == 1
    assert m.validate(agent.messages) == []
    assert server.model.remaining == 0


# -- offline: the scripted model raises the same error --------------------------------------------


@settings(max_examples=50, deadline=None)
@given(cuts=st.integers(1, 9), last=st.sampled_from([None, "message_start", "message_delta"]))
def test_offline_a_cut_stream_is_retried_and_never_reaches_the_conversation(
    cuts: int, last: str | None
) -> None:
    clock = FakeClock()
    model = ScriptedModel(
        [reply(ANSWER)], clock=clock, faults=[faults.cut_stream(last) for _ in range(cuts)]
    )
    agent = Agent(model, clock=clock, plugins=[Recovery()], config=AgentConfig(model=MODEL))

    events = list(agent.run("Go"))

    assert isinstance(events[-1], TurnEnded)
    assert sum(isinstance(e, Retrying) for e in events) == cuts
    assert [x["role"] for x in agent.messages] == ["user", "assistant"]
    assert m.text_of(agent.messages[-1]) == ANSWER


def test_offline_ten_cut_streams_in_a_row_end_the_run_with_gave_up() -> None:
    from harness.recovery import GaveUp

    clock = FakeClock()
    model = ScriptedModel(
        [reply(ANSWER)], clock=clock, faults=[faults.cut_stream() for _ in range(10)]
    )
    agent = Agent(model, clock=clock, plugins=[Recovery()], config=AgentConfig(model=MODEL))

    events = list(agent.run("Go"))

    assert isinstance(events[-1], GaveUp) and "stream cut" in events[-1].cause
    assert [x["role"] for x in agent.messages] == ["user"]
