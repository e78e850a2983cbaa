"""Compaction keeps the conversation valid: properties over generated conversations.

The conversations are the valid ones of ``tests/test_properties.py``, with tool names
remapped so that both compactable tools (read_file, bash, grep...) and others (a deploy tool,
a question to the user) appear, and some results made big enough to be worth clearing.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness import tokens
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.auto import AutoCompact
from harness.compaction.context import ContextTracker
from harness.compaction.events import Compacted
from harness.compaction.microcompact import CLEARED, COMPACTABLE_TOOLS, microcompact
from harness.compaction.pinned import PinnedFact, PinnedFacts
from harness.compaction.summary import (
    PTL_RETRY_MARKER,
    SUMMARY_PREAMBLE,
    compact,
    drop_oldest_rounds,
    is_compaction_request,
)
from harness.loop import BaseAgent, Rewrite
from harness.model import ScriptedModel
from harness.model.scripted_summary import scripted_summary
from harness.tokens import AUTO_COMPACT_BUFFER, ContextBudget
from tests.test_properties import conversations

PROPERTY = settings(max_examples=120, deadline=None)
SLOW_PROPERTY = settings(max_examples=40, deadline=None)

Conversation = list[dict[str, Any]]

COMPACTABLE_NAMES = ["read_file", "bash", "grep", "glob", "edit_file", "web_fetch"]
OTHER_NAMES = ["deploy", "ask_user", "run_shell"]
assert set(COMPACTABLE_NAMES) <= COMPACTABLE_TOOLS
assert not set(OTHER_NAMES) & COMPACTABLE_TOOLS

# Results worth clearing (far bigger than the marker), next to the generator's small ones.
BIG_RESULTS: list[str | list[dict[str, Any]]] = [
    "\n".join(f"{i:>6}\tline {i} of a file the model read" for i in range(60)),
    [m.text("total 48\n" + "-rw-r--r-- 1 dev dev 4096 app.py\n" * 40)],
]


@st.composite
def coding_conversations(draw: st.DrawFn, min_tool_rounds: int = 0) -> Conversation:
    """A valid conversation (``tests/test_properties.conversations``) whose tool calls use
    compactable and non-compactable tool names, and whose results are often big."""
    messages = draw(conversations(min_tool_rounds=min_tool_rounds))
    names = st.sampled_from(COMPACTABLE_NAMES + OTHER_NAMES)
    for message in messages:
        if not isinstance(message["content"], list):
            continue
        for block in message["content"]:
            if block["type"] == "tool_use":
                block["name"] = draw(names)
            elif block["type"] == "tool_result" and draw(st.booleans()):
                block["content"] = copy.deepcopy(draw(st.sampled_from(BIG_RESULTS)))
    assert m.validate(messages) == []
    return messages


def dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def tool_name_of(messages: Conversation) -> dict[str, str]:
    return {u["id"]: u["name"] for message in messages for u in m.tool_uses(message)}


def result_positions(messages: Conversation) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, message in enumerate(messages)
        if isinstance(message["content"], list)
        for j, block in enumerate(message["content"])
        if block["type"] == "tool_result"
    ]


def last_assistant(messages: Conversation) -> int:
    return max((i for i, x in enumerate(messages) if x["role"] == "assistant"), default=-1)


keeps = st.integers(min_value=0, max_value=6)


# --- microcompact ---------------------------------------------------------------------------


@PROPERTY
@given(coding_conversations(), keeps)
def test_microcompact_output_is_valid_and_the_input_is_untouched(
    messages: Conversation, keep: int
) -> None:
    before = copy.deepcopy(messages)
    identities = [id(x) for x in messages]
    result = microcompact(messages, keep=keep)
    assert m.validate(result.messages) == []
    assert messages == before
    assert [id(x) for x in messages] == identities
    assert result.messages is not messages


@PROPERTY
@given(coding_conversations(), keeps)
def test_microcompact_keeps_every_tool_pair_and_every_word(
    messages: Conversation, keep: int
) -> None:
    out = microcompact(messages, keep=keep).messages
    assert len(out) == len(messages)
    for old, new in zip(messages, out, strict=True):
        assert new["role"] == old["role"]
        if old["role"] == "assistant":
            assert dump(new) == dump(old)  # tool_use blocks and text: all unchanged
            continue
        old_blocks, new_blocks = m.blocks(old), m.blocks(new)
        assert len(new_blocks) == len(old_blocks)
        for a, b in zip(old_blocks, new_blocks, strict=True):
            if a["type"] != "tool_result":
                assert dump(b) == dump(a)  # what the user said is never touched
            else:
                assert b["tool_use_id"] == a["tool_use_id"]
                assert b.get("is_error") == a.get("is_error")
    # Each result still sits in the message right after its tool_use.
    for i, message in enumerate(out):
        if message["role"] == "assistant" and m.tool_uses(message):
            answered = [r["tool_use_id"] for r in m.tool_results(out[i + 1])]
            assert answered == [u["id"] for u in m.tool_uses(message)]


@PROPERTY
@given(coding_conversations(), keeps)
def test_microcompact_never_touches_a_result_the_model_has_not_seen(
    messages: Conversation, keep: int
) -> None:
    out = microcompact(messages, keep=keep).messages
    unseen_from = last_assistant(messages) + 1
    for i in range(unseen_from, len(messages)):
        assert dump(out[i]) == dump(messages[i])


@PROPERTY
@given(coding_conversations(), keeps)
def test_microcompact_clears_exactly_the_old_seen_compactable_results(
    messages: Conversation, keep: int
) -> None:
    result = microcompact(messages, keep=keep)
    out = result.messages
    names = tool_name_of(messages)
    positions = result_positions(messages)
    compactable = [
        p
        for p in positions
        if names[messages[p[0]]["content"][p[1]]["tool_use_id"]] in COMPACTABLE_TOOLS
    ]
    recent = set(compactable[-keep:]) if keep else set()
    seen_before = last_assistant(messages)
    changed = []
    for i, j in positions:
        old, new = messages[i]["content"][j], out[i]["content"][j]
        should_clear = (i, j) in set(compactable) and (i, j) not in recent and i < seen_before
        # A result no longer than the marker is left alone: clearing it would add tokens.
        short = tokens.estimate_block(old) <= tokens.estimate_block({**old, "content": CLEARED})
        if should_clear and not short:
            assert new["content"] == CLEARED
        else:
            assert dump(new) == dump(old)  # recent, unseen, or not a compactable tool
        if dump(new) != dump(old):
            changed.append(old["tool_use_id"])
            assert names[old["tool_use_id"]] in COMPACTABLE_TOOLS
    assert sorted(result.cleared) == sorted(changed)


@PROPERTY
@given(coding_conversations(), keeps)
def test_microcompact_twice_equals_once(messages: Conversation, keep: int) -> None:
    once = microcompact(messages, keep=keep)
    twice = microcompact(once.messages, keep=keep)
    assert twice.messages == once.messages
    assert twice.cleared == ()
    assert twice.tokens_freed == 0
    assert twice.first_changed is None


@PROPERTY
@given(coding_conversations(), keeps)
def test_microcompact_reports_the_tokens_freed_and_the_first_changed_message(
    messages: Conversation, keep: int
) -> None:
    result = microcompact(messages, keep=keep)
    assert result.tokens_freed == tokens.estimate_request(messages) - tokens.estimate_request(
        result.messages
    )
    differs = [i for i, (a, b) in enumerate(zip(messages, result.messages, strict=True)) if a != b]
    assert result.first_changed == (differs[0] if differs else None)
    assert (result.first_changed is None) == (result.cleared == ())


# --- drop_oldest_rounds (the prompt-too-long retry) --------------------------------------------


@PROPERTY
@given(coding_conversations(min_tool_rounds=1), st.data())
def test_dropping_the_oldest_rounds_leaves_a_valid_suffix(
    messages: Conversation, data: st.DataObject
) -> None:
    rounds = m.api_rounds(messages)
    assume(len(rounds) >= 2)
    total = tokens.estimate_request(messages)
    to_free = data.draw(st.integers(min_value=0, max_value=total + 10))
    before = copy.deepcopy(messages)

    out, dropped = drop_oldest_rounds(messages, to_free)

    assert messages == before
    assert m.validate(out) == []
    assert 1 <= dropped <= len(rounds) - 1
    rest = out
    if out[0]["role"] == "user" and out[0]["content"] == PTL_RETRY_MARKER:
        rest = out[1:]
    # A suffix of the input, the same message objects, cut at a round boundary: so no
    # tool_use is separated from its tool_result.
    kept = sum(len(r) for r in rounds[dropped:])
    assert len(rest) == kept
    assert all(a is b for a, b in zip(rest, messages[len(messages) - kept :], strict=True))
    assert rest[0]["role"] == "assistant"
    ids_used = {u["id"] for x in rest for u in m.tool_uses(x)}
    ids_answered = {r["tool_use_id"] for x in rest for r in m.tool_results(x)}
    assert ids_used == ids_answered
    # It drops no more than it must: one round fewer would not have freed enough.
    freed = sum(tokens.estimate_message(x) for r in rounds[:dropped] for x in r)
    if dropped > 1:
        assert freed - sum(tokens.estimate_message(x) for x in rounds[dropped - 1]) < to_free
    if dropped < len(rounds) - 1:
        assert freed >= to_free


def without_marker(messages: Conversation) -> Conversation:
    if messages and messages[0]["role"] == "user" and messages[0]["content"] == PTL_RETRY_MARKER:
        return messages[1:]
    return messages


@PROPERTY
@given(coding_conversations(min_tool_rounds=2), st.data())
def test_each_retry_drops_real_rounds_not_its_own_marker(
    messages: Conversation, data: st.DataObject
) -> None:
    # The retry loop calls drop_oldest_rounds on what the previous retry left, marker
    # included. Each call must drop at least one round of the conversation itself (else
    # the next request is the same as the last), and count only those.
    current = messages
    for _ in range(3):
        rest = without_marker(current)
        rounds = m.api_rounds(rest)
        if len(rounds) < 2:
            break
        to_free = data.draw(st.integers(min_value=0, max_value=40))
        out, dropped = drop_oldest_rounds(current, to_free)
        assert m.validate(out) == []
        assert without_marker(out) == [x for r in rounds[dropped:] for x in r]
        assert len(without_marker(out)) < len(rest)
        current = out


# --- full compaction ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("workspace")
    (root / "a.py").write_text("print('a')\n")
    (root / "src").mkdir()
    yield root


@SLOW_PROPERTY
@given(coding_conversations(), st.sampled_from(["manual", "auto"]))
def test_full_compaction_leaves_one_valid_user_message(
    workspace: Path, messages: Conversation, trigger: str
) -> None:
    model = ScriptedModel()  # no script: only the compaction request may be sent
    model.answer_when(is_compaction_request, scripted_summary)
    agent = Agent(model, workspace=workspace, clock=FakeClock())
    agent.messages = list(messages)
    pinned = PinnedFacts()
    pinned.add("Never push to main.", "CLAUDE.md")

    report = compact(agent, pinned=pinned, trigger=trigger)

    assert m.validate(agent.messages) == []
    assert len(agent.messages) == 1
    assert agent.messages[0]["role"] == "user"
    assert m.text_of(agent.messages[0]).startswith(SUMMARY_PREAMBLE)
    assert "Never push to main." in m.text_of(agent.messages[0])
    assert len(model.requests) == 1 and is_compaction_request(model.requests[0])
    assert report.messages_summarised == len(messages)


# --- pinned facts survive every tier --------------------------------------------------------

FACTS = [
    ("Amounts are Decimal, never float.", "CLAUDE.md"),
    ("Never push to main.", "CLAUDE.md"),
    ("Keep every docstring under 100 characters.", "user"),
]


@st.composite
def conversations_with_facts(
    draw: st.DrawFn,
) -> tuple[Conversation, PinnedFacts, str | None]:
    """A coding conversation that ends on a user message (as before every request), whose
    tool results carry pinned facts at random places; sometimes a fact is also in something
    the user said or in the system prompt, and some pinned facts are nowhere at all."""
    messages = draw(coding_conversations())
    if messages[-1]["role"] != "user":
        messages.append(m.user("Go on."))
    facts = st.sampled_from([text for text, _ in FACTS])
    for message in messages:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block["type"] == "tool_result" and draw(st.booleans()):
                block["content"] = f"{BIG_RESULTS[0]}\n{draw(facts)}"  # big: worth clearing
            elif block["type"] == "text" and message["role"] == "user" and draw(st.booleans()):
                block["text"] += f" {draw(facts)}"
    pinned = PinnedFacts()
    for text, source in draw(st.lists(st.sampled_from(FACTS), unique=True)):
        pinned.add(text, source)
    system = draw(st.none() | facts.map(lambda fact: f"Project rules:\n- {fact}"))
    assert m.validate(messages) == []
    return messages, pinned, system


def pinned_block(facts: list[PinnedFact]) -> m.Block:
    listing = "\n".join(f"- {f.text} (from {f.source})" for f in facts)
    return m.text(f"Pinned facts (kept across every compaction):\n{listing}")


@PROPERTY
@given(conversations_with_facts(), st.booleans())
def test_putting_back_adds_exactly_the_missing_facts_at_the_end(
    case: tuple[Conversation, PinnedFacts, str | None], end_on_assistant: bool
) -> None:
    messages, pinned, system = case
    if end_on_assistant and len(messages) > 1 and not m.tool_uses(messages[-2]):
        messages = messages[:-1]  # a reply with no tool call may end a conversation too
    before = copy.deepcopy(messages)
    missing = pinned.missing_from(messages, system=system)

    kept = pinned.put_back(messages, system=system)

    assert messages == before  # the input and its messages are untouched
    assert list(kept.facts) == missing
    assert pinned.missing_from(kept.messages, system=system) == []
    assert m.validate(kept.messages) == []
    if not missing:
        assert kept.messages == messages and kept.detail == ""
        return
    assert kept.detail == f"put back {len(missing)} pinned fact{'' if len(missing) == 1 else 's'}"
    last = kept.messages[-1]
    assert last["role"] == "user" and m.blocks(last)[-1] == pinned_block(missing)
    if messages[-1]["role"] == "user":  # joined to it: everything before is as it was
        assert kept.messages[:-1] == messages[:-1]
        assert m.blocks(last)[:-1] == m.blocks(messages[-1])
    else:  # a user message of its own
        assert kept.messages[:-1] == messages and m.blocks(last) == [pinned_block(missing)]


MEMORY_NOTE = "Notes from session memory: the work so far."


@SLOW_PROPERTY
@given(conversations_with_facts(), st.integers(0, 6) | st.just(1_000), st.data())
def test_after_any_tier_every_pinned_fact_is_in_the_context(
    workspace: Path,
    case: tuple[Conversation, PinnedFacts, str | None],
    keep: int,
    data: st.DataObject,
) -> None:
    messages, pinned, system = case
    remembered = data.draw(st.lists(st.sampled_from([t for t, _ in FACTS]), unique=True))
    memory = [m.user(" ".join([MEMORY_NOTE, *remembered]))]

    def session_memory(agent: BaseAgent) -> Rewrite:
        event = Compacted("session_memory", "threshold", 0, 0, "from memory")
        return Rewrite(copy.deepcopy(memory), event)

    model = ScriptedModel()  # no script: only a compaction request may be sent
    model.answer_when(is_compaction_request, scripted_summary)
    agent = Agent(model, workspace=workspace, clock=FakeClock(), system=system)
    agent.messages = copy.deepcopy(messages)
    # A budget whose threshold is where the conversation stands: over it, some tier must act.
    size = ContextTracker().size(agent)
    budget = ContextBudget(window=size + 4_000 + AUTO_COMPACT_BUFFER, max_output=4_000)
    with_memory = data.draw(st.booleans())
    auto = AutoCompact(
        budget, pinned=pinned, keep=keep, session_memory=session_memory if with_memory else None
    )

    rewrite = auto.before_request(agent)

    assert rewrite is not None and isinstance(rewrite.event, Compacted)
    assert agent.messages == messages  # only proposed
    assert m.validate(rewrite.messages) == []
    assert pinned.missing_from(rewrite.messages, system=system) == []
    event = rewrite.event
    if event.tier == "summary":
        assert auto.last_report is not None
        lost = list(auto.last_report.pinned_reinjected)
    else:
        # What the tier made on its own, and what the check then added at its end.
        proposed = (
            microcompact(messages, keep=keep).messages if event.tier == "microcompact" else memory
        )
        missing = pinned.missing_from(proposed, system=system)
        lost = [f.text for f in missing]
        if missing:
            assert rewrite.messages[:-1] == proposed[:-1]
            assert m.blocks(rewrite.messages[-1]) == [
                *m.blocks(proposed[-1]),
                pinned_block(missing),
            ]
            # The size it reports is the size with the facts in it.
            assert event.tokens_after == tokens.estimate_request(rewrite.messages, system=system)
        else:
            assert rewrite.messages == proposed
    if lost:
        assert event.detail.endswith(
            f"; put back {len(lost)} pinned fact{'' if len(lost) == 1 else 's'}"
        )
    else:
        assert "pinned" not in event.detail
    # A fact put back was missing: none already in the context is said twice by the check.
    for fact in pinned.facts:
        in_block = f"- {fact.text} (from {fact.source})" in m.text_of(rewrite.messages[-1])
        assert in_block == (fact.text in lost)
