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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import anthropic
from anthropic.types import Message


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
            return stream.get_final_message()

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
