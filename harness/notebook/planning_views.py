"""Chapter 12's views: the long task's calls, steps done per turn, and tables of runs.

Each function takes what :mod:`harness.notebook.planning` (or an agent) produced and shows it;
none runs anything of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.ticker import MultipleLocator

from harness.loop import BaseAgent
from harness.notebook.planning import STEPS, TaskRun, module_names
from harness.notebook.views import Rendered, table, usd


def calls_table(run: TaskRun) -> Rendered:
    """Every ``migrate`` call of a run, in order, each marked when it repeats an earlier one."""
    first: dict[str, int] = {}
    rows = []
    for n, module in enumerate(run.calls, start=1):
        note = f"again: done at call {first[module]}" if module in first else ""
        first.setdefault(module, n)
        rows.append([n, module, note])
    return table(["call", "module", ""], rows)


def missing(run: TaskRun) -> list[str]:
    """The modules a run never migrated."""
    return [name for name in module_names() if name not in run.calls]


def compaction_turns(run: TaskRun) -> list[int]:
    """After how many model replies each compaction came (it runs before the next request)."""
    replies, out = 0, []
    for event in run.events:
        kind = type(event).__name__
        if kind == "AssistantReplied":
            replies += 1
        elif kind == "Compacted":
            out.append(replies)
    return out


def repeat_turns(run: TaskRun) -> list[int]:
    """The model replies (turns) whose ``migrate`` call redid a step done before."""
    replies, seen, out = 0, set(), []
    for event in run.events:
        kind = type(event).__name__
        if kind == "AssistantReplied":
            replies += 1
        elif kind == "ToolStarted" and getattr(event, "name", "") == "migrate":
            module = str(getattr(event, "input", {}).get("module"))
            if module in seen:
                out.append(replies)
            seen.add(module)
    return out


def plot_done_by_turn(without: TaskRun, with_plan: TaskRun, *, title: str = "") -> None:
    """Distinct steps done after each model reply, without a plan and with one; the
    compactions as vertical lines."""
    fig, ax = plt.subplots(figsize=(9, 4.2))
    arms = [  # the plan first and wider, so the line without it shows where they overlap
        (with_plan, "#3c8c5a", "todo list, pinned", 5.0),
        (without, "#c0504d", "no plan", 1.8),
    ]
    for run, colour, label, width in arms:
        turns = range(1, len(run.done_by_turn) + 1)
        summary = f"{label}: {run.completed} done, {run.repeated} repeated, {run.turns} turns"
        alpha = 0.45 if width > 2 else 1.0
        ax.step(
            turns,
            run.done_by_turn,
            where="post",
            color=colour,
            lw=width,
            alpha=alpha,
            label=summary,
        )
        for at in compaction_turns(run):
            ax.axvline(at + 0.5, color=colour, ls=":", lw=1.2, alpha=0.8)
    again = repeat_turns(without)
    ax.scatter(
        again,
        [without.done_by_turn[t - 1] for t in again],
        marker="x",
        s=60,
        color="#c0504d",
        zorder=3,
        label="a step done again",
    )
    ax.plot([], [], color="#777", ls=":", label="a compaction (in the arm's colour)")
    ax.axhline(STEPS, color="#555", lw=0.8)
    ax.text(0.6, STEPS + 0.25, f"all {STEPS} steps", fontsize=9, color="#555")
    ax.set(
        xlabel="model reply (turn)",
        ylabel="distinct steps done",
        ylim=(0, STEPS + 1.2),
        title=title,
    )
    ax.yaxis.set_major_locator(MultipleLocator(2))
    ax.xaxis.set_major_locator(MultipleLocator(2))
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(loc="lower right", frameon=False, fontsize=9)
    fig.tight_layout()
    plt.show()


def arms_table(arms: Sequence[Mapping[str, object]]) -> Rendered:
    """One row per arm of the benchmark's ``figures()``: the means over its seeds."""

    def number(arm: Mapping[str, object], key: str) -> float:
        value = arm[key]
        return float(value) if isinstance(value, int | float) else 0.0

    rows = []
    for arm in arms:
        rows.append(
            [
                "todo list" if arm["plan"] else "no plan",
                f"{number(arm, 'completed'):.2f}",
                f"{number(arm, 'repeated'):.2f}",
                f"{number(arm, 'skipped'):.2f}",
                f"{number(arm, 'turns'):.1f}",
                usd(number(arm, "cost")),
                f"{number(arm, 'cache_read_share'):.0%}",
            ]
        )
    seeds = arms[0]["seeds"] if arms else 0
    return table(
        ["arm", "completed", "repeated", "skipped", "turns", "cost", "read from cache"],
        rows,
        title=f"means over {seeds} seeds ({STEPS} steps each)",
    )


def cache_row(label: str, agent: BaseAgent, reminders: int) -> list[object]:
    """One row of a cache table: a session's reminders, cache reads and writes, and cost."""
    calls = agent.meter.calls
    read = sum(c.usage.cache_read_input_tokens or 0 for c in calls)
    written = sum(c.usage.cache_creation_input_tokens or 0 for c in calls)
    return [label, len(calls), reminders, f"{read:,}", f"{written:,}", usd(agent.meter.total.total)]


def cache_table(rows: Sequence[Sequence[object]]) -> Rendered:
    """Rows made by :func:`cache_row`."""
    return table(["session", "requests", "reminders", "cache read", "cache write", "cost"], rows)
