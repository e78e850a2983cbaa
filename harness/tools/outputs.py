"""What a tool's output becomes in its ``tool_result``: the words for bad input, and text or blocks.

The dispatcher (:mod:`harness.tools.dispatch`) checks a call's input with
:func:`input_problem` before anything runs, and turns what the tool returned into the result's
content: text almost always (hooks, storage and caps work on text), but an image, or the
``tool_reference`` blocks of chapter 14's tool search, must reach the model as blocks
(:func:`kept_blocks`), since the API reads them only there.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from harness.messages import valid_text
from harness.tools.base import Tool, ToolOutput
from harness.tools.hooks import ToolUse
from harness.tools.storage import MAX_RESULT_CHARS, cap_output


def format_validation_error(tool: str, error: ValidationError) -> str:
    """A validation error the model can fix: each field, what was wrong, what it sent."""
    lines = [f"Invalid input for tool {tool!r}:"]
    for issue in error.errors():
        where = ".".join(str(part) for part in issue["loc"]) or "(input)"
        got = "" if issue["type"] == "missing" else f" (got {json.dumps(issue['input'])[:80]})"
        lines.append(f"- {where}: {issue['msg']}{got}")
    lines.append("Fix the input and call the tool again.")
    return "\n".join(lines)


def input_problem(tool: Tool[Any], use: ToolUse) -> str | None:
    """Why ``use`` does not fit ``tool``'s input schema, worded for the model; None if it fits."""
    problem = tool.input_problem(use.input)
    if isinstance(problem, ValidationError):
        return format_validation_error(use.name, problem)
    return problem


Content = str | list[dict[str, Any]]
"""A result's content as the API takes it: text, or blocks (an image, tool references)."""

_BLOCK_TYPES = frozenset({"text", "image", "tool_reference"})


def kept_blocks(output: ToolOutput | None) -> list[dict[str, Any]] | None:
    """The output's blocks when they must reach the model as blocks: an image, or the
    ``tool_reference`` blocks of a tool search (chapter 14), which the API expands only as a
    result's content. Text-only outputs go through the text path (hooks, storage, caps)."""
    if not isinstance(output, list) or not output:
        return None
    if not all(isinstance(b, dict) and b.get("type") in _BLOCK_TYPES for b in output):
        return None
    if all(b.get("type") == "text" for b in output):
        return None
    kept: list[dict[str, Any]] = []
    for block in output:
        if block.get("type") == "text":
            text = cap_output(valid_text(str(block.get("text", ""))), MAX_RESULT_CHARS)
            kept.append({"type": "text", "text": text or "(no text)"})
        else:
            kept.append(dict(block))
    return kept


def output_text(output: ToolOutput) -> str:
    """A tool's output as text (other blocks are named, ``[image block]``)."""
    if isinstance(output, str):
        return output
    return "\n".join(str(b.get("text", f"[{b.get('type')} block]")) for b in output)
