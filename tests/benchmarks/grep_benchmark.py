"""Why grep uses RE2: one catastrophic pattern, Python's backtracking ``re`` against RE2.

    uv run python tests/benchmarks/grep_benchmark.py

The pattern ``(a+)+$`` on a line of n ``a`` and a ``!`` makes a backtracking engine try every
way of splitting the ``a``s before it gives up: the time doubles with each extra ``a``. RE2
(and ripgrep's engine) matches in time linear in the line. Prints the seconds each engine
takes for growing n; ``re`` is stopped after a few seconds (in a child process, since a
running regex cannot be interrupted), and the grep tool's own time on 40 ``a``s is last.
"""

from __future__ import annotations

import multiprocessing
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.tools import ToolContext, Workspace
from harness.tools.builtins import compile_pattern, grep

PATTERN = "(a+)+$"
BUDGET = 5.0  # seconds for one re.search before it is stopped


def _search(n: int) -> None:
    re.search(PATTERN, "a" * n + "!")


def time_re(n: int) -> float | None:
    """Seconds re takes, or None if it was still running after BUDGET."""
    child = multiprocessing.Process(target=_search, args=(n,))
    start = time.perf_counter()
    child.start()
    child.join(BUDGET)
    if child.is_alive():
        child.kill()
        child.join()
        return None
    return time.perf_counter() - start


def time_re2(n: int) -> float:
    regex = compile_pattern(PATTERN)
    start = time.perf_counter()
    regex.search("a" * n + "!")
    return time.perf_counter() - start


def main() -> None:
    print(f"pattern {PATTERN!r} on 'a' * n + '!'")
    print(f"{'n':>6}  {'re (s)':>12}  {'RE2 (s)':>10}")
    for n in (16, 18, 20, 22, 24, 26, 28, 40, 1_000, 100_000):
        re_time = time_re(n) if n <= 28 else None
        shown = f"{re_time:12.3f}" if re_time is not None else f"{'> ' + str(BUDGET):>12}"
        print(f"{n:>6}  {shown}  {time_re2(n):10.6f}")
    with tempfile.TemporaryDirectory() as place:
        (Path(place) / "a.txt").write_text("a" * 40 + "!\n")
        start = time.perf_counter()
        grep({"pattern": PATTERN}, ToolContext(workspace=Workspace(place)))
        print(f"the grep tool, 40 a's: {time.perf_counter() - start:.4f} s")


if __name__ == "__main__":
    main()
