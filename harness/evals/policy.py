"""What the offline tasks' scripted model is made of: a policy that reads the request.

A task's scripted model is not a fixed list of replies: it is a *policy*, a function of the
request that works out from what it was sent (the conversation, any summary of it, its own
running notes) what is done and what to do next, as a model does. So the same task runs
under every configuration, and can fail for real there: a prompt too long for the window,
a fault nobody retried, notes lost in a compaction, work done twice after a restart.

:func:`scripted` makes the model: chapter 00's :class:`~harness.model.ScriptedModel` that
answers a compaction request with chapter 05's scripted summary, a memory extraction with
chapter 07's, and everything else with the task's policy. :class:`Interfering` wraps any
model (scripted or live) with what happens *to* a session rather than in it: an overloaded
API, a cut stream, the process dying. The rest are small readers of a request.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from anthropic.types import Message

from harness import messages as m
from harness.clock import Clock
from harness.compaction.summary import is_compaction_request
from harness.model import ScriptedModel
from harness.model.base import Model
from harness.model.cache import PromptCache
from harness.model.scripted import Reply, Request
from harness.model.scripted_memory import is_extraction_request, scripted_extraction
from harness.model.scripted_summary import scripted_summary
from harness.tools.outputs import output_text

Policy = Callable[[Request], Reply]
"""A task's scripted model: the reply to a request of the loop (or of a subagent)."""

Interference = Callable[[int, Mapping[str, Any]], BaseException | None]
"""What befalls the ``n``-th call (from 1) of one process with these arguments: an exception
to raise instead of calling the model (an API error, the process dying), or ``None``."""


class ProcessKilled(BaseException):
    """The process running the session died (``kill -9``, a power cut): nothing after this
    point runs, and nothing is written. A ``BaseException``, so that no ``except Exception``
    in the harness (error recovery's, say) can mistake it for an API error and retry."""


def scripted(
    policy: Policy,
    *,
    clock: Clock,
    window: int | None,
    id_prefix: str,
    cache: PromptCache | None = None,
) -> ScriptedModel:
    """The task's model offline: ``policy`` for the loop's requests and a subagent's, the
    scripted summary for a compaction, the scripted extraction for session memory. Give the
    processes of one session the same ``cache``: the API's prompt cache is on its side, and
    outlives a process."""
    model = ScriptedModel(clock=clock, context_window=window, id_prefix=id_prefix, cache=cache)
    model.answer_when(is_compaction_request, scripted_summary)
    model.answer_when(is_extraction_request, scripted_extraction)
    model.answer_when(lambda _request: True, policy)
    return model


class Interfering:
    """``model``, with ``interference`` consulted before each call (counted from 1)."""

    def __init__(self, model: Model, interference: Interference) -> None:
        self.model = model
        self.interference = interference
        self.calls = 0

    def create(
        self,
        *,
        model: str,
        max_tokens: int,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **extra: Any,
    ) -> Message:
        self.calls += 1
        arguments = {"model": model, "messages": messages, "system": system, "tools": tools}
        fault = self.interference(self.calls, arguments)
        if fault is not None:
            raise fault
        return self.model.create(
            model=model,
            max_tokens=max_tokens,
            messages=messages,
            system=system,
            tools=tools,
            **extra,
        )

    def count_tokens(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        return self.model.count_tokens(model=model, messages=messages, system=system, tools=tools)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


# -- reading a request -----------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """A tool call in the conversation, and its result if it has one."""

    name: str
    input: Mapping[str, Any]
    result: str | None
    """The result's text; ``None`` while it has none (or it was lost to a compaction)."""
    is_error: bool = False

    @property
    def succeeded(self) -> bool:
        return self.result is not None and not self.is_error


def calls(messages: Sequence[Mapping[str, Any]]) -> list[Call]:
    """Every tool call in ``messages``, in order, with its result."""
    results: dict[str, tuple[str, bool]] = {}
    for message in messages:
        if message.get("role") == "user":
            for block in m.tool_results(message):
                text = output_text(block.get("content") or "")
                results[str(block.get("tool_use_id"))] = (text, bool(block.get("is_error")))
    found = []
    for message in messages:
        if message.get("role") == "assistant":
            for use in m.tool_uses(message):
                result, error = results.get(str(use["id"]), (None, False))
                found.append(Call(str(use["name"]), dict(use["input"]), result, error))
    return found


def texts(messages: Sequence[Mapping[str, Any]]) -> Iterator[str]:
    """Every text block, user's and assistant's, in order (a summary of earlier work too)."""
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            yield content
            continue
        for block in content or []:
            if block.get("type") == "text":
                yield str(block.get("text", ""))


def last_match(
    messages: Sequence[Mapping[str, Any]], pattern: re.Pattern[str]
) -> re.Match[str] | None:
    """The last match of ``pattern`` in the conversation's text (a model's running notes,
    or a summary that quotes them), or ``None``."""
    found: re.Match[str] | None = None
    for text in texts(messages):
        for found in pattern.finditer(text):  # noqa: B007 - the last one is wanted
            pass
    return found


def new_results(request: Request) -> list[Call]:
    """The calls answered in the request's last message (the results the model now sees)."""
    last = request.last_message
    if last.get("role") != "user":
        return []
    answered = {str(b.get("tool_use_id")) for b in m.tool_results(last)}
    ids = [
        str(u["id"])
        for message in request.messages
        if message.get("role") == "assistant"
        for u in m.tool_uses(message)
    ]
    everything = calls(request.messages)
    return [c for i, c in zip(ids, everything, strict=True) if i in answered]


def tool_names(request: Request) -> set[str]:
    """The tools the request offers."""
    return {str(t.get("name")) for t in request.tools or []}


def first_words(request: Request) -> str:
    """The first user text of the conversation (the task, or a summary that stands for it)."""
    return next(texts([msg for msg in request.messages if msg.get("role") == "user"]), "")


__all__ = [
    "Call",
    "Interference",
    "Interfering",
    "Policy",
    "ProcessKilled",
    "calls",
    "first_words",
    "last_match",
    "new_results",
    "scripted",
    "texts",
    "tool_names",
]
