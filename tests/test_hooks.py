"""Hooks: your code before and after each tool call, and when the model wants to stop."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Message
from pydantic import BaseModel

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.events import Event, HookReported, ModelCalled, TurnEnded
from harness.loop import StopHook
from harness.model import ScriptedModel, reply, tool_call
from harness.tools import Tool, ToolContext, tool
from harness.tools.hooks import Hooks, PreToolUseResult, ToolUse
from harness.tools.permissions import Permissions


class TextInput(BaseModel):
    text: str


def recording_tool(name: str, calls: list[tuple[str, str]]) -> Tool[TextInput]:
    """A tool that records what it was called with and answers ``<name>: <text>``."""

    def run(args: TextInput, context: ToolContext) -> str:
        calls.append((name, args.text))
        return f"{name}: {args.text}"

    run.__doc__ = f"The {name} tool."
    return tool(TextInput, name=name)(run)


def run_agent(
    script: list[Any],
    tmp_path: Path,
    hooks: Hooks,
    tools: list[Tool[Any]],
    stop_hooks: Sequence[StopHook] = (),
) -> tuple[Agent, ScriptedModel, list[Event]]:
    model = ScriptedModel(script)
    agent = Agent(
        model,
        tools=tools,
        workspace=tmp_path,
        clock=FakeClock(),
        hooks=hooks,
        stop_hooks=stop_hooks,
        permissions=Permissions(mode="bypass"),
    )
    events = list(agent.run("go"))
    assert m.validate(agent.messages) == []
    return agent, model, events


def reports(events: list[Event]) -> list[HookReported]:
    return [e for e in events if isinstance(e, HookReported)]


def first_result(agent: Agent) -> m.Block:
    return m.tool_results(agent.messages[2])[0]


# --- PreToolUse ------------------------------------------------------------------------------


def test_a_pre_tool_use_hook_can_block_a_call(tmp_path: Path) -> None:
    calls: list[tuple[str, str]] = []
    hooks = Hooks()
    hooks.on_pre_tool_use(lambda use: PreToolUseResult(block=True, reason="not on Fridays"))
    script = [reply(tool_calls=[tool_call("note", text="hi")]), reply("ok")]

    agent, _, events = run_agent(script, tmp_path, hooks, [recording_tool("note", calls)])

    assert calls == []
    assert first_result(agent)["is_error"] is True
    assert first_result(agent)["content"] == "A PreToolUse hook blocked this call: not on Fridays"
    assert reports(events) == [HookReported("PreToolUse", "note", "blocked", "not on Fridays")]


def test_a_pre_tool_use_hook_can_change_the_input(tmp_path: Path) -> None:
    calls: list[tuple[str, str]] = []
    hooks = Hooks()
    hooks.on_pre_tool_use(lambda use: PreToolUseResult(input={"text": use.input["text"].upper()}))
    script = [reply(tool_calls=[tool_call("note", text="hi")]), reply("ok")]

    agent, _, events = run_agent(script, tmp_path, hooks, [recording_tool("note", calls)])

    assert calls == [("note", "HI")]
    assert first_result(agent)["content"] == "note: HI"
    assert reports(events) == [
        HookReported("PreToolUse", "note", "changed input", '{"text": "HI"}')
    ]


def test_input_changed_into_something_invalid_gets_a_validation_error(tmp_path: Path) -> None:
    calls: list[tuple[str, str]] = []
    hooks = Hooks()
    hooks.on_pre_tool_use(lambda use: PreToolUseResult(input={"txt": "oops"}))
    script = [reply(tool_calls=[tool_call("note", text="hi")]), reply("ok")]

    agent, _, _ = run_agent(script, tmp_path, hooks, [recording_tool("note", calls)])

    assert calls == []
    result = first_result(agent)
    assert result["is_error"] is True
    assert "Invalid input for tool 'note'" in result["content"]
    assert "- text: Field required" in result["content"]


def test_a_matcher_with_alternatives_runs_only_for_those_tools(tmp_path: Path) -> None:
    calls: list[tuple[str, str]] = []
    seen: list[str] = []
    hooks = Hooks()
    hooks.on_pre_tool_use(lambda use: seen.append(use.name), matcher="write_file|edit_file")
    names = ["read_file", "write_file", "edit_file", "write_file_backup"]
    tools = [recording_tool(name, calls) for name in names]
    script = [reply(tool_calls=[tool_call(name, text="x") for name in names]), reply("ok")]

    run_agent(script, tmp_path, hooks, tools)

    assert seen == ["write_file", "edit_file"]
    assert [name for name, _ in calls] == names


def test_a_star_matcher_runs_for_every_tool(tmp_path: Path) -> None:
    calls: list[tuple[str, str]] = []
    seen: list[str] = []
    hooks = Hooks()
    hooks.on_pre_tool_use(lambda use: seen.append(use.name), matcher="*")
    hooks.on_post_tool_use(lambda use, text, error: seen.append(f"after {use.name}"))
    tools = [recording_tool(name, calls) for name in ("a", "b")]
    script = [reply(tool_calls=[tool_call("a", text="x"), tool_call("b", text="y")]), reply("ok")]

    run_agent(script, tmp_path, hooks, tools)

    assert seen == ["a", "b", "after a", "after b"]


# --- PostToolUse -----------------------------------------------------------------------------


def test_a_post_tool_use_hook_can_replace_the_result(tmp_path: Path) -> None:
    calls: list[tuple[str, str]] = []
    hooks = Hooks()

    def redact(use: ToolUse, text: str, is_error: bool) -> str:
        return text.replace("secret", "[redacted]")

    hooks.on_post_tool_use(redact)
    script = [reply(tool_calls=[tool_call("note", text="my secret")]), reply("ok")]

    _, model, events = run_agent(script, tmp_path, hooks, [recording_tool("note", calls)])

    sent = m.tool_results(model.requests[1].messages[-1])[0]
    assert sent["content"] == "note: my [redacted]"
    assert reports(events)[0].outcome == "changed result"


# --- broken hooks ------------------------------------------------------------------------------


def broken(*args: Any) -> Any:
    raise RuntimeError("hook bug")


def test_a_raising_pre_tool_use_hook_is_reported_and_the_tool_still_runs(tmp_path: Path) -> None:
    calls: list[tuple[str, str]] = []
    hooks = Hooks()
    hooks.on_pre_tool_use(broken)
    script = [reply(tool_calls=[tool_call("note", text="hi")]), reply("ok")]

    agent, _, events = run_agent(script, tmp_path, hooks, [recording_tool("note", calls)])

    assert calls == [("note", "hi")]
    assert first_result(agent)["content"] == "note: hi"
    assert reports(events) == [
        HookReported("PreToolUse", "note", "failed", "hook broken raised RuntimeError: hook bug")
    ]
    assert isinstance(events[-1], TurnEnded)


def test_a_raising_post_tool_use_hook_is_reported_and_the_result_kept(tmp_path: Path) -> None:
    calls: list[tuple[str, str]] = []
    hooks = Hooks()
    hooks.on_post_tool_use(broken)
    script = [reply(tool_calls=[tool_call("note", text="hi")]), reply("ok")]

    agent, _, events = run_agent(script, tmp_path, hooks, [recording_tool("note", calls)])

    assert calls == [("note", "hi")]
    assert first_result(agent)["content"] == "note: hi"
    assert [(r.hook, r.outcome) for r in reports(events)] == [("PostToolUse", "failed")]
    assert isinstance(events[-1], TurnEnded)


def test_a_raising_stop_hook_is_reported_and_the_run_ends(tmp_path: Path) -> None:
    _, _, events = run_agent([reply("done")], tmp_path, Hooks(), [], stop_hooks=[broken])

    assert reports(events) == [
        HookReported("Stop", "", "failed", "hook broken raised RuntimeError: hook bug")
    ]
    assert events[-1] == TurnEnded(1, "end_turn")


# --- Stop ----------------------------------------------------------------------------------------


def test_a_stop_hook_with_a_reason_sends_it_to_the_model_and_keeps_going(tmp_path: Path) -> None:
    asked: list[str] = []

    def tests_first(final: Message) -> str | None:
        asked.append(final.id)
        return "Run the tests before you stop." if len(asked) == 1 else None

    agent, model, events = run_agent(
        [reply("done"), reply("tests pass")], tmp_path, Hooks(), [], stop_hooks=[tests_first]
    )

    assert len(model.requests) == 2
    assert model.requests[1].messages[-1] == m.user("Run the tests before you stop.")
    assert HookReported("Stop", "", "continued", "Run the tests before you stop.") in events
    assert sum(isinstance(e, ModelCalled) for e in events) == 2
    assert events[-1] == TurnEnded(2, "end_turn")
    assert m.text_of(agent.messages[-1]) == "tests pass"


def test_a_stop_hook_returning_none_lets_the_run_end(tmp_path: Path) -> None:
    _, model, events = run_agent(
        [reply("done")], tmp_path, Hooks(), [], stop_hooks=[lambda final: None]
    )

    assert len(model.requests) == 1
    assert reports(events) == []
    assert events[-1] == TurnEnded(1, "end_turn")


def test_a_matcher_that_is_not_a_valid_pattern_is_refused_when_the_hook_is_added() -> None:
    hooks = Hooks()
    with pytest.raises(ValueError, match="not a valid pattern"):
        hooks.on_pre_tool_use(lambda use: None, matcher="write_file(")
