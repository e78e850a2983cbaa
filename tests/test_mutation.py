"""The mutation tests' own machinery: it makes the slips it promises, and it always ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.mutation import LINE_BUDGET, RanTooLong, _budgeted, mutants, survivors

SOLUTION = '''
def due(context: int, at_last: int | None, calls: int) -> bool:
    """Whether to extract now."""
    if calls < 3:
        return False
    if at_last is None:
        return context >= 10_000
    return context - at_last >= 5_000


def untouched() -> int:
    return 1 + 1
'''


def outcome(function: Any, *args: object) -> object:
    """What a call gives back, or the kind of error it raised: both are behaviour."""
    try:
        return function(*args)
    except Exception as error:
        return type(error)


def write(folder: Path) -> Path:
    (folder / "chxx.py").write_text(SOLUTION, encoding="utf-8")
    return folder


def test_mutants_flip_comparisons_shift_numbers_and_drop_guards(tmp_path: Path) -> None:
    keys = [m.key for m in mutants("chxx", ["due"], write(tmp_path))]
    assert "line 4: `calls < 3` → `calls <= 3`" in keys
    assert "line 7: `10000` → `10001`" in keys
    assert "line 4: `if calls < 3:` dropped" in keys
    assert "line 6: `at_last is None` → `at_last is not None`" in keys
    assert "line 8: `context - at_last` → `context + at_last`" in keys


def test_only_the_named_definitions_are_mutated_and_docstrings_never(tmp_path: Path) -> None:
    keys = [m.key for m in mutants("chxx", ["due"], write(tmp_path))]
    assert not [k for k in keys if "line 12" in k or "Whether" in k]


def test_every_mutant_behaves_differently_somewhere_from_the_solution(tmp_path: Path) -> None:
    contexts = (9_999, 10_000, 14_999, 15_000)
    inputs = [(c, a, k) for c in contexts for a in (None, 10_000) for k in (2, 3)]
    for mutant in mutants("chxx", ["due"], write(tmp_path)):
        scope: dict[str, Any] = mutant.namespace()
        right: dict[str, Any] = {}
        exec(compile(SOLUTION, "<solution>", "exec"), right)
        differs = [i for i in inputs if outcome(scope["due"], *i) != outcome(right["due"], *i)]
        assert differs, f"{mutant.key} behaves like the solution on every input here"


def test_a_weak_check_lets_mutants_through_and_survivors_names_them(tmp_path: Path) -> None:
    def weak(scope: dict[str, Any]) -> bool:
        return outcome(scope["due"], 20_000, None, 5) is True  # one case, far from every edge

    total, passed = survivors("chxx", ["due"], weak, write(tmp_path))
    assert total > 10
    assert "line 4: `calls < 3` → `calls <= 3`" in passed
    assert "line 4: `3` → `4`" in passed


def test_a_mutant_that_loops_forever_is_stopped_by_a_count_of_lines_not_a_clock(
    tmp_path: Path,
) -> None:
    (tmp_path / "chyy.py").write_text(
        "def walk(n: int) -> int:\n    while n > 0:\n        n -= 1\n    return n\n",
        encoding="utf-8",
    )
    flipped = [m for m in mutants("chyy", ["walk"], tmp_path) if "`n -= 1` dropped" in m.key]
    (mutant,) = flipped
    walk = mutant.namespace()["walk"]
    try:
        _budgeted(lambda: walk(3))
    except RanTooLong as error:
        assert f"{LINE_BUDGET:,}" in str(error)
    else:
        raise AssertionError("the endless loop was not stopped")
