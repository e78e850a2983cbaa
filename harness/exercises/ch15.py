"""Chapter 15's exercises: a background shell's log read a piece at a time, and a trace's cost
spikes explained.

Exercise 1 checks the learner's ``read_new(log, offset, limit, finished=False)``: the text a
background command wrote since the last read, and the offset of the next one, never splitting
a UTF-8 character (the bytes of one the command has not finished writing wait for the next
read, unless the command has finished), invalid bytes replaced, and at most ``limit`` new
characters, the newest, after a note of how many were left out; on hand-made logs, then on
generated sessions of reads against :func:`~harness.exercises.ch15_logs.reference_read`.
Exercise 2 checks ``cost_spikes(spans, factor=2.0)``: from a trace's spans, the conversation's
model calls whose cost is over ``factor`` times the call before, and why (the cache expired,
the prefix changed, or new input), on hand-made sessions and generated ones against
:func:`~harness.exercises.ch15_spans.reference_spikes`. Each check refuses a solution that
calls the package's own reader or spike finder.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any

from harness.exercises import NotYet, exercise, forbid, hints, refusing
from harness.exercises import ch15_logs as logs_module
from harness.exercises import ch15_spans as spans_module
from harness.exercises.ch15_logs import Read, generated_reads, read_cases, reference_read
from harness.exercises.ch15_spans import (
    CACHE_LIFETIME,
    COST,
    INPUT,
    OPERATION,
    PURPOSE,
    READ,
    Span,
    Spikes,
    conversation_calls,
    generated_traces,
    reference_spikes,
    spike_cases,
)


def _shown(value: object, limit: int = 160) -> str:
    return repr(value) if len(repr(value)) <= limit else repr(value)[: limit - 3] + "..."


def _package_readers() -> tuple[Callable[..., Any], ...]:
    """The package's own readers of a log: the exercise's reference, and the background
    shells' capping (their :class:`~harness.background.logs.LogReader` is refused apart)."""
    from harness.background import logs

    return (logs_module.reference_read, logs.capped)


def _refusing_readers(read_new: Callable[..., Any], why: str) -> ExitStack:
    """While the check runs, the package's readers refuse to read: the functions wherever
    they are bound, and ``LogReader.read``, a method no module binds."""
    from harness.background.logs import LogReader

    refusals = refusing(read_new, _package_readers(), why)
    refusals.enter_context(forbid(LogReader, "read", why))
    return refusals


def _package_spike_finders() -> tuple[Callable[..., Any], ...]:
    """The package's own spike finders: the exercise's reference, and the one chapter 15's
    waterfall uses."""
    from harness.notebook import waterfall

    return (spans_module.reference_spikes, waterfall.cost_spike)


# -- exercise 1: read a background shell's new output --------------------------------------------

_READ_HINT = (
    "the log is bytes, and it may end inside a character the command is still writing: "
    "decode only the bytes that make whole characters, and let the offset stop before the "
    "rest, unless the command has finished. The limit counts characters of new text, and "
    "keeps the newest."
)
_READ_FIRST = (
    'read_new(b"collected 12 items\\n", 0, 1000), the first read of a test runner\'s log, '
    'should be ("collected 12 items\\n", 19): all of it is new, and the next read starts '
    "at byte 19."
)
_READ_RECIPE = (
    "With import codecs: decoder = codecs.getincrementaldecoder('utf-8')(errors='replace'); "
    "text = decoder.decode(log[offset:], final=finished). The decoder keeps back the bytes of "
    "a character not yet whole: held = len(decoder.getstate()[0]), and the next offset is "
    "len(log) - held. If len(text) > limit: text = f'[{len(text) - limit} characters "
    "omitted]\\n' + text[len(text) - limit:] (not text[-limit:], which is the whole text when "
    "limit is 0). Return (text, len(log) - held)."
)


def _said_read(log: bytes, offset: int, limit: int, finished: bool) -> str:
    more = ", finished=True" if finished else ""
    return f"read_new({_shown(log, 300)}, {offset}, {limit}{more})"


def _call_read(
    read_new: Callable[..., Any], what: str, log: bytes, offset: int, limit: int, finished: bool
) -> Read:
    try:
        got = read_new(log, offset, limit, finished) if finished else read_new(log, offset, limit)
    except (NotImplementedError, NotYet):
        raise
    except Exception as error:
        raise NotYet(
            f"for {what}, {_said_read(log, offset, limit, finished)} raised "
            f"{type(error).__name__}: {error}"
        ) from None
    if not (
        isinstance(got, tuple | list)
        and len(got) == 2
        and isinstance(got[0], str)
        and isinstance(got[1], int)
        and not isinstance(got[1], bool)
    ):
        raise NotYet(f"{what}: return (text, next_offset), a str and an int, not {_shown(got)}.")
    return got[0], got[1]


def _compare_read(
    what: str, log: bytes, offset: int, limit: int, finished: bool, got: Read, want: Read
) -> None:
    if got != want:
        raise NotYet(
            f"{what}: {_said_read(log, offset, limit, finished)} should be {want!r}; yours is "
            f"{got!r}."
        )


@exercise("read_new", _READ_HINT, first=_READ_FIRST, number=1)
def check_read_new(read_new: Callable[..., Any]) -> str:
    why = "read_new calls the package's own reader; decode the new bytes yourself."
    cases = read_cases()
    sessions = generated_reads()
    planned = []  # each read of each session with its answer, before the package is refused
    for session in sessions:
        offset = 0
        for number, (log, limit, finished) in enumerate(session, start=1):
            want = reference_read(log, offset, limit, finished)
            planned.append(
                (f"read {number} of a generated session", log, offset, limit, finished, want)
            )
            offset = want[1]  # the next read starts where this one stopped
    with _refusing_readers(read_new, why):
        for what, log, offset, limit, finished, want in [*cases, *planned]:
            got = _call_read(read_new, what, log, offset, limit, finished)
            _compare_read(what, log, offset, limit, finished, got, want)
    reads = len(planned)
    return (
        f"{len(cases)} reads and {reads} more in {len(sessions)} generated sessions: only what "
        "is new, no character split however the log was cut, and at most the limit, newest "
        "last."
    )


# -- exercise 2: where a session's cost jumped, and why ------------------------------------------

_SPIKES_HINT = (
    "first pick the spans that are the conversation's answered model calls and put them in "
    "the order they started; then compare each with the one before it. Why a call cost more "
    "is in what it read from the cache, against what the call before it sent, and in how "
    "long the cache sat unused."
)
_SPIKES_FIRST = (
    "cost_spikes(spans), for a session of six model calls whose fourth started 400 s after "
    "the third ended and read nothing from the cache, should be "
    "[(<the fourth call's span_id>, 'cache expired')]."
)
_SPIKES_RECIPE = (
    "With import itertools: calls = [s for s in spans if "
    "s['attributes'].get('gen_ai.operation.name') == 'chat' and "
    "'harness.cost.usd' in s['attributes'] and s['attributes'].get('harness.request.purpose') "
    "== 'turn']; calls.sort(key=lambda s: s['start_time']). Start found = []; for "
    "before, call in itertools.pairwise(calls): a = call['attributes']; skip it unless "
    "a['harness.cost.usd'] > factor * before['attributes']['harness.cost.usd']. Then read = "
    "a['gen_ai.usage.cache_read.input_tokens']; if read == 0 and call['start_time'] - "
    "before['end_time'] > 300 * 10**9, the reason is 'cache expired'; elif read < "
    "before['attributes']['gen_ai.usage.input_tokens'], 'prefix changed'; else 'new input'. "
    "Append (call['span_id'], reason). Return found."
)


def _calls_told(spans: Sequence[Span]) -> str:
    """The conversation's model calls, one a line: what a learner needs to see the case."""
    calls = conversation_calls(spans)
    lines = []
    for number, call in enumerate(calls, start=1):
        a = call["attributes"]
        gap = ""
        if number > 1:
            seconds = (call["start_time"] - calls[number - 2]["end_time"]) / 1e9
            gap = f", {seconds:g} s after the call before ended"
        lines.append(
            f"  {call['span_id']}: input {a[INPUT]:,}, cache read {a[READ]:,}, cost "
            f"{a[COST]:g}{gap}"
        )
    side = sum(1 for s in spans if s["attributes"].get(PURPOSE, "turn") != "turn")
    failed = sum(
        1 for s in spans if s["attributes"].get(OPERATION) == "chat" and COST not in s["attributes"]
    )
    notes = []
    if side:
        notes.append(f"{side} side request(s)")
    if failed:
        notes.append(f"{failed} failed attempt(s)")
    more = f" (also in the trace: {', '.join(notes)})" if notes else ""
    return f"{len(spans)} spans; the conversation's model calls{more}:\n" + "\n".join(lines)


def _call_spikes(
    cost_spikes: Callable[..., Any], what: str, spans: list[Span], factor: float | None
) -> Spikes:
    given = copy.deepcopy(spans)
    try:
        got = cost_spikes(given) if factor is None else cost_spikes(given, factor)
    except (NotImplementedError, NotYet):
        raise
    except Exception as error:
        raise NotYet(f"for {what}, your code raised {type(error).__name__}: {error}") from None
    shape = f"{what}: return a list of (span_id, reason) pairs"
    if not (
        isinstance(got, list)
        and all(
            isinstance(p, tuple | list) and len(p) == 2 and all(isinstance(x, str) for x in p)
            for p in got
        )
    ):
        raise NotYet(f"{shape}, not {_shown(got)}.")
    return [(p[0], p[1]) for p in got]


def _compare_spikes(
    what: str, spans: list[Span], factor: float | None, got: Spikes, want: Spikes
) -> None:
    if got != want:
        at = "" if factor is None else f" with factor={factor:g}"
        raise NotYet(
            f"{what}: cost_spikes(spans{at}) should be {want!r}; yours is {got!r}.\n"
            f"{_calls_told(spans)}"
        )


@exercise("cost_spikes", _SPIKES_HINT, first=_SPIKES_FIRST, number=2)
def check_cost_spikes(cost_spikes: Callable[..., Any]) -> str:
    why = "cost_spikes calls the package's own spike finder; read the spans yourself."
    cases = spike_cases()
    generated = generated_traces()
    wanted = [reference_spikes(s, 2.0 if f is None else f) for s, f in generated]
    with refusing(cost_spikes, _package_spike_finders(), why):
        for what, spans, factor, want in cases:
            got = _call_spikes(cost_spikes, what, spans, factor)
            _compare_spikes(what, spans, factor, got, want)
        for (spans, factor), want in zip(generated, wanted, strict=True):
            what = "a generated trace"
            got = _call_spikes(cost_spikes, what, spans, factor)
            _compare_spikes(what, spans, factor, got, want)
    lifetime = CACHE_LIFETIME // 10**9
    return (
        f"{len(cases)} traces and {len(generated)} generated ones read as a person reads them: "
        f"each jump found and explained: the cache unused past its {lifetime} s, a prefix "
        "that changed, or new input."
    )


hint = hints(__name__, {1: _READ_RECIPE, 2: _SPIKES_RECIPE})

__all__ = [
    "check_cost_spikes",
    "check_read_new",
    "generated_reads",
    "generated_traces",
    "hint",
    "read_cases",
    "reference_read",
    "reference_spikes",
    "spike_cases",
]
