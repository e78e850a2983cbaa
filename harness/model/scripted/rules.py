"""The API's request rules that the scripted model enforces, worded as the API words them.

It checks each request as the API does: the body must be sendable (no lone surrogates in
any text), ``max_tokens`` a whole number from 1 up to the model's output limit, system
blocks non-blank text, tools well named (``^[a-zA-Z0-9_-]{1,128}$``, unique) and with an
object ``input_schema``, the conversation valid (``harness.messages.validate``), the prompt
within the context window (``prompt is too long: N tokens > M maximum``), deferred tools
(``defer_loading``) as the tool search page states (not all of them deferred, none with a
``cache_control``, at most 10,000) and every ``tool_reference`` naming a tool of the
request; each refusal is a 400 ``BadRequestError`` worded as the API words it (or as close
as we could find, and said so where the wording is our guess). Each function here returns
the wording of one refusal, or ``None``; ``ScriptedModel`` raises it (and checks the sizes
it knows itself).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.messages import CONTENT_BLOCK_TYPES, TOOL_NAME_PATTERN, Problem, is_valid_tool_name
from harness.model.scripted.script import Request

# The API's own wording for the conversation errors the scripted model refuses. Sources:
# the API's error bodies as quoted in public issue threads (e.g. anthropics/claude-code#6696
# for tool_use.input); where no quote was found, the wording is our guess in the style of the
# API's other validation errors (pydantic's), and the entry says so.
_API_WORDING: dict[str, str] = {
    "tool_use_unanswered": "messages.{index}: `tool_use` ids were found without `tool_result` "
    "blocks immediately after: {tool_use_id}. Each `tool_use` block must have a corresponding "
    "`tool_result` block in the next message.",
    "tool_result_orphan": "messages.{index}.content: unexpected `tool_use_id` found in "
    "`tool_result` blocks: {tool_use_id}. Each `tool_result` block must have a corresponding "
    "`tool_use` block in the previous message.",
    "empty_content": "messages.{index}: all messages must have non-empty content except for "
    "the optional final assistant message",
    "empty_text": "messages: text content blocks must contain non-whitespace text",
    "first_not_user": 'messages: first message must use the "user" role',
    # Quoted in anthropics/claude-code#6696 and anthropic-sdk-typescript#648.
    "bad_tool_input": "messages.{index}.content.{block}.tool_use.input: Input should be a "
    "valid dictionary",
    # Our guess: pydantic's wording for a tagged union whose tag is unknown.
    "unknown_block_type": "messages.{index}.content.{block}: Input tag {tag} found using "
    "'type' does not match any of the expected tags: {expected}",
    # Our guess, in the same style.
    "bad_tool_result_content": "messages.{index}.content.{block}.tool_result.content: Input "
    "should be a valid string or a list of content blocks",
    # Quoted in anthropics/claude-code#3277 and many others (with a position); the scripted
    # model reports this one before looking at the rest of the request (_json_error).
    "invalid_unicode": "The request body is not valid JSON: no low surrogate in string",
}


def _api_message(problem: Problem, messages: Sequence[Mapping[str, Any]]) -> str:
    template = _API_WORDING.get(problem.kind)
    if template is None:
        return f"messages.{problem.index}: {problem.detail}"
    tag = "None"
    if problem.kind == "unknown_block_type" and problem.block is not None:
        kind = messages[problem.index]["content"][problem.block].get("type")
        if kind is None:  # no tag at all: pydantic says so differently (our guess too)
            return (
                f"messages.{problem.index}.content.{problem.block}: Unable to extract tag "
                "using discriminator 'type'"
            )
        tag = repr(kind)
    return template.format(
        index=problem.index,
        block=problem.block,
        tool_use_id=problem.tool_use_id,
        tag=tag,
        expected=", ".join(repr(t) for t in CONTENT_BLOCK_TYPES),
    )


def _json_error(request: Request) -> str | None:
    """The API's answer to a body holding a lone surrogate, or ``None`` if it has none.

    The installed SDK (anthropic 2.12) encodes the body as UTF-8 and fails before sending
    (``UnicodeEncodeError: ... surrogates not allowed``); clients that escape non-ASCII
    (``JSON.stringify``, older SDKs) send ``"\\ud800"`` and the API refuses the body. We answer
    the way the API does. Its parser's words for a high surrogate with no low one are quoted
    in many issues ("no low surrogate in string: line 1 column N (char N-1)"); for a lone low
    surrogate (what ``os.fsdecode`` makes) we use the same parser family's "invalid high
    surrogate in string" (our guess). The position is in our own serialisation of the body,
    not byte-for-byte the SDK's.
    """
    body = {
        "max_tokens": request.max_tokens,
        "messages": request.messages,
        "model": request.model,
        **({"system": request.system} if request.system is not None else {}),
        **({"tools": request.tools} if request.tools is not None else {}),
        **request.extra,
    }
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        at = error.start  # the first character UTF-8 cannot encode: a surrogate
    else:
        return None
    high = ord(text[at]) <= 0xDBFF  # D800-DBFF opens a pair; DC00-DFFF may only close one
    what = "no low surrogate in string" if high else "invalid high surrogate in string"
    return f"The request body is not valid JSON: {what}: line 1 column {at + 1} (char {at})"


def _max_tokens_error(max_tokens: object) -> str | None:
    # The API's validation wording as pydantic gives it (our guess: no quote found). A bool
    # is refused too, as JSON true is not an integer. The API may coerce "100" or 100.0
    # (pydantic's lax mode); we refuse any non-int, as the SDK's own type says ``int``.
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        return "max_tokens: Input should be a valid integer"
    if max_tokens < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    return None


def _system_error(system: str | list[dict[str, Any]] | None) -> str | None:
    """A system prompt given as blocks must be text blocks with some non-blank text.

    The wording mirrors the API's for message text blocks ("messages: text content blocks
    must be non-empty" / "... must contain non-whitespace text", quoted in many issues) with
    ``system`` for ``messages``: our guess. A plain string system prompt is not checked.
    """
    if not isinstance(system, list):
        return None
    for i, block in enumerate(system):
        if block.get("type") != "text":
            return f"system.{i}.type: Input should be 'text'"  # our guess (pydantic's wording)
        text = block.get("text")
        if not isinstance(text, str) or not text:
            return "system: text content blocks must be non-empty"
        if not text.strip():
            return "system: text content blocks must contain non-whitespace text"
    return None


_PROPERTY_KEY = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")


def _tools_error(tools: list[dict[str, Any]] | None) -> str | None:
    """Custom tools (no ``type``, or ``"custom"``) need a valid name and an object schema.

    Server and Anthropic-schema tools (``web_search_20250305``, ``bash_20250124``, ...) have
    fixed names and no ``input_schema``; only their names' uniqueness is checked. Wording:
    the name pattern, "Field required" and "Tool names must be unique." are quoted in public
    issues (e.g. modelcontextprotocol#1345, su-kaka/gcli2api#392, Kilo-Org/kilocode#12238,
    microsoft/vscode#276110); "Input should be 'object'" and "Input should be a valid
    dictionary" for a schema are our guesses in the same style.
    """
    names: list[str] = []
    for i, tool in enumerate(tools or []):
        if tool.get("type") not in (None, "custom"):
            if isinstance(tool.get("name"), str):
                names.append(tool["name"])
            continue
        where = f"tools.{i}.custom"
        if "name" not in tool:
            return f"{where}.name: Field required"
        if not is_valid_tool_name(tool["name"]):
            return f"{where}.name: String should match pattern '{TOOL_NAME_PATTERN}'"
        names.append(tool["name"])
        if "input_schema" not in tool:
            return f"{where}.input_schema: Field required"
        schema = tool["input_schema"]
        if not isinstance(schema, dict):
            return f"{where}.input_schema: Input should be a valid dictionary"
        if "type" not in schema:
            return f"{where}.input_schema.type: Field required"
        if schema["type"] != "object":
            return f"{where}.input_schema.type: Input should be 'object'"
        # Two more refusals quoted in public issues (harness.mcp.schema refuses such MCP
        # tools first; the sources page has the addresses).
        if any(key in schema for key in ("oneOf", "allOf", "anyOf")):
            return (
                f"{where}.input_schema: input_schema does not support oneOf, allOf, or anyOf "
                "at the top level"
            )
        properties = schema.get("properties")
        if isinstance(properties, dict) and any(
            not _PROPERTY_KEY.fullmatch(str(key)) for key in properties
        ):
            return (
                f"{where}.input_schema.properties: Property keys should match pattern "
                f"'{_PROPERTY_KEY.pattern}'"
            )
    if len(names) != len(set(names)):
        return "tools: Tool names must be unique."
    return None


# Deferred tools and tool references: the rules stated on the tool search page,
# https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool ("Error
# handling", "Prompt caching", "Limits"; pinned copy checked 2026-11-27).
MAX_DEFERRED_TOOLS = 10_000
"""Documented: "Maximum deferred tools: 10,000 tools with ``defer_loading: true`` per request"."""


def _deferred_tools_error(tools: list[dict[str, Any]] | None) -> str | None:
    """What the API says of a request's deferred tools, or ``None`` if it accepts them."""
    deferred = [t for t in tools or [] if t.get("defer_loading") is True]
    if not deferred:
        return None
    # Documented, with this wording ("HTTP errors (400 status)", "All tools deferred").
    if len(deferred) == len(tools or []):
        return "At least one tool must have defer_loading=false. All tools cannot be deferred."
    # Documented ("A tool with defer_loading: true can't also carry cache_control: the API
    # returns a 400"); the wording is our guess.
    for i, tool in enumerate(tools or []):
        if tool.get("defer_loading") is True and tool.get("cache_control"):
            return f"tools.{i}: a tool with defer_loading=true cannot also have cache_control"
    # The limit is documented; that going over it is a 400, and its wording, are our guess.
    if len(deferred) > MAX_DEFERRED_TOOLS:
        return (
            f"tools: at most {MAX_DEFERRED_TOOLS} tools may have defer_loading=true, "
            f"found {len(deferred)}"
        )
    return None


def _tool_reference_error(
    messages: Sequence[Mapping[str, Any]], tools: list[dict[str, Any]] | None
) -> str | None:
    """A ``tool_reference`` naming no tool of the request, in the API's words, or ``None``.

    Documented, with this wording ("Missing tool definition": "Every tool referenced must
    have a corresponding tool definition in the top-level ``tools`` parameter"). A reference
    to a tool that is not deferred is accepted (nothing says otherwise). A model that calls a
    deferred tool no reference loaded yet is not refused here: the docs name no error for it
    (a tool_use comes from the model, which was never shown that tool).
    """
    names = {str(t.get("name")) for t in tools or []}
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            inner = block.get("content") if isinstance(block, Mapping) else None
            if not isinstance(block, Mapping) or block.get("type") != "tool_result":
                continue
            for item in inner if isinstance(inner, list) else []:
                if not isinstance(item, Mapping) or item.get("type") != "tool_reference":
                    continue
                if str(item.get("tool_name")) not in names:
                    return f"Tool reference '{item.get('tool_name')}' not found in available tools"
    return None


def _tool_search_error(request: Request) -> str | None:
    """The tool search rules above, for one request: its deferred tools, then its references."""
    return _deferred_tools_error(request.tools) or _tool_reference_error(
        request.messages, request.tools
    )
