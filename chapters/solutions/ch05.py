"""Chapter 05: full compaction and auto-compact."""

from __future__ import annotations

import re

from harness.compaction.pinned import PinnedFacts
from harness.compaction.summary import CompactionReport

RULE = re.compile(r"(Always|Never|Keep|Do not|Don't)\b")


def pin_constraints(prompt: str, pinned: PinnedFacts) -> None:
    """Exercise 1: pin every sentence of ``prompt`` that states a rule, word for word."""
    for sentence in re.split(r"(?<=[.!?])\s+", prompt.strip()):
        if RULE.match(sentence):
            pinned.add(sentence, source="user")


savings: list[tuple[str, int]] = []


def record_savings(report: CompactionReport) -> None:
    """Exercise 2: a PostCompact hook; what each compaction saved, whatever its trigger."""
    savings.append((report.trigger, report.tokens_before - report.tokens_after))
