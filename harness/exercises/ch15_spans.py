"""The cases chapter 15's second check tries: a session's trace, and where its cost jumped.

A trace is a list of spans, as an OpenTelemetry exporter hands them over: the run, each turn,
each model call (``chat``, one span per attempt) and each tool call (``execute_tool``), in no
particular order. :func:`trace` builds one from a compact description of a session's model
calls (what each read from the cache, what it wrote, how long after the previous one it
started), priced at the course model's rates, with the spans a real trace has around them.
:func:`spike_cases` are hand-made sessions, from a steady one to a cache that expired, a tool
list that changed, a compaction and a huge tool result; :func:`generated_traces` are random
ones, answered by :func:`reference_spikes`, the exercise's rules written out. Used by
:mod:`harness.exercises.ch15`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from harness.tracing import names

Span = dict[str, Any]
Spikes = list[tuple[str, str]]
SpikeCase = tuple[str, list[Span], float | None, Spikes]

# The names the harness's traces use (harness.tracing.names): the GenAI conventions' and its own.
OPERATION = names.OPERATION  # "gen_ai.operation.name": "chat" for a model call
INPUT = names.INPUT_TOKENS  # the whole prompt: the cache's reads and writes included
READ = names.CACHE_READ_TOKENS
WRITTEN = names.CACHE_WRITE_TOKENS
OUTPUT = names.OUTPUT_TOKENS
COST = names.COST_USD  # "harness.cost.usd", on a call that answered
PURPOSE = names.PURPOSE  # "turn" for the conversation's own requests
ATTEMPT = names.ATTEMPT

SECOND = 1_000_000_000
"""OpenTelemetry keeps times in nanoseconds since the epoch."""
CACHE_LIFETIME = 300 * SECOND
"""The prompt cache's default lifetime: 5 minutes, refreshed by each read (Anthropic's
prompt-caching page)."""
START = 1_764_230_400 * SECOND  # 2025-11-27 08:00 UTC: any fixed start keeps the cases stable

# Sonnet 5.5, the course's model: $2 in and $10 out per million tokens; cache writes 1.25x,
# reads 0.05x (Anthropic's pricing page).
_IN, _OUT = 2.0 / 1e6, 10.0 / 1e6


@dataclass(frozen=True)
class Call:
    """One model call of a session: what its prompt read from the cache and wrote to it."""

    read: int
    written: int
    uncached: int = 0
    output: int = 200
    after: float = 5.0  # seconds after the previous call ended (tools, the person typing)
    seconds: float = 4.0  # how long the call took
    purpose: str = "turn"  # or a side request's name ("compaction"): not the conversation
    failed_first: bool = False  # an attempt that failed (a 529) before this one answered

    @property
    def prompt(self) -> int:
        return self.read + self.written + self.uncached


def cost(call: Call) -> float:
    """The call's price at the course model's rates, rounded as a span attribute is."""
    spent = (call.uncached + 1.25 * call.written + 0.05 * call.read) * _IN + call.output * _OUT
    return round(spent, 8)


def trace(
    calls: Sequence[Call], *, shuffle: int | None = None, model: str = "claude-sonnet-5-5"
) -> list[Span]:
    """The spans of a session whose model calls are ``calls``, one turn each, a tool call after
    each but the last; in the order they ended (children first), or shuffled with ``shuffle``
    as the seed."""
    spans: list[Span] = []
    ids = iter(range(1, 10_000))

    def span(name: str, start: int, end: int, **attributes: Any) -> Span:
        made = {
            "name": name,
            "span_id": f"{next(ids):016x}",
            "start_time": start,
            "end_time": end,
            "attributes": attributes,
        }
        spans.append(made)
        return made

    now = START
    run_start = now
    for number, call in enumerate(calls, start=1):
        now += int(call.after * SECOND)
        turn_start = now
        if call.failed_first:
            failed = {OPERATION: "chat", PURPOSE: call.purpose, ATTEMPT: 1}
            failed["error.type"] = "OverloadedError"  # a 529: no usage, no cost
            span(f"chat {model}", now, now + SECOND // 2, **failed)
            now += 2 * SECOND  # the retry's wait
        usage = {
            OPERATION: "chat",
            PURPOSE: call.purpose,
            ATTEMPT: 2 if call.failed_first else 1,
            INPUT: call.prompt,
            READ: call.read,
            WRITTEN: call.written,
            OUTPUT: call.output,
            COST: cost(call),
        }
        span(f"chat {model}", now, now + int(call.seconds * SECOND), **usage)
        now += int(call.seconds * SECOND)
        if number < len(calls) and call.purpose == "turn":
            span("execute_tool bash", now, now + SECOND, **{OPERATION: "execute_tool"})
            now += SECOND
        span(f"turn {number}", turn_start, now)
    span("invoke_agent harness", run_start, now, **{OPERATION: "invoke_agent"})
    spans.sort(key=lambda s: s["end_time"])  # stable: a child that ends with its parent first
    if shuffle is not None:
        random.Random(shuffle).shuffle(spans)
    return spans


def span_dicts(spans: Sequence[ReadableSpan]) -> list[Span]:
    """A real trace's spans as the exercise takes them: name, ``span_id`` (16 hex digits, as
    the viewers show it), ``start_time`` and ``end_time`` (nanoseconds) and attributes."""
    return [
        {
            "name": span.name,
            "span_id": f"{span.context.span_id:016x}" if span.context else "",
            "start_time": span.start_time or 0,
            "end_time": span.end_time or 0,
            "attributes": dict(span.attributes or {}),
        }
        for span in spans
    ]


def steady(turns: int, *, system: int = 3000, step: int = 400) -> list[Call]:
    """A session whose prompt grows by ``step`` tokens a call, each read from the cache."""
    calls = [Call(read=0, written=system)]
    for _ in range(turns - 1):
        calls.append(Call(read=calls[-1].prompt, written=step))
    return calls


def conversation_calls(spans: Sequence[Span]) -> list[Span]:
    """The conversation's answered model calls (chat spans with a cost, of the loop's own
    turns, not a side request), in the order they started."""
    return sorted(
        (
            s
            for s in spans
            if s["attributes"].get(OPERATION) == "chat"
            and COST in s["attributes"]
            and s["attributes"].get(PURPOSE) == "turn"
        ),
        key=lambda s: s["start_time"],
    )


def reference_spikes(spans: Sequence[Span], factor: float = 2.0) -> Spikes:
    """The exercise's rules: the conversation's model calls in the order they started; each
    whose cost is over ``factor`` times the one before, with why."""
    calls = conversation_calls(spans)
    found: Spikes = []
    for before, call in pairwise(calls):
        if call["attributes"][COST] <= factor * before["attributes"][COST]:
            continue
        read = call["attributes"][READ]
        if read == 0 and call["start_time"] - before["end_time"] > CACHE_LIFETIME:
            found.append((call["span_id"], "cache expired"))
        elif read < before["attributes"][INPUT]:
            found.append((call["span_id"], "prefix changed"))
        else:
            found.append((call["span_id"], "new input"))
    return found


def chat_ids(spans: Sequence[Span]) -> list[str]:
    """The span ids of the conversation's answered model calls, in the order they started."""
    return [s["span_id"] for s in conversation_calls(spans)]


def _nth(spans: list[Span], n: int, reason: str) -> Spikes:
    return [(chat_ids(spans)[n], reason)]


def spike_cases() -> list[SpikeCase]:
    """(what, spans, factor or None for the default, the spikes with their reasons)."""
    base = steady(6)
    cases: list[SpikeCase] = []

    def add(
        what: str,
        calls: list[Call],
        factor: float | None,
        spikes: list[tuple[int, str]],
        shuffle: int | None = None,
    ) -> None:
        spans = trace(calls, shuffle=shuffle)
        ids = chat_ids(spans)
        cases.append((what, spans, factor, [(ids[n], reason) for n, reason in spikes]))

    expired = [*base[:3], Call(read=0, written=base[2].prompt + 400, after=399.0), *steady(6)[4:]]
    add(
        "a pause of 400 s: the cache expired and the call wrote everything again",
        expired,
        None,
        [(3, "cache expired")],
    )
    add("a steady session: every call reads the one before from the cache", base, None, [])
    changed = [*base[:3], Call(read=3000 - 1200, written=base[2].prompt - 1800 + 400)]
    add(
        "the tool list changed: the call read only the part before the change",
        changed,
        None,
        [(3, "prefix changed")],
    )
    from_zero = [*base[:3], Call(read=0, written=base[2].prompt + 400, after=29.0)]
    add(
        "read nothing, 30 s after the previous call: the very start changed, not the clock",
        from_zero,
        None,
        [(3, "prefix changed")],
    )
    # 299 s after the tool call, which took 1 s: 300 s after the previous model call ended
    edge = [*base[:3], Call(read=0, written=base[2].prompt + 400, after=299.0)]
    add(
        "read nothing exactly 300 s later: not past the cache's lifetime",
        edge,
        None,
        [(3, "prefix changed")],
    )
    past = [*base[:3], Call(read=0, written=base[2].prompt + 400, after=299.5)]
    add(
        "read nothing 300.5 s later: half a second past the cache's lifetime",
        past,
        None,
        [(3, "cache expired")],
    )
    big = [*base[:3], Call(read=base[2].prompt, written=30_000)]
    add(
        "a tool result of 30,000 tokens: everything before it read, the new part written",
        big,
        None,
        [(3, "new input")],
    )
    compacted = [
        *steady(8, step=500),
        Call(read=6500, written=0, output=2000, purpose="compaction"),
        Call(read=3000, written=5000, after=1.0),
    ]
    add(
        "after a compaction (its summary is a side request): only the system prompt read",
        compacted,
        None,
        [(8, "prefix changed")],
    )
    retried = [*base[:3], Call(read=base[2].prompt, written=400, failed_first=True)]
    add(
        "a call that failed once (529) before it answered: the failed attempt has no cost",
        retried,
        None,
        [],
    )
    add(
        "spans in the order an exporter sent them, not the order they started",
        expired,
        None,
        [(3, "cache expired")],
        shuffle=7,
    )
    both = [
        *base[:3],
        Call(read=0, written=base[2].prompt + 400, after=599.0),
        Call(read=base[2].prompt + 400, written=400),
        Call(read=900, written=base[2].prompt),
    ]
    add(
        "two spikes: an expired cache, then a changed prefix",
        both,
        None,
        [(3, "cache expired"), (5, "prefix changed")],
    )
    add(
        "a factor of 3.5: the changed prefix (3.4 times) is not a spike at that factor",
        both,
        3.5,
        [(3, "cache expired")],
    )
    double = [Call(read=0, written=1000, output=0), Call(read=0, written=2000, output=0)]
    add("a cost exactly twice the one before: not over the factor", double, None, [])
    after_spike = [
        *base[:3],
        Call(read=base[2].prompt, written=30_000),
        Call(read=base[2].prompt + 30_000, written=2000),
    ]
    add(
        "after a spike, the next call is compared with the spike, not with the calls before it",
        after_spike,
        None,
        [(3, "new input")],
    )
    one = [Call(read=0, written=50_000)]
    add("one call: nothing before it to compare", one, None, [])
    return cases


def generated_traces(count: int = 60, seed: int = 15) -> list[tuple[list[Span], float | None]]:
    """Random sessions: steady growth, pauses short and long, changed prefixes, big results,
    compactions, retries, at random factors, shuffled or in the order they ended."""
    rng = random.Random(seed)
    out: list[tuple[list[Span], float | None]] = []
    for _ in range(count):
        calls = [Call(read=0, written=rng.choice((1500, 3000, 9000)))]
        for _ in range(rng.randint(1, 12)):
            prompt = calls[-1].prompt if calls[-1].purpose == "turn" else calls[-2].prompt
            kind = rng.choice(
                ("grow", "grow", "pause", "pause", "change", "change", "big", "compact", "retry")
            )
            grow = rng.randint(20, 3000)
            if kind == "pause":
                gap = rng.choice((100.0, 299.0, 300.0, 301.0, 900.0, 3600.0))
                read = 0 if gap > 300 else prompt
                calls.append(Call(read=read, written=prompt - read + grow, after=gap))
            elif kind == "change":
                read = rng.randint(0, prompt)
                calls.append(
                    Call(read=read, written=prompt - read + grow, after=rng.uniform(1, 60))
                )
            elif kind == "big":
                calls.append(Call(read=prompt, written=rng.randint(5000, 60_000)))
            elif kind == "compact" and calls[-1].purpose == "turn":
                calls.append(
                    Call(
                        read=prompt, written=0, output=rng.randint(500, 3000), purpose="compaction"
                    )
                )
                kept = rng.randint(0, min(prompt, 3000))
                calls.append(Call(read=kept, written=rng.randint(500, 4000), after=1.0))
            else:
                calls.append(
                    Call(
                        read=prompt,
                        written=grow,
                        failed_first=kind == "retry",
                        output=rng.randint(1, 4000),
                    )
                )
        factor = rng.choice((None, None, 1.5, 2.0, 3.0, 10.0))
        out.append((trace(calls, shuffle=rng.choice((None, rng.randint(0, 999)))), factor))
    return out


__all__ = [
    "ATTEMPT",
    "CACHE_LIFETIME",
    "COST",
    "INPUT",
    "OPERATION",
    "OUTPUT",
    "PURPOSE",
    "READ",
    "SECOND",
    "WRITTEN",
    "Call",
    "Span",
    "SpikeCase",
    "Spikes",
    "chat_ids",
    "cost",
    "generated_traces",
    "reference_spikes",
    "span_dicts",
    "spike_cases",
    "steady",
    "trace",
]
