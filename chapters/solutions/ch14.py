"""Chapter 14: MCP servers as tools, and tool search."""

from __future__ import annotations

import re


def mcp_tool_names(servers: dict[str, list[str]]) -> tuple[list[str], list[tuple[str, str]]]:
    """Exercise 1: the full names the model sees, and the (server, tool) pairs left out."""

    def normalize(part: str) -> str:
        # an emoji (beyond U+FFFF) is two UTF-16 code units in JavaScript: two underscores
        return re.sub(r"[^a-zA-Z0-9_-]", lambda m: "__" if ord(m.group()) > 0xFFFF else "_", part)

    names: list[str] = []
    dropped: list[tuple[str, str]] = []
    for server, tools in servers.items():
        for tool in tools:
            name = f"mcp__{normalize(server)}__{normalize(tool)}"
            if not tool or len(name) > 128 or name in names:  # refused, or taken already
                dropped.append((server, tool))
            else:
                names.append(name)
    return names, dropped


def search_tools(query: str, tools: list[dict[str, str]], max_results: int = 5) -> list[str]:
    """Exercise 2: the names ToolSearch loads for ``query``, best first."""
    selected = re.fullmatch(r"select:(.+)", query, re.IGNORECASE)
    if selected:  # exact names, in the query's order, each once; max_results does not apply
        names = [tool["name"] for tool in tools]
        wanted = [piece.strip() for piece in selected.group(1).split(",")]
        return [name for name in dict.fromkeys(wanted) if name in names]
    scored = []
    for tool in tools:
        parts = [part for part in tool["name"].removeprefix("mcp__").lower().split("_") if part]
        description = tool["description"].lower()
        score = 0
        for term in query.lower().split():
            if term in parts:
                score += 12
            elif any(term in part for part in parts):
                score += 6
            if re.search(r"\b" + re.escape(term) + r"\b", description):
                score += 2
        if score > 0:
            scored.append((score, tool["name"]))
    scored.sort(key=lambda pair: -pair[0])  # stable: ties keep the tools' order
    return [name for _, name in scored[:max_results]]
