"""Chapter 03's exercises: which turns the moving breakpoint alone survives, and a prefix
cached for an hour.

Both checks ask the cache simulator (``harness.model.cache``), the same one the chapter's
sessions go through, rather than a list of expected answers: exercise 1 sends turns of 1 to 40
calls through it, narrated and in parallel, with three lookback windows; exercise 2 sends a
request, waits twenty minutes on a fake clock, and sends the next one, then marks requests of
other shapes (no tools, a system prompt that is one string, a static part of two blocks).
Each exercise's recipe comes only from ``hint(n)``.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from typing import Any

from anthropic import BadRequestError

from harness.clock import FakeClock
from harness.exercises import NotYet, exercise, hints
from harness.loop import ModelRequest
from harness.model import DEFAULT_MODEL
from harness.model.cache import LOOKBACK_POSITIONS, PromptCache
from harness.notebook.turns import narrated_turn, parallel_turn, positions_between

# -- exercise 1: which turns break the moving breakpoint? -------------------------------------

_STATIC = "You review code for a shop. " * 200  # well above the cache's minimum
_MARK = {"type": "ephemeral"}
_WIDTHS = range(1, 41)
# The API's window first, then two others: the rule, not the number 20, decides.
_LOOKBACKS = (LOOKBACK_POSITIONS, 21, 15)


def _marked_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = copy.deepcopy(messages)
    out[-1]["content"][-1]["cache_control"] = dict(_MARK)
    return out


def _turn(n_calls: int, narrated: bool, start: int) -> list[dict[str, Any]]:
    """One turn of ``n_calls`` calls, narrated (a line before each) or in parallel."""
    return narrated_turn(n_calls, start) if narrated else parallel_turn(n_calls, start)


@functools.cache  # the same simulations whatever the answer checked: run each once
def moving_breakpoint_reads(
    n_calls: int, narrated: bool, lookback: int = LOOKBACK_POSITIONS
) -> tuple[int, bool]:
    """(positions the turn added, whether the moving breakpoint alone still read the previous
    request's entry), from the cache simulator with a lookback of ``lookback`` positions."""
    system = [{"type": "text", "text": _STATIC, "cache_control": dict(_MARK)}]
    before = [
        {"role": "user", "content": [{"type": "text", "text": "Do they all round the same?"}]},
        *_turn(1, False, 0),
    ]
    after = before + _turn(n_calls, narrated, 100)
    cache = PromptCache(clock=FakeClock(), lookback=lookback)
    first = cache.process(
        model=DEFAULT_MODEL, tools=None, system=system, messages=_marked_last(before)
    )
    second = cache.process(
        model=DEFAULT_MODEL, tools=None, system=system, messages=_marked_last(after)
    )
    return positions_between(None, system, before, after), second.read >= first.total


def _say(narrated: bool) -> str:
    return f"narrated={narrated}"


_WIDEST_HINT = (
    "count positions, not blocks, the way the chapter's table of rules does: the reply, then "
    "the user message that answers it. Which blocks share a position? The moving breakpoint "
    "checks `lookback` positions, its own among them."
)
_WIDEST_FIRST = (
    "positions_added(1, narrated=False) should be 3: a line of text, one call, one result."
)
_WIDEST_RECIPE = """\
1. positions_added(n_calls, narrated): every block is a position of its own, except that a
   run of consecutive tool_use blocks is one position, and so is a run of consecutive
   tool_result blocks.
   - Narrated, the reply alternates text and tool_use (text, call, text, call...): no two
     calls touch, so each text and each call is a position: 2 * n_calls.
   - Not narrated, the reply is one line of text and then one run of calls: 2, whatever
     n_calls is.
   - The results come back as one run of tool_result blocks: add 1.
2. The moving breakpoint checks `lookback` positions, its own first: it still finds the
   previous entry only if the turn added fewer than `lookback` positions.
3. widest_turn(narrated, lookback): the largest n in range(lookback + 1) with
   positions_added(n, narrated) < lookback. A narrated turn of `lookback` calls adds more
   than `lookback` positions; if even that many calls fit, the turn's positions do not grow
   with its calls and no number of calls breaks the breakpoint: return None.
4. Use LOOKBACK_POSITIONS (from harness.model.cache) as the default, not the number 20 typed
   in."""


@exercise("positions_added", _WIDEST_HINT, first=_WIDEST_FIRST, number=1)
def check_widest_turn(positions_added: Callable[..., Any], widest_turn: Callable[..., Any]) -> str:
    """Exercise 1: ``positions_added(n_calls, narrated)`` and ``widest_turn(narrated,
    lookback)`` agree with the cache simulator for turns of 1 to 40 calls, narrated and in
    parallel, with the API's lookback of 20 positions and with two others."""
    for narrated in (False, True):
        for n in _WIDTHS:
            added, _ = moving_breakpoint_reads(n, narrated)
            got = positions_added(n, narrated)
            if not _is_int(got) or got != added:
                raise NotYet(
                    f"positions_added({n}, {_say(narrated)}) is {got!r}, but that turn adds "
                    f"{added} positions to the prefix."
                )
    widths: dict[bool, int | None] = {}
    for lookback in _LOOKBACKS:
        for narrated in (False, True):
            call = f"widest_turn({_say(narrated)}, lookback={lookback})"
            try:
                widest = widest_turn(narrated, lookback)
            except NotImplementedError:
                raise NotYet(
                    "positions_added is right for turns of 1 to 40 calls; `widest_turn` is "
                    "still the stub (it raises NotImplementedError)."
                ) from None
            if widest is not None and not _is_int(widest):
                raise NotYet(f"{call} is {widest!r}; return a whole number of calls, or None.")
            reads = {n: moving_breakpoint_reads(n, narrated, lookback)[1] for n in _WIDTHS}
            if widest is None and not all(reads.values()):
                first_miss = min(n for n, hit in reads.items() if not hit)
                raise NotYet(
                    f"{call} is None, but a turn of {first_miss} calls ({_say(narrated)}) "
                    f"already misses the previous entry with a lookback of {lookback}."
                )
            if widest is not None and all(reads.values()):
                raise NotYet(
                    f"{call} is {widest!r}, but every turn of {_WIDTHS[0]} to {_WIDTHS[-1]} "
                    f"calls ({_say(narrated)}) still reads the previous entry with a lookback "
                    f"of {lookback}: does any number of calls break it?"
                )
            for n, hit in reads.items():
                if widest is not None and hit != (n <= widest):
                    verb = "still reads" if hit else "misses"
                    raise NotYet(
                        f"with {n} calls ({_say(narrated)}) and a lookback of {lookback} "
                        f"positions, the moving breakpoint alone {verb} the previous entry, "
                        f"but {call} is {widest!r}."
                    )
            if lookback == LOOKBACK_POSITIONS:
                widths[narrated] = widest
    return (
        f"with the API's {LOOKBACK_POSITIONS} positions, the moving breakpoint alone bridges a "
        f"narrated turn of up to {widths[True]} calls and a parallel turn of any width "
        f"(widest_turn gives {widths[False]}); one more narrated call, and the turn misses "
        "the cache"
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
