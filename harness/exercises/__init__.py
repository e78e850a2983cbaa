"""Checks for the chapters' exercises: one module per chapter, ``harness.exercises.ch00`` on.

An exercise ships in its notebook as a stub (it raises ``NotImplementedError``) followed by a
check cell, ``ch00.check_turn_cost(turn_cost)``. A check answers with a :class:`Verdict` that
the notebook shows: ``✓ ...`` when the code does what the exercise asks, otherwise ``not yet``
with the first case that went wrong (what was asked, what was expected, what came back) and a
hint that says where to look, never the answer. A check never raises because of what the
learner wrote: the stub, a wrong answer and an exception all come back as a "not yet", so a
notebook runs top to bottom with its stubs in place.

One way to write each exercise, step by step, comes only when the learner asks for it:
``ch00.hint(1)`` (see :func:`hints`). The stored outputs of the notebooks, and so the
website, show the stubs' "not yet" and never a line of a solution.

Checks test the mechanism, not a shortcut: where the package already has a function that
answers the exercise, the check refuses code that just calls it (see :func:`forbid`).

The solutions live in ``chapters/solutions/`` (one file per chapter, the same names as the
stubs); ``tests/test_exercises_chNN.py`` runs every check against its solution, against the stub
and against plausible wrong answers.
"""

from __future__ import annotations

import dis
import functools
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, ParamSpec
from unittest import mock

P = ParamSpec("P")


@dataclass(frozen=True)
class Verdict:
    """What a check found. Its text is what the notebook shows; it is true when it passed."""

    passed: bool
    text: str

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:  # the notebook shows a check cell's last value with repr
        return wrapped(self.text)


WIDTH = 78
"""Columns a notebook's output shows without scrolling sideways (and the website's too)."""


def wrapped(text: str) -> str:
    """``text`` with each long line folded at :data:`WIDTH`, its continuation indented."""
    return "\n".join(
        textwrap.fill(
            line, WIDTH, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False
        )
        for line in text.splitlines()
    )


class NotYet(Exception):
    """Raised inside a check when the learner's code does not do what the exercise asks."""

    def __init__(self, problem: str, hint: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.hint = hint


def exercise(
    name: str, hint: str, *, first: str, number: int
) -> Callable[[Callable[P, str]], Callable[P, Verdict]]:
    """Make a check: the wrapped function returns what passed, or raises :class:`NotYet`.

    ``name`` is what the learner wrote (``turn_cost``); ``hint`` is shown with every "not
    yet" that does not bring its own: where to look next, not the answer. ``first`` is the
    first case the check tries, said as the learner would test it (``due(9_999, None, 3)
    should be False: ...``): the stub hears it, so it knows where to begin. ``number`` is the
    exercise's number in its chapter: every "not yet" ends by naming ``chNN.hint(number)``,
    the recipe the learner can ask for. The stub (``NotImplementedError``) and any other
    exception from the learner's code come back as a "not yet", never as a traceback.
    """

    def decorate(check: Callable[P, str]) -> Callable[P, Verdict]:
        more = f"{check.__module__.rpartition('.')[2]}.hint({number})"

        @functools.wraps(check)
        def run(*args: P.args, **kwargs: P.kwargs) -> Verdict:
            try:
                return Verdict(True, f"✓ {check(*args, **kwargs)}")
            except NotYet as miss:
                return not_yet(miss.problem, miss.hint or hint, more)
            except NotImplementedError:
                stub = f"`{name}` is still the stub (it raises NotImplementedError).\n"
                return not_yet(f"{stub}first case: {first}", hint, more)
            except Exception as error:  # the learner's code failed: say how, keep going
                return not_yet(f"your code raised {type(error).__name__}: {error}", hint, more)

        return run

    return decorate


def not_yet(problem: str, hint: str, more: str | None = None) -> Verdict:
    """A "not yet": the problem, the hint, and (when known) the call that gives the recipe."""
    text = f"not yet: {problem}\nhint: {hint}"
    if more is not None:
        text += f"\nstuck? {more} shows one way to write it, step by step."
    return Verdict(False, text)


@dataclass(frozen=True)
class Recipe:
    """One way to write an exercise, step by step: what :func:`hints` hands out on request."""

    chapter: str
    number: int
    text: str

    def __repr__(self) -> str:  # the notebook shows the call's value with repr
        return f"{self.chapter}, exercise {self.number}, one way to write it:\n{self.text}"

    __str__ = __repr__


def hints(chapter: str, recipes: dict[int, str]) -> Callable[[int], Recipe]:
    """A chapter's ``hint(n)``: the recipe for exercise ``n``, given only when asked for.

    ``chapter`` is the module's ``__name__``; the recipes are kept apart from the checks'
    hints so that no "not yet" (and no stored output) carries them.
    """
    short = chapter.rpartition(".")[2]

    def hint(n: int) -> Recipe:
        """One way to write exercise ``n`` of this chapter, step by step."""
        if n not in recipes:
            numbers = ", ".join(str(k) for k in sorted(recipes))
            raise ValueError(f"{short} has exercises {numbers}; there is no exercise {n}")
        return Recipe(short, n, recipes[n])

    return hint


@contextmanager
def forbid(owner: object, attribute: str, why: str) -> Iterator[None]:
    """While the check runs, calling ``owner.attribute`` fails with ``NotYet(why)``.

    Use it where the package's own function is the answer the check compares against, so
    that code which merely calls it cannot pass.
    """

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NotYet(why)

    with mock.patch.object(owner, attribute, refuse):
        yield


def bindings(*targets: object) -> list[tuple[object, str]]:
    """Every (module, name) of the package that holds one of ``targets``: where to refuse it
    (``from m import f`` binds ``f`` in a second module too)."""
    found: list[tuple[object, str]] = []
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("harness."):
            continue
        for name, value in list(vars(module).items()):
            if any(value is target for target in targets):
                found.append((module, name))
    return found


def refusing(function: object, targets: tuple[Callable[..., Any], ...], why: str) -> ExitStack:
    """Refuse a solution whose code names one of the package's ``targets`` (``NotYet(why)``
    at once), and return the context in which calling any binding of them raises it too."""
    if any(refers_to(function, target, attributes=False) for target in targets):
        raise NotYet(why)
    refusals = ExitStack()
    for owner, name in bindings(*targets):
        refusals.enter_context(forbid(owner, name, why))
    return refusals


def refers_to(function: object, target: Callable[..., Any], *, attributes: bool = True) -> bool:
    """Whether ``function`` can reach ``target``: by its name, or by any name bound to it.

    Looks at the names the function's code (and the functions nested in it) mentions, and at
    what those names are bound to in its globals and closure, so ``from m import f as g``
    followed by ``g(...)`` is found as well as ``m.f(...)``. With ``attributes=False`` only
    the names the code loads count, so ``snapshot.call_hash`` (a field that shares the
    function's name) is not taken for a use of ``call_hash``.
    """
    code = getattr(function, "__code__", None)
    if code is None:
        return False
    names = _names(code) if attributes else _loaded(code)
    if attributes and target.__name__ in names:
        return True
    scope: dict[str, Any] = dict(getattr(function, "__globals__", {}))
    cells = getattr(function, "__closure__", None) or ()
    for name, cell in zip(code.co_freevars, cells, strict=False):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return any(scope.get(name) is target for name in names)


def _names(code: types.CodeType) -> set[str]:
    found = set(code.co_names) | set(code.co_varnames) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _names(const)
    return found


def _loaded(code: types.CodeType) -> set[str]:
    """The global and closure names a function's code loads (not its attribute names)."""
    found = {
        str(i.argval)
        for i in dis.get_instructions(code)
        if i.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF")
    }
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _loaded(const)
    return found


__all__ = [
    "WIDTH",
    "NotYet",
    "Recipe",
    "Verdict",
    "exercise",
    "forbid",
    "hints",
    "not_yet",
    "refers_to",
    "wrapped",
]
