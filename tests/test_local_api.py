"""The local Messages API server (``tests/local_api.py``) speaks the API as the SDK reads it.

These tests talk to it through the official SDK client (``AnthropicModel`` and plain
``anthropic.Anthropic``), over a real loopback socket: what the SDK parses from the server's
stream must be the message the scripted model behind it produced, and its errors must reach
the SDK as the same classes with the same headers. That is what lets the chapters' live
cells be tested against it (``test_live_chapters.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest
from conftest import reachable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness.model import DEFAULT_MODEL, AnthropicModel, ScriptedModel, faults, reply, tool_call
from tests.local_api import LocalMessagesAPI, stream_events

MODEL = DEFAULT_MODEL  # the course's model
TOOLS = [
    {"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}},
    {"name": "grep", "description": "Search files.", "input_schema": {"type": "object"}},
]


@pytest.fixture
def server() -> Iterator[LocalMessagesAPI]:
    with LocalMessagesAPI(ScriptedModel(id_prefix="wire")) as api, reachable(api.address):
        yield api


def client(api: LocalMessagesAPI, key: str | None = "any-key") -> AnthropicModel:
    return AnthropicModel(api_key=key, base_url=api.url)


texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=300
).filter(str.strip)
inputs = st.dictionaries(
    st.text(alphabet="abcdefghij_", min_size=1, max_size=8),
    st.one_of(st.integers(), st.text(max_size=40), st.lists(st.integers(), max_size=4)),
    max_size=4,
)
replies = (
    st.tuples(
        st.one_of(st.none(), texts),
        st.lists(st.builds(tool_call, st.sampled_from(["read_file", "grep"]), inputs), max_size=3),
    )
    .filter(lambda parts: parts[0] is not None or bool(parts[1]))
    .map(lambda parts: reply(parts[0], tool_calls=parts[1]))
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(step=replies, max_tokens=st.sampled_from([5, 64, 4_000]))
def test_a_streamed_reply_arrives_as_the_message_the_model_behind_the_server_made(
    server: LocalMessagesAPI, step: Any, max_tokens: int
) -> None:
    # The same reply, made twice by the same kind of model: once here, once behind the server.
    local = ScriptedModel([step], id_prefix="wire")
    server.model = ScriptedModel([step], id_prefix="wire")
    request = {
        "model": MODEL,
        "max_tokens": max_tokens,
        "messages": [m.user("Go")],
        "tools": TOOLS,
    }

    expected = local.create(**request)
    got = client(server).create(**request)

    assert got.model_dump(exclude={"content"}) == expected.model_dump(exclude={"content"})
    assert [b.model_dump() for b in got.content] == [b.model_dump() for b in expected.content]


def test_a_reply_without_streaming_is_one_json_message(server: LocalMessagesAPI) -> None:
    server.model.extend([reply("Plain.", tool_calls=[tool_call("grep", pattern="x")])])
    sdk = anthropic.Anthropic(api_key="any-key", base_url=server.url, max_retries=0)

    got = sdk.messages.create(model=MODEL, max_tokens=100, messages=[m.user("Go")])  # type: ignore[list-item]

    assert [b.type for b in got.content] == ["text", "tool_use"]
    assert got.stop_reason == "tool_use"
    assert "stream" not in server.received[-1].body


def test_the_stream_holds_the_events_the_api_sends_in_their_order() -> None:
    message = ScriptedModel(
        [reply("Hi there", tool_calls=[tool_call("grep", pattern="x")])]
    ).create(model=MODEL, max_tokens=100, messages=[m.user("Go")])

    names = [name for name, _ in stream_events(message)]

    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert names.count("content_block_start") == names.count("content_block_stop") == 2
    start = dict(stream_events(message))["message_start"]["message"]
    assert start["content"] == [] and start["stop_reason"] is None


def test_usage_with_cache_reads_survives_the_wire(server: LocalMessagesAPI) -> None:
    server.model.extend([reply("One."), reply("Two.")])
    model = client(server)
    system = [
        {"type": "text", "text": "You review code. " * 400, "cache_control": {"type": "ephemeral"}}
    ]

    model.create(model=MODEL, max_tokens=50, system=system, messages=[m.user("First?")])
    second = model.create(model=MODEL, max_tokens=50, system=system, messages=[m.user("Second?")])

    usage = second.usage
    assert usage.cache_read_input_tokens and usage.cache_read_input_tokens > 1_000
    prompt = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    assert prompt == server.model.requests[-1].input_tokens


def test_an_api_error_reaches_the_sdk_as_its_own_class_with_its_headers(
    server: LocalMessagesAPI,
) -> None:
    server.model.extend([faults.rate_limited(20), faults.overloaded(), reply("fine")])
    model = client(server)

    with pytest.raises(anthropic.RateLimitError) as limited:
        model.create(model=MODEL, max_tokens=50, messages=[m.user("Go")])
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        model.create(model=MODEL, max_tokens=50, messages=[m.user("Go")])

    assert limited.value.response.headers["retry-after"] == "20"
    assert overloaded.value.status_code == 529
    assert limited.value.response.headers["request-id"].startswith("req_local_")
    assert (
        model.create(model=MODEL, max_tokens=50, messages=[m.user("Go")]).content[0].type == "text"
    )


def test_an_invalid_conversation_is_refused_with_the_apis_400(server: LocalMessagesAPI) -> None:
    unanswered = [
        m.user("Go"),
        m.assistant([{"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {}}]),
        m.user("And?"),
    ]

    with pytest.raises(anthropic.BadRequestError, match="tool_use` ids were found without"):
        client(server).create(model=MODEL, max_tokens=50, messages=unanswered)


def test_a_request_without_a_key_is_refused_with_401(server: LocalMessagesAPI) -> None:
    body = {"model": MODEL, "max_tokens": 10, "messages": [m.user("Go")]}

    response = httpx2.post(
        f"{server.url}/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"}
    )

    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"
    assert server.model.requests == []


@pytest.mark.parametrize("header", ["x-api-key", "authorization"])
def test_a_key_is_taken_from_either_header_the_api_reads(
    server: LocalMessagesAPI, header: str
) -> None:
    server.model.extend([reply("ok")])
    value = "k" if header == "x-api-key" else "Bearer k"
    body = {"model": MODEL, "max_tokens": 10, "messages": [m.user("Go")]}

    response = httpx2.post(
        f"{server.url}/v1/messages",
        json=body,
        headers={"anthropic-version": "2023-06-01", header: value},
    )

    assert response.status_code == 200 and response.json()["content"][0]["text"] == "ok"


def test_the_key_travels_in_a_header_and_is_never_kept(server: LocalMessagesAPI) -> None:
    server.model.extend([reply("ok")])

    client(server, key="secret-key-123").create(model=MODEL, max_tokens=10, messages=[m.user("Go")])

    (received,) = server.received
    assert "secret-key-123" not in repr(received)
    assert received.headers["anthropic-version"]


def test_tokens_are_counted_by_the_model_behind_the_server(server: LocalMessagesAPI) -> None:
    messages = [m.user("Count these words, please.")]

    counted = client(server).count_tokens(model=MODEL, messages=messages, tools=TOOLS)

    assert counted == server.model.count_tokens(messages=messages, tools=TOOLS)


def test_a_server_without_token_counting_answers_404() -> None:
    with (
        LocalMessagesAPI(ScriptedModel(), count_tokens=False) as api,
        reachable(api.address),
        pytest.raises(anthropic.NotFoundError),
    ):
        client(api).count_tokens(model=MODEL, messages=[m.user("Hi")])


def test_a_model_that_cannot_answer_is_a_500_and_a_recorded_failure(
    server: LocalMessagesAPI,
) -> None:
    with pytest.raises(anthropic.InternalServerError, match="ScriptExhausted"):
        client(server).create(model=MODEL, max_tokens=10, messages=[m.user("Go")])

    assert len(server.failures) == 1 and "ScriptExhausted" in server.failures[0]
