"""The table "what each mechanism is worth": each configuration against the full harness.

One row per configuration, over all the tasks: how many tasks it finished, what they cost
(USD, summed over every task, finished or not), the turns, the tokens of each kind, the wall
time on the fake clock, the largest context the main loop sent, the requests refused as
longer than the window, and the compactions that were a summary (each a model call: what
session memory saves when it has kept up). The deltas are against the full harness: a
mechanism is worth the tasks its absence loses, and the cost and time its absence adds (a
negative delta means the mechanism costs more than it saves on these tasks). The cost delta
is the average of each finished task's own change, so that one dear task does not hide what
happens to the others, and a task lost early (and so cheaply) does not count as a saving;
the wall-time delta is likewise over the tasks the configuration finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.evals.runner import Outcome


@dataclass(frozen=True)
class Row:
    """One configuration, over every task."""

    configuration: str
    finished: int
    tasks: int
    cost_usd: float
    turns: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    wall_seconds: float
    peak_context: int
    """The largest context of any of its tasks."""
    over_window: int
    """Requests refused as longer than the window, all its tasks together."""
    lost: tuple[str, ...]
    """The tasks it did not finish."""
    summaries: int = 0
    """Compactions that were a summary (a model call each), all its tasks together."""


def _row(configuration: str, outcomes: Sequence[Outcome]) -> Row:
    return Row(
        configuration=configuration,
        finished=sum(o.finished for o in outcomes),
        tasks=len(outcomes),
        cost_usd=sum(o.cost_usd for o in outcomes),
        turns=sum(o.turns for o in outcomes),
        input_tokens=sum(o.input_tokens for o in outcomes),
        output_tokens=sum(o.output_tokens for o in outcomes),
        cache_read_tokens=sum(o.cache_read_tokens for o in outcomes),
        cache_write_tokens=sum(o.cache_write_tokens for o in outcomes),
        wall_seconds=sum(o.wall_seconds for o in outcomes),
        peak_context=max((o.peak_context for o in outcomes), default=0),
        over_window=sum(o.over_window for o in outcomes),
        lost=tuple(o.task for o in outcomes if not o.finished),
        summaries=sum(o.summaries for o in outcomes),
    )


@dataclass(frozen=True)
class AblationTable:
    """The outcomes of a suite, and one :class:`Row` per configuration (in run order)."""

    outcomes: tuple[Outcome, ...]
    rows: tuple[Row, ...]

    @property
    def full(self) -> Row:
        """The full harness's row (the first)."""
        return self.rows[0]

    def row(self, configuration: str) -> Row:
        for row in self.rows:
            if row.configuration == configuration:
                return row
        raise KeyError(f"no row for {configuration!r}")

    def outcome(self, task: str, configuration: str) -> Outcome:
        for outcome in self.outcomes:
            if (outcome.task, outcome.configuration) == (task, configuration):
                return outcome
        raise KeyError(f"no outcome for {task!r} under {configuration!r}")

    def cost_delta(self, row: Row) -> float:
        """The row's cost against the full harness's, task by task, averaged over the tasks
        it finished: each task weighs the same, however dear (0.25: a task costs 25 % more
        on average), and a task lost early does not pass for a saving."""
        changes = []
        for outcome in self.outcomes:
            if outcome.configuration != row.configuration or not outcome.finished:
                continue
            full = self.outcome(outcome.task, self.full.configuration).cost_usd
            changes.append(outcome.cost_usd / full - 1 if full else 0.0)
        return sum(changes) / len(changes) if changes else 0.0

    def wall_delta(self, row: Row) -> float:
        """Seconds the row's finished tasks took beyond the full harness's same tasks (a task
        lost early is not time saved)."""
        total = 0.0
        for outcome in self.outcomes:
            if outcome.configuration == row.configuration and outcome.finished:
                total += outcome.wall_seconds
                total -= self.outcome(outcome.task, self.full.configuration).wall_seconds
        return total

    def headers(self) -> list[str]:
        return [
            "configuration",
            "finished",
            "cost",
            "Δ cost",
            "turns",
            "input",
            "output",
            "cache read",
            "cache write",
            "wall",
            "Δ wall",
            "peak context",
            "over window",
            "summaries",
            "tasks lost",
        ]

    def cells(self) -> list[list[str]]:
        """The table's rows as text (what :meth:`text` and the notebook's view show)."""
        full = self.full
        lines = []
        for row in self.rows:
            is_full = row is full
            lines.append(
                [
                    row.configuration,
                    f"{row.finished}/{row.tasks}",
                    f"${row.cost_usd:.3f}",
                    "" if is_full else f"{self.cost_delta(row):+.0%}",
                    f"{row.turns}",
                    f"{row.input_tokens:,}",
                    f"{row.output_tokens:,}",
                    f"{row.cache_read_tokens:,}",
                    f"{row.cache_write_tokens:,}",
                    f"{row.wall_seconds:,.0f} s",
                    "" if is_full else f"{self.wall_delta(row):+,.0f} s",
                    f"{row.peak_context:,}",
                    f"{row.over_window}",
                    f"{row.summaries}",
                    ", ".join(row.lost) or "-",
                ]
            )
        return lines

    def text(self) -> str:
        """The table in plain text, columns aligned (what the benchmark prints)."""
        grid = [self.headers(), *self.cells()]
        widths = [max(len(line[i]) for line in grid) for i in range(len(grid[0]))]
        left = {0, len(widths) - 1}  # names and lists read from the left, figures from the right
        out = []
        for n, line in enumerate(grid):
            out.append(
                "  ".join(
                    cell.ljust(w) if i in left else cell.rjust(w)
                    for i, (cell, w) in enumerate(zip(line, widths, strict=True))
                ).rstrip()
            )
            if n == 0:
                out.append("  ".join("-" * w for w in widths))
        return "\n".join(out)


def ablation_table(outcomes: Sequence[Outcome]) -> AblationTable:
    """Group ``outcomes`` by configuration, in the order they first appear (run the full
    harness first: it is the row the others are compared with)."""
    order: list[str] = []
    for outcome in outcomes:
        if outcome.configuration not in order:
            order.append(outcome.configuration)
    if not order:
        raise ValueError("no outcomes to tabulate")
    rows = tuple(_row(c, [o for o in outcomes if o.configuration == c]) for c in order)
    return AblationTable(tuple(outcomes), rows)


__all__ = ["AblationTable", "Row", "ablation_table"]
