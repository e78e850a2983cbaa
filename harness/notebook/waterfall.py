"""A trace as a waterfall, for readers without a trace viewer; and the span a cost spike is in.

Not imported by ``harness.notebook``: chapter 15 imports it by its own name.

* :func:`waterfall` draws finished spans (``ReadableSpan``, from
  :func:`harness.notebook.tracing.traced_capstone` or any in-memory exporter) as a trace
  viewer does: one row per span, nested under its parent, a bar from its start for its
  duration, model calls, tool calls and compactions in their own colours, each call's cost at
  the end of its bar, retries and compactions marked where they happened.
* :func:`cost_spike` finds the model call whose cost jumped the most over the call before it
  (of the same purpose) and says why, from the span's own token counts and the harness's
  events between the two calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from harness.notebook.views import usd
from harness.pricing import price_of
from harness.tracing import names as n

_RUN, _TURN, _CHAT, _SIDE = "#bbbbbb", "#dddddd", "#4a74b4", "#8e5ea2"
_TOOL, _COMPACT, _FAILED = "#d08a1e", "#3c8c5a", "#c0504d"
_MARGIN = 0.3
"""The share of the figure's width the span names take, on the left."""
_MARKS = {"Retrying": ("↻", _FAILED), "Compacted": ("⇊", _COMPACT), "FellBack": ("⇄", _FAILED)}


def _seconds(ns: int | None) -> float:
    return (ns or 0) / 1e9


def ordered(spans: Sequence[ReadableSpan]) -> list[tuple[int, ReadableSpan]]:
    """``spans`` as a viewer lists them: each root by start time, each span's children right
    under it by start time; with each span's depth."""
    ids = {s.context.span_id for s in spans if s.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for s in spans:
        parent = s.parent.span_id if s.parent is not None else None
        children.setdefault(parent if parent in ids else None, []).append(s)

    def key(s: ReadableSpan) -> tuple[int, int, str]:
        return (s.start_time or 0, s.end_time or 0, s.name)

    out: list[tuple[int, ReadableSpan]] = []

    def walk(parent: int | None, depth: int) -> None:
        for s in sorted(children.get(parent, []), key=key):
            out.append((depth, s))
            if s.context is not None:
                walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return out


def colour(span: ReadableSpan) -> str:
    """A span's colour: failed attempts red, compactions green, side requests purple, model
    calls blue, tools orange, turns and runs grey."""
    attributes = span.attributes or {}
    operation = attributes.get(n.OPERATION)
    if span.status.status_code == StatusCode.ERROR and operation == n.CHAT:
        return _FAILED
    if operation == n.CHAT:
        purpose = attributes.get(n.PURPOSE, "turn")
        return _COMPACT if purpose == "compaction" else _CHAT if purpose == "turn" else _SIDE
    if operation == n.EXECUTE_TOOL:
        return _TOOL
    return _RUN if operation == n.INVOKE_AGENT else _TURN


def label(span: ReadableSpan) -> str:
    """A row's label: the span's name, with a side request's purpose."""
    attributes = span.attributes or {}
    purpose = attributes.get(n.PURPOSE)
    if attributes.get(n.OPERATION) == n.CHAT:
        model = str(attributes.get(n.REQUEST_MODEL, "")).removeprefix("claude-")
        failed = f" ✗ {attributes.get(n.ERROR_TYPE)}" if n.ERROR_TYPE in attributes else ""
        extra = f" ({purpose})" if purpose and purpose != "turn" else ""
        return f"chat {model}{extra}{failed}"
    return span.name


def waterfall(spans: Sequence[ReadableSpan], *, title: str = "") -> Figure:
    """The spans as a waterfall (see the module's docstring); the same figure every run."""
    rows = ordered(spans)
    start = min((s.start_time or 0 for _, s in rows), default=0)
    end = max((s.end_time or 0 for _, s in rows), default=start)
    width = max(_seconds(end - start), 1.0)
    # At least 1.5 inches: the legend and title take 0.9 above the rows, whatever their number.
    fig, ax = plt.subplots(figsize=(11, max(1.5, 0.5 + 0.24 * len(rows))))
    for y, (depth, s) in enumerate(rows):
        left = _seconds((s.start_time or 0) - start)
        length = _seconds((s.end_time or 0) - (s.start_time or 0))
        paint = colour(s)
        if length < width * 0.002:  # an instant (a tool on the fake clock): a mark, not a bar
            ax.plot(left, y, marker="D", markersize=4, color=paint)
        else:
            ax.barh(y, length, left=left, height=0.7, color=paint)
        cost = (s.attributes or {}).get(n.COST_USD)
        if isinstance(cost, float) and (s.attributes or {}).get(n.OPERATION) == n.CHAT:
            ax.text(left + length + width * 0.005, y, usd(cost), va="center", fontsize=7)
        for event in s.events:
            mark = _MARKS.get(event.name)
            if mark is not None:
                at = _seconds(event.timestamp - start)
                ax.text(at, y, mark[0], color=mark[1], fontsize=9, ha="center", va="center")
        ax.text(  # x in axes units: the labels sit in the margin, indented by depth
            -_MARGIN,
            y,
            "  " * depth + label(s),
            va="center",
            fontsize=7,
            family="monospace",
            transform=ax.get_yaxis_transform(),
        )
    ax.set_ylim(max(len(rows), 1) - 0.5, -0.5)  # no spans: one empty row, not a flat axis
    ax.set_xlim(0, width * 1.08)
    ax.set_yticks([])
    ax.set_xlabel("seconds since the session started (the agent's clock)", fontsize=9)
    ax.spines[["top", "right", "left"]].set_visible(False)
    handles = [
        Rectangle((0, 0), 1, 1, color=c) for c in (_CHAT, _SIDE, _COMPACT, _FAILED, _TOOL, _TURN)
    ]
    names = ["model call", "side request", "compaction", "failed attempt", "tool", "turn / run"]
    ax.legend(handles, names, fontsize=7.5, ncol=6, loc="lower left", bbox_to_anchor=(0, 1.0))
    if title:
        fig.suptitle(title, fontsize=10, x=0.01, ha="left")
    fig.subplots_adjust(left=_MARGIN + 0.01, right=0.98, top=1 - 0.9 / fig.get_figheight())
    plt.close(fig)
    return fig


@dataclass(frozen=True)
class Spike:
    """The model call whose cost jumped most over the call before it of the same purpose."""

    span: ReadableSpan
    previous: ReadableSpan
    cost: float
    previous_cost: float
    why: str

    def __str__(self) -> str:
        return (
            f"{label(self.span)}: {usd(self.previous_cost)} → {usd(self.cost)} "
            f"({self.cost / self.previous_cost:.1f}×). {self.why}"
            if self.previous_cost
            else f"{label(self.span)}: {usd(self.cost)}. {self.why}"
        )


def _count(span: ReadableSpan, key: str) -> int:
    value = (span.attributes or {}).get(key, 0)
    return int(value) if isinstance(value, int | float) else 0


def _cost(span: ReadableSpan) -> float:
    value = (span.attributes or {}).get(n.COST_USD, 0.0)
    return float(value) if isinstance(value, int | float) else 0.0


def cost_spike(spans: Sequence[ReadableSpan]) -> Spike | None:
    """The model call that paid most for a cache that stopped matching, and why.

    Each call is compared with the last call of the same purpose (a turn with the turn
    before it, a memory extraction with the one before it): what that call left in the cache
    (its reads and writes) should be read by this one at a tenth of the price. The call that
    wrote most of it again is the spike; if none did, the call whose cost rose most. ``None``
    when no call cost more than the one before it.
    """
    calls = [
        s
        for _, s in ordered(spans)
        if (s.attributes or {}).get(n.OPERATION) == n.CHAT and n.COST_USD in (s.attributes or {})
    ]
    calls.sort(key=lambda s: s.start_time or 0)
    pairs: list[tuple[ReadableSpan, ReadableSpan]] = []
    last: dict[str, ReadableSpan] = {}
    for s in calls:
        purpose = str((s.attributes or {}).get(n.PURPOSE, "turn"))
        if purpose in last:
            pairs.append((s, last[purpose]))
        last[purpose] = s
    missed = [(float(_missed(s, before)), s, before) for s, before in pairs]
    rose = [(_cost(s) - _cost(before), s, before) for s, before in pairs]
    chosen = max((p for p in missed if p[0] > 0), key=lambda p: p[0], default=None)
    chosen = chosen or max((p for p in rose if p[0] > 0), key=lambda p: p[0], default=None)
    if chosen is None:
        return None
    _, span, previous = chosen
    return Spike(span, previous, _cost(span), _cost(previous), _why(spans, span, previous))


def _missed(span: ReadableSpan, previous: ReadableSpan) -> int:
    """Tokens the previous call left in the cache that this one did not read."""
    left = _count(previous, n.CACHE_READ_TOKENS) + _count(previous, n.CACHE_WRITE_TOKENS)
    return max(0, left - _count(span, n.CACHE_READ_TOKENS))


_NOT_A_CHANGE = frozenset({"PermissionDecided", "Retrying", "HookReported"})
"""Events that never change what the next request sends."""


def _prices(span: ReadableSpan) -> str:
    """The model's cache rates against its input price, from the price table (chapter 03)."""
    model = str((span.attributes or {}).get(n.RESPONSE_MODEL, ""))
    try:
        p = price_of(model)
    except KeyError:
        return ""
    write, read = p.cache_write_5m / p.input, p.cache_read / p.input
    return f" ({write:g}× input, against {read:g}× for a read)"


def _named(name: str, attributes: Mapping[str, object] | None) -> str:
    tier = (attributes or {}).get("tier")
    return f"{name} ({tier})" if tier else name


def _why(spans: Sequence[ReadableSpan], span: ReadableSpan, previous: ReadableSpan) -> str:
    between = sorted(
        {
            _named(e.name, e.attributes)
            for s in spans
            for e in s.events
            if (previous.start_time or 0) <= e.timestamp <= (span.start_time or 0)
            and e.name not in _NOT_A_CHANGE
        }
    )
    after = f" Between the two calls: {', '.join(between)}." if between else ""
    if (missed := _missed(span, previous)) > 0:
        read, written = _count(span, n.CACHE_READ_TOKENS), _count(span, n.CACHE_WRITE_TOKENS)
        return (
            f"The cached prefix stopped matching: the call before left "
            f"{missed + read:,} tokens in the cache, this one read {read:,} of them and wrote "
            f"{written:,} at the cache-write price{_prices(span)}.{after}"
        )
    grown = _count(span, n.INPUT_TOKENS) - _count(previous, n.INPUT_TOKENS)
    out = _count(span, n.OUTPUT_TOKENS) - _count(previous, n.OUTPUT_TOKENS)
    if out > grown:
        return f"It wrote {out:,} more output tokens than the call before.{after}"
    return f"Its prompt grew by {grown:,} tokens.{after}"


__all__ = ["Spike", "colour", "cost_spike", "label", "ordered", "waterfall"]
