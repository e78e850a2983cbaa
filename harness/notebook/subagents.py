"""Chapter 10's broken versions and views: delegation that floods the parent, a fork that
rebuilds its prompt and misses the cache, and the tables and the plot that compare them.

* **The broken versions**, for the chapter to show failing (do not copy them):
  :func:`raw_report`, :func:`naive_delegate` and :func:`delegate_tool` hand the child's whole
  conversation back to the parent; :func:`naive_fork` rebuilds its system prompt, so every
  sibling writes the whole prompt to the cache again.
* :func:`sibling_costs`, :func:`sibling_table` and :func:`plot_siblings`: what each sibling
  read from the cache, wrote to it, and paid; :func:`prefix_table`: the byte-for-byte proof
  (:func:`harness.subagents.prefix_report`) as a table.

Not imported by ``harness.notebook``: chapter 10 imports it by its own name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from pydantic import BaseModel, Field

from harness import messages as m
from harness.agent import Agent
from harness.loop import BaseAgent
from harness.notebook.views import Rendered, table, usd
from harness.subagents import DEFAULT_SUBAGENT_TURNS, Fork, SiblingPrefix, fork, fresh
from harness.tools.base import Tool, ToolContext

# -- the broken versions ---------------------------------------------------------------------


def raw_report(child: BaseAgent, start: int = 0) -> str:
    """BROKEN ON PURPOSE (the flood): everything the child saw and said after ``start``,
    tool results included, as one text; what a delegation tool returns when it hands the
    child's whole conversation back to the parent."""
    parts: list[str] = []
    for message in child.messages[start:]:
        for block in m.blocks(message):
            if block.get("type") == "text":
                parts.append(str(block["text"]))
            elif block.get("type") == "tool_use":
                parts.append(f"[{block.get('name')} {block.get('input')}]")
            elif block.get("type") == "tool_result":
                content = block.get("content")
                parts.append(content if isinstance(content, str) else str(content))
    return "\n".join(parts)


def naive_delegate(parent: BaseAgent, task: str, *, max_turns: int = DEFAULT_SUBAGENT_TURNS) -> str:
    """BROKEN ON PURPOSE: run a fresh child on ``task`` and return :func:`raw_report`."""
    child: Agent = fresh(parent, max_turns=max_turns, system="You are a helper agent.")
    for _ in child.run(task):  # run it to the end; what it said is read back below
        pass
    return raw_report(child)


class DelegateInput(BaseModel):
    """What the model sends to the broken ``delegate`` tool."""

    task: str = Field(min_length=1)
    """The task, complete: the helper sees nothing else."""


def delegate_tool(parent: BaseAgent) -> Tool[DelegateInput]:
    """BROKEN ON PURPOSE: a ``delegate`` tool for ``parent`` whose result is
    :func:`naive_delegate`'s, the child's whole conversation."""

    def delegate(args: DelegateInput, context: ToolContext) -> str:
        return naive_delegate(parent, args.task)

    return Tool(
        "delegate",
        "Hand a self-contained task to a helper agent; you get back what it did.",
        DelegateInput,
        delegate,
        read_only=True,
    )


def naive_fork(
    parent: BaseAgent, directive: str, *, max_turns: int = DEFAULT_SUBAGENT_TURNS
) -> Fork:
    """BROKEN ON PURPOSE: a fork that rebuilds its system prompt (naming its task and the
    time it started) instead of reusing the parent's bytes. Everything from the system
    prompt on differs from the parent's request and from every sibling's, so the cache
    misses it all (Claude Code keeps the parent's rendered system prompt for this reason)."""
    child = fork(parent, directive, max_turns=max_turns)
    system = (
        parent.system
        if isinstance(parent.system, str)
        else m.text_of({"role": "user", "content": list(parent.system or [])})
    )
    child.agent.system = (
        f"{system}\n\nYou are a forked helper. Your task: {directive}\n"
        f"Started at {parent.clock.now():.3f}."
    )
    return child


# -- what each sibling paid ------------------------------------------------------------------


@dataclass(frozen=True)
class SiblingCost:
    """What one child's model calls sent, read from the cache, wrote to it, and cost."""

    prompt: int
    """Prompt tokens over all its calls: uncached, written to the cache and read from it."""
    read: int
    written: int
    cost: float

    @property
    def read_share(self) -> float:
        return self.read / self.prompt if self.prompt else 0.0


def sibling_costs(children: Sequence[BaseAgent | Fork]) -> list[SiblingCost]:
    """Each child's totals, from its own meter (a fork's, or any child agent's)."""
    out: list[SiblingCost] = []
    for child in children:
        agent = child.agent if isinstance(child, Fork) else child
        calls = agent.meter.calls
        out.append(
            SiblingCost(
                prompt=sum(c.prompt_tokens for c in calls),
                read=sum(c.usage.cache_read_input_tokens or 0 for c in calls),
                written=sum(c.usage.cache_creation_input_tokens or 0 for c in calls),
                cost=sum(c.cost.total for c in calls if c.cost is not None),
            )
        )
    return out


def sibling_table(rows: Sequence[SiblingCost], *, title: str = "") -> Rendered:
    """One row per sibling: prompt, cache read (and its share), cache write, cost; and a total."""
    body: list[list[object]] = [
        [n, f"{r.prompt:,}", f"{r.read:,}", f"{r.read_share:.0%}", f"{r.written:,}", usd(r.cost)]
        for n, r in enumerate(rows, start=1)
    ]
    total = sum(r.cost for r in rows)
    body.append(["all", "", "", "", "", usd(total)])
    headers = ["sibling", "prompt", "cache read", "read share", "cache write", "cost"]
    return table(headers, body, title=title)


def prefix_table(report: Sequence[SiblingPrefix]) -> Rendered:
    """The byte-for-byte proof: each sibling's prompt size, the bytes it shares with the first
    sibling's from the start, where it first differs, and where its directive sits."""
    rows: list[list[object]] = [
        [
            n,
            f"{p.bytes:,}",
            f"{p.shared:,}",
            p.diverges_at or "nowhere",
            p.directive_at,
            "yes" if p.only_directive_differs else "NO",
        ]
        for n, p in enumerate(report, start=1)
    ]
    headers = ["sibling", "bytes", "shared", "first differs at", "directive at", "only directive"]
    return table(headers, rows)


_NAIVE, _FORK = "#c0504d", "#3c8c5a"


def plot_siblings(
    naive: Sequence[SiblingCost], forked: Sequence[SiblingCost], *, title: str = ""
) -> Figure:
    """Two panels, one pair of bars per sibling: tokens read from the cache, and cost; the
    naive fork (its own system prompt) against the real one (the parent's bytes)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    n = max(len(naive), len(forked))
    xs = list(range(1, n + 1))
    width = 0.38
    panels: list[tuple[str, Callable[[SiblingCost], float], Callable[[float], str]]] = [
        ("tokens read from the cache", lambda r: float(r.read), lambda v: f"{v:,.0f}"),
        ("cost of the sibling", lambda r: r.cost, lambda v: f"${v:.4f}"),
    ]
    for ax, (name, value, fmt) in zip(axes, panels, strict=True):
        top = 0.0
        for offset, rows, colour, label in (
            (-width / 2, naive, _NAIVE, "naive fork (its own system prompt)"),
            (width / 2, forked, _FORK, "fork (the parent's bytes)"),
        ):
            values = [value(r) for r in rows]
            top = max([top, *values])
            bars = ax.bar(
                [x + offset for x in xs[: len(rows)]], values, width, color=colour, label=label
            )
            for bar, v in zip(bars, values, strict=True):
                ax.text(
                    bar.get_x() + bar.get_width() / 2,
                    bar.get_height(),
                    fmt(v),
                    ha="center",
                    va="bottom",
                    fontsize=7.5,
                )
        ax.set_title(name, fontsize=10, loc="left")
        ax.set_xticks(xs, [f"sibling {x}" for x in xs])
        ax.set_yticks([])
        ax.set_ylim(0, (top or 1) * 1.2)
        ax.spines[["top", "right", "left"]].set_visible(False)
    axes[0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(0, -0.12), ncol=2, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10, x=0.01, ha="left")
    fig.tight_layout()
    plt.close(fig)  # the notebook shows it once, as the cell's value
    return fig


__all__ = [
    "DelegateInput",
    "SiblingCost",
    "delegate_tool",
    "naive_delegate",
    "naive_fork",
    "plot_siblings",
    "prefix_table",
    "raw_report",
    "sibling_costs",
    "sibling_table",
]
