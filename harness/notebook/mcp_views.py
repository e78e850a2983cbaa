"""Chapter 14's views: the MCP tools a session offers, its servers' state, what each request
cost with the tools listed or searched, and the plot of the listed/searched comparison.

Each function shows what :mod:`harness.notebook.mcp` produced; none starts a server or runs
an agent.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from harness.events import (
    AssistantReplied,
    Event,
    HookReported,
    PermissionDecided,
    ToolFinished,
    ToolStarted,
)
from harness.mcp.connection import ServerStatus
from harness.mcp.tools import McpTool
from harness.notebook import extensions_views
from harness.notebook.mcp import McpSession, Turn, shown
from harness.notebook.views import Rendered, table, usd
from harness.pricing import MeteredCall

COLOURS = {"listed": "#c0504d", "searched": "#3c8c5a", "added to tools": "#d89a3a"}

Results = Mapping[tuple[int, str], tuple[int, list[Turn]]]


def tools_table(tools: Sequence[McpTool], *, limit: int = 0) -> Rendered:
    """The tools a session offers: full name, parameters (``*`` required), the server's
    ``readOnlyHint``, and whether the definition is deferred. ``limit``: the first rows."""
    rows = []
    for tool in tools[:limit] if limit else tools:
        schema = tool.checked.input_schema if tool.checked is not None else {}
        required = set(schema.get("required", []))
        params = ", ".join(
            f"{name}{'*' if name in required else ''}: {spec.get('type', '?')}"
            for name, spec in schema.get("properties", {}).items()
        )
        hint = tool.checked.read_only_hint if tool.checked is not None else None
        rows.append([tool.name, params or "(none)", "yes" if hint else "no"])
    more = f" (the first {limit} of {len(tools)})" if limit and len(tools) > limit else ""
    return table(["tool", "parameters (* required)", "readOnlyHint"], rows, title=more.strip())


def status_table(statuses: Sequence[ServerStatus]) -> Rendered:
    """What ``/mcp`` shows of each server: state, tools, restarts, the last error."""
    return table(
        ["server", "state", "tools", "restarts", "error"],
        [[s.name, s.state, s.tools, s.restarts, s.error or "-"] for s in statuses],
    )


def story(events: Iterable[Event], root: Path | None = None, *, lines: int = 4) -> str:
    """A run as the chapter prints it: each tool call, the permission decision and hook
    reports about it, the first ``lines`` lines of each result (what the model reads), and the
    model's last words; paths under ``root`` shown as ``.``."""
    out: list[str] = []
    last = ""
    for event in events:
        if isinstance(event, ToolStarted | PermissionDecided):
            out.append(str(event).rstrip())
        elif isinstance(event, HookReported):
            out.append(f"  ⚑ {event.hook} {event.name}: {event.outcome}")
        elif isinstance(event, ToolFinished):
            mark = "✗" if event.is_error else "✓"
            content = event.content.splitlines() or ["(no output)"]
            more = [f"… {len(content) - lines} more lines"] if len(content) > lines else []
            out.append(f"  {mark} {event.name} →")
            out += [
                textwrap.fill(x, 96, initial_indent="      ", subsequent_indent="      ")
                for x in content[:lines] + more
            ]
        elif isinstance(event, AssistantReplied):
            texts = [b.text for b in event.message.content if b.type == "text"]
            last = " ".join(texts).strip()
    if last:
        out.append(f"model: {last}")
    return shown("\n".join(out), root)


def _read(call: MeteredCall) -> int:
    return call.usage.cache_read_input_tokens or 0


def _written(call: MeteredCall) -> int:
    return call.usage.cache_creation_input_tokens or 0


def requests_table(session: McpSession) -> Rendered:
    """Each request of a session: its prompt, what it read from the cache, wrote, cost."""
    return table(
        ["request", "prompt", "read from cache", "written to cache", "cost"],
        [
            [n, f"{c.prompt_tokens:,}", f"{_read(c):,}", f"{_written(c):,}", usd(c.cost.total)]
            for n, c in enumerate(session.calls, start=1)
            if c.cost is not None
        ],
        title=f"{session.layout}: tool definitions {session.tools_tokens:,} tokens a request",
    )


def sessions_table(sessions: Sequence[McpSession]) -> Rendered:
    """One row per session: its tool definitions, the first request, the later ones, the
    session (chapter 13's table, for tools)."""
    return extensions_views.sessions_table(
        sessions, kind="MCP tools", size="definitions", size_of=lambda s: int(s.tools_tokens)
    )


def change_table(rows: Sequence[tuple[str, MeteredCall]]) -> Rendered:
    """The first request after the tool list changed, per case."""
    return extensions_views.edit_table(rows, kind="after")


def layouts_table(results: Results) -> Rendered:
    """Per tool count and layout: the rendered definitions, the mean prompt, the cache reads
    and writes of the session, its cost."""
    rows: list[list[Any]] = []
    for (count, layout), (tokens, turns) in results.items():
        rows.append(
            [
                count,
                layout,
                f"{tokens:,}",
                len(turns),
                f"{sum(t.prompt for t in turns) // len(turns):,}",
                f"{sum(t.read for t in turns):,}",
                f"{sum(t.written for t in turns):,}",
                usd(sum(t.cost for t in turns)),
            ]
        )
    return table(
        [
            "MCP tools",
            "layout",
            "definitions",
            "requests",
            "prompt/request",
            "read",
            "written",
            "session",
        ],
        rows,
        title="the same session on the course's model, with chapter 03's breakpoints",
    )


def after_search(results: Results, count: int) -> Rendered:
    """The request right after the search, by reference and added to ``tools``."""
    rows = []
    for layout in ("searched", "added to tools"):
        _, turns = results[(count, layout)]
        at = next(i for i, t in enumerate(turns) if t.did == "ToolSearch") + 1
        t = turns[at]
        rows.append([layout, at + 1, f"{t.prompt:,}", f"{t.read:,}", f"{t.written:,}", usd(t.cost)])
    return table(
        ["loaded", "request", "prompt", "read from cache", "written to cache", "cost"],
        rows,
        title=f"{count} MCP tools: the request after ToolSearch",
    )


def plot_layouts(results: Results, *, detail: int = 50, title: str = "") -> None:
    """Left: the session's cost by the number of MCP tools, per layout. Right: what each
    request of the ``detail``-tool session wrote to the cache, searched against added to
    ``tools``."""
    fig, (cost_ax, write_ax) = plt.subplots(1, 2, figsize=(10, 4.2))
    counts = sorted({count for count, _ in results})
    for layout, colour in COLOURS.items():
        costs = [sum(t.cost for t in results[(n, layout)][1]) for n in counts]
        label = f"{layout}: {usd(costs[-1])} at {counts[-1]} tools"
        cost_ax.plot(counts, costs, "o-", color=colour, label=label)
    cost_ax.set(
        xlabel="MCP tools the session has",
        ylabel="cost of the session ($)",
        xscale="log",
        ylim=(0, None),
    )
    cost_ax.set_xticks(counts, [str(n) for n in counts])
    cost_ax.legend(frameon=False, fontsize=9, loc="upper left")
    width = 0.4
    for offset, layout in ((-width / 2, "searched"), (width / 2, "added to tools")):
        turns = results[(detail, layout)][1]
        xs = [i + 1 + offset for i in range(len(turns))]
        label = "loaded by reference" if layout == "searched" else layout
        write_ax.bar(xs, [t.written for t in turns], width, color=COLOURS[layout], label=label)
    turns = results[(detail, "searched")][1]
    at = next(i for i, t in enumerate(turns) if t.did == "ToolSearch") + 2
    write_ax.annotate(
        "the request after the search",
        (at, results[(detail, "added to tools")][1][at - 1].written),
        xytext=(at + 1.2, results[(detail, "added to tools")][1][0].written * 0.8),
        arrowprops={"arrowstyle": "->", "color": "#555"},
        fontsize=9,
        color="#555",
    )
    write_ax.set(xlabel=f"request ({detail} MCP tools)", ylabel="tokens written to the cache")
    write_ax.set_xticks(range(1, len(turns) + 1))
    write_ax.legend(frameon=False, fontsize=9, loc="upper right")
    for ax in (cost_ax, write_ax):
        ax.spines[["top", "right"]].set_visible(False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    plt.show()


__all__ = [
    "after_search",
    "change_table",
    "layouts_table",
    "plot_layouts",
    "requests_table",
    "sessions_table",
    "status_table",
    "story",
    "tools_table",
]
