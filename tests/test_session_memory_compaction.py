"""Tier 2: the session memory instead of the old messages, with no model call.

What it keeps (at least 10K tokens and 5 messages, every message the memory has not read,
never half of a tool call), when it offers nothing, how auto-compact uses it before tier 3,
and a property over generated conversations (the style of ``test_compaction_properties``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness import tokens
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.auto import AutoCompact
from harness.compaction.events import Compacted
from harness.compaction.pinned import PinnedFacts
from harness.compaction.session_memory import (
    MAX_KEEP_TOKENS,
    MEMORY_PREAMBLE,
    MIN_KEEP_MESSAGES,
    MIN_KEEP_TOKENS,
    SessionMemoryCompaction,
    keep_from,
    keep_range,
    unread_from,
)
from harness.compaction.summary import SUMMARY_PREAMBLE, compact, is_compaction_request
from harness.events import TurnEnded
from harness.loop import AgentConfig, BaseAgent, Rewrite
from harness.memory import Fact, SessionMemory, render, write_atomic
from harness.model import ScriptedModel
from harness.model.scripted_memory import is_extraction_request, scripted_extraction
from harness.model.scripted_summary import scripted_summary
from harness.notebook.sessions import coding_script, make_project
from harness.tokens import ContextBudget
from harness.tools import builtin_tools
from tests.test_compaction_properties import coding_conversations

PROPERTY = settings(max_examples=80, deadline=None)

Conversation = list[dict[str, Any]]

FACTS = [
    Fact(section="Task", text="Make every module round amounts to cents.", id="f1", source="user"),
    Fact(
        section="Errors and corrections",
        text="The user corrected: round half up, not half even.",
        id="f2",
        source="user",
    ),
    Fact(section="Files and functions", text="app/billing.py: read, edited", id="f3"),
]


def test_the_numbers_are_the_observed_ones() -> None:
    assert (MIN_KEEP_TOKENS, MIN_KEEP_MESSAGES, MAX_KEEP_TOKENS) == (10_000, 5, 40_000)


# --- helpers -----------------------------------------------------------------------------------


def words(n_tokens: int, seed: int) -> str:
    """About ``n_tokens`` tokens of text (4 ASCII characters a token)."""
    return f"[{seed}] " + "abcd" * max(0, n_tokens - 3)


def long_conversation(rounds: int, size: int = 1_000) -> Conversation:
    """A prompt, then ``rounds`` of: a reply reading a file, and its result of ``size`` tokens."""
    out: Conversation = [m.user("Check the rounding in every module.")]
    for n in range(rounds):
        call = m.tool_use(f"toolu_{n:04d}", "read_file", {"path": f"app/m{n}.py"})
        out.append(m.assistant([m.text(f"Reading m{n}."), call]))
        out.append(m.user([m.tool_result(call["id"], words(size, n))]))
    return out


def size_of(messages: Conversation) -> int:
    return sum(tokens.estimate_message(x) for x in messages)


@pytest.fixture
def memory(tmp_path: Path) -> SessionMemory:
    path = tmp_path / ".harness" / "MEMORY.md"
    write_atomic(path, render(FACTS))
    return SessionMemory(path)


def agent_with(tmp_path: Path, messages: Conversation, **options: Any) -> Agent:
    model = ScriptedModel()  # no script: any model call would fail the test
    model.answer_when(is_compaction_request, scripted_summary)
    agent = Agent(model, workspace=tmp_path, clock=FakeClock(), **options)
    agent.messages = messages
    return agent


def requests_of(agent: BaseAgent) -> int:
    model = agent.model
    assert isinstance(model, ScriptedModel)
    return len(model.requests)


def kept_suffix(messages: Conversation, rewrite: Rewrite) -> int:
    """The index in ``messages`` where the kept suffix starts, checked against ``rewrite``:
    the memory message first, then the suffix (its first message joined to the memory when it
    is the user's), the same objects in the same order."""
    new = rewrite.messages
    first = m.blocks(new[0])[0]
    assert new[0]["role"] == "user" and str(first["text"]).startswith(MEMORY_PREAMBLE)
    joined = len(m.blocks(new[0])) > 1
    start = len(messages) - (len(new) - 1) - (1 if joined else 0)
    assert 0 < start < len(messages) or (start == len(messages) and not joined)
    rest = new[1:]
    assert all(a is b for a, b in zip(rest, messages[len(messages) - len(rest) :], strict=True))
    if joined:
        assert messages[start]["role"] == "user"
        assert m.blocks(new[0])[1:] == m.blocks(messages[start])
    elif start < len(messages):
        assert messages[start]["role"] == "assistant"
    return start


# --- what it keeps -----------------------------------------------------------------------------


def test_it_keeps_at_least_10k_tokens_and_5_messages(tmp_path: Path, memory: SessionMemory) -> None:
    messages = long_conversation(40, size=1_000)
    agent = agent_with(tmp_path, messages)
    memory.covered = messages[-1]  # the memory has read everything

    rewrite = SessionMemoryCompaction(memory)(agent)

    assert rewrite is not None
    start = kept_suffix(messages, rewrite)
    kept = messages[start:]
    assert size_of(kept) >= 10_000 and len(kept) >= 5
    # No more than needed: one round less would be under 10K.
    assert size_of(kept[2:]) < 10_000
    assert m.validate(rewrite.messages) == []
    assert requests_of(agent) == 0  # no model call at compaction time
    assert isinstance(rewrite.event, Compacted) and rewrite.event.tier == "session_memory"
    assert rewrite.event.tokens_after < rewrite.event.tokens_before
    assert f"replaced {start} messages with session memory (3 facts)" in rewrite.event.detail


def test_it_keeps_5_messages_even_when_fewer_hold_10k_tokens(
    tmp_path: Path, memory: SessionMemory
) -> None:
    messages = long_conversation(20, size=6_000)
    agent = agent_with(tmp_path, messages)
    memory.covered = messages[-1]

    rewrite = SessionMemoryCompaction(memory)(agent)

    assert rewrite is not None
    kept = messages[kept_suffix(messages, rewrite) :]
    assert len(kept) >= 5 and len(kept) <= 6  # 5, or 6 to keep a call with its result


def test_it_stops_growing_at_40k_once_it_has_5_messages() -> None:
    messages = long_conversation(30, size=9_000)
    start = keep_from(messages, len(messages), min_tokens=60_000)
    kept = messages[start:]
    assert len(kept) >= 5
    assert size_of(kept) <= 40_000  # the minimum gave way to the maximum...
    assert size_of(messages[start - 1 :]) > 40_000  # ...which one more message would pass
    assert not m.tool_results(kept[0])


def test_it_keeps_every_message_the_memory_has_not_read(
    tmp_path: Path, memory: SessionMemory
) -> None:
    messages = long_conversation(40, size=1_000)
    agent = agent_with(tmp_path, messages)
    memory.covered = messages[20]  # read up to here: 60 messages since

    rewrite = SessionMemoryCompaction(memory)(agent)

    assert rewrite is not None
    start = kept_suffix(messages, rewrite)
    assert start <= 21
    assert size_of(messages[start:]) > 20_000  # more than the minimum: all that is unread
    assert m.validate(rewrite.messages) == []


@pytest.mark.parametrize("covered", range(30, 81))
def test_the_cut_never_separates_a_tool_call_from_its_result(
    tmp_path: Path, memory: SessionMemory, covered: int
) -> None:
    messages = long_conversation(40, size=700)
    agent = agent_with(tmp_path, messages)
    memory.covered = messages[covered]

    rewrite = SessionMemoryCompaction(memory)(agent)

    assert rewrite is not None
    start = kept_suffix(messages, rewrite)
    assert not m.tool_results(messages[start])  # never a result without its call
    assert m.validate(rewrite.messages) == []


def test_the_memory_goes_in_without_its_origin_comments(
    tmp_path: Path, memory: SessionMemory
) -> None:
    messages = long_conversation(40)
    agent = agent_with(tmp_path, messages)
    memory.covered = messages[-1]
    rewrite = SessionMemoryCompaction(memory)(agent)
    assert rewrite is not None
    said = str(m.blocks(rewrite.messages[0])[0]["text"])
    assert "round half up, not half even" in said
    assert "<!--" not in said and "## Errors and corrections" in said


# --- when it offers nothing --------------------------------------------------------------------


def test_it_offers_nothing_when_the_memory_is_empty(tmp_path: Path) -> None:
    messages = long_conversation(40)
    agent = agent_with(tmp_path, messages)
    tier = SessionMemoryCompaction(SessionMemory(tmp_path / "none" / "MEMORY.md"))
    assert tier(agent) is None
    assert tier.last_reason == "the session memory is empty"


def test_it_offers_nothing_when_the_memory_has_not_read_this_conversation(
    tmp_path: Path, memory: SessionMemory
) -> None:
    messages = long_conversation(40)
    agent = agent_with(tmp_path, messages)
    memory.covered = m.user("a message of another conversation")
    tier = SessionMemoryCompaction(memory)
    assert tier(agent) is None
    assert "has not read this conversation" in tier.last_reason

    memory.covered = None  # never extracted in this conversation at all
    assert tier(agent) is None
    assert "has not read this conversation" in tier.last_reason


def test_after_a_summary_rewrote_the_conversation_tier_2_stands_aside(
    tmp_path: Path, memory: SessionMemory
) -> None:
    messages = long_conversation(40)
    agent = agent_with(tmp_path, messages)
    memory.covered = messages[-1]
    compact(agent, trigger="manual")  # tier 3: the summary replaced every message
    assert m.text_of(agent.messages[0]).startswith(SUMMARY_PREAMBLE)
    requests = requests_of(agent)

    tier = SessionMemoryCompaction(memory)
    assert tier(agent) is None
    assert "has not read this conversation" in tier.last_reason
    assert requests_of(agent) == requests


def test_it_offers_nothing_when_every_message_is_recent(
    tmp_path: Path, memory: SessionMemory
) -> None:
    messages = long_conversation(4, size=1_000)  # 9 messages, about 4K tokens
    agent = agent_with(tmp_path, messages)
    memory.covered = messages[-1]
    tier = SessionMemoryCompaction(memory)
    assert tier(agent) is None
    assert tier.last_reason == "every message is recent (nothing to replace)"


def test_it_offers_nothing_when_the_file_was_broken_by_hand(
    tmp_path: Path, memory: SessionMemory
) -> None:
    messages = long_conversation(40)
    agent = agent_with(tmp_path, messages)
    memory.load()
    memory.covered = messages[-1]
    memory.path.write_text(memory.path.read_text() + "\n## Notes\n")
    tier = SessionMemoryCompaction(memory)
    assert tier(agent) is None
    assert "MEMORY.md line" in tier.last_reason and "unknown section" in tier.last_reason


def test_it_reads_the_file_so_a_hand_edit_goes_into_the_context(
    tmp_path: Path, memory: SessionMemory
) -> None:
    messages = long_conversation(40)
    agent = agent_with(tmp_path, messages)
    memory.covered = messages[-1]
    path = memory.path
    path.write_text(path.read_text().replace("## Learnings\n", "## Learnings\n- Use cents.\n"))
    rewrite = SessionMemoryCompaction(memory)(agent)
    assert rewrite is not None
    assert "- Use cents." in m.text_of(rewrite.messages[0])


def test_after_tier_2_the_memory_message_counts_as_read(
    tmp_path: Path, memory: SessionMemory
) -> None:
    messages = long_conversation(40)
    agent = agent_with(tmp_path, messages)
    memory.covered = messages[-1]
    rewrite = SessionMemoryCompaction(memory)(agent)
    assert rewrite is not None
    agent.apply(rewrite)
    memory.covered = m.user("gone")  # say the covered message was the one joined to the memory
    assert unread_from(memory, agent.messages) == 1
    memory.covered = agent.messages[-1]
    assert unread_from(memory, agent.messages) == len(agent.messages)


# --- through auto-compact ----------------------------------------------------------------------

# Threshold: 60,000 - 4,000 - 13,000 = 43,000 tokens.
BUDGET = ContextBudget(window=60_000, max_output=4_000)


def over_threshold(tmp_path: Path, **options: Any) -> tuple[Agent, Conversation]:
    """A conversation of 50K tokens whose results are not compactable (tier 1 does nothing)."""
    messages = long_conversation(50)
    for x in messages:
        for u in m.tool_uses(x):
            u["name"] = "deploy"
    messages += [m.assistant("All read."), m.user("Go on.")]
    return agent_with(tmp_path, messages, **options), messages


def test_auto_compact_uses_tier_2_before_the_summary(tmp_path: Path, memory: SessionMemory) -> None:
    agent, messages = over_threshold(tmp_path)
    memory.covered = messages[-3]
    auto = AutoCompact(BUDGET, session_memory=SessionMemoryCompaction(memory))

    rewrite = auto.before_request(agent)

    assert rewrite is not None and isinstance(rewrite.event, Compacted)
    assert rewrite.event.tier == "session_memory"
    assert rewrite.event.tokens_after < auto.threshold * 0.9
    assert requests_of(agent) == 0  # no summary, no model call at all
    assert m.validate(rewrite.messages) == []
    assert rewrite.messages[-1] is messages[-1]  # the unread prompt is kept as it was


@pytest.mark.parametrize("why", ["empty", "unread", "too big"])
def test_auto_compact_falls_back_to_the_summary_when_tier_2_has_nothing_that_fits(
    tmp_path: Path, memory: SessionMemory, why: str
) -> None:
    agent, messages = over_threshold(tmp_path)
    memory.covered = messages[-3]
    tier = SessionMemoryCompaction(memory)
    if why == "empty":
        tier = SessionMemoryCompaction(SessionMemory(tmp_path / "empty.md"))
    elif why == "unread":
        memory.covered = messages[2]  # almost everything is unread: too much would stay
    else:
        tier = SessionMemoryCompaction(memory, min_tokens=45_000, max_tokens=100_000)
    auto = AutoCompact(BUDGET, session_memory=tier)

    rewrite = auto.before_request(agent)

    assert rewrite is not None and isinstance(rewrite.event, Compacted)
    assert rewrite.event.tier == "summary"
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert [is_compaction_request(r) for r in model.requests] == [True]


def test_pinned_facts_are_put_back_after_tier_2(tmp_path: Path, memory: SessionMemory) -> None:
    agent, messages = over_threshold(tmp_path)
    messages[0] = m.user("Check the rounding. Never push to main.")  # only in the old part
    memory.covered = messages[-3]
    pinned = PinnedFacts()
    pinned.add("Never push to main.", "user")
    pinned.add("Check the rounding.", "user")  # said only in the replaced prompt too
    pinned.add("abcd", "test")  # in every kept result: not put back
    auto = AutoCompact(BUDGET, pinned=pinned, session_memory=SessionMemoryCompaction(memory))

    rewrite = auto.before_request(agent)

    assert rewrite is not None and isinstance(rewrite.event, Compacted)
    assert rewrite.event.tier == "session_memory"
    assert rewrite.event.detail.endswith("; put back 2 pinned facts")
    last = m.text_of(rewrite.messages[-1])
    assert "- Never push to main. (from user)" in last
    assert "abcd (from test)" not in last
    assert pinned.missing_from(rewrite.messages) == []
    assert rewrite.event.tokens_after == tokens.estimate_request(rewrite.messages)


# --- a whole session ---------------------------------------------------------------------------


class Recording(SessionMemoryCompaction):
    """Tier 2 that keeps, for each call, the conversation it saw and what it proposed."""

    def __init__(self, memory: SessionMemory) -> None:
        super().__init__(memory)
        self.seen: list[tuple[Conversation, m.MessageDict | None, Rewrite | None]] = []

    def __call__(self, agent: BaseAgent) -> Rewrite | None:
        result = super().__call__(agent)
        self.seen.append((list(agent.messages), self.memory.covered, result))
        return result


@pytest.fixture(scope="module")
def long_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Agent, Recording]]:
    root = tmp_path_factory.mktemp("session")
    make_project(root, functions=30)
    clock = FakeClock()
    model = ScriptedModel(coding_script(60, write_lines=300), clock=clock, context_window=60_000)
    model.answer_when(is_compaction_request, scripted_summary)
    model.answer_when(is_extraction_request, scripted_extraction)
    memory = SessionMemory(root / ".harness" / "MEMORY.md")
    tier = Recording(memory)
    agent = Agent(
        model,
        tools=builtin_tools(),
        workspace=root,
        clock=clock,
        plugins=[
            memory,
            AutoCompact(ContextBudget(window=60_000, max_output=8_000), session_memory=tier),
        ],
        config=AgentConfig(max_turns=80),
        approver=lambda request: True,
    )
    events = list(agent.run("Check that every module rounds amounts to cents the same way."))
    assert isinstance(events[-1], TurnEnded)
    yield agent, tier


def test_in_a_session_tier_2_replaces_the_old_messages_with_no_summary(
    long_session: tuple[Agent, Recording],
) -> None:
    agent, tier = long_session
    used = [r for _, _, r in tier.seen if r is not None]
    assert used, [tier.last_reason]
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert not any(is_compaction_request(r) for r in model.requests)
    assert m.validate(agent.messages) == []


def test_in_a_session_every_unread_message_survives_tier_2(
    long_session: tuple[Agent, Recording],
) -> None:
    _, tier = long_session
    for messages, covered, rewrite in tier.seen:
        if rewrite is None:
            continue
        assert covered is not None
        unread = next(i for i, x in enumerate(messages) if x is covered) + 1
        start = kept_suffix(messages, rewrite)
        assert start <= unread
        least, _ = keep_range(60_000)  # the session's window: 3K, not 200K's 10K
        assert size_of(messages[start:]) >= least and len(messages) - start >= 5


# --- property: generated conversations ---------------------------------------------------------


@st.composite
def conversations_read_up_to(draw: st.DrawFn) -> tuple[Conversation, int | None]:
    """A coding conversation (the tier 1/3 properties' generator) and how far the memory has
    read it: the index of the last message read, or None (it read none of it)."""
    messages = draw(coding_conversations())
    covered = draw(st.none() | st.integers(0, len(messages) - 1))
    return messages, covered


@PROPERTY
@given(
    conversations_read_up_to(),
    st.integers(0, 600),
    st.integers(1, 6),
    st.just(10**9) | st.integers(1, 800),
    st.booleans(),
)
def test_every_tier_2_result_is_valid_and_keeps_the_suffix_whole(
    tmp_path_factory: pytest.TempPathFactory,
    case: tuple[Conversation, int | None],
    min_tokens: int,
    min_messages: int,
    max_tokens: int,
    ends_on_prompt: bool,
) -> None:
    messages, covered = case
    if ends_on_prompt and messages[-1]["role"] == "assistant":
        messages.append(m.user("Go on."))  # as before every request
    before = copy.deepcopy(messages)
    root = tmp_path_factory.getbasetemp()
    memory = SessionMemory(root / "property" / "MEMORY.md")
    if not memory.path.exists():
        write_atomic(memory.path, render(FACTS))
    memory.covered = messages[covered] if covered is not None else None
    model = ScriptedModel()
    agent = Agent(model, workspace=root, clock=FakeClock())
    agent.messages = messages
    tier = SessionMemoryCompaction(
        memory, min_tokens=min_tokens, min_messages=min_messages, max_tokens=max_tokens
    )

    rewrite = tier(agent)

    assert messages == before and agent.messages is messages  # only proposed
    assert model.requests == []
    if covered is None:
        assert rewrite is None and "has not read" in tier.last_reason
        return
    unread = covered + 1
    start = keep_from(
        messages, unread, min_tokens=min_tokens, min_messages=min_messages, max_tokens=max_tokens
    )
    if rewrite is None:
        assert start == 0 and tier.last_reason.startswith("every message is recent")
        return
    assert m.validate(rewrite.messages) == []
    assert kept_suffix(messages, rewrite) == start
    assert start <= unread  # every unread message kept
    assert not m.tool_results(messages[start])  # no result without its call
    kept = messages[start:]
    assert len(kept) >= min_messages
    if max_tokens == 10**9:
        assert size_of(kept) >= min_tokens
    ids_used = {u["id"] for x in rewrite.messages for u in m.tool_uses(x)}
    ids_answered = {r["tool_use_id"] for x in rewrite.messages for r in m.tool_results(x)}
    assert ids_answered <= ids_used
