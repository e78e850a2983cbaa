"""The live model over the real SDK client, with the HTTP layer replaced in-process.

No socket is opened (the transport is ``httpx2.MockTransport``), but everything above it is
the SDK's own code: request building, the streaming (SSE) parser, error mapping. So this
proves that ``AnthropicModel`` streams, returns a real ``Message``, sends what the harness
asked for, and surfaces errors without retrying (``max_retries=0``).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import pytest

from harness.model import DEFAULT_MODEL, AnthropicModel

MODEL = DEFAULT_MODEL  # the course's model


def sse(*events: tuple[str, dict[str, Any]]) -> bytes:
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


def streamed_reply() -> bytes:
    usage = {"input_tokens": 12, "output_tokens": 1, "cache_read_input_tokens": 0}
    return sse(
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_live_1",
                    "type": "message",
                    "role": "assistant",
                    "model": MODEL,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hel"},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "lo"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    )


class Recorder:
    def __init__(self, respond: Any) -> None:
        self.requests: list[httpx2.Request] = []
        self.respond = respond

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return self.respond(request)  # type: ignore[no-any-return]


def live_model(handler: Recorder) -> AnthropicModel:
    client = anthropic.Anthropic(
        api_key="test-key-not-real",
        base_url="https://api.example.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    return AnthropicModel(client)


def test_the_live_model_streams_and_returns_a_real_message() -> None:
    handler = Recorder(
        lambda r: httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=streamed_reply()
        )
    )
    reply = live_model(handler).create(
        model=MODEL,
        max_tokens=64_000,  # large: only a streamed request may ask for this much
        messages=[{"role": "user", "content": "Hi"}],
        system="Be brief.",
        tools=[{"name": "t", "description": "d", "input_schema": {"type": "object"}}],
    )
    assert isinstance(reply, anthropic.types.Message)
    assert reply.content[0].type == "text" and reply.content[0].text == "Hello"
    assert reply.stop_reason == "end_turn"
    assert reply.usage.output_tokens == 5
    sent = json.loads(handler.requests[0].content)
    assert sent["stream"] is True
    assert sent["max_tokens"] == 64_000
    assert sent["system"] == "Be brief."
    assert sent["tools"][0]["name"] == "t"


def test_the_live_model_leaves_out_system_and_tools_when_there_are_none() -> None:
    handler = Recorder(
        lambda r: httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=streamed_reply()
        )
    )
    live_model(handler).create(
        model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
    )
    sent = json.loads(handler.requests[0].content)
    assert "system" not in sent and "tools" not in sent


def test_a_429_surfaces_at_once_as_the_sdks_rate_limit_error_with_retry_after() -> None:
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    handler = Recorder(lambda r: httpx2.Response(429, headers={"retry-after": "30"}, json=body))
    with pytest.raises(anthropic.RateLimitError) as raised:
        live_model(handler).create(
            model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
        )
    assert raised.value.response.headers["retry-after"] == "30"
    assert len(handler.requests) == 1  # no hidden SDK retries: recovery is the harness's job


def test_the_default_client_has_the_sdks_retries_turned_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
    assert AnthropicModel().client.max_retries == 0


def test_count_tokens_asks_the_api_and_returns_its_number() -> None:
    handler = Recorder(lambda r: httpx2.Response(200, json={"input_tokens": 42}))
    n = live_model(handler).count_tokens(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    assert n == 42
    assert handler.requests[0].url.path.endswith("/v1/messages/count_tokens")


def test_max_retries_is_passed_to_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
    assert AnthropicModel(max_retries=2).client.max_retries == 2
    assert AnthropicModel(max_retries=5).client.max_retries == 5


def test_with_max_retries_the_client_retries_a_529_itself() -> None:
    # The SDK's own retry (what Recovery replaces); retry-after-ms keeps its real sleep at 1 ms.
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    responses = [
        httpx2.Response(529, headers={"retry-after-ms": "1"}, json=body),
        httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=streamed_reply()
        ),
    ]
    handler = Recorder(lambda r: responses.pop(0))
    client = anthropic.Anthropic(
        api_key="test-key-not-real",
        base_url="https://api.example.test",
        max_retries=1,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    reply = AnthropicModel(client).create(
        model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
    )
    assert reply.content[0].type == "text" and reply.content[0].text == "Hello"
    assert len(handler.requests) == 2
