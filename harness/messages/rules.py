"""What the API accepts: the block types it knows, a tool's name, text it can encode.

The facts :func:`~harness.messages.validation.validate` checks against, and the small checks
other modules use on their own: :func:`is_valid_tool_name` for a tool's definition,
:func:`valid_text` for a tool's output, :func:`bad_unicode` and
:func:`tool_result_content_problem` for a block read back from disk.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness.messages.builders import as_block

# The block types a message may hold: the ``type`` of each member of the SDK's
# ``anthropic.types.ContentBlockParam`` union (anthropic 2.12), in the union's order.
# tests/test_api_refusals.py checks this against the installed SDK.
CONTENT_BLOCK_TYPES: tuple[str, ...] = (
    "text",
    "image",
    "document",
    "search_result",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "tool_result",
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "tool_search_tool_result",
    "container_upload",
)

# The block types a tool_result's content list may hold (``ToolResultBlockParam.content``).
# A ``tool_reference`` (``{"type": "tool_reference", "tool_name": ...}``) names a tool of the
# request, which the API expands there into its full definition (tool search, chapter 14).
TOOL_RESULT_CONTENT_TYPES: tuple[str, ...] = (
    "text",
    "image",
    "search_result",
    "document",
    "tool_reference",
    "browser_state",
)

# A custom tool's name, as the API checks it. The API docs ("Define tools", as seen 2026-09)
# give ``^[a-zA-Z0-9_-]{1,128}$``; older docs and errors said ``{1,64}``.
TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,128}$"
_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)


def is_valid_tool_name(name: object) -> bool:
    """Whether the API accepts ``name`` as a tool's name (:data:`TOOL_NAME_PATTERN`)."""
    # fullmatch, not match: ``$`` alone also matches before a final newline.
    return isinstance(name, str) and _TOOL_NAME.fullmatch(name) is not None


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be sent: a lone surrogate (``"\\udc80"``) cannot be encoded."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so that it can be sent (a tool's
    output may carry them: ``os.fsdecode`` turns a file name's undecodable bytes into them)."""
    return text if is_utf8(text) else _SURROGATE.sub("\ufffd", text)


def bad_unicode(value: Any, where: str) -> str | None:
    """Where in ``value`` (a block, or a part of one) there is text that is not UTF-8."""
    if isinstance(value, str):
        return None if is_utf8(value) else where
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and not is_utf8(key):
                return f"{where} (a key)"
            found = bad_unicode(item, f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for n, item in enumerate(value):
            found = bad_unicode(item, f"{where}[{n}]")
            if found is not None:
                return found
    return None


def tool_result_content_problem(content: Any) -> str | None:
    """Why a tool_result's ``content`` is refused, or ``None``: a string or a list of blocks."""
    if isinstance(content, str):
        return None
    if not isinstance(content, (list, tuple)):
        return (
            "tool_result content must be a string or a list of content blocks, "
            f"not {type(content).__name__}"
        )
    for n, item in enumerate(content):
        if not isinstance(item, Mapping) and callable(getattr(item, "model_dump", None)):
            item = as_block(item)  # an SDK block object, sent as its JSON
        kind = item.get("type") if isinstance(item, Mapping) else None
        if not isinstance(item, Mapping):
            name = type(item).__name__
            return f"tool_result content[{n}] is not a content block (it is a Python {name})"
        if kind not in TOOL_RESULT_CONTENT_TYPES:
            known = ", ".join(TOOL_RESULT_CONTENT_TYPES)
            return f"tool_result content[{n}] has type {kind!r}; a tool result holds {known}"
        if kind == "tool_reference" and not isinstance(item.get("tool_name"), str):
            # ``ToolReferenceBlockParam.tool_name`` is required, a string (anthropic 2.12).
            return f"tool_result content[{n}] is a tool_reference with no tool_name (a string)"
    return None
