"""Chapter 12's exercises: a reminder where the cache survives it, and the list read back.

Exercise 1 checks the learner's ``remind(request, reminder)`` on requests built the way the
loop sends them (after prompt caching's ``with_breakpoints``, or without caching, whose prompt
is a string), on a request that ends on the model's message and on one with no messages:
the reminder must be the last block of the last user message, every block before it
unchanged, and the request it was given (and the agent's own list) left alone. Then it sends
a reminded request and the next one through the cache simulator (``harness.model.cache``):
the next request must read as much from the cache as it does when no reminder was sent.
Exercise 2 checks ``latest_list(conversation)`` against :func:`harness.planning.list_in` on
the ways a conversation holds a list (writes, a refused write, an input that no longer
validates, a checklist a compaction put back, before and after a write), then on generated
sessions. Both refuse code that calls the package's answer. The conversations are built in
:mod:`harness.exercises.ch12_sessions`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from harness import messages as m
from harness import planning
from harness.clock import FakeClock
from harness.exercises import NotYet, exercise, forbid, hints, refers_to
from harness.exercises.ch12_sessions import (
    REMINDER,
    SYSTEM,
    TASK,
    TOOLS,
    list_cases,
    session,
    session_cases,
)
from harness.loop import ModelRequest
from harness.model import DEFAULT_MODEL
from harness.model.cache import CacheResult, PromptCache
from harness.planning import plugin as plugin_module
from harness.planning import reminders as reminders_module
from harness.planning.plugin import list_in
from harness.planning.reminders import PLAN_MODE_REMINDER, system_reminder, with_reminder
from harness.planning.todos import TodoList
from harness.prompt import with_breakpoints

# -- exercise 1: put the reminder where the cache survives it ----------------------------------

_REMIND_HINT = (
    "the request is the copy that is sent, but its messages may be the agent's own: the list "
    "and the message dicts in it. Build new ones where something changes. Chapter 03 says "
    "where a breakpoint's prefix ends, and what the next request can read."
)
_REMIND_FIRST = (
    "remind(request, reminder), with a request as prompt caching sends it, whose last message "
    "holds two tool_result blocks (the second with the cache breakpoint), should return a "
    "copy whose last message holds three blocks: the two results, unchanged, then "
    "m.text(reminder)."
)
_REMIND_RECIPE = (
    "With from dataclasses import replace and from harness import messages as m: "
    "messages = list(request.messages) (a new list). If there are none, or the last one's "
    "role is not 'user', return request as it is. Otherwise take last = messages[-1] and "
    "put a new dict in its place: {**last, 'content': [*m.blocks(last), m.text(reminder)]} "
    "(m.blocks turns a string into one text block, and leaves the old blocks as they are). "
    "Return replace(request, messages=messages)."
)


def _request(conversation: list[m.MessageDict], *, caching: bool = True) -> ModelRequest:
    request = ModelRequest(
        DEFAULT_MODEL, 8_000, conversation, system=SYSTEM, tools=copy.deepcopy(TOOLS)
    )
    return with_breakpoints(request) if caching else request


def remind_cases() -> list[tuple[str, list[m.MessageDict], ModelRequest, str]]:
    """(what, the agent's conversation, the request sent for it, the reminder)."""
    plan_mode = system_reminder(PLAN_MODE_REMINDER)
    turn = session(1)
    first = [m.user(TASK)]
    bare = [m.user(TASK)]
    ends_on_reply = [*session(1), m.assistant("Reading app/tax.py first.")]
    no_messages: list[m.MessageDict] = []
    return [
        (
            "a turn's request as prompt caching sends it (the last message: two tool_result "
            "blocks, the second with the cache breakpoint)",
            turn,
            _request(turn),
            REMINDER,
        ),
        (
            "the session's first request as prompt caching sends it (the prompt, now one text "
            "block with the cache breakpoint), with plan mode's reminder",
            first,
            _request(first),
            plan_mode,
        ),
        (
            "a first request sent without prompt caching: its one message is the prompt, a string",
            bare,
            _request(bare, caching=False),
            plan_mode,
        ),
        (
            "a request that ends on the model's message (nothing to add to: return it as it is)",
            ends_on_reply,
            _request(ends_on_reply, caching=False),
            REMINDER,
        ),
        (
            "a request with no messages (return it as it is)",
            no_messages,
            ModelRequest(DEFAULT_MODEL, 8_000, no_messages),
            REMINDER,
        ),
    ]


def _same_messages(request: ModelRequest, before: ModelRequest, kept: list[m.MessageDict]) -> bool:
    """Whether ``request`` still holds the list and dicts it held (``kept``), unchanged."""
    same_objects = len(request.messages) == len(kept) and all(
        a is b for a, b in zip(request.messages, kept, strict=False)
    )
    return same_objects and request.messages == before.messages


def _remind_one(
    remind: Callable[[ModelRequest, str], Any],
    what: str,
    agents: list[m.MessageDict],
    request: ModelRequest,
    reminder: str,
    want: ModelRequest,
) -> ModelRequest:
    agents_before = copy.deepcopy(agents)
    agents_dicts = list(agents)
    before = copy.deepcopy(request)
    kept = list(request.messages)
    holder = request.messages
    try:
        got = remind(request, reminder)
    except NotImplementedError:
        raise
    except Exception as error:
        raise NotYet(f"for {what}, your code raised {type(error).__name__}: {error}") from None
    if agents != agents_before or any(
        a is not b for a, b in zip(agents, agents_dicts, strict=False)
    ):
        raise NotYet(
            f"{what}: the agent's own conversation changed. The request's messages are the "
            "agent's list and its message dicts: a reminder kept there would be sent, and "
            "cached, with every later request."
        )
    if request.messages is not holder or not _same_messages(request, before, kept):
        raise NotYet(
            f"{what}: the request you were given changed (its messages list or a message in "
            "it). Prompt caching keeps the requests it sent; build a new list, and a new dict "
            "for the message you change."
        )
    if not isinstance(got, ModelRequest):
        raise NotYet(f"{what}: return a ModelRequest (a copy of the request), not {got!r:.80}.")
    for f in fields(ModelRequest):
        if f.name != "messages" and getattr(got, f.name) != getattr(request, f.name):
            raise NotYet(
                f"{what}: the copy's {f.name} differs from the request's; only the messages "
                "change (dataclasses.replace keeps the rest)."
            )
    if len(got.messages) != len(want.messages):
        raise NotYet(
            f"{what}: the copy has {len(got.messages)} messages, the request "
            f"{len(request.messages)}. The reminder goes inside the last user message, not in "
            "a message of its own (and a request that ends on the model's message, or has "
            "none, comes back as it is)."
        )
    if got.messages[:-1] != want.messages[:-1]:
        raise NotYet(f"{what}: only the last message may change; an earlier one did.")
    if got.messages and got.messages[-1] != want.messages[-1]:
        if request.messages[-1].get("role") != "user":
            raise NotYet(f"{what}: the last message is the model's: leave it as it is.")
        got_blocks = _blocks(got.messages[-1])
        want_blocks = m.blocks(want.messages[-1])
        if not got_blocks or got_blocks[-1] != m.text(reminder):
            last = got_blocks[-1] if got_blocks else None
            raise NotYet(
                f"{what}: the last block should be m.text(reminder), nothing more; yours is "
                f"{last!r:.100}."
            )
        raise NotYet(
            f"{what}: the blocks before the reminder should be the message's own, unchanged "
            f"(the cache breakpoint where it was); you have {len(got_blocks) - 1} before it "
            f"where the message has {len(want_blocks) - 1}, or one of them changed."
        )
    return got


def _blocks(message: object) -> list[Any]:
    """A message's blocks, whatever the learner's code put there (never raises)."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [m.text(content)]
    return list(content) if isinstance(content, list) else []


def _process(cache: PromptCache, request: ModelRequest) -> CacheResult:
    return cache.process(
        model=request.model,
        tools=request.tools,
        system=request.system,
        messages=request.messages,
        automatic=request.extra.get("cache_control"),
    )


def cache_reads(remind: Callable[[ModelRequest, str], Any] | None) -> tuple[int, int]:
    """(tokens the request after a reminded one reads from the cache, its prompt's tokens):
    a session's request after its 3rd reply goes with a reminder (by ``remind``; ``None``:
    none is sent), then the request after its 4th without one, all through prompt caching."""
    cache = PromptCache(clock=FakeClock())
    _process(cache, _request(session(2)))  # the turn before: its entry is in the cache
    reminded = _request(session(3))
    if remind is not None:
        reminded = remind(reminded, REMINDER)
    _process(cache, reminded)
    after = _process(cache, _request(session(4)))
    return after.read, after.total


@exercise("remind", _REMIND_HINT, first=_REMIND_FIRST, number=1)
def check_remind(remind: Callable[[ModelRequest, str], Any]) -> str:
    why = "remind calls the package's with_reminder; build the copy yourself."
    if refers_to(remind, with_reminder, attributes=False):
        raise NotYet(why)
    cases = remind_cases()
    wanted = [with_reminder(copy.deepcopy(r), text) for _, _, r, text in cases]
    without, total = cache_reads(None)
    with (
        forbid(reminders_module, "with_reminder", why),
        forbid(plugin_module, "with_reminder", why),
        forbid(planning, "with_reminder", why),
    ):
        for (what, agents, request, text), want in zip(cases, wanted, strict=True):
            _remind_one(remind, what, agents, request, text, want)
        try:
            read, _ = cache_reads(remind)
        except NotImplementedError:
            raise
        except Exception as error:
            raise NotYet(
                f"in a session of four turns, your code raised {type(error).__name__}: {error}"
            ) from None
    if read != without:
        raise NotYet(
            f"a request went with a reminder, and the next request (without it) read {read:,} "
            f"tokens from the cache, where it reads {without:,} after a request with no "
            "reminder: the reminder changed the prefix that was cached.",
            "which block carries the breakpoint, and is the reminder before it or after it?",
        )
    return (
        f"{len(cases)} requests: the reminder last, every block before it unchanged, the agent's "
        f"list untouched; the request after a reminded one read {read:,} of its {total:,} "
        "prompt tokens from the cache, as it does when no reminder was sent."
    )


# -- exercise 2: get the list back ---------------------------------------------------------------

_LIST_HINT = (
    "a list lives in a conversation in two kinds of block: what the model wrote, and what a "
    "compaction put back. Read from the end, and ask of each call whether the tool took it: "
    "its result is in the next user message, and the tool checked the input before it "
    "answered."
)
_LIST_FIRST = (
    "latest_list(conversation), for a conversation where the model wrote its list once (a "
    "todo_write call, and a result that is not an error), should be that list: "
    "TodoList.of(the call's input['todos'])."
)
_LIST_RECIPE = (
    "With from harness.planning import TodoList, parse_checklist, from "
    "harness.planning.plugin import TODO_HEADING, TODO_END and from pydantic import "
    "ValidationError: first collect refused, the tool_use_id of every tool_result block "
    "(m.tool_results(msg), for each message) whose is_error is true. Then for msg in "
    "reversed(conversation), for block in reversed(m.blocks(msg)): if it is a tool_use named "
    "'todo_write' whose id is not in refused, try return "
    "TodoList.of(block['input']['todos']), and on ValidationError go on looking. If it is a "
    "text block with TODO_HEADING in its text, take the part after the heading and before "
    "TODO_END and return parse_checklist(that part). After the loop, return None."
)


def _show(found: object) -> str:
    if isinstance(found, TodoList):
        return "; ".join(f"[{i.status}] {i.content}" for i in found.items) or "an empty list"
    return repr(found)


@exercise("latest_list", _LIST_HINT, first=_LIST_FIRST, number=2)
def check_latest_list(latest_list: Callable[[list[m.MessageDict]], Any]) -> str:
    why = "latest_list calls the package's list_in; read the conversation yourself."
    if refers_to(latest_list, list_in, attributes=False):
        raise NotYet(why)
    cases = list_cases()
    generated = session_cases()
    expected = [list_in(c) for _, c in [*cases, *generated]]
    with forbid(plugin_module, "list_in", why), forbid(planning, "list_in", why):
        for (what, conversation), want in zip([*cases, *generated], expected, strict=True):
            before = copy.deepcopy(conversation)
            try:
                got = latest_list(conversation)
            except NotImplementedError:
                raise
            except Exception as error:
                raise NotYet(
                    f"for {what}, your code raised {type(error).__name__}: {error}"
                ) from None
            if conversation != before:
                raise NotYet(f"{what}: the conversation changed; only read it.")
            if got is not None and not isinstance(got, TodoList):
                raise NotYet(f"{what}: return a TodoList or None, not {got!r:.80}.")
            if got != want:
                same_text = isinstance(got, TodoList) and _show(got) == _show(want)
                nudge = (
                    "the items match but not their activeForm: a checklist put back holds "
                    "only the content (parse_checklist says how it reads one back)."
                    if same_text
                    else None
                )
                raise NotYet(
                    f"{what}: the latest list is {_show(want)}; yours is {_show(got)}.", nudge
                )
    return (
        f"{len(cases)} conversations and {len(generated)} generated sessions: your list is the "
        "one the package restores, whether it comes from a write or from a checklist put back."
    )


hint = hints(__name__, {1: _REMIND_RECIPE, 2: _LIST_RECIPE})

__all__ = [
    "cache_reads",
    "check_latest_list",
    "check_remind",
    "hint",
    "list_cases",
    "remind_cases",
    "session_cases",
]
