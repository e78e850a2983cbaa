"""Session memory's budgets: about 2K tokens a section and 12K the whole, and what is trimmed.

:func:`fit_budgets` drops the oldest facts until each section and the whole fit, and names
each one it dropped (:class:`Trimmed`), so that the memory never grows without bound and no
fact leaves it silently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from harness import tokens
from harness.memory.facts import SECTIONS, Fact, SectionName
from harness.memory.fileformat import fact_line

SECTION_TOKENS = 2_000  # per section, as observed in Claude Code's session memory
TOTAL_TOKENS = 12_000  # the whole memory, as observed
TRIM_ORDER: tuple[SectionName, ...] = (
    "Worklog",
    "Files and functions",
    "Learnings",
    "Current state",
    "Errors and corrections",
    "Task",
)
"""Where room is made first when the whole memory is over budget (our choice: the log of what
was done goes before what the user asked for and corrected)."""


@dataclass(frozen=True)
class Trimmed:
    """A fact taken out to keep the memory in budget, and which budget it broke."""

    fact: Fact
    budget: str
    """``section`` (its section was over ``section_tokens``) or ``total``."""

    def __str__(self) -> str:
        return f"{self.fact.id} from {self.fact.section} ({self.budget} budget)"


def _section_tokens(section: str, lines: Iterable[str]) -> int:
    return tokens.estimate_text("\n".join([f"## {section}", *lines]))


def section_tokens(facts: Sequence[Fact], section: str) -> int:
    """Tokens one section takes in the model's context (heading and facts, no comments)."""
    return _section_tokens(
        section, (fact_line(f, provenance=False) for f in facts if f.section == section)
    )


def _fewest(most: int, fits: Callable[[int], bool]) -> int:
    """The smallest ``k`` in ``0..most`` for which ``fits(k)``, or ``most`` if none does.

    ``fits`` must stay true once it is (dropping more never makes the memory bigger). Tried
    first at 0 (nothing to drop: the usual case), then from ``most`` down, 1, 2, 4... short of
    it, then by bisection: a memory far over its budget keeps only a few facts, and checking
    a few facts is quick.
    """
    if most == 0 or fits(0):
        return 0
    low, high = 0, most  # fits(low) is false; fits(high), unless high == most
    step = 1
    while step < most:
        if not fits(most - step):
            low = most - step
            break
        high = most - step
        step *= 2
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle
    return high


def fit_budgets(
    facts: Sequence[Fact], *, per_section: int = SECTION_TOKENS, total: int = TOTAL_TOKENS
) -> tuple[list[Fact], list[Trimmed]]:
    """Drop the oldest facts until each section and the whole fit; say what was dropped.

    A section over ``per_section`` loses its oldest facts first; then, while the whole is over
    ``total``, the oldest fact of the first section in :data:`TRIM_ORDER` that has any goes.
    (Oldest: the smallest id; between equals, the first in the list.)

    Dropping one fact at a time and measuring again took time quadratic in the facts (a
    hand-pasted log of 8,000 lines: 16 s). But the facts go in a known order (a section's
    oldest first; for the total, :data:`TRIM_ORDER`'s sections one after the other, each
    measured against what the others take), and the more are dropped the fewer tokens are
    left, so how many must go is searched for (:func:`_fewest`): the same facts are dropped,
    in the same order, in n log n time.
    """
    facts = list(facts)
    lines = [fact_line(f, provenance=False) for f in facts]
    left: dict[str, list[int]] = {name: [] for name in SECTIONS}
    for n, fact in enumerate(facts):
        left[fact.section].append(n)
    trimmed: list[Trimmed] = []

    def trim(name: str, budget: int, reason: str) -> int:
        """Drop the section's oldest facts until it takes at most ``budget`` tokens (or has
        none left); its tokens after."""
        order = sorted(left[name], key=lambda n: (facts[n].number, n))

        def size(k: int) -> int:  # with the k oldest gone; the rest in the list's order
            return _section_tokens(name, (lines[n] for n in sorted(order[k:])))

        drop = _fewest(len(order), lambda k: size(k) <= budget)
        trimmed.extend(Trimmed(facts[n], reason) for n in order[:drop])
        left[name] = sorted(order[drop:])
        return size(drop)

    size_of = {name: trim(name, per_section, "section") for name in SECTIONS}
    for name in TRIM_ORDER:
        others = sum(size_of.values()) - size_of[name]
        if others + size_of[name] <= total:
            break
        size_of[name] = trim(name, total - others, "total")
    kept = sorted(n for name in SECTIONS for n in left[name])
    return [facts[n] for n in kept], trimmed
