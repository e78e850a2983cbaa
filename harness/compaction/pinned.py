"""Pinned facts: what must survive every compaction, checked word for word.

They answer the most common complaint about compaction ("it forgot the rules"): rules from
CLAUDE.md, constraints the user stated, open tasks. After a compaction, whichever tier made
it (microcompact, session memory or the summary), each one is looked for in the new context
and the system prompt; a missing one is put back (:meth:`PinnedFacts.put_back`), and the
compaction's report or event says so.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness import messages as m

PINNED_HEADING = "Pinned facts (kept across every compaction):"


def put_back_detail(count: int) -> str:
    """How a compaction's report or event says that ``count`` facts were put back."""
    return f"put back {count} pinned fact{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class PinnedFact:
    text: str
    source: str
    """Where it came from: ``CLAUDE.md``, ``user``, ``task``..."""


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


@dataclass(frozen=True)
class PutBack:
    """A proposed new conversation after the pinned-fact check."""

    messages: list[m.MessageDict]
    """The conversation, with the missing facts in a block at its end (a new list; the input
    and its messages are untouched)."""
    facts: tuple[PinnedFact, ...]
    """The facts that were missing and were put back, in the order they were pinned."""

    @property
    def detail(self) -> str:
        """What was put back, in a few words, for a compaction's event ("" for nothing)."""
        return put_back_detail(len(self.facts)) if self.facts else ""


@dataclass
class PinnedFacts:
    """Facts that must survive every compaction."""

    facts: list[PinnedFact] = field(default_factory=list)
    live: list[Callable[[], PinnedFact | None]] = field(default_factory=list)
    """Facts that change as the session goes, asked for at each check: the todo list
    (chapter 12) pins its current checklist this way. ``None``: nothing to pin now."""

    def add(self, text: str, source: str = "user") -> None:
        self.facts.append(PinnedFact(text.strip(), source))

    def current(self) -> list[PinnedFact]:
        """Every fact to check now: the fixed ones, then each live one's current text."""
        out = list(self.facts)
        for provide in self.live:
            fact = provide()
            if fact is not None and fact.text.strip():
                out.append(fact)
        return out

    def missing_from(
        self,
        conversation: Sequence[m.MessageDict],
        *,
        system: str | Sequence[Mapping[str, Any]] | None = None,
    ) -> list[PinnedFact]:
        """Facts whose text does not appear in the conversation (case and spacing ignored).

        A literal check, on purpose: a summary that paraphrases a rule ("use British English"
        for "always write colour, not color") has lost its exact wording, and the fact goes back.
        The system prompt counts as context too (CLAUDE.md rules live there, chapter 03), so a
        rule it already carries is not repeated.
        """
        parts = [
            str(b.get("text", b.get("content", ""))) for msg in conversation for b in m.blocks(msg)
        ]
        if isinstance(system, str):
            parts.append(system)
        elif system:
            parts += [str(block.get("text", "")) for block in system]
        haystack = _normalise("\n".join(parts))
        return [f for f in self.current() if _normalise(f.text) not in haystack]

    def put_back(
        self,
        conversation: Sequence[m.MessageDict],
        *,
        system: str | Sequence[Mapping[str, Any]] | None = None,
    ) -> PutBack:
        """``conversation`` with every fact it and ``system`` lack put back, in one text block.

        The check every compaction tier runs on the conversation it proposes: every fact
        :meth:`missing_from` finds goes back, not only one that was there before the tier and
        is gone after it. One rule for every tier, so "after a compaction, every pinned fact is
        in the context" holds whichever tier ran; a fact already missing before (pinned but
        never said, or lost to a compaction that ran without these facts) is just as absent
        from what the model sees, and the compaction is where the check runs.

        The block goes at the end of the last message when it is a user message (as it is
        before every request: text after ``tool_result`` blocks is valid), else in a new user
        message. The input list and its messages are not changed: the last message is copied
        first (a deep copy, as ``microcompact`` copies a message it changes).
        """
        lost = self.missing_from(conversation, system=system)
        out = list(conversation)
        if lost:
            listing = "\n".join(f"- {f.text} (from {f.source})" for f in lost)
            block = m.text(f"{PINNED_HEADING}\n{listing}")
            if out and out[-1]["role"] == "user":
                last = copy.deepcopy(out[-1])
                out[-1] = {**last, "content": [*m.blocks(last), block]}
            else:
                out.append(m.user([block]))
        return PutBack(out, tuple(lost))
