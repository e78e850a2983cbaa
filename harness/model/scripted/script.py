"""The scripted model's script: the replies it gives, the faults it raises, the requests it saw.

A script is a list of steps. A step is a :class:`Reply` (made with :func:`reply`), an
exception to raise (see ``harness.model.faults``), or a function of the :class:`Request`
returning either (for replies that depend on what was sent, e.g. a summary). A
:class:`Fault` is scheduled apart from the script (see ``ScriptedModel.schedule``), and
:func:`said` matches the requests of one conversation, for ``ScriptedModel.script_when``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from anthropic.types import StopReason

from harness.model.cache import CacheResult


@dataclass(frozen=True)
class ToolCall:
    """A tool call the scripted model will make: a tool name and its input."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """What the scripted model says on one step."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: StopReason | None = None
    """Forced stop reason; by default ``tool_use`` if there are tool calls, else ``end_turn``."""


def tool_call(name: str, input: Mapping[str, Any] | None = None, /, **kwargs: Any) -> ToolCall:
    """``tool_call("read_file", path="a.py")`` or ``tool_call("read_file", {"path": "a.py"})``."""
    return ToolCall(name, {**(input or {}), **kwargs})


def reply(
    text: str | None = None,
    *,
    tool_calls: Iterable[ToolCall | tuple[str, Mapping[str, Any]]] = (),
    stop_reason: StopReason | None = None,
) -> Reply:
    """A scripted reply: some text, some tool calls, or both."""
    calls = tuple(c if isinstance(c, ToolCall) else ToolCall(c[0], dict(c[1])) for c in tool_calls)
    if text is None and not calls:
        raise ValueError("a reply needs text, tool calls, or both")
    return Reply(text=text, tool_calls=calls, stop_reason=stop_reason)


@dataclass(frozen=True)
class Request:
    """One request as the scripted model received it (a deep copy: later edits don't leak)."""

    model: str
    max_tokens: int
    messages: list[dict[str, Any]]
    system: str | list[dict[str, Any]] | None
    tools: list[dict[str, Any]] | None
    extra: dict[str, Any]
    input_tokens: int
    """The prompt's size by ``harness.tokens`` (what ``usage`` will report, all parts together);
    0 for a request refused as malformed (a bad field, tool or conversation): never counted."""
    cache: CacheResult | None = None
    """How the prompt cache split this prompt (set once the request got a reply)."""

    @property
    def last_message(self) -> dict[str, Any]:
        return self.messages[-1] if self.messages else {}


Step = Reply | BaseException | Callable[[Request], "Reply | BaseException"]

Fault = BaseException | None
"""A scheduled fault: an exception the call raises, or ``None`` for a call that goes through."""
FaultSchedule = Iterable[Fault] | Callable[[Request], Fault]


class ScriptExhausted(RuntimeError):
    """The model was called more times than its script has steps."""


def _preview(request: Request, width: int = 300) -> str:
    last = request.last_message
    content = last.get("content", "")
    body = content if isinstance(content, str) else repr(content)
    if len(body) > width:
        body = body[:width] + "…"
    return f"{len(request.messages)} messages; last ({last.get('role')}): {body}"


def said(text: str) -> Callable[[Request], bool]:
    """Matches a request in which a user message holds a text block containing ``text``
    (a task, a directive). Tool inputs do not count: a parent's call that hands out the
    task holds it too."""

    def matches(request: Request) -> bool:
        for message in request.messages:
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                if text in content:
                    return True
                continue
            for block in content or []:
                if block.get("type") == "text" and text in str(block.get("text", "")):
                    return True
        return False

    return matches
