"""What a learner sees before trying an exercise: where to begin, and never the answer.

Every exercise's stub hears the first case its check tries and a hint; the recipe comes only
from ``chNN.hint(n)``. What the check said to the stub is read from the notebook's stored
output (what the website shows too): it holds no line of a solution. And every exercise has
its mutation test.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import pytest

from harness.exercises import Recipe
from tests.benchmarks.reading_time import exercise_cells
from tests.mutation import Exercise, all_exercises
from tests.solutions import SOLUTIONS, definitions
from tests.test_chapter_shape import output_text

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
EXERCISES = all_exercises()


def solution_lines(chapter: str, names: list[str]) -> list[str]:
    """The lines of logic of a solution's definitions: what no hint may show."""
    _, found = definitions(chapter, names)
    lines = (SOLUTIONS / f"{chapter}.py").read_text(encoding="utf-8").splitlines()
    shown = []
    for node in found:
        docstrings = {
            n.value.lineno
            for n in ast.walk(node)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
        }
        start = node.body[0].lineno  # after the signature, which the stub shows too
        for number in range(start, (node.end_lineno or node.lineno) + 1):
            text = lines[number - 1].split("#")[0].strip()
            if number in docstrings or len(text) < 12 or text.startswith(("def ", '"""')):
                continue
            shown.append(text)
    return shown


def squeeze(text: str) -> str:
    """Text with no spaces, brackets or quote styles: a line of code found however it is set."""
    return re.sub(r"[\s()\[\]`]", "", text).replace("'", '"')


def shown_lines(lines: list[str], text: str) -> list[str]:
    """The lines of ``lines`` that ``text`` shows (compared squeezed)."""
    flat = squeeze(text)
    return [line for line in lines if len(squeeze(line)) >= 12 and squeeze(line) in flat]


def recipe_sentences(exercise: Exercise) -> list[str]:
    """The sentences and lines of the exercise's recipe (``hint(n)``)."""
    module = importlib.import_module(f"harness.exercises.{exercise.chapter}")
    return re.split(r"(?<=[.;])\s+|\n", module.hint(exercise.number).text)


def test_a_recipe_sentence_or_a_solution_line_in_a_not_yet_is_found() -> None:
    due = next(e for e in EXERCISES if (e.chapter, e.number) == ("ch07", 1))
    leak = max(recipe_sentences(due), key=len)
    assert shown_lines(recipe_sentences(due), f"not yet: ...\nhint: {leak}") == [leak]
    line = solution_lines("ch07", ["due"])[0]
    assert shown_lines([line], f"hint: write  {line.replace(' ', '  ')}") == [line]


def stub_verdict(exercise: Exercise) -> str:
    """What the check said to the notebook's own stub: the check cell's stored output."""
    (path,) = CHAPTERS.glob(f"{exercise.chapter[2:]}_*.ipynb")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    (found,) = [e for e in exercise_cells(cells) if e.number == exercise.number]
    return output_text(cells[found.check]).strip().replace("\n    ", " ")  # unfold the long lines


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: f"{e.chapter}-ex{e.number}")
def test_a_stub_hears_the_first_case_a_hint_and_where_the_recipe_is(exercise: Exercise) -> None:
    text = stub_verdict(exercise)
    assert text.startswith("not yet: "), text
    assert "still the stub" in text and "\nfirst case: " in text and "\nhint: " in text, text
    recipe = f"{exercise.chapter}.hint({exercise.number})"
    assert text.rstrip().endswith(f"stuck? {recipe} shows one way to write it, step by step."), text


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: f"{e.chapter}-ex{e.number}")
def test_a_stubs_not_yet_holds_no_line_of_the_solution_or_the_recipe(exercise: Exercise) -> None:
    text = stub_verdict(exercise)
    shown = shown_lines(solution_lines(exercise.chapter, exercise.names), text)
    assert not shown, f"the stub's 'not yet' shows the solution's lines: {shown}"
    recipe = shown_lines(recipe_sentences(exercise), text)
    assert not recipe, f"the stub's 'not yet' shows the recipe's lines: {recipe}"


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: f"{e.chapter}-ex{e.number}")
def test_the_recipe_comes_from_hint_n(exercise: Exercise) -> None:
    module = importlib.import_module(f"harness.exercises.{exercise.chapter}")
    recipe = module.hint(exercise.number)
    assert isinstance(recipe, Recipe) and len(recipe.text) > 40
    assert repr(recipe).startswith(f"{exercise.chapter}, exercise {exercise.number}, ")


def test_asking_for_an_exercise_a_chapter_does_not_have_says_which_it_has() -> None:
    from harness.exercises import ch07

    with pytest.raises(ValueError, match="ch07 has exercises 1, 2; there is no exercise 3"):
        ch07.hint(3)


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: f"{e.chapter}-ex{e.number}")
def test_every_exercise_has_a_mutation_test(exercise: Exercise) -> None:
    tests = (ROOT / "tests" / f"test_exercises_{exercise.chapter}.py").read_text(encoding="utf-8")
    call = rf"assert_exercise_caught\(\s*\"{exercise.chapter}\",\s*{exercise.number}\b"
    assert re.search(call, tests), (
        f"tests/test_exercises_{exercise.chapter}.py does not run the mutants of exercise "
        f"{exercise.number} (assert_exercise_caught)"
    )


def test_a_not_yet_is_shown_folded_to_the_width_of_a_notebook_and_read_whole() -> None:
    from harness.exercises import WIDTH, ch07

    verdict = ch07.check_due(lambda context, at_last, calls: False)
    shown = repr(verdict)
    assert all(len(line) <= WIDTH for line in shown.splitlines()), shown
    assert shown.replace("\n    ", " ") == str(verdict)
