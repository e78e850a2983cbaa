"""Compaction on windows other than 200K: budgets that leave no room are refused, tier 2 keeps
a share of the window, and auto-compact gets under the threshold whenever a tier can.

With Claude Code's fixed 10K-40K, tier 2 on a 50K window kept more than fits under the
threshold; now the range scales with the window below 200K (``keep_range``), and when tier 2
still does not fit, the summary (tier 3) is tried before the breaker may trip.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness import tokens
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.auto import AutoCompact
from harness.compaction.events import Compacted
from harness.compaction.session_memory import (
    MAX_KEEP_TOKENS,
    MIN_KEEP_TOKENS,
    SessionMemoryCompaction,
    keep_range,
)
from harness.compaction.summary import is_compaction_request
from harness.loop import AgentConfig
from harness.memory import Fact, SessionMemory, render, write_atomic
from harness.model import ScriptedModel
from harness.model.scripted_summary import scripted_summary
from harness.tokens import AUTO_COMPACT_BUFFER, MAX_OUTPUT_RESERVE, ContextBudget

FACTS = [
    Fact(section="Task", text="Make every module round amounts to cents.", id="f1", source="user"),
    Fact(section="Files and functions", text="app/billing.py: read, edited", id="f2"),
]

# -- a budget must leave room ----------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    window=st.integers(1, 400_000),
    max_output=st.integers(1, 64_000),
    buffer=st.integers(0, 40_000),
)
def test_a_budget_whose_window_is_within_its_reserves_is_refused_and_says_what_to_do(
    window: int, max_output: int, buffer: int
) -> None:
    reserves = min(max_output, MAX_OUTPUT_RESERVE) + buffer
    if window > reserves:
        budget = ContextBudget(window=window, max_output=max_output, buffer=buffer)
        assert budget.auto_compact_threshold == window - reserves > 0
        return
    with pytest.raises(ValueError) as refused:
        ContextBudget(window=window, max_output=max_output, buffer=buffer)
    message = str(refused.value)
    assert f"{window:,} tokens" in message and f"{reserves:,}" in message
    assert "larger than" in message and "smaller max_output or buffer" in message


def test_the_issues_budget_of_30k_with_the_defaults_is_refused() -> None:
    with pytest.raises(ValueError, match=r"30,000 tokens .* take 33,000"):
        ContextBudget(window=30_000)


@pytest.mark.parametrize(
    ("window", "max_output"),
    # The windows the course and the harness build budgets for.
    [(200_000, 32_000), (60_000, 8_000), (40_000, 4_000), (45_000, 32_000), (24_000, 2_000)],
)
def test_the_windows_the_course_uses_still_make_budgets(window: int, max_output: int) -> None:
    assert ContextBudget(window=window, max_output=max_output).auto_compact_threshold > 0


# -- tier 2's range scales with the window -----------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(window=st.integers(1, 2_000_000))
@example(window=113_010)  # 5 % is 5,650.5: whole-token arithmetic, no rounding at the half
def test_tier_2_keeps_claude_codes_range_from_200k_and_the_same_shares_below(window: int) -> None:
    least, most = keep_range(window)
    if window >= 200_000:
        assert (least, most) == (MIN_KEEP_TOKENS, MAX_KEEP_TOKENS)
    else:  # 5 % and 20 % of the window, in whole tokens (rounded down)
        assert least == max(1, window * 5 // 100) and most == max(1, window * 20 // 100)
    assert 1 <= least <= most
    assert keep_range(window + 1_000) >= (least, most)  # never less for a larger window


def test_a_50k_window_keeps_2_500_to_10_000_tokens() -> None:
    assert keep_range(50_000) == (2_500, 10_000)


def test_a_window_of_no_tokens_has_no_keep_range() -> None:
    with pytest.raises(ValueError, match="at least one token"):
        keep_range(0)


# -- auto-compact on generated windows ---------------------------------------------------------


def conversation(rounds: int, size: int) -> list[m.MessageDict]:
    """A prompt, then ``rounds`` of a call and its result of about ``size`` tokens; the tool
    is one microcompact never clears, so tier 1 cannot help."""
    out: list[m.MessageDict] = [m.user("Check the rounding in every module.")]
    for n in range(rounds):
        call = m.tool_use(f"toolu_{n:04d}", "deploy", {"target": f"m{n}"})
        out.append(m.assistant([m.text(f"Deploying m{n}."), call]))
        out.append(m.user([m.tool_result(call["id"], f"[{n}] " + "abcd" * max(0, size - 3))]))
    out += [m.assistant("All deployed."), m.user("Go on.")]
    return out


def agent_for(tmp_path: Path, window: int, messages: list[m.MessageDict]) -> Agent:
    model = ScriptedModel(context_window=window)  # no script: only a summary may be asked for
    model.answer_when(is_compaction_request, scripted_summary)
    agent = Agent(
        model, workspace=tmp_path, clock=FakeClock(), config=AgentConfig(context_window=window)
    )
    agent.messages = messages
    return agent


windows = st.one_of(
    st.integers(20_000, 120_000), st.integers(120_000, 400_000), st.integers(400_000, 1_000_000)
)


@settings(max_examples=30, deadline=None)
@given(
    window=windows,
    max_output=st.sampled_from([2_000, 4_000, 8_000, 32_000]),
    rounds=st.integers(6, 40),
    over=st.floats(1.0, 1.3),
    read=st.floats(0.5, 1.0),
)
def test_auto_compact_gets_under_the_threshold_whenever_the_summary_could(
    tmp_path_factory: pytest.TempPathFactory,
    window: int,
    max_output: int,
    rounds: int,
    over: float,
    read: float,
) -> None:
    if window <= min(max_output, MAX_OUTPUT_RESERVE) + AUTO_COMPACT_BUFFER:
        max_output = 2_000  # a budget the window can hold (the refusal is tested above)
    budget = ContextBudget(window=window, max_output=max_output)
    size = max(1, int(budget.auto_compact_threshold * over / rounds))
    messages = conversation(rounds, size)
    root = tmp_path_factory.mktemp("memory")
    memory = SessionMemory(root / "MEMORY.md")
    write_atomic(memory.path, render(FACTS))
    memory.covered = messages[min(len(messages) - 3, max(0, int(len(messages) * read)))]

    # Tier 3 alone, on a copy: can the summary get the context under the threshold?
    alone = AutoCompact(budget)
    (root / "alone").mkdir()
    summary_only = agent_for(root / "alone", window, copy.deepcopy(messages))
    by_summary = alone.before_request(summary_only)
    summary_can = by_summary is not None and not alone.breaker.tripped

    auto = AutoCompact(budget, session_memory=SessionMemoryCompaction(memory))
    agent = agent_for(root, window, messages)
    assert auto.tracker.size(agent) >= auto.threshold  # over it: some tier must act
    rewrite = auto.before_request(agent)

    if summary_can:
        assert rewrite is not None and not auto.breaker.tripped
    if rewrite is not None and not auto.breaker.tripped:
        request = agent.request()
        after = tokens.estimate_request(
            rewrite.messages, system=request.system, tools=request.tools
        )
        assert after < auto.threshold
        if isinstance(rewrite.event, Compacted) and rewrite.event.tier == "session_memory":
            assert after < auto.threshold * (1 - auto.margin)
    if auto.breaker.tripped:
        assert not summary_can  # it trips only when no tier could get under


def test_on_a_50k_window_tier_2_with_claude_codes_fixed_range_gives_way_to_the_summary(
    tmp_path: Path,
) -> None:
    # 5 messages kept (two 8K results) do not fit under this window's 17,000 threshold.
    budget = ContextBudget(window=50_000, max_output=20_000)
    messages = conversation(3, 8_000)
    memory = SessionMemory(tmp_path / "MEMORY.md")
    write_atomic(memory.path, render(FACTS))
    memory.covered = messages[-3]
    fixed = SessionMemoryCompaction(memory, min_tokens=MIN_KEEP_TOKENS, max_tokens=MAX_KEEP_TOKENS)
    auto = AutoCompact(budget, session_memory=fixed)
    agent = agent_for(tmp_path, 50_000, messages)

    rewrite = auto.before_request(agent)

    assert rewrite is not None and isinstance(rewrite.event, Compacted)
    assert rewrite.event.tier == "summary" and not auto.breaker.tripped


def test_on_a_50k_window_the_scaled_tier_2_fits_with_no_model_call(tmp_path: Path) -> None:
    budget = ContextBudget(window=50_000, max_output=8_000)
    messages = conversation(30, 1_000)
    memory = SessionMemory(tmp_path / "MEMORY.md")
    write_atomic(memory.path, render(FACTS))
    memory.covered = messages[-3]
    auto = AutoCompact(budget, session_memory=SessionMemoryCompaction(memory))
    agent = agent_for(tmp_path, 50_000, messages)

    rewrite = auto.before_request(agent)

    assert rewrite is not None and isinstance(rewrite.event, Compacted)
    assert rewrite.event.tier == "session_memory"
    assert rewrite.event.tokens_after < auto.threshold * (1 - auto.margin)
    model = agent.model
    assert isinstance(model, ScriptedModel) and model.requests == []
