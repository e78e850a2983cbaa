"""Checks for the chapters' exercises: one module per chapter, ``harness.exercises.ch00`` on.

An exercise ships in its notebook as a stub (it raises ``NotImplementedError``) followed by a
check cell, ``ch00.check_turn_cost(turn_cost)``. A check answers with a :class:`Verdict` that
the notebook shows: ``✓ ...`` when the code does what the exercise asks, otherwise ``not yet``
with what went wrong and a hint. A check never raises because of what the learner wrote: the
stub, a wrong answer and an exception all come back as a "not yet", so a notebook runs top to
bottom with its stubs in place.

Checks test the mechanism, not a shortcut: where the package already has a function that
answers the exercise, the check refuses code that just calls it (see :func:`forbid`).

The solutions live in ``chapters/solutions/`` (one file per chapter, the same names as the
stubs); ``tests/test_exercises_chNN.py`` runs every check against its solution, against the stub
and against plausible wrong answers.
"""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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

    def __repr__(self) -> str:  # the notebook shows a check cell's last value with repr
        return self.text

    __str__ = __repr__


class NotYet(Exception):
    """Raised inside a check when the learner's code does not do what the exercise asks."""

    def __init__(self, problem: str, hint: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.hint = hint


def exercise(name: str, hint: str) -> Callable[[Callable[P, str]], Callable[P, Verdict]]:
    """Make a check: the wrapped function returns what passed, or raises :class:`NotYet`.

    ``name`` is what the learner wrote (``turn_cost``); ``hint`` is shown with every "not
    yet" that does not bring its own. The stub (``NotImplementedError``) and any other
    exception from the learner's code come back as a "not yet", never as a traceback.
    """

    def decorate(check: Callable[P, str]) -> Callable[P, Verdict]:
        @functools.wraps(check)
        def run(*args: P.args, **kwargs: P.kwargs) -> Verdict:
            try:
                return Verdict(True, f"✓ {check(*args, **kwargs)}")
            except NotYet as miss:
                return not_yet(miss.problem, miss.hint or hint)
            except NotImplementedError:
                return not_yet(f"`{name}` is still the stub (it raises NotImplementedError).", hint)
            except Exception as error:  # the learner's code failed: say how, keep going
                return not_yet(f"your code raised {type(error).__name__}: {error}", hint)

        return run

    return decorate


def not_yet(problem: str, hint: str) -> Verdict:
    return Verdict(False, f"not yet: {problem}\nhint: {hint}")


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


__all__ = ["NotYet", "Verdict", "exercise", "forbid", "not_yet", "refers_to"]
