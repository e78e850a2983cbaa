"""AnthropicModel: the live model, over the official SDK.

Two deliberate choices:

* ``max_retries=0`` unless you say otherwise. The SDK retries 408/409/429/5xx twice on its
  own (backoff capped at 8 s). The harness's error recovery (``harness.recovery``, chapter 06)
  does it with Claude Code's numbers, and must *see* every failure to count consecutive 529s
  or honour a long Retry-After; two layers of retries would hide that and multiply the waits
  (2 SDK retries inside each of 10 attempts is 30 requests). Without ``Recovery``, pass
  ``max_retries=2`` for the SDK's own.
* Streaming under the hood. The SDK refuses a non-streaming request whose ``max_tokens``
  could take longer than its timeout (long outputs must stream), so escalating a cut-off
  reply to a 64K output would fail. ``messages.stream(...).get_final_message()`` returns
  the same ``Message`` a plain ``create`` would.

A stream cut short is a failure, never a reply. When the server closes the connection cleanly
before ``message_stop``, the SDK's ``MessageStream`` ends without an exception and
``get_final_message()`` returns the half-built snapshot, with no stop reason. The harness
would go on with half an answer (a tool call whose input is cut, a sentence that stops). So
``create`` reads the events itself and raises :class:`StreamCut` unless the stream reached
``message_stop`` with a stop reason; a connection that breaks mid-stream (which the SDK lets
through as an ``httpx2`` error, not one of its own) is a ``StreamCut`` too. Recovery (chapter
06) retries it like any dropped connection, and nothing of the cut reply is kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import anthropic
import httpx2  # the HTTP client the SDK is built on (its fork of httpx)
from anthropic.types import Message

# The events the API sends; the SDK's stream adds its own after some ("text", "input_json").
_WIRE_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    }
)


class StreamCut(anthropic.APIConnectionError):
    """The reply's stream ended before ``message_stop``, or without a stop reason.

    A subclass of the SDK's ``APIConnectionError`` rather than a class of its own: the SDK has
    no error for a stream cut short (a clean close before ``message_stop`` raises nothing; a
    broken one raises ``httpx2``'s error unwrapped), and the failure is the same kind as a
    dropped connection (the answer did not arrive whole; sending the same request again may
    work). So every ``except anthropic.APIConnectionError`` written against the SDK, and
    ``harness.recovery.classify``, treat it as the retryable failure it is; recovery names it
    in its events by ``last_event``.
    """

    def __init__(self, request: httpx2.Request, *, last_event: str | None, detail: str) -> None:
        after = f"after {last_event}" if last_event else "before any event"
        super().__init__(
            message=f"The reply's stream was cut {after}: {detail}. The partial reply is "
            "discarded; send the request again.",
            request=request,
        )
        self.last_event = last_event
        """The type of the last event that arrived (None: none did)."""


class AnthropicModel:
    """The real Messages API behind the harness's ``Model`` protocol.

    The client reads ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` from the environment
    unless given. The key stays inside the client: it is never stored here, printed, or
    passed to tools.
    """

    def __init__(
        self,
        client: anthropic.Anthropic | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 0,
    ) -> None:
        # Without a client, build one; a key or base URL left out is read from the environment.
        self.client = client or anthropic.Anthropic(
            api_key=api_key, base_url=base_url, max_retries=max_retries
        )

    def __repr__(self) -> str:
        return f"AnthropicModel(base_url={str(self.client.base_url)!r})"

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
        params: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages}
        if system is not None:
            params["system"] = system
        if tools:
            params["tools"] = tools
        # The SDK's signatures want its TypedDicts; our dicts have the same shape.
        with self.client.messages.stream(**cast(Any, {**params, **extra})) as stream:
            request = stream.response.request
            last: str | None = None
            try:
                for event in stream:
                    if event.type in _WIRE_EVENTS:  # not the SDK's own ("text", ...)
                        last = event.type
                    if event.type == "message_stop":
                        final: Message = event.message
                        if final.stop_reason is None:
                            raise StreamCut(request, last_event=last, detail="no stop reason")
                        return final
            except httpx2.TimeoutException as error:  # the SDK's own mapping, as when sending
                raise anthropic.APITimeoutError(request) from error
            except httpx2.TransportError as error:  # the connection broke mid-stream
                raise StreamCut(request, last_event=last, detail=str(error)) from error
        raise StreamCut(request, last_event=last, detail="no message_stop event")

    def count_tokens(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        """The API's own count of a request's input tokens (``messages.count_tokens``)."""
        params: dict[str, Any] = {"model": model, "messages": messages}
        if system is not None:
            params["system"] = system
        if tools:
            params["tools"] = tools
        return self.client.messages.count_tokens(**cast(Any, params)).input_tokens
