"""A server's tools checked before the model sees them; the model's input checked before the
server does.

Claude Code's numbers: ``MAX_MCP_DESCRIPTION_LENGTH`` and the ``… [truncated]`` mark in
github.com/Gitlawb/openclaude at 421f45992c440420775ff28e3a8a060869195034,
``src/services/mcp/client.ts``; hidden-character cleaning in ``src/utils/sanitization.ts``.
The API's refusals ("input_schema does not support oneOf, allOf, or anyOf at the top
level", "Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'") are quoted in
github.com/perplexityai/perplexity-node/issues/11 and anthropics/claude-code#79418.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import mcp_types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
from jsonschema.validators import validator_for  # type: ignore[import-untyped,unused-ignore]

from harness.mcp.schema import (
    MAX_DESCRIPTION_CHARS,
    MAX_ERRORS,
    MAX_SCHEMA_BYTES,
    TRUNCATED_MARK,
    CheckedTool,
    ToolProblem,
    check_tool,
    input_problem,
    sanitize_unicode,
)
from harness.messages import is_valid_tool_name

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"],
}


def tool(name: str = "get_weather", schema: Any = None, **fields: Any) -> mcp_types.Tool:
    return mcp_types.Tool(name=name, input_schema=WEATHER if schema is None else schema, **fields)


def checked(server: str = "weather", listed: mcp_types.Tool | None = None) -> CheckedTool:
    result = check_tool(server, listed or tool())
    assert isinstance(result, CheckedTool), result
    return result


def refused(listed: mcp_types.Tool, server: str = "weather") -> str:
    result = check_tool(server, listed)
    assert isinstance(result, ToolProblem), result
    assert "\n" not in str(result)
    return result.reason


# --- check_tool: what is kept ---------------------------------------------------------


def test_a_good_tool_gets_its_full_name_and_keeps_its_own_for_the_call() -> None:
    result = checked(listed=tool(description="Weather by city."))
    assert (result.server, result.tool, result.name) == (
        "weather",
        "get_weather",
        "mcp__weather__get_weather",
    )
    assert result.description == "Weather by city."
    assert result.input_schema == WEATHER
    assert (result.read_only_hint, result.title) == (False, None)


def test_the_schema_is_a_deep_copy_the_servers_object_is_left_alone() -> None:
    schema = copy.deepcopy(WEATHER)
    result = checked(listed=tool(schema=schema))
    schema["properties"]["city"]["type"] = "integer"
    assert result.input_schema["properties"]["city"]["type"] == "string"


def test_names_with_other_characters_are_normalized() -> None:
    assert checked("my.server", tool("get weather")).name == "mcp__my_server__get_weather"


def test_read_only_hint_and_title_come_from_the_annotations() -> None:
    annotations = mcp_types.ToolAnnotations(title="Weather", read_only_hint=True)
    result = checked(listed=tool(annotations=annotations))
    assert (result.read_only_hint, result.title) == (True, "Weather")


def test_the_tools_own_title_wins_over_the_annotations() -> None:
    annotations = mcp_types.ToolAnnotations(title="Old")
    assert checked(listed=tool(title="New", annotations=annotations)).title == "New"


def test_a_missing_description_is_empty() -> None:
    assert checked().description == ""


def test_a_description_at_the_cap_is_kept_whole() -> None:
    text = "x" * MAX_DESCRIPTION_CHARS
    assert checked(listed=tool(description=text)).description == text


def test_a_longer_description_is_cut_with_claude_codes_mark() -> None:
    result = checked(listed=tool(description="y" * 60_000))
    assert result.description == "y" * 2048 + "… [truncated]"
    assert TRUNCATED_MARK == "… [truncated]"


def test_hidden_characters_are_removed_from_description_title_and_schema() -> None:
    tag_smuggled = "Fetch\u200b it" + "".join(chr(0xE0000 + ord(c)) for c in "rm -rf")
    schema = {"type": "object", "properties": {"a": {"type": "string", "description": "\u202eok"}}}
    result = checked(listed=tool(description=tag_smuggled, title="T\u2066i", schema=schema))
    assert result.description == "Fetch it"
    assert result.title == "Ti"
    assert result.input_schema["properties"]["a"]["description"] == "ok"


def test_sanitizing_normalizes_compatibility_characters_and_keeps_ordinary_text() -> None:
    assert sanitize_unicode("ﬁle Ｈｉ") == "file Hi"
    assert sanitize_unicode("naïve café, 東京, emoji 😀") == "naïve café, 東京, emoji 😀"
    assert sanitize_unicode("\ue000private\udcff") == "private\ufffd"


# --- check_tool: what is refused ------------------------------------------------------


def test_a_tool_whose_full_name_is_too_long_is_refused() -> None:
    reason = refused(tool("t" * 130))
    assert "has 144 characters" in reason and "^[a-zA-Z0-9_-]{1,128}$" in reason


def test_a_tool_with_an_empty_name_is_refused() -> None:
    assert refused(tool("")) == "it has no name"


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"properties": {}}, 'top-level "type" is null, not "object"'),
        ({"type": "array", "items": {}}, 'top-level "type" is "array"'),
        ({"type": ["object", "null"]}, 'top-level "type" is ["object", "null"]'),
        (
            {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
            "oneOf at the top level",
        ),
        ({"type": "object", "anyOf": [{}]}, "anyOf at the top level"),
        ({"type": "object", "properties": {"filter[id]": {}}}, 'the property "filter[id]"'),
        ({"type": "object", "properties": {"a b": {}}}, "^[a-zA-Z0-9_.-]{1,64}$"),
        ({"type": "object", "properties": {"k" * 65: {}}}, "the property"),
        (
            {"type": "object", "properties": {"a": {"type": "strang"}}},
            "not valid JSON Schema at properties/a/type",
        ),
        ({"type": "object", "required": "a"}, "not valid JSON Schema at required"),
        ({"type": "object", "properties": {"a": {"minimum": "1"}}}, "not valid JSON Schema"),
    ],
)
def test_a_schema_the_api_would_refuse_is_refused_with_the_reason(
    schema: dict[str, Any], says: str
) -> None:
    assert says in refused(tool(schema=schema))


def test_a_draft_07_schema_is_checked_against_its_own_metaschema() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}
        },
    }
    result = checked(listed=tool(schema=schema))
    problem = input_problem(result.name, result.input_schema, {"pair": ["a", "b"]})
    assert problem is not None and "- pair.1: 'b' is not of type 'integer'" in problem


def test_a_property_key_with_a_trailing_newline_is_refused() -> None:
    assert "the property" in refused(tool(schema={"type": "object", "properties": {"a\n": {}}}))


def test_a_schema_over_the_size_cap_is_refused() -> None:
    properties = {f"p{i}": {"type": "string", "description": "d" * 100} for i in range(700)}
    schema = {"type": "object", "properties": properties}
    assert len(json.dumps(schema)) > MAX_SCHEMA_BYTES
    assert f"(at most {MAX_SCHEMA_BYTES})" in refused(tool(schema=schema))


def test_a_deeply_nested_schema_is_refused_without_recursing() -> None:
    schema: dict[str, Any] = {"type": "object"}
    inner = schema
    for _ in range(5000):
        inner["properties"] = {"a": {"type": "object"}}
        inner = inner["properties"]["a"]
    assert "nests deeper than" in refused(tool(schema=schema))


def test_a_schema_that_is_not_plain_json_is_refused() -> None:
    listed = mcp_types.Tool.model_construct(name="t", input_schema={"type": "object", "x": {1, 2}})
    assert "not plain JSON" in refused(listed)
    circular: dict[str, Any] = {"type": "object"}
    circular["properties"] = {"a": circular}
    assert "refused" in str(
        check_tool("s", mcp_types.Tool.model_construct(name="t", input_schema=circular))
    )


def test_a_tool_with_garbage_fields_is_refused_not_raised() -> None:
    garbage: dict[str, Any] = {
        "name": 42,
        "input_schema": "nope",
        "description": ["x"],
        "annotations": "?",
        "title": 3,
    }
    assert isinstance(check_tool("s", mcp_types.Tool.model_construct(**garbage)), ToolProblem)
    odd: dict[str, Any] = {"name": "t", "input_schema": WEATHER, "annotations": "?"}
    assert isinstance(check_tool("s", mcp_types.Tool.model_construct(**odd)), ToolProblem)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["type", "properties", "required", "items", "$ref", "oneOf", "a", "a b"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=25,
)
schemas = json_values | st.fixed_dictionaries(
    {"type": st.just("object")},
    optional={
        "properties": st.dictionaries(st.text(max_size=8), json_values, max_size=3),
        "required": json_values,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    server=st.text(max_size=10),
    name=st.text(max_size=140),
    schema=schemas,
    description=st.text(max_size=30),
)
def test_whatever_a_server_lists_is_checked_or_refused_never_raised(
    server: str, name: str, schema: Any, description: str
) -> None:
    listed = mcp_types.Tool.model_construct(name=name, input_schema=schema, description=description)
    result = check_tool(server, listed)
    if isinstance(result, CheckedTool):
        assert is_valid_tool_name(result.name)
        assert result.input_schema["type"] == "object"
        dialect = validator_for(result.input_schema, default=Draft202012Validator)
        dialect.check_schema(result.input_schema)
    else:
        assert result.reason


# --- input_problem --------------------------------------------------------------------

NAME = "mcp__weather__get_weather"


def test_a_valid_input_has_no_problem() -> None:
    assert input_problem(NAME, WEATHER, {"city": "Oslo", "days": 2}) is None


def test_a_missing_field_is_named_in_the_dispatchers_wording() -> None:
    assert input_problem(NAME, WEATHER, {}) == (
        "Invalid input for tool 'mcp__weather__get_weather':\n"
        "- (input): 'city' is a required property\n"
        "Fix the input and call the tool again."
    )


def test_a_wrong_nested_value_is_named_by_its_path() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"n": {"type": "integer"}}},
            }
        },
    }
    problem = input_problem(NAME, schema, {"items": [{"n": 1}, {"n": "two"}]})
    assert problem is not None and "- items.1.n: 'two' is not of type 'integer'" in problem


def test_at_most_five_errors_are_listed() -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(9)}}
    problem = input_problem(NAME, schema, {f"p{i}": "x" for i in range(9)})
    assert problem is not None
    assert problem.count("\n- p") == MAX_ERRORS
    assert "- (more errors not shown)" in problem


def test_a_huge_wrong_value_is_cut_in_the_message() -> None:
    problem = input_problem(NAME, WEATHER, {"city": ["x" * 100_000]})
    assert problem is not None and len(problem) < 500


def test_a_dialect_named_by_the_schema_is_used() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "definitions": {"n": {"type": "integer"}},
        "properties": {"a": {"$ref": "#/definitions/n"}},
    }
    problem = input_problem(NAME, schema, {"a": "x"})
    assert problem is not None and "- a: 'x' is not of type 'integer'" in problem


def test_a_recursive_but_finite_schema_validates() -> None:
    schema = {
        "type": "object",
        "$defs": {"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}},
        "properties": {"root": {"$ref": "#/$defs/node"}},
    }
    assert input_problem(NAME, schema, {"root": {"child": {"child": {}}}}) is None
    problem = input_problem(NAME, schema, {"root": {"child": {"child": 3}}})
    assert problem is not None and "root.child.child" in problem


def test_a_ref_that_loops_forever_is_reported_not_raised() -> None:
    problem = input_problem(NAME, {"$ref": "#"}, {"a": 1})
    assert problem is not None and "cannot be checked" in problem


def test_a_ref_to_the_network_is_never_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    import urllib.request

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a schema's $ref was fetched")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    schema = {"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}
    problem = input_problem(NAME, schema, {"a": 1})
    assert problem is not None and "Unresolvable" in problem


def test_a_catastrophic_pattern_is_matched_in_linear_time() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
    problem = input_problem(NAME, schema, {"s": "a" * 50_000 + "!"})
    assert problem is not None and "does not match '^(a+)+$'" in problem
    assert input_problem(NAME, schema, {"s": "aaa"}) is None


def test_a_pattern_re2_cannot_compile_is_left_to_the_server() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": r"(a)\1"}}}
    assert input_problem(NAME, schema, {"s": "ab"}) is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=json_values, raw=json_values)
def test_any_schema_and_input_give_a_string_or_none_never_an_exception(
    schema: Any, raw: Any
) -> None:
    problem = input_problem(NAME, schema, raw)
    assert problem is None or (isinstance(problem, str) and len(problem) < 2000)


def test_importing_the_checker_leaves_the_format_library_importable_afterwards() -> None:
    import subprocess
    import sys

    program = (
        "import sys, harness.mcp.schema\n"
        "assert 'rfc3987_syntax' not in sys.modules\n"
        "import rfc3987_syntax\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr
