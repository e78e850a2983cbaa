"""Chapter 03's exercises: how wide a turn the moving breakpoint survives, and a prefix cached
for an hour.

Both checks ask the cache simulator (``harness.model.cache``), the same one the chapter's
sessions go through, rather than a list of expected answers: exercise 1 sends one turn of each
width through it, exercise 2 sends a request, waits twenty minutes on a fake clock, and sends
the next one.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from anthropic import BadRequestError

from harness.clock import FakeClock
from harness.exercises import NotYet, exercise
from harness.loop import ModelRequest
from harness.model import DEFAULT_MODEL
from harness.model.cache import LOOKBACK_BLOCKS, PromptCache

# -- exercise 1: how wide can a turn be? ------------------------------------------------------

_STATIC = "You review code for a shop. " * 200  # well above the cache's minimum
_MARK = {"type": "ephemeral"}


def _marked_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = copy.deepcopy(messages)
    out[-1]["content"][-1]["cache_control"] = dict(_MARK)
    return out


def _turn(n_calls: int, text: bool, start: int) -> list[dict[str, Any]]:
    """One turn: the model's reply (a line of text, then ``n_calls`` tool calls) and the user
    message with their results."""
    calls = [
        {"type": "tool_use", "id": f"toolu_{start + i}", "name": "grep", "input": {"n": i}}
        for i in range(n_calls)
    ]
    results = [
        {"type": "tool_result", "tool_use_id": f"toolu_{start + i}", "content": f"match {i}"}
        for i in range(n_calls)
    ]
    line = [{"type": "text", "text": "All the searches at once."}] if text else []
    return [{"role": "assistant", "content": line + calls}, {"role": "user", "content": results}]


def moving_breakpoint_reads(n_calls: int, text: bool) -> tuple[int, bool]:
    """(blocks the turn added, whether the moving breakpoint alone still read the previous
    request's entry), from the cache simulator."""
    system = [{"type": "text", "text": _STATIC, "cache_control": dict(_MARK)}]
    before = [
        {"role": "user", "content": [{"type": "text", "text": "Do they all round the same?"}]},
        *_turn(1, True, 0),
    ]
    after = before + _turn(n_calls, text, 100)
    cache = PromptCache(clock=FakeClock())
    first = cache.process(
        model=DEFAULT_MODEL, tools=None, system=system, messages=_marked_last(before)
    )
    second = cache.process(
        model=DEFAULT_MODEL, tools=None, system=system, messages=_marked_last(after)
    )
    added = sum(len(message["content"]) for message in after[len(before) :])
    return added, second.read >= first.total


@exercise(
    "blocks_added and widest_turn",
    "a turn is the model's reply (its line of text, if any, and one tool_use block per call) "
    f"and the next user message (one tool_result per call). The lookback checks "
    f"{LOOKBACK_BLOCKS} positions, the breakpoint itself counted first.",
)
def check_widest_turn(blocks_added: Callable[..., Any], widest_turn: Callable[..., Any]) -> str:
    """Exercise 1: ``blocks_added(n_calls, text)`` and ``widest_turn(text)`` agree with the
    cache simulator for turns of 1 to 12 parallel calls, with and without a line of text."""
    for text in (True, False):
        widest = widest_turn(text)
        for n in range(1, 13):
            added, reads = moving_breakpoint_reads(n, text)
            got = blocks_added(n, text)
            if got != added:
                raise NotYet(
                    f"blocks_added({n}, text={text}) is {got!r}, but that turn adds {added} "
                    "blocks to the prefix."
                )
            if reads != (n <= widest):
                verb = "still reads" if reads else "misses"
                raise NotYet(
                    f"with {n} parallel calls (text={text}) the moving breakpoint alone {verb} "
                    f"the previous entry, but widest_turn({text}) is {widest!r}."
                )
    return (
        f"the moving breakpoint alone bridges {widest_turn(True)} parallel calls with a line of "
        f"text and {widest_turn(False)} without; one more, and the turn misses the cache"
    )


# -- exercise 2: a prefix that survives a long break ------------------------------------------

_HOUR = {"type": "ephemeral", "ttl": "1h"}


def _tools() -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    return [
        {"name": name, "description": f"The {name} tool. " * 120, "input_schema": schema}
        for name in ("read_file", "grep")
    ]


def _system() -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": _STATIC, "cache_control": dict(_MARK)},
        {"type": "text", "text": "Environment:\n- Today's date: 2026-01-01"},
    ]


def _conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Do they all round the same?"}]
    for i in range(turns):
        call = {"type": "tool_use", "id": f"toolu_{i}", "name": "read_file", "input": {"n": i}}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"file {i} " * 40}
        messages += [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
    return messages


def _ttls(blocks: list[dict[str, Any]] | None) -> list[str | None]:
    out: list[str | None] = []
    for block in blocks or []:
        control = block.get("cache_control")
        out.append(None if not control else ("1h" if control.get("ttl") == "1h" else "5m"))
    return out


@exercise(
    "with_hour_prefix",
    "start from with_breakpoints(request); then, on copies (copy.deepcopy), give the last "
    'tool and the static system block {"type": "ephemeral", "ttl": "1h"}; leave the '
    "breakpoints on the messages as they are; return dataclasses.replace(request, ...).",
)
def check_with_hour_prefix(with_hour_prefix: Callable[[ModelRequest], Any]) -> str:
    """Exercise 2: the tools and the static system prompt cached for an hour, the messages'
    breakpoints for 5 minutes, and after a 20-minute break the prefix is read, not written."""
    clock = FakeClock()
    cache = PromptCache(clock=clock)
    before = ModelRequest(DEFAULT_MODEL, 1000, _conversation(2), _system(), _tools())
    untouched = json.dumps([before.system, before.tools, before.messages], sort_keys=True)
    sent: list[Any] = []
    for request in (
        before,
        ModelRequest(DEFAULT_MODEL, 1000, _conversation(3), _system(), _tools()),
    ):
        marked = with_hour_prefix(request)
        if not isinstance(marked, ModelRequest):
            raise NotYet(f"with_hour_prefix returned a {type(marked).__name__}, not a request.")
        if json.dumps([before.system, before.tools, before.messages], sort_keys=True) != untouched:
            raise NotYet(
                "with_hour_prefix changed the request it was given: the agent's own system "
                "blocks, tools or messages now carry new markers, and would pile up.",
                "copy before you mark: copy.deepcopy(request.system), copy.deepcopy(tools).",
            )
        tools, system = _ttls(marked.tools), _ttls(_as_blocks(marked.system))
        if not tools or tools[-1] != "1h":
            raise NotYet(f"the last tool's breakpoint is {tools[-1:] or None}, not 1h.")
        if system[:1] != ["1h"]:
            raise NotYet(f"the static system block's breakpoint is {system[:1]}, not 1h.")
        on_messages = [t for m in marked.messages for t in _ttls(_content(m)) if t]
        if not on_messages or any(t != "5m" for t in on_messages):
            raise NotYet(
                f"the breakpoints on the messages are {on_messages}; they move every turn, so "
                "keep them at 5 minutes (a 1-hour write there would be paid on every call)."
            )
        try:
            sent.append(
                cache.process(
                    model=DEFAULT_MODEL,
                    tools=marked.tools,
                    system=marked.system,
                    messages=marked.messages,
                )
            )
        except BadRequestError as error:
            raise NotYet(f"the API would refuse this request: {error.message}") from None
        clock.advance(20 * 60)  # lunch
    first, back = sent
    if first.written_1h == 0:
        raise NotYet("the first request wrote no 1-hour entries.")
    if back.read_until != "system[0]":
        raise NotYet(f"after a 20-minute break the cache says: {back.explanation}")
    return (
        f"after 20 minutes, the next request reads {back.read:,} tokens (tools and static "
        f"system prompt) from the 1-hour entries and rewrites only the {back.written:,} after them"
    )


def _as_blocks(system: str | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return system if isinstance(system, list) else []


def _content(message: Any) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


__all__ = ["check_widest_turn", "check_with_hour_prefix", "moving_breakpoint_reads"]
