"""The request as the cache sees it: its blocks in prefix order, each with a running digest.

The prefix runs in a fixed order, tools, then the system prompt, then the messages, block by
block. Each :class:`PrefixBlock` carries its token count, the digest of every block up to
it (so any change to a block changes every prefix that contains it), and its breakpoint's
:data:`TTL`, if it has one. :func:`positions` numbers the blocks as the lookback counts them.
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


def _canonical(block: Mapping[str, Any]) -> str:
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(plain, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


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
    prompt is counted with the first tool, each message's overhead with its first block.
    """
    items: list[tuple[str, Mapping[str, Any], int, str]] = []
    for i, tool in enumerate(tools or []):
        extra = tokens.TOOL_USE_SYSTEM_PROMPT if i == 0 else 0
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
            size = tokens.estimate_block(block)
            keyed = {"role": message.get("role"), **block} if j == 0 else block
            kind = str(block.get("type", "text"))
            items.append((f"messages[{i}].content[{j}]", keyed, overhead + size, kind))
    out: list[PrefixBlock] = []
    running = hashlib.sha256()
    for where, block, size, kind in items:
        running.update(_canonical(block).encode())
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
