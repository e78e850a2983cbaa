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
from harness.compaction.microcompact import CLEARED, COMPACTABLE_TOOLS, microcompact
from harness.compaction.pinned import PinnedFacts
from harness.compaction.summary import (
    PTL_RETRY_MARKER,
    SUMMARY_PREAMBLE,
    compact,
    drop_oldest_rounds,
    is_compaction_request,
)
from harness.model import ScriptedModel
from harness.model.scripted_summary import scripted_summary
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
