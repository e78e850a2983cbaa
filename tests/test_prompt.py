"""The system prompt, CLAUDE.md discovery, and where the cache breakpoints go."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Message
from pydantic import BaseModel

from harness.agent import Agent
from harness.clock import FakeClock
from harness.loop import ModelRequest, Plugin
from harness.model import ScriptedModel, reply, tool_call
from harness.model.cache import PromptCache, check_breakpoints
from harness.prompt import (
    EPHEMERAL,
    MAX_IMPORT_DEPTH,
    MemoryFile,
    PromptCaching,
    Section,
    SystemPrompt,
    TooManyBreakpoints,
    count_breakpoints,
    default_sections,
    discover_claude_md,
    environment_section,
    memory_section,
    with_breakpoints,
)
from harness.tools import ToolContext, tool

# --- the system prompt ---------------------------------------------------------------------


def prompt() -> SystemPrompt:
    return SystemPrompt(
        (
            Section("identity", "You are a coding agent."),
            Section("tool_use", "Use the tools.\n"),
            Section("environment", "Today's date: 2026-01-01", dynamic=True),
            Section("claude_md", "Use tabs.", dynamic=True),
        )
    )


def test_render_puts_the_static_sections_in_one_cached_block_then_the_dynamic_ones() -> None:
    assert prompt().render() == [
        {
            "type": "text",
            "text": "You are a coding agent.\n\nUse the tools.",
            "cache_control": {"type": "ephemeral"},
        },
        {"type": "text", "text": "Today's date: 2026-01-01\n\nUse tabs."},
    ]


def test_render_without_cache_has_no_breakpoint() -> None:
    blocks = prompt().render(cache=False)
    assert all("cache_control" not in b for b in blocks)
    assert [b["text"] for b in blocks] == [b["text"] for b in prompt().render()]


def test_rendering_is_byte_stable() -> None:
    first = json.dumps(prompt().render())
    assert json.dumps(prompt().render()) == first
    system = prompt()
    assert json.dumps(system.render()) == json.dumps(system.render()) == first


def test_rendered_blocks_are_fresh_each_time() -> None:
    system = prompt()
    blocks = system.render()
    blocks[0]["cache_control"]["ttl"] = "1h"
    assert system.render()[0]["cache_control"] == {"type": "ephemeral"}
    assert EPHEMERAL == {"type": "ephemeral"}


def test_a_static_section_after_a_dynamic_one_is_refused() -> None:
    with pytest.raises(ValueError, match="'late'"):
        SystemPrompt((Section("env", "x", dynamic=True), Section("late", "y")))


def test_a_prompt_with_only_static_sections_has_one_block() -> None:
    blocks = SystemPrompt(tuple(default_sections(["read_file", "grep"]))).render()
    assert len(blocks) == 1
    assert "read_file, grep" in blocks[0]["text"]
    assert blocks[0]["cache_control"] == {"type": "ephemeral"}


def test_a_prompt_with_only_dynamic_sections_has_no_breakpoint() -> None:
    blocks = SystemPrompt((Section("env", "x", dynamic=True),)).render()
    assert blocks == [{"type": "text", "text": "x"}]


# --- CLAUDE.md discovery -------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "project"


def test_no_files_gives_an_empty_list(root: Path, home: Path) -> None:
    root.mkdir()
    assert discover_claude_md(root, home=home) == []


def test_user_file_first_then_root_to_cwd_nearest_last(root: Path, home: Path) -> None:
    write(home / ".claude" / "CLAUDE.md", "user prefs")
    write(root / "CLAUDE.md", "project rules")
    write(root / ".claude" / "CLAUDE.md", "project rules, hidden")
    write(root / "pkg" / "CLAUDE.md", "package rules")
    write(root / "pkg" / "sub" / ".claude" / "CLAUDE.md", "sub rules")
    write(root / "other" / "CLAUDE.md", "not on the path")
    files = discover_claude_md(root, root / "pkg" / "sub", home=home)
    assert [(f.label, f.text) for f in files] == [
        ("~/.claude/CLAUDE.md", "user prefs"),
        ("CLAUDE.md", "project rules"),
        (".claude/CLAUDE.md", "project rules, hidden"),
        ("pkg/CLAUDE.md", "package rules"),
        ("pkg/sub/.claude/CLAUDE.md", "sub rules"),
    ]


def test_cwd_defaults_to_the_project_root(root: Path, home: Path) -> None:
    write(root / "CLAUDE.md", "project rules")
    write(root / "pkg" / "CLAUDE.md", "package rules")
    assert [f.label for f in discover_claude_md(root, home=home)] == ["CLAUDE.md"]


def test_imports_are_relative_to_the_importing_file(root: Path, home: Path) -> None:
    write(root / "docs" / "style.md", "root style")
    write(root / "pkg" / "docs" / "style.md", "package style")
    write(root / "CLAUDE.md", "Read @docs/style.md first.")
    write(root / "pkg" / "CLAUDE.md", "Then @docs/style.md and @../docs/style.md")
    files = discover_claude_md(root, root / "pkg", home=home)
    assert [f.text for f in files] == [
        "Read root style first.",
        "Then package style and root style",
    ]


def test_home_imports_resolve_against_the_given_home(root: Path, home: Path) -> None:
    write(home / "notes" / "mine.md", "my personal notes")
    write(root / "CLAUDE.md", "Also: @~/notes/mine.md")
    [file] = discover_claude_md(root, home=home)
    assert file.text == "Also: my personal notes"


def test_a_mention_that_is_not_a_file_is_left_as_written(root: Path, home: Path) -> None:
    text = "Ask @alice before merging; mail bob@example.com; see @missing.md."
    write(root / "CLAUDE.md", text)
    [file] = discover_claude_md(root, home=home)
    assert file.text == text
    assert file.notes == ()


def test_imports_inside_code_fences_are_not_followed(root: Path, home: Path) -> None:
    write(root / "secret.md", "SHOULD NOT APPEAR")
    text = "Example:\n```\n@secret.md\n```\nand inline `@secret.md` too."
    write(root / "CLAUDE.md", text)
    [file] = discover_claude_md(root, home=home)
    assert file.text == text


def test_an_import_cycle_is_noted_and_not_followed_forever(root: Path, home: Path) -> None:
    write(root / "a.md", "A imports @b.md")
    write(root / "b.md", "B imports @a.md")
    write(root / "CLAUDE.md", "top: @a.md")
    [file] = discover_claude_md(root, home=home)
    assert file.text.startswith("top: A imports B imports (import skipped: cycle")
    assert len(file.notes) == 1
    assert "cycle" in file.notes[0]
    assert "a.md → b.md → a.md" in file.notes[0]


def test_a_file_importing_itself_is_a_cycle(root: Path, home: Path) -> None:
    write(root / "CLAUDE.md", "me: @CLAUDE.md")
    [file] = discover_claude_md(root, home=home)
    assert "cycle" in file.text
    assert file.notes == ("import cycle skipped: CLAUDE.md → CLAUDE.md",)


def test_imports_stop_after_four_hops(root: Path, home: Path) -> None:
    # CLAUDE.md -> level1.md -> ... -> level6.md: seven files, six hops; four are followed.
    write(root / "CLAUDE.md", "level 0 @level1.md")
    for level in range(1, 7):
        write(root / f"level{level}.md", f"level {level} @level{level + 1}.md")
    [file] = discover_claude_md(root, home=home)
    for level in range(MAX_IMPORT_DEPTH + 1):
        assert f"level {level}" in file.text
    assert "level 5" not in file.text
    assert "more than 4 levels deep" in file.text
    assert len(file.notes) == 1
    assert "level5.md" in file.notes[0]
    assert "deeper than 4 levels" in file.notes[0]


def test_labels_and_notes_never_hold_absolute_paths(tmp_path: Path, root: Path, home: Path) -> None:
    write(home / ".claude" / "CLAUDE.md", "user: @loop.md")
    write(home / ".claude" / "loop.md", "@loop.md")
    write(root / "pkg" / "CLAUDE.md", "pkg")
    files = discover_claude_md(root, root / "pkg", home=home)
    assert [f.label for f in files] == ["~/.claude/CLAUDE.md", "pkg/CLAUDE.md"]
    for f in files:
        assert not f.label.startswith("/")
        assert str(tmp_path) not in f.label + f.text + "".join(f.notes)
    assert files[0].notes == (
        "import cycle skipped: ~/.claude/CLAUDE.md → ~/.claude/loop.md → ~/.claude/loop.md",
    )


def test_a_symlinked_claude_md_is_given_once(root: Path, home: Path) -> None:
    write(root / "CLAUDE.md", "project rules")
    (root / ".claude").mkdir()
    (root / ".claude" / "CLAUDE.md").symlink_to(root / "CLAUDE.md")
    assert [f.text for f in discover_claude_md(root, home=home)] == ["project rules"]


def test_with_home_as_the_project_root_the_user_file_is_given_once(home: Path) -> None:
    write(home / ".claude" / "CLAUDE.md", "user prefs")
    files = discover_claude_md(home, home=home)
    assert [f.text for f in files] == ["user prefs"]


def test_a_cwd_outside_the_project_root_is_refused(tmp_path: Path, root: Path, home: Path) -> None:
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(ValueError, match="inside the project root"):
        discover_claude_md(root, tmp_path / "elsewhere", home=home)


# --- the dynamic sections ------------------------------------------------------------------


def test_memory_section_is_none_without_files() -> None:
    assert memory_section([]) is None


def test_memory_section_carries_each_file_in_order_and_is_dynamic() -> None:
    files = [
        MemoryFile("~/.claude/CLAUDE.md", "Be brief."),
        MemoryFile("CLAUDE.md", "Use pytest."),
        MemoryFile("pkg/CLAUDE.md", "Tabs here."),
    ]
    section = memory_section(files)
    assert section is not None
    assert section.dynamic
    positions = [section.text.index(f"Contents of {f.label}:\n\n{f.text}") for f in files]
    assert positions == sorted(positions)


def test_environment_section_uses_the_injected_clock() -> None:
    clock = FakeClock()
    section = environment_section(clock, workspace_name="demo")
    assert section.dynamic
    assert "Today's date: 2026-01-01" in section.text
    assert "Working directory: demo" in section.text
    clock.advance(24 * 3600)
    assert "Today's date: 2026-01-02" in environment_section(clock, workspace_name="demo").text


def test_environment_section_is_byte_stable() -> None:
    clock = FakeClock()
    first = environment_section(clock, workspace_name="demo")
    clock.advance(3600)  # same day
    assert environment_section(clock, workspace_name="demo") == first


def test_a_full_prompt_renders_the_same_bytes_twice(root: Path, home: Path) -> None:
    write(root / "CLAUDE.md", "Use pytest.")

    def build() -> str:
        sections = [
            *default_sections(["read_file"]),
            environment_section(FakeClock(), workspace_name="p"),
        ]
        if (memory := memory_section(discover_claude_md(root, home=home))) is not None:
            sections.append(memory)
        return json.dumps(SystemPrompt(tuple(sections)).render())

    assert build() == build()


# --- breakpoints on a request --------------------------------------------------------------


def tool_def(name: str) -> dict[str, Any]:
    return {"name": name, "description": "d", "input_schema": {"type": "object"}}


def a_request(**changes: Any) -> ModelRequest:
    fields: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": [{"type": "text", "text": "an answer"}]},
            {"role": "user", "content": "second question"},
        ],
        "system": prompt().render(),
        "tools": [tool_def("read_file"), tool_def("grep")],
    }
    return ModelRequest(**{**fields, **changes})


def test_with_breakpoints_marks_the_last_tool_the_last_message_and_the_previous_end() -> None:
    cached = with_breakpoints(a_request())
    assert cached.tools is not None
    assert [("cache_control" in t) for t in cached.tools] == [False, True]
    assert cached.messages[-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "second question", "cache_control": {"type": "ephemeral"}}
        ],
    }
    # messages[-3] is where the previous request ended: the fourth breakpoint.
    assert cached.messages[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "first question", "cache_control": {"type": "ephemeral"}}
        ],
    }
    assert cached.messages[1] == a_request().messages[1]
    assert count_breakpoints(cached) == 4  # tools, static system, previous end, last message


def test_with_one_or_two_messages_there_is_no_previous_end_to_mark() -> None:
    one = a_request(messages=[{"role": "user", "content": "q"}])
    assert count_breakpoints(with_breakpoints(one)) == 3
    two = a_request(
        messages=[
            {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
            {"role": "user", "content": "q"},
        ]
    )
    assert count_breakpoints(with_breakpoints(two)) == 3


def test_the_previous_end_is_marked_only_when_it_is_a_user_message() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": [{"type": "text", "text": "prefilled"}]},
        {"role": "user", "content": "q"},
        {"role": "user", "content": "more"},  # not the loop's shape: left alone
    ]
    cached = with_breakpoints(a_request(messages=messages))
    assert "cache_control" not in json.dumps(cached.messages[0])
    assert count_breakpoints(cached) == 3


def test_with_breakpoints_marks_the_last_block_of_a_block_list() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]
    cached = with_breakpoints(a_request(messages=messages))
    assert [("cache_control" in b) for b in cached.messages[-1]["content"]] == [False, True]


def test_with_breakpoints_never_touches_the_agents_conversation() -> None:
    request = a_request(
        messages=[
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
            {"role": "user", "content": [{"type": "text", "text": "more"}]},
        ]
    )
    before = copy.deepcopy(request)
    cached = with_breakpoints(request)
    assert request == before
    assert "cache_control" not in json.dumps(request.messages)
    assert "cache_control" not in json.dumps(request.tools)
    assert cached.messages is not request.messages
    assert cached.messages[-1] is not request.messages[-1]


def test_with_breakpoints_without_tools_marks_only_the_messages() -> None:
    cached = with_breakpoints(a_request(tools=None, system=None))
    assert cached.tools is None
    assert count_breakpoints(cached) == 2  # the last message and the previous end


def test_the_fourth_breakpoint_is_left_out_when_there_is_no_room() -> None:
    # A system prompt with two breakpoints of its own: tools + 2 + last message is four.
    system = [
        {"type": "text", "text": "static", "cache_control": dict(EPHEMERAL)},
        {"type": "text", "text": "also cached", "cache_control": dict(EPHEMERAL)},
    ]
    cached = with_breakpoints(a_request(system=system))  # no error
    assert count_breakpoints(cached) == 4
    assert "cache_control" not in json.dumps(cached.messages[0])
    assert "cache_control" in cached.messages[-1]["content"][-1]


def test_an_existing_breakpoint_on_the_previous_end_is_kept() -> None:
    hour = {"type": "ephemeral", "ttl": "1h"}
    messages = a_request().messages
    messages[0] = {
        "role": "user",
        "content": [{"type": "text", "text": "q", "cache_control": hour}],
    }
    cached = with_breakpoints(a_request(messages=messages))
    assert cached.messages[0]["content"][-1]["cache_control"] == hour
    assert count_breakpoints(cached) == 4


def test_the_fourth_breakpoint_lasts_an_hour_when_a_later_one_does() -> None:
    hour = {"type": "ephemeral", "ttl": "1h"}
    messages = a_request().messages
    messages[-1] = {
        "role": "user",
        "content": [{"type": "text", "text": "q", "cache_control": hour}],
    }
    cached = with_breakpoints(a_request(messages=messages, system=None, tools=None))
    assert cached.messages[0]["content"][-1]["cache_control"] == hour
    check_breakpoints(cached.tools, cached.system, cached.messages)  # the API would accept it


def test_four_breakpoints_are_allowed() -> None:
    messages = a_request().messages
    messages[1]["content"][0]["cache_control"] = dict(EPHEMERAL)
    assert count_breakpoints(with_breakpoints(a_request(messages=messages))) == 4


def test_more_than_four_breakpoints_are_refused_before_sending() -> None:
    messages: list[dict[str, Any]] = []
    for i in range(3):  # three breakpoints already in the conversation
        marked = {"type": "text", "text": f"q{i}", "cache_control": dict(EPHEMERAL)}
        messages.append({"role": "user", "content": [marked]})
        messages.append({"role": "assistant", "content": f"a{i}"})
    messages.append({"role": "user", "content": "last"})
    with pytest.raises(TooManyBreakpoints, match="6 cache breakpoints") as refused:
        with_breakpoints(a_request(messages=messages))
    assert isinstance(refused.value, ValueError)


# --- the plugin, through the agent ---------------------------------------------------------


class EchoInput(BaseModel):
    text: str


@tool(EchoInput, read_only=True)
def echo(args: EchoInput, context: ToolContext) -> str:
    """Say the text back."""
    return args.text


def big_static_prompt() -> SystemPrompt:
    manual = Section("manual", "Project manual. " + "Follow the house style. " * 250)
    return SystemPrompt(
        (
            *default_sections(["echo"]),
            manual,
            environment_section(FakeClock(), workspace_name="demo"),
        )
    )


def test_prompt_caching_moves_the_breakpoint_and_reads_from_the_second_request(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [
            reply(tool_calls=[tool_call("echo", text="one")]),
            reply(tool_calls=[tool_call("echo", text="two")]),
            reply(tool_calls=[tool_call("echo", text="three")]),
            reply("done"),
        ]
    )
    caching = PromptCaching()
    agent = Agent(
        model,
        tools=[echo],
        system=big_static_prompt().render(),
        workspace=tmp_path,
        clock=FakeClock(),
        plugins=[caching],
    )
    list(agent.run("echo three things"))
    assert len(model.requests) == len(caching.requests) == 4
    for request in model.requests:
        assert request.messages[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
        marked = sum("cache_control" in json.dumps(m) for m in request.messages)
        assert marked == (2 if len(request.messages) >= 3 else 1)  # last, and previous end
        assert request.tools is not None and "cache_control" in request.tools[-1]
    assert "cache_control" not in json.dumps(agent.messages)
    reads = [c.usage.cache_read_input_tokens or 0 for c in agent.meter.calls]
    assert reads[0] == 0
    assert all(r > 0 for r in reads[1:])
    assert reads == sorted(reads)  # each request reads the whole previous conversation
    for request in model.requests[1:]:
        assert request.cache is not None
        assert request.cache.read_until is not None
        assert request.cache.read_until.startswith("messages[")


def test_automatic_prompt_caching_sends_one_top_level_cache_control(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            reply(tool_calls=[tool_call("echo", text="one")]),
            reply(tool_calls=[tool_call("echo", text="two")]),
            reply("done"),
        ]
    )
    caching = PromptCaching(automatic=True)
    agent = Agent(
        model,
        tools=[echo],
        system=big_static_prompt().render(),
        workspace=tmp_path,
        clock=FakeClock(),
        plugins=[caching],
    )
    list(agent.run("echo two things"))
    for request in model.requests:
        assert request.extra["cache_control"] == {"type": "ephemeral"}
        assert "cache_control" not in json.dumps(request.messages)  # nothing marked by hand
        assert request.tools is not None and "cache_control" not in request.tools[-1]
        assert request.cache is not None and request.cache.uncached == 0
    reads = [c.usage.cache_read_input_tokens or 0 for c in agent.meter.calls]
    assert reads[0] == 0 and all(r > 0 for r in reads[1:]) and reads == sorted(reads)


def test_prompt_caching_is_explicit_by_default() -> None:
    assert PromptCaching().automatic is False


def test_with_automatic_caching_leaves_the_request_it_was_given_alone() -> None:
    from harness.loop import ModelRequest
    from harness.prompt import with_automatic_caching

    request = ModelRequest(
        model="claude-sonnet-4-6", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    hour = with_automatic_caching(request, ttl="1h")
    assert hour.extra == {"cache_control": {"type": "ephemeral", "ttl": "1h"}}
    assert request.extra == {}
    assert hour.kwargs()["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_tools_get_a_one_hour_breakpoint_when_the_system_prompt_caches_for_an_hour() -> None:
    from harness.loop import ModelRequest
    from harness.prompt import with_breakpoints

    hour = {"type": "ephemeral", "ttl": "1h"}
    request = ModelRequest(
        model="claude-sonnet-4-6",
        max_tokens=100,
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": hour}]}
        ],
        system=[{"type": "text", "text": "static", "cache_control": hour}],
        tools=[{"name": "t", "description": "d", "input_schema": {"type": "object"}}],
    )
    cached = with_breakpoints(request)
    assert cached.tools is not None
    assert cached.tools[-1]["cache_control"] == hour
    assert cached.messages[-1]["content"][-1]["cache_control"] == hour  # not overwritten


# --- the fourth breakpoint: a turn that adds more positions than the lookback reaches --------


def wide_turn(tmp_path: Path, *outer: Plugin) -> tuple[Agent, ScriptedModel, PromptCaching]:
    """One narrow call, then a reply with a line of text and fifteen parallel calls (31 new
    blocks, but three positions: a run of tool_use blocks and a run of tool_result blocks are
    one position each)."""
    model = ScriptedModel(
        [
            reply(tool_calls=[tool_call("echo", text="warm up")]),
            reply(
                "All fifteen at once.",
                tool_calls=[tool_call("echo", text=f"call {i}") for i in range(15)],
            ),
            reply("done"),
        ]
    )
    caching = PromptCaching()
    agent = Agent(
        model,
        tools=[echo],
        system=big_static_prompt().render(),
        workspace=tmp_path,
        clock=FakeClock(),
        plugins=[*outer, caching],
    )
    list(agent.run("echo a lot"))
    return agent, model, caching


def moving_breakpoint_alone(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as sent, without the fourth breakpoint (the one on ``messages[-3]``)."""
    only_last = copy.deepcopy(messages)
    del only_last[-3]["content"][-1]["cache_control"]
    assert sum("cache_control" in json.dumps(m) for m in only_last) == 1
    return only_last


def test_a_wide_parallel_turn_reads_the_previous_request_from_cache(tmp_path: Path) -> None:
    agent, model, _ = wide_turn(tmp_path)
    wide = model.requests[2]  # the request after the fifteen-call reply and its results
    assert len(wide.messages[-2]["content"]) + len(wide.messages[-1]["content"]) == 31
    previous_prompt = agent.meter.calls[1].prompt_tokens
    assert (agent.meter.calls[2].usage.cache_read_input_tokens or 0) >= previous_prompt
    assert wide.cache is not None
    assert wide.cache.read == previous_prompt
    assert wide.cache.read_until == f"messages[{len(wide.messages) - 3}].content[0]"


def test_the_moving_breakpoint_alone_bridges_a_wide_parallel_turn(tmp_path: Path) -> None:
    # 31 blocks but 3 positions: the API's rule, and so the simulator's (chapter 03).
    _, model, _ = wide_turn(tmp_path)
    before, wide = model.requests[1], model.requests[2]
    cache = PromptCache()
    previous = cache.process(
        model=wide.model, tools=wide.tools, system=before.system, messages=before.messages
    )
    alone = cache.process(
        model=wide.model,
        tools=wide.tools,
        system=wide.system,
        messages=moving_breakpoint_alone(wide.messages),
    )
    assert alone.read == previous.total


def narrated(n: int) -> list[dict[str, Any]]:
    """A reply that puts a line of text before each of its ``n`` calls (text, call, text,
    call: two positions a call), then the user message with their results (one position)."""
    said: list[dict[str, Any]] = []
    for i in range(n):
        said.append({"type": "text", "text": f"Now call {i}."})
        said.append({"type": "tool_use", "id": f"toolu_n{i}", "name": "echo", "input": {}})
    results = [
        {"type": "tool_result", "tool_use_id": f"toolu_n{i}", "content": f"call {i}"}
        for i in range(n)
    ]
    return [{"role": "assistant", "content": said}, {"role": "user", "content": results}]


@pytest.mark.parametrize(("n", "alone_reads"), [(9, True), (10, False)])
def test_without_the_fourth_breakpoint_a_narrated_turn_of_21_positions_misses(
    tmp_path: Path, n: int, alone_reads: bool
) -> None:
    agent, model, _ = wide_turn(tmp_path)
    sent = model.requests[1]
    start = ModelRequest(
        sent.model, 1000, copy.deepcopy(agent.messages[:3]), sent.system, sent.tools
    )
    before = with_breakpoints(start)
    after = with_breakpoints(replace(start, messages=[*start.messages, *narrated(n)]))

    def process(cache: PromptCache, request: ModelRequest) -> Any:
        return cache.process(
            model=request.model,
            tools=request.tools,
            system=request.system,
            messages=request.messages,
        )

    without = PromptCache()
    previous = process(without, before)
    alone = replace(after, messages=moving_breakpoint_alone(after.messages))
    missed = process(without, alone)
    assert (missed.read == previous.total) is alone_reads  # 2n + 1 positions: 19 reach, 21 not
    if not alone_reads:
        assert missed.read_until == "system[0]"  # only the tools and the static prompt
        assert "20 or more positions" in missed.explanation

    with_fourth = PromptCache()
    process(with_fourth, before)
    hit = process(with_fourth, after)
    assert hit.read == previous.total
    assert hit.written <= missed.written


class Unchanged(Plugin):
    """The outermost layer: checks that the layers inside it left the conversation alone."""

    def __init__(self) -> None:
        self.checked = 0

    def call_model(
        self, agent: Agent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        before = copy.deepcopy(agent.messages)
        sent = copy.deepcopy(request)
        result = call(request)
        assert agent.messages == before
        assert request == sent
        self.checked += 1
        return result


def test_the_fourth_breakpoint_never_marks_the_agents_conversation(tmp_path: Path) -> None:
    unchanged = Unchanged()
    agent, model, caching = wide_turn(tmp_path, unchanged)
    assert unchanged.checked == len(model.requests) == 3
    assert "cache_control" not in json.dumps(agent.messages)
    assert [count_breakpoints(r) for r in caching.requests] == [3, 4, 4]
    for sent, kept in zip(caching.requests[1:], agent.messages[::2][:2], strict=True):
        assert sent.messages[-3]["content"][-1]["cache_control"] == EPHEMERAL
        assert "cache_control" not in json.dumps(kept)
