"""How long each chapter's exercises take, estimated from the task and its solution.

    uv run python -m tests.benchmarks.exercise_time [chapters/NN_name.ipynb ...]

A learner doing an exercise reads the task and the stub, writes the code, runs the check,
reads its "not yet" and fixes once, then runs it again. This script prices each step; the
rates are our choice, stated so the figure can be checked and argued with:

- the task (markdown, from its ``### Exercise N`` heading on) at 200 words a minute and the
  stub at 100, the rates of ``reading_time.py``;
- writing: 2 minutes to start (find the names the task mentions, decide on the shape), then
  1 minute for each line of logic the solution in ``chapters/solutions/`` has (its statements,
  without the ``def`` line, docstrings, comments or blank lines): a line is read, thought
  about and typed;
- running the check and reading its verdict: 1 minute;
- fixing once: 3 minutes (read the failing case, change a line or two, run again).

The solution is the shortest honest measure of how much there is to write; a learner's own
first version is longer, which the fix-once step stands for. A chapter states the sum of its
exercises, rounded to the nearest 5 minutes, beside its reading time ("the exercises take
about N minutes more"); the README's table repeats both and their total, and
``tests/test_chapter_shape.py`` checks them.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.benchmarks.reading_time import CODE_WPM, PROSE_WPM, exercise_cells, words
from tests.solutions import definitions

ROOT = Path(__file__).resolve().parent.parent.parent
START_MINUTES = 2.0
LINE_MINUTES = 1.0
RUN_MINUTES = 1.0
FIX_MINUTES = 3.0

DEFINES = re.compile(r"^(?:def|class) (\w+)|^(\w+)\s*(?::[^=]*)?=", re.M)


@dataclass(frozen=True)
class ExerciseTime:
    """Minutes for one exercise, step by step."""

    number: int
    names: tuple[str, ...]
    read: float
    lines: int

    @property
    def minutes(self) -> float:
        write = START_MINUTES + LINE_MINUTES * self.lines
        return self.read + write + RUN_MINUTES + FIX_MINUTES


def logic_lines(chapter: str, names: tuple[str, ...]) -> int:
    """Lines of logic in the solution's definitions of ``names`` (statements, no docstrings)."""
    _, found = definitions(chapter, names, missing_ok=True)  # a stub's data is not counted
    lines: set[int] = set()
    for node in found:
        for inner in ast.walk(node):
            if inner is node or not isinstance(inner, ast.stmt):
                continue
            if isinstance(inner, ast.Expr) and isinstance(inner.value, ast.Constant):
                continue  # a docstring
            if isinstance(inner, ast.FunctionDef):
                continue  # a method's `def` line: its body counts
            lines.add(inner.lineno)
    return len(lines)


def exercise_times(path: Path) -> list[ExerciseTime]:
    """Every exercise of the chapter at ``path``, with its estimate."""
    notebook: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    cells = notebook["cells"]
    chapter = f"ch{path.name[:2]}"
    found = []
    for exercise in exercise_cells(cells):
        stub = "".join(cells[exercise.stub]["source"])
        names = tuple(a or b for a, b in DEFINES.findall(stub))
        read = words(exercise.task) / PROSE_WPM + words(stub) / CODE_WPM
        found.append(ExerciseTime(exercise.number, names, read, logic_lines(chapter, names)))
    return found


def stated(path: Path) -> int:
    """The chapter's exercise time as it states it: the sum, rounded to the nearest 5."""
    total = sum(e.minutes for e in exercise_times(path))
    return max(5, 5 * round(total / 5))


def main(paths: list[str]) -> None:
    chosen = [Path(p) for p in paths] or sorted((ROOT / "chapters").glob("*.ipynb"))
    print(f"{'chapter':<44} {'ex':>3} {'read':>5} {'lines':>5} {'min':>5}  names")
    for path in chosen:
        for e in exercise_times(path):
            print(
                f"{path.name:<44} {e.number:>3} {e.read:5.1f} {e.lines:5d} {e.minutes:5.1f}  "
                f"{', '.join(e.names)}"
            )
        print(f"{'':<44} {'':>3} {'':>5} {'':>5} {stated(path):5d}  stated")


if __name__ == "__main__":
    main(sys.argv[1:])
