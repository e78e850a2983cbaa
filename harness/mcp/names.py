"""``mcp__<server>__<tool>``: the name the model calls an MCP server's tool by.

Two servers may both have a tool called ``search``, and a server's tool may be called
``Read`` like a builtin; so Claude Code never shows the model a server's own tool names. It
shows ``mcp__`` + the server's name + ``__`` + the tool's name, each part *normalized*: every
character that is not an ASCII letter, a digit, ``_`` or ``-`` becomes ``_``
(``normalizeNameForMCP`` and ``buildMcpToolName`` in openclaude
``src/services/mcp/normalization.ts`` and ``mcpStringUtils.ts``). The API accepts a tool
name of 1 to 128 such characters (:data:`harness.messages.TOOL_NAME_PATTERN`); Claude Code
does not shorten a longer one, and neither does :func:`mcp_tool_name`: the caller checks
the result with :func:`harness.messages.is_valid_tool_name` (:mod:`harness.mcp.schema`
refuses such a tool).

Normalizing loses information, so two tools can end up with one name (``get.time`` and
``get_time``, or servers ``my.server`` and ``my_server``). Claude Code keeps the first and
drops the rest without a word (``uniqBy`` in ``src/tools.ts``); :func:`collisions` finds
them so the harness can say which ones it dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

PREFIX = "mcp__"
"""What every MCP tool's full name starts with."""

SEPARATOR = "__"
"""What separates the server's part of a full name from the tool's."""

_CLAUDE_AI_PREFIX = "claude.ai "
_OTHER = re.compile(r"[^a-zA-Z0-9_-]")
_UNDERSCORES = re.compile(r"_+")


def normalize(name: str) -> str:
    """``name`` with every character other than ``[a-zA-Z0-9_-]`` replaced by ``_``.

    As in Claude Code, which works on UTF-16: a character outside the Basic Multilingual
    Plane (an emoji) is two code units there, so it becomes two underscores here too. A
    claude.ai connector's name (``claude.ai Slack``) also has its runs of ``_`` collapsed
    and its leading and trailing ``_`` stripped, so that it cannot make a ``__`` of its own.
    """
    normalized = _OTHER.sub(lambda m: "__" if ord(m.group()) > 0xFFFF else "_", name)
    if name.startswith(_CLAUDE_AI_PREFIX):
        normalized = _UNDERSCORES.sub("_", normalized).strip("_")
    return normalized


def mcp_tool_name(server: str, tool: str) -> str:
    """The full name the model sees for ``tool`` of ``server``: ``mcp__server__tool``."""
    return f"{PREFIX}{normalize(server)}{SEPARATOR}{normalize(tool)}"


def parse_mcp_name(name: str) -> tuple[str, str] | None:
    """The (server, tool) parts of a full name, or None when ``name`` is not one.

    Split as Claude Code splits it (``mcpInfoFromString``): the server is the part between
    the first and the second ``__``, the tool everything after (so a tool's own ``__``
    survive, while a server whose name holds ``__`` is split in the wrong place, a known
    limitation there too). The parts are the *normalized* names; ``mcp__server`` (no tool)
    and an empty server or tool give None.
    """
    parts = name.split(SEPARATOR)
    if len(parts) < 3 or parts[0] != "mcp" or not parts[1]:
        return None
    tool = SEPARATOR.join(parts[2:])
    return (parts[1], tool) if tool else None


def collisions(pairs: Iterable[tuple[str, str]]) -> dict[str, list[tuple[str, str]]]:
    """The full names that more than one distinct (server, tool) pair maps to.

    Each such name maps to its pairs in the order given, the first being the one Claude Code
    would keep. Pairs listed twice count once; no collisions gives ``{}``.
    """
    seen: dict[str, list[tuple[str, str]]] = {}
    for pair in pairs:
        found = seen.setdefault(mcp_tool_name(*pair), [])
        if pair not in found:
            found.append(pair)
    return {name: found for name, found in seen.items() if len(found) > 1}
