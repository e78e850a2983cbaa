"""``mcp__<server>__<tool>``: built, parsed and checked for collisions as Claude Code does.

Expected values follow ``normalizeNameForMCP`` / ``buildMcpToolName`` / ``mcpInfoFromString``
in github.com/Gitlawb/openclaude at 421f45992c440420775ff28e3a8a060869195034,
``src/services/mcp/normalization.ts`` and ``src/services/mcp/mcpStringUtils.ts``.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.mcp.names import collisions, mcp_tool_name, normalize, parse_mcp_name
from harness.messages import is_valid_tool_name


def test_allowed_characters_are_kept() -> None:
    assert normalize("get_time-2") == "get_time-2"


def test_every_other_character_becomes_an_underscore() -> None:
    assert normalize("my.server name/é") == "my_server_name__"
    assert normalize("a.b c") == "a_b_c"


def test_a_character_beyond_the_basic_plane_is_two_underscores_as_in_utf16() -> None:
    assert normalize("a\U0001f600b") == "a__b"


def test_a_claude_ai_connector_name_loses_its_runs_and_edges_of_underscores() -> None:
    assert normalize("claude.ai Google Drive") == "claude_ai_Google_Drive"
    assert normalize("claude.ai  x ") == "claude_ai_x"


def test_the_full_name_joins_server_and_tool_with_double_underscores() -> None:
    assert mcp_tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert mcp_tool_name("my.server", "do it") == "mcp__my_server__do_it"


def test_a_long_name_is_not_shortened_and_the_api_would_refuse_it() -> None:
    name = mcp_tool_name("s", "t" * 200)
    assert len(name) == len("mcp__s__") + 200
    assert not is_valid_tool_name(name)


def test_parsing_gives_back_the_normalized_parts() -> None:
    assert parse_mcp_name("mcp__time__get_current_time") == ("time", "get_current_time")


def test_a_tools_own_double_underscores_survive_parsing() -> None:
    assert parse_mcp_name("mcp__srv__a__b") == ("srv", "a__b")


def test_a_server_with_double_underscores_splits_in_the_wrong_place_as_in_claude_code() -> None:
    assert parse_mcp_name(mcp_tool_name("my__server", "tool")) == ("my", "server__tool")


def test_names_that_are_not_mcp_tool_names_parse_to_none() -> None:
    for name in ("Read", "mcp__server", "mcp____tool", "mcp__server__", "mcpx__a__b", ""):
        assert parse_mcp_name(name) is None, name


@given(server=st.from_regex(r"[a-zA-Z0-9-]{1,20}", fullmatch=True), tool=st.text(min_size=1))
def test_a_server_without_double_underscores_parses_back(server: str, tool: str) -> None:
    assert parse_mcp_name(mcp_tool_name(server, tool)) == (server, normalize(tool))


@given(name=st.text())
def test_a_normalized_name_holds_only_allowed_characters(name: str) -> None:
    assert all(c.isascii() and (c.isalnum() or c in "_-") for c in normalize(name))


def test_two_tools_that_normalize_alike_collide() -> None:
    found = collisions([("s", "get.time"), ("s", "get_time"), ("s", "other")])
    assert found == {"mcp__s__get_time": [("s", "get.time"), ("s", "get_time")]}


def test_two_servers_that_normalize_alike_collide_on_a_shared_tool() -> None:
    found = collisions([("my.server", "x"), ("my_server", "x"), ("my_server", "y")])
    assert list(found) == ["mcp__my_server__x"]


def test_a_pair_listed_twice_is_not_a_collision() -> None:
    assert collisions([("s", "t"), ("s", "t")]) == {}
