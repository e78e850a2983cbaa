"""Tool search (harness.mcp.search): when to defer, the ToolSearch tool, and the names list.

The search is Claude Code's (``src/tools/ToolSearchTool/ToolSearchTool.ts``): ``select:``
names, an exact name, an ``mcp__server`` prefix, then keywords scored on the name's words
and the description, ``+word`` required. A scripted session searches and then calls the
tool the search loaded, through the scripted model that refuses what the API refuses.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import tokens
from harness.clock import FakeClock
from harness.mcp.search import (
    AUTO_PERCENT,
    DEFAULT_MAX_RESULTS,
    NO_MATCH,
    TOOL_SEARCH_NAME,
    auto_threshold,
    callable_names,
    deferred,
    deferred_section,
    deferred_tools_reminder,
    mode_from_env,
    referenced_names,
    search_names,
    should_defer,
    tool_reference,
    tool_search_tool,
)
from harness.messages import assistant, from_reply, tool_result, user
from harness.model import ScriptedModel, reply, tool_call
from harness.prompt import SystemPrompt
from harness.tools import ToolContext
from harness.tools.base import ToolInput
from harness.tools.workspace import Workspace

PROPERTY = settings(max_examples=80, deadline=None)
MODEL = "claude-sonnet-4-5"
Definition = dict[str, Any]


def mcp(name: str, description: str, *, defer: bool = True) -> Definition:
    definition: Definition = {
        "name": name,
        "description": description,
        "input_schema": {"type": "object", "properties": {"repo_path": {"type": "string"}}},
    }
    return deferred(definition) if defer else definition


GIT = [
    mcp("mcp__git__git_status", "Shows the working tree status"),
    mcp("mcp__git__git_log", "Shows the commit logs with optional date filtering"),
    mcp("mcp__git__git_commit", "Records changes to the repository"),
    mcp("mcp__git__git_diff", "Shows differences between branches or commits"),
]
SLACK = [
    mcp("mcp__slack__send_message", "Send a message to a Slack channel"),
    mcp("mcp__slack__list_channels", "List the channels of the workspace"),
]
LOADED = [mcp("read_file", "Read a file of the workspace", defer=False)]
CATALOG = [*LOADED, *GIT, *SLACK]


def context(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(tmp_path), clock=FakeClock())


# --- when to defer --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ("on", AUTO_PERCENT)),
        ("", ("on", AUTO_PERCENT)),
        ("true", ("on", AUTO_PERCENT)),
        ("1", ("on", AUTO_PERCENT)),
        ("false", ("off", AUTO_PERCENT)),
        ("0", ("off", AUTO_PERCENT)),
        ("auto", ("auto", 10)),
        ("auto:5", ("auto", 5)),
        ("auto:0", ("on", 0)),
        ("auto:100", ("off", 100)),
        ("auto:250", ("off", 100)),
        ("auto:abc", ("auto", 10)),
    ],
)
def test_enable_tool_search_is_read_as_claude_code_reads_it(
    value: str | None, expected: tuple[str, int]
) -> None:
    assert mode_from_env(value) == expected


def test_auto_defers_once_the_definitions_reach_ten_percent_of_the_window() -> None:
    size = sum(tokens.estimate_tool(d) for d in GIT)
    assert should_defer(GIT, context_window=size * 10)
    assert not should_defer(GIT, context_window=size * 10 + 10)
    assert auto_threshold(200_000) == 20_000


def test_on_defers_any_tools_and_off_none() -> None:
    assert should_defer(GIT, context_window=1_000_000, mode="on")
    assert not should_defer(GIT, context_window=10, mode="off")
    assert not should_defer([], context_window=10, mode="on")


@pytest.mark.parametrize(
    "kwargs", [{"context_window": 0}, {"percent": 101}, {"percent": -1}, {"mode": "sometimes"}]
)
def test_bad_settings_are_refused_with_a_value_error(kwargs: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {"context_window": 1000, **kwargs}
    with pytest.raises(ValueError):
        should_defer(GIT, **arguments)


def test_deferred_returns_a_fresh_copy_and_drops_cache_control() -> None:
    original = mcp("x", "y", defer=False) | {"cache_control": {"type": "ephemeral"}}
    copy = deferred(original)
    assert copy["defer_loading"] is True and "cache_control" not in copy
    assert "defer_loading" not in original and "cache_control" in original
    copy["input_schema"]["properties"]["new"] = {}
    assert "new" not in original["input_schema"]["properties"]


# --- the search -----------------------------------------------------------------------------


def test_select_fetches_exact_names_in_order_once_each() -> None:
    found = search_names(
        "select:mcp__git__git_log, mcp__git__git_status,mcp__git__git_log", CATALOG
    )
    assert found == ["mcp__git__git_log", "mcp__git__git_status"]


def test_select_skips_unknown_names_and_returns_a_loaded_tool_too() -> None:
    assert search_names("SELECT:nope,read_file", CATALOG) == ["read_file"]
    assert search_names("select:nope", CATALOG) == []


def test_a_bare_tool_name_returns_that_tool() -> None:
    assert search_names("MCP__GIT__GIT_DIFF", CATALOG) == ["mcp__git__git_diff"]


def test_a_server_prefix_returns_the_servers_deferred_tools() -> None:
    assert search_names("mcp__slack", CATALOG) == [d["name"] for d in SLACK]
    assert search_names("mcp__git", CATALOG, max_results=2) == [d["name"] for d in GIT[:2]]


def test_keywords_rank_name_words_above_description_words() -> None:
    # "log" is a whole word of git_log's name (12) and of nobody's description.
    assert search_names("log", CATALOG)[0] == "mcp__git__git_log"
    # "slack" is a name word of both slack tools; "send" only of send_message.
    assert search_names("slack send", CATALOG)[0] == "mcp__slack__send_message"


def test_a_required_word_filters_and_the_rest_ranks() -> None:
    found = search_names("+slack channel", CATALOG)
    assert set(found) == {d["name"] for d in SLACK}
    assert found[0] == "mcp__slack__list_channels"


def test_loaded_tools_are_not_searched_by_keyword() -> None:
    assert "read_file" not in search_names("read file", CATALOG)


def test_max_results_caps_a_keyword_search() -> None:
    assert len(search_names("git", CATALOG, max_results=2)) == 2
    assert len(search_names("git", CATALOG)) == min(len(GIT), DEFAULT_MAX_RESULTS)


_queries = st.one_of(
    st.text(max_size=60),
    st.builds(lambda s: "select:" + s, st.text(max_size=40)),
    st.builds(lambda s: "+" + s, st.text(string.ascii_letters, max_size=10)),
)


@PROPERTY
@given(query=_queries, limit=st.integers(1, 8))
def test_any_query_returns_distinct_names_of_the_catalog_within_the_limit(
    query: str, limit: int
) -> None:
    found = search_names(query, CATALOG, max_results=limit)
    names = [d["name"] for d in CATALOG]
    assert len(found) == len(set(found)) and all(n in names for n in found)
    if not query.lower().startswith("select:"):
        assert len(found) <= limit


# --- the tool -------------------------------------------------------------------------------


def test_the_tool_is_claude_codes_read_only_and_never_spilled() -> None:
    tool = tool_search_tool(CATALOG)
    definition = tool.definition()
    assert definition["name"] == TOOL_SEARCH_NAME == "ToolSearch"
    assert set(definition["input_schema"]["properties"]) == {"query", "max_results"}
    assert tool.read_only and not tool.spill


def test_the_tool_answers_with_tool_reference_blocks(tmp_path: Path) -> None:
    tool = tool_search_tool(lambda: CATALOG)
    output = tool({"query": "select:mcp__git__git_log"}, context(tmp_path))
    assert output == [tool_reference("mcp__git__git_log")]


def test_the_tool_answers_claude_codes_text_when_nothing_matches(tmp_path: Path) -> None:
    assert tool_search_tool(CATALOG)({"query": "kubernetes"}, context(tmp_path)) == NO_MATCH


def test_the_tool_sees_the_catalog_as_it_is_when_called(tmp_path: Path) -> None:
    catalog: list[Definition] = [*LOADED]
    tool = tool_search_tool(lambda: catalog)
    assert tool({"query": "git status"}, context(tmp_path)) == NO_MATCH
    catalog.extend(GIT)
    found = tool({"query": "git status"}, context(tmp_path))
    assert found[0] == tool_reference("mcp__git__git_status")


@pytest.mark.parametrize("bad", [{}, {"query": 3}, {"query": "x", "max_results": 0}, {"q": "x"}])
def test_bad_input_is_refused_by_the_input_model(bad: dict[str, Any], tmp_path: Path) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        tool_search_tool(CATALOG)(bad, context(tmp_path))


# --- the names list -------------------------------------------------------------------------


def test_the_section_lists_names_sorted_one_a_line_and_is_static() -> None:
    section = deferred_section(["mcp__b__y", "mcp__a__x", "mcp__a__x"])
    assert section is not None and not section.dynamic
    assert (
        section.text
        == "<available-deferred-tools>\nmcp__a__x\nmcp__b__y\n</available-deferred-tools>"
    )
    rendered = SystemPrompt((section,)).render()
    assert rendered[0].get("cache_control")  # cached with the static part
    assert deferred_section([]) is None


def test_the_reminder_says_what_was_added_and_removed_in_claude_codes_words() -> None:
    text = deferred_tools_reminder(["mcp__git__git_log"], ["mcp__old__x"])
    assert text is not None and text.startswith("<system-reminder>")
    assert "now available via ToolSearch:\nmcp__git__git_log" in text
    assert "no longer available" in text and "mcp__old__x" in text
    assert deferred_tools_reminder([]) is None


# --- a scripted session ---------------------------------------------------------------------


def test_a_scripted_session_searches_then_calls_the_tool_it_loaded(tmp_path: Path) -> None:
    search = tool_search_tool(lambda: tools)
    tools: list[Definition] = [*GIT, *SLACK, search.definition()]
    model = ScriptedModel(
        [
            reply(tool_calls=[tool_call(TOOL_SEARCH_NAME, query="log")]),
            reply(tool_calls=[tool_call("mcp__git__git_log", repo_path=".")]),
            reply("Three commits."),
        ]
    )
    messages: list[Any] = [user("What changed lately?")]
    answers = []
    for result in (None, "commit abc: fix"):
        answer = model.create(model=MODEL, max_tokens=500, messages=messages, tools=tools)
        answers.append(answer)
        use = answer.content[-1]
        assert use.type == "tool_use"
        assert use.name in callable_names(tools, messages)
        output = search(use.input, context(tmp_path)) if result is None else result
        messages += [from_reply(answer), user([tool_result(use.id, output)])]
    final = model.create(model=MODEL, max_tokens=500, messages=messages, tools=tools)
    assert final.content[0].type == "text"
    assert referenced_names(messages) == {"mcp__git__git_log"}
    log = next(d for d in GIT if d["name"] == "mcp__git__git_log")
    grew = model.requests[1].input_tokens - model.requests[0].input_tokens
    assert grew > tokens.estimate_tool(log)  # the loaded definition is billed where it loads


def test_a_deferred_tool_is_not_callable_before_a_reference_loads_it() -> None:
    tools = [*GIT, tool_search_tool(GIT).definition()]
    messages = [user("hi"), assistant("hello")]
    assert callable_names(tools, messages) == {TOOL_SEARCH_NAME}


def test_the_tool_and_the_section_take_harness_tools_too(tmp_path: Path) -> None:
    from harness.tools import Tool

    class Args(ToolInput):
        repo_path: str

    def run(args: Args, context: ToolContext) -> str:
        return "ok"

    class Deferred(Tool[Args]):
        def definition(self) -> dict[str, Any]:
            return deferred(super().definition())

    status = Deferred("mcp__git__git_status", "Shows the working tree status", Args, run)
    found = tool_search_tool([status])({"query": "status"}, context(tmp_path))
    assert found == [tool_reference("mcp__git__git_status")]
    section = deferred_section([status])
    assert section is not None and "mcp__git__git_status" in section.text
