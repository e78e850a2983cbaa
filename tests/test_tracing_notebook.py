"""Chapter 15's traced session, its waterfall, and the span a cost spike is in."""

from __future__ import annotations

import io

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from harness.notebook.tracing import TracedSession, traced_capstone
from harness.notebook.waterfall import colour, cost_spike, ordered, waterfall
from harness.tracing import names as n


@pytest.fixture(scope="module")
def capstone() -> TracedSession:
    return traced_capstone()


def chats(spans: tuple[ReadableSpan, ...]) -> list[ReadableSpan]:
    return [s for s in spans if (s.attributes or {}).get(n.OPERATION) == n.CHAT]


def test_the_traced_capstone_costs_what_its_meters_say(capstone: TracedSession) -> None:
    total = sum(float((s.attributes or {}).get(n.COST_USD, 0.0)) for s in chats(capstone.spans))
    assert total == pytest.approx(capstone.cost)


def test_the_traced_capstone_shows_its_retries_side_requests_and_compactions(
    capstone: TracedSession,
) -> None:
    purposes = {str((s.attributes or {}).get(n.PURPOSE)) for s in chats(capstone.spans)}
    assert {"turn", "subagent", "fork", "memory", "compaction"} <= purposes
    errors = [(s.attributes or {}).get(n.ERROR_TYPE) for s in chats(capstone.spans)]
    assert errors.count("OverloadedError") == 2 and errors.count("RateLimitError") == 1
    events = {e.name for s in capstone.spans for e in s.events}
    assert {"Retrying", "Compacted"} <= events


def test_a_subagents_calls_nest_under_its_tool_span(capstone: TracedSession) -> None:
    depth = {s.context.span_id: d for d, s in ordered(capstone.spans)}
    spans = {s.context.span_id: s for s in capstone.spans}
    sub = [s for s in chats(capstone.spans) if (s.attributes or {}).get(n.PURPOSE) == "subagent"]
    assert sub and all(s.parent is not None for s in sub)
    for s in sub:
        assert s.parent is not None
        assert spans[s.parent.span_id].name == "execute_tool subagent"
        assert depth[s.context.span_id] == 3


def test_the_traced_capstone_is_the_same_on_every_run(capstone: TracedSession) -> None:
    again = traced_capstone()
    rows = [(s.name, s.start_time, s.end_time, dict(s.attributes or {})) for s in again.spans]
    assert rows == [
        (s.name, s.start_time, s.end_time, dict(s.attributes or {})) for s in capstone.spans
    ]


def test_the_waterfall_is_the_same_picture_every_time(capstone: TracedSession) -> None:
    def png() -> bytes:
        out = io.BytesIO()
        waterfall(capstone.spans, title="t").savefig(out, format="png", metadata={"Software": None})
        return out.getvalue()

    assert png() == png()


def test_failed_attempts_and_compactions_have_their_own_colours(capstone: TracedSession) -> None:
    by_kind = {
        str((s.attributes or {}).get(n.ERROR_TYPE) or (s.attributes or {}).get(n.PURPOSE)): colour(
            s
        )
        for s in chats(capstone.spans)
    }
    assert len({by_kind["OverloadedError"], by_kind["compaction"], by_kind["turn"]}) == 3


def test_the_cost_spike_is_the_turn_whose_cached_prefix_a_microcompact_changed(
    capstone: TracedSession,
) -> None:
    spike = cost_spike(capstone.spans)
    assert spike is not None
    assert (spike.span.attributes or {}).get(n.PURPOSE) == "turn"
    assert spike.cost > spike.previous_cost
    assert "stopped matching" in spike.why and "Compacted (microcompact)" in spike.why


def test_no_spike_when_no_call_cost_more_than_the_one_before() -> None:
    assert cost_spike(()) is None


def test_the_traced_session_is_chapter_11s_own_word_for_word() -> None:
    # harness.notebook.tracing replays chapter 11's session, whose script lives in that
    # chapter's cells: the two must not drift apart (chapter 11's window moved once already).
    import ast
    import json
    from pathlib import Path

    import harness.notebook.tracing as traced

    notebook = Path(__file__).resolve().parent.parent / "chapters/11_capstone.ipynb"
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    source = next("".join(c["source"]) for c in cells if "MAIN = [" in "".join(c["source"]))
    constants = {
        target.id: ast.literal_eval(node.value)
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
        and target.id in {"PROMPT", "MORE", "SEARCH", "REVIEW", "NOTES", "WINDOW"}
    }
    assert len(constants) == 6
    for name, value in constants.items():
        assert getattr(traced, name) == value, name
