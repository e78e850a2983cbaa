"""How the scripted model shapes a scripted reply into what the API would return.

A reply longer than ``max_tokens`` is cut, with ``stop_reason="max_tokens"``; one that runs
into the end of the context window gets ``model_context_window_exceeded``. A stop sequence
ends the reply where it appears. And the same request, sent again after a reply was cut,
is recognised by its regeneration key, so that it gets the same step again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Literal

from anthropic.types import TextBlock, ToolUseBlock

from harness import tokens
from harness.model.scripted.script import Reply, Request


def _regeneration_key(request: Request) -> str:
    """What makes two requests "the same" for a regenerated reply: all but the model and
    ``max_tokens`` (the fields a harness changes when it re-sends a cut request)."""
    body = {
        "messages": request.messages,
        "system": request.system,
        "tools": request.tools,
        "extra": request.extra,
    }
    return json.dumps(body, sort_keys=True, default=str, ensure_ascii=False)


Content = list[TextBlock | ToolUseBlock]


def _fit(
    step: Reply, budget: int, new_id: Callable[[Literal["msg", "toolu"]], str]
) -> tuple[Content, bool]:
    """The reply's blocks that fit in ``budget`` output tokens, and whether any were cut.

    Text is cut mid-way, as a real truncated reply is. A tool call that does not fit whole is
    dropped. (The live API may instead return it incomplete; either way a harness must not
    run the calls of a truncated reply.)
    """
    content: Content = []
    left = budget
    if step.text is not None:
        cost = tokens.BLOCK_OVERHEAD + tokens.estimate_text(step.text)
        if cost <= left:
            content.append(TextBlock(type="text", text=step.text))
            left -= cost
        else:
            partial = tokens.truncate_text(step.text, left - tokens.BLOCK_OVERHEAD)
            if partial:
                content.append(TextBlock(type="text", text=partial))
            return content, True
    for call in step.tool_calls:
        cost = tokens.estimate_block({"type": "tool_use", "name": call.name, "input": call.input})
        if cost > left:
            return content, True
        content.append(
            ToolUseBlock(
                type="tool_use", id=new_id("toolu"), name=call.name, input=dict(call.input)
            )
        )
        left -= cost
    return content, False


def _apply_stop_sequences(step: Reply, stop_sequences: Sequence[str]) -> tuple[Reply, str | None]:
    """Cut the reply's text at the earliest stop sequence; generation ends there, so the
    tool calls that would have followed the text are never made."""
    if step.text is None:
        return step, None
    hits = [(step.text.find(s), s) for s in stop_sequences if s and s in step.text]
    if not hits:
        return step, None
    position, sequence = min(hits)
    return Reply(text=step.text[:position] or None), sequence
