"""Pinned facts: what must survive every compaction, checked word for word.

They answer the most common complaint about compaction ("it forgot the rules"): rules from
CLAUDE.md, constraints the user stated, open tasks. After a compaction each one is looked for
in the new context and the system prompt; a missing one is put back, and the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness import messages as m


@dataclass(frozen=True)
class PinnedFact:
    text: str
    source: str
    """Where it came from: ``CLAUDE.md``, ``user``, ``task``..."""


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


@dataclass
class PinnedFacts:
    """Facts that must survive every compaction."""

    facts: list[PinnedFact] = field(default_factory=list)

    def add(self, text: str, source: str = "user") -> None:
        self.facts.append(PinnedFact(text.strip(), source))

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
        return [f for f in self.facts if _normalise(f.text) not in haystack]
