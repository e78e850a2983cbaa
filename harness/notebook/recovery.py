"""What chapter 06 uses to show error recovery: an outage that reads the clock, and timelines.

:class:`Outage` is a fault schedule for ``ScriptedModel(faults=...)`` that behaves like the API
during a bad minute: overloaded for the first few calls, then rate-limited *until a time*,
answering every call before that time with the Retry-After that is left. So a retry that
comes back early is refused again, as it would be by the real API, and a policy that ignores
Retry-After pays for it on the plot.

:func:`plot_timelines` draws ``Recovery.attempts`` on the fake clock, one row per setting.

Not imported by ``harness.notebook`` (chapter 03): chapter 06 imports it by its own name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from harness.clock import Clock
from harness.model import faults
from harness.model.scripted import Fault, Request
from harness.recovery import Attempt


class Outage:
    """The API during a bad minute, as a fault schedule that reads the model's clock.

    * The first ``overloaded`` calls get a 529 (only calls to ``busy_model``, if given: the
      other models have room, as a fallback model does).
    * Then, if ``rate_limited_for`` is set, the next call starts a rate limit that lasts that
      many seconds: every call before it ends gets a 429 whose ``retry-after`` is the whole
      seconds left (rounded up, as the header carries whole seconds).
    * After that, calls go through.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        overloaded: int = 0,
        rate_limited_for: float = 0.0,
        busy_model: str | None = None,
    ) -> None:
        self.clock = clock
        self.overloaded = overloaded
        self.rate_limited_for = rate_limited_for
        self.busy_model = busy_model
        self.limited_from: float | None = None
        """When the rate limit began (the clock's reading), once it has."""
        self.refused = 0
        """Calls answered with an error so far."""

    @property
    def limited_until(self) -> float | None:
        if self.limited_from is None:
            return None
        return self.limited_from + self.rate_limited_for

    def __call__(self, request: Request) -> Fault:
        busy = self.busy_model is None or request.model == self.busy_model
        if self.overloaded > 0 and busy:
            self.overloaded -= 1
            self.refused += 1
            return faults.overloaded()
        if self.rate_limited_for <= 0:
            return None
        now = self.clock.now()
        if self.limited_from is None:
            self.limited_from = now
        until = self.limited_from + self.rate_limited_for
        if now < until:
            self.refused += 1
            return faults.rate_limited(math.ceil(until - now))
        return None


@dataclass(frozen=True)
class Timeline:
    """One row of :func:`plot_timelines`: a setting's attempts, and how its run ended."""

    label: str
    attempts: Sequence[Attempt]
    start: float
    """The clock's reading when the run began (the plot counts seconds from it)."""
    ending: str
    """A few words drawn after the last attempt (``answered``, ``gave up``)."""
    limited: tuple[float, float] | None = None
    """When the API was refusing with a rate limit, if it was (shaded)."""


COLOURS = {
    "ok": "#3c8c5a",
    "cut": "#d08a1e",
    "overloaded": "#c0392b",
    "rate_limited": "#6a4c93",
}
OTHER = "#777777"


def plot_timelines(rows: Sequence[Timeline], *, title: str = "") -> Figure:
    """Attempts and waits on the fake clock, one row per setting.

    A mark is an attempt, coloured by how it ended; a bar after it is the wait before the
    next one; a shaded band is the time the API was refusing with a rate limit.
    """
    fig, ax = plt.subplots(figsize=(9, 1.1 + 0.9 * len(rows)))
    seen: dict[str, bool] = {}
    last_end = 0.0
    for y, row in enumerate(reversed(rows)):
        if row.limited is not None:
            a, b = (t - row.start for t in row.limited)
            ax.fill_between([a, b], y - 0.35, y + 0.35, color="#6a4c93", alpha=0.10, lw=0)
        for attempt in row.attempts:
            at = attempt.start - row.start
            if attempt.waited:
                ax.barh(y, attempt.waited, left=at, height=0.18, color="#bbbbbb", zorder=1)
            colour = COLOURS.get(attempt.outcome, OTHER)
            label = attempt.outcome if attempt.outcome not in seen else None
            seen[attempt.outcome] = True
            ax.scatter([at], [y], s=70, color=colour, zorder=3, label=label, edgecolors="white")
        end = max((a.start - row.start + a.waited for a in row.attempts), default=0.0)
        last_end = max(last_end, end)
        ax.annotate(
            row.ending,
            (end, y),
            xytext=(10, 0),
            textcoords="offset points",
            va="center",
            fontsize=9,
        )
    ax.set_yticks(range(len(rows)), [row.label for row in reversed(rows)])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlim(-0.5, last_end * 1.25 + 2)
    ax.set_xlabel("seconds on the fake clock since the run began (grey bars: waiting)")
    ax.legend(
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        title="attempt's outcome",
        title_fontsize=8,
        frameon=False,
    )
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    plt.close(fig)  # the notebook shows it once, as the cell's value
    return fig


__all__ = ["COLOURS", "Outage", "Timeline", "plot_timelines"]
