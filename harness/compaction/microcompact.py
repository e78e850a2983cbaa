"""Tier 1: microcompact. Clear the content of old tool results, keep everything else.

Most of a coding agent's context is tool output: files it read, commands it ran, searches.
Old output is rarely needed again, and the model can always read a file a second time. So
the cheapest way to free context is to replace the content of old results with a short
marker, keeping every ``tool_use`` and its ``tool_result`` (the pairs the API requires),
and every word the user and the model said.

Claude Code's numbers (observed behaviour of the CLI): only results of file, shell,
search, web and edit tools are cleared; the 5 most recent are kept; the marker is
``[Old tool result content cleared]``.

The price is the prompt cache: changing an old message changes the prefix from there on,
so the next request writes everything after the first cleared result to cache again. So:

* by count: clear in batches (wait until there are many results to clear, then clear down
  to the 5 most recent), so the cache is broken rarely and each break frees a lot;
* by time: when the run was idle longer than the cache TTL, the cache is already cold and
  clearing costs nothing extra. The default, 5 minutes, assumes the 5-minute TTL this
  harness's requests use. Claude Code caches its main requests for 1 hour, and its idle
  trigger is reported as 60 minutes in recent versions (observed): match the TTL in use.

``microcompact`` is a pure function: the input list and its dicts are left untouched.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

from anthropic.types import Message

from harness import messages as m
from harness import tokens
from harness.compaction.context import ContextTracker
from harness.compaction.events import Compacted
from harness.loop import BaseAgent, Plugin, Rewrite

CLEARED = "[Old tool result content cleared]"
KEEP_RECENT = 5
# Tools whose results may be cleared: their output can be produced again by calling the
# tool again. (Claude Code: Read, Bash, Grep, Glob, WebSearch, WebFetch, Edit, Write.)
COMPACTABLE_TOOLS = frozenset(
    {"read_file", "bash", "grep", "glob", "edit_file", "write_file", "web_fetch", "web_search"}
)


@dataclass(frozen=True)
class MicrocompactResult:
    messages: list[m.MessageDict]
    """The conversation with old results cleared (a new list; the input is untouched)."""
    cleared: tuple[str, ...]
    """The ``tool_use_id`` of every result cleared by this call."""
    tokens_freed: int
    first_changed: int | None
    """Index of the first message that changed: the prompt cache misses from here."""

    @property
    def detail(self) -> str:
        """What happened, in a few words, for the event that reports it."""
        return (
            f"cleared {len(self.cleared)} results; cache misses from messages[{self.first_changed}]"
        )


def _tool_names(messages: Sequence[m.MessageDict]) -> dict[str, str]:
    return {
        str(use["id"]): str(use["name"])
        for message in messages
        if message.get("role") == "assistant"
        for use in m.tool_uses(message)
    }


def seen_results(messages: Sequence[m.MessageDict]) -> list[tuple[int, int]]:
    """(message index, block index) of every tool result the model has already seen.

    A result is seen once a request containing it got a reply, i.e. an assistant message
    follows it. Results in the trailing user message are about to be sent for the first
    time: clearing them would throw away work the model never looked at.
    """
    last_assistant = max(
        (i for i, message in enumerate(messages) if message.get("role") == "assistant"),
        default=-1,
    )
    return [
        (i, j)
        for i, message in enumerate(messages[:last_assistant])
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for j, block in enumerate(message["content"])
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def compactable_results(
    messages: Sequence[m.MessageDict], compactable: frozenset[str] = COMPACTABLE_TOOLS
) -> list[tuple[int, int]]:
    """Positions of every result of a compactable tool, seen or not, oldest first."""
    names = _tool_names(messages)
    return [
        (i, j)
        for i, message in enumerate(messages)
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for j, block in enumerate(message["content"])
        if isinstance(block, dict)
        and block.get("type") == "tool_result"
        and names.get(str(block.get("tool_use_id"))) in compactable
    ]


def _to_clear(
    messages: Sequence[m.MessageDict], keep: int, compactable: frozenset[str]
) -> list[tuple[int, int]]:
    """Seen results of compactable tools, other than the ``keep`` most recent, not yet cleared."""
    candidates = compactable_results(messages, compactable)
    recent = set(candidates[-keep:]) if keep > 0 else set()
    seen = set(seen_results(messages))
    return [
        (i, j)
        for i, j in candidates
        if (i, j) in seen and (i, j) not in recent and _worth_clearing(messages[i]["content"][j])
    ]


def _worth_clearing(block: m.Block) -> bool:
    """Not cleared yet, and longer than the marker: clearing "ok" would add tokens and
    still break the cache."""
    if block.get("content") == CLEARED:
        return False
    return tokens.estimate_block(block) > tokens.estimate_block({**block, "content": CLEARED})


def microcompact(
    messages: Sequence[m.MessageDict],
    *,
    keep: int = KEEP_RECENT,
    compactable: frozenset[str] = COMPACTABLE_TOOLS,
) -> MicrocompactResult:
    """Clear all but the ``keep`` most recent compactable results the model has seen.

    A result cleared before is left as it is, so applying this twice equals applying it once.
    """
    to_clear = _to_clear(messages, keep, compactable)
    out = list(messages)
    cleared: list[str] = []
    freed = 0
    for i, j in to_clear:
        block = out[i]["content"][j]
        if out[i] is messages[i]:
            out[i] = copy.deepcopy(messages[i])
        new_block = {k: v for k, v in block.items() if k != "content"}
        new_block["content"] = CLEARED
        freed += tokens.estimate_block(block) - tokens.estimate_block(new_block)
        out[i]["content"][j] = new_block
        cleared.append(str(block.get("tool_use_id")))
    first = next((i for i in range(len(out)) if out[i] is not messages[i]), None)
    return MicrocompactResult(out, tuple(cleared), freed, first)


def clearable_count(
    messages: Sequence[m.MessageDict],
    *,
    keep: int = KEEP_RECENT,
    compactable: frozenset[str] = COMPACTABLE_TOOLS,
) -> int:
    """How many results ``microcompact`` would clear now (cheap to ask before deciding)."""
    return len(_to_clear(messages, keep, compactable))


class Microcompact(Plugin):
    """Tier 1 on its own: clear old results by count, or freely once the cache is cold.

    * count: when at least ``min_clearable`` results can be cleared. Clearing breaks the
      prompt cache from the first cleared result on, so it is done in batches, not one
      result per turn (the API's own context editing has ``clear_at_least`` for the same
      reason). 10 is our choice, not a documented Claude Code number.
    * time: when more than ``idle_seconds`` passed since the last reply, the cache has
      expired anyway, so everything but the recent results goes. 300 seconds assumes the
      5-minute cache TTL of this harness's requests; with 1-hour cache breakpoints use 3600
      (Claude Code, whose main requests use 1-hour caches, is reported at 60 minutes).
    """

    def __init__(
        self,
        *,
        keep: int = KEEP_RECENT,
        min_clearable: int = 10,
        idle_seconds: float = 300.0,
        compactable: frozenset[str] = COMPACTABLE_TOOLS,
        tracker: ContextTracker | None = None,
    ) -> None:
        self.keep = keep
        self.min_clearable = min_clearable
        self.idle_seconds = idle_seconds
        self.compactable = compactable
        self.tracker = tracker
        self.last_reply_at: float | None = None

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        self.last_reply_at = agent.clock.now()

    def trigger(self, agent: BaseAgent) -> str | None:
        """``time``, ``count`` or None: whether to clear before the next request, and why."""
        clearable = clearable_count(agent.messages, keep=self.keep, compactable=self.compactable)
        if clearable == 0:
            return None
        idle = agent.clock.now() - self.last_reply_at if self.last_reply_at is not None else 0.0
        if idle > self.idle_seconds:
            return "time"
        if clearable >= self.min_clearable:
            return "count"
        return None

    def before_request(self, agent: BaseAgent) -> Rewrite | None:
        reason = self.trigger(agent)
        if reason is None:
            return None
        request = agent.request()
        before = tokens.estimate_request(
            request.messages, system=request.system, tools=request.tools
        )
        result = microcompact(agent.messages, keep=self.keep, compactable=self.compactable)
        if self.tracker is not None:
            self.tracker.invalidate()
        after = before - result.tokens_freed
        event = Compacted("microcompact", reason, before, after, result.detail)
        return Rewrite(result.messages, event)
