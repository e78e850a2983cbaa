"""Tier 4, auto-compact: when it fires, which tier it uses, and the circuit breaker."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anthropic
import pytest

from harness import messages as m
from harness import tokens
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.auto import MAX_CONSECUTIVE_FAILURES, AutoCompact, CircuitBreaker
from harness.compaction.events import BreakerTripped, Compacted, CompactionFailed
from harness.compaction.microcompact import CLEARED
from harness.compaction.pinned import PinnedFacts
from harness.compaction.summary import SUMMARY_PREAMBLE, is_compaction_request
from harness.events import Event, ModelCalled, TurnEnded
from harness.loop import AgentConfig, BaseAgent, Plugin, Rewrite
from harness.model import Reply, Request, ScriptedModel, Step, faults, reply, tool_call
from harness.model.scripted_summary import scripted_summary
from harness.notebook.sessions import coding_script, make_project
from harness.tokens import ContextBudget
from harness.tools import builtin_tools

# Claude Code's arithmetic on a small window: 30,000 - min(4,000, 20K) - 13,000 = 13,000.
BUDGET = ContextBudget(window=30_000, max_output=4_000)
THRESHOLD = 13_000
FILE_BODY = "".join(f"amount_{i} = round(price_{i} * rate, 2)\n" for i in range(100))

Responder = Callable[[Request], Step]


def test_the_budget_is_the_one_these_tests_assume() -> None:
    assert AutoCompact(BUDGET).threshold == BUDGET.auto_compact_threshold == THRESHOLD
    assert MAX_CONSECUTIVE_FAILURES == 3
    assert AutoCompact().threshold == 167_000  # the default: 200K window, 32K output


# --- helpers ---------------------------------------------------------------------------------


def problems_at_rest(messages: list[m.MessageDict]) -> list[m.Problem]:
    """``validate``, except for the calls of the last reply while its tools are running."""
    return [
        p
        for p in m.validate(messages)
        if not (p.kind == "tool_use_unanswered" and p.index == len(messages) - 1)
    ]


def run_checked(agent: Agent, prompt: str) -> list[Event]:
    events = []
    for event in agent.run(prompt):
        assert problems_at_rest(agent.messages) == [], f"invalid after {event}"
        events.append(event)
    assert m.validate(agent.messages) == []
    return events


def reading_agent(
    tmp_path: Path,
    reads: int,
    plugins: list[Plugin],
    *,
    summariser: Responder = scripted_summary,
    first: Sequence[Step] = (),
    system: str | None = None,
) -> tuple[Agent, ScriptedModel]:
    """An agent whose model reads ``reads`` files, one a turn, after the ``first`` steps."""
    for n in range(reads):
        (tmp_path / f"f{n}.py").write_text(f"# f{n}.py\n{FILE_BODY}")
    clock = FakeClock()
    script: list[Step] = [
        *first,
        *(
            reply(f"Reading f{n}.py.", tool_calls=[tool_call("read_file", path=f"f{n}.py")])
            for n in range(reads)
        ),
    ]
    model = ScriptedModel([*script, reply("Read them all.")], clock=clock)
    model.answer_when(is_compaction_request, summariser)
    agent = Agent(
        model,
        tools=builtin_tools(),
        workspace=tmp_path,
        clock=clock,
        plugins=plugins,
        system=system,
        config=AgentConfig(max_turns=len(script) + 1, max_tokens=4_000),
    )
    return agent, model


def of_type(events: list[Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def compaction_requests(model: ScriptedModel) -> list[Request]:
    return [r for r in model.requests if is_compaction_request(r)]


def sequence(*steps: Step | Responder) -> Responder:
    """Answer successive compaction requests with ``steps`` in turn (a fault, or a function)."""
    queue: Iterator[Step | Responder] = iter(steps)

    def respond(request: Request) -> Step:
        step = next(queue)
        return step(request) if callable(step) else step

    return respond


def overloaded(request: Request) -> Step:
    return faults.overloaded()


# --- when it fires -----------------------------------------------------------------------------


def test_below_the_threshold_nothing_happens(tmp_path: Path) -> None:
    auto = AutoCompact(BUDGET)
    agent, model = reading_agent(tmp_path, 4, [auto])
    events = run_checked(agent, "Read four files.")
    assert of_type(events, Compacted) == []
    assert compaction_requests(model) == []
    assert CLEARED not in str(agent.messages)
    assert max(auto.tracker.size(agent), *(r.input_tokens for r in model.requests)) < THRESHOLD


def test_microcompact_goes_first_and_when_it_is_enough_no_summary_is_made(
    tmp_path: Path,
) -> None:
    auto = AutoCompact(BUDGET)
    agent, model = reading_agent(tmp_path, 14, [auto])

    events = run_checked(agent, "Read fourteen files.")

    compacted = of_type(events, Compacted)
    assert compacted
    assert {(e.tier, e.trigger) for e in compacted} == {("microcompact", "threshold")}
    for event in compacted:
        assert event.tokens_before >= THRESHOLD > event.tokens_after
    assert compaction_requests(model) == []
    assert all(r.input_tokens < 30_000 for r in model.requests)
    assert isinstance(events[-1], TurnEnded)


def test_when_microcompact_is_not_enough_a_summary_is_made(tmp_path: Path) -> None:
    auto = AutoCompact(BUDGET, keep=1_000)  # microcompact keeps everything: it cannot help
    agent, _ = reading_agent(tmp_path, 14, [auto])

    events = run_checked(agent, "Read fourteen files.")

    compacted = of_type(events, Compacted)
    assert [(e.tier, e.trigger) for e in compacted] == [("summary", "threshold")]
    assert compacted[0].tokens_before >= THRESHOLD
    assert compacted[0].tokens_after < THRESHOLD * (1 - auto.margin)
    assert "re-read 5 files" in compacted[0].detail
    assert auto.last_report is not None and auto.last_report.trigger == "auto"
    assert auto.breaker.failures == 0 and not auto.breaker.tripped
    assert isinstance(events[-1], TurnEnded)
    # The conversation went on from the summary.
    assert m.text_of(agent.messages[0]).startswith(SUMMARY_PREAMBLE)


def test_the_summary_request_never_triggers_an_auto_compaction_itself(tmp_path: Path) -> None:
    # The summary request is as big as the conversation, over the threshold; were it to run
    # the plugins' before_request, it would compact itself, forever. agent.call runs only
    # the call_model layers.
    auto = AutoCompact(BUDGET, keep=1_000)
    agent, model = reading_agent(tmp_path, 30, [auto])

    events = run_checked(agent, "Read thirty files.")

    summaries = [e for e in of_type(events, Compacted) if e.tier == "summary"]
    assert len(summaries) >= 2
    compactions = compaction_requests(model)
    assert len(compactions) == len(summaries)  # one request per compaction
    assert all(r.input_tokens >= THRESHOLD for r in compactions)
    # Every other request is a turn of the loop, and each compaction request is followed by
    # one: none followed another.
    assert len(model.requests) == len(of_type(events, ModelCalled)) + len(compactions)
    kinds = [is_compaction_request(r) for r in model.requests]
    assert not any(a and b for a, b in itertools.pairwise(kinds))


# --- the circuit breaker -----------------------------------------------------------------------


def test_the_breaker_trips_after_three_failures_in_a_row(tmp_path: Path) -> None:
    auto = AutoCompact(BUDGET, keep=1_000)
    agent, model = reading_agent(tmp_path, 16, [auto], summariser=overloaded)

    events = run_checked(agent, "Read sixteen files.")  # the window is big enough anyway

    failed = of_type(events, CompactionFailed)
    assert [(e.tier, e.failures) for e in failed] == [
        ("summary", 1),
        ("summary", 2),
        ("summary", 3),
    ]
    assert "overloaded" in failed[0].reason.lower()
    [tripped] = of_type(events, BreakerTripped)
    assert events.index(tripped) == events.index(failed[2]) + 1
    assert "3 consecutive failures" in tripped.reason
    assert auto.breaker.tripped
    # Three attempts, then none, though the context stayed over the threshold to the end.
    assert len(compaction_requests(model)) == 3
    assert model.requests[-1].input_tokens > THRESHOLD
    turns_after_trip = [e for e in events[events.index(tripped) :] if isinstance(e, ModelCalled)]
    assert len(turns_after_trip) >= 3
    assert of_type(events, Compacted) == []


def big_conversation(rounds: int = 14) -> list[m.MessageDict]:
    """Over the threshold, with nothing microcompact may clear (keep is large in these tests)
    and no file to read again."""
    messages = [m.user("Search the code.")]
    for n in range(rounds):
        use = m.tool_use(f"toolu_{n:02d}", "grep", {"pattern": f"step_{n}"})
        messages += [m.assistant([use]), m.user([m.tool_result(use["id"], FILE_BODY)])]
    return messages


def agent_answering(tmp_path: Path, responder: Responder) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(clock=FakeClock())
    model.answer_when(is_compaction_request, responder)
    return Agent(model, tools=builtin_tools(), workspace=tmp_path, clock=FakeClock()), model


def before_requests(auto: AutoCompact, agent: Agent, times: int) -> list[Event]:
    """``times`` requests in a row, each with the conversation over the threshold again."""
    events: list[Event] = []
    for _ in range(times):
        agent.messages = big_conversation()
        rewrite = auto.before_request(agent)
        if rewrite is not None:
            events.append(agent.apply(rewrite))
        events += agent._drain()
    return events


def test_a_success_in_between_resets_the_count(tmp_path: Path) -> None:
    agent, model = agent_answering(
        tmp_path,
        sequence(overloaded, overloaded, scripted_summary, overloaded, overloaded),
    )
    auto = AutoCompact(BUDGET, keep=1_000)

    events = before_requests(auto, agent, 5)

    summary = [(type(e).__name__, getattr(e, "failures", None)) for e in events]
    assert summary == [
        ("CompactionFailed", 1),
        ("CompactionFailed", 2),
        ("Compacted", None),
        ("CompactionFailed", 1),
        ("CompactionFailed", 2),
    ]
    assert not auto.breaker.tripped
    assert len(compaction_requests(model)) == 5


def test_once_tripped_nothing_is_attempted_again(tmp_path: Path) -> None:
    agent, model = agent_answering(tmp_path, overloaded)
    auto = AutoCompact(BUDGET, keep=1_000)

    events = before_requests(auto, agent, 6)

    assert [type(e).__name__ for e in events] == [
        "CompactionFailed",
        "CompactionFailed",
        "CompactionFailed",
        "BreakerTripped",
    ]
    assert len(model.requests) == 3
    assert agent.messages == big_conversation()  # failed compactions changed nothing


def test_a_compaction_that_did_not_help_trips_the_breaker_at_once(tmp_path: Path) -> None:
    # A summary as big as what it replaced: the next request would compact again, forever.
    rambling = "<summary>" + "detail " * 7_000 + "</summary>"
    agent, model = agent_answering(tmp_path, lambda request: Reply(text=rambling))
    auto = AutoCompact(BUDGET, keep=1_000)

    events = before_requests(auto, agent, 3)

    assert [type(e).__name__ for e in events] == ["Compacted", "BreakerTripped"]
    compacted, tripped = events
    assert isinstance(compacted, Compacted) and isinstance(tripped, BreakerTripped)
    assert compacted.tokens_after >= THRESHOLD * (1 - auto.margin)
    assert "did not help" in tripped.reason
    assert auto.breaker.tripped and auto.breaker.reason == tripped.reason
    assert len(compaction_requests(model)) == 1


def test_pinned_facts_too_big_to_fit_did_not_help_either(tmp_path: Path) -> None:
    pinned = PinnedFacts()
    pinned.add("House rules: " + "always use Decimal for money; " * 1_800, "CLAUDE.md")
    agent, _ = agent_answering(tmp_path, scripted_summary)
    auto = AutoCompact(BUDGET, keep=1_000, pinned=pinned)

    events = before_requests(auto, agent, 2)

    assert [type(e).__name__ for e in events] == ["Compacted", "BreakerTripped"]
    compacted, tripped = events
    assert isinstance(compacted, Compacted) and isinstance(tripped, BreakerTripped)
    assert "put back 1 pinned fact" in compacted.detail
    assert "did not help" in tripped.reason
    assert auto.last_report is not None
    assert auto.last_report.pinned_reinjected == (pinned.facts[0].text,)


def test_a_compaction_that_helped_keeps_the_breaker_closed(tmp_path: Path) -> None:
    agent, _ = agent_answering(tmp_path, scripted_summary)
    auto = AutoCompact(BUDGET, keep=1_000)
    events = before_requests(auto, agent, 4)
    assert [type(e).__name__ for e in events] == ["Compacted"] * 4
    assert not auto.breaker.tripped


def test_the_breaker_on_its_own() -> None:
    breaker = CircuitBreaker()
    assert [breaker.failure("x"), breaker.failure("y")] == [False, False]
    breaker.success()
    assert breaker.failures == 0
    assert [breaker.failure(str(n)) for n in range(3)] == [False, False, True]
    assert breaker.tripped and "3 consecutive failures; last: 2" in breaker.reason
    assert breaker.failure("again") is False  # tripped once, reported once


# --- a long session on a small window ---------------------------------------------------------

WINDOW = 40_000


def long_session(tmp_path: Path, plugins: list[Plugin]) -> tuple[Agent, ScriptedModel]:
    make_project(tmp_path)
    clock = FakeClock()
    model = ScriptedModel(coding_script(80, write_lines=60), clock=clock, context_window=WINDOW)
    model.answer_when(is_compaction_request, scripted_summary)
    agent = Agent(
        model,
        tools=builtin_tools(),
        workspace=tmp_path,
        clock=clock,
        plugins=plugins,
        config=AgentConfig(max_turns=100, max_tokens=4_000),
        approver=lambda request: True,
    )
    return agent, model


def test_a_long_session_overflows_the_window_without_auto_compact(tmp_path: Path) -> None:
    agent, model = long_session(tmp_path, [])
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
        for _ in agent.run("Check that every module rounds amounts to cents the same way."):
            pass
    assert model.remaining > 0  # it stopped part-way
    assert m.validate(agent.messages) == []  # and the run left the conversation valid


@pytest.mark.parametrize("keep", [5, 1_000], ids=["microcompact", "summaries"])
def test_a_long_session_finishes_with_auto_compact(tmp_path: Path, keep: int) -> None:
    budget = ContextBudget(window=WINDOW, max_output=4_000)
    auto = AutoCompact(budget, keep=keep)
    agent, model = long_session(tmp_path, [auto])

    events = run_checked(agent, "Check that every module rounds amounts to cents the same way.")

    assert isinstance(events[-1], TurnEnded)
    assert model.remaining == 0
    compacted = of_type(events, Compacted)
    tiers = {e.tier for e in compacted}
    assert tiers == ({"microcompact"} if keep == 5 else {"summary"})
    assert not auto.breaker.tripped and of_type(events, CompactionFailed) == []
    assert max(r.input_tokens for r in model.requests) <= WINDOW
    turns = [r for r in model.requests if not is_compaction_request(r)]
    assert len(turns) == 80


@pytest.mark.parametrize("margin", [-0.1, 1.0, 1.5])
def test_a_margin_outside_zero_to_one_is_refused(margin: float) -> None:
    with pytest.raises(ValueError, match="margin"):
        AutoCompact(margin=margin)


def test_session_memory_counts_only_if_it_clears_the_margin_line(tmp_path: Path) -> None:
    # Tier 2 must meet the same bar as tier 1: ending between the margin line and the
    # threshold would make the very next request compact again, so tier 3 still runs.
    budget = ContextBudget(window=40_000, max_output=4_000)  # threshold 23,000; line 20,700

    def barely(agent: BaseAgent) -> Rewrite:
        # ~21.9K tokens: under 23K, over 20.7K
        return Rewrite([m.user("word " * 17_500)], Compacted("session_memory", "threshold", 0, 0))

    model = ScriptedModel([reply("done")], context_window=40_000)
    model.answer_when(is_compaction_request, scripted_summary)
    auto = AutoCompact(budget, keep=1_000, session_memory=barely)
    agent = Agent(model, workspace=tmp_path, clock=FakeClock(), plugins=[auto])
    agent.messages[:] = [m.user("word " * 20_000)]  # ~25K tokens: over the threshold

    events = list(agent.run("go on"))

    assert sum(is_compaction_request(r) for r in model.requests) == 1
    assert [e.tier for e in events if isinstance(e, Compacted)] == ["summary"]


def test_the_summary_budget_is_claude_codes_20k_when_the_window_has_room() -> None:
    assert (
        AutoCompact(ContextBudget(window=200_000, max_output=32_000)).summary_max_tokens == 20_000
    )


def test_the_summary_budget_shrinks_to_fit_the_room_left_at_the_threshold() -> None:
    budget = ContextBudget(window=40_000, max_output=4_000)  # threshold 23,000: 17,000 left
    assert AutoCompact(budget).summary_max_tokens == 16_000
    assert AutoCompact(budget, summary_max_tokens=2_000).summary_max_tokens == 2_000


# --- pinned facts survive every tier, not only the summary -------------------------------------

RULE = "Amounts are Decimal, never float."
CLAUDE_MD = f"# Project rules\n\n- {RULE}\n- Keep every function under 50 lines.\n"


def rules_first_agent(
    tmp_path: Path,
    reads: int,
    plugins: list[Plugin],
    *,
    system: str | None = None,
) -> tuple[Agent, ScriptedModel]:
    """``reading_agent``, but the model reads CLAUDE.md first: the rule's only copy in the
    conversation is that old ``read_file`` result."""
    (tmp_path / "CLAUDE.md").write_text(CLAUDE_MD)
    first = [
        reply("First, the project's rules.", tool_calls=[tool_call("read_file", path="CLAUDE.md")])
    ]
    return reading_agent(tmp_path, reads, plugins, first=first, system=system)


def rule_pinned() -> PinnedFacts:
    pinned = PinnedFacts()
    pinned.add(RULE, "CLAUDE.md")
    return pinned


def claude_md_result(messages: list[m.MessageDict]) -> m.Block:
    [use] = [u for x in messages for u in m.tool_uses(x) if u["input"] == {"path": "CLAUDE.md"}]
    [result] = [r for x in messages for r in m.tool_results(x) if r["tool_use_id"] == use["id"]]
    return result


def texts(messages: list[m.MessageDict]) -> str:
    """Every word of the conversation, tool results included."""
    return "\n".join(
        str(b.get("text", b.get("content", ""))) for x in messages for b in m.blocks(x)
    )


def test_without_pinned_facts_microcompact_loses_a_rule_read_from_claude_md(
    tmp_path: Path,
) -> None:
    # The bug the check fixes: the rule's only copy was an old read_file result.
    agent, _ = rules_first_agent(tmp_path, 14, [AutoCompact(BUDGET)])
    events = run_checked(agent, "Read fourteen files.")
    assert {e.tier for e in of_type(events, Compacted)} == {"microcompact"}
    assert claude_md_result(agent.messages)["content"] == CLEARED
    assert rule_pinned().missing_from(agent.messages) != []


def test_microcompact_tier_puts_back_a_pinned_rule_it_cleared(tmp_path: Path) -> None:
    auto = AutoCompact(BUDGET, pinned=rule_pinned())
    agent, model = rules_first_agent(tmp_path, 14, [auto])

    events = run_checked(agent, "Read fourteen files.")

    compacted = of_type(events, Compacted)
    assert compacted and {e.tier for e in compacted} == {"microcompact"}
    assert compaction_requests(model) == []  # no summary was needed for this
    assert claude_md_result(agent.messages)["content"] == CLEARED
    # The first clearing took the rule's only copy, so it put the rule back and said so.
    first, *later = compacted
    assert first.detail.endswith("; put back 1 pinned fact")
    assert all("pinned" not in e.detail for e in later)  # once back, it stays
    assert first.tokens_after < THRESHOLD * (1 - auto.margin)  # it fits with the rule in it
    # The rule is in every request sent after the clearing, once, in the pinned block.
    after = [r for r in model.requests if CLEARED in str(r.messages)]
    assert after
    for request in after:
        assert texts(request.messages).count(RULE) == 1
    assert texts(agent.messages).count(RULE) == 1
    assert f"Pinned facts (kept across every compaction):\n- {RULE} (from CLAUDE.md)" in texts(
        agent.messages
    )
    assert rule_pinned().missing_from(agent.messages) == []
    assert isinstance(events[-1], TurnEnded)


@pytest.mark.parametrize("where", ["prompt", "system prompt"])
def test_a_pinned_fact_still_present_after_microcompact_is_not_repeated(
    tmp_path: Path, where: str
) -> None:
    auto = AutoCompact(BUDGET, pinned=rule_pinned())
    system = f"Project rules: {RULE}" if where == "system prompt" else None
    agent, _ = rules_first_agent(tmp_path, 14, [auto], system=system)
    prompt = "Read fourteen files." + (f" {RULE}" if where == "prompt" else "")

    events = run_checked(agent, prompt)

    compacted = of_type(events, Compacted)
    assert compacted and {e.tier for e in compacted} == {"microcompact"}
    assert claude_md_result(agent.messages)["content"] == CLEARED
    assert all("pinned" not in e.detail for e in compacted)
    assert "Pinned facts" not in texts(agent.messages)
    assert texts(agent.messages).count(RULE) == (1 if where == "prompt" else 0)


def grep_conversation_with_rule() -> list[m.MessageDict]:
    """``big_conversation`` whose first grep result is the only copy of the rule."""
    messages = big_conversation()
    messages[2] = m.user([m.tool_result("toolu_00", f"CLAUDE.md:3:- {RULE}\n{FILE_BODY}")])
    return messages


def test_the_facts_put_back_count_when_judging_whether_microcompact_fits(
    tmp_path: Path,
) -> None:
    # Clearing alone would fit; clearing plus the pinned facts it must put back does not,
    # so the tier steps aside and the summary (which puts them back as well) runs.
    agent, model = agent_answering(tmp_path, scripted_summary)
    agent.messages = grep_conversation_with_rule()
    cleared = AutoCompact(BUDGET)._microcompact(agent, THRESHOLD)
    assert cleared is not None and isinstance(cleared.event, Compacted)
    room = THRESHOLD * (1 - AutoCompact(BUDGET).margin) - cleared.event.tokens_after

    pinned = rule_pinned()
    pinned.add("House rules: " + "always use Decimal for money; " * 1_000, "CLAUDE.md")
    assert tokens.estimate_text(pinned.facts[1].text) > room
    auto = AutoCompact(BUDGET, pinned=pinned)
    rewrite = auto.before_request(agent)

    assert rewrite is not None and isinstance(rewrite.event, Compacted)
    assert rewrite.event.tier == "summary"
    assert len(compaction_requests(model)) == 1
    assert pinned.missing_from(rewrite.messages) == []


def test_session_memory_tier_puts_back_the_pinned_facts_it_lost(tmp_path: Path) -> None:
    memory = "Notes from MEMORY.md: searching the code for every step."

    def from_memory(agent: BaseAgent) -> Rewrite:
        return Rewrite([m.user(memory)], Compacted("session_memory", "threshold", 0, 0, "notes"))

    agent, model = agent_answering(tmp_path, scripted_summary)
    agent.messages = grep_conversation_with_rule()
    before = copy.deepcopy(agent.messages)
    auto = AutoCompact(BUDGET, keep=1_000, pinned=rule_pinned(), session_memory=from_memory)

    rewrite = auto.before_request(agent)

    assert rewrite is not None and isinstance(rewrite.event, Compacted)
    assert rewrite.event.tier == "session_memory"
    assert rewrite.event.detail == "notes; put back 1 pinned fact"
    assert rewrite.messages == [
        m.user(
            [
                m.text(memory),
                m.text(f"Pinned facts (kept across every compaction):\n- {RULE} (from CLAUDE.md)"),
            ]
        )
    ]
    request = agent.request()
    assert rewrite.event.tokens_after == tokens.estimate_request(
        rewrite.messages, system=request.system, tools=request.tools
    )
    assert m.validate(rewrite.messages) == []
    assert agent.messages == before  # only proposed: the loop puts it in place
    assert compaction_requests(model) == []
