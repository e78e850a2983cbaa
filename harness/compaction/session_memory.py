"""Tier 2: session-memory compaction. Replace old messages with the session's memory.

When the context reaches the auto-compact threshold and clearing old tool results (tier 1)
is not enough, Claude Code tries this before asking for a summary: the facts its memory
agent has been keeping (``harness.memory``) take the place of the old messages, and the
recent messages stay word for word. No model call is made at compaction time, so it costs
nothing and takes no time; the memory was paid for, a little at a time, from the cache.

What stays (Claude Code's rule, as observed):

* every message the memory has not read yet (after its last extraction), so nothing the
  memory does not hold is lost;
* and more, going back, until the kept messages hold at least 10K tokens and at least 5
  messages (no more than 40K, our choice: Claude Code has a maximum, whose value we did not
  confirm), so the model sees its recent work as it was;
* on a window smaller than 200K, less: the token range scales with the window, 5 % to 20 %
  of it (a 50K window keeps 2.5K-10K). This rule is our choice, not Claude Code's: its numbers
  are for 200K windows, and kept whatever the window they would leave a small window over its
  threshold (40K of recent messages do not fit under a 50K window's 33K), so tier 2 would
  never help there. At 200K and above the numbers stay Claude Code's (a larger window does
  not need more kept to fit). The 5 messages do not scale;
* the cut never falls between a ``tool_use`` and its ``tool_result`` (a reply and the results
  answering it stay together).

It offers nothing (auto-compact goes on to tier 3, the summary) when the memory is empty, when
it has not read this conversation (it was rewritten since the last extraction, say by a
summary), or when every message is recent. Auto-compact keeps the result only if it brings the
context clearly under the threshold, and checks the pinned facts on it as on every tier.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness import messages as m
from harness import tokens
from harness.compaction.events import Compacted
from harness.loop import BaseAgent, Rewrite
from harness.memory import SessionMemory, SessionMemoryError

MIN_KEEP_TOKENS = 10_000  # Claude Code, as observed
MIN_KEEP_MESSAGES = 5  # Claude Code, as observed
MAX_KEEP_TOKENS = 40_000  # Claude Code, as observed
REFERENCE_WINDOW = 200_000  # the window Claude Code's numbers are for


def keep_range(window: int) -> tuple[int, int]:
    """``(min_tokens, max_tokens)`` of tier 2 for a context window of ``window`` tokens.

    Claude Code's 10K-40K at 200K and above; below, the same shares of the window (5 % and
    20 %), so that what is kept leaves room under a small window's threshold (our rule; see
    the module docstring).
    """
    if window <= 0:
        raise ValueError(f"a context window holds at least one token, not {window}")
    share = min(window, REFERENCE_WINDOW)  # whole tokens: no float rounding at the halves
    least = MIN_KEEP_TOKENS * share // REFERENCE_WINDOW
    most = MAX_KEEP_TOKENS * share // REFERENCE_WINDOW
    return max(1, least), max(1, most)


MEMORY_PREAMBLE = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The session memory below was kept while it ran; the most recent messages follow it "
    "unchanged.\n\n"
)


def _size(messages: Sequence[m.MessageDict]) -> int:
    return sum(tokens.estimate_message(msg) for msg in messages)


def _answers_earlier_call(message: m.MessageDict) -> bool:
    return message["role"] == "user" and bool(m.tool_results(message))


def keep_from(
    messages: Sequence[m.MessageDict],
    unread: int,
    *,
    min_tokens: int = MIN_KEEP_TOKENS,
    min_messages: int = MIN_KEEP_MESSAGES,
    max_tokens: int = MAX_KEEP_TOKENS,
) -> int:
    """The index of the first message to keep; 0 means keep them all (nothing to replace).

    ``unread`` is the index of the first message the memory has not read: it and everything
    after it are kept whatever their size. Going back from there, messages are added while the
    kept ones hold fewer than ``min_tokens`` tokens or ``min_messages`` messages, unless the
    next one would take them past ``max_tokens``. Then the cut moves back until it does not
    separate a tool result from the call it answers.
    """
    start = max(0, min(unread, len(messages)))
    kept = _size(messages[start:])
    while start > 0 and (kept < min_tokens or len(messages) - start < min_messages):
        more = tokens.estimate_message(messages[start - 1])
        if kept + more > max_tokens and len(messages) - start >= min_messages:
            break
        start -= 1
        kept += more
    while start > 0 and _answers_earlier_call(messages[start]):
        start -= 1  # take the reply whose calls these results answer
    return start


def memory_message(memory_text: str, first_kept: m.MessageDict | None) -> list[m.MessageDict]:
    """The message(s) that stand for what was replaced: the memory, joined to the first kept
    message if that is the user's (the harness keeps roles alternating; the API would combine two
    user messages into one turn anyway)."""
    block = m.text(MEMORY_PREAMBLE + memory_text)
    if first_kept is not None and first_kept["role"] == "user":
        return [m.user([block, *m.blocks(first_kept)])]
    return [m.user([block])]


def _is_memory_message(message: m.MessageDict) -> bool:
    content = m.blocks(message)
    return (
        message["role"] == "user"
        and len(content) == 1
        and str(content[0].get("text", "")).startswith(MEMORY_PREAMBLE)
    )


def unread_from(memory: SessionMemory, messages: Sequence[m.MessageDict]) -> int | None:
    """The index of the first message the memory has not read, or None if it read none of
    this conversation (it was rewritten since the last extraction)."""
    if memory.covered is not None:
        for i, msg in enumerate(messages):
            if msg is memory.covered:
                return i + 1
    if messages and _is_memory_message(messages[0]):
        return 1  # a tier-2 conversation: its first message is the memory itself
    return None


class SessionMemoryCompaction:
    """Tier 2, for ``AutoCompact(session_memory=...)``: ``tier(agent)`` is a rewrite or None.

    ``min_tokens`` and ``max_tokens`` left out are the agent's window's (:func:`keep_range` of
    ``agent.context_window``, read at each call). ``last_reason`` says why the last call
    offered nothing (shown in the chapter).
    """

    def __init__(
        self,
        memory: SessionMemory,
        *,
        min_tokens: int | None = None,
        min_messages: int = MIN_KEEP_MESSAGES,
        max_tokens: int | None = None,
        trigger: str = "threshold",
    ) -> None:
        self.memory = memory
        self.min_tokens = min_tokens
        self.min_messages = min_messages
        self.max_tokens = max_tokens
        self.trigger = trigger
        self.last_reason = ""

    def __call__(self, agent: BaseAgent) -> Rewrite | None:
        self.last_reason = ""
        try:
            facts = self.memory.load(agent.clock.now())  # the file wins: a hand edit counts
        except SessionMemoryError as error:  # broken by hand, or a link out of the session
            return self._nothing(f"{error} (the last good memory is not used either)")
        if not facts:
            return self._nothing("the session memory is empty")
        messages = agent.messages
        unread = unread_from(self.memory, messages)
        if unread is None:
            return self._nothing("the memory has not read this conversation since it changed")
        least, most = keep_range(agent.context_window)
        start = keep_from(
            messages,
            unread,
            min_tokens=least if self.min_tokens is None else self.min_tokens,
            min_messages=self.min_messages,
            max_tokens=most if self.max_tokens is None else self.max_tokens,
        )
        if start == 0:
            return self._nothing("every message is recent (nothing to replace)")
        kept = list(messages[start:])
        head = memory_message(self.memory.text(provenance=False), kept[0] if kept else None)
        new = head + (kept[1:] if kept and kept[0]["role"] == "user" else kept)
        request = agent.request()
        before = tokens.estimate_request(messages, system=request.system, tools=request.tools)
        after = tokens.estimate_request(new, system=request.system, tools=request.tools)
        detail = (
            f"replaced {start} messages with session memory ({len(facts)} facts); "
            f"kept the last {len(kept)} messages ({_size(kept):,} tokens)"
        )
        return Rewrite(new, Compacted("session_memory", self.trigger, before, after, detail))

    def _nothing(self, reason: str) -> Rewrite | None:
        self.last_reason = reason
        return None


__all__ = [
    "MAX_KEEP_TOKENS",
    "MEMORY_PREAMBLE",
    "MIN_KEEP_MESSAGES",
    "MIN_KEEP_TOKENS",
    "REFERENCE_WINDOW",
    "SessionMemoryCompaction",
    "keep_from",
    "keep_range",
    "memory_message",
    "unread_from",
]
