"""Conversation builders, the validity checker (invariant 1) and API rounds."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message, TextBlock, ToolUseBlock, Usage

from harness.messages import (
    InvalidConversation,
    Problem,
    api_rounds,
    assistant,
    blocks,
    ensure_valid,
    text,
    text_of,
    tool_result,
    tool_results,
    tool_use,
    tool_uses,
    user,
    validate,
)


def found(messages: list[dict[str, Any]]) -> list[tuple[str, int, str | None]]:
    """validate's findings as (kind, message index, tool id)."""
    return [(p.kind, p.index, p.tool_use_id) for p in validate(messages)]


def tool_conversation() -> list[dict[str, Any]]:
    """A valid multi-turn conversation with parallel tool calls, results followed by text,
    and a final plain reply."""
    return [
        user("Fix the failing test."),
        assistant(
            [
                text("Let me look at the test and the code."),
                tool_use("toolu_1", "read_file", {"path": "test_app.py"}),
                tool_use("toolu_2", "read_file", {"path": "app.py"}),
            ]
        ),
        user([tool_result("toolu_1", "def test(): ..."), tool_result("toolu_2", "def app(): ...")]),
        assistant([tool_use("toolu_3", "run_shell", {"command": "pytest"})]),
        user([tool_result("toolu_3", "1 failed", is_error=True), text("Use -x please.")]),
        assistant("Fixed: the off-by-one in app()."),
        user("Thanks! Now add a docstring."),
    ]


# --- builders ---------------------------------------------------------------------------


def test_text_builds_a_text_block() -> None:
    assert text("hi") == {"type": "text", "text": "hi"}


def test_user_with_a_string_keeps_the_string_as_content() -> None:
    assert user("hello") == {"role": "user", "content": "hello"}


def test_user_with_blocks_stores_them_as_a_list() -> None:
    message = user(block for block in [text("a"), text("b")])
    assert message == {"role": "user", "content": [text("a"), text("b")]}


def test_assistant_with_text_builds_an_assistant_message() -> None:
    assert assistant("Done.") == {"role": "assistant", "content": "Done."}


def test_tool_use_builds_the_api_block() -> None:
    assert tool_use("toolu_1", "read_file", {"path": "a.py"}) == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "read_file",
        "input": {"path": "a.py"},
    }


def test_tool_use_copies_its_input() -> None:
    arguments = {"path": "a.py"}
    block = tool_use("toolu_1", "read_file", arguments)
    arguments["path"] = "changed.py"
    assert block["input"] == {"path": "a.py"}


def test_tool_result_builds_the_api_block_without_is_error_by_default() -> None:
    assert tool_result("toolu_1", "ok") == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "ok",
    }


def test_tool_result_marks_errors() -> None:
    assert tool_result("toolu_1", "no such file", is_error=True)["is_error"] is True


def test_assistant_from_an_sdk_message_gives_api_dicts_without_none_fields() -> None:
    reply = Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=[
            TextBlock(type="text", text="Reading.", citations=None),
            ToolUseBlock(type="tool_use", id="toolu_1", name="read_file", input={"path": "a.py"}),
        ],
        stop_reason="tool_use",
        stop_sequence=None,
        usage=Usage(input_tokens=10, output_tokens=5),
    )
    assert assistant(reply) == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
        ],
    }


def test_blocks_turns_string_content_into_one_text_block() -> None:
    assert blocks(user("hi")) == [text("hi")]


def test_tool_uses_and_tool_results_pick_their_blocks() -> None:
    conversation = tool_conversation()
    assert [b["id"] for b in tool_uses(conversation[1])] == ["toolu_1", "toolu_2"]
    assert [b["tool_use_id"] for b in tool_results(conversation[4])] == ["toolu_3"]


def test_text_of_joins_only_the_text_blocks() -> None:
    message = assistant([text("a"), tool_use("toolu_1", "ls", {}), text("b")])
    assert text_of(message) == "ab"


# --- validate: valid conversations ------------------------------------------------------


def test_a_valid_multi_turn_tool_conversation_has_no_problems() -> None:
    assert validate(tool_conversation()) == []


def test_a_single_prompt_is_valid() -> None:
    assert validate([user("hi")]) == []


def test_a_conversation_ending_with_the_assistant_is_valid() -> None:
    assert validate([user("hi"), assistant("hello")]) == []


# --- validate: each problem, with its index and tool id ---------------------------------


def test_empty_conversation_is_reported() -> None:
    assert found([]) == [("empty_conversation", 0, None)]


def test_unknown_role_is_reported_at_its_message() -> None:
    assert found([user("hi"), {"role": "system", "content": "be nice"}]) == [("bad_role", 1, None)]


def test_conversation_starting_with_the_assistant_is_reported() -> None:
    assert found([assistant("Hello!"), user("hi")]) == [("first_not_user", 0, None)]


def test_two_user_messages_in_a_row_are_reported_at_the_second() -> None:
    assert found([user("hi"), user("anyone there?")]) == [("roles_not_alternating", 1, None)]


def test_two_assistant_messages_in_a_row_are_reported_at_the_second() -> None:
    conversation = [user("hi"), assistant("hello"), assistant("again")]
    assert found(conversation) == [("roles_not_alternating", 2, None)]


@pytest.mark.parametrize("empty", ["", []])
def test_empty_content_is_reported_at_its_message(empty: Any) -> None:
    conversation = [user("hi"), {"role": "assistant", "content": empty}, user("hm?")]
    assert found(conversation) == [("empty_content", 1, None)]


def test_whitespace_only_string_content_is_reported() -> None:
    assert found([user("  \n\t")]) == [("empty_text", 0, None)]


def test_whitespace_only_text_block_is_reported() -> None:
    conversation = [user("hi"), assistant([text(" "), tool_use("toolu_1", "ls", {})])]
    conversation.append(user([tool_result("toolu_1", "a.py")]))
    assert found(conversation) == [("empty_text", 1, None)]


def test_tool_use_unanswered_at_the_end_is_reported_with_its_id() -> None:
    conversation = [user("list files"), assistant([tool_use("toolu_1", "ls", {})])]
    problems = validate(conversation)
    assert [(p.kind, p.index, p.tool_use_id) for p in problems] == [
        ("tool_use_unanswered", 1, "toolu_1")
    ]
    assert "the conversation ends" in problems[0].detail


def test_tool_use_the_next_message_does_not_answer_is_reported_with_its_id() -> None:
    conversation = [
        user("read both"),
        assistant(
            [tool_use("toolu_1", "read", {"p": "a"}), tool_use("toolu_2", "read", {"p": "b"})]
        ),
        user([tool_result("toolu_1", "A")]),
    ]
    problems = validate(conversation)
    assert [(p.kind, p.index, p.tool_use_id) for p in problems] == [
        ("tool_use_unanswered", 1, "toolu_2")
    ]
    assert "messages[2]" in problems[0].detail


def test_tool_use_answered_only_two_messages_later_is_unanswered() -> None:
    conversation = [
        user("list"),
        assistant([tool_use("toolu_1", "ls", {})]),
        user("wait, first tell me a joke"),
        assistant("No."),
        user([tool_result("toolu_1", "a.py")]),
    ]
    assert found(conversation) == [
        ("tool_use_unanswered", 1, "toolu_1"),
        ("tool_result_orphan", 4, "toolu_1"),
    ]


def test_tool_result_without_its_tool_use_is_reported_as_orphan() -> None:
    conversation = [user("hi"), assistant("hello"), user([tool_result("toolu_9", "???")])]
    assert found(conversation) == [("tool_result_orphan", 2, "toolu_9")]


def test_tool_result_in_the_first_message_is_an_orphan() -> None:
    assert found([user([tool_result("toolu_9", "???")])]) == [("tool_result_orphan", 0, "toolu_9")]


def test_tool_result_after_text_in_the_same_message_is_reported() -> None:
    conversation = [
        user("list"),
        assistant([tool_use("toolu_1", "ls", {})]),
        user([text("here you go"), tool_result("toolu_1", "a.py")]),
    ]
    assert found(conversation) == [("tool_result_after_text", 2, "toolu_1")]


def test_tool_id_reused_in_a_later_turn_is_reported_where_it_reappears() -> None:
    conversation = [
        user("list twice"),
        assistant([tool_use("toolu_1", "ls", {})]),
        user([tool_result("toolu_1", "a.py")]),
        assistant([tool_use("toolu_1", "ls", {})]),
        user([tool_result("toolu_1", "a.py")]),
    ]
    assert found(conversation) == [("duplicate_tool_id", 3, "toolu_1")]


def test_two_tool_results_for_one_tool_use_are_reported() -> None:
    conversation = [
        user("list"),
        assistant([tool_use("toolu_1", "ls", {})]),
        user([tool_result("toolu_1", "a.py"), tool_result("toolu_1", "b.py")]),
    ]
    assert found(conversation) == [("duplicate_tool_id", 2, "toolu_1")]


def test_tool_use_in_a_user_message_is_reported() -> None:
    assert found([user([tool_use("toolu_1", "ls", {})])]) == [("tool_use_in_user", 0, "toolu_1")]


def test_tool_result_in_an_assistant_message_is_reported() -> None:
    conversation = [user("hi"), assistant([tool_result("toolu_1", "x")])]
    assert found(conversation) == [("tool_result_in_assistant", 1, "toolu_1")]


def test_every_problem_is_reported_not_just_the_first() -> None:
    conversation = [assistant("hi"), assistant(""), user([tool_result("toolu_9", "x")])]
    assert found(conversation) == [
        ("first_not_user", 0, None),
        ("empty_content", 1, None),
        ("roles_not_alternating", 1, None),
        ("tool_result_orphan", 2, "toolu_9"),
    ]


def test_problem_reads_as_where_which_tool_and_what() -> None:
    problem = Problem("tool_result_orphan", 4, "tool_result has no tool_use", "toolu_9")
    assert str(problem) == "messages[4] (toolu_9): tool_result has no tool_use"


# --- ensure_valid -----------------------------------------------------------------------


def test_ensure_valid_is_quiet_for_a_valid_conversation() -> None:
    ensure_valid(tool_conversation())


def test_ensure_valid_raises_listing_every_problem() -> None:
    conversation = [user("hi"), user([tool_result("toolu_9", "x")])]
    with pytest.raises(InvalidConversation) as raised:
        ensure_valid(conversation)
    assert raised.value.problems == validate(conversation)
    assert "2 problem(s)" in str(raised.value)
    for problem in raised.value.problems:
        assert f"  - {problem}" in str(raised.value)


def test_invalid_conversation_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        ensure_valid([])


# --- api_rounds -------------------------------------------------------------------------


def test_api_rounds_group_each_reply_with_what_follows_it() -> None:
    c = tool_conversation()
    assert api_rounds(c) == [[c[0]], [c[1], c[2]], [c[3], c[4]], [c[5], c[6]]]


def test_api_rounds_concatenated_give_back_the_same_messages() -> None:
    conversation = tool_conversation()
    flat = [message for round_ in api_rounds(conversation) for message in round_]
    assert len(flat) == len(conversation)
    assert all(a is b for a, b in zip(flat, conversation, strict=True))


def test_every_round_after_the_first_starts_with_an_assistant_message() -> None:
    rounds = api_rounds(tool_conversation())
    assert all(round_[0]["role"] == "assistant" for round_ in rounds[1:])


def test_a_tool_use_and_its_result_are_in_the_same_round() -> None:
    for round_ in api_rounds(tool_conversation()):
        asked = {u["id"] for m in round_ for u in tool_uses(m)}
        answered = {r["tool_use_id"] for m in round_ for r in tool_results(m)}
        assert asked == answered


def test_api_rounds_of_nothing_is_nothing() -> None:
    assert api_rounds([]) == []


def test_sdk_block_objects_appended_from_a_reply_validate_like_their_json() -> None:
    # The SDK's own examples append `response.content` as is; that must not crash validate.
    from harness.model import ScriptedModel, reply, tool_call

    model = ScriptedModel([reply("Reading.", tool_calls=[tool_call("read_file", path="a.py")])])
    answer = model.create(model="claude-sonnet-4-6", max_tokens=100, messages=[user("hi")])
    use_id = answer.content[1].id  # type: ignore[union-attr]
    conversation = [
        user("hi"),
        {"role": "assistant", "content": answer.content},
        user([tool_result(use_id, "print(1)")]),
    ]
    assert validate(conversation) == []
    conversation.pop()
    assert [p.kind for p in validate(conversation)] == ["tool_use_unanswered"]


def test_a_block_that_is_neither_a_dict_nor_an_sdk_block_is_a_clear_problem() -> None:
    problems = validate([{"role": "user", "content": [42]}])
    assert [p.kind for p in problems] == ["bad_block"]
    assert "int" in problems[0].detail


def test_an_empty_final_assistant_message_is_allowed_as_the_api_allows_it() -> None:
    assert validate([user("hi"), {"role": "assistant", "content": ""}]) == []
    problems = validate([user("hi"), {"role": "assistant", "content": ""}, user("again")])
    assert [p.kind for p in problems] == ["empty_content"]
