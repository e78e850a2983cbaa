"""Chapter 12's exercise checks: the solutions pass, the stubs and plausible slips do not."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace

from pydantic import ValidationError

from harness import messages as m
from harness.exercises import ch12
from harness.loop import ModelRequest
from harness.planning import TodoList, list_in, parse_checklist, with_reminder
from harness.planning.plugin import TODO_END, TODO_HEADING
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch12")


def stub(*args: object) -> None:
    raise NotImplementedError


def remind(request: ModelRequest, reminder: str) -> ModelRequest:
    """The solution, typed: what the slips below start from."""
    out: ModelRequest = solutions.remind(request, reminder)
    return out


def latest_list(conversation: list[m.MessageDict]) -> TodoList | None:
    """The solution, typed."""
    out: TodoList | None = solutions.latest_list(conversation)
    return out


def test_the_solutions_pass() -> None:
    assert ch12.check_remind(solutions.remind)
    assert ch12.check_latest_list(solutions.latest_list)


def test_the_stubs_are_told_not_yet_with_a_hint() -> None:
    for verdict in (ch12.check_remind(stub), ch12.check_latest_list(stub)):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)


def test_the_stubs_hear_the_first_case_and_where_the_recipe_is() -> None:
    for n, verdict in enumerate((ch12.check_remind(stub), ch12.check_latest_list(stub)), start=1):
        assert "first case: " in str(verdict)
        assert f"stuck? ch12.hint({n}) shows one way" in str(verdict)


EQUIVALENT_REMIND: dict[str, str] = {}  # mutants of remind that behave like it, and why

EQUIVALENT_LATEST: dict[str, str] = {}  # mutants of latest_list that behave like it, and why


def test_every_mutant_of_the_remind_solution_is_caught() -> None:
    assert_exercise_caught("ch12", 1, EQUIVALENT_REMIND)


def test_every_mutant_of_the_latest_list_solution_is_caught() -> None:
    assert_exercise_caught("ch12", 2, EQUIVALENT_LATEST)


# -- the cases themselves ------------------------------------------------------------------------


def test_the_remind_cases_are_requests_the_api_accepts() -> None:
    for what, _, request, text in ch12.remind_cases():
        if request.messages:
            assert not m.validate(with_reminder(request, text).messages), what


def test_the_conversations_are_valid_and_hold_each_kind_of_answer() -> None:
    found = []
    for what, conversation in [*ch12.list_cases(), *ch12.session_cases()]:
        assert not m.validate(conversation), what
        found.append(list_in(conversation))
    assert None in found
    put_back = [
        f for f in found if f is not None and all(i.activeForm == i.content for i in f.items)
    ]
    written = [f for f in found if f is not None and f not in put_back]
    assert len(put_back) >= 5 and len(written) >= 5


def test_a_reminder_after_the_breakpoint_leaves_the_next_request_its_cache_read() -> None:
    read, total = ch12.cache_reads(with_reminder)
    assert read == ch12.cache_reads(None)[0]
    assert read > total * 0.9


# -- exercise 1: put the reminder where the cache survives it ------------------------------------


def test_adding_to_the_last_message_in_place_is_rejected() -> None:
    def slip(request: ModelRequest, reminder: str) -> ModelRequest:
        if request.messages and request.messages[-1]["role"] == "user":
            last = request.messages[-1]
            last["content"] = [*m.blocks(last), m.text(reminder)]
        return request

    verdict = ch12.check_remind(slip)
    assert not verdict and "the request you were given changed" in str(verdict)


def test_changing_the_agents_own_prompt_is_rejected() -> None:
    """Without prompt caching, the request's messages are the agent's own dicts."""

    def slip(request: ModelRequest, reminder: str) -> ModelRequest:
        messages = list(request.messages)
        if messages and messages[-1]["role"] == "user":
            last = messages[-1]
            if isinstance(last["content"], str):
                last["content"] = [m.text(last["content"]), m.text(reminder)]
                return replace(request, messages=messages)
        return remind(request, reminder)

    verdict = ch12.check_remind(slip)
    assert not verdict and "the agent's own conversation changed" in str(verdict)


def test_the_reminder_as_a_message_of_its_own_is_rejected() -> None:
    def slip(request: ModelRequest, reminder: str) -> ModelRequest:
        return replace(request, messages=[*request.messages, m.user([m.text(reminder)])])

    verdict = ch12.check_remind(slip)
    assert not verdict and "not in a message of its own" in str(verdict)


def test_the_reminder_before_the_cache_breakpoint_is_rejected() -> None:
    def slip(request: ModelRequest, reminder: str) -> ModelRequest:
        messages = list(request.messages)
        if not messages or messages[-1]["role"] != "user":
            return request
        blocks = m.blocks(messages[-1])
        messages[-1] = {**messages[-1], "content": [*blocks[:-1], m.text(reminder), blocks[-1]]}
        return replace(request, messages=messages)

    verdict = ch12.check_remind(slip)
    assert not verdict and "the last block should be m.text(reminder)" in str(verdict)


def test_moving_the_breakpoint_onto_the_reminder_is_rejected() -> None:
    def slip(request: ModelRequest, reminder: str) -> ModelRequest:
        messages = copy.deepcopy(request.messages)
        if not messages or messages[-1]["role"] != "user":
            return request
        blocks = m.blocks(messages[-1])
        control = blocks[-1].pop("cache_control", None)
        added = (
            m.text(reminder) if control is None else {**m.text(reminder), "cache_control": control}
        )
        messages[-1]["content"] = [*blocks, added]
        return replace(request, messages=messages)

    verdict = ch12.check_remind(slip)
    assert not verdict and "nothing more" in str(verdict)


def test_a_reminder_that_would_change_the_cached_prefix_is_caught_by_the_simulator() -> None:
    """A copy that passes every case but one breakpoint's prefix: the next request reads less."""

    def slip(request: ModelRequest, reminder: str) -> ModelRequest:
        reminded = remind(request, reminder)
        if len(reminded.messages) < 7:  # only the session of three and four turns
            return reminded
        messages = copy.deepcopy(reminded.messages)
        blocks = m.blocks(messages[-1])
        control = blocks[-2].pop("cache_control")
        blocks[-1]["cache_control"] = control
        messages[-1]["content"] = blocks
        return replace(reminded, messages=messages)

    verdict = ch12.check_remind(slip)
    assert not verdict and "the reminder changed the prefix that was cached" in str(verdict)


def test_forgetting_a_string_prompt_is_rejected() -> None:
    def slip(request: ModelRequest, reminder: str) -> ModelRequest:
        messages = list(request.messages)
        if not messages or messages[-1]["role"] != "user":
            return request
        content = [*messages[-1]["content"], m.text(reminder)]  # a string spreads to letters
        messages[-1] = {**messages[-1], "content": content}
        return replace(request, messages=messages)

    verdict = ch12.check_remind(slip)
    assert not verdict and "without prompt caching" in str(verdict)


def test_a_new_request_that_drops_the_system_prompt_and_tools_is_rejected() -> None:
    def slip(request: ModelRequest, reminder: str) -> ModelRequest:
        reminded = remind(request, reminder)
        return ModelRequest(request.model, request.max_tokens, reminded.messages)

    verdict = ch12.check_remind(slip)
    assert not verdict and "the copy's system differs" in str(verdict)


def test_adding_to_the_models_message_is_rejected() -> None:
    def slip(request: ModelRequest, reminder: str) -> ModelRequest:
        messages = list(request.messages)
        if not messages:
            return request
        messages[-1] = {**messages[-1], "content": [*m.blocks(messages[-1]), m.text(reminder)]}
        return replace(request, messages=messages)

    verdict = ch12.check_remind(slip)
    assert not verdict and "the last message is the model's" in str(verdict)


def test_crashing_on_a_request_with_no_messages_is_rejected() -> None:
    def slip(request: ModelRequest, reminder: str) -> ModelRequest:
        if request.messages[-1]["role"] != "user":  # IndexError with no messages
            return request
        return remind(request, reminder)

    verdict = ch12.check_remind(slip)
    assert not verdict and "no messages" in str(verdict) and "IndexError" in str(verdict)


def test_strange_returns_come_back_as_not_yet() -> None:
    def answering(odd: object) -> Callable[[ModelRequest, str], object]:
        return lambda request, reminder: odd

    odds: list[object] = [None, "request", {"messages": []}]
    for odd in odds:
        verdict = ch12.check_remind(answering(odd))
        assert not verdict and "return a ModelRequest" in str(verdict)

    def odd_content(request: ModelRequest, reminder: str) -> ModelRequest:
        if not request.messages or request.messages[-1]["role"] != "user":
            return request
        return replace(request, messages=[*request.messages[:-1], {"role": "user", "content": 7}])

    assert not ch12.check_remind(odd_content)


def test_calling_the_packages_with_reminder_is_refused() -> None:
    def shortcut(request: ModelRequest, reminder: str) -> ModelRequest:
        return with_reminder(request, reminder)

    verdict = ch12.check_remind(shortcut)
    assert not verdict and "with_reminder" in str(verdict)


# -- exercise 2: get the list back ---------------------------------------------------------------


def _checklist(block: dict[str, object]) -> TodoList | None:
    text = str(block.get("text", ""))
    if TODO_HEADING not in text:
        return None
    return parse_checklist(text.split(TODO_HEADING)[-1].split(TODO_END)[0])


def _write(block: dict[str, object], refused: set[str]) -> TodoList | None:
    if block.get("type") != "tool_use" or block.get("name") != "todo_write":
        return None
    if block["id"] in refused:
        return None
    try:
        return TodoList.of(block["input"]["todos"])  # type: ignore[index]
    except ValidationError:
        return None


def _refused(conversation: list[m.MessageDict]) -> set[str]:
    return {
        str(b["tool_use_id"])
        for msg in conversation
        for b in m.tool_results(msg)
        if b.get("is_error")
    }


def test_the_first_write_instead_of_the_latest_is_rejected() -> None:
    def slip(conversation: list[m.MessageDict]) -> TodoList | None:
        for msg in conversation:
            for block in m.blocks(msg):
                found = _write(block, _refused(conversation)) or _checklist(block)
                if found is not None:
                    return found
        return None

    verdict = ch12.check_latest_list(slip)
    assert not verdict and "two writes (the second, later, wins)" in str(verdict)


def test_the_blocks_of_a_reply_read_from_its_start_are_rejected() -> None:
    def slip(conversation: list[m.MessageDict]) -> TodoList | None:
        for msg in reversed(conversation):
            for block in m.blocks(msg):
                found = _write(block, _refused(conversation)) or _checklist(block)
                if found is not None:
                    return found
        return None

    verdict = ch12.check_latest_list(slip)
    assert not verdict and "both taken" in str(verdict)


def test_a_declined_write_taken_as_the_list_is_rejected() -> None:
    def slip(conversation: list[m.MessageDict]) -> TodoList | None:
        for msg in reversed(conversation):
            for block in reversed(m.blocks(msg)):
                found = _write(block, set()) or _checklist(block)
                if found is not None:
                    return found
        return None

    verdict = ch12.check_latest_list(slip)
    assert not verdict and "declined" in str(verdict)


def test_is_error_false_read_as_an_error_is_rejected() -> None:
    def slip(conversation: list[m.MessageDict]) -> TodoList | None:
        refused = {
            str(b["tool_use_id"])
            for msg in conversation
            for b in m.tool_results(msg)
            if "is_error" in b
        }
        for msg in reversed(conversation):
            for block in reversed(m.blocks(msg)):
                found = _write(block, refused) or _checklist(block)
                if found is not None:
                    return found
        return None

    assert not ch12.check_latest_list(slip)


def test_an_input_taken_without_validating_it_is_rejected() -> None:
    def slip(conversation: list[m.MessageDict]) -> TodoList | None:
        refused = _refused(conversation)
        for msg in reversed(conversation):
            for block in reversed(m.blocks(msg)):
                taken = block["type"] == "tool_use" and block["id"] not in refused
                if taken and block["name"] == "todo_write":
                    return TodoList.of(block["input"]["todos"])  # raises on an edited input
                if (found := _checklist(block)) is not None:
                    return found
        return None

    verdict = ch12.check_latest_list(slip)
    assert not verdict and "edited by hand" in str(verdict) and "ValidationError" in str(verdict)


def test_a_checklist_put_back_left_unread_is_rejected() -> None:
    def slip(conversation: list[m.MessageDict]) -> TodoList | None:
        for msg in reversed(conversation):
            for block in reversed(m.blocks(msg)):
                if (found := _write(block, _refused(conversation))) is not None:
                    return found
        return None

    verdict = ch12.check_latest_list(slip)
    assert not verdict and "compacted conversation" in str(verdict) and "None" in str(verdict)


def test_writes_first_and_checklists_only_when_there_is_none_is_rejected() -> None:
    def slip(conversation: list[m.MessageDict]) -> TodoList | None:
        blocks = [b for msg in reversed(conversation) for b in reversed(m.blocks(msg))]
        for block in blocks:
            if (found := _write(block, _refused(conversation))) is not None:
                return found
        for block in blocks:
            if (found := _checklist(block)) is not None:
                return found
        return None

    verdict = ch12.check_latest_list(slip)
    assert not verdict and "after the last write" in str(verdict)


def test_a_checklist_read_as_items_with_their_active_form_gets_a_nudge() -> None:
    def slip(conversation: list[m.MessageDict]) -> TodoList | None:
        found = latest_list(conversation)
        if found is None:
            return None
        items = [i.model_copy(update={"activeForm": i.activeForm + " now"}) for i in found.items]
        return TodoList(tuple(items))

    verdict = ch12.check_latest_list(slip)
    assert not verdict and "activeForm" in str(verdict)


def test_changing_the_conversation_is_rejected() -> None:
    def slip(conversation: list[m.MessageDict]) -> TodoList | None:
        found = latest_list(conversation)
        conversation.append(m.assistant("Done."))
        return found

    verdict = ch12.check_latest_list(slip)
    assert not verdict and "the conversation changed" in str(verdict)


def test_a_list_of_dicts_instead_of_a_todo_list_is_rejected() -> None:
    def slip(conversation: list[m.MessageDict]) -> object:
        found = latest_list(conversation)
        return None if found is None else found.as_json()

    verdict = ch12.check_latest_list(slip)
    assert not verdict and "return a TodoList or None" in str(verdict)


def test_calling_the_packages_list_in_is_refused() -> None:
    def shortcut(conversation: list[m.MessageDict]) -> TodoList | None:
        return list_in(conversation)

    verdict = ch12.check_latest_list(shortcut)
    assert not verdict and "list_in" in str(verdict)
