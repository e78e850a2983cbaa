"""Properties of subagents over generated inputs: whatever the model sends to the subagent
tool, each call gets one result; ``outcome`` reads any run; ``cap_summary`` keeps its cap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import tokens
from harness.events import (
    Event,
    MaxTurnsReached,
    PromptRefused,
    ToolFinished,
    ToolStarted,
    TurnEnded,
)
from harness.model import reply
from harness.subagents import MIN_SUMMARY_TOKENS, BudgetSpent, cap_summary, outcome
from tests.subagent_session import attach, make_parent, run_calls, runner_of

SOME = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
MANY = settings(max_examples=100, deadline=None)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
odd_text = st.one_of(
    st.text(max_size=30),
    st.text(max_size=10).map(lambda s: s + "\ud800"),  # a lone surrogate
    st.sampled_from(["", " ", "\n", "a00000000", "a12345678", "../x", "agent-a1.jsonl"]),
    st.integers(121, 200).map(lambda n: "d" * n),  # a description over its 120 characters
)
subagent_inputs = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"description": odd_text, "prompt": odd_text},
        optional={"resume": st.none() | odd_text, "extra": json_values},
    ),
    st.fixed_dictionaries({"description": st.just("look"), "prompt": st.just("Look around.")}),
)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@SOME
@given(
    inputs=st.lists(subagent_inputs, min_size=1, max_size=3),
    transcript=st.booleans(),
)
def test_whatever_the_subagent_tool_is_sent_each_call_gets_one_result(
    tmp_path_factory: pytest.TempPathFactory, inputs: list[Any], transcript: bool
) -> None:
    parent = make_parent(tmp_path_factory.mktemp("p"), transcript=transcript)
    parent.model.answer_when(lambda request: True, lambda request: reply("Report."))
    sub = attach(parent)
    calls = [
        {"type": "tool_use", "id": f"toolu_p{i}", "name": "subagent", "input": value}
        for i, value in enumerate(inputs)
    ]

    _, results = run_calls(runner_of(parent.agent), calls)

    assert [r["tool_use_id"] for r in results] == [c["id"] for c in calls]
    for result in results:
        content = result["content"]
        assert isinstance(content, str) and content.strip()
        content.encode("utf-8")  # valid Unicode: the SDK can send it
        if not result.get("is_error"):
            capsule = sub.capsules[str(result["tool_use_id"])]
            assert content == capsule.render()
            assert capsule.status in ("complete", "partial", "failed")
    assert set(sub.capsules) <= {c["id"] for c in calls}


stop_reasons = st.sampled_from(
    [
        "end_turn",
        "tool_use",
        "stop_sequence",
        "max_tokens",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
        None,
    ]
) | st.text(max_size=12)
events = st.one_of(
    st.builds(TurnEnded, st.integers(0, 50), stop_reasons),
    st.builds(MaxTurnsReached, st.integers(1, 50)),
    st.builds(BudgetSpent, st.integers(0, 10**6), st.integers(1, 10**6), st.integers(0, 10**6)),
    st.builds(ToolStarted, st.text(max_size=8), st.text(max_size=8), st.just({})),
    st.builds(ToolFinished, st.text(max_size=8), st.text(max_size=8), st.text(), st.booleans()),
    st.builds(PromptRefused, st.text(max_size=20)),
)


@MANY
@given(st.lists(events, max_size=6))
def test_outcome_reads_any_run_as_one_of_three_statuses_from_its_last_event(
    seen: list[Event],
) -> None:
    status, reason = outcome(seen)

    assert status in ("complete", "partial", "failed")
    assert isinstance(reason, str) and reason
    budget_cut = (
        isinstance(seen[-1] if seen else None, TurnEnded)
        and seen[-1].stop_reason == "max_tokens"
        and any(isinstance(e, BudgetSpent) for e in seen)
    )
    if budget_cut:  # a reply the token budget cut: the budget is named
        assert status == "partial" and "token budget" in reason
    else:
        assert (status, reason) == outcome(seen[-1:])
    last = seen[-1] if seen else None
    if status == "complete":
        assert isinstance(last, TurnEnded)
    if isinstance(last, (MaxTurnsReached, BudgetSpent)):
        assert status == "partial"
    if not isinstance(last, (TurnEnded, MaxTurnsReached, BudgetSpent)):
        assert status == "failed"


reports = st.one_of(
    st.text(max_size=400),
    st.text(alphabet="abc déf 字 \n", min_size=100, max_size=3000),
    st.integers(1, 4000).map(lambda n: "word " * n),
)


def _note_of(result: str) -> str:
    at = result.rfind("\n[… report cut:")
    assert at >= 0, "a cut report ends with its note"
    return result[at:]


@MANY
@given(text=reports, limit=st.integers(1, 2000), kept_in=st.none() | st.just("agent-a1.jsonl"))
def test_cap_summary_keeps_the_head_within_the_cap_and_says_where_the_rest_is(
    text: str, limit: int, kept_in: str | None
) -> None:
    result, cut = cap_summary(text, limit, kept_in)

    size = tokens.estimate_text(text)
    assert cut == (size > limit)
    assert tokens.estimate_text(result) <= limit
    if not cut:
        assert result == text
        return
    if "\n[… report cut:" not in result:  # a cap too small for the note: the head alone
        assert text.startswith(result)
        return
    note = _note_of(result)
    head = result[: -len(note)]
    assert text.startswith(head)
    assert f"{size:,} tokens" in note
    assert (f"in {kept_in}" if kept_in else "The rest was not kept.") in note
    assert tokens.estimate_text(result) <= limit


@pytest.mark.parametrize("limit", [1, 10])
def test_cap_summary_keeps_a_tiny_cap(limit: int) -> None:
    result, cut = cap_summary("word " * 500, limit, "agent-a1.jsonl")

    assert cut
    assert tokens.estimate_text(result) <= limit


def test_a_summary_cap_below_the_minimum_is_refused_and_the_minimum_holds(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least"):
        attach(make_parent(tmp_path), summary_tokens=MIN_SUMMARY_TOKENS - 1)
    parent = make_parent(tmp_path)
    parent.model.answer_when(lambda request: True, lambda request: reply("word " * 500))

    capsule = attach(parent, summary_tokens=MIN_SUMMARY_TOKENS).run("Report at length")

    assert capsule.cut
    assert tokens.estimate_text(capsule.summary) <= MIN_SUMMARY_TOKENS
