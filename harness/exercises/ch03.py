"""Chapter 03's exercises: how wide a turn the moving breakpoint survives, and a prefix cached
for an hour.

Both checks ask the cache simulator (``harness.model.cache``), the same one the chapter's
sessions go through, rather than a list of expected answers: exercise 1 sends one turn of each
width through it, exercise 2 sends a request, waits twenty minutes on a fake clock, and sends
the next one, then marks requests of other shapes (no tools, a system prompt that is one
string, a static part of two blocks). Each exercise's recipe comes only from ``hint(n)``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from anthropic import BadRequestError

from harness.clock import FakeClock
from harness.exercises import NotYet, exercise, hints
from harness.loop import ModelRequest
from harness.model import DEFAULT_MODEL
from harness.model.cache import PromptCache

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


_WIDEST_HINT = (
    "count the blocks of one turn as they reach the prefix: the reply, then the user message "
    "that answers it. The moving breakpoint checks LOOKBACK_BLOCKS positions, itself among them."
)
_WIDEST_FIRST = "blocks_added(1, text=True) should be 3: a line of text, one call, one result."
_WIDEST_RECIPE = """\
1. blocks_added(n_calls, text): the reply holds one text block when `text` is true, then one
   tool_use block per call; the next user message holds one tool_result block per call.
   Add the three counts: (1 if text else 0) + n_calls + n_calls.
2. The moving breakpoint checks LOOKBACK_BLOCKS positions, its own block first, so it finds
   the previous entry only if that entry ends at most LOOKBACK_BLOCKS - 1 blocks back: the
   turn must add fewer than LOOKBACK_BLOCKS blocks.
3. widest_turn(text): the largest n for which blocks_added(n, text) < LOOKBACK_BLOCKS. Count
   n up from 0 while blocks_added(n + 1, text) < LOOKBACK_BLOCKS, or take
   max(n for n in range(LOOKBACK_BLOCKS) if blocks_added(n, text) < LOOKBACK_BLOCKS).
4. Use LOOKBACK_BLOCKS (from harness.model.cache), not the number 20 typed in."""


@exercise("blocks_added", _WIDEST_HINT, first=_WIDEST_FIRST, number=1)
def check_widest_turn(blocks_added: Callable[..., Any], widest_turn: Callable[..., Any]) -> str:
    """Exercise 1: ``blocks_added(n_calls, text)`` and ``widest_turn(text)`` agree with the
    cache simulator for turns of 1 to 12 parallel calls, with and without a line of text."""
    for text in (True, False):
        for n in range(1, 13):
            added, _ = moving_breakpoint_reads(n, text)
            got = blocks_added(n, text)
            if not _is_int(got) or got != added:
                raise NotYet(
                    f"blocks_added({n}, text={text}) is {got!r}, but that turn adds {added} "
                    "blocks to the prefix."
                )
    widths: dict[bool, int] = {}
    for text in (True, False):
        try:
            widest = widest_turn(text)
        except NotImplementedError:
            raise NotYet(
                "blocks_added is right for turns of 1 to 12 calls; `widest_turn` is still the "
                "stub (it raises NotImplementedError)."
            ) from None
        if not _is_int(widest):
            raise NotYet(f"widest_turn({text}) is {widest!r}; return a whole number of calls.")
        for n in range(1, 13):
            _, reads = moving_breakpoint_reads(n, text)
            if reads != (n <= widest):
                verb = "still reads" if reads else "misses"
                raise NotYet(
                    f"with {n} parallel calls (text={text}) the moving breakpoint alone {verb} "
                    f"the previous entry, but widest_turn({text}) is {widest!r}."
                )
        widths[text] = widest
    return (
        f"the moving breakpoint alone bridges {widths[True]} parallel calls with a line of "
        f"text and {widths[False]} without; one more, and the turn misses the cache"
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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


_HOUR_HINT = (
    "only what changes rarely (the tools, the static system prompt) earns a 1-hour entry. "
    "Start from with_breakpoints, and mark copies: the request's blocks are the agent's own."
)
_HOUR_FIRST = (
    "a request with two tools, two system blocks and five messages should come back with "
    '{"type": "ephemeral", "ttl": "1h"} on the last tool and the static system block, 5 minutes '
    "on the last message."
)
_HOUR_RECIPE = """\
1. request = with_breakpoints(request): the last tool and the messages get their markers
   (on copies). The static system block already carries one: SystemPrompt.render put it
   there.
2. tools = copy.deepcopy(request.tools); if there are tools, set
   tools[-1]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}.
3. system = copy.deepcopy(request.system); if it is a list of blocks, give every block that
   has a "cache_control" the 1-hour one. A system prompt given as one string has no
   breakpoint: leave it as it is.
4. Return dataclasses.replace(request, tools=tools, system=system): the messages keep the
   5-minute markers with_breakpoints gave them."""


def _identity_first() -> list[dict[str, Any]]:
    """A system prompt whose static part is two blocks: the breakpoint is on the second."""
    return [{"type": "text", "text": "You are a careful code reviewer."}, *_system()]


# (what the request is, the request, the ttls expected on its tools, and on its system blocks)
def _shapes() -> list[tuple[str, ModelRequest, list[str | None], list[str | None] | None]]:
    conversation = _conversation(2)
    return [
        (
            "a request with no tools",
            ModelRequest(DEFAULT_MODEL, 1000, conversation, _system(), None),
            [],
            ["1h", None],
        ),
        (
            "a request whose system prompt is one string (no breakpoint of its own)",
            ModelRequest(DEFAULT_MODEL, 1000, conversation, _STATIC, _tools()),
            [None, "1h"],
            None,  # the string, unchanged
        ),
        (
            "a request whose static system prompt is two blocks, the breakpoint on the second",
            ModelRequest(DEFAULT_MODEL, 1000, conversation, _identity_first(), _tools()),
            [None, "1h"],
            [None, "1h", None],
        ),
    ]


def _mark(
    with_hour_prefix: Callable[[ModelRequest], Any], request: ModelRequest, what: str = ""
) -> ModelRequest:
    """The learner's marking of ``request`` (``what`` it is, for a case of another shape),
    refused if it is not a request or if it changed the one it was given."""
    untouched = json.dumps([request.system, request.tools, request.messages], sort_keys=True)
    try:
        marked = with_hour_prefix(request)
    except NotImplementedError:
        raise
    except Exception as error:
        if not what:
            raise
        raise NotYet(f"for {what}, your code raised {type(error).__name__}: {error}") from None
    if not isinstance(marked, ModelRequest):
        raise NotYet(f"with_hour_prefix returned a {type(marked).__name__}, not a request.")
    if json.dumps([request.system, request.tools, request.messages], sort_keys=True) != untouched:
        raise NotYet(
            "with_hour_prefix changed the request it was given: the agent's own system "
            "blocks, tools or messages now carry new markers, and would pile up.",
            "the request's system blocks and tools belong to the agent: mark copies of them.",
        )
    return marked


def _five_minutes_on_messages(marked: ModelRequest, where: str) -> None:
    on_messages = [t for m in marked.messages for t in _ttls(_content(m)) if t]
    if not on_messages or any(t != "5m" for t in on_messages):
        raise NotYet(
            f"{where}the breakpoints on the messages are {on_messages}; they move every turn, "
            "so keep them at 5 minutes (a 1-hour write there would be paid on every call)."
        )


def _accepted(cache: PromptCache, marked: ModelRequest) -> Any:
    try:
        return cache.process(
            model=DEFAULT_MODEL, tools=marked.tools, system=marked.system, messages=marked.messages
        )
    except BadRequestError as error:
        raise NotYet(f"the API would refuse this request: {error.message}") from None


@exercise("with_hour_prefix", _HOUR_HINT, first=_HOUR_FIRST, number=2)
def check_with_hour_prefix(with_hour_prefix: Callable[[ModelRequest], Any]) -> str:
    """Exercise 2: the tools and the static system prompt cached for an hour, the messages'
    breakpoints for 5 minutes, and after a 20-minute break the prefix is read, not written;
    then the same on requests of other shapes (no tools, a string system prompt, a static
    part of two blocks)."""
    clock = FakeClock()
    cache = PromptCache(clock=clock)
    sent: list[Any] = []
    for turns in (2, 3):
        request = ModelRequest(DEFAULT_MODEL, 1000, _conversation(turns), _system(), _tools())
        marked = _mark(with_hour_prefix, request)
        tools, system = _ttls(marked.tools), _ttls(_as_blocks(marked.system))
        if not tools or tools[-1] != "1h":
            raise NotYet(f"the last tool's breakpoint is {tools[-1:] or None}, not 1h.")
        if system[:1] != ["1h"]:
            raise NotYet(f"the static system block's breakpoint is {system[:1]}, not 1h.")
        _five_minutes_on_messages(marked, "")
        sent.append(_accepted(cache, marked))
        clock.advance(20 * 60)  # lunch
    first, back = sent
    if first.written_1h == 0:
        raise NotYet("the first request wrote no 1-hour entries.")
    if back.read_until != "system[0]":
        raise NotYet(f"after a 20-minute break the cache says: {back.explanation}")
    for what, request, want_tools, want_system in _shapes():
        marked = _mark(with_hour_prefix, request, what)
        where = f"for {what}, "
        tools = _ttls(marked.tools)
        if tools != want_tools:
            raise NotYet(
                f"{where}the tools' breakpoints are {tools}; expected {want_tools} (only the "
                "last tool carries one, for an hour)."
            )
        if want_system is None:
            if marked.system != request.system:
                raise NotYet(
                    f"{where}the system prompt came back as {str(marked.system)[:60]!r}...; "
                    "expected the same string, as it was: it has no breakpoint to change, and "
                    "nothing says which part of it is static."
                )
        elif (got := _ttls(_as_blocks(marked.system))) != want_system:
            raise NotYet(
                f"{where}the system blocks' breakpoints are {got}; expected {want_system} (the "
                "block that carries the breakpoint ends the static part: it gets the hour)."
            )
        _five_minutes_on_messages(marked, where)
        _accepted(PromptCache(clock=FakeClock()), marked)
    return (
        f"after 20 minutes, the next request reads {back.read:,} tokens (tools and static "
        f"system prompt) from the 1-hour entries and rewrites only the {back.written:,} after "
        f"them; right too with no tools, a string system prompt and a two-block static part"
    )


def _as_blocks(system: str | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return system if isinstance(system, list) else []


def _content(message: Any) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


hint = hints(__name__, {1: _WIDEST_RECIPE, 2: _HOUR_RECIPE})

__all__ = ["check_widest_turn", "check_with_hour_prefix", "hint", "moving_breakpoint_reads"]
