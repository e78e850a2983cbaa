"""Chapter 11's dashboard: every model call of a session, what it was for, what it cost.

Not imported by ``harness.notebook``: chapter 11 imports it by its own name.

* :class:`CallLog` is a plugin, the outermost ``call_model`` layer (give it to
  :func:`~harness.cli.assemble.assemble` as ``extra``): it records each call that came back
  (the loop's turns and the side calls: subagents, forks, memory extraction, compaction),
  its usage and cost, the failed attempts recovery retried before it (chapter 06), and the
  compactions that rewrote the conversation between calls (chapters 04, 05, 07). One log can
  follow a session across several :class:`~harness.cli.assemble.Harness` objects (a resume).
* :func:`dashboard` draws it as one figure: tokens per call, stacked by kind (uncached input,
  cache write, cache read), retries and compactions marked, and the cumulative cost.
* :func:`purpose_table` sums it up by purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
from anthropic.types import Message
from matplotlib.figure import Figure

from harness.compaction.events import Compacted
from harness.loop import BaseAgent, ModelRequest, Plugin, Rewrite
from harness.notebook.views import Rendered, table, usd
from harness.pricing import cost_of
from harness.recovery import Recovery

_INPUT, _WRITE, _READ = "#8e5ea2", "#d08a1e", "#4a74b4"
_RETRY, _COMPACT, _COST = "#c0504d", "#3c8c5a", "#333333"


@dataclass(frozen=True)
class LoggedCall:
    """One model call that came back, as the session paid for it."""

    purpose: str
    """``turn`` for the loop's own requests; else the side request's name (``subagent``,
    ``fork``, ``memory``, ``compaction``, ...)."""
    model: str
    input: int
    """Uncached prompt tokens."""
    cache_write: int
    cache_read: int
    output: int
    usd: float
    retries: tuple[str, ...] = ()
    """The failed attempts recovery retried before this call came back (their kinds)."""

    @property
    def prompt(self) -> int:
        return self.input + self.cache_write + self.cache_read


@dataclass
class CallLog(Plugin):
    """Records every model call of the agents it is given to (see the module's docstring)."""

    calls: list[LoggedCall] = field(default_factory=list)
    compactions: list[tuple[int, Compacted]] = field(default_factory=list)
    """Each compaction, with the number of calls made before it."""
    _seen: dict[int, int] = field(default_factory=dict, repr=False)
    """Per Recovery plugin: how many of its attempts were already read."""

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        try:
            reply = call(request)
        except BaseException:
            self._failed_attempts(agent)  # a call given up on: its retries are not kept
            raise
        usage = reply.usage
        model = reply.model or request.model
        try:
            cost = cost_of(usage, model).total
        except KeyError:
            cost = 0.0
        self.calls.append(
            LoggedCall(
                purpose=request.purpose,
                model=model,
                input=usage.input_tokens,
                cache_write=usage.cache_creation_input_tokens or 0,
                cache_read=usage.cache_read_input_tokens or 0,
                output=usage.output_tokens,
                usd=cost,
                retries=self._failed_attempts(agent),
            )
        )
        return reply

    def on_rewrite(self, agent: BaseAgent, rewrite: Rewrite) -> None:
        if isinstance(rewrite.event, Compacted):
            self.compactions.append((len(self.calls), rewrite.event))

    def _failed_attempts(self, agent: BaseAgent) -> tuple[str, ...]:
        failed: list[str] = []
        for plugin in agent.plugins:
            if isinstance(plugin, Recovery):
                start = self._seen.get(id(plugin), 0)
                new = plugin.attempts[start:]
                self._seen[id(plugin)] = len(plugin.attempts)
                failed += [a.outcome for a in new if a.outcome not in ("ok", "cut")]
        return tuple(failed)

    @property
    def total(self) -> float:
        return sum(c.usd for c in self.calls)


def purpose_table(log: CallLog) -> Rendered:
    """Calls, tokens and dollars by purpose, in the order each purpose first appeared."""
    rows: dict[str, list[float]] = {}
    for c in log.calls:
        row = rows.setdefault(c.purpose, [0, 0, 0, 0, 0.0])
        row[0] += 1
        row[1] += c.prompt
        row[2] += c.cache_read
        row[3] += len(c.retries)
        row[4] += c.usd
    body: list[list[object]] = [
        [purpose, int(n), f"{int(prompt):,}", _share(read, prompt), int(r), usd(cost)]
        for purpose, (n, prompt, read, r, cost) in rows.items()
    ]
    calls = log.calls
    prompt = sum(c.prompt for c in calls)
    read = sum(c.cache_read for c in calls)
    retries = sum(len(c.retries) for c in calls)
    body.append(["all", len(calls), f"{prompt:,}", _share(read, prompt), retries, usd(log.total)])
    headers = ["purpose", "calls", "prompt tokens", "from cache", "retries", "cost"]
    return table(headers, body)


def dashboard(log: CallLog, *, title: str = "") -> Figure:
    """One figure: tokens per model call, stacked by kind, with retries (red, above the
    bar) and compactions (green, a line between calls) marked; the cumulative cost below."""
    calls = log.calls
    xs = list(range(1, len(calls) + 1))
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(10, 5.2), sharex=True, gridspec_kw={"height_ratios": [3, 1.4]}
    )
    base = [0.0] * len(calls)
    stack: list[tuple[str, Callable[[LoggedCall], int], str]] = [
        ("uncached input", lambda c: c.input, _INPUT),
        ("cache write", lambda c: c.cache_write, _WRITE),
        ("cache read", lambda c: c.cache_read, _READ),
    ]
    for name, value, colour in stack:
        heights = [float(value(c)) for c in calls]
        top.bar(xs, heights, 0.7, bottom=base, color=colour, label=name)
        base = [b + h for b, h in zip(base, heights, strict=True)]
    peak = max(base, default=1.0) or 1.0
    for x, c, height in zip(xs, calls, base, strict=True):
        if c.retries:
            kinds = sorted(set(c.retries))
            label = f"↻{len(c.retries)}" + ("" if kinds == ["overloaded"] else f" {kinds[0]}")
            top.text(
                x,
                height + peak * 0.03,
                label,
                ha="center",
                va="bottom",
                fontsize=8,
                color=_RETRY,
                fontweight="bold",
            )
    for before, event in log.compactions:
        for ax in (top, bottom):
            ax.axvline(before + 0.5, color=_COMPACT, lw=1.4, ls="--")
        top.text(
            before + 0.55,
            peak * 1.12,
            f"⇊ {event.tier}\n{event.tokens_before:,} → {event.tokens_after:,}",
            color=_COMPACT,
            fontsize=8,
            va="top",
        )
    top.set_ylim(0, peak * 1.25)
    top.set_ylabel("prompt tokens", fontsize=9)
    top.spines[["top", "right"]].set_visible(False)
    top.legend(fontsize=8, loc="upper left", frameon=False, ncol=3)
    top.set_title(
        "tokens per model call (red ↻: retries before it; green: a compaction)",
        fontsize=10,
        loc="left",
    )
    running, total = [], 0.0
    for c in calls:
        total += c.usd
        running.append(total)
    bottom.plot(xs, running, color=_COST, marker="o", markersize=3, lw=1.3)
    if running:
        bottom.text(xs[-1], running[-1], f"  {usd(running[-1])}", va="center", fontsize=8)
    bottom.set_ylabel("cost so far", fontsize=9)
    bottom.yaxis.set_major_formatter(lambda v, _pos: f"${v:.2f}")
    bottom.spines[["top", "right"]].set_visible(False)
    bottom.set_xticks(xs, [f"{x}\n{_short(c.purpose)}" for x, c in zip(xs, calls, strict=True)])
    bottom.tick_params(axis="x", labelsize=7)
    if title:
        fig.suptitle(title, fontsize=10, x=0.01, ha="left")
    fig.tight_layout()
    plt.close(fig)
    return fig


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def _short(purpose: str) -> str:
    return {"subagent": "sub", "compaction": "comp", "memory": "mem"}.get(purpose, purpose)


__all__ = ["CallLog", "LoggedCall", "dashboard", "purpose_table"]
