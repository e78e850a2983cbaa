"""The message builders: user and assistant messages, content blocks, and reading them back.

A message is a plain ``dict`` in the Messages API's shape (:data:`MessageDict`), its content a
list of block dicts (:data:`Block`). :func:`from_reply` turns a model's reply into the
message to append, safe to send back; :func:`blocks`, :func:`tool_uses`, :func:`tool_results`
and :func:`text_of` read a message whatever form its content takes.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from anthropic.types import Message as APIMessage

MessageDict = dict[str, Any]
Block = dict[str, Any]


def text(text: str) -> Block:
    return {"type": "text", "text": text}


def user(content: str | Iterable[Block]) -> MessageDict:
    """A user message: a prompt string, or a list of blocks (tool results, text)."""
    return {"role": "user", "content": content if isinstance(content, str) else list(content)}


def assistant(content: str | Iterable[Block] | APIMessage) -> MessageDict:
    """An assistant message from text, blocks, or a model reply (an SDK ``Message``)."""
    if isinstance(content, APIMessage):
        blocks = [as_block(block) for block in content.content]
        return {"role": "assistant", "content": blocks}
    return {"role": "assistant", "content": content if isinstance(content, str) else list(content)}


# Claude Code's placeholder for a reply with nothing left in it: the API refuses empty content.
NO_CONTENT = "(no content)"


def from_reply(reply: APIMessage) -> MessageDict:
    """The assistant message to append for a model reply, safe to send back to the API.

    Tool calls are kept only when the model stopped *to* call them (``stop_reason ==
    "tool_use"``): a reply cut off by ``max_tokens`` may end in an incomplete call that
    must not run and would otherwise sit unanswered. A reply left empty becomes
    ``"(no content)"``, as in Claude Code. A text block with only whitespace (the model
    sometimes sends ``"\\n\\n"`` before a call) is dropped: the API refuses it when sent back.
    """
    message = assistant(reply)
    kept = [
        b
        for b in message["content"]
        if (b.get("type") != "tool_use" or reply.stop_reason == "tool_use")
        and not _is_blank_text(b)
    ]
    message["content"] = kept or [text(NO_CONTENT)]
    return message


def _is_blank_text(block: Mapping[str, Any]) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def tool_use(tool_use_id: str, name: str, input: Mapping[str, Any]) -> Block:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": dict(input)}


def tool_result(tool_use_id: str, content: str | list[Block], *, is_error: bool = False) -> Block:
    """A ``tool_result`` block; ``is_error`` tells the model the call failed and why."""
    block: Block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def as_block(block: Any) -> Block:
    """A content block as a dict: SDK block objects (``reply.content[0]``) become their JSON."""
    if isinstance(block, dict):
        return block  # the same object: callers may rely on editing it in place
    if isinstance(block, Mapping):
        return dict(block)
    dump = getattr(block, "model_dump", None)
    if callable(dump):
        return dict(dump(mode="json", exclude_none=True))
    raise TypeError(f"a content block must be a dict or an SDK block, not {type(block).__name__}")


def blocks(message: Mapping[str, Any]) -> list[Block]:
    """A message's content as a list of block dicts (a string becomes one text block).

    SDK block objects are accepted as the SDK accepts them (appending ``reply.content`` as
    the SDK's examples do) and turned into their JSON form.
    """
    content = message.get("content")
    if isinstance(content, str):
        return [text(content)]
    return [as_block(b) for b in content or []]


T = TypeVar("T")

_ATOMS = (str, int, float, bool, type(None))


def fresh(value: T) -> T:
    """A copy of ``value`` that shares nothing mutable with it, as ``copy.deepcopy`` makes.

    Requests, schemas and messages are JSON-like data (dicts, lists and tuples of text,
    numbers, booleans and None): for those this walks the data directly, several times faster
    than ``deepcopy``, which records every object it meets (copies of requests were a third of
    a scripted session's time). Anything else inside is handed to ``deepcopy``."""
    return cast(T, _fresh(value))


def _fresh(value: Any) -> Any:
    if isinstance(value, _ATOMS):
        return value
    if type(value) is dict:
        return {key: _fresh(item) for key, item in value.items()}
    if type(value) is list:
        return [_fresh(item) for item in value]
    if type(value) is tuple:
        return tuple(_fresh(item) for item in value)
    return copy.deepcopy(value)


def normalize(messages: Sequence[Mapping[str, Any]]) -> list[MessageDict]:
    """Plain-dict copies of ``messages``, as they go over the wire."""
    out: list[MessageDict] = []
    for message in messages:
        copy = dict(message)
        if not isinstance(copy.get("content"), str) and copy.get("content") is not None:
            copy["content"] = [as_block(b) for b in copy["content"]]
        out.append(copy)
    return out


def tool_uses(message: Mapping[str, Any]) -> list[Block]:
    return [b for b in blocks(message) if b.get("type") == "tool_use"]


def tool_results(message: Mapping[str, Any]) -> list[Block]:
    return [b for b in blocks(message) if b.get("type") == "tool_result"]


def text_of(message: Mapping[str, Any]) -> str:
    """All the text blocks of a message, joined."""
    return "".join(str(b.get("text", "")) for b in blocks(message) if b.get("type") == "text")
