"""The prompt-cache simulator: each of the API's documented caching rules, one test each."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from anthropic import BadRequestError
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import tokens
from harness.clock import FakeClock
from harness.model import ScriptedModel, faults, reply
from harness.model.cache import (
    DEFAULT_MINIMUM_TOKENS,
    MINIMUM_CACHEABLE_TOKENS,
    CacheResult,
    PromptCache,
    minimum_cacheable_tokens,
    prefix_blocks,
)

MODEL = "claude-sonnet-4-5"
Block = dict[str, Any]


# --- building requests ---------------------------------------------------------------------


def text(n_tokens: int, tag: str = "") -> Block:
    """A text block whose text is exactly ``n_tokens`` tokens by the estimator (plus 3 framing)."""
    body = (tag + " " + "x" * (4 * n_tokens))[: 4 * n_tokens]
    assert tokens.estimate_text(body) == n_tokens
    return {"type": "text", "text": body}


def mark(block: Block, ttl: str | None = None) -> Block:
    """The block with a cache breakpoint on it."""
    control: dict[str, str] = {"type": "ephemeral"}
    if ttl is not None:
        control["ttl"] = ttl
    return {**copy.deepcopy(block), "cache_control": control}


def tool_def(name: str, description: str = "Does a thing.") -> Block:
    return {
        "name": name,
        "description": description,
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }


def conversation(n: int, size: int = 20) -> list[Block]:
    """``n`` alternating user/assistant messages, one text block each, all different."""
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": [text(size, f"turn {i}")]}
        for i in range(n)
    ]


def with_last_marked(messages: list[Block], ttl: str | None = None) -> list[Block]:
    """A copy of ``messages`` whose last block carries a breakpoint (the moving breakpoint)."""
    out = copy.deepcopy(messages)
    out[-1]["content"][-1] = mark(out[-1]["content"][-1], ttl)
    return out


BIG_SYSTEM = [mark(text(1500, "static system prompt"))]
"""A static system prompt well above the 1,024-token minimum, with its breakpoint."""


def send(
    cache: PromptCache,
    messages: list[Block],
    *,
    system: list[Block] | str | None = None,
    tools: list[Block] | None = None,
    model: str = MODEL,
) -> CacheResult:
    return cache.process(model=model, tools=tools, system=system, messages=messages)


def size(messages: list[Block], *, system: Any = None, tools: Any = None) -> int:
    return tokens.estimate_request(messages, system=system, tools=tools)


def ask(model: ScriptedModel, messages: list[Block], **kwargs: Any) -> Any:
    return model.create(model=MODEL, max_tokens=100, messages=messages, **kwargs)


# --- writes and reads ----------------------------------------------------------------------


def test_first_request_writes_the_prefix_up_to_the_last_breakpoint_and_reads_nothing() -> None:
    cache = PromptCache(clock=FakeClock())
    messages = conversation(3)
    result = send(cache, messages, system=BIG_SYSTEM)
    assert result.read == 0
    assert result.read_until is None
    assert result.written == tokens.estimate_system(BIG_SYSTEM)
    assert result.written_5m == result.written and result.written_1h == 0
    assert result.uncached == sum(tokens.estimate_message(msg) for msg in messages)
    assert "first request" in result.explanation


def test_the_three_parts_add_up_to_the_request_estimate() -> None:
    cache = PromptCache(clock=FakeClock())
    tools = [tool_def("read"), mark(tool_def("grep"))]
    messages = with_last_marked(conversation(5))
    result = send(cache, messages, system=BIG_SYSTEM, tools=tools)
    assert result.total == size(messages, system=BIG_SYSTEM, tools=tools)
    assert result.uncached == 0  # the last breakpoint is on the very last block


def test_the_prefix_blocks_add_up_to_the_request_estimate_with_a_string_system() -> None:
    tools = [tool_def("read")]
    messages: list[Block] = [{"role": "user", "content": "plain string content"}]
    blocks = prefix_blocks(tools, "You are terse.", messages)
    assert [b.where for b in blocks] == ["tools[0] (read)", "system", "messages[0].content[0]"]
    assert sum(b.tokens for b in blocks) == size(messages, system="You are terse.", tools=tools)


def test_an_identical_second_request_reads_everything_the_first_wrote() -> None:
    cache = PromptCache(clock=FakeClock())
    messages = with_last_marked(conversation(4))
    first = send(cache, messages, system=BIG_SYSTEM)
    second = send(cache, messages, system=BIG_SYSTEM)
    assert first.written > 0
    assert second.read == first.written
    assert second.written == 0
    assert second.uncached == first.uncached
    assert second.read_until == "messages[3].content[0]"
    assert second.explanation == "read up to messages[3].content[0]"


def test_a_growing_conversation_reads_the_old_prefix_and_writes_only_the_new_turns() -> None:
    cache = PromptCache(clock=FakeClock())
    history = conversation(7)
    first = send(cache, with_last_marked(history[:5]), system=BIG_SYSTEM)
    second = send(cache, with_last_marked(history), system=BIG_SYSTEM)
    assert second.read == first.written == size(history[:5], system=BIG_SYSTEM)
    assert second.written == tokens.estimate_message(history[5]) + tokens.estimate_message(
        history[6]
    )
    assert second.uncached == 0
    assert second.read_until == "messages[4].content[0]"
    assert "wrote up to messages[6].content[0]" in second.explanation


def test_a_request_without_breakpoints_caches_nothing() -> None:
    cache = PromptCache(clock=FakeClock())
    messages = conversation(3, size=600)
    for _ in range(2):
        result = send(cache, messages, system=[text(1500)])
        assert (result.read, result.written) == (0, 0)
        assert result.uncached == size(messages, system=[text(1500)])
        assert "no cache_control breakpoint" in result.explanation


# --- a change misses from the changed block on ---------------------------------------------


def test_a_changed_tool_misses_everything_and_is_named() -> None:
    cache = PromptCache(clock=FakeClock())
    messages = with_last_marked(conversation(3))
    tools = [tool_def("read"), mark(tool_def("grep"))]
    send(cache, messages, system=BIG_SYSTEM, tools=tools)
    changed = [tool_def("read", "Reads a file, now with line numbers."), mark(tool_def("grep"))]
    result = send(cache, messages, system=BIG_SYSTEM, tools=changed)
    assert result.read == 0
    assert "tools[0] (read)" in result.explanation
    assert result.written == size(messages, system=BIG_SYSTEM, tools=changed)


def test_a_changed_system_block_misses_from_that_block() -> None:
    cache = PromptCache(clock=FakeClock())
    tools = [mark(tool_def("read"))]
    messages = with_last_marked(conversation(3))
    dated = [*BIG_SYSTEM, text(30, "Today's date: 2026-01-01")]
    send(cache, messages, system=dated, tools=tools)
    next_day = [*BIG_SYSTEM, text(30, "Today's date: 2026-01-02")]
    result = send(cache, messages, system=next_day, tools=tools)
    assert result.read_until == "system[0]"
    assert result.read == tokens.estimate_tools(tools) + tokens.estimate_system(BIG_SYSTEM)
    assert "first change since the last request: system[1]" in result.explanation


def test_an_edited_old_message_misses_from_that_message() -> None:
    cache = PromptCache(clock=FakeClock())
    history = conversation(4)
    history[1]["content"][0] = mark(history[1]["content"][0])  # an earlier breakpoint
    send(cache, with_last_marked(history), system=BIG_SYSTEM)
    edited = copy.deepcopy(history)
    edited[2]["content"][0]["text"] += " (edited)"
    result = send(cache, with_last_marked(edited), system=BIG_SYSTEM)
    assert result.read_until == "messages[1].content[0]"
    assert result.read == size(history[:2], system=BIG_SYSTEM)
    assert "messages[2].content[0]" in result.explanation
    assert result.written == size(edited[2:])


def test_a_changed_role_is_a_change_too() -> None:
    first = prefix_blocks(None, None, [{"role": "user", "content": "same words"}])
    second = prefix_blocks(None, None, [{"role": "assistant", "content": "same words"}])
    assert first[0].digest != second[0].digest


def test_moving_a_breakpoint_does_not_change_the_digests() -> None:
    history = conversation(6)
    early = copy.deepcopy(history)
    early[1]["content"][0] = mark(early[1]["content"][0])
    late = with_last_marked(history)
    one, other, none = (prefix_blocks(None, BIG_SYSTEM, h) for h in (early, late, history))
    assert [b.digest for b in one] == [b.digest for b in other] == [b.digest for b in none]
    assert [b.breakpoint for b in one] != [b.breakpoint for b in other]


def test_string_content_and_one_text_block_share_digests() -> None:
    as_string = prefix_blocks(None, None, [{"role": "user", "content": "hello"}])
    as_block = prefix_blocks(
        None, None, [{"role": "user", "content": [mark({"type": "text", "text": "hello"})]}]
    )
    assert [b.digest for b in as_string] == [b.digest for b in as_block]


# --- time to live, on the fake clock -------------------------------------------------------


def test_an_entry_expires_after_five_minutes_idle() -> None:
    clock = FakeClock()
    cache = PromptCache(clock=clock)
    messages = with_last_marked(conversation(3))
    first = send(cache, messages, system=BIG_SYSTEM)
    clock.advance(5 * 60 + 1)
    result = send(cache, messages, system=BIG_SYSTEM)
    assert result.read == 0
    assert result.written == first.written
    assert "expired" in result.explanation
    assert "5-minute" in result.explanation


def test_an_entry_is_still_there_just_before_five_minutes() -> None:
    clock = FakeClock()
    cache = PromptCache(clock=clock)
    messages = with_last_marked(conversation(3))
    first = send(cache, messages, system=BIG_SYSTEM)
    clock.advance(5 * 60 - 1)
    assert send(cache, messages, system=BIG_SYSTEM).read == first.written


def test_a_read_renews_the_entry() -> None:
    clock = FakeClock()
    cache = PromptCache(clock=clock)
    messages = with_last_marked(conversation(3))
    first = send(cache, messages, system=BIG_SYSTEM)
    clock.advance(4 * 60)
    assert send(cache, messages, system=BIG_SYSTEM).read == first.written
    clock.advance(4 * 60)  # 8 minutes after the write, 4 after the read
    assert send(cache, messages, system=BIG_SYSTEM).read == first.written


def test_without_a_read_in_between_eight_minutes_is_too_long() -> None:
    clock = FakeClock()
    cache = PromptCache(clock=clock)
    messages = with_last_marked(conversation(3))
    send(cache, messages, system=BIG_SYSTEM)
    clock.advance(8 * 60)
    assert send(cache, messages, system=BIG_SYSTEM).read == 0


def test_a_one_hour_breakpoint_survives_thirty_minutes_idle() -> None:
    clock = FakeClock()
    cache = PromptCache(clock=clock)
    system = [mark(text(1500, "static"), ttl="1h")]
    messages = conversation(1)
    first = send(cache, messages, system=system)
    assert first.written_1h == first.written == tokens.estimate_system(system)
    assert first.written_5m == 0
    clock.advance(30 * 60)
    assert send(cache, messages, system=system).read == first.written


def test_a_one_hour_breakpoint_expires_after_an_hour_and_says_which_ttl() -> None:
    clock = FakeClock()
    cache = PromptCache(clock=clock)
    system = [mark(text(1500, "static"), ttl="1h")]
    messages = conversation(1)
    send(cache, messages, system=system)
    clock.advance(60 * 60 + 1)
    result = send(cache, messages, system=system)
    assert result.read == 0
    assert "expired" in result.explanation and "1-hour" in result.explanation


def test_after_ten_minutes_the_one_hour_part_is_read_and_the_five_minute_part_is_not() -> None:
    clock = FakeClock()
    cache = PromptCache(clock=clock)
    system = [mark(text(1500, "static"), ttl="1h")]
    messages = with_last_marked(conversation(3))
    first = send(cache, messages, system=system)
    assert first.written_1h == tokens.estimate_system(system)
    assert first.written_5m == size(messages)
    clock.advance(10 * 60)
    result = send(cache, messages, system=system)
    assert result.read == tokens.estimate_system(system)
    assert result.written_5m == size(messages)
    assert "expired" in result.explanation


def test_scripted_usage_reports_one_hour_writes_separately() -> None:
    model = ScriptedModel([reply("ok")])
    system = [mark(text(1500, "static"), ttl="1h")]
    messages = with_last_marked(conversation(1))
    usage = ask(model, messages, system=system).usage
    assert usage.cache_creation is not None
    assert usage.cache_creation.ephemeral_1h_input_tokens == tokens.estimate_system(system)
    assert usage.cache_creation.ephemeral_5m_input_tokens == size(messages)
    assert usage.cache_creation_input_tokens == size(messages, system=system)


def test_the_ttl_runs_on_the_scripted_models_clock() -> None:
    clock = FakeClock()
    model = ScriptedModel([reply("ok"), reply("ok")], clock=clock)
    messages = with_last_marked(conversation(1))
    ask(model, messages, system=BIG_SYSTEM)
    clock.advance(6 * 60)
    usage = ask(model, messages, system=BIG_SYSTEM).usage
    assert usage.cache_read_input_tokens == 0


# --- the minimum cacheable length ----------------------------------------------------------


def test_a_prefix_under_1024_tokens_is_not_cached() -> None:
    cache = PromptCache(clock=FakeClock())
    system = [mark(text(500, "short"))]
    messages = conversation(1)
    for _ in range(2):
        result = send(cache, messages, system=system)
        assert (result.read, result.written) == (0, 0)
        assert result.uncached == size(messages, system=system)
        assert "below the 1,024-token minimum" in result.explanation
    assert cache.entries == {}


def test_a_prefix_of_exactly_1024_tokens_is_cached_and_1023_is_not() -> None:
    messages = conversation(1)
    exactly = [mark(text(1024 - tokens.BLOCK_OVERHEAD))]
    just_under = [mark(text(1023 - tokens.BLOCK_OVERHEAD))]
    assert send(PromptCache(clock=FakeClock()), messages, system=exactly).written == 1024
    assert send(PromptCache(clock=FakeClock()), messages, system=just_under).written == 0


def test_the_minimum_is_configurable() -> None:
    system = [mark(text(2000, "medium"))]
    messages = conversation(1)
    haiku = PromptCache(clock=FakeClock(), minimum_tokens=4096)
    result = send(haiku, messages, system=system)
    assert result.written == 0
    assert "below the 4,096-token minimum" in result.explanation
    bigger = [mark(text(5000, "long"))]
    assert send(haiku, messages, system=bigger).written == tokens.estimate_system(bigger)


def test_a_short_first_breakpoint_is_skipped_but_a_later_one_caches_the_whole_prefix() -> None:
    cache = PromptCache(clock=FakeClock())
    system = [mark(text(200, "short static"))]
    messages = with_last_marked(conversation(2, size=1000))
    result = send(cache, messages, system=system)
    assert result.written == size(messages, system=system)
    assert list(cache.entries) == [(MODEL, prefix_blocks(None, system, messages)[-1].digest)]


# --- the lookback: 20 positions --------------------------------------------------------------


def many_blocks(n: int) -> list[Block]:
    return [text(5, f"small block {i}") for i in range(n)]


def one_message(blocks: list[Block], marked: int) -> list[Block]:
    content = copy.deepcopy(blocks)
    content[marked] = mark(content[marked])
    return [{"role": "user", "content": content}]


# The API docs: "The system checks at most 20 positions per breakpoint, counting the breakpoint
# itself as the first", and their example misses an entry 20 blocks back (block 15 from 35).
@pytest.mark.parametrize("distance", [1, 10, 19])
def test_a_breakpoint_finds_an_entry_up_to_19_blocks_back(distance: int) -> None:
    cache = PromptCache(clock=FakeClock())
    system = [text(1500, "static, no breakpoint")]
    blocks = many_blocks(40)
    first = send(cache, one_message(blocks[:6], marked=5), system=system)
    result = send(cache, one_message(blocks[: 6 + distance], marked=5 + distance), system=system)
    assert result.read == first.written
    assert result.read_until == "messages[0].content[5]"
    assert result.written == 8 * distance  # each small block: 5 tokens + 3 framing


@pytest.mark.parametrize("distance", [20, 21, 25, 34])
def test_an_entry_20_or_more_blocks_back_is_missed(distance: int) -> None:
    cache = PromptCache(clock=FakeClock())
    system = [text(1500, "static, no breakpoint")]
    blocks = many_blocks(40)
    send(cache, one_message(blocks[:6], marked=5), system=system)
    request = one_message(blocks[: 6 + distance], marked=5 + distance)
    result = send(cache, request, system=system)
    assert result.read == 0
    assert result.written == size(request, system=system)
    assert "20 or more positions" in result.explanation


def test_an_intermediate_breakpoint_bridges_a_long_gap() -> None:
    cache = PromptCache(clock=FakeClock())
    system = [text(1500, "static, no breakpoint")]
    blocks = many_blocks(40)
    first = send(cache, one_message(blocks[:6], marked=5), system=system)
    request = one_message(blocks[:36], marked=35)
    request[0]["content"][20] = mark(request[0]["content"][20])  # 15 blocks after the entry
    result = send(cache, request, system=system)
    assert result.read == first.written
    assert result.uncached == 0


# The API docs: "a run of consecutive tool_use blocks counts as one position, and so does a run
# of consecutive tool_result blocks" (prompt caching, How automatic prefix checking works).


def calls(n: int, start: int = 0) -> list[Block]:
    return [
        {"type": "tool_use", "id": f"toolu_{start + i:04d}", "name": "grep", "input": {"n": i}}
        for i in range(n)
    ]


def results(n: int, start: int = 0) -> list[Block]:
    return [
        {"type": "tool_result", "tool_use_id": f"toolu_{start + i:04d}", "content": f"match {i}"}
        for i in range(n)
    ]


def image(i: int) -> Block:
    source = {"type": "base64", "media_type": "image/png", "data": f"i{i}"}
    return {"type": "image", "source": source}


OPENING = [{"role": "user", "content": [text(20, "look at the billing module")]}]


def after_previous_request(added: list[Block]) -> tuple[PromptCache, CacheResult, CacheResult]:
    """The previous request, cached at its last message, then the same conversation plus
    ``added`` with the moving breakpoint on its last block: (cache, first, second)."""
    cache = PromptCache(clock=FakeClock())
    first = send(cache, with_last_marked(OPENING), system=BIG_SYSTEM)
    second = send(cache, with_last_marked(OPENING + added), system=BIG_SYSTEM)
    return cache, first, second


def parallel_turn(n: int, *, line: bool, start: int = 0) -> list[Block]:
    """A reply with (a line of text and) ``n`` parallel calls, then the message of their results."""
    reply_blocks = ([text(5, "all at once")] if line else []) + calls(n, start)
    return [
        {"role": "assistant", "content": reply_blocks},
        {"role": "user", "content": results(n, start)},
    ]


def test_fifteen_parallel_calls_keep_the_previous_entry_as_on_the_api() -> None:
    # The case: 31 blocks after the entry, but 3 positions (text, calls, results).
    _, first, second = after_previous_request(parallel_turn(15, line=True))
    assert second.read == first.written + first.read
    assert second.read_until == "messages[0].content[0]"


@settings(max_examples=40, deadline=None)
@given(
    widths=st.lists(st.integers(1, 60), min_size=1, max_size=6),
    lines=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_parallel_turns_of_any_width_keep_the_entry(widths: list[int], lines: list[bool]) -> None:
    # Up to six turns without a write between them: at most 3 positions each, 18 in all.
    added: list[Block] = []
    for i, width in enumerate(widths):
        added += parallel_turn(width, line=lines[i], start=100 * i)
    _, first, second = after_previous_request(added)
    assert second.read == first.written + first.read


def narrated_turn(n: int, start: int = 0) -> list[Block]:
    """A reply that puts a line of text before each of its ``n`` calls, then their results."""
    reply_blocks: list[Block] = []
    for i, call in enumerate(calls(n, start)):
        reply_blocks += [text(5, f"now step {i}"), call]
    return [
        {"role": "assistant", "content": reply_blocks},
        {"role": "user", "content": results(n, start)},
    ]


def positions_of(added: list[Block]) -> int:
    """Positions ``added`` spans, counted here independently of the simulator: a block starts
    a new position unless it is a tool_use after a tool_use or a tool_result after a
    tool_result."""
    kinds = [block["type"] for message in added for block in message["content"]]
    runs = ("tool_use", "tool_result")
    return sum(1 for i, k in enumerate(kinds) if i == 0 or k not in runs or kinds[i - 1] != k)


# One unit of "other content": what adds positions whatever the width of a parallel turn.
UNITS = st.sampled_from(["narrated_call", "text_block", "image_block", "sequential_round"])


def build(units: list[str]) -> list[Block]:
    """Messages made of ``units``, alternating roles where a unit needs it."""
    added: list[Block] = []
    for i, unit in enumerate(units):
        if unit == "narrated_call":
            added += narrated_turn(1, start=100 * i)
        elif unit == "sequential_round":
            added += parallel_turn(1, line=False, start=100 * i)
        else:
            block = text(5, f"pasted {i}") if unit == "text_block" else image(i)
            added += [
                {"role": "assistant", "content": [text(5, f"ok {i}")]},
                {"role": "user", "content": [block]},
            ]
    return added


@settings(max_examples=60, deadline=None)
@given(units=st.lists(UNITS, min_size=1, max_size=14))
def test_an_entry_is_read_exactly_when_fewer_than_20_positions_were_added(
    units: list[str],
) -> None:
    added = build(units)
    _, first, second = after_previous_request(added)
    reads = second.read == first.written + first.read
    # The breakpoint's own position counts first: the entry is 19 positions back at most.
    assert reads == (positions_of(added) < 20)


@pytest.mark.parametrize("n_calls", [9, 10])
def test_a_reply_that_narrates_each_call_adds_two_positions_a_call(n_calls: int) -> None:
    # 9 calls: 18 positions in the reply, 1 for the results: 19, read. 10 calls: 21, missed.
    _, first, second = after_previous_request(narrated_turn(n_calls))
    assert (second.read == first.written + first.read) == (n_calls == 9)
    if n_calls == 10:
        assert second.read_until == "system[0]"  # only the system prompt's own entry


def test_twenty_one_sequential_positions_lose_the_entry() -> None:
    # A long sequential loop with no write in between: 10 rounds of one call and its result
    # (20 positions), then the model's closing line (21).
    closing = {"role": "assistant", "content": [text(5, "done")]}
    added = [*build(["sequential_round"] * 10), closing]
    assert positions_of(added) == 21
    _, _, second = after_previous_request(added)
    assert second.read_until == "system[0]"  # the conversation's entry is out of reach
    assert "20 or more positions" in second.explanation


def test_a_message_of_many_images_loses_the_entry() -> None:
    pasted = [{"role": "user", "content": [text(5, "see these")] + [image(i) for i in range(20)]}]
    added = [{"role": "assistant", "content": [text(5, "send them")]}, *pasted]
    _, _, second = after_previous_request(added)
    assert second.read_until == "system[0]"


def test_a_breakpoint_moved_before_the_cached_prefix_end_is_explained() -> None:
    cache = PromptCache(clock=FakeClock())
    system = [text(1500, "static, no breakpoint")]
    blocks = many_blocks(30)
    send(cache, one_message(blocks, marked=29), system=system)
    result = send(cache, one_message(blocks, marked=4), system=system)
    assert result.read == 0
    assert "every breakpoint comes before the end" in result.explanation


# --- what the API refuses ------------------------------------------------------------------


def five_breakpoints() -> tuple[list[Block], list[Block], list[Block]]:
    tools = [mark(tool_def("read"))]
    system = [mark(text(1500, "static")), mark(text(50, "dynamic"))]
    history = conversation(3)
    history[0]["content"][0] = mark(history[0]["content"][0])
    return tools, system, with_last_marked(history)


def test_five_breakpoints_are_a_400_from_the_scripted_model() -> None:
    model = ScriptedModel([reply("never sent")])
    tools, system, messages = five_breakpoints()
    with pytest.raises(BadRequestError) as refused:
        ask(model, messages, system=system, tools=tools)
    assert refused.value.status_code == 400
    assert "maximum of 4" in str(refused.value)
    assert model.remaining == 1  # refused before a step was used
    assert model.cache.entries == {}


def test_four_breakpoints_are_allowed() -> None:
    model = ScriptedModel([reply("ok")])
    tools, system, messages = five_breakpoints()
    system = [system[0], text(50, "dynamic")]  # the same request less one breakpoint
    assert ask(model, messages, system=system, tools=tools).usage.cache_read_input_tokens == 0


def test_the_simulator_refuses_five_breakpoints_too() -> None:
    tools, system, messages = five_breakpoints()
    with pytest.raises(BadRequestError, match="maximum of 4"):
        send(PromptCache(clock=FakeClock()), messages, system=system, tools=tools)


def test_a_one_hour_breakpoint_after_a_five_minute_one_is_a_400() -> None:
    model = ScriptedModel([reply("never sent")])
    system = [mark(text(1500, "static"))]
    messages = with_last_marked(conversation(1), ttl="1h")
    with pytest.raises(BadRequestError) as refused:
        ask(model, messages, system=system)
    assert refused.value.status_code == 400
    assert "1h" in str(refused.value)


def test_a_one_hour_breakpoint_before_a_five_minute_one_is_fine() -> None:
    model = ScriptedModel([reply("ok")])
    system = [mark(text(1500, "static"), ttl="1h")]
    messages = with_last_marked(conversation(1))
    usage = ask(model, messages, system=system).usage
    assert usage.cache_creation_input_tokens == size(messages, system=system)


# --- per model, through the scripted model -------------------------------------------------


def test_caches_are_per_model() -> None:
    cache = PromptCache(clock=FakeClock())
    messages = with_last_marked(conversation(3))
    first = send(cache, messages, system=BIG_SYSTEM, model="claude-sonnet-4-5")
    # Opus 4.8 has Sonnet 4.5's minimum (1,024), so only the model differs.
    other = send(cache, messages, system=BIG_SYSTEM, model="claude-opus-4-8")
    assert other.read == 0
    assert other.written == first.written
    again = send(cache, messages, system=BIG_SYSTEM, model="claude-sonnet-4-5")
    assert again.read == first.written


def test_scripted_usage_is_the_cache_split() -> None:
    model = ScriptedModel([reply("one"), reply("two")])
    history = conversation(5)
    for messages in (with_last_marked(history[:3]), with_last_marked(history)):
        usage = ask(model, messages, system=BIG_SYSTEM).usage
        split = model.requests[-1].cache
        assert split is not None
        assert usage.input_tokens == split.uncached
        assert usage.cache_creation_input_tokens == split.written
        assert usage.cache_read_input_tokens == split.read
        assert split.total == model.requests[-1].input_tokens
    split = model.requests[-1].cache
    assert split is not None and split.read == size(history[:3], system=BIG_SYSTEM)


def test_without_a_breakpoint_at_its_end_a_longer_prefix_is_not_read() -> None:
    # A breakpoint only looks back: the conversation cached last time is not found from the
    # system prompt's breakpoint, which comes before it.
    model = ScriptedModel([reply("one"), reply("two")])
    history = conversation(5)
    ask(model, with_last_marked(history[:3]), system=BIG_SYSTEM)
    usage = ask(model, history, system=BIG_SYSTEM).usage
    assert usage.cache_read_input_tokens == tokens.estimate_system(BIG_SYSTEM)
    assert usage.cache_creation_input_tokens == 0
    assert usage.input_tokens == size(history)


def test_every_answered_request_records_its_cache_split() -> None:
    model = ScriptedModel([reply("one"), reply("two")])
    messages = with_last_marked(conversation(1))
    ask(model, messages, system=BIG_SYSTEM)
    ask(model, messages, system=BIG_SYSTEM)
    splits = [r.cache for r in model.requests]
    assert all(s is not None for s in splits)
    assert [s.read for s in splits if s is not None] == [0, size(messages, system=BIG_SYSTEM)]


def test_a_failed_request_writes_nothing_to_the_cache() -> None:
    model = ScriptedModel([faults.overloaded(), reply("fine now")])
    messages = with_last_marked(conversation(1))
    with pytest.raises(type(faults.overloaded())):
        ask(model, messages, system=BIG_SYSTEM)
    assert model.cache.entries == {}
    assert model.requests[0].cache is None
    usage = ask(model, messages, system=BIG_SYSTEM).usage
    assert usage.cache_read_input_tokens == 0
    assert usage.cache_creation_input_tokens == size(messages, system=BIG_SYSTEM)
    assert model.requests[1].cache is not None
    assert "first request" in model.requests[1].cache.explanation


# --- the split always adds up (property) ---------------------------------------------------


@st.composite
def requests(draw: st.DrawFn) -> tuple[list[Block], list[Block], list[Block]]:
    """A random request with up to 4 breakpoints anywhere (1-hour ones before 5-minute ones)."""
    size_ = st.integers(min_value=1, max_value=700)
    tools = [tool_def(f"tool{i}", "d" * draw(size_)) for i in range(draw(st.integers(0, 3)))]
    system = [text(draw(size_), f"s{i}") for i in range(draw(st.integers(0, 3)))]
    messages: list[Block] = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": [text(draw(size_), f"m{i}.{j}") for j in range(draw(st.integers(1, 3)))],
        }
        for i in range(draw(st.integers(1, 8)))
    ]
    slots: list[tuple[list[Block], int]] = [(tools, i) for i in range(len(tools))]
    slots += [(system, i) for i in range(len(system))]
    slots += [(msg["content"], j) for msg in messages for j in range(len(msg["content"]))]
    chosen = sorted(draw(st.sets(st.integers(0, len(slots) - 1), max_size=4)))
    hours = draw(st.integers(0, len(chosen)))  # the first `hours` breakpoints are 1-hour ones
    for n, index in enumerate(chosen):
        where, i = slots[index]
        where[i] = mark(where[i], "1h" if n < hours else None)
    return tools, system, messages


@settings(max_examples=150, deadline=None)
@given(
    first=requests(),
    second=requests(),
    idle=st.sampled_from([0.0, 200.0, 400.0, 4000.0]),
    minimum=st.sampled_from([1024, 2048]),
)
def test_read_written_and_uncached_always_add_up_to_the_estimate(
    first: tuple[list[Block], list[Block], list[Block]],
    second: tuple[list[Block], list[Block], list[Block]],
    idle: float,
    minimum: int,
) -> None:
    clock = FakeClock()
    cache = PromptCache(clock=clock, minimum_tokens=minimum)
    for tools, system, messages in (first, first, second):
        result = send(cache, messages, system=system, tools=tools)
        assert min(result.read, result.written_5m, result.written_1h, result.uncached) >= 0
        assert result.total == size(messages, system=system, tools=tools)
        assert result.explanation
        clock.advance(idle)


# --- the minimum, per model ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "minimum"),
    [
        ("claude-sonnet-4-6", 1024),
        ("claude-sonnet-4-5", 1024),
        ("claude-opus-4-5", 4096),
        ("claude-opus-4-6", 4096),
        ("claude-haiku-4-5", 4096),
        ("claude-opus-4-7", 2048),
        ("claude-opus-4-8", 1024),
        ("claude-opus-4-1", 1024),
        ("claude-opus-4", 1024),
        ("claude-sonnet-4", 1024),
        ("claude-3-7-sonnet", 1024),
        ("claude-3-5-haiku", 2048),
        ("claude-3-haiku", 2048),
        ("claude-opus-5", 512),
        ("claude-sonnet-5-5", 512),  # the course's model: reported, see its row
        ("claude-sonnet-5", 1024),
    ],
)
def test_each_model_has_its_own_minimum_cacheable_prefix(model: str, minimum: int) -> None:
    assert minimum_cacheable_tokens(model) == minimum


@pytest.mark.parametrize(
    ("model", "row"),
    [
        ("claude-opus-4-5-20251101", "claude-opus-4-5"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-opus-4-20250514", "claude-opus-4"),
        ("claude-opus-4-0", "claude-opus-4"),
        ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("claude-3-haiku-20240307", "claude-3-haiku"),
    ],
)
def test_a_dated_or_aliased_id_finds_its_models_row(model: str, row: str) -> None:
    assert minimum_cacheable_tokens(model) == MINIMUM_CACHEABLE_TOKENS[row]


def test_a_model_id_only_starting_like_a_known_one_is_not_taken_for_it() -> None:
    # claude-opus-4 is 1,024 but claude-opus-4-5 is 4,096: matching is by model, not prefix.
    assert minimum_cacheable_tokens("claude-opus-4-5") != minimum_cacheable_tokens("claude-opus-4")
    assert minimum_cacheable_tokens("claude-opus-4-9") == DEFAULT_MINIMUM_TOKENS


@pytest.mark.parametrize("model", ["claude-sonnet-9", "gpt-5", "", "my-fine-tune"])
def test_an_unknown_model_falls_back_to_1024(model: str) -> None:
    assert DEFAULT_MINIMUM_TOKENS == 1024
    assert minimum_cacheable_tokens(model) == 1024


def test_an_explicit_minimum_overrides_the_models() -> None:
    messages = conversation(1)
    system = [mark(text(3000, "medium"))]
    for model in ("claude-opus-4-5", "claude-sonnet-4-6", "claude-opus-5"):
        assert PromptCache(minimum_tokens=100).minimum_for(model) == 100
        overridden = send(
            PromptCache(clock=FakeClock(), minimum_tokens=4096),
            messages,
            system=system,
            model=model,
        )
        assert overridden.written == 0
        assert "below the 4,096-token minimum" in overridden.explanation


def test_without_an_override_the_cache_uses_each_models_minimum() -> None:
    cache = PromptCache(clock=FakeClock())
    for model, minimum in MINIMUM_CACHEABLE_TOKENS.items():
        assert cache.minimum_for(model) == minimum
        assert cache.minimum_for(f"{model}-20990101") == minimum


def test_a_2000_token_prefix_is_cached_for_sonnet_4_6_but_not_for_opus_4_5() -> None:
    system = [mark(text(2000 - tokens.BLOCK_OVERHEAD, "a 2,000-token static prompt"))]
    messages: list[Block] = [{"role": "user", "content": "What changed?"}]
    used = {}
    for model in ("claude-sonnet-4-6", "claude-opus-4-5"):
        scripted = ScriptedModel([reply("ok")], clock=FakeClock())
        answer = scripted.create(model=model, max_tokens=100, messages=messages, system=system)
        used[model] = (answer.usage.cache_creation_input_tokens, scripted.requests[-1].cache)
    written, _ = used["claude-sonnet-4-6"]
    assert written == 2000
    not_written, split = used["claude-opus-4-5"]
    assert not_written == 0
    assert split is not None
    assert split.explanation == (
        "prefix of 2,000 tokens is below the 4,096-token minimum: not cached"
    )


def test_the_explanation_names_the_minimum_it_used() -> None:
    system = [mark(text(300, "short"))]
    messages = conversation(1)
    for model, minimum in (("claude-opus-5", "512"), ("claude-opus-4-7", "2,048")):
        result = send(PromptCache(clock=FakeClock()), messages, system=system, model=model)
        assert result.explanation == (
            f"prefix of 303 tokens is below the {minimum}-token minimum: not cached"
        )


@settings(max_examples=100, deadline=None)
@given(
    row=st.sampled_from(sorted(MINIMUM_CACHEABLE_TOKENS)),
    day=st.integers(min_value=20230101, max_value=20991231),
    prefix=st.integers(min_value=tokens.BLOCK_OVERHEAD + 1, max_value=5000),
)
def test_a_prefix_is_cached_exactly_when_it_reaches_its_models_minimum(
    row: str, day: int, prefix: int
) -> None:
    system = [mark(text(prefix - tokens.BLOCK_OVERHEAD, "static"))]
    result = send(
        PromptCache(clock=FakeClock()), conversation(1), system=system, model=f"{row}-{day}"
    )
    minimum = MINIMUM_CACHEABLE_TOKENS[row]
    assert result.written == (prefix if prefix >= minimum else 0)
    if prefix < minimum:
        assert f"below the {minimum:,}-token minimum" in result.explanation


# --- automatic caching: one top-level cache_control ----------------------------------------

AUTO = {"type": "ephemeral"}


def auto(
    cache: PromptCache, messages: list[Block], control: Block | None = None, **kwargs: Any
) -> CacheResult:
    return cache.process(
        model=MODEL,
        tools=kwargs.get("tools"),
        system=kwargs.get("system"),
        messages=messages,
        automatic=control or AUTO,
    )


def test_automatic_caching_marks_the_last_block_and_moves_with_the_conversation() -> None:
    cache = PromptCache(clock=FakeClock())
    system = [text(1500, "static, no breakpoint")]
    messages = conversation(3)
    first = auto(cache, messages, system=system)
    assert first.breakpoints == 1
    assert first.written == size(messages, system=system) and first.uncached == 0
    longer = messages + conversation(5)[3:]  # two more messages appended
    second = auto(cache, longer, system=system)
    assert second.read == first.written
    assert second.written == size(longer, system=system) - first.written
    assert second.read_until == "messages[2].content[0]"


def test_automatic_caching_with_a_1_hour_ttl_writes_1_hour_entries() -> None:
    cache = PromptCache(clock=FakeClock())
    system = [text(1500, "static, no breakpoint")]
    result = auto(cache, conversation(3), {"type": "ephemeral", "ttl": "1h"}, system=system)
    assert result.written_1h == result.written > 0
    with pytest.raises(BadRequestError, match="1h"):  # after a 5-minute breakpoint: refused
        auto(cache, conversation(3), {"type": "ephemeral", "ttl": "1h"}, system=BIG_SYSTEM)


def test_automatic_caching_with_four_block_breakpoints_is_refused() -> None:
    cache = PromptCache(clock=FakeClock())
    messages = conversation(5)
    for i in (0, 1, 2):
        messages[i]["content"][0] = mark(messages[i]["content"][0])
    with pytest.raises(BadRequestError, match="no place is left"):
        auto(cache, messages, system=BIG_SYSTEM)


def test_automatic_caching_takes_the_fourth_place_when_three_are_used() -> None:
    cache = PromptCache(clock=FakeClock())
    messages = conversation(5)
    for i in (0, 1):
        messages[i]["content"][0] = mark(messages[i]["content"][0])
    result = auto(cache, messages, system=BIG_SYSTEM)
    assert result.breakpoints == 4 and result.uncached == 0


def test_automatic_caching_on_a_block_already_marked_the_same_is_a_no_op() -> None:
    cache = PromptCache(clock=FakeClock())
    messages = with_last_marked(conversation(3))
    assert auto(cache, messages, system=BIG_SYSTEM).breakpoints == 2


def test_automatic_caching_on_a_block_marked_with_another_ttl_is_refused() -> None:
    cache = PromptCache(clock=FakeClock())
    messages = with_last_marked(conversation(3), ttl="1h")
    with pytest.raises(BadRequestError, match="ttl"):
        auto(cache, messages)


def test_automatic_caching_skips_back_over_a_block_that_cannot_carry_a_breakpoint() -> None:
    cache = PromptCache(clock=FakeClock())
    messages = conversation(2)
    messages[1]["content"].append({"type": "thinking", "thinking": "hmm", "signature": "s"})
    result = auto(cache, messages, system=BIG_SYSTEM)
    blocks = prefix_blocks(None, BIG_SYSTEM, messages)
    assert result.uncached == blocks[-1].tokens  # the thinking block, after the breakpoint


def test_automatic_caching_alone_misses_a_turn_of_20_blocks() -> None:
    cache = PromptCache(clock=FakeClock())
    system = [text(1500, "static, no breakpoint")]
    blocks = many_blocks(40)
    auto(cache, [{"role": "user", "content": blocks[:6]}], system=system)
    result = auto(cache, [{"role": "user", "content": blocks[:26]}], system=system)
    assert result.read == 0


def test_the_scripted_model_simulates_a_top_level_cache_control() -> None:
    model = ScriptedModel([reply("one"), reply("two")])
    first = ask(model, conversation(1, size=1500), cache_control=AUTO)
    assert (first.usage.cache_creation_input_tokens or 0) > 0
    assert first.usage.input_tokens == 0
    messages = [*conversation(1, size=1500), {"role": "assistant", "content": "one"}]
    second = ask(model, [*messages, {"role": "user", "content": "and?"}], cache_control=AUTO)
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens


def test_the_scripted_model_refuses_automatic_caching_with_no_place_left() -> None:
    model = ScriptedModel([reply("never")])
    messages = conversation(5)
    for i in (0, 1, 2, 3):
        messages[i]["content"][0] = mark(messages[i]["content"][0])
    with pytest.raises(BadRequestError):
        ask(model, messages, cache_control=AUTO)


# --- cache diagnostics: the API's cache_miss_reason ----------------------------------------


def print_of(model: str = MODEL, **kwargs: Any) -> Any:
    from harness.model.cache import fingerprint

    return fingerprint(
        model,
        kwargs.get("tools"),
        kwargs.get("system"),
        kwargs.get("messages", conversation(3)),
        kwargs.get("extra"),
    )


def test_diagnose_says_nothing_when_the_request_only_grew() -> None:
    from harness.model.cache import diagnose

    before = print_of(messages=conversation(3), system=BIG_SYSTEM)
    after = print_of(messages=conversation(5), system=BIG_SYSTEM)
    assert diagnose(before, after) is None
    assert diagnose(None, after) is None


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"model": "claude-opus-4-7"}, "model_changed"),
        ({"tools": [tool_def("read"), tool_def("write")]}, "tools_changed"),
        ({"system": [mark(text(1500, "another system prompt"))]}, "system_changed"),
        ({"messages": conversation(2) + conversation(4)[3:]}, "messages_changed"),
        ({"messages": conversation(2)}, "messages_changed"),
        ({"extra": {"tool_choice": {"type": "any"}}}, "unavailable"),
    ],
)
def test_diagnose_names_the_first_divergence_in_the_apis_words(
    change: dict[str, Any], expected: str
) -> None:
    from harness.model.cache import diagnose

    base: dict[str, Any] = {"tools": [tool_def("read")], "system": BIG_SYSTEM}
    before = print_of(**base, messages=conversation(3))
    after = print_of(**{**base, "messages": conversation(3), **change})
    reason = diagnose(before, after)
    assert reason is not None and reason.type == expected
    missed = getattr(reason, "cache_missed_input_tokens", None)
    assert missed is None or 0 < missed <= size(conversation(3), **base)


def test_a_tool_added_at_the_end_is_tools_changed_not_system_changed() -> None:
    from harness.model.cache import diagnose

    before = print_of(tools=[tool_def("read")], system=BIG_SYSTEM)
    after = print_of(tools=[tool_def("read"), tool_def("write")], system=BIG_SYSTEM)
    reason = diagnose(before, after)
    assert reason is not None and reason.type == "tools_changed"


def test_an_expired_entry_is_a_miss_the_diagnostics_do_not_name() -> None:
    clock = FakeClock()
    cache = PromptCache(clock=clock)
    messages = with_last_marked(conversation(3))
    send(cache, messages, system=BIG_SYSTEM)
    clock.advance(6 * 60)
    result = send(cache, messages, system=BIG_SYSTEM)
    assert result.read == 0 and "expired" in result.explanation
    assert result.miss_reason is None


def test_the_cache_result_carries_the_reason_next_to_the_explanation() -> None:
    cache = PromptCache(clock=FakeClock())
    send(cache, with_last_marked(conversation(3)), system=BIG_SYSTEM)
    other = [mark(text(1500, "a changed system prompt"))]
    result = send(cache, with_last_marked(conversation(3)), system=other)
    assert "first change since the last request: system[0]" in result.explanation
    assert result.miss_reason is not None and result.miss_reason.type == "system_changed"


def test_the_scripted_model_answers_diagnostics_as_the_api_does() -> None:
    model = ScriptedModel([reply("a"), reply("b"), reply("c"), reply("d")])
    first = ask(
        model, conversation(1), system=BIG_SYSTEM, diagnostics={"previous_message_id": None}
    )
    assert first.diagnostics is None  # opted in; nothing to compare with yet
    grown = [*conversation(1), {"role": "assistant", "content": "a"}, *conversation(3)[2:]]
    same = ask(model, grown, system=BIG_SYSTEM, diagnostics={"previous_message_id": first.id})
    assert same.diagnostics is None  # only appended: nothing diverged
    changed = ask(
        model,
        grown,
        system=[mark(text(1500, "edited"))],
        diagnostics={"previous_message_id": same.id},
    )
    assert changed.diagnostics is not None
    reason = changed.diagnostics.cache_miss_reason
    assert reason is not None and reason.type == "system_changed"
    lost = ask(model, grown, diagnostics={"previous_message_id": "msg_unknown"})
    assert lost.diagnostics is not None and lost.diagnostics.cache_miss_reason is not None
    assert lost.diagnostics.cache_miss_reason.type == "previous_message_not_found"


def test_without_diagnostics_the_reply_has_none() -> None:
    model = ScriptedModel([reply("a")])
    assert ask(model, conversation(1), system=BIG_SYSTEM).diagnostics is None
