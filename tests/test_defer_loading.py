"""Deferred tools and tool references, as the offline model of the API has them.

The API's rules (tool-search-tool and tool-use-with-prompt-caching pages): a tool with
``defer_loading: true`` is sent but not rendered and not in the cached prefix; a
``tool_reference`` in a ``tool_result`` is expanded there into the tool's definition; every
reference must name a tool of the request; not every tool may be deferred; a deferred tool
may not carry ``cache_control``. Token estimates, the cache simulator and the scripted
model's refusals must all agree with them.
"""

from __future__ import annotations

import copy
import string
from typing import Any

import anthropic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import tokens
from harness.clock import FakeClock
from harness.messages import assistant, tool_result, tool_use, user, validate
from harness.model import ScriptedModel, reply
from harness.model.cache import PromptCache, prefix_blocks

MODEL = "claude-sonnet-4-5"
PROPERTY = settings(max_examples=60, deadline=None)
Tool = dict[str, Any]


def tool_def(name: str, words: int = 40, *, defer: bool = False) -> Tool:
    definition: Tool = {
        "name": name,
        "description": f"{name}: " + "does a thing " * words,
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    if defer:
        definition["defer_loading"] = True
    return definition


SEARCH = tool_def("ToolSearch", 20)


def conversation(*names: str) -> list[dict[str, Any]]:
    """A user turn, a ToolSearch call, and its result loading ``names``."""
    content = [{"type": "tool_reference", "tool_name": n} for n in names]
    return [
        user("Look at the repository."),
        assistant([tool_use("toolu_1", "ToolSearch", {"query": "git"})]),
        user([tool_result("toolu_1", content)]),
    ]


# --- tokens --------------------------------------------------------------------------------


def test_deferred_tools_count_nothing_in_the_tools_estimate() -> None:
    loaded = [SEARCH]
    with_deferred = [SEARCH, tool_def("mcp__git__git_log", defer=True)]
    assert tokens.estimate_tools(with_deferred) == tokens.estimate_tools(loaded)


def test_only_deferred_tools_count_nothing_at_all() -> None:
    assert tokens.estimate_tools([tool_def("a", defer=True)]) == 0


def test_a_tool_reference_counts_as_the_definition_it_names() -> None:
    log = tool_def("mcp__git__git_log", 200, defer=True)
    tools = [SEARCH, log]
    with_ref = tokens.estimate_request(conversation("mcp__git__git_log"), tools=tools)
    without = tokens.estimate_request(conversation(), tools=tools)
    reference_json = tokens.estimate_text(
        '{"tool_name":"mcp__git__git_log","type":"tool_reference"}'
    )
    assert with_ref - without == tokens.BLOCK_OVERHEAD + tokens.estimate_tool(log)
    assert tokens.estimate_tool(log) > 10 * reference_json


def test_a_reference_without_the_tools_counts_as_its_own_json() -> None:
    block = {"type": "tool_reference", "tool_name": "x"}
    assert tokens.estimate_block(block) == tokens.BLOCK_OVERHEAD + tokens.estimate_text(
        '{"tool_name":"x","type":"tool_reference"}'
    )


def test_the_old_signatures_still_work() -> None:
    message = conversation("a")[2]
    assert tokens.estimate_message(message) == tokens.MESSAGE_OVERHEAD + tokens.estimate_content(
        message["content"]
    )


_names = st.text(string.ascii_letters + "_", min_size=1, max_size=12)


@PROPERTY
@given(deferred=st.lists(_names, max_size=8, unique=True), words=st.integers(0, 300))
def test_adding_deferred_tools_never_changes_a_request_that_does_not_reference_them(
    deferred: list[str], words: int
) -> None:
    messages = [user("hello")]
    base = tokens.estimate_request(messages, tools=[SEARCH])
    tools = [SEARCH, *(tool_def(f"mcp__s__{n}", words, defer=True) for n in deferred)]
    assert tokens.estimate_request(messages, tools=tools) == base


# --- the cache prefix ----------------------------------------------------------------------


def test_deferred_tools_are_not_in_the_prefix() -> None:
    blocks = prefix_blocks([tool_def("a", defer=True), SEARCH], None, [user("hi")])
    assert [b.where for b in blocks if b.kind == "tool"] == ["tools[1] (ToolSearch)"]
    assert blocks[0].tokens == tokens.TOOL_USE_SYSTEM_PROMPT + tokens.estimate_tool(SEARCH)


@PROPERTY
@given(
    refs=st.lists(st.sampled_from(["mcp__git__a", "mcp__git__b", "ToolSearch"]), max_size=4),
    words=st.integers(0, 200),
)
def test_the_prefix_adds_up_to_the_request_estimate_with_references(
    refs: list[str], words: int
) -> None:
    tools = [
        SEARCH,
        tool_def("mcp__git__a", words, defer=True),
        tool_def("mcp__git__b", defer=True),
    ]
    messages = conversation(*refs)
    total = sum(b.tokens for b in prefix_blocks(tools, "system", messages))
    assert total == tokens.estimate_request(messages, system="system", tools=tools)


def test_a_changed_deferred_definition_changes_the_prefix_only_from_its_reference() -> None:
    tools = [SEARCH, tool_def("mcp__git__a", defer=True)]
    changed = copy.deepcopy(tools)
    changed[1]["description"] += " Now with colours."
    messages = conversation("mcp__git__a")
    before = prefix_blocks(tools, "system", messages)
    after = prefix_blocks(changed, "system", messages)
    same = [a.digest == b.digest for a, b in zip(before, after, strict=True)]
    reference_at = next(i for i, b in enumerate(before) if b.kind == "tool_result")
    assert same == [i < reference_at for i in range(len(before))]


def test_a_changed_deferred_definition_nobody_referenced_changes_nothing() -> None:
    tools = [SEARCH, tool_def("mcp__git__a", defer=True)]
    changed = copy.deepcopy(tools)
    changed[1]["description"] += " Now with colours."
    messages = conversation()
    before = [b.digest for b in prefix_blocks(tools, "system", messages)]
    assert [b.digest for b in prefix_blocks(changed, "system", messages)] == before


def _cached(tools: list[Tool], messages: list[dict[str, Any]]) -> tuple[list[Tool], list[Any]]:
    """Breakpoints as the harness puts them: the last tool in the prefix, the last message."""
    tools = copy.deepcopy(tools)
    loaded = [t for t in tools if not t.get("defer_loading")]
    loaded[-1]["cache_control"] = {"type": "ephemeral"}
    messages = copy.deepcopy(messages)
    last = messages[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return tools, messages


def test_a_loaded_reference_keeps_the_cache_and_a_tool_added_to_tools_rewrites_it() -> None:
    deferred = tool_def("mcp__git__git_log", 300, defer=True)
    plain = {k: v for k, v in deferred.items() if k != "defer_loading"}
    system = [{"type": "text", "text": "You are a coding agent. " * 300}]
    first = conversation()[:1]
    then = conversation("mcp__git__git_log")
    # Searched: the definition stays deferred and a reference in the messages loads it.
    searched = PromptCache(clock=FakeClock())
    searched.process(model=MODEL, system=system, **_as(_cached([SEARCH, deferred], first)))
    after = searched.process(model=MODEL, system=system, **_as(_cached([SEARCH, deferred], then)))
    # Listed late: the definition is added to tools, ahead of everything cached.
    listed = PromptCache(clock=FakeClock())
    listed.process(model=MODEL, system=system, **_as(_cached([SEARCH], first)))
    then_text = copy.deepcopy(then)
    then_text[2]["content"][0]["content"] = "loaded mcp__git__git_log"
    added = listed.process(model=MODEL, system=system, **_as(_cached([SEARCH, plain], then_text)))
    assert after.miss_reason is None
    assert after.read == sum(b.tokens for b in prefix_blocks([SEARCH, deferred], system, first))
    assert added.read == 0
    assert added.miss_reason is not None and added.miss_reason.type == "tools_changed"


def _as(pair: tuple[list[Tool], list[Any]]) -> dict[str, Any]:
    return {"tools": pair[0], "messages": pair[1]}


# --- what the scripted model refuses -------------------------------------------------------


def refusal(tools: list[Tool], messages: list[dict[str, Any]] | None = None) -> str:
    model = ScriptedModel([reply("ok")])
    with pytest.raises(anthropic.BadRequestError) as caught:
        model.create(model=MODEL, max_tokens=100, messages=messages or [user("hi")], tools=tools)
    assert caught.value.status_code == 400
    body = caught.value.body
    assert isinstance(body, dict)
    return str(body["error"]["message"])


def test_all_tools_deferred_is_refused_in_the_documented_words() -> None:
    tools = [tool_def("a", defer=True), tool_def("b", defer=True)]
    assert refusal(tools) == (
        "At least one tool must have defer_loading=false. All tools cannot be deferred."
    )


def test_a_reference_to_a_tool_not_in_tools_is_refused_in_the_documented_words() -> None:
    tools = [SEARCH, tool_def("mcp__git__a", defer=True)]
    message = refusal(tools, conversation("unknown_tool"))
    assert message == "Tool reference 'unknown_tool' not found in available tools"


def test_a_deferred_tool_with_cache_control_is_refused() -> None:
    marked = tool_def("a", defer=True) | {"cache_control": {"type": "ephemeral"}}
    assert "defer_loading" in refusal([SEARCH, marked])


def test_more_than_ten_thousand_deferred_tools_are_refused() -> None:
    many = [{**tool_def(f"t{i}", 0), "defer_loading": True} for i in range(10_001)]
    assert "10000" in refusal([SEARCH, *many])


def test_a_reference_without_a_tool_name_is_not_a_valid_conversation() -> None:
    messages = conversation()
    messages[2]["content"][0]["content"] = [{"type": "tool_reference"}]
    assert [p.kind for p in validate(messages)] == ["bad_tool_result_content"]


def test_references_to_deferred_and_loaded_tools_are_accepted_and_billed() -> None:
    tools = [SEARCH, tool_def("mcp__git__a", 100, defer=True)]
    messages = conversation("mcp__git__a", "ToolSearch")
    model = ScriptedModel([reply("ok")])
    answer = model.create(model=MODEL, max_tokens=100, messages=messages, tools=tools)
    assert answer.usage.input_tokens == tokens.estimate_request(messages, tools=tools)


@PROPERTY
@given(
    names=st.lists(_names, min_size=1, max_size=5, unique=True),
    wanted=st.lists(_names, min_size=1, max_size=3),
)
def test_a_request_is_refused_exactly_when_a_reference_names_no_tool(
    names: list[str], wanted: list[str]
) -> None:
    tools = [SEARCH, *(tool_def(n, 5, defer=True) for n in names)]
    messages = conversation(*wanted)
    model = ScriptedModel([reply("ok")])
    known = {t["name"] for t in tools}
    if all(w in known for w in wanted):
        model.create(model=MODEL, max_tokens=100, messages=messages, tools=tools)
    else:
        with pytest.raises(anthropic.BadRequestError, match="not found in available tools"):
            model.create(model=MODEL, max_tokens=100, messages=messages, tools=tools)


def test_a_deferred_tool_added_mid_session_keeps_the_whole_cache() -> None:
    system = [{"type": "text", "text": "You are a coding agent. " * 300}]
    messages = conversation()[:1]
    cache = PromptCache(clock=FakeClock())
    first = cache.process(model=MODEL, system=system, **_as(_cached([SEARCH], messages)))
    more = [SEARCH, tool_def("mcp__new__tool", 500, defer=True)]
    second = cache.process(model=MODEL, system=system, **_as(_cached(more, messages)))
    assert second.read == first.written and second.written == 0
    assert second.miss_reason is None
