"""Invariant 1, by property: every valid conversation passes ``validate``, every single
corruption of one is named precisely, and API rounds never split a tool call from its result."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.messages import (
    api_rounds,
    assistant,
    text,
    tool_result,
    tool_results,
    tool_use,
    tool_uses,
    user,
    validate,
)

# The core properties get 200 examples, each single corruption 100: enough to hit every
# message position and block kind, while the whole file stays well under a minute.
PROPERTY = settings(max_examples=200, deadline=None)
CORRUPTION = settings(max_examples=100, deadline=None)

Conversation = list[dict[str, Any]]

# Cheap strategies on purpose: a conversation takes dozens of draws, and validate only cares
# about structure (roles, ids, blankness), not about what the text says.
words = st.sampled_from(
    [
        "Fix the bug.",
        " leading space",
        "trailing newline\n",
        "x",
        "日本語のテキスト",
        "émoji 🙂",
        "{}",
    ]
)
tool_names = st.sampled_from(["read_file", "write_file", "run_shell", "grep", "glob"])
tool_inputs = st.sampled_from(
    [{}, {"path": "a.py"}, {"command": "ls -la"}, {"pattern": "TODO", "path": "src/"}]
).map(dict)
id_stems = st.sampled_from(["", "01", "abc", "Z9"])


@st.composite
def prompt_content(draw: st.DrawFn) -> str | list[dict[str, Any]]:
    if draw(st.booleans()):
        return draw(words)
    return [text(t) for t in draw(st.lists(words, min_size=1, max_size=3))]


def result_content() -> st.SearchStrategy[str | list[dict[str, Any]]]:
    return st.sampled_from(
        ["", "ok", "line 1\nline 2", [text("done")], [text("a"), text("b")]]
    ).map(copy.deepcopy)


@st.composite
def conversations(draw: st.DrawFn, min_tool_rounds: int = 0) -> Conversation:
    """A user prompt, then rounds of: an assistant reply with 0..3 tool calls, and (when it
    called tools) a user message with their results in order, sometimes followed by new
    text; a reply without tool calls is followed by a new prompt (optional at the end)."""
    messages: Conversation = [user(draw(prompt_content()))]
    rounds = draw(st.integers(min_value=min_tool_rounds, max_value=5))
    counter = 0
    for r in range(rounds):
        calls: list[dict[str, Any]] = []
        n_calls = draw(st.integers(min_value=1 if r < min_tool_rounds else 0, max_value=3))
        for _ in range(n_calls):
            counter += 1
            tool_id = f"toolu_{draw(id_stems)}_{counter}"  # the counter keeps ids unique
            calls.append(tool_use(tool_id, draw(tool_names), draw(tool_inputs)))
        said = draw(st.none() | words) if calls else draw(words)
        if not calls and draw(st.booleans()):
            messages.append(assistant(said))  # plain string content
        else:
            messages.append(assistant(([text(said)] if said else []) + calls))
        last = r == rounds - 1
        if calls:
            results = [
                tool_result(c["id"], draw(result_content()), is_error=draw(st.booleans()))
                for c in calls
            ]
            follow = [text(t) for t in draw(st.lists(words, max_size=2))]
            messages.append(user(results + follow))
        elif not last or draw(st.booleans()):
            messages.append(user(draw(prompt_content())))
    return messages


def found(messages: Conversation) -> list[tuple[str, int, str | None]]:
    return [(p.kind, p.index, p.tool_use_id) for p in validate(messages)]


def indexes(messages: Conversation, role: str, *, with_tools: bool = False) -> list[int]:
    def has_tools(m: dict[str, Any]) -> bool:
        return bool(tool_uses(m) if role == "assistant" else tool_results(m))

    return [
        i for i, m in enumerate(messages) if m["role"] == role and (not with_tools or has_tools(m))
    ]


# --- valid conversations ----------------------------------------------------------------


@PROPERTY
@given(conversations())
def test_generated_conversations_are_valid(messages: Conversation) -> None:
    assert validate(messages) == []


# --- each single corruption is named ----------------------------------------------------


@CORRUPTION
@given(conversations(min_tool_rounds=1), st.data())
def test_dropping_a_tool_result_reports_its_tool_use_unanswered(
    messages: Conversation, data: st.DataObject
) -> None:
    i = data.draw(st.sampled_from(indexes(messages, "user", with_tools=True)))
    content = messages[i]["content"]
    j = data.draw(st.sampled_from([k for k, b in enumerate(content) if b["type"] == "tool_result"]))
    dropped = content.pop(j)
    assert ("tool_use_unanswered", i - 1, dropped["tool_use_id"]) in found(messages)


@CORRUPTION
@given(conversations(min_tool_rounds=1), st.data())
def test_renaming_a_tool_use_leaves_its_result_orphaned(
    messages: Conversation, data: st.DataObject
) -> None:
    i = data.draw(st.sampled_from(indexes(messages, "assistant", with_tools=True)))
    use = data.draw(st.sampled_from(tool_uses(messages[i])))
    old_id = use["id"]
    use["id"] = old_id + "_renamed"
    problems = found(messages)
    assert ("tool_result_orphan", i + 1, old_id) in problems
    assert ("tool_use_unanswered", i, old_id + "_renamed") in problems


@CORRUPTION
@given(conversations(min_tool_rounds=1), st.data())
def test_dropping_a_tool_use_leaves_its_result_orphaned(
    messages: Conversation, data: st.DataObject
) -> None:
    i = data.draw(st.sampled_from(indexes(messages, "assistant", with_tools=True)))
    use = data.draw(st.sampled_from(tool_uses(messages[i])))
    messages[i]["content"].remove(use)
    assert ("tool_result_orphan", i + 1, use["id"]) in found(messages)


@CORRUPTION
@given(conversations(), st.data(), prompt_content())
def test_a_second_user_message_in_a_row_is_the_only_problem(
    messages: Conversation, data: st.DataObject, prompt: Any
) -> None:
    i = data.draw(st.sampled_from(indexes(messages, "user")))
    messages.insert(i + 1, user(prompt))
    assert found(messages) == [("roles_not_alternating", i + 1, None)]


@CORRUPTION
@given(conversations(), st.data(), words)
def test_a_second_assistant_message_in_a_row_is_the_only_problem(
    messages: Conversation, data: st.DataObject, said: str
) -> None:
    plain = [i for i in indexes(messages, "assistant") if not tool_uses(messages[i])]
    assume(plain)
    i = data.draw(st.sampled_from(plain))
    messages.insert(i + 1, assistant(said))
    assert found(messages) == [("roles_not_alternating", i + 1, None)]


@CORRUPTION
@given(conversations(), st.data(), st.sampled_from(["", []]))
def test_emptying_a_message_reports_empty_content_there(
    messages: Conversation, data: st.DataObject, empty: Any
) -> None:
    i = data.draw(st.integers(min_value=0, max_value=len(messages) - 1))
    # The API allows one empty message: a final assistant message (a prefill to continue).
    assume(not (i == len(messages) - 1 and messages[i]["role"] == "assistant"))
    messages[i]["content"] = empty
    assert ("empty_content", i, None) in found(messages)


@CORRUPTION
@given(conversations(), st.data(), st.sampled_from(["", " ", "\n\t  "]))
def test_blanking_a_text_block_reports_empty_text_there(
    messages: Conversation, data: st.DataObject, blank: str
) -> None:
    spots = [
        (i, j)
        for i, m in enumerate(messages)
        if isinstance(m["content"], list)
        for j, b in enumerate(m["content"])
        if b["type"] == "text"
    ]
    assume(spots)
    i, j = data.draw(st.sampled_from(spots))
    messages[i]["content"][j]["text"] = blank
    assert ("empty_text", i, None) in found(messages)


@CORRUPTION
@given(conversations(), words)
def test_an_assistant_message_first_is_reported(messages: Conversation, said: str) -> None:
    messages.insert(0, assistant(said))
    # The roles still alternate (assistant, user, ...): only the opening is wrong.
    assert found(messages) == [("first_not_user", 0, None)]


@CORRUPTION
@given(conversations())
def test_dropping_the_opening_prompt_is_reported(messages: Conversation) -> None:
    assume(len(messages) > 1)
    assert ("first_not_user", 0, None) in found(messages[1:])


@CORRUPTION
@given(conversations(min_tool_rounds=2), st.data())
def test_reusing_an_earlier_tool_id_is_reported_where_it_is_reused(
    messages: Conversation, data: st.DataObject
) -> None:
    uses = [(i, u) for i in indexes(messages, "assistant") for u in tool_uses(messages[i])]
    first, second = data.draw(
        st.lists(st.integers(0, len(uses) - 1), min_size=2, max_size=2, unique=True).map(sorted)
    )
    (_, earlier), (i, later) = uses[first], uses[second]
    for result in tool_results(messages[i + 1]):
        if result["tool_use_id"] == later["id"]:
            result["tool_use_id"] = earlier["id"]
    later["id"] = earlier["id"]
    assert ("duplicate_tool_id", i, earlier["id"]) in found(messages)


@CORRUPTION
@given(conversations(min_tool_rounds=1), st.data(), words)
def test_text_before_tool_results_is_reported_for_each_result(
    messages: Conversation, data: st.DataObject, said: str
) -> None:
    i = data.draw(st.sampled_from(indexes(messages, "user", with_tools=True)))
    messages[i]["content"].insert(0, text(said))
    problems = found(messages)
    for result in tool_results(messages[i]):
        assert ("tool_result_after_text", i, result["tool_use_id"]) in problems


@CORRUPTION
@given(conversations(), st.data())
def test_validate_does_not_change_the_conversation(
    messages: Conversation, data: st.DataObject
) -> None:
    before = copy.deepcopy(messages)
    validate(messages)
    assert messages == before


# --- API rounds -------------------------------------------------------------------------


@PROPERTY
@given(conversations())
def test_api_rounds_concatenated_are_the_conversation(messages: Conversation) -> None:
    flat = [m for round_ in api_rounds(messages) for m in round_]
    assert len(flat) == len(messages)
    assert all(a is b for a, b in zip(flat, messages, strict=True))


@PROPERTY
@given(conversations())
def test_api_rounds_after_the_first_start_with_the_assistant(messages: Conversation) -> None:
    rounds = api_rounds(messages)
    assert all(round_ for round_ in rounds)
    assert all(round_[0]["role"] == "assistant" for round_ in rounds[1:])


@PROPERTY
@given(conversations())
def test_api_rounds_never_split_a_tool_use_from_its_result(messages: Conversation) -> None:
    round_of_use: dict[str, int] = {}
    round_of_result: dict[str, int] = {}
    for r, round_ in enumerate(api_rounds(messages)):
        for m in round_:
            round_of_use.update({u["id"]: r for u in tool_uses(m)})
            round_of_result.update({res["tool_use_id"]: r for res in tool_results(m)})
    assert round_of_use == round_of_result


@PROPERTY
@given(conversations())
def test_dropping_whole_leading_rounds_keeps_tool_pairs_intact(messages: Conversation) -> None:
    # What compaction's prompt-too-long retry does: drop the oldest rounds. What is left may
    # start with the assistant (the caller adds a summary prompt first) but never holds half
    # of a tool call.
    rounds = api_rounds(messages)
    for k in range(1, len(rounds)):
        rest = [m for round_ in rounds[k:] for m in round_]
        kinds = {kind for kind, _, _ in found([user("Summary of earlier work."), *rest])}
        assert not kinds & {"tool_use_unanswered", "tool_result_orphan"}
