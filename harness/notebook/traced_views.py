"""Chapter 15's views of a traced session: its log, its bill, and two calls side by side.

Not imported by ``harness.notebook``: chapter 15 imports it by its own name.

A traced session (:func:`harness.notebook.tracing.traced_capstone`) is a set of spans. These
views read one run of it (``invoke_agent``) the three ways the chapter compares: the *log*, a
line per tool call and per harness event, as a person watching the command line sees it
(:func:`event_log`); the *bill*, a line per model call of the conversation with its tokens and
cost (:func:`calls_table`); and the *trace*, every attribute of the call whose cost jumped
beside the call before it (:func:`pair_table`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry.sdk.trace import ReadableSpan

from harness.notebook.tracing import TracedSession
from harness.notebook.views import Rendered, table, usd
from harness.notebook.waterfall import Spike
from harness.tracing import names as n

SECOND = 1e9
_QUIET = frozenset({"PermissionDecided"})
"""Events the log leaves out: every call here was allowed, and a line each says nothing."""


def _attributes(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


def runs(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    """The session's top-level runs (``invoke_agent`` spans with no parent), as they started."""
    found = [
        s for s in spans if _attributes(s).get(n.OPERATION) == n.INVOKE_AGENT and s.parent is None
    ]
    return sorted(found, key=lambda s: s.start_time or 0)


def _inside(span: ReadableSpan, run: ReadableSpan, spans: Sequence[ReadableSpan]) -> bool:
    """Whether ``span`` is ``run`` or one of its descendants."""
    parents = {
        s.context.span_id: s.parent.span_id for s in spans if s.context is not None and s.parent
    }
    target = run.context.span_id if run.context is not None else None
    current = span.context.span_id if span.context is not None else None
    while current is not None:
        if current == target:
            return True
        current = parents.get(current)
    return False


@dataclass(frozen=True)
class Call:
    """A model call of the conversation (a ``chat`` span that answered, purpose ``turn``)."""

    span: ReadableSpan
    number: int

    def count(self, key: str) -> int:
        value = _attributes(self.span).get(key, 0)
        return int(value) if isinstance(value, int | float) else 0

    @property
    def cost(self) -> float:
        value = _attributes(self.span).get(n.COST_USD, 0.0)
        return float(value) if isinstance(value, int | float) else 0.0


def calls(session: TracedSession, run: int) -> list[Call]:
    """The conversation's model calls in run ``run`` (0 is the first), as they started."""
    chosen = runs(session.spans)[run]
    found = [
        s
        for s in session.spans
        if _inside(s, chosen, session.spans)
        and _attributes(s).get(n.OPERATION) == n.CHAT
        and n.COST_USD in _attributes(s)
        and _attributes(s).get(n.PURPOSE) == "turn"
    ]
    found.sort(key=lambda s: s.start_time or 0)
    return [Call(s, k) for k, s in enumerate(found, start=1)]


def _clock(ns: int, start: int) -> str:
    seconds = (ns - start) / SECOND
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}:{rest:04.1f}"


def _event_line(name: str, attributes: dict[str, object]) -> str:
    if name == "Compacted":
        return (
            f"⧉ compacted ({attributes.get('tier')}): {attributes.get('tokens_before', 0):,} → "
            f"{attributes.get('tokens_after', 0):,} tokens"
        )
    if name == "Retrying":
        delay = float(str(attributes.get("delay", 0)))
        return f"↻ retrying in {delay:.0f} s ({attributes.get('source')})"
    if name == "MemoryUpdated":
        return "✎ session memory updated"
    return name


def event_log(session: TracedSession, run: int) -> str:
    """Run ``run`` as the command line's log shows it: each tool call and each of the
    harness's events, a line each, with the session's clock (from the run's start)."""
    chosen = runs(session.spans)[run]
    start = chosen.start_time or 0
    lines: list[tuple[int, str]] = []
    for span in session.spans:
        if not _inside(span, chosen, session.spans):
            continue
        if _attributes(span).get(n.OPERATION) == n.EXECUTE_TOOL:
            lines.append((span.start_time or 0, f"⚙ {_attributes(span).get(n.TOOL_NAME)}"))
        for event in span.events:
            if event.name not in _QUIET:
                lines.append(
                    (event.timestamp, _event_line(event.name, dict(event.attributes or {})))
                )
    lines.sort(key=lambda pair: pair[0])
    return "\n".join(f"{_clock(at, start)}  {line}" for at, line in lines)


def calls_table(session: TracedSession, run: int, *, cache: bool = False) -> Rendered:
    """The bill of run ``run``: each model call of the conversation, its tokens and cost (and,
    with ``cache``, what it read from the cache and wrote to it)."""
    rows = []
    before = 0.0
    for call in calls(session, run):
        rise = f"{call.cost / before:.1f}×" if before else ""
        row: list[object] = [call.number, f"{call.count(n.INPUT_TOKENS):,}"]
        if cache:
            row += [f"{call.count(n.CACHE_READ_TOKENS):,}", f"{call.count(n.CACHE_WRITE_TOKENS):,}"]
        row += [f"{call.count(n.OUTPUT_TOKENS):,}", usd(call.cost), rise]
        rows.append(row)
        before = call.cost
    headers = ["call", "prompt tokens"]
    if cache:
        headers += ["read from cache", "written to cache"]
    headers += ["output tokens", "cost", "× the call before"]
    return table(headers, rows)


def pair_table(spike: Spike) -> Rendered:
    """Every attribute of the call :func:`~harness.notebook.waterfall.cost_spike` found,
    beside the call before it of the same purpose."""
    before, after = _attributes(spike.previous), _attributes(spike.span)
    rows = [
        (key, _value(before.get(key)), _value(after.get(key)))
        for key in sorted(set(before) | set(after))
    ]
    return table(["attribute", "the call before", "the call that jumped"], rows)


def _value(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, tuple | list):
        return ", ".join(str(v) for v in value)
    return str(value)


__all__ = ["Call", "calls", "calls_table", "event_log", "pair_table", "runs"]
