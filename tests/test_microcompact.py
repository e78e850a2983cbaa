"""Tier 1, microcompact: which results are cleared, when the plugin fires, and how the context
size is tracked between requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Message, TextBlock, Usage
from pydantic import BaseModel

from harness import messages as m
from harness import tokens
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.context import Anchor, ContextTracker, context_size, prompt_tokens
from harness.compaction.events import Compacted
from harness.compaction.microcompact import (
    CLEARED,
    COMPACTABLE_TOOLS,
    KEEP_RECENT,
    Microcompact,
    clearable_count,
    microcompact,
    seen_results,
)
from harness.events import Event, TurnEnded
from harness.loop import AgentConfig, Plugin
from harness.model import ScriptedModel, reply, tool_call
from harness.tools import ToolContext, builtin_tools, tool

# --- conversations by hand ----------------------------------------------------------------

FILE_BODY = "".join(f"{i:>6}\tvalue_{i} = compute({i})\n" for i in range(40))
"""A result far bigger than the marker (about 280 tokens)."""


def round_(n: int, name: str = "read_file", *, is_error: bool = False) -> list[m.MessageDict]:
    """One API round: the model calls ``name``, the next user message holds its result."""
    use = m.tool_use(f"toolu_{n:03d}", name, {"path": f"f{n}.py"})
    result = m.tool_result(use["id"], f"f{n}.py:\n{FILE_BODY}", is_error=is_error)
    return [m.assistant([m.text(f"Reading f{n}.py."), use]), m.user([result])]


def session(names: list[str], *, replied: bool = False) -> list[m.MessageDict]:
    """A prompt, one round per tool name, and (if ``replied``) a final text reply.

    Without the final reply the conversation ends on results the model has not seen yet:
    the state just before a request.
    """
    messages = [m.user("Look through the files.")]
    for n, name in enumerate(names):
        messages += round_(n, name)
    if replied:
        messages.append(m.assistant("Done."))
    return messages


def result_blocks(messages: list[m.MessageDict]) -> list[dict[str, Any]]:
    return [b for message in messages for b in m.tool_results(message)]


def cleared_ids(messages: list[m.MessageDict]) -> list[str]:
    return [b["tool_use_id"] for b in result_blocks(messages) if b["content"] == CLEARED]


# --- what is cleared ------------------------------------------------------------------------


def test_the_marker_and_the_numbers_are_claude_codes() -> None:
    assert CLEARED == "[Old tool result content cleared]"
    assert KEEP_RECENT == 5
    assert {"read_file", "bash", "grep", "glob", "edit_file", "write_file"} <= COMPACTABLE_TOOLS


def test_all_but_the_five_most_recent_results_are_cleared_by_default() -> None:
    messages = session(["read_file"] * 8, replied=True)

    result = microcompact(messages)

    assert cleared_ids(result.messages) == ["toolu_000", "toolu_001", "toolu_002"]
    assert result.cleared == ("toolu_000", "toolu_001", "toolu_002")
    recent = result_blocks(result.messages)[3:]
    assert recent == result_blocks(messages)[3:]
    assert m.validate(result.messages) == []


def test_a_cleared_result_keeps_its_id_and_only_its_content_changes() -> None:
    messages = session(["bash"] * 6, replied=True)
    result = microcompact(messages)
    old, new = messages[2]["content"][0], result.messages[2]["content"][0]
    assert new == {"type": "tool_result", "tool_use_id": old["tool_use_id"], "content": CLEARED}
    assert messages[2]["content"][0]["content"] != CLEARED  # the input is untouched


def test_keep_is_the_number_of_recent_compactable_results_left_alone() -> None:
    messages = session(["grep"] * 6, replied=True)
    assert len(microcompact(messages, keep=0).cleared) == 6
    assert len(microcompact(messages, keep=2).cleared) == 4
    assert len(microcompact(messages, keep=6).cleared) == 0


def test_results_of_other_tools_are_never_cleared_and_do_not_count_as_recent() -> None:
    # A custom tool's output may not be reproducible (a deployment, an answer from the user):
    # it stays, however old. It does not use up one of the five "recent" places either.
    names = ["deploy", "read_file", "ask_user", *["read_file"] * 5]
    messages = session(names, replied=True)

    result = microcompact(messages, keep=5)

    assert cleared_ids(result.messages) == ["toolu_001"]
    assert microcompact(messages, keep=0).cleared == tuple(
        f"toolu_{n:03d}" for n in range(8) if names[n] == "read_file"
    )


def test_a_custom_set_of_compactable_tools_can_be_given() -> None:
    messages = session(["deploy", "read_file"], replied=True)
    result = microcompact(messages, keep=0, compactable=frozenset({"deploy"}))
    assert result.cleared == ("toolu_000",)


def test_error_results_of_compactable_tools_are_cleared_too_and_stay_errors() -> None:
    # By design: a failed read can be retried like a successful one. The is_error flag stays,
    # so the model still knows that the old call failed.
    messages = [m.user("Go."), *round_(0, "read_file", is_error=True)]
    messages += [*round_(1, "read_file"), m.assistant("Done.")]

    result = microcompact(messages, keep=1)

    assert result.cleared == ("toolu_000",)
    assert result.messages[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_000",
        "content": CLEARED,
        "is_error": True,
    }


def test_results_the_model_has_not_seen_are_never_cleared_even_with_keep_zero() -> None:
    # Four calls in one reply, results not sent yet (the pitfall of a course that cleared
    # results the model had not seen when several tools ran in parallel).
    uses = [m.tool_use(f"toolu_{n}", "read_file", {"path": f"f{n}.py"}) for n in range(4)]
    results = [m.tool_result(u["id"], FILE_BODY) for u in uses]
    messages = [*session(["read_file"]), m.assistant(uses), m.user(results)]

    result = microcompact(messages, keep=0)

    assert result.cleared == ("toolu_000",)
    assert result.messages[-1] == messages[-1]
    assert seen_results(messages) == [(2, 0)]
    assert clearable_count(messages, keep=0) == 1


def test_a_conversation_ending_on_a_reply_has_seen_every_result() -> None:
    messages = session(["read_file"] * 3, replied=True)
    assert seen_results(messages) == [(2, 0), (4, 0), (6, 0)]
    assert len(seen_results(messages[:-1])) == 2


def test_messages_without_anything_to_clear_are_shared_not_copied() -> None:
    messages = session(["read_file"] * 7, replied=True)
    result = microcompact(messages)
    assert result.first_changed == 2
    assert all(a is b for a, b in zip(result.messages[5:], messages[5:], strict=True))
    assert result.messages[2] is not messages[2]
    assert result.messages[1] is messages[1]


def test_tokens_freed_is_the_difference_in_the_request_estimate() -> None:
    messages = session(["read_file"] * 7, replied=True)
    result = microcompact(messages)
    assert result.tokens_freed > 0
    assert result.tokens_freed == tokens.estimate_request(messages) - tokens.estimate_request(
        result.messages
    )


def test_clearing_twice_clears_nothing_the_second_time() -> None:
    once = microcompact(session(["read_file"] * 7, replied=True))
    twice = microcompact(once.messages)
    assert twice.messages == once.messages
    assert (twice.cleared, twice.tokens_freed, twice.first_changed) == ((), 0, None)
    assert clearable_count(once.messages) == 0


def test_clearable_count_is_what_microcompact_would_clear() -> None:
    messages = session(["read_file", "deploy", *["grep"] * 8])
    for keep in range(0, 10):
        assert clearable_count(messages, keep=keep) == len(
            microcompact(messages, keep=keep).cleared
        )


# --- the plugin, in the loop ----------------------------------------------------------------


class LookupInput(BaseModel):
    key: str


@tool(LookupInput, read_only=True)
def lookup(args: LookupInput, context: ToolContext) -> str:
    """Look a key up in the project's settings (not a compactable tool)."""
    return f"{args.key} = " + "setting " * 100


class Wait(Plugin):
    """Lets time pass before every request (a user away from the keyboard, a slow tool)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def before_request(self, agent: Agent) -> None:
        assert isinstance(agent.clock, FakeClock)
        agent.clock.advance(self.seconds)


def workspace(tmp_path: Path, files: int = 20) -> Path:
    for n in range(files):
        (tmp_path / f"f{n}.py").write_text(FILE_BODY)
    return tmp_path


def reading_agent(
    tmp_path: Path, reads: int, plugins: list[Plugin], *, tool_name: str = "read_file"
) -> tuple[Agent, ScriptedModel]:
    clock = FakeClock()
    args = (lambda n: {"path": f"f{n}.py"}) if tool_name == "read_file" else (lambda n: {"key": n})
    script = [reply(tool_calls=[tool_call(tool_name, args(n))]) for n in range(reads)]
    model = ScriptedModel([*script, reply("Read them all.")], clock=clock)
    agent = Agent(
        model,
        tools=[*builtin_tools(), lookup],
        workspace=workspace(tmp_path),
        clock=clock,
        plugins=plugins,
        config=AgentConfig(max_turns=reads + 1),
    )
    return agent, model


def run_checked(agent: Agent, prompt: str) -> list[Event]:
    """Run to the end; the conversation is valid after every event (but for pending calls)."""
    events = []
    for event in agent.run(prompt):
        problems = [
            p
            for p in m.validate(agent.messages)
            if not (p.kind == "tool_use_unanswered" and p.index == len(agent.messages) - 1)
        ]
        assert problems == [], f"invalid after {event}"
        events.append(event)
    assert m.validate(agent.messages) == []
    return events


def compactions(events: list[Event]) -> list[Compacted]:
    return [e for e in events if isinstance(e, Compacted)]


def test_the_count_trigger_fires_once_ten_results_can_be_cleared(tmp_path: Path) -> None:
    # Before request n+1 there are n results, the newest not seen yet: n - 5 are clearable.
    # So the plugin fires before request 16 (10 clearable), and not before.
    agent, model = reading_agent(tmp_path, 16, [Microcompact()])

    events = run_checked(agent, "Read f0.py to f15.py.")

    [event] = compactions(events)
    assert (event.tier, event.trigger) == ("microcompact", "count")
    assert event.tokens_after < event.tokens_before
    assert "cleared 10 results" in event.detail
    assert "messages[2]" in event.detail  # the first result: the cache misses from there
    assert len(cleared_ids(agent.messages)) == 10
    # Requests 1-15 went out untouched; request 16 was the first with cleared results.
    assert all(CLEARED not in str(r.messages) for r in model.requests[:15])
    assert str(model.requests[15].messages).count(CLEARED) == 10
    assert isinstance(events[-1], TurnEnded)


def test_the_count_trigger_does_not_fire_below_min_clearable(tmp_path: Path) -> None:
    # Fourteen reads: nine clearable before the last request.
    agent, _ = reading_agent(tmp_path, 14, [Microcompact()])
    events = run_checked(agent, "Read f0.py to f13.py.")
    assert compactions(events) == []
    assert cleared_ids(agent.messages) == []


def test_min_clearable_sets_the_batch_size(tmp_path: Path) -> None:
    agent, _ = reading_agent(tmp_path, 9, [Microcompact(min_clearable=2)])
    events = run_checked(agent, "Read nine files.")
    # With k results sent back, k - 5 are clearable less those already cleared: 1 at k=6,
    # 2 at k=7 (fires, clears 2), 1 at k=8, 2 at k=9 (fires again).
    assert ["cleared 2 results" in e.detail for e in compactions(events)] == [True, True]


def test_results_of_a_custom_tool_never_trigger_or_get_cleared(tmp_path: Path) -> None:
    agent, _ = reading_agent(tmp_path, 16, [Microcompact()], tool_name="lookup")
    events = run_checked(agent, "Look up sixteen keys.")
    assert compactions(events) == []
    assert cleared_ids(agent.messages) == []


def test_the_time_trigger_fires_after_five_idle_minutes_even_with_few_results(
    tmp_path: Path,
) -> None:
    # Seven results: only two are clearable, far below the batch of ten. But the cache went
    # cold while the tools ran (301 s > the 5-minute TTL), so clearing costs nothing extra.
    plugin = Microcompact()
    agent, _ = reading_agent(tmp_path, 7, [Wait(301), plugin])

    events = run_checked(agent, "Read seven files slowly.")

    triggers = [(e.tier, e.trigger) for e in compactions(events)]
    assert triggers == [("microcompact", "time"), ("microcompact", "time")]
    assert "cleared 1 results" in compactions(events)[0].detail
    assert cleared_ids(agent.messages) == ["toolu_0001", "toolu_0002"]


def test_the_time_trigger_does_not_fire_within_the_cache_ttl(tmp_path: Path) -> None:
    agent, _ = reading_agent(tmp_path, 7, [Wait(299), Microcompact()])
    events = run_checked(agent, "Read seven files at a steady pace.")
    assert compactions(events) == []


def test_the_trigger_decision_at_the_boundaries(tmp_path: Path) -> None:
    clock = FakeClock()
    agent = Agent(ScriptedModel(), workspace=tmp_path, clock=clock)
    plugin = Microcompact()
    agent.messages = session(["read_file"] * 7)  # two clearable
    assert plugin.trigger(agent) is None  # no reply yet: not idle
    plugin.after_reply(agent, reply_message())
    clock.advance(300)
    assert plugin.trigger(agent) is None  # exactly the TTL: the cache is still warm
    clock.advance(1)
    assert plugin.trigger(agent) == "time"
    agent.messages = session(["read_file"] * 15)  # ten clearable
    assert plugin.trigger(agent) == "time"  # idle wins when both apply
    plugin.after_reply(agent, reply_message())
    assert plugin.trigger(agent) == "count"
    agent.messages = session(["deploy"] * 20)  # nothing clearable: no reason ever
    clock.advance(10_000)
    assert plugin.trigger(agent) is None


# --- knowing the context size ----------------------------------------------------------------


def reply_message(input_tokens: int = 10, output_tokens: int = 5, **cache: int) -> Message:
    return Message(
        id="msg_x",
        type="message",
        role="assistant",
        model="claude-sonnet-4-6",
        content=[TextBlock(type="text", text="ok")],
        stop_reason="end_turn",
        usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens, **cache),
    )


def test_prompt_tokens_counts_cache_reads_and_writes() -> None:
    usage = Usage(
        input_tokens=10,
        output_tokens=7,
        cache_creation_input_tokens=200,
        cache_read_input_tokens=3000,
    )
    assert prompt_tokens(usage) == 3210


def test_context_size_without_an_anchor_is_the_estimate() -> None:
    messages = session(["read_file"] * 3)
    system = "You are a careful agent."
    tools = [t.definition() for t in builtin_tools()]
    assert context_size(messages, system=system, tools=tools) == tokens.estimate_request(
        messages, system=system, tools=tools
    )


def test_context_size_with_an_anchor_adds_only_what_came_after() -> None:
    messages = session(["read_file"] * 3)  # the last reply is messages[5]
    after = tokens.estimate_message(messages[6])
    assert context_size(messages, anchor=Anchor(5, 50_000)) == 50_000 + after
    assert context_size(messages, anchor=Anchor(6, 50_000)) == 50_000
    # An anchor past the end belongs to a conversation that has since been rewritten.
    assert context_size(messages, anchor=Anchor(7, 50_000)) == tokens.estimate_request(messages)


def test_the_tracker_anchors_on_the_last_replys_usage(tmp_path: Path) -> None:
    tracker = ContextTracker()
    agent, _ = reading_agent(tmp_path, 3, [tracker])
    list(agent.run("Read three files."))
    last = agent.meter.calls[-1].usage
    assert tracker.anchor is not None
    assert (tracker.anchor.index, tracker.anchor.tokens) == (
        len(agent.messages) - 1,
        prompt_tokens(last) + last.output_tokens,
    )
    # Offline the usage is the estimate, so the anchored size is the estimate (the reply's
    # role marker aside, which usage does not count as output).
    request = agent.request()
    estimate = tokens.estimate_request(request.messages, system=request.system, tools=request.tools)
    assert tracker.size(agent) == estimate - tokens.MESSAGE_OVERHEAD


def test_the_tracker_trusts_the_api_over_the_estimate(tmp_path: Path) -> None:
    # Live, the API's count differs from our estimate; the anchor carries the API's figure
    # and only the messages appended since are estimated.
    tracker = ContextTracker()
    agent = Agent(ScriptedModel(), workspace=tmp_path, clock=FakeClock())
    agent.messages = session(["read_file"] * 2)[:-1]  # ends on the model's call
    tracker.after_reply(agent, reply_message(40_000, 100, cache_read_input_tokens=60_000))
    assert tracker.anchor is not None
    assert (tracker.anchor.index, tracker.anchor.tokens) == (3, 100_100)
    agent.messages.append(round_(1)[1])
    assert tracker.size(agent) == 100_100 + tokens.estimate_message(agent.messages[-1])


def test_the_tracker_falls_back_to_the_estimate_after_a_compaction(tmp_path: Path) -> None:
    tracker = ContextTracker()
    plugin = Microcompact(tracker=tracker)
    agent, _ = reading_agent(tmp_path, 16, [tracker, plugin])
    invalidated = []
    for event in agent.run("Read sixteen files."):
        if isinstance(event, Compacted):
            invalidated.append(tracker.anchor)
            request = agent.request()
            assert tracker.size(agent) == tokens.estimate_request(
                request.messages, system=request.system, tools=request.tools
            )
    assert invalidated == [None]
    assert tracker.anchor is not None  # the next reply anchored it again


@pytest.mark.parametrize("keep", [0, 3, 5])
def test_the_plugin_honours_keep(tmp_path: Path, keep: int) -> None:
    agent, _ = reading_agent(tmp_path, 12, [Microcompact(keep=keep, min_clearable=1)])
    run_checked(agent, "Read twelve files.")
    results = result_blocks(agent.messages)
    assert all(b["content"] != CLEARED for b in results[len(results) - keep :])


def test_the_tracker_notices_a_rewrite_nobody_told_it_about(tmp_path: Path) -> None:
    # A compaction that forgets to call invalidate() must not leave a stale anchor: the
    # tracker sees that the messages it measured were replaced.
    tracker = ContextTracker()
    agent, _ = reading_agent(tmp_path, 16, [tracker])
    list(agent.run("Read the files."))
    agent.messages[:] = microcompact(agent.messages).messages
    request = agent.request()
    estimate = tokens.estimate_request(request.messages, system=request.system, tools=request.tools)
    assert tracker.size(agent) == estimate


def test_results_no_longer_than_the_marker_are_not_cleared() -> None:
    conversation = session(["read_file"] * 8)
    short = conversation[2]["content"][0]
    short["content"] = "ok"
    result = microcompact(conversation, keep=1)
    assert short["tool_use_id"] not in result.cleared
    assert result.tokens_freed > 0
