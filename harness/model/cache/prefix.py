"""The request as the cache sees it: its blocks in prefix order, each with a running digest.

The prefix runs in a fixed order, tools, then the system prompt, then the messages, block by
block. Each :class:`PrefixBlock` carries its token count, the digest of every block up to
it (so any change to a block changes every prefix that contains it), and its breakpoint's
:data:`TTL`, if it has one. :func:`positions` numbers the blocks as the lookback counts them.

Deferred tools (``defer_loading: true``) are not in the prefix: the API excludes them from
it, and a tool loaded by search arrives as a ``tool_reference`` block in a ``tool_result``,
which the API expands into the tool's definition there, "the prefix is untouched, so prompt
caching is preserved" (https://platform.claude.com/docs/en/agents-and-tools/tool-use/
tool-use-with-prompt-caching, "defer_loading and cache preservation"). So the result that
holds a reference counts the definition's size, and its digest takes in the definition: a
definition that changes misses from that result on, and only from there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness import tokens

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}

TTL = Literal["5m", "1h"]


@dataclass(frozen=True)
class PrefixBlock:
    """One block of the request's prefix, with the digest of the prefix up to it."""

    where: str
    """Where the block sits: ``tools[1] (grep)``, ``system[0]``, ``messages[4].content[0]``."""
    tokens: int
    digest: str
    """Hash of every block up to and including this one (``cache_control`` left out)."""
    breakpoint: TTL | None
    cacheable: bool = True
    """Whether the block can carry ``cache_control`` (thinking blocks and empty text cannot):
    automatic caching skips back over the ones that cannot."""
    kind: str = "text"
    """What the block is: ``tool`` (a tool definition), ``system``, or a message block's
    ``type`` (``text``, ``image``, ``tool_use``, ``tool_result``...). The lookback counts runs
    of ``tool_use`` and of ``tool_result`` blocks as one position each (see ``positions``)."""


def _cacheable(block: Mapping[str, Any]) -> bool:
    kind = block.get("type")
    if kind in ("thinking", "redacted_thinking"):
        return False
    return not (kind == "text" and not block.get("text"))


def _canonical(block: Mapping[str, Any], definitions: tokens.Definitions | None = None) -> str:
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    if (
        definitions
        and block.get("type") == "tool_result"
        and isinstance(plain.get("content"), list)
    ):
        plain["content"] = [_expanded(item, definitions) for item in plain["content"]]
    return json.dumps(plain, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _expanded(item: Any, definitions: tokens.Definitions) -> Any:
    """A ``tool_reference`` as the model sees it: with the definition it names (what the API
    expands it into), so that a changed definition changes the prefix from there on."""
    if not isinstance(item, Mapping) or item.get("type") != "tool_reference":
        return item
    definition = definitions.get(str(item.get("tool_name")))
    if definition is None:
        return item
    shown = {k: v for k, v in definition.items() if k not in ("defer_loading", "cache_control")}
    return {**item, "definition": shown}


def _ttl(block: Mapping[str, Any]) -> TTL | None:
    control = block.get("cache_control")
    if not control:
        return None
    return "1h" if control.get("ttl") == "1h" else "5m"


def prefix_blocks(
    tools: Sequence[Mapping[str, Any]] | None,
    system: str | Sequence[Mapping[str, Any]] | None,
    messages: Sequence[Mapping[str, Any]],
) -> list[PrefixBlock]:
    """The request as the cache sees it: blocks in prefix order, with their token counts.

    The counts add up to ``tokens.estimate_request`` of the same request: the tool-use system
    prompt is counted with the first tool in the prefix, each message's overhead with its
    first block. Deferred tools are left out (see the module's docstring); a ``tool_result``
    holding ``tool_reference`` blocks counts, and is identified by, the definitions they name.
    """
    definitions = tokens.definitions_by_name(tools)
    items: list[tuple[str, Mapping[str, Any], int, str]] = []
    for i, tool in enumerate(tools or []):
        if tokens.is_deferred(tool):
            continue
        extra = tokens.TOOL_USE_SYSTEM_PROMPT if not items else 0
        size = extra + tokens.estimate_tool(tool)
        items.append((f"tools[{i}] ({tool.get('name')})", tool, size, "tool"))
    if isinstance(system, str):
        whole = {"type": "text", "text": system}
        items.append(("system", whole, tokens.estimate_system(system), "system"))
    else:
        for i, block in enumerate(system or []):
            items.append((f"system[{i}]", block, tokens.estimate_block(block), "system"))
    for i, message in enumerate(messages):
        content = message.get("content", "")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        for j, block in enumerate(parts):
            overhead = tokens.MESSAGE_OVERHEAD if j == 0 else 0
            size = tokens.estimate_block(block, definitions=definitions)
            keyed = {"role": message.get("role"), **block} if j == 0 else block
            kind = str(block.get("type", "text"))
            items.append((f"messages[{i}].content[{j}]", keyed, overhead + size, kind))
    out: list[PrefixBlock] = []
    running = hashlib.sha256()
    for where, block, size, kind in items:
        running.update(_canonical(block, definitions).encode())
        running.update(b"\x1e")
        digest = running.copy().hexdigest()[:16]
        out.append(PrefixBlock(where, size, digest, _ttl(block), _cacheable(block), kind))
    return out


# On the Claude API a run of consecutive blocks of one of these types is one position of the
# lookback (the prompt caching page, "How automatic prefix checking works").
RUN_KINDS = frozenset({"tool_use", "tool_result"})


def positions(blocks: Sequence[PrefixBlock]) -> list[int]:
    """Each block's position, as the lookback counts them: every block is a position of its
    own, except that a run of consecutive ``tool_use`` blocks shares one, and so does a run of
    consecutive ``tool_result`` blocks (a reply's parallel calls, and their results).

    >>> kinds = ["system", "text", "tool_use", "tool_use", "tool_result", "tool_result", "text"]
    >>> positions([PrefixBlock("", 1, "", None, kind=k) for k in kinds])
    [0, 1, 2, 2, 3, 3, 4]
    """
    out: list[int] = []
    for i, block in enumerate(blocks):
        same_run = i > 0 and block.kind in RUN_KINDS and block.kind == blocks[i - 1].kind
        out.append(out[-1] if same_run else (out[-1] + 1 if out else 0))
    return out
