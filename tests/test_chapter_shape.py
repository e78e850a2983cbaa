"""Every chapter has the course's shape: a map, exercises that ship as stubs with checks and
solutions, an optional live cell, a table of where its numbers come from, a recap, a stated
reading time that is the measured one (at most 45 minutes), a stated exercise time that is the
estimated one, and links that lead somewhere."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks import exercise_time
from tests.benchmarks.reading_time import LIMIT_MINUTES, reading

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))
SOURCES = ("documented", "observed", "our choice")

notebooks = pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])


def cells(path: Path) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return found


def text(cell: dict[str, Any]) -> str:
    return "".join(cell["source"])


def output_text(cell: dict[str, Any]) -> str:
    return "".join(
        "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
        for o in cell.get("outputs", [])
    )


def markdown(path: Path) -> str:
    return "\n".join(text(c) for c in cells(path) if c["cell_type"] == "markdown")


def chapter_id(path: Path) -> str:
    return f"ch{path.name[:2]}"


def exercises(path: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    """Each ``### Exercise N: ...`` heading with the code cells that follow it."""
    found: list[tuple[str, list[dict[str, Any]]]] = []
    for cell in cells(path):
        source = text(cell)
        if cell["cell_type"] == "markdown":
            heading = re.search(r"^### (Exercise \d+:.*)$", source, re.M)
            if heading:
                found.append((heading.group(1), []))
            elif found and re.search(r"^#{2,3} ", source, re.M):
                found.append(("", []))  # a later section: stop collecting
        elif found:
            found[-1][1].append(cell)
    return [(title, code) for title, code in found if title]


@notebooks
def test_opens_with_a_map_of_what_you_will_build(path: Path) -> None:
    assert "## What you will build" in markdown(path)


@notebooks
def test_has_at_least_two_exercises_each_a_stub_with_a_check_that_says_not_yet(
    path: Path,
) -> None:
    found = exercises(path)
    assert len(found) >= 2, f"{path.name} has {len(found)} exercises"
    for title, code in found:
        stubs = [c for c in code if "NotImplementedError" in text(c)]
        checks = [c for c in code if f"{chapter_id(path)}.check_" in text(c)]
        assert stubs, f"{title}: no stub that raises NotImplementedError"
        assert checks, f"{title}: no cell calls {chapter_id(path)}.check_..."
        for check in checks:
            assert output_text(check).startswith("not yet: "), f"{title}: {output_text(check)}"


@notebooks
def test_each_chapters_exercises_have_solutions_and_a_test(path: Path) -> None:
    assert (CHAPTERS / "solutions" / f"{chapter_id(path)}.py").exists()
    assert (ROOT / "tests" / f"test_exercises_{chapter_id(path)}.py").exists()


@notebooks
def test_has_one_optional_live_cell_that_says_it_was_skipped_offline(path: Path) -> None:
    live = [c for c in cells(path) if c["cell_type"] == "code" and "live_cell(" in text(c)]
    assert len(live) == 1, f"{path.name}: {len(live)} live cells"
    assert output_text(live[0]).startswith("Skipped: ")


@notebooks
def test_says_where_each_number_comes_from(path: Path) -> None:
    rows = [
        line
        for line in markdown(path).splitlines()
        if line.startswith("|") and not line.startswith("|---")
    ]
    header = [
        i for i, line in enumerate(rows) if re.match(r"\|\s*number\s*\|.*\|\s*source\s*\|", line)
    ]
    assert header, f"{path.name}: no table with columns `number | ... | source`"
    body = []
    for line in rows[header[0] + 1 :]:
        if not line.rstrip().endswith("|") or re.match(r"\|\s*number\s*\|", line):
            break
        body.append(line)
    assert body
    for line in body:
        source = line.rstrip(" |").rsplit("|", 1)[-1].strip()
        assert source.startswith(SOURCES), f"{path.name}: {line}"


@notebooks
def test_ends_with_a_recap(path: Path) -> None:
    assert "## Recap" in markdown(path)


@notebooks
def test_states_its_measured_reading_time_and_it_is_at_most_45_minutes(path: Path) -> None:
    measured = reading(path)
    stated = re.search(r"reads in about (\d+) minutes", text(cells(path)[0]))
    assert stated, f"{path.name}: the first cell does not say 'reads in about N minutes'"
    assert int(stated.group(1)) == measured.stated, f"measured {measured.minutes:.1f} minutes"
    assert measured.minutes <= LIMIT_MINUTES, f"{measured.minutes:.1f} minutes"


@notebooks
def test_states_its_estimated_exercise_time(path: Path) -> None:
    stated = re.search(r"plus about (\d+) for its exercises", text(cells(path)[0]))
    assert stated, f"{path.name}: the first cell does not say 'plus about N for its exercises'"
    assert int(stated.group(1)) == exercise_time.stated(path)


@notebooks
def test_the_readme_lists_the_reading_and_exercise_times(path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    row = re.search(rf"^\| {path.name[:2]} \|.*\| (\d+) min \| (\d+) min \|", readme, re.M)
    assert row, f"README has no row for {path.name} with its minutes"
    assert int(row.group(1)) == reading(path).stated
    assert int(row.group(2)) == exercise_time.stated(path)


def test_the_readme_states_the_whole_course_time() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    read = sum(reading(path).stated for path in NOTEBOOKS)
    exercises = sum(exercise_time.stated(path) for path in NOTEBOOKS)
    hours = f"about {read / 60:.1f} hours of reading and {exercises / 60:.1f} hours of exercises"
    assert hours in readme, f"README does not say '{hours}'"


@notebooks
def test_every_relative_link_leads_to_a_file(path: Path) -> None:
    for target in re.findall(r"\]\(([^)#\s]+)", markdown(path)):
        if "://" in target:
            continue
        assert (CHAPTERS / target).resolve().exists(), f"{path.name} links to {target}"


def test_a_chapter_without_exercises_is_caught(tmp_path: Path) -> None:
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "## Exercises"}]}
    path = tmp_path / "99_empty.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    with pytest.raises(AssertionError):
        test_has_at_least_two_exercises_each_a_stub_with_a_check_that_says_not_yet(path)


@notebooks
def test_every_check_is_used_by_its_chapter_and_run_against_its_solution(path: Path) -> None:
    import importlib

    module = importlib.import_module(f"harness.exercises.{chapter_id(path)}")
    checks = [name for name in vars(module) if name.startswith("check_")]
    notebook = "\n".join(text(c) for c in cells(path))
    tests = (ROOT / "tests" / f"test_exercises_{chapter_id(path)}.py").read_text(encoding="utf-8")
    assert len(checks) >= 2
    for name in checks:
        assert f"{chapter_id(path)}.{name}(" in notebook, f"{name} is not used in {path.name}"
        assert name in tests, f"{name} is not tested"
