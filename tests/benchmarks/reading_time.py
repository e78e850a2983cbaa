"""How long each chapter takes to read, measured from the committed notebook.

    uv run python tests/benchmarks/reading_time.py [chapters/NN_name.ipynb ...]

The rates are our choice, stated so the figure can be checked and argued with:

- prose (markdown) at 200 words a minute: below the 238 that Brysbaert (2019, "How many words
  do we read per minute?") finds for non-fiction, because this is technical text;
- code at 100 words a minute, both the code cells and the package source a chapter shows
  with ``show(...)`` (an output that starts with ``# harness/``);
- every other text output (tables, event logs) at 300 words a minute: it is scanned, not read;
- 30 seconds for each figure and each widget.

The exercises are not counted here: reading their tasks, writing, running the checks and fixing
once is the chapter's *exercise time*, which ``tests/benchmarks/exercise_time.py`` estimates.

What a learner may skip is counted apart, as *asides*: ``<details>`` blocks in the prose and
code cells whose source is collapsed (``"jupyter": {"source_hidden": true}``). The chapter
states its main-path time, rounded to the nearest 5 minutes, and the README's table repeats
it; ``tests/test_chapter_shape.py`` checks both, and that no chapter is over 45 minutes.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
PROSE_WPM = 200
CODE_WPM = 100
OUTPUT_WPM = 300
FIGURE_SECONDS = 30
LIMIT_MINUTES = 45

DETAILS = re.compile(r"<details>.*?</details>", re.S)
EXERCISE = re.compile(r"^### Exercise (\d+)\b", re.M)
PICTURES = ("image/png", "image/svg+xml", "application/vnd.jupyter.widget-view+json")


def words(text: str) -> int:
    return len(text.split())


@dataclass(frozen=True)
class Reading:
    """Minutes to read a chapter: the main path, and the asides a learner may skip."""

    prose: float
    code: float
    outputs: float
    figures: float
    asides: float

    @property
    def minutes(self) -> float:
        return self.prose + self.code + self.outputs + self.figures

    @property
    def stated(self) -> int:
        """The main-path time as a chapter states it: rounded to the nearest 5 minutes."""
        return max(5, 5 * round(self.minutes / 5))


@dataclass(frozen=True)
class ExerciseCells:
    """Where exercise ``number`` sits: its task (from its heading on), stub and check cells."""

    number: int
    task: str
    stub: int
    check: int


def exercise_cells(cells: list[dict[str, Any]]) -> list[ExerciseCells]:
    """Each ``### Exercise N`` of a chapter: its task text, then its stub and check cells.

    The task is the heading's markdown cell from the heading on; the stub is the next code
    cell and the check the one after it (the layout every chapter uses).
    """
    found = []
    for index, cell in enumerate(cells):
        source = "".join(cell["source"])
        heading = EXERCISE.search(source) if cell["cell_type"] == "markdown" else None
        if heading is None:
            continue
        code = [i for i in range(index + 1, len(cells)) if cells[i]["cell_type"] == "code"]
        found.append(ExerciseCells(int(heading.group(1)), source[heading.start() :], *code[:2]))
    return found


def reading(path: Path) -> Reading:
    notebook: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    prose = code = outputs = figures = asides = 0.0
    exercises = exercise_cells(notebook["cells"])
    skipped = {i for e in exercises for i in (e.stub, e.check)}
    tasks = {e.task for e in exercises}
    for index, cell in enumerate(notebook["cells"]):
        if index in skipped:
            continue
        source = "".join(cell["source"])
        for task in tasks:  # an exercise's task is read in its exercise time
            source = source.replace(task, "")
        if cell["cell_type"] == "markdown":
            aside = sum(words(block) for block in DETAILS.findall(source))
            prose += (words(source) - aside) / PROSE_WPM
            asides += aside / PROSE_WPM
            continue
        if cell["cell_type"] != "code":
            continue
        hidden = cell["metadata"].get("jupyter", {}).get("source_hidden", False)
        if hidden:
            asides += words(source) / CODE_WPM
        else:
            code += words(source) / CODE_WPM
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if any(kind in data for kind in PICTURES):
                figures += FIGURE_SECONDS / 60
                continue
            text = "".join(output.get("text", "")) + "".join(data.get("text/plain", ""))
            if text.startswith("# harness/"):
                code += words(text) / CODE_WPM
            else:
                outputs += words(text) / OUTPUT_WPM
    return Reading(prose, code, outputs, figures, asides)


def main(paths: list[str]) -> None:
    chosen = [Path(p) for p in paths] or sorted((ROOT / "chapters").glob("*.ipynb"))
    print(
        f"{'chapter':<48} {'prose':>6} {'code':>6} {'output':>6} {'figs':>5} "
        f"{'main':>6} {'stated':>6} {'asides':>6}"
    )
    for path in chosen:
        r = reading(path)
        flag = "  over the limit" if r.minutes > LIMIT_MINUTES else ""
        print(
            f"{path.name:<48} {r.prose:6.1f} {r.code:6.1f} {r.outputs:6.1f} {r.figures:5.1f} "
            f"{r.minutes:6.1f} {r.stated:6d} {r.asides:6.1f}{flag}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
