"""Generated inputs never crash the todo list: properties over the tool, the parsers and
``list_in``.

* whatever a model sends ``todo_write`` (any JSON: wrong types, missing fields, huge strings,
  unicode, nested junk, many items in progress), a real run goes on: one result for the call,
  and the list is the new one if it validates, else the old one;
* the checklist and progress-file parsers raise nothing but ``ProgressFileError``;
* ``list_in`` reads any valid conversation without raising;
* a valid list's checklist reads back with the same content and status.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.model import ScriptedModel, reply, tool_call
from harness.planning import (
    MAX_TODOS,
    RESULT_TEXT,
    TODO_TOOL,
    Planning,
    Progress,
    ProgressFile,
    ProgressFileError,
    TodoItem,
    TodoList,
    TodoWriteInput,
    list_in,
    parse_checklist,
    parse_progress,
)
from harness.planning.plugin import TODO_END, TODO_HEADING
from tests.test_properties import conversations

RUNS = settings(max_examples=60, deadline=None)
"""Each example is a real three-call run: kept modest, the whole file runs in seconds."""
PROPERTY = settings(max_examples=150, deadline=None)

STATUSES = ["pending", "in_progress", "completed"]

# -- what a model might send -----------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
# Text as a conversation or a UTF-8 file can hold it: no lone surrogates (a conversation with
# one is invalid, and the loader repairs it; see test_planning.py for parse_checklist on one).
huge_text = st.builds(lambda c, n: c * n, st.characters(codec="utf-8"), st.integers(400, 3_000))
json_values = st.recursive(
    scalars | huge_text,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
statuses = st.sampled_from(STATUSES) | st.text(max_size=12) | scalars
texts = st.text(max_size=40) | huge_text | scalars


@st.composite
def near_items(draw: st.DrawFn) -> Any:
    """An item that is often valid, often nearly: a field missing, of a wrong type, blank,
    an extra one, or not an object at all."""
    item: dict[str, Any] = {
        "content": draw(st.text(min_size=1, max_size=40) | texts),
        "status": draw(st.sampled_from(STATUSES) | statuses),
        "activeForm": draw(st.text(min_size=1, max_size=40) | texts),
    }
    for key in draw(st.lists(st.sampled_from(list(item)), max_size=2)):
        item.pop(key, None)
    if draw(st.integers(0, 9)) == 0:
        item[draw(st.text(min_size=1, max_size=10))] = draw(json_values)
    return item if draw(st.integers(0, 19)) else draw(json_values)


many_items = st.lists(
    st.fixed_dictionaries(
        {
            "content": st.sampled_from(["Read", "Fix", "Test"]),
            "status": st.sampled_from(STATUSES),
            "activeForm": st.just("Working"),
        }
    ),
    min_size=95,
    max_size=110,
)
likely_items = st.fixed_dictionaries(
    {
        "content": st.text(min_size=1, max_size=60),
        "status": st.sampled_from(STATUSES),
        "activeForm": st.text(min_size=1, max_size=60),
    }
)
todo_inputs = st.one_of(
    st.builds(lambda todos: {"todos": todos}, st.lists(likely_items, max_size=6)),
    st.builds(lambda todos: {"todos": todos}, st.lists(near_items(), max_size=8)),
    st.builds(lambda todos: {"todos": todos}, many_items),  # over the maximum, many in progress
    st.builds(
        lambda todos, extra: {"todos": todos, **extra},
        st.lists(near_items(), max_size=4),
        st.dictionaries(st.text(min_size=1, max_size=8), json_values, max_size=2),
    ),
    st.dictionaries(st.text(max_size=12), json_values, max_size=4),
    st.builds(lambda value: {"todos": value}, json_values),
)

FIRST = {
    "todos": [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
    ]
}


def validated(value: dict[str, Any]) -> TodoList | None:
    try:
        return TodoList(tuple(TodoWriteInput.model_validate(value).todos))
    except ValidationError:
        return None


@RUNS
@given(todo_inputs)
def test_any_todo_write_input_gets_one_result_and_leaves_a_valid_list(sent: dict[str, Any]) -> None:
    sent = json.loads(json.dumps(sent))  # what comes back from the wire
    planning = Planning()
    clock = FakeClock()
    model = ScriptedModel(
        [
            reply(tool_calls=[tool_call(TODO_TOOL, FIRST)]),
            reply(tool_calls=[tool_call(TODO_TOOL, copy.deepcopy(sent))]),
            reply("Carrying on."),
        ],
        clock=clock,
    )
    agent = Agent(model, tools=planning.tools(), plugins=[planning], clock=clock, max_turns=6)
    events = list(agent.run("Fix the bug."))  # never raises
    assert type(events[-1]).__name__ == "TurnEnded"
    assert m.validate(agent.messages) == []
    calls = [u for msg in agent.messages for u in m.tool_uses(msg)][1:]
    answers = [b for msg in agent.messages for b in m.tool_results(msg)][1:]
    expected = validated(sent)
    if not calls:  # a reply too long for max_tokens is cut, and its call dropped (as the API)
        expected = None
    else:
        assert len(calls) == 1 and calls[0]["input"] == sent
        assert [b["tool_use_id"] for b in answers] == [calls[0]["id"]]  # one answer
    event("cut at max_tokens" if not calls else "refused" if expected is None else "taken")
    if expected is None:  # refused: an error the model reads, the old list stays
        if answers:
            assert answers[0].get("is_error") is True
            assert "Invalid input for tool 'todo_write'" in str(answers[0]["content"])
        assert planning.todos.current == TodoList.of(FIRST["todos"])
        assert planning.todos.writes == 1
    else:
        assert answers[0].get("content") == RESULT_TEXT and not answers[0].get("is_error")
        assert planning.todos.current == expected
        assert planning.todos.writes == 2
    assert len(planning.todos.current.items) <= MAX_TODOS
    assert planning.todos.current.count("in_progress") <= 1
    if calls:  # the model heard the answer, and the run went on to its end
        assert m.text_of(agent.messages[-1]) == "Carrying on."


# -- the parsers -------------------------------------------------------------------------------

marks = st.sampled_from([" ", "x", "X", "~", "?", "", "  ", "[", "]"])
checklist_lines = st.builds(
    lambda lead, mark, body: f"{lead}- [{mark}] {body}",
    st.sampled_from(["", "  ", "\t", "-"]),
    marks,
    st.text(max_size=30) | huge_text,
)
other_lines = st.sampled_from(
    ["# Progress", "Task: migrate", "## Steps", "## Notes", "(none yet)", "- [", "- [x]", ""]
) | st.text(max_size=40)
documents = st.lists(checklist_lines | other_lines, max_size=30).map("\n".join) | st.text()


@PROPERTY
@given(documents)
def test_parse_checklist_never_raises_and_gives_a_valid_list(text: str) -> None:
    parsed = parse_checklist(text)
    assert len(parsed.items) <= MAX_TODOS
    assert parsed.count("in_progress") <= 1
    TodoWriteInput.model_validate({"todos": parsed.as_json()})  # a list the tool would take


@PROPERTY
@given(documents)
def test_parse_progress_raises_only_progress_file_error(text: str) -> None:
    try:
        progress = parse_progress(text)
    except ProgressFileError as error:
        assert str(error)
        return
    assert progress.todos.items
    assert progress.todos.count("in_progress") <= 1


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=2_000) | documents.map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_a_progress_file_of_any_bytes_reads_or_raises_progress_file_error(
    tmp_path_factory: Any, raw: bytes
) -> None:
    path = Path(tmp_path_factory.mktemp("progress")) / "claude-progress.md"
    path.write_bytes(raw)
    try:
        found = ProgressFile(path).read()
    except ProgressFileError:
        return
    assert isinstance(found, Progress) and found.todos.items


# -- list_in over generated conversations -------------------------------------------------------

writer_names = st.sampled_from([TODO_TOOL, "TodoWrite", "read_file", "bash"])
pinned_texts = st.builds(
    lambda body, end: f"{TODO_HEADING}\n{body}\n{TODO_END if end else ''}",
    documents,
    st.booleans(),
)


small_inputs = st.builds(lambda todos: {"todos": todos}, st.lists(near_items(), max_size=4)) | (
    st.dictionaries(st.text(max_size=8), scalars, max_size=3)
)


@st.composite
def planning_conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Valid conversations whose calls are often todo writes with generated inputs, and whose
    texts are sometimes a pinned checklist (what a compaction puts back)."""
    messages = draw(conversations())
    for message in messages:
        if not isinstance(message["content"], list):
            continue
        for block in message["content"]:
            if block["type"] == "tool_use":
                block["name"] = draw(writer_names)
                block["input"] = draw(small_inputs | st.just(FIRST))
            elif block["type"] == "text" and draw(st.integers(0, 3)) == 0:
                block["text"] = draw(pinned_texts)
    wire: list[dict[str, Any]] = json.loads(json.dumps(messages))
    return wire


@settings(max_examples=80, deadline=None)
@given(planning_conversations())
def test_list_in_never_raises_on_a_valid_conversation(conversation: list[dict[str, Any]]) -> None:
    if m.validate(conversation):  # a generated text made it invalid (blank): not this test's
        return
    found = list_in(conversation)
    if found is not None:
        assert found.count("in_progress") <= 1
        assert len(found.items) <= MAX_TODOS
    restored = Planning().restore(conversation)
    assert restored == (found if found is not None else TodoList())


# -- render, then read back ----------------------------------------------------------------------

one_line = st.text(min_size=1, max_size=120).filter(lambda t: bool(t.split()))


@st.composite
def valid_lists(draw: st.DrawFn) -> TodoList:
    n = draw(st.integers(0, 30))
    busy = draw(st.integers(-1, n - 1)) if n else -1
    items = [
        TodoItem(
            content=draw(one_line),
            activeForm=draw(one_line),
            status="in_progress" if i == busy else draw(st.sampled_from(["pending", "completed"])),
        )
        for i in range(n)
    ]
    return TodoList(tuple(items))


@PROPERTY
@given(valid_lists())
def test_render_then_parse_checklist_keeps_content_and_status(todo_list: TodoList) -> None:
    back = parse_checklist(todo_list.render())
    assert [(i.content, i.status) for i in back.items] == [
        (i.content, i.status) for i in todo_list.items
    ]
    assert all(i.activeForm == i.content for i in back.items)
