"""Chapter 11's session, traced: the spans chapter 15 draws and sends to a viewer.

Not imported by ``harness.notebook``: chapter 15 imports it by its own name.

:func:`traced_capstone` plays chapter 11's capstone session again (the billing project, a
subagent's search, two reads, a fork's review, a write that waits for a person's approval and
is resumed in a second process, two overloads and a rate limit, six more reads, a
compaction) with every run traced. The model is the scripted one behind
:class:`~harness.model.latency.TimedModel`, on a :class:`~harness.clock.FakeClock`: each reply
takes as long as a real one would, and the trace comes out the same on every run.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from harness import approvals
from harness.approvals import ApprovalGate, ApprovalStore
from harness.cli.assemble import Harness, Options, assemble
from harness.clock import FAKE_EPOCH, FakeClock
from harness.compaction.summary import compact, is_compaction_request
from harness.events import AwaitingApproval, Event
from harness.model import ScriptedModel, ToolCall, faults, reply, said, tool_call
from harness.model.latency import TimedModel
from harness.model.scripted_memory import is_extraction_request, scripted_extraction
from harness.model.scripted_summary import scripted_summary
from harness.notebook.sessions import make_project
from harness.resume import Sessions
from harness.tracing import Tracing, in_memory
from harness.transcript import seeded_ids

# Chapter 11's session, word for word.
PROMPT = "Find where tax is applied, check its rounding, and write NOTES.md."
MORE = "Now check the other six modules the same way."
SEARCH = "Find where the tax rate is applied to an amount: name the file and the function."
REVIEW = "Review app/tax.py for rounding bugs; answer in one line."
NOTES = "# Tax\n\nRATE_4 in app/tax.py; every tax_step_N rounds to cents.\n"
WINDOW = 46_000
"""Chapter 11's small context window, so that compaction comes within a short task."""


def _reads(*names: str) -> list[ToolCall]:
    return [tool_call("read_file", path=f"app/{name}.py") for name in names]


def capstone_model(clock: FakeClock) -> ScriptedModel:
    """Chapter 11's model: the main script, the children's scripts, summaries and memory."""
    main = [
        reply(
            "A subagent can search.",
            tool_calls=[tool_call("subagent", description="find the tax", prompt=SEARCH)],
        ),
        reply("Reading the two modules it named.", tool_calls=_reads("tax", "billing")),
        reply(
            "A fork can review the rounding.",
            tool_calls=[tool_call("fork", description="review rounding", prompt=REVIEW)],
        ),
        reply(
            "Writing the notes.",
            tool_calls=[tool_call("write_file", path="NOTES.md", content=NOTES)],
        ),
        reply("Done: NOTES.md says where tax is applied; every step rounds to cents."),
        reply(
            "Reading four more.", tool_calls=_reads("invoices", "customers", "reports", "currency")
        ),
        reply("And the last two.", tool_calls=_reads("exports", "auth")),
        reply("All eight modules round the same way: each step quantizes to cents."),
    ]
    model = ScriptedModel(main, clock=clock, context_window=WINDOW)
    model.script_when(
        said(SEARCH),
        [
            reply(tool_calls=[tool_call("grep", pattern="RATE_4")]),
            reply("RATE_4 = Decimal('0.5') in app/tax.py; every tax_step_N applies it."),
        ],
    )
    model.script_when(
        said(REVIEW), [reply("app/tax.py: no rounding bugs; each step rounds to cents.")]
    )
    model.answer_when(is_compaction_request, scripted_summary)
    model.answer_when(is_extraction_request, scripted_extraction)
    return model


@dataclass(frozen=True)
class TracedSession:
    """The finished spans of a traced session, and what the session's meters say it cost."""

    spans: tuple[ReadableSpan, ...]
    cost: float
    """USD, from the agents' own cost meters (the spans' costs add up to it)."""
    provider: TracerProvider


def traced_capstone(
    *, provider: TracerProvider | None = None, seed: int = 11, start: float = FAKE_EPOCH
) -> TracedSession:
    """Run chapter 11's session with every run traced; return its finished spans.

    ``provider`` defaults to an in-memory one with ids from ``seed``; give an exporting one
    (:func:`~harness.tracing.exporting_provider`) to send the same session to a viewer (the
    returned ``spans`` are then empty: they went to the viewer). ``start`` is when the fake
    clock starts: a viewer lists recent traces first (Phoenix: the last 7 days), so a
    session sent to one should start now (``time.time()``).
    """
    memory = None
    if provider is None:
        provider, memory = in_memory(seed)
    with tempfile.TemporaryDirectory() as scratch:
        root, home = Path(scratch) / "shop", Path(scratch) / "home"
        root.mkdir()
        home.mkdir()
        make_project(root)
        clock = FakeClock(start)
        sessions = Sessions(root=root / ".harness", cwd=root, clock=clock, ids=seeded_ids(seed))
        options = Options(workspace=root, home=home, context_window=WINDOW)
        scripted = capstone_model(clock)
        model = TimedModel(scripted, clock)
        store = ApprovalStore(root / "approvals.db", clock=clock)
        ids = (f"apr_{k:04d}" for k in itertools.count(1))

        def open_session(session: str | None = None) -> tuple[Harness, Tracing]:
            harness = assemble(
                options, clock=clock, sessions=sessions, session=session, model=model, fsync=False
            )
            ApprovalGate(store, ids=lambda: next(ids)).attach(harness.agent)
            tracing = Tracing(provider, capture_content=False, session_id=harness.session_id)
            return harness, tracing.attach(harness.agent)

        first, tracing = open_session()
        scripted.schedule(faults.overloaded(), faults.overloaded())
        events = list(tracing.run(first.agent, PROMPT))
        waiting = events[-1]
        assert isinstance(waiting, AwaitingApproval), waiting
        store.decide(waiting.approval_id, "approve")
        clock.advance(90)  # the person reads the request and approves it

        second, tracing = open_session(first.session_id)  # a new process, as in chapter 11

        def resumed() -> Iterator[Event]:
            applied = approvals.resume(second.agent, second.sessions, store, waiting.approval_id)
            yield from applied.events
            scripted.schedule(faults.rate_limited(retry_after=20))
            yield from approvals.continue_run(second.agent, applied)

        list(tracing.trace(second.agent, resumed()))
        list(tracing.run(second.agent, MORE))

        def compacted() -> Iterator[Event]:
            compact(second.agent, pinned=second.auto.pinned, instructions="Keep file names.")
            yield from ()

        list(tracing.trace(second.agent, compacted()))
        cost = first.agent.meter.total.total + second.agent.meter.total.total
    spans = tuple(memory.get_finished_spans()) if memory is not None else ()
    return TracedSession(spans=spans, cost=cost, provider=provider)


__all__ = ["TracedSession", "capstone_model", "traced_capstone"]
