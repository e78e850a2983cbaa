"""Session memory at scale: ``fit_budgets``, ``render`` and ``parse`` on 1K, 10K and 100K facts.

    uv run python tests/benchmarks/memory_benchmark.py [largest]

A hand-pasted log or a fork that never trims can leave a ``MEMORY.md`` of many thousands of
facts, and every extraction fits it to its budgets, renders it and parses it. ``fit_budgets``
used to drop one fact at a time and measure the whole again: quadratic (issue 29: 8,000 facts
in one section took 16 s, 100,000 gave no answer in a minute). Now it finds how many to drop
by bisection, in n log n time. For each size (10x the one before) this prints the time of

* ``fit_budgets`` with all the facts in one section (the issue's case) and spread over the six;
* ``render`` of the whole file and ``parse`` of it back;

each the best of ``REPEAT`` runs, and the ratio to the size before: about 10x is linear, 100x
quadratic. ``render`` is the yardstick of a linear pass: at 100K facts (a 12 MB file, some
200 MB of objects) it too takes more than 10x the time of 10K, as memory stops fitting in
the caches. The old ``fit_budgets`` (copied below) is timed on the smallest size only, for
comparison (it is quadratic), and both are checked to drop the same facts there.
"""

from __future__ import annotations

import itertools
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' own reference

from test_memory_hostile import reference_fit_budgets

from harness.memory import (
    SECTION_TOKENS,
    SECTIONS,
    TOTAL_TOKENS,
    Fact,
    Trimmed,
    fit_budgets,
    parse,
    render,
)

REPEAT = 3


def old_fit_budgets(facts: list[Fact]) -> tuple[list[Fact], list[Trimmed]]:
    """``fit_budgets`` before issue 29, with the default budgets (the tests' reference)."""
    return reference_fit_budgets(facts, per_section=SECTION_TOKENS, total=TOTAL_TOKENS)


OLD_UP_TO = 2_000  # the old fit_budgets is timed up to this many facts (quadratic)
T = TypeVar("T")

WORDS = [
    "read", "edited", "app/billing.py", "rounding", "Decimal", "cents", "half", "up", "tests",
    "passed", "failed", "the", "user", "asked", "for", "tax", "rate", "invoice", "total", "fixed",
]  # fmt: skip


def made_facts(count: int, *, one_section: bool, seed: int = 29) -> list[Fact]:
    """``count`` facts of 5 to 20 words, ids in shuffled order, some superseding older ones."""
    rng = random.Random(seed)
    numbers = list(range(1, count + 1))
    rng.shuffle(numbers)
    return [
        Fact(
            section="Worklog" if one_section else rng.choice(SECTIONS),
            text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 20))),
            id=f"f{n}",
            source=rng.choice(["user", "toolu_0012", "hand-edit"]),
            turn=rng.randint(1, 500),
            supersedes=f"f{n - 1}" if n > 1 and rng.random() < 0.1 else None,
        )
        for n in numbers
    ]


def timed(action: Callable[..., T], *args: Any, repeat: int = REPEAT) -> tuple[float, T]:
    """The best time of ``repeat`` calls of ``action(*args)``, and what it returned."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = action(*args)
        best = min(best, time.perf_counter() - start)
    assert result is not None
    return best, result


def main(largest: int = 100_000) -> None:
    sizes = [n for n in (1_000, 10_000, 100_000, 1_000_000) if n <= largest]
    rows: dict[str, list[float | None]] = {
        name: []
        for name in (
            "fit_budgets, one section",
            "fit_budgets, six sections",
            "old fit_budgets, one section",
            "render",
            "parse",
        )
    }
    for n in sizes:
        one, spread = made_facts(n, one_section=True), made_facts(n, one_section=False)
        one_s, (kept, trimmed) = timed(fit_budgets, one)
        spread_s, _ = timed(fit_budgets, spread)
        rows["fit_budgets, one section"].append(one_s)
        rows["fit_budgets, six sections"].append(spread_s)
        if n <= OLD_UP_TO:
            old_s, old = timed(old_fit_budgets, one, repeat=1)
            assert old == (kept, trimmed), "the new fit_budgets drops other facts than the old"
            rows["old fit_budgets, one section"].append(old_s)
        else:
            rows["old fit_budgets, one section"].append(None)
        render_s, text = timed(render, spread)
        parse_s, back = timed(parse, text)
        assert len(back) == n
        rows["render"].append(render_s)
        rows["parse"].append(parse_s)
        print(
            f"{n:>9,} facts: MEMORY.md {len(text) / 1e6:.1f} MB; fit_budgets kept "
            f"{len(kept):,} of the one section's and trimmed {len(trimmed):,}",
            flush=True,
        )

    header = "".join(f"{f'{n:,} facts':>14}" for n in sizes)
    ratios = "".join(f"{f'x{b // a}':>10}" for a, b in itertools.pairwise(sizes))
    print(f"\n{'seconds (best of ' + str(REPEAT) + ')':30}{header}   ratio: {ratios}")
    for name, times in rows.items():
        cells = "".join(f"{t:13.4f}s" if t is not None else f"{'-':>14}" for t in times)
        steps = "".join(
            f"{b / a:9.1f}x" if a and b else f"{'-':>10}" for a, b in itertools.pairwise(times)
        )
        print(f"{name:30}{cells}          {steps}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
