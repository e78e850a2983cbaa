"""What a span says about content, and only when content capture is on.

The GenAI conventions carry a conversation as JSON: a list of messages, each a ``role`` and
``parts`` (``text``, ``tool_call``, ``tool_call_response``); a reply's message adds its
``finish_reason``. The harness's messages are the API's, so the mapping is direct. Every value
is cut at :data:`~harness.tracing.names.CONTENT_MAX` characters: a trace backend refuses
larger attributes, and a trace is for finding where things went, not for keeping a transcript
(chapter 08 keeps that).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from anthropic.types import Message

from harness import messages as m
from harness.messages import valid_text
from harness.tracing.names import CONTENT_MAX

TRUNCATED = "…[truncated]"


def clip(text: str, limit: int = CONTENT_MAX) -> str:
    """``text``, at most ``limit`` characters, marked if it was cut, and valid UTF-8 (a lone
    surrogate, from a file name's undecodable bytes, would fail the exporter's whole batch)."""
    text = valid_text(text)
    return text if len(text) <= limit else text[: limit - len(TRUNCATED)] + TRUNCATED


def as_json(value: object) -> str:
    return clip(json.dumps(value, ensure_ascii=False, default=str))


def parts(content: Any) -> list[dict[str, Any]]:
    """A message's content as the conventions' parts."""
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    if not isinstance(content, list | tuple):
        return [{"type": type(content).__name__}]
    out: list[dict[str, Any]] = []
    for block in content:
        # ``.get`` throughout: a conversation read back from disk, or mended after a bad
        # reply, may hold a block without all its fields, and a trace must never fail a call.
        b = m.as_block(block) if isinstance(block, Mapping) else {"type": type(block).__name__}
        kind = b.get("type")
        if kind == "text":
            out.append({"type": "text", "content": b.get("text", "")})
        elif kind == "tool_use":
            out.append(
                {
                    "type": "tool_call",
                    "id": b.get("id"),
                    "name": b.get("name"),
                    "arguments": b.get("input"),
                }
            )
        elif kind == "tool_result":
            out.append(
                {
                    "type": "tool_call_response",
                    "id": b.get("tool_use_id"),
                    "response": result_text(b),
                }
            )
        else:  # images, documents, thinking: named, not copied
            out.append({"type": str(kind)})
    return out


def input_messages(messages: Sequence[Mapping[str, Any]]) -> str:
    """``gen_ai.input.messages``: the conversation as sent."""
    return as_json(
        [{"role": msg.get("role"), "parts": parts(msg.get("content", ""))} for msg in messages]
    )


def output_messages(reply: Message) -> str:
    """``gen_ai.output.messages``: the reply, with its stop reason."""
    content = [block.model_dump() for block in reply.content]
    message = {"role": "assistant", "parts": parts(content), "finish_reason": reply.stop_reason}
    return as_json([message])


def prompt_messages(prompt: str) -> str:
    """The run's prompt, as one user message."""
    return as_json([{"role": "user", "parts": parts(prompt)}])


def result_text(block: Mapping[str, Any]) -> str:
    """A ``tool_result``'s text (other blocks named by type)."""
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return f"[{type(content).__name__}]"
    return "\n".join(
        str(b.get("text", "")) if b.get("type") == "text" else f"[{b.get('type')}]"
        for b in (c if isinstance(c, Mapping) else {"type": type(c).__name__} for c in content)
    )
