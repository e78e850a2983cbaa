"""Counting tokens: a deterministic estimate offline, the API's own count online.

The harness must know how big a request is *before* sending it (chapter 04 decides when to
compact from this). Real tokenizers are not public, so offline we estimate, the way Claude
Code does between API calls (its rough estimate is ``len(text) / 4``). Ours refines that a
little so that non-Latin text is not badly under-counted:

* ASCII text: one token per 4 characters (rounded up). The tokenizer of Claude models before
  4.7 gives about 3.5-4.5 characters per token on English prose and 2.5-3.5 on code and JSON
  (rough ranges, not a measurement), so this under-counts code by up to ~40%; that is why
  thresholds keep a safety margin. Claude Opus 4.7 and the models after it use a new tokenizer
  that counts roughly 1 to 1.35 times as many tokens for the same text, varying by content
  (https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-7), so for them
  this under-counts everything.
* Any other character (CJK, accented letters, emoji): one token each. For Chinese the real
  figure is roughly 1-1.5 tokens per character before Claude 4.7, so this is close or
  slightly low.
* Framing: a few tokens per message and per block for the role and structure markers, and
  the documented tool-use system prompt (346 tokens for ``tool_choice`` auto on Claude 4
  class models) whenever tools are sent.
* Deferred tools (chapter 14): a definition with ``defer_loading: true`` is sent but not
  rendered into the model's context, so it costs nothing until a ``tool_reference`` block
  names it; the API then expands the reference into the tool's full definition at that
  point of the conversation, and it counts there, as big as the definition
  (https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool, "Deferred
  tool loading"). :func:`estimate_request` has the tools, so it counts every reference as
  the definition it names; :func:`estimate_block` and :func:`estimate_message` do so when
  given ``definitions``, and otherwise count a reference as its own few tokens of JSON.

The scripted model (``harness.model.scripted``) computes ``usage.input_tokens`` with this same
estimator, so offline the estimate is exact by construction; live, ``count_tokens`` asks the
API (``client.messages.count_tokens``) and the difference is what you would see in practice.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from harness.messages import as_block

# Framing overheads (estimates: the API does not publish them).
MESSAGE_OVERHEAD = 4  # role marker and turn separators
BLOCK_OVERHEAD = 3  # per content block
TOOL_DEFINITION_OVERHEAD = 8  # per tool definition
# Documented: the API adds a tool-use system prompt of 346 tokens (tool_choice auto/none)
# on Claude 4 class models whenever `tools` is non-empty.
TOOL_USE_SYSTEM_PROMPT = 346


def estimate_text(text: str) -> int:
    """Estimated tokens of a piece of text (see the module docstring for the rule)."""
    if not text:
        return 0
    ascii_chars = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))
    other = len(text) - ascii_chars
    return math.ceil(ascii_chars / 4) + other


def truncate_text(text: str, budget: int) -> str:
    """The longest prefix of ``text`` whose estimate fits in ``budget`` tokens."""
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if estimate_text(text[:mid]) <= budget:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def _json(value: Any) -> str:
    # Compact, key-ordered JSON: the same input always gives the same count.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


Definitions = Mapping[str, Mapping[str, Any]]
"""Tool definitions by name: what a ``tool_reference`` block expands into."""


def is_deferred(tool: Mapping[str, Any]) -> bool:
    """Whether a tool definition is deferred (``defer_loading: true``): sent, not rendered."""
    return tool.get("defer_loading") is True


def definitions_by_name(tools: Sequence[Mapping[str, Any]] | None) -> dict[str, Mapping[str, Any]]:
    """The request's tool definitions by name (deferred or not): a reference may name any."""
    return {str(tool.get("name")): tool for tool in tools or []}


def estimate_block(block: Mapping[str, Any], *, definitions: Definitions | None = None) -> int:
    """Estimated tokens of one content block (text, tool_use, tool_result, image, ...).

    A ``tool_reference`` (inside a ``tool_result``) counts as the definition it names, from
    ``definitions``; a name not there counts as the block's own JSON.
    """
    kind = block.get("type")
    if kind == "text":
        body = estimate_text(str(block.get("text", "")))
    elif kind == "tool_use":
        body = estimate_text(str(block.get("name", ""))) + estimate_text(
            _json(block.get("input", {}))
        )
    elif kind == "tool_result":
        body = estimate_content(block.get("content", ""), definitions=definitions)
    elif kind == "tool_reference" and str(block.get("tool_name")) in (definitions or {}):
        body = estimate_tool((definitions or {})[str(block.get("tool_name"))])
    elif kind in ("thinking", "redacted_thinking"):
        body = estimate_text(str(block.get("thinking", block.get("data", ""))))
    elif kind in ("image", "document"):
        # Images cost about (width * height) / 750 tokens; without decoding we assume a
        # mid-sized screenshot. Documents vary too much to guess well.
        body = 1_600
    else:
        body = estimate_text(_json(dict(block)))
    return BLOCK_OVERHEAD + body


def estimate_content(content: Any, *, definitions: Definitions | None = None) -> int:
    """Estimated tokens of a message's ``content``: a string or a list of blocks.

    A string is the same to the API as one text block holding it, so it counts the same.
    """
    if isinstance(content, str):
        return estimate_block({"type": "text", "text": content})
    if isinstance(content, Iterable):
        # SDK block objects (appended from a reply as is) count as their JSON form.
        return sum(estimate_block(as_block(b), definitions=definitions) for b in content)
    return 0


def estimate_message(message: Mapping[str, Any], *, definitions: Definitions | None = None) -> int:
    """Estimated tokens of one API message (``{"role": ..., "content": ...}``)."""
    return MESSAGE_OVERHEAD + estimate_content(message.get("content", ""), definitions=definitions)


def estimate_system(system: str | Sequence[Mapping[str, Any]] | None) -> int:
    if system is None:
        return 0
    if isinstance(system, str):
        return estimate_block({"type": "text", "text": system})
    return sum(estimate_block(block) for block in system)


def estimate_tool(tool: Mapping[str, Any]) -> int:
    """Estimated tokens of one tool definition (name, description, input schema)."""
    return (
        TOOL_DEFINITION_OVERHEAD
        + estimate_text(str(tool.get("name", "")))
        + estimate_text(str(tool.get("description", "")))
        + estimate_text(_json(tool.get("input_schema", {})))
    )


def estimate_tools(tools: Sequence[Mapping[str, Any]] | None) -> int:
    """The rendered tool definitions, plus the tool-use system prompt the API adds with them.

    Deferred definitions (``defer_loading: true``) are not rendered, so they count nothing
    here (they count where a ``tool_reference`` loads them); with no tool rendered, neither
    is the tool-use system prompt counted (a request whose tools are all deferred is
    refused anyway).
    """
    loaded = [tool for tool in tools or [] if not is_deferred(tool)]
    if not loaded:
        return 0
    return TOOL_USE_SYSTEM_PROMPT + sum(estimate_tool(tool) for tool in loaded)


def estimate_request(
    messages: Sequence[Mapping[str, Any]],
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> int:
    """Estimated input tokens of a whole request: tools, then system, then messages.

    Deferred tools count only where a ``tool_reference`` in the messages loads them.
    """
    definitions = definitions_by_name(tools)
    return (
        estimate_tools(tools)
        + estimate_system(system)
        + sum(estimate_message(message, definitions=definitions) for message in messages)
    )


class TokenCounter(Protocol):
    """Anything that can count a request's input tokens (both models in ``harness.model``)."""

    def count_tokens(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int: ...


def count_tokens(
    messages: Sequence[Mapping[str, Any]],
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    counter: TokenCounter | None = None,
    model: str = "",
) -> int:
    """Input tokens of a request.

    With a ``counter`` (an ``AnthropicModel`` in live mode) the API counts them with
    ``messages.count_tokens``: exact, but a network round trip. Without one, the offline
    estimate. ``ScriptedModel.count_tokens`` is the estimate too, so passing the agent's model
    always gives the number that model will bill.
    """
    if counter is None:
        return estimate_request(messages, system=system, tools=tools)
    if not model:
        raise ValueError(
            "count_tokens with a counter needs the model id (the API counts per model)"
        )
    return counter.count_tokens(model=model, messages=messages, system=system, tools=tools)


# Claude Code's auto-compact arithmetic (observed behaviour of the CLI, not official docs):
# the output reserve is capped at 20K and a further 13K buffer sits below that.
MAX_OUTPUT_RESERVE = 20_000
AUTO_COMPACT_BUFFER = 13_000


class ContextBudget(BaseModel):
    """How much of the context window a conversation may use before it must be compacted.

    >>> ContextBudget(window=200_000, max_output=32_000).auto_compact_threshold
    167000

    A window no larger than its reserves (the reply's and the buffer: 33K with the defaults)
    is refused when the budget is made: its threshold would be zero or negative, so every
    request would compact and no compaction could get under it. A small window needs a
    smaller ``max_output`` or ``buffer``.
    """

    model_config = ConfigDict(frozen=True)

    window: int = Field(200_000, gt=0)
    """The model's context window in tokens (input plus output)."""
    max_output: int = Field(32_000, gt=0)
    """The largest ``max_tokens`` the harness will ask for; room is kept for that reply."""
    buffer: int = Field(AUTO_COMPACT_BUFFER, ge=0)
    """Tokens kept free below the effective window, so compaction starts before it is too late."""

    @model_validator(mode="after")
    def _leaves_room(self) -> ContextBudget:
        reserve = min(self.max_output, MAX_OUTPUT_RESERVE)
        if self.window <= reserve + self.buffer:
            raise ValueError(
                f"a context window of {self.window:,} tokens leaves no room below its reserves: "
                f"{reserve:,} for the reply (min(max_output={self.max_output:,}, "
                f"{MAX_OUTPUT_RESERVE:,})) and a buffer of {self.buffer:,} take "
                f"{reserve + self.buffer:,}, so the auto-compact threshold would be "
                f"{self.window - reserve - self.buffer:,}. Give a window larger than "
                f"{reserve + self.buffer:,}, or a smaller max_output or buffer."
            )
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def effective_window(self) -> int:
        """The window less the room kept for the reply: ``window - min(max_output, 20K)``."""
        return self.window - min(self.max_output, MAX_OUTPUT_RESERVE)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def auto_compact_threshold(self) -> int:
        """Above this many prompt tokens, auto-compact fires: ``effective_window - 13K``."""
        return self.effective_window - self.buffer

    def used(self, tokens: int) -> float:
        """Share of the effective window that ``tokens`` fill (may exceed 1.0)."""
        return tokens / self.effective_window

    def remaining_before_compact(self, tokens: int) -> int:
        """Tokens still to go before the auto-compact threshold (negative when past it)."""
        return self.auto_compact_threshold - tokens

    def should_compact(self, tokens: int) -> bool:
        return tokens >= self.auto_compact_threshold
