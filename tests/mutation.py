"""Mutation tests for the exercise checks: small wrong versions of each solution must fail.

A check is only as good as the wrong answers it catches. This module takes a chapter's
solution file (``chapters/solutions/chNN.py``), and for the definitions an exercise asks for
makes *mutants*: copies with one small change each, the slips a learner makes:

- a comparison flipped at its edge (``<`` for ``<=``, ``==`` for ``!=``, ``in`` for ``not in``);
- a number off by one (``n + 1``, ``n - 1``), ``True`` for ``False``;
- a word in a string changed (a status, a key, a header name);
- ``and`` for ``or``, a ``not`` dropped, ``+`` for ``-``, ``min`` for ``max``, ``any`` for ``all``;
- a guard or a branch dropped (an ``if`` removed, or its test made always true or always false),
  a statement dropped (an ``append``, a ``+=``);
- two arguments swapped; ``continue`` for ``break``; a loop that stops after one pass.

Each mutant runs through the exercise's check. A mutant the check passes is a wrong answer a
learner could hand in and be told "✓"; :func:`survivors` lists them, and each chapter's test
requires every survivor to be listed as *equivalent* (it behaves like the solution on every
input the chapter cares about), with the reason.

Why not a mutation-testing tool from PyPI (mutmut, cosmic-ray): they mutate a source tree and
rerun a test command per mutant, and judge a mutant by the whole suite. Here the unit is one
function and the judge is one check, in process, in milliseconds; the AST operators below are
the few a learner's slips need.

A mutant can loop forever (a ``while`` whose step was flipped). Every line a mutant runs is
counted (``sys.settrace``, on the mutant's own code only) and past :data:`LINE_BUDGET` lines it
raises :class:`RanTooLong`, which the check reports like any exception: a count, not a clock,
so the result does not depend on the machine.

    uv run python -m tests.mutation          # every chapter: mutants, caught, equivalent
"""

from __future__ import annotations

import ast
import copy
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from tests.solutions import SOLUTIONS, definitions

LINE_BUDGET = 200_000
MUTANT_FILE = "<mutant>"

_COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BINOP_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Pow: ast.Mult,
    ast.Mod: ast.FloorDiv,
}
# Calls whose first two arguments can be swapped without changing anything: not a mutant.
_SYMMETRIC = {"min", "max"}
_NAME_SWAPS = {"min": "max", "max": "min", "any": "all", "all": "any"}


class RanTooLong(Exception):
    """A mutant ran more than :data:`LINE_BUDGET` lines: taken to loop forever."""


@dataclass(frozen=True)
class Mutant:
    """One small change to a solution: where, what, and the module it makes."""

    chapter: str
    line: int
    change: str
    tree: ast.Module

    @property
    def key(self) -> str:
        """How an equivalent mutant is listed: ``"line 12: `a < b` → `a <= b`"``."""
        return f"line {self.line}: {self.change}"

    def namespace(self) -> dict[str, Any]:
        """Run the mutated solution module; its names, the mutated definitions among them."""
        code = compile(self.tree, MUTANT_FILE, "exec")
        scope: dict[str, Any] = {"__name__": f"mutant_{self.chapter}"}
        exec(code, scope)
        return scope


def _short(node: ast.AST) -> str:
    text = ast.unparse(node).splitlines()[0]
    return text if len(text) <= 70 else text[:67] + "..."


class _Points(ast.NodeVisitor):
    """Every mutation point inside the target definitions, as (node path, label) pairs."""

    def __init__(self) -> None:
        self.found: list[tuple[ast.AST, str, int, Callable[[ast.AST], ast.AST | None]]] = []

    def add(self, node: ast.AST, change: str, apply: Callable[[ast.AST], ast.AST | None]) -> None:
        self.found.append((node, change, getattr(node, "lineno", 0), apply))

    def visit_Compare(self, node: ast.Compare) -> None:
        for i, op in enumerate(node.ops):
            swap = _COMPARE_SWAPS.get(type(op))
            if swap is None:
                continue

            def apply(n: ast.AST, i: int = i, swap: type[ast.cmpop] = swap) -> ast.AST:
                assert isinstance(n, ast.Compare)
                n.ops[i] = swap()
                return n

            after = copy.deepcopy(node)
            after.ops[i] = swap()
            self.add(node, f"`{_short(node)}` → `{_short(after)}`", apply)
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        other: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()

        def apply(n: ast.AST, other: ast.boolop = other) -> ast.AST:
            assert isinstance(n, ast.BoolOp)
            n.op = other
            return n

        word = "or" if isinstance(other, ast.Or) else "and"
        self.add(node, f"`{_short(node)}` with `{word}`", apply)
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self.add(node, f"`{_short(node)}` → `{_short(node.operand)}`", lambda n: n.operand)  # type: ignore[attr-defined]
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        swap = _BINOP_SWAPS.get(type(node.op))
        if swap is not None:

            def apply(n: ast.AST, swap: type[ast.operator] = swap) -> ast.AST:
                assert isinstance(n, ast.BinOp)
                n.op = swap()
                return n

            after = copy.deepcopy(node)
            after.op = swap()
            self.add(node, f"`{_short(node)}` → `{_short(after)}`", apply)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bool):
            self.add(node, f"`{value}` → `{not value}`", lambda n: ast.Constant(not value))
        elif isinstance(value, int | float):
            for new in (value + 1, value - 1):
                self.add(node, f"`{value!r}` → `{new!r}`", lambda n, new=new: ast.Constant(new))
        elif isinstance(value, str) and value and not getattr(node, "_docstring", False):
            new_text = value + "_x"
            self.add(
                node, f"`{value[:40]!r}` → `{new_text[:40]!r}`", lambda n: ast.Constant(new_text)
            )

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        for value in node.values:  # the expressions inside an f-string, not its literal parts
            if isinstance(value, ast.FormattedValue):
                self.visit(value.value)

    def visit_Name(self, node: ast.Name) -> None:
        swap = _NAME_SWAPS.get(node.id)
        if swap is not None and isinstance(node.ctx, ast.Load):
            self.add(node, f"`{node.id}` → `{swap}`", lambda n: ast.Name(swap, ast.Load()))

    def visit_Call(self, node: ast.Call) -> None:
        symmetric = isinstance(node.func, ast.Name) and node.func.id in _SYMMETRIC
        swappable = not any(isinstance(a, ast.Starred) for a in node.args[:2])
        if len(node.args) >= 2 and swappable and not symmetric:

            def apply(n: ast.AST) -> ast.AST:
                assert isinstance(n, ast.Call)
                n.args[0], n.args[1] = n.args[1], n.args[0]
                return n

            self.add(node, f"`{_short(node)}` with its first two arguments swapped", apply)
        self.generic_visit(node)

    def visit_If(self, node: ast.If) -> None:
        head = f"if {_short(node.test)}:"
        self.add(node, f"`{head}` dropped", lambda n: ast.Pass() if not n.orelse else None)  # type: ignore[attr-defined]

        def always(n: ast.AST, value: bool) -> ast.AST:
            assert isinstance(n, ast.If)
            n.test = ast.Constant(value)
            return n

        self.add(node, f"`{head}` always true", lambda n: always(n, True))
        if node.orelse:
            self.add(node, f"`{head}` always false", lambda n: always(n, False))
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.add(node, f"`{_short(node)}` → its `if` part always", lambda n: n.body)  # type: ignore[attr-defined]
        self.add(node, f"`{_short(node)}` → its `else` part always", lambda n: n.orelse)  # type: ignore[attr-defined]
        self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant):  # a docstring
            return
        self.add(node, f"`{_short(node)}` dropped", lambda n: ast.Pass())
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.add(node, f"`{_short(node)}` dropped", lambda n: ast.Pass())
        self.generic_visit(node)

    def visit_Break(self, node: ast.Break) -> None:
        self.add(node, "`break` → `continue`", lambda n: ast.Continue())

    def visit_Continue(self, node: ast.Continue) -> None:
        self.add(node, "`continue` → `break`", lambda n: ast.Break())

    def visit_For(self, node: ast.For) -> None:
        def once(n: ast.AST) -> ast.AST:
            assert isinstance(n, ast.For)
            n.body = [*n.body, ast.Break()]
            return n

        self.add(
            node, f"`for {_short(node.target)} in {_short(node.iter)}:` stops after one pass", once
        )
        self.generic_visit(node)


def _mark_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                value._docstring = True  # type: ignore[attr-defined]


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, apply: Callable[[ast.AST], ast.AST | None]) -> None:
        self.target = target
        self.apply = apply
        self.done = False

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if node is self.target and not self.done:
            self.done = True
            new = self.apply(node)
            return node if new is None else new
        return super().generic_visit(node)

    def visit(self, node: ast.AST) -> Any:
        return self.generic_visit(node)


def mutants(chapter: str, names: list[str], folder: Path = SOLUTIONS) -> Iterator[Mutant]:
    """Every mutant of the definitions ``names`` in ``chapters/solutions/<chapter>.py``."""
    tree, targets = definitions(chapter, names, folder)
    _mark_docstrings(tree)
    points = _Points()
    for target in targets:
        for statement in target.body:
            points.visit(statement)
    seen: dict[str, int] = {}
    for index, (_, change, line, _) in enumerate(points.found):
        label = f"{change}"
        seen[f"{line}{label}"] = seen.get(f"{line}{label}", 0) + 1
        if seen[f"{line}{label}"] > 1:
            label += f" (#{seen[f'{line}{label}']})"
        copy_tree = copy.deepcopy(tree)
        twin = _same_node(tree, copy_tree, points.found[index][0])
        replace = _Replace(twin, points.found[index][3])
        mutated = ast.fix_missing_locations(replace.visit(copy_tree))
        if ast.unparse(mutated) == ast.unparse(tree):
            continue  # the change came out the same (a dropped `if` that has an `else`)
        try:
            compile(mutated, MUTANT_FILE, "exec")
        except SyntaxError:
            continue
        yield Mutant(chapter, line, label, mutated)


def _same_node(tree: ast.AST, twin_tree: ast.AST, node: ast.AST) -> ast.AST:
    for a, b in zip(ast.walk(tree), ast.walk(twin_tree), strict=True):
        if a is node:
            return b
    raise LookupError(node)


def _budgeted(run: Callable[[], Any]) -> Any:
    """Run ``run`` with every line of mutant code counted; past the budget, RanTooLong."""
    count = 0

    def local(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if event == "line":
            count += 1
            if count > LINE_BUDGET:
                raise RanTooLong(
                    f"more than {LINE_BUDGET:,} lines: it looks like a loop that never ends"
                )
        return local

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        return local if frame.f_code.co_filename == MUTANT_FILE else None

    before = sys.gettrace()
    sys.settrace(tracer)
    threading.settrace(tracer)
    try:
        return run()
    finally:
        sys.settrace(before)
        threading.settrace(None)  # type: ignore[arg-type]


def survivors(
    chapter: str,
    names: list[str],
    check: Callable[[dict[str, Any]], object],
    folder: Path = SOLUTIONS,
) -> tuple[int, list[str]]:
    """How many mutants ``check`` was given, and the keys of those it passed.

    ``check`` gets a mutant's module namespace and returns the check's verdict (true when
    it passed): ``lambda ns: ch07.check_due(ns["due"])``.
    """
    total = 0
    passed: list[str] = []
    for mutant in mutants(chapter, names, folder):
        try:
            scope = mutant.namespace()
        except Exception:  # the mutant does not even load: any learner would see that
            continue
        total += 1
        if _budgeted(lambda scope=scope: check(scope)):
            passed.append(mutant.key)
    return total, passed


def assert_caught(
    chapter: str,
    names: list[str],
    check: Callable[[dict[str, Any]], object],
    equivalent: dict[str, str],
) -> int:
    """Every mutant of ``names`` fails ``check``, except those listed as ``equivalent``.

    ``equivalent`` maps a mutant's key to why it behaves like the solution. A listed mutant
    that the check now rejects is an error too, so the list stays true. Returns the count.
    """
    total, passed = survivors(chapter, names, check)
    assert total > 0, f"no mutants of {names} in {chapter}"
    unlisted = [key for key in passed if key not in equivalent]
    stale = [key for key in equivalent if key not in passed]
    assert not unlisted, (
        f"{len(unlisted)} of {total} mutants of {chapter} {names} pass the check; "
        "add a case that catches each, or list it as equivalent with the reason:\n"
        + "\n".join(unlisted)
    )
    assert not stale, f"listed as equivalent but caught (or gone): {stale}"
    return total


@dataclass(frozen=True)
class Exercise:
    """An exercise as the mutation tests see it: what to mutate, and how to check a mutant."""

    chapter: str
    number: int
    names: list[str]
    check: Callable[[dict[str, Any]], object]


def all_exercises() -> list[Exercise]:
    """Every exercise of chapters 00 to 15, in order."""
    from harness.exercises import (
        ch00,
        ch01,
        ch02,
        ch03,
        ch04,
        ch05,
        ch06,
        ch07,
        ch08,
        ch09,
        ch10,
        ch11,
        ch12,
        ch13,
        ch14,
        ch15,
    )  # fmt: skip

    return [
        Exercise("ch00", 1, ["turn_cost"], lambda ns: ch00.check_turn_cost(ns["turn_cost"])),
        Exercise("ch00", 2, ["next_step"], lambda ns: ch00.check_next_step(ns["next_step"])),
        Exercise(
            "ch01",
            1,
            ["agent_loop_limited"],
            lambda ns: ch01.check_agent_loop_limited(ns["agent_loop_limited"]),
        ),
        Exercise("ch01", 2, ["StopReasons"], lambda ns: ch01.check_stop_reasons(ns["StopReasons"])),
        Exercise("ch02", 1, ["count_lines"], lambda ns: ch02.check_count_lines(ns["count_lines"])),
        Exercise(
            "ch02", 2, ["project_rules"], lambda ns: ch02.check_project_rules(ns["project_rules"])
        ),
        Exercise(
            "ch03",
            1,
            ["positions_added", "widest_turn"],
            lambda ns: ch03.check_widest_turn(ns["positions_added"], ns["widest_turn"]),
        ),
        Exercise(
            "ch03",
            2,
            ["with_hour_prefix"],
            lambda ns: ch03.check_with_hour_prefix(ns["with_hour_prefix"]),
        ),
        Exercise(
            "ch04",
            1,
            ["effective_window", "auto_compact_threshold"],
            lambda ns: ch04.check_auto_compact_threshold(
                ns["effective_window"], ns["auto_compact_threshold"]
            ),
        ),
        Exercise(
            "ch04",
            2,
            ["microcompact_keep_errors"],
            lambda ns: ch04.check_keep_errors(ns["microcompact_keep_errors"]),
        ),
        Exercise(
            "ch05",
            1,
            ["pin_constraints"],
            lambda ns: ch05.check_pin_constraints(ns["pin_constraints"]),
        ),
        Exercise(
            "ch05",
            2,
            ["record_savings"],
            lambda ns: ch05.check_record_savings(ns["record_savings"], ns["savings"]),
        ),
        Exercise(
            "ch06",
            1,
            ["wait_before_retry"],
            lambda ns: ch06.check_wait_before_retry(ns["wait_before_retry"]),
        ),
        Exercise(
            "ch06", 2, ["should_retry"], lambda ns: ch06.check_should_retry(ns["should_retry"])
        ),
        Exercise("ch07", 1, ["due"], lambda ns: ch07.check_due(ns["due"])),
        Exercise("ch07", 2, ["cut_point"], lambda ns: ch07.check_cut_point(ns["cut_point"])),
        Exercise(
            "ch08",
            1,
            ["latest_leaf_path"],
            lambda ns: ch08.check_latest_leaf_path(ns["latest_leaf_path"]),
        ),
        Exercise(
            "ch08",
            2,
            ["answer_unresolved"],
            lambda ns: ch08.check_answer_unresolved(ns["answer_unresolved"]),
        ),
        Exercise("ch09", 1, ["decide_rule"], lambda ns: ch09.check_decide_rule(ns["decide_rule"])),
        Exercise("ch09", 2, ["bound"], lambda ns: ch09.check_bound(ns["bound"])),
        Exercise("ch10", 1, ["status_of"], lambda ns: ch10.check_status_of(ns["status_of"])),
        Exercise(
            "ch10",
            2,
            ["fork_messages_for"],
            lambda ns: ch10.check_fork_messages_for(ns["fork_messages_for"]),
        ),
        Exercise("ch11", 1, ["exit_code"], lambda ns: ch11.check_exit_code(ns["exit_code"])),
        Exercise("ch11", 2, ["ToolTally"], lambda ns: ch11.check_tool_tally(ns["ToolTally"])),
        Exercise("ch12", 1, ["remind"], lambda ns: ch12.check_remind(ns["remind"])),
        Exercise("ch12", 2, ["latest_list"], lambda ns: ch12.check_latest_list(ns["latest_list"])),
        Exercise(
            "ch13", 1, ["hook_decision"], lambda ns: ch13.check_hook_decision(ns["hook_decision"])
        ),
        Exercise(
            "ch13",
            2,
            ["fill_arguments"],
            lambda ns: ch13.check_fill_arguments(ns["fill_arguments"]),
        ),
        Exercise(
            "ch14",
            1,
            ["mcp_tool_names"],
            lambda ns: ch14.check_mcp_tool_names(ns["mcp_tool_names"]),
        ),
        Exercise(
            "ch14", 2, ["search_tools"], lambda ns: ch14.check_search_tools(ns["search_tools"])
        ),
        Exercise("ch15", 1, ["read_new"], lambda ns: ch15.check_read_new(ns["read_new"])),
        Exercise("ch15", 2, ["cost_spikes"], lambda ns: ch15.check_cost_spikes(ns["cost_spikes"])),
    ]


def exercise(chapter: str, number: int) -> Exercise:
    """The exercise ``number`` of ``chapter`` (``"ch07"``, 1)."""
    for found in all_exercises():
        if (found.chapter, found.number) == (chapter, number):
            return found
    raise LookupError((chapter, number))


def assert_exercise_caught(chapter: str, number: int, equivalent: dict[str, str]) -> int:
    """:func:`assert_caught` for exercise ``number`` of ``chapter``: what a chapter's test calls."""
    found = exercise(chapter, number)
    return assert_caught(chapter, found.names, found.check, equivalent)


def main(chapters: list[str]) -> None:
    """Print, for every exercise (or those of ``chapters``: ``ch12``), its mutants and those
    its check passes."""
    print(f"{'exercise':<14} {'mutants':>8} {'passed':>7}")
    for found in all_exercises():
        if chapters and found.chapter not in chapters:
            continue
        total, passed = survivors(found.chapter, found.names, found.check)
        print(f"{found.chapter} ex{found.number:<8} {total:>8} {len(passed):>7}")
        for key in passed:
            print(f"    {key}")


if __name__ == "__main__":
    main(sys.argv[1:])  # uv run python -m tests.mutation ch12


__all__ = [
    "LINE_BUDGET",
    "Exercise",
    "Mutant",
    "RanTooLong",
    "all_exercises",
    "assert_caught",
    "assert_exercise_caught",
    "exercise",
    "mutants",
    "survivors",
]
