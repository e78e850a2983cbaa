"""Tool search: MCP tools sent deferred, and a tool that loads the ones the model asks for.

Every tool definition in a request costs its tokens on every turn. With a few MCP servers
that is tens of thousands of tokens before the model reads the task, and a change to the
tool list rewrites the whole prompt cache. Claude Code's answer, which this module follows:

* **Defer.** Each MCP tool is sent with ``defer_loading: true`` (:func:`deferred`). The API
  keeps a deferred definition out of the model's context and out of the cached prefix
  (https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool). Claude
  Code defers every MCP tool by default; ``ENABLE_TOOL_SEARCH=auto`` defers them only once
  their definitions reach 10% of the context window, ``auto:N`` at N%, ``false`` never
  (https://code.claude.com/docs/en/mcp, "Configure tool search"; :func:`mode_from_env`,
  :func:`should_defer`).
* **Announce.** The model sees only the deferred tools' names, one a line (Claude Code's
  ``formatDeferredToolLine`` renders the name alone): :func:`deferred_section` for a
  list known when the session starts, :func:`deferred_tools_reminder` for one that changes.
* **Search.** The ``ToolSearch`` tool (:func:`tool_search_tool`, Claude Code's tool and name)
  takes a query and answers with ``{"type": "tool_reference", "tool_name": ...}`` blocks;
  the API expands each into the tool's full definition at that point of the conversation,
  so the tools, the system prompt and the earlier messages, the cached prefix, stay as they
  were ("The prefix is untouched, so prompt caching is preserved":
  https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-use-with-prompt-caching).
  The model then calls the loaded tool like any other.

Where the names sit. Claude Code has sent them two ways: an ``<available-deferred-tools>``
message put in front of the conversation on every request (which "busts cache whenever the
pool changes", its source says), and now a ``<system-reminder>`` message appended when the
pool changes (``deferred_tools_delta``), which leaves the prefix alone. A harness session
connects its servers when it starts, so the pool is known then and fixed: a static section
of the system prompt is cached with the rest of it and costs the same. If the pool changes
later (a server restarted with other tools), do not edit that section (the system prompt and
every message after it would be written to the cache again): append the reminder.

Sources: Claude Code's ``src/tools/ToolSearchTool/*``, ``src/utils/toolSearch.ts``,
``src/utils/messages.ts`` and ``src/services/api/claude.ts`` at
github.com/Gitlawb/openclaude commit 421f45992c440420775ff28e3a8a060869195034.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from harness.planning.reminders import system_reminder
from harness.prompt import Section
from harness.tokens import estimate_tool, is_deferred
from harness.tools.base import Tool, ToolContext, ToolInput, ToolOutput

TOOL_SEARCH_NAME = "ToolSearch"
"""Claude Code's name for the tool (``TOOL_SEARCH_TOOL_NAME``); it fits the API's pattern."""
DEFAULT_MAX_RESULTS = 5
"""Claude Code's default ``max_results`` (its input schema's ``.default(5)``)."""
AUTO_PERCENT = 10
"""``ENABLE_TOOL_SEARCH=auto`` defers once the definitions reach 10% of the context window
(documented, and ``DEFAULT_AUTO_TOOL_SEARCH_PERCENTAGE`` in Claude Code's source)."""
NO_MATCH = "No matching deferred tools found"
"""Claude Code's answer when a search matches nothing (a plain text result, not an error)."""

SearchMode = Literal["auto", "on", "off"]
"""``on``: defer every MCP tool (Claude Code's default); ``auto``: only past the threshold;
``off``: never."""

Definition = Mapping[str, Any]
Catalog = Sequence[Definition | Tool[Any]] | Callable[[], Sequence[Definition | Tool[Any]]]
"""The request's tools (definitions, or tools whose ``definition()`` is sent), or a function
giving them as they are now (servers may come later)."""

_TRUTHY = ("1", "true", "yes", "on")  # Claude Code's isEnvTruthy
_FALSY = ("0", "false", "no", "off")  # and isEnvDefinedFalsy


def mode_from_env(value: str | None) -> tuple[SearchMode, int]:
    """The mode and percentage an ``ENABLE_TOOL_SEARCH`` value asks for, as Claude Code
    reads it (``resolveToolSearchMode``): unset, or a value it does not know, is ``on``;
    ``auto`` is ``auto`` at 10%; ``auto:N`` is ``auto`` at N clamped to 0-100, except that
    ``auto:0`` is ``on`` and ``auto:100`` is ``off``; ``false``, ``0``, ``no``, ``off`` are
    ``off``.

    >>> mode_from_env("auto:5"), mode_from_env(None), mode_from_env("false")
    (('auto', 5), ('on', 10), ('off', 10))
    """
    text = (value or "").strip()
    if text.startswith("auto:"):
        digits = re.match(r"[+-]?\d+", text[5:].strip())  # parseInt reads a leading number
        if digits is not None:
            percent = max(0, min(100, int(digits.group())))
            if percent == 0:
                return "on", 0
            if percent == 100:
                return "off", 100
            return "auto", percent
        return "auto", AUTO_PERCENT  # auto:abc is still auto mode, at the default
    if text == "auto":
        return "auto", AUTO_PERCENT
    if text.lower() in _FALSY:
        return "off", AUTO_PERCENT
    return "on", AUTO_PERCENT  # unset, truthy, or unknown: Claude Code's default


def definitions_tokens(definitions: Iterable[Definition]) -> int:
    """The estimated tokens of these definitions (``harness.tokens.estimate_tool`` each)."""
    return sum(estimate_tool(d) for d in definitions)


def auto_threshold(context_window: int, percent: int = AUTO_PERCENT) -> int:
    """Tokens of definitions at which ``auto`` defers: ``floor(window * percent / 100)``."""
    return math.floor(context_window * percent / 100)


def should_defer(
    definitions: Sequence[Definition],
    *,
    context_window: int,
    mode: SearchMode = "auto",
    percent: int = AUTO_PERCENT,
) -> bool:
    """Whether to send these (MCP) tool definitions deferred.

    ``on``: whenever there are any; ``off``: never; ``auto``: once their tokens reach
    :func:`auto_threshold` (Claude Code's check is ``deferredToolTokens >= threshold``, with
    the API's count; ours is the harness's estimate). No definitions: nothing to defer.

    >>> tool = {"name": "t", "description": "x" * 400, "input_schema": {"type": "object"}}
    >>> should_defer([tool], context_window=1_000), should_defer([tool], context_window=10_000)
    (True, False)
    """
    if context_window <= 0:
        raise ValueError(f"context_window must be positive, not {context_window}")
    if not 0 <= percent <= 100:
        raise ValueError(f"percent must be from 0 to 100, not {percent}")
    if mode not in ("auto", "on", "off"):
        raise ValueError(f"mode must be 'auto', 'on' or 'off', not {mode!r}")
    if not definitions or mode == "off":
        return False
    if mode == "on":
        return True
    return definitions_tokens(definitions) >= auto_threshold(context_window, percent)


def deferred(definition: Definition) -> dict[str, Any]:
    """A copy of ``definition`` with ``defer_loading: true`` (the original is left as it was).

    A deferred tool may not carry ``cache_control`` (the API refuses it, 400), so a copy that
    had one loses it: put the breakpoint on a tool that is not deferred.
    """
    out = {k: copy.deepcopy(v) for k, v in definition.items() if k != "cache_control"}
    out["defer_loading"] = True
    return out


def tool_reference(name: str) -> dict[str, Any]:
    """The block that loads tool ``name``: ``{"type": "tool_reference", "tool_name": name}``."""
    return {"type": "tool_reference", "tool_name": name}


def referenced_names(messages: Iterable[Mapping[str, Any]]) -> set[str]:
    """The tools that ``tool_reference`` blocks in the conversation's results have loaded
    (Claude Code's ``extractDiscoveredToolNames``)."""
    found: set[str] = set()
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, Mapping) or block.get("type") != "tool_result":
                continue
            inner = block.get("content")
            for item in inner if isinstance(inner, list) else []:
                if (
                    isinstance(item, Mapping)
                    and item.get("type") == "tool_reference"
                    and isinstance(item.get("tool_name"), str)
                ):
                    found.add(item["tool_name"])
    return found


def callable_names(tools: Iterable[Definition], messages: Iterable[Mapping[str, Any]]) -> set[str]:
    """The tools the model has been shown: those not deferred, and the deferred ones a
    ``tool_reference`` loaded. The API names no error for a call to any other (see
    ``harness.model.scripted.rules``); a harness may answer one with an error result."""
    shown = referenced_names(messages)
    return {str(t.get("name")) for t in tools if not is_deferred(t) or t.get("name") in shown}


# -- the search ------------------------------------------------------------------------------


def _name_parts(name: str) -> tuple[list[str], str, bool]:
    """A tool name's words, the name as words, and whether it is an MCP tool (Claude Code's
    ``parseToolName``: ``mcp__server__tool_name`` on ``__`` and ``_``, else CamelCase and
    ``_``)."""
    if name.startswith("mcp__"):
        rest = name[5:].lower()
        parts = [p for chunk in rest.split("__") for p in chunk.split("_") if p]
        return parts, rest.replace("__", " ").replace("_", " "), True
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").lower()
    parts = spaced.split()
    return parts, " ".join(parts), False


def _score(terms: Sequence[str], definition: Definition) -> int:
    """Claude Code's keyword score of one tool (without its ``searchHint``, which MCP tools do
    not have): per term, 12 for a whole word of an MCP tool's name (10 for another tool),
    else 6 (5) for part of one; 3 if the name as words holds it while the tool's score is
    still 0; plus 2 if the description holds it as a whole word."""
    parts, full, mcp = _name_parts(str(definition.get("name", "")))
    description = str(definition.get("description", "")).lower()
    score = 0
    for term in terms:
        if term in parts:
            score += 12 if mcp else 10
        elif any(term in part for part in parts):
            score += 6 if mcp else 5
        if term in full and score == 0:
            score += 3
        if _word(term, description):
            score += 2
    return score


def _word(term: str, text: str) -> bool:
    """Whether ``term`` is a word of ``text``; ``\\b`` as JavaScript reads it (ASCII only)."""
    return re.search(rf"\b{re.escape(term)}\b", text, re.ASCII) is not None


def _has_all(required: Sequence[str], definition: Definition) -> bool:
    parts, _, _ = _name_parts(str(definition.get("name", "")))
    description = str(definition.get("description", "")).lower()
    return all(any(term in part for part in parts) or _word(term, description) for term in required)


def search_names(
    query: str, definitions: Sequence[Definition], *, max_results: int = DEFAULT_MAX_RESULTS
) -> list[str]:
    """The names a ``ToolSearch`` query finds, best first, as Claude Code finds them.

    ``definitions`` are the request's tools; the deferred ones are searched. Query forms
    (Claude Code's): ``select:a,b`` fetches those exact names (a name that is loaded already
    is returned too, "a harmless no-op"; names not found are skipped; ``max_results`` does not
    apply); a query equal to a tool's name returns it; ``mcp__server`` returns that server's
    deferred tools; otherwise keywords, scored by :func:`_score`, where a ``+word`` must
    appear in the name or the description, and the best ``max_results`` with a score above
    zero are returned (ties keep the definitions' order).
    """
    pool = [d for d in definitions if is_deferred(d)]
    names = [str(d.get("name", "")) for d in definitions]
    selected = re.fullmatch(r"select:(.+)", query, re.IGNORECASE)
    if selected:
        found: list[str] = []
        for wanted in (w.strip() for w in selected.group(1).split(",")):
            if wanted and wanted in names and wanted not in found:
                found.append(wanted)
        return found
    lowered = query.lower().strip()
    exact = next((str(d.get("name")) for d in pool if str(d.get("name")).lower() == lowered), None)
    exact = exact or next((n for n in names if n.lower() == lowered), None)
    if exact:
        return [exact]
    if lowered.startswith("mcp__") and len(lowered) > 5:
        prefixed = [
            str(d.get("name")) for d in pool if str(d.get("name")).lower().startswith(lowered)
        ]
        if prefixed:
            return prefixed[:max_results]
    terms = lowered.split()
    required = [t[1:] for t in terms if t.startswith("+") and len(t) > 1]
    optional = [t for t in terms if not (t.startswith("+") and len(t) > 1)]
    scoring = [*required, *optional] if required else terms
    candidates = [d for d in pool if _has_all(required, d)] if required else pool
    scored = [(_score(scoring, d), str(d.get("name"))) for d in candidates]
    ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: -s[0])
    return [name for _, name in ranked[:max_results]]


class ToolSearchInput(ToolInput):
    """``ToolSearch``'s input: Claude Code's two fields."""

    query: str = Field(
        description='Query to find deferred tools. Use "select:<tool_name>" for direct '
        "selection, or keywords to search."
    )
    max_results: int = Field(
        DEFAULT_MAX_RESULTS,
        ge=1,
        description=f"Maximum number of results to return (default: {DEFAULT_MAX_RESULTS})",
    )


DESCRIPTION = (
    "Fetches full schema definitions for deferred tools so they can be called. Deferred tools "
    "appear by name in <available-deferred-tools> (in the system prompt) or in "
    "<system-reminder> messages. Until fetched, only the name is known: there is no parameter "
    "schema, so the tool cannot be invoked. This tool takes a query, matches it against the "
    "deferred tool list, and loads the matched tools' complete definitions. Once loaded, a "
    "tool is callable exactly like any tool defined at the top of the prompt.\n\n"
    "Query forms:\n"
    '- "select:mcp__git__git_status,mcp__git__git_diff" - fetch these exact tools by name\n'
    '- "git commit history" - keyword search, up to max_results best matches\n'
    '- "+slack send" - require "slack" in the name, rank by remaining terms'
)
"""Claude Code's tool prompt (``ToolSearchTool/prompt.ts``), with our examples and where our
names are listed; "inside a <functions> block" is left out: how the API renders a loaded
definition is the API's to say."""


def tool_search_tool(catalog: Catalog) -> Tool[ToolSearchInput]:
    """The ``ToolSearch`` tool over ``catalog``: the request's tools (deferred ones carry
    ``defer_loading: true`` in their definitions), or a function that gives them as they are
    now.

    It answers with one ``tool_reference`` block per tool found, which the dispatcher must
    pass through as the ``tool_result``'s content (``spill`` is off: a reference is a few
    tokens, and stored as text it would load nothing), or with :data:`NO_MATCH` as text.
    """

    def run(args: ToolSearchInput, context: ToolContext) -> ToolOutput:
        tools = catalog() if callable(catalog) else catalog
        definitions = [t.definition() if isinstance(t, Tool) else t for t in tools]
        found = search_names(args.query, definitions, max_results=args.max_results)
        if not found:
            return NO_MATCH
        return [tool_reference(name) for name in found]

    return Tool(TOOL_SEARCH_NAME, DESCRIPTION, ToolSearchInput, run, read_only=True, spill=False)


# -- the announcement -------------------------------------------------------------------------


def deferred_names_text(names: Iterable[str]) -> str:
    """Claude Code's list: ``<available-deferred-tools>``, the names sorted, one a line."""
    lines = "\n".join(sorted(names))
    return f"<available-deferred-tools>\n{lines}\n</available-deferred-tools>"


def deferred_section(tools: Iterable[Tool[Any] | Definition | str]) -> Section | None:
    """The deferred tools' names as a static system prompt section (cached with the rest of
    it), for a pool known when the session starts; ``None`` when there are none. ``tools``
    are tools, definitions or names."""
    listed = sorted({_name(t) for t in tools})
    if not listed:
        return None
    return Section("deferred tools", deferred_names_text(listed))


def _name(tool: Tool[Any] | Definition | str) -> str:
    if isinstance(tool, str):
        return tool
    if isinstance(tool, Tool):
        return tool.name
    return str(tool.get("name"))


def deferred_tools_reminder(added: Iterable[str], removed: Iterable[str] = ()) -> str | None:
    """Claude Code's ``deferred_tools_delta`` text, in ``<system-reminder>`` tags, to append
    to the conversation when the pool changes; ``None`` when nothing changed."""
    parts: list[str] = []
    if new := sorted(set(added)):
        lines = "\n".join(new)
        parts.append(f"The following deferred tools are now available via ToolSearch:\n{lines}")
    if gone := sorted(set(removed)):
        lines = "\n".join(gone)
        parts.append(
            "The following deferred tools are no longer available (their MCP server "
            "disconnected). Do not search for them — ToolSearch will return no match:\n" + lines
        )
    return system_reminder("\n\n".join(parts)) if parts else None
