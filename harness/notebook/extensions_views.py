"""Chapter 13's views: tokens and cost per request with skills inlined and listed, the hooks a
settings file configures, and what they did in a run.

Each function shows what :mod:`harness.notebook.extensions_runs` produced; none runs an
agent. Paths under the chapter's temporary folder are shown relative to it, so the stored
outputs are the same on every machine.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from harness.events import Event, HookReported, PromptRefused, ToolFinished, ToolStarted
from harness.notebook.extensions_runs import SkillSession
from harness.notebook.views import Rendered, table, usd
from harness.pricing import MeteredCall
from harness.settings import ConfiguredHook

COLOURS = {"inlined": "#c0504d", "listed": "#3c8c5a"}


def plot_requests(inlined: SkillSession, listed: SkillSession, *, title: str = "") -> None:
    """Each request's prompt tokens (log scale), and the session's cost so far, in both
    layouts; the request that first carries the loaded skill marked."""
    fig, (tokens_ax, cost_ax) = plt.subplots(1, 2, figsize=(10, 4.2))
    for session in (inlined, listed):
        requests = range(1, len(session.calls) + 1)
        colour = COLOURS[session.layout]
        spent = list(accumulate(session.costs()))
        label = f"{session.layout}: {usd(spent[-1])} for {len(session.calls)} requests"
        tokens_ax.plot(requests, session.prompt_tokens(), "o-", color=colour, label=label)
        cost_ax.plot(requests, spent, "o-", color=colour, label=label)
    loaded = listed.loaded_at
    if loaded is not None:
        value = listed.prompt_tokens()[loaded - 1]
        tokens_ax.annotate(
            "the skill's body arrives",
            (loaded, value),
            xytext=(loaded + 0.4, value * 2.5),
            arrowprops={"arrowstyle": "->", "color": "#555"},
            fontsize=9,
            color="#555",
        )
    tokens_ax.set(yscale="log", xlabel="request", ylabel="prompt tokens (log scale)")
    cost_ax.set(xlabel="request", ylabel="cost of the session so far ($)", ylim=(0, None))
    for ax in (tokens_ax, cost_ax):
        ax.spines[["top", "right"]].set_visible(False)
        ax.set_xticks(range(1, max(len(inlined.calls), len(listed.calls)) + 1))
    cost_ax.legend(frameon=False, fontsize=9, loc="center right")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    plt.show()


def _written(call: MeteredCall) -> int:
    return call.usage.cache_creation_input_tokens or 0


def _read(call: MeteredCall) -> int:
    return call.usage.cache_read_input_tokens or 0


def sessions_table(
    sessions: Sequence[Any],
    *,
    kind: str = "skills",
    size: str = "system prompt",
    size_of: Callable[[Any], int] = lambda s: int(s.system_tokens),
) -> Rendered:
    """One row per session (``layout``, ``calls``, ``costs()``): what it carries (``size_of``,
    under the heading ``size``), the first request, the later ones, the session. Chapter 14
    shows its MCP sessions with it too."""
    rows = []
    for s in sessions:
        costs = s.costs()
        later = costs[1:]
        rows.append(
            [
                s.layout,
                f"{size_of(s):,}",
                f"{s.calls[0].prompt_tokens:,}",
                usd(costs[0]),
                usd(sum(later) / len(later)) if later else "",
                len(costs),
                usd(sum(costs)),
            ]
        )
    return table(
        [kind, size, "first prompt", "first request", "a later request", "requests", "session"],
        rows,
        title="tokens, and cost on the course's model (a later request: the mean)",
    )


def edit_table(rows: Sequence[tuple[str, MeteredCall]], *, kind: str = "skills") -> Rendered:
    """The first request after a change (one skill's body; chapter 14: the tool list), per
    case."""
    return table(
        [kind, "prompt", "read from cache", "written to cache", "cost"],
        [
            [
                layout,
                f"{c.prompt_tokens:,}",
                f"{_read(c):,}",
                f"{_written(c):,}",
                usd(c.cost.total if c.cost else 0),
            ]
            for layout, c in rows
        ],
    )


def hooks_table(hooks: Iterable[ConfiguredHook], root: Path) -> Rendered:
    """The hooks a settings file configures: event, matcher, command, where from."""
    return table(
        ["event", "matcher", "command", "timeout", "from"],
        [
            [
                h.event,
                h.matcher or "*",
                h.command,
                f"{h.timeout:g} s",
                f"{h.source.relative_to(root).as_posix()} ({h.scope})",
            ]
            for h in hooks
        ],
    )


def _wrap(text: str, indent: str = "      ") -> str:
    return "\n".join(
        textwrap.fill(line, 96, initial_indent=indent, subsequent_indent=indent)
        for line in text.splitlines()
        if line.strip()
    )


def hook_story(events: Iterable[Event], root: Path, *, lines: int = 6) -> str:
    """A run's tool calls and hook reports, each hook's detail in full (the event's own line
    cuts it at 60 characters) and the first ``lines`` lines of each result, paths under
    ``root`` shown relative to it."""
    out = []
    for event in events:
        if isinstance(event, ToolStarted):
            out.append(str(event).strip())
        elif isinstance(event, HookReported):
            target = f"{event.hook} {event.name}".strip()
            out.append(f"  ⚑ {target}: {event.outcome}")
            out.append(_wrap(event.detail))
        elif isinstance(event, ToolFinished):
            mark = "✗" if event.is_error else "✓"
            out.append(f"  {mark} {event.name} →")
            content = event.content.splitlines()
            more = [f"… {len(content) - lines} more lines"] if len(content) > lines else []
            out.append(_wrap("\n".join(content[:lines] + more)))
        elif isinstance(event, PromptRefused):
            out.append(str(event))
    return relative("\n".join(out), root)


def relative(text: str, root: Path) -> str:
    """``text`` with ``root``'s absolute path (and its parent's) written relative."""
    resolved = root.resolve()
    for path, shown in ((resolved, resolved.name), (resolved.parent, ".")):
        text = text.replace(str(path), shown)
    return text


__all__ = [
    "edit_table",
    "hook_story",
    "hooks_table",
    "plot_requests",
    "relative",
    "sessions_table",
]
