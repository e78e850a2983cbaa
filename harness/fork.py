"""Forks: a side conversation that starts from the parent's exact request.

A fork is how Claude Code runs background work about the conversation (session memory here;
subagents, chapter 10) without paying for the conversation again. Its first request is the
parent's request byte for byte (model, system prompt, tools, messages) with one user message
added at the end, so everything up to that message is a prefix the parent's last request
already cached: the fork reads it from the cache at a tenth of the price.

Two rules keep a fork from hurting its parent:

* it never changes the parent's state: its messages are a new list (the parent's message
  objects are shared, never modified), its tool calls run in a runner of its own, so the
  parent's tool runner, result storage and microcompact never hear of them;
* it never compacts: its requests go through ``agent.call``, which runs the ``call_model``
  layers (recovery, cache breakpoints) and the meter, never ``before_request``. A fork that
  could auto-compact would start a compaction from inside one (Claude Code's rule, as
  third-party analyses of its source describe it).

If the parent's last reply asked for tools that have not run yet, the fork's added message
answers each call with the same placeholder text before the directive, as Claude Code's
``buildForkedMessages`` does: the conversation stays API-valid and every sibling fork built
from that point shares the same bytes up to its directive.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from anthropic.types import Message

from harness import messages as m
from harness.loop import BaseAgent, ModelRequest

FORK_PLACEHOLDER = "[Not run in this fork: the parent conversation runs this call.]"
"""The result every pending tool call gets in a fork (the same text for all of them)."""

DEFAULT_FORK_TURNS = 3  # our choice: an extraction is one edit and one check


def fork_messages(messages: Sequence[m.MessageDict], directive: str) -> list[m.MessageDict]:
    """The parent's conversation with ``directive`` added as the fork's user message.

    The result is a new list; the parent's message objects are reused, never changed (a
    message that has to gain the directive is copied). Roles still alternate and every
    ``tool_use`` still has its ``tool_result``.
    """
    out = list(messages)
    last = out[-1] if out else None
    if last is None or last["role"] == "assistant":
        pending = m.tool_uses(last) if last is not None else []
        placeholders = [m.tool_result(str(u["id"]), FORK_PLACEHOLDER) for u in pending]
        out.append(m.user([*placeholders, m.text(directive)]))
    else:  # the conversation ends on the user's side: the directive joins that message
        out[-1] = m.user([*m.blocks(last), m.text(directive)])
    return out


class ForkTools(Protocol):
    """What runs a fork's tool calls: one ``tool_result`` per call, in order."""

    def run(self, calls: Sequence[m.Block]) -> list[m.Block]: ...


class NoForkTools:
    """A fork that may not use tools: every call is answered with an error."""

    def run(self, calls: Sequence[m.Block]) -> list[m.Block]:
        return [
            m.tool_result(str(c["id"]), "Tools are not available in this fork.", is_error=True)
            for c in calls
        ]


@dataclass
class ForkResult:
    """What a fork did: its own messages (after the parent's), its replies, and their usage."""

    messages: list[m.MessageDict] = field(default_factory=list)
    """The fork's messages after the parent's: the directive, its replies, its tool results."""
    replies: list[Message] = field(default_factory=list)
    stopped: str = ""
    """``end_turn`` (it finished), ``max_turns`` (still calling tools at its limit), or the
    last reply's other stop reason."""

    @property
    def text(self) -> str:
        """The text of its last reply."""
        if not self.replies:
            return ""
        return "".join(b.text for b in self.replies[-1].content if b.type == "text")

    @property
    def calls(self) -> int:
        """Model calls the fork made."""
        return len(self.replies)

    def tokens(self, part: str) -> int:
        """Total of one usage field over its calls (``cache_read_input_tokens``, ...)."""
        return sum(getattr(r.usage, part, 0) or 0 for r in self.replies)


def run_fork(
    agent: BaseAgent,
    directive: str,
    *,
    tools: ForkTools | None = None,
    purpose: str = "fork",
    max_turns: int = DEFAULT_FORK_TURNS,
) -> ForkResult:
    """Run a fork of ``agent``'s conversation on ``directive``, up to ``max_turns`` model calls.

    Each call is the parent's request (``agent.request()``, as it is now) with the fork's
    messages after it, sent through ``agent.call`` with ``purpose`` (so a layer can tell it
    from the parent's turns). API errors are raised to the caller, after the ``call_model``
    layers (retries, fallback) have done what they can. The parent's conversation is never
    touched.
    """
    if max_turns < 1:
        raise ValueError(f"a fork needs at least one turn, not {max_turns}")
    runner = tools or NoForkTools()
    base = agent.request()
    conversation = fork_messages(base.messages, directive)
    # The fork's own messages: the one added, or the parent's last, copied with the directive.
    start = len(base.messages) if len(conversation) > len(base.messages) else len(conversation) - 1
    result = ForkResult(messages=conversation[start:])
    for turn in range(1, max_turns + 1):
        request = ModelRequest(
            model=base.model,
            max_tokens=base.max_tokens,
            messages=list(conversation),
            system=base.system,
            tools=base.tools,
            extra=dict(base.extra),
            purpose=purpose,
        )
        reply = agent.call(request)
        result.replies.append(reply)
        message = m.from_reply(reply)
        conversation.append(message)
        result.messages.append(message)
        calls = m.tool_uses(message)
        if not calls:
            result.stopped = reply.stop_reason or "end_turn"
            return result
        if turn == max_turns:
            result.stopped = "max_turns"
            return result
        answer = m.user(runner.run(calls))
        conversation.append(answer)
        result.messages.append(answer)
    return result  # not reached: the loop returns on its last turn


__all__ = [
    "DEFAULT_FORK_TURNS",
    "FORK_PLACEHOLDER",
    "ForkResult",
    "ForkTools",
    "NoForkTools",
    "fork_messages",
    "run_fork",
]
