"""What the live API refuses, the scripted model refuses too, with a 400 in the API's words.

Each class of request the API turns down gets a property: inputs of the class, drawn at
random, are refused with ``anthropic.BadRequestError`` (and, for the conversation rules,
``messages.validate`` names the problem at the right message and block), while the valid
variants next to them are still accepted.
"""

from __future__ import annotations

import copy
import os
import string
import typing
from typing import Any

import anthropic
import pytest
from anthropic.types import ContentBlockParam, Message
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from harness.messages import (
    CONTENT_BLOCK_TYPES,
    TOOL_NAME_PATTERN,
    TOOL_RESULT_CONTENT_TYPES,
    assistant,
    is_valid_tool_name,
    text,
    tool_result,
    tool_use,
    tool_uses,
    user,
    validate,
)
from harness.model import DEFAULT_MODEL, ScriptedModel, reply
from harness.tools import Tool, ToolContext, tool
from tests.test_properties import conversations

PROPERTY = settings(max_examples=100, deadline=None)
MODEL = DEFAULT_MODEL  # the course's model
Conversation = list[dict[str, Any]]

ALLOWED = string.ascii_letters + string.digits + "_-"
OBJECT_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


def custom_tool(name: Any, schema: Any = OBJECT_SCHEMA) -> dict[str, Any]:
    return {"name": name, "description": "Does a thing.", "input_schema": copy.deepcopy(schema)}


def send(messages: Conversation | None = None, **kwargs: Any) -> Message:
    kwargs.setdefault("max_tokens", 1024)
    model = ScriptedModel([reply("ok")])
    return model.create(model=MODEL, messages=messages or [user("hi")], **kwargs)


def refusal(messages: Conversation | None = None, **kwargs: Any) -> str:
    """The API's message for a request the scripted model must refuse with a 400."""
    with pytest.raises(anthropic.BadRequestError) as raised:
        send(messages, **kwargs)
    assert raised.value.status_code == 400
    body: Any = raised.value.body
    assert body["error"]["type"] == "invalid_request_error"
    message: str = body["error"]["message"]
    return message


def problems(messages: Conversation) -> list[tuple[str, int, int | None]]:
    return [(p.kind, p.index, p.block) for p in validate(messages)]


# --- strategies -----------------------------------------------------------------------------

valid_names = st.text(alphabet=ALLOWED, min_size=1, max_size=128)


@st.composite
def names_with_a_stray_character(draw: st.DrawFn) -> str:
    stray = draw(st.characters(exclude_characters=ALLOWED, exclude_categories=("Cs",)))
    before = draw(st.text(alphabet=ALLOWED, max_size=40))
    after = draw(st.text(alphabet=ALLOWED, max_size=40))
    return before + stray + after


bad_names = st.one_of(
    names_with_a_stray_character(),
    st.text(alphabet=ALLOWED, min_size=129, max_size=300),  # too long
    st.just(""),
)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=10),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
not_objects = json_values.filter(lambda v: not isinstance(v, dict))

unknown_types = st.one_of(
    st.text(max_size=30).filter(lambda t: t not in CONTENT_BLOCK_TYPES),
    st.sampled_from(["input_text", "tool_call", "function_call", "Text", "image_url"]),
)


@st.composite
def with_a_lone_surrogate(draw: st.DrawFn) -> str:
    """Non-blank text with one surrogate code point (D800-DFFF) put in at a random place."""
    body = draw(st.text(min_size=1, max_size=30).filter(str.strip))
    at = draw(st.integers(min_value=0, max_value=len(body)))
    surrogate = chr(draw(st.integers(min_value=0xD800, max_value=0xDFFF)))
    return body[:at] + surrogate + body[at:]


def block_spots(messages: Conversation) -> list[tuple[int, int]]:
    """(message, block) of every block in a list-content message."""
    return [
        (i, j)
        for i, m in enumerate(messages)
        if isinstance(m["content"], list)
        for j in range(len(m["content"]))
    ]


# --- tool names -----------------------------------------------------------------------------


def test_a_tool_name_with_a_space_is_refused_with_a_400() -> None:
    message = refusal(tools=[custom_tool("read file")])
    assert message == f"tools.0.custom.name: String should match pattern '{TOOL_NAME_PATTERN}'"


def test_the_pattern_is_the_one_the_api_docs_give_today() -> None:
    assert TOOL_NAME_PATTERN == "^[a-zA-Z0-9_-]{1,128}$"


def test_a_name_ending_in_a_newline_is_refused_although_dollar_would_match_before_it() -> None:
    assert not is_valid_tool_name("read_file\n")
    refusal(tools=[custom_tool("read_file\n")])


@PROPERTY
@given(name=bad_names, position=st.integers(min_value=0, max_value=3))
def test_a_tool_name_outside_the_api_pattern_is_refused_with_a_400(
    name: str, position: int
) -> None:
    tools = [custom_tool(f"tool_{n}") for n in range(3)]
    tools.insert(position, custom_tool(name))
    assert refusal(tools=tools) == (
        f"tools.{position}.custom.name: String should match pattern '{TOOL_NAME_PATTERN}'"
    )


@PROPERTY
@given(names=st.lists(valid_names, min_size=1, max_size=5, unique=True))
def test_tools_with_unique_names_in_the_pattern_are_accepted(names: list[str]) -> None:
    assert send(tools=[custom_tool(n) for n in names]).stop_reason == "end_turn"


@PROPERTY
@given(names=st.lists(valid_names, min_size=1, max_size=5, unique=True), data=st.data())
def test_two_tools_with_one_name_are_refused_as_not_unique(
    names: list[str], data: st.DataObject
) -> None:
    twice = data.draw(st.sampled_from(names))
    at = data.draw(st.integers(min_value=0, max_value=len(names)))
    names.insert(at, twice)
    assert refusal(tools=[custom_tool(n) for n in names]) == "tools: Tool names must be unique."


def test_a_custom_tool_named_like_a_server_tool_is_refused_as_not_unique() -> None:
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    assert refusal(tools=[search, custom_tool("web_search")]) == (
        "tools: Tool names must be unique."
    )


@PROPERTY
@given(name=bad_names)
def test_a_tool_cannot_be_made_with_a_name_the_api_refuses(name: str) -> None:
    class NoInput(BaseModel):
        pass

    def run(args: NoInput, context: ToolContext) -> str:
        """Do nothing."""
        return ""

    with pytest.raises(ValueError, match=r"must match \^\[a-zA-Z0-9_-\]\{1,128\}\$"):
        Tool(name, "Does nothing.", NoInput, run)
    if name:  # tool(..., name="") means "the function's name"
        with pytest.raises(ValueError, match="is not one the API accepts"):
            tool(NoInput, name=name)(run)


@PROPERTY
@given(name=valid_names)
def test_a_tool_with_a_name_in_the_pattern_is_made_and_defined_under_that_name(
    name: str,
) -> None:
    class NoInput(BaseModel):
        pass

    def run(args: NoInput, context: ToolContext) -> str:
        """Do nothing."""
        return ""

    made = tool(NoInput, name=name)(run)
    assert made.definition()["name"] == name
    assert send(tools=[made.definition()]).stop_reason == "end_turn"


def test_a_function_whose_name_the_api_refuses_needs_an_explicit_name() -> None:
    class NoInput(BaseModel):
        pass

    def run(args: NoInput, context: ToolContext) -> str:
        """Do nothing."""
        return ""

    run.__name__ = "λ"
    with pytest.raises(ValueError, match="'λ'"):
        tool(NoInput)(run)
    assert tool(NoInput, name="lambda")(run).name == "lambda"


# --- input schemas --------------------------------------------------------------------------


def test_a_custom_tool_without_input_schema_is_refused() -> None:
    no_schema = {"name": "read_file", "description": "Read a file."}
    assert refusal(tools=[no_schema]) == "tools.0.custom.input_schema: Field required"


def test_a_tool_marked_custom_is_checked_like_one_without_a_type() -> None:
    typed = {**custom_tool("read_file"), "type": "custom"}
    assert send(tools=[typed]).stop_reason == "end_turn"
    del typed["input_schema"]
    assert refusal(tools=[typed]) == "tools.0.custom.input_schema: Field required"


def test_an_input_schema_without_a_type_is_refused() -> None:
    message = refusal(tools=[custom_tool("read_file", {"properties": {}})])
    assert message == "tools.0.custom.input_schema.type: Field required"


@PROPERTY
@given(
    kind=st.sampled_from(["string", "array", "number", "integer", "boolean", "null"])
    | json_values.filter(lambda v: v != "object")
)
def test_an_input_schema_that_is_not_an_object_schema_is_refused(kind: Any) -> None:
    message = refusal(tools=[custom_tool("read_file", {"type": kind})])
    assert message == "tools.0.custom.input_schema.type: Input should be 'object'"


@pytest.mark.parametrize("key", ["oneOf", "allOf", "anyOf"])
def test_a_combinator_at_the_top_of_an_input_schema_is_refused(key: str) -> None:
    schema = {"type": "object", key: [{"required": ["a"]}, {"required": ["b"]}]}
    message = refusal(tools=[custom_tool("pick", schema)])
    assert message.endswith("does not support oneOf, allOf, or anyOf at the top level")


@pytest.mark.parametrize("key", ["has space", "ü", "x" * 65, ""])
def test_a_property_key_outside_the_pattern_is_refused(key: str) -> None:
    schema = {"type": "object", "properties": {key: {"type": "string"}}}
    message = refusal(tools=[custom_tool("pick", schema)])
    assert message.startswith("tools.0.custom.input_schema.properties: Property keys should")


def test_property_keys_with_dots_and_dashes_up_to_64_characters_are_accepted() -> None:
    schema = {"type": "object", "properties": {"a.b-c_d": {}, "y" * 64: {}}}
    assert send(tools=[custom_tool("pick", schema)]).content


@PROPERTY
@given(schema=not_objects)
def test_an_input_schema_that_is_not_a_json_object_is_refused(schema: Any) -> None:
    message = refusal(tools=[custom_tool("read_file", schema)])
    assert message == "tools.0.custom.input_schema: Input should be a valid dictionary"


@pytest.mark.parametrize(
    "server_tool",
    [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
        {"type": "web_fetch_20250910", "name": "web_fetch"},
        {"type": "bash_20250124", "name": "bash"},
        {"type": "code_execution_20250825", "name": "code_execution"},
    ],
    ids=lambda t: t["type"],
)
def test_a_server_or_anthropic_tool_needs_no_input_schema(server_tool: dict[str, Any]) -> None:
    assert send(tools=[server_tool, custom_tool("read_file")]).stop_reason == "end_turn"


# --- max_tokens -----------------------------------------------------------------------------


@PROPERTY
@given(max_tokens=st.integers(max_value=0))
def test_max_tokens_below_one_is_refused(max_tokens: int) -> None:
    message = refusal(max_tokens=max_tokens)
    assert message == "max_tokens: Input should be greater than or equal to 1"


@PROPERTY
@given(
    max_tokens=st.one_of(
        st.booleans(),
        st.floats(),
        st.text(max_size=6),
        st.none(),
        st.lists(st.integers(), max_size=2),
    )
)
def test_max_tokens_that_is_not_an_integer_is_refused(max_tokens: Any) -> None:
    assert refusal(max_tokens=max_tokens) == "max_tokens: Input should be a valid integer"


@PROPERTY
@given(max_tokens=st.integers(min_value=1, max_value=64_000))
def test_max_tokens_from_one_to_the_output_limit_is_accepted(max_tokens: int) -> None:
    assert send(max_tokens=max_tokens).stop_reason in ("end_turn", "max_tokens")


# --- the system prompt ----------------------------------------------------------------------


@PROPERTY
@given(
    blank=st.text(alphabet=" \t\n\r", max_size=6),
    before=st.lists(st.sampled_from(["You review code.", "Be brief."]), max_size=2),
)
def test_an_empty_or_blank_system_text_block_is_refused(blank: str, before: list[str]) -> None:
    system = [text(t) for t in before] + [text(blank)]
    message = refusal(system=system)
    if blank:
        assert message == "system: text content blocks must contain non-whitespace text"
    else:
        assert message == "system: text content blocks must be non-empty"


@PROPERTY
@given(
    kind=st.sampled_from(["image", "document", "tool_use", "thinking"])
    | st.text(max_size=12).filter(lambda t: t != "text"),
    at=st.integers(min_value=0, max_value=2),
)
def test_a_system_block_that_is_not_text_is_refused(kind: str, at: int) -> None:
    system = [text("You review code."), text("Be brief.")]
    system.insert(at, {"type": kind, "text": "x"})
    assert refusal(system=system) == f"system.{at}.type: Input should be 'text'"


@PROPERTY
@given(texts=st.lists(st.text(min_size=1, max_size=20).filter(str.strip), max_size=3))
def test_system_blocks_with_some_text_are_accepted(texts: list[str]) -> None:
    assert send(system=[text(t) for t in texts]).stop_reason == "end_turn"


# --- tool_use input -------------------------------------------------------------------------


@PROPERTY
@given(conversations(min_tool_rounds=1), st.data(), not_objects)
def test_a_tool_use_whose_input_is_not_a_json_object_is_refused_where_it_is(
    messages: Conversation, data: st.DataObject, value: Any
) -> None:
    spots = [
        (i, j) for i, j in block_spots(messages) if messages[i]["content"][j]["type"] == "tool_use"
    ]
    i, j = data.draw(st.sampled_from(spots))
    messages[i]["content"][j]["input"] = value
    assert problems(messages) == [("bad_tool_input", i, j)]
    assert refusal(messages) == (
        f"messages.{i}.content.{j}.tool_use.input: Input should be a valid dictionary"
    )


@PROPERTY
@given(conversations(min_tool_rounds=1))
def test_conversations_whose_tool_inputs_are_objects_are_accepted(messages: Conversation) -> None:
    assert all(isinstance(u["input"], dict) for m in messages for u in tool_uses(m))
    assert send(messages).role == "assistant"


def test_a_tool_use_without_input_is_refused() -> None:
    use = tool_use("toolu_1", "read_file", {})
    del use["input"]
    conversation = [user("read"), assistant([use]), user([tool_result("toolu_1", "ok")])]
    assert problems(conversation) == [("bad_tool_input", 1, 0)]
    refusal(conversation)


# --- block types ----------------------------------------------------------------------------


def test_the_known_block_types_are_the_sdks_content_block_param_union() -> None:
    sdk = [
        typing.get_args(typing.get_type_hints(member)["type"])[0]
        for member in typing.get_args(ContentBlockParam)
    ]
    assert list(CONTENT_BLOCK_TYPES) == sdk


def test_the_tool_result_content_types_are_the_sdks() -> None:
    content = typing.get_type_hints(anthropic.types.ToolResultBlockParam)["content"]
    blocks = typing.get_args(typing.get_args(content)[1])[0]
    sdk = [typing.get_args(typing.get_type_hints(m)["type"])[0] for m in typing.get_args(blocks)]
    assert list(TOOL_RESULT_CONTENT_TYPES) == sdk


@PROPERTY
@given(conversations(), st.data(), unknown_types)
def test_a_block_of_an_unknown_type_is_refused_where_it_is(
    messages: Conversation, data: st.DataObject, kind: str
) -> None:
    i = data.draw(st.integers(min_value=0, max_value=len(messages) - 1))
    content = messages[i]["content"]
    if isinstance(content, str):
        content = messages[i]["content"] = [text(content)]
    # After any tool results, where another block may go.
    first = sum(1 for b in content if b["type"] == "tool_result")
    j = data.draw(st.integers(min_value=first, max_value=len(content)))
    content.insert(j, {"type": kind, "text": "hello"})
    assert problems(messages) == [("unknown_block_type", i, j)]
    message = refusal(messages)
    assert message.startswith(f"messages.{i}.content.{j}: Input tag {kind!r} found using 'type'")


def test_a_block_without_a_type_is_refused() -> None:
    conversation = [user([{"text": "hello"}])]
    assert problems(conversation) == [("unknown_block_type", 0, 0)]
    assert refusal(conversation) == (
        "messages.0.content.0: Unable to extract tag using discriminator 'type'"
    )


@pytest.mark.parametrize("kind", CONTENT_BLOCK_TYPES)
def test_no_known_block_type_is_reported_as_unknown(kind: str) -> None:
    conversation = [user([text("look"), {"type": kind}])]
    assert ("unknown_block_type", 0, 1) not in problems(conversation)


def test_an_image_and_a_document_are_accepted() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    document = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "hi"},
    }
    assert send([user([image, document, text("What is this?")])]).stop_reason == "end_turn"


# --- tool_result content --------------------------------------------------------------------


def result_spots(messages: Conversation) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, j in block_spots(messages)
        if messages[i]["content"][j]["type"] == "tool_result"
    ]


@PROPERTY
@given(
    conversations(min_tool_rounds=1),
    st.data(),
    json_values.filter(lambda v: not isinstance(v, (str, list))),
)
def test_tool_result_content_that_is_neither_text_nor_a_list_is_refused(
    messages: Conversation, data: st.DataObject, value: Any
) -> None:
    i, j = data.draw(st.sampled_from(result_spots(messages)))
    messages[i]["content"][j]["content"] = value
    assert problems(messages) == [("bad_tool_result_content", i, j)]
    assert refusal(messages) == (
        f"messages.{i}.content.{j}.tool_result.content: Input should be a valid string or a "
        "list of content blocks"
    )


@PROPERTY
@given(
    conversations(min_tool_rounds=1),
    st.data(),
    json_scalars | st.dictionaries(st.just("type"), unknown_types),
)
def test_a_tool_result_list_holding_something_other_than_a_block_is_refused(
    messages: Conversation, data: st.DataObject, item: Any
) -> None:
    assume(not (isinstance(item, dict) and item.get("type") in TOOL_RESULT_CONTENT_TYPES))
    i, j = data.draw(st.sampled_from(result_spots(messages)))
    messages[i]["content"][j]["content"] = [text("line 1"), item]
    assert problems(messages) == [("bad_tool_result_content", i, j)]
    refusal(messages)


# --- text that is not UTF-8 -----------------------------------------------------------------


@PROPERTY
@given(conversations(), st.data(), with_a_lone_surrogate())
def test_a_text_block_with_a_lone_surrogate_is_refused_where_it_is(
    messages: Conversation, data: st.DataObject, bad: str
) -> None:
    spots = [
        (i, j) for i, j in block_spots(messages) if messages[i]["content"][j]["type"] == "text"
    ]
    assume(spots)
    i, j = data.draw(st.sampled_from(spots))
    messages[i]["content"][j]["text"] = bad
    assert problems(messages) == [("invalid_unicode", i, j)]
    message = refusal(messages)
    assert message.startswith("The request body is not valid JSON: ")
    assert "surrogate in string: line 1 column " in message


@PROPERTY
@given(conversations(), st.data(), with_a_lone_surrogate())
def test_string_content_with_a_lone_surrogate_is_refused_where_it_is(
    messages: Conversation, data: st.DataObject, bad: str
) -> None:
    spots = [i for i, m in enumerate(messages) if isinstance(m["content"], str)]
    assume(spots)
    i = data.draw(st.sampled_from(spots))
    messages[i]["content"] = bad
    assert problems(messages) == [("invalid_unicode", i, None)]
    assert refusal(messages).startswith("The request body is not valid JSON: ")


@PROPERTY
@given(conversations(min_tool_rounds=1), st.data(), with_a_lone_surrogate(), st.booleans())
def test_a_tool_result_with_a_lone_surrogate_is_refused_where_it_is(
    messages: Conversation, data: st.DataObject, bad: str, as_blocks: bool
) -> None:
    i, j = data.draw(st.sampled_from(result_spots(messages)))
    messages[i]["content"][j]["content"] = [text(bad)] if as_blocks else bad
    assert problems(messages) == [("invalid_unicode", i, j)]
    assert refusal(messages).startswith("The request body is not valid JSON: ")


@PROPERTY
@given(st.text(min_size=1, max_size=30).filter(str.strip))
def test_the_same_text_without_the_surrogate_is_accepted(said: str) -> None:
    assert send([user(said)]).stop_reason == "end_turn"
    assert send([user([text(said)])]).stop_reason == "end_turn"


def test_a_file_name_with_undecodable_bytes_is_refused_in_the_parsers_words() -> None:
    name = os.fsdecode(b"caf\xe9.txt")  # 'caf\udce9.txt': a lone low surrogate
    conversation = [
        user("list the files"),
        assistant([tool_use("toolu_1", "list_files", {})]),
        user([tool_result("toolu_1", f"notes.md\n{name}")]),
    ]
    assert problems(conversation) == [("invalid_unicode", 2, 0)]
    message = refusal(conversation)
    assert message.startswith("The request body is not valid JSON: invalid high surrogate")


def test_a_lone_high_surrogate_gets_the_apis_no_low_surrogate_message() -> None:
    message = refusal([user("an emoji cut in half: \ud83d")])
    assert message.startswith("The request body is not valid JSON: no low surrogate in string")


def test_a_surrogate_in_the_system_prompt_or_a_tool_is_refused_too() -> None:
    refusal(system="You review \udce9 code.")
    refusal(system=[text("You review \udce9 code.")])
    refusal(tools=[{**custom_tool("read_file"), "description": "Reads caf\udce9.txt"}])


def test_a_problem_in_one_block_reads_with_the_blocks_place() -> None:
    conversation = [
        user("read"),
        assistant([text("Reading."), tool_use("toolu_1", "read_file", {})]),
        user([tool_result("toolu_1", "ok")]),
    ]
    conversation[1]["content"][1]["input"] = "a.py"
    (problem,) = validate(conversation)
    assert str(problem) == (
        "messages[1].content[1] (toolu_1): tool_use input must be a JSON object (a dict), not str"
    )
