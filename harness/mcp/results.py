"""A server's answer, made into a ``tool_result`` the API accepts.

An MCP ``CallToolResult`` holds content blocks of MCP's own kinds, which are not the API's:
text, images of any type, audio, links to resources, embedded resources (text or binary),
and perhaps ``structuredContent``. :func:`result_content` turns them into what a
``tool_result`` may hold, as Claude Code's ``transformResultContent`` does (openclaude
``src/services/mcp/client.ts``):

* text → a text block, its hidden characters removed
  (:func:`harness.mcp.schema.sanitize_unicode`);
* an image → an image block, if it really is JPEG, PNG, GIF or WebP (the API takes no
  other, vision docs "Supported formats"; Claude Code re-encodes with its image library and
  uses the type it finds, we read the type from the data's first bytes) and at most
  :data:`MAX_IMAGE_BASE64` long; otherwise a line saying what was left out;
* audio → a line (the API takes no audio; Claude Code saves it to a file);
* a resource link → ``[Resource link: name] uri (description)``, Claude Code's words;
* an embedded resource → ``[Resource from server at uri] text``; an image blob as an image
  after that line; any other blob, a line with its type and size.

Then, as Claude Code's ``processMCPResult`` and ``truncateMcpContent``
(``src/utils/mcpValidation.ts``): a result estimated over ``max_tokens``
(:data:`MAX_MCP_OUTPUT_TOKENS`, an image counting :data:`IMAGE_TOKEN_ESTIMATE`) is cut and
:func:`truncation_notice` appended; and an empty one becomes Claude Code's
``(<tool> completed with no output)`` (``src/utils/toolResultStorage.ts``), because the API
refuses an empty text block. Never raises, whatever the server sent.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from typing import Any

import mcp_types

from harness.mcp.schema import sanitize_unicode
from harness.tokens import estimate_text, truncate_text

MAX_MCP_OUTPUT_TOKENS = 25_000
"""Claude Code's cap on an MCP tool's output, in tokens (``DEFAULT_MAX_MCP_OUTPUT_TOKENS``,
``src/utils/mcpValidation.ts``; "the default maximum is 25,000 tokens", docs "MCP output
limits and warnings"; its environment variable ``MAX_MCP_OUTPUT_TOKENS`` overrides it)."""

IMAGE_TOKEN_ESTIMATE = 1600
"""What Claude Code counts an image as when it sizes a result (``IMAGE_TOKEN_ESTIMATE``)."""

IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
"""The image types the API accepts (vision docs; Claude Code's ``IMAGE_MIME_TYPES``)."""

MAX_IMAGE_BASE64 = 5 * 1024 * 1024
"""Our cap on one image's base64 text: the API takes 10 MB directly, Amazon Bedrock and
Google Cloud 5 MB (vision docs, "Request limits"); the smaller works everywhere."""

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def truncation_notice(max_tokens: int) -> str:
    """Claude Code's words after a cut result (``getTruncationMessage``)."""
    return (
        f"\n\n[OUTPUT TRUNCATED - exceeded {max_tokens} token limit]\n\nThe tool output was "
        "truncated. If this MCP server provides pagination or filtering tools, use them to "
        "retrieve specific portions of the data. If pagination is not available, inform the "
        "user that you are working with truncated output and results may be incomplete."
    )


def result_content(
    result: mcp_types.CallToolResult,
    *,
    max_tokens: int = MAX_MCP_OUTPUT_TOKENS,
    name: str = "tool",
    server: str = "server",
    prefer_structured: bool = False,
) -> tuple[str | list[dict[str, Any]], bool]:
    """The ``tool_result`` content for ``result``, and whether the server called it an error.

    Text only comes back as one string (the blocks' texts joined by newlines), anything
    with an image as a list of blocks. ``name`` (the tool's full name) and ``server`` go
    into the words for an empty result and for resources. ``structuredContent`` is shown
    (as compact JSON) when there is no other content; ``prefer_structured=True`` shows it
    whenever it is there, as Claude Code does (``transformMCPResult``), though servers
    send the same data as text too.
    """
    is_error = getattr(result, "is_error", False) is True
    try:
        blocks = _blocks(result, server, prefer_structured)
        blocks = _capped(blocks, max(1, int(max_tokens)))
    except Exception as error:  # a garbage result must not crash the loop
        blocks = [_text(f"[The result from {server} could not be read: {type(error).__name__}]")]
    if not blocks:
        blocks = [_text(f"({name} completed with no output)")]
    if all(b["type"] == "text" for b in blocks):
        return "\n".join(b["text"] for b in blocks), is_error
    return blocks, is_error


def _blocks(
    result: mcp_types.CallToolResult, server: str, prefer_structured: bool
) -> list[dict[str, Any]]:
    content = getattr(result, "content", None)
    items = list(content) if isinstance(content, list | tuple) else []
    structured = getattr(result, "structured_content", None)
    if structured is not None and (prefer_structured or not items):
        text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"), default=str)
        return [_text(sanitize_unicode(text))]
    blocks: list[dict[str, Any]] = []
    for item in items:
        blocks.extend(_convert(item, server))
    return [b for b in blocks if b["type"] != "text" or b["text"].strip()]


def _convert(item: object, server: str) -> Iterable[dict[str, Any]]:
    if isinstance(item, mcp_types.TextContent):
        return [_text(sanitize_unicode(_string(item.text)))]
    if isinstance(item, mcp_types.ImageContent):
        return [_image(item.data, item.mime_type, f"[Image from {server}]")]
    if isinstance(item, mcp_types.AudioContent):
        note = f"[Audio from {server}] {_binary(item.data, item.mime_type)}, not shown"
        return [_text(note + " (the API takes no audio)")]
    if isinstance(item, mcp_types.ResourceLink):
        line = f"[Resource link: {_string(item.name)}] {_string(item.uri)}"
        if item.description:
            line += f" ({_string(item.description)})"
        return [_text(sanitize_unicode(line))]
    if isinstance(item, mcp_types.EmbeddedResource):
        return _resource(item.resource, server)
    kind = getattr(item, "type", type(item).__name__)
    return [_text(f"[A {_string(kind)[:40]} block from {server}, not shown]")]


def _resource(resource: object, server: str) -> list[dict[str, Any]]:
    prefix = f"[Resource from {server} at {_string(getattr(resource, 'uri', '?'))}] "
    if isinstance(resource, mcp_types.TextResourceContents):
        return [_text(sanitize_unicode(prefix + _string(resource.text)))]
    if isinstance(resource, mcp_types.BlobResourceContents):
        mime = resource.mime_type
        if mime in IMAGE_MEDIA_TYPES:
            image = _image(resource.blob, mime, prefix.rstrip())
            return [_text(prefix), image] if image["type"] == "image" else [image]
        return [_text(prefix + _binary(resource.blob, mime) + ", not shown")]
    return [_text(prefix + "(no content)")]


def _image(data: object, mime: object, label: str) -> dict[str, Any]:
    """An image block, or a text block that says why there is none."""
    if not isinstance(data, str):
        return _text(f"{label} image data that is not text, not shown")
    if len(data) > MAX_IMAGE_BASE64:
        return _text(f"{label} {_binary(data, mime)}: larger than the API's limit, not shown")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return _text(f"{label} image data that is not base64, not shown")
    found = _media_type(raw[:16])
    if found is None:
        shown = _string(mime)[:60] or "unknown type"
        return _text(
            f"{label} {shown} image, not shown: the API takes JPEG, PNG, GIF and WebP only"
        )
    return {"type": "image", "source": {"type": "base64", "media_type": found, "data": data}}


def _media_type(head: bytes) -> str | None:
    for magic, media_type in _MAGIC:
        if head.startswith(magic):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _binary(data: object, mime: object) -> str:
    size = len(data) * 3 // 4 if isinstance(data, str) else 0
    return f"Binary content ({_string(mime)[:60] or 'unknown type'}, about {size} bytes)"


def _capped(blocks: list[dict[str, Any]], max_tokens: int) -> list[dict[str, Any]]:
    """``blocks`` cut to ``max_tokens`` (estimated) with the notice, as Claude Code cuts."""
    if sum(_tokens(b) for b in blocks) <= max_tokens:
        return blocks
    notice = truncation_notice(max_tokens)
    budget = max_tokens - estimate_text(notice)
    kept: list[dict[str, Any]] = []
    for block in blocks:
        if budget <= 0:
            break
        if block["type"] == "image":
            if budget >= IMAGE_TOKEN_ESTIMATE:
                kept.append(block)
                budget -= IMAGE_TOKEN_ESTIMATE
            continue
        text = truncate_text(block["text"], budget)
        if text:
            kept.append(_text(text))
        budget -= estimate_text(text)
        if text != block["text"]:
            break
    if kept and kept[-1]["type"] == "text":
        kept[-1] = _text(kept[-1]["text"] + notice)
    else:
        kept.append(_text(notice.lstrip()))
    return kept


def _tokens(block: dict[str, Any]) -> int:
    return IMAGE_TOKEN_ESTIMATE if block["type"] == "image" else estimate_text(block["text"])


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _string(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)
