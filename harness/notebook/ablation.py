"""Chapter 15's views of the ablation: the table "what each mechanism is worth", each task's
outcome under each configuration, and a plot of both.

Deterministic like every view (the outcomes come from scripted policies on a fake clock), so
the notebook's stored outputs compare byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from harness.evals.runner import Outcome
from harness.evals.table import AblationTable
from harness.notebook.views import Rendered, table


def ablation_view(ablation: AblationTable, *, title: str = "") -> Rendered:
    """The table, one row per configuration (the full harness first), with the deltas."""
    return table(ablation.headers(), ablation.cells(), title=title)


def outcomes_view(outcomes: Sequence[Outcome], *, title: str = "") -> Rendered:
    """Each task under each configuration: done or not (and why not), cost, turns, time."""
    rows = [
        [
            o.task,
            o.configuration,
            "yes" if o.finished else "NO",
            f"${o.cost_usd:.3f}",
            o.turns,
            f"{o.wall_seconds:,.0f} s",
            f"{o.peak_context:,}",
            o.why[:90],
        ]
        for o in outcomes
    ]
    headers = ["task", "configuration", "done", "cost", "turns", "wall", "peak context", "why not"]
    return table(headers, rows, title=title)


def task_matrix(ablation: AblationTable, *, title: str = "") -> Rendered:
    """Tasks down, configurations across: each cell the cost against the full harness's on
    that task (``lost`` where the task was not finished)."""
    configurations = [row.configuration for row in ablation.rows]
    tasks: list[str] = []
    for outcome in ablation.outcomes:
        if outcome.task not in tasks:
            tasks.append(outcome.task)
    rows = []
    for name in tasks:
        full = ablation.outcome(name, ablation.full.configuration)
        cells: list[object] = [name]
        for configuration in configurations[1:]:
            o = ablation.outcome(name, configuration)
            change = o.cost_usd / full.cost_usd - 1 if full.cost_usd else 0.0
            cells.append("lost" if not o.finished else f"{change:+.0%}")
        rows.append(cells)
    return table(["task", *configurations[1:]], rows, title=title)


def plot_ablation(ablation: AblationTable, *, title: str = "") -> None:
    """Show :func:`ablation_figure` (as the other chapters' plots are shown)."""
    ablation_figure(ablation, title=title)
    plt.show()


def ablation_figure(ablation: AblationTable, *, title: str = "") -> Figure:
    """Per configuration: the tasks it finished, and over those, its cost against the full
    harness's (the mean of each task's change) and the wall time it added."""
    rows = ablation.rows
    names = [row.configuration for row in rows]
    fig, (done, cost, wall) = plt.subplots(1, 3, figsize=(12, 0.45 * len(rows) + 1.4), sharey=True)
    positions = range(len(rows))
    colours = ["#3c8c5a" if row.finished == row.tasks else "#c0504d" for row in rows]
    done.barh(positions, [row.finished for row in rows], color=colours)
    for y, row in zip(positions, rows, strict=True):
        done.text(row.finished + 0.1, y, f"{row.finished}/{row.tasks}", va="center", fontsize=9)
    done.set(xlabel="tasks finished", xlim=(0, max(r.tasks for r in rows) + 1.2))
    done.set_yticks(list(positions), names)
    done.invert_yaxis()
    relative = [100 * ablation.cost_delta(row) for row in rows]
    cost.barh(positions, relative, color=["#4a7ab5" if r <= 0 else "#e39b3a" for r in relative])
    cost.axvline(0, color="#555", lw=0.8)
    for y, value in zip(positions, relative, strict=True):
        cost.text(
            value,
            y,
            f" {value:+.0f}% ",
            va="center",
            fontsize=9,
            ha="left" if value >= 0 else "right",
        )
    cost.set(xlabel="cost against the full harness (%)")
    span = max(abs(v) for v in relative) or 1.0
    cost.set_xlim(-span * 1.35 - 5, span * 1.35 + 5)
    seconds = [ablation.wall_delta(row) for row in rows]
    wall.barh(positions, seconds, color=["#4a7ab5" if v <= 0 else "#e39b3a" for v in seconds])
    wall.axvline(0, color="#555", lw=0.8)
    for y, value in zip(positions, seconds, strict=True):
        wall.text(
            value,
            y,
            f" {value:+.0f} s ",
            va="center",
            fontsize=9,
            ha="left" if value >= 0 else "right",
        )
    reach = max(abs(v) for v in seconds) or 1.0
    wall.set(xlabel="wall time against the full harness (s)", xlim=(-reach * 1.5, reach * 1.5))
    for ax in (done, cost, wall):
        ax.spines[["top", "right"]].set_visible(False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


__all__ = ["ablation_figure", "ablation_view", "outcomes_view", "plot_ablation", "task_matrix"]
