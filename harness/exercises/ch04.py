"""Chapter 04's exercises: the auto-compact threshold by hand, and a microcompact that keeps
errors."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from harness import messages as m
from harness import tokens
from harness.compaction.microcompact import CLEARED, KEEP_RECENT, MicrocompactResult, microcompact
from harness.exercises import NotYet, exercise, forbid, hints, refers_to
from harness.tokens import ContextBudget

# (window, max_output): below the 20K cap, at it, above it, a million-token window, the
# chapter's small window.
BUDGET_CASES: list[tuple[int, int]] = [
    (200_000, 8_000),
    (200_000, 32_000),
    (200_000, 64_000),
    (1_000_000, 64_000),
    (40_000, 8_000),
    (50_000, 20_000),
    (100_000, 19_999),
]

_BUDGET_HINT = (
    "the effective window keeps room for the reply, up to a cap; the threshold sits a fixed "
    "buffer below it. Both numbers are in the exercise."
)
_EFFECTIVE_FIRST = (
    "effective_window(200_000, 8_000) should be 192,000: 8,000 is under the cap, kept in full."
)
_THRESHOLD_FIRST = (
    "auto_compact_threshold(200_000, 8_000) should be 179,000: the buffer below an effective "
    "window of 192,000."
)
_BUDGET_RECIPE = """\
1. effective_window(window, max_output): the room kept for the reply is max_output, but at
   most 20,000: return window - min(max_output, 20_000).
2. auto_compact_threshold(window, max_output): 13,000 below the effective window: return
   effective_window(window, max_output) - 13_000.
3. Plain integers only: the check refuses code that uses ContextBudget, the class it compares
   your numbers with."""


@exercise("effective_window", _BUDGET_HINT, first=_EFFECTIVE_FIRST, number=1)
def check_auto_compact_threshold(
    effective_window: Callable[[int, int], int],
    auto_compact_threshold: Callable[[int, int], int],
) -> str:
    """Exercise 1: Claude Code's window arithmetic, written by hand, against ContextBudget."""
    for name, function in [
        ("effective_window", effective_window),
        ("auto_compact_threshold", auto_compact_threshold),
    ]:
        if refers_to(function, ContextBudget):
            raise NotYet(
                f"{name} uses ContextBudget, the very class it is checked against.",
                "do the arithmetic yourself, with plain numbers.",
            )
    refusal = "your code uses ContextBudget; do the arithmetic yourself."
    for window, max_output in BUDGET_CASES:
        budget = ContextBudget(window=window, max_output=max_output)
        with forbid(tokens, "ContextBudget", refusal):
            effective = _call(effective_window, "effective_window", window, max_output)
            threshold = _call(auto_compact_threshold, "auto_compact_threshold", window, max_output)
        case = f"window {window:,}, max_output {max_output:,}"
        if not _is_number(effective) or effective != budget.effective_window:
            raise NotYet(
                f"for {case}, effective_window returned {effective!r}; expected "
                f"{budget.effective_window:,}.",
                _reserve_hint(window, max_output, effective),
            )
        if not _is_number(threshold) or threshold != budget.auto_compact_threshold:
            hint = None
            if threshold == effective:
                hint = "the threshold is not the effective window: a buffer sits between them."
            raise NotYet(
                f"for {case}, auto_compact_threshold returned {threshold!r}; expected "
                f"{budget.auto_compact_threshold:,}.",
                hint,
            )
    million = ContextBudget(window=1_000_000, max_output=64_000)
    usual = ContextBudget(window=200_000, max_output=64_000)
    above_1m = 1 - million.auto_compact_threshold / million.window
    above_200k = 1 - usual.auto_compact_threshold / usual.window
    return (
        f"right for all {len(BUDGET_CASES)} windows. With 64K of output, a 1M window "
        f"compacts at {million.auto_compact_threshold:,}: {above_1m:.1%} of it lies above the "
        f"threshold (a 200K window: {above_200k:.1%})."
    )


_FIRST = {"effective_window": _EFFECTIVE_FIRST, "auto_compact_threshold": _THRESHOLD_FIRST}


def _call(function: Callable[[int, int], int], name: str, window: int, max_output: int) -> int:
    """Call one of the two functions, saying which one is still the stub and its first case."""
    try:
        return function(window, max_output)
    except NotImplementedError:
        raise NotYet(
            f"`{name}` is still the stub (it raises NotImplementedError).\n"
            f"first case: {_FIRST[name]}"
        ) from None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _reserve_hint(window: int, max_output: int, got: object) -> str | None:
    if got == window - max_output:
        return "the room kept for the reply has a cap: 64K of output does not keep 64K free."
    if got == window - 20_000:
        return "a max_output below the cap is kept in full, not the cap itself."
    if got == window - min(max_output, 20_000) - 13_000:
        return "the effective window takes off the room for the reply only; the buffer comes later."
    return None


# --- exercise 2: never clear an error ------------------------------------------------------


def _text_of(path: str) -> str:
    return f"(the text of {path}) " * 40


def _traceback(name: str) -> str:
    """What a failing test prints: longer than the marker, and worth remembering."""
    return (
        f"FAILED tests/test_{name}.py::test_{name} - AssertionError\n"
        "Traceback (most recent call last):\n"
        f'  File "tests/test_{name}.py", line 6, in test_{name}\n'
        f"    assert {name}_step_0(Decimal('10.005')) == Decimal('10.01')\n"
        "AssertionError: assert Decimal('10.00') == Decimal('10.01')\n"
    )


_NAMES = ["billing", "invoices", "customers", "reports", "tax", "currency", "exports", "auth"]


def keep_errors_cases() -> list[tuple[str, list[m.MessageDict]]]:
    """Conversations to clear: (what it is, the messages)."""
    # Ten results one at a time: two failing tests (long errors, the oldest alone in its
    # message), a path that does not exist (a short error), files read.
    serial: list[m.MessageDict] = [m.user("Fix the billing rounding.")]
    for i in range(10):
        name = _NAMES[i % len(_NAMES)]
        if i in (0, 3):
            use = m.tool_use(f"toolu_{i:02d}", "bash", {"command": f"pytest tests/test_{name}.py"})
            answer = m.tool_result(use["id"], _traceback(name), is_error=True)
        elif i == 2:
            use = m.tool_use(f"toolu_{i:02d}", "read_file", {"path": f"app/{name}_rules.py"})
            answer = m.tool_result(use["id"], f"file not found: app/{name}_rules.py", is_error=True)
        else:
            use = m.tool_use(f"toolu_{i:02d}", "read_file", {"path": f"app/{name}.py"})
            answer = m.tool_result(use["id"], _text_of(f"app/{name}.py"))
        serial += [m.assistant([use]), m.user([answer])]
    serial.append(m.assistant("Done."))

    # Calls in parallel: a failing test and a file read answered in the same message, so a
    # message changes while the error inside it must stay as it was.
    parallel: list[m.MessageDict] = [m.user("Run the tests and read the code.")]
    for i in range(4):
        name = _NAMES[i]
        test = m.tool_use(f"toolu_{i}a", "bash", {"command": f"pytest tests/test_{name}.py"})
        read = m.tool_use(f"toolu_{i}b", "read_file", {"path": f"app/{name}.py"})
        parallel += [
            m.assistant([m.text(f"Testing and reading {name}."), test, read]),
            m.user(
                [
                    m.tool_result(test["id"], _traceback(name), is_error=True),
                    m.tool_result(read["id"], _text_of(f"app/{name}.py")),
                ]
            ),
        ]
    parallel.append(m.assistant("Both modules round wrongly."))
    return [("ten results, one a call", serial), ("two calls at a time", parallel)]


def _error_ids(messages: Sequence[m.MessageDict]) -> set[str]:
    return {
        str(b["tool_use_id"]) for msg in messages for b in m.tool_results(msg) if b.get("is_error")
    }


def _check_one(
    microcompact_keep_errors: Callable[..., Any],
    what: str,
    messages: list[m.MessageDict],
    keep: int,
) -> MicrocompactResult:
    before = copy.deepcopy(messages)
    got = (
        microcompact_keep_errors(messages)
        if keep == KEEP_RECENT
        else microcompact_keep_errors(messages, keep=keep)
    )
    where = f"on the conversation with {what} (keep={keep})"
    if messages != before:
        raise NotYet(
            f"{where}, your function changed its input.",
            "microcompact leaves the list it was given as it was: change copies.",
        )
    if not isinstance(got, MicrocompactResult):
        raise NotYet(f"{where}, it returned {type(got).__name__}, not a MicrocompactResult.")
    if not isinstance(got.messages, list) or len(got.messages) != len(messages):
        raise NotYet(f"{where}, the result does not hold the same number of messages.")
    errors = _error_ids(messages)
    expected = set(microcompact(messages, keep=keep).cleared) - errors
    cleared = set(got.cleared)
    if cleared & errors:
        raise NotYet(f"{where}, it clears {sorted(cleared & errors)}, which are errors.")
    if cleared != expected:
        raise NotYet(
            f"{where}, it reports clearing {sorted(cleared)}; expected {sorted(expected)}."
        )
    for old, new in zip(messages, got.messages, strict=True):
        if not m.tool_results(old):
            if new != old:
                raise NotYet(f"{where}, a message without tool results changed.")
            continue
        old_blocks, new_blocks = m.blocks(old), m.blocks(new)
        if len(old_blocks) != len(new_blocks):
            raise NotYet(f"{where}, a message lost or gained blocks.")
        for o, n in zip(old_blocks, new_blocks, strict=True):
            if o.get("type") != "tool_result" or o["tool_use_id"] not in expected:
                if n != o:
                    name = o.get("tool_use_id", o.get("type"))
                    kind = "error result" if name in errors else "block"
                    raise NotYet(f"{where}, the {kind} {name} was changed.")
            elif n != {**o, "content": CLEARED}:
                raise NotYet(
                    f"{where}, {o['tool_use_id']} should read {CLEARED!r}, with its other fields."
                )
    if m.validate(got.messages):
        raise NotYet(f"{where}, the result is not a valid conversation.")
    freed = tokens.estimate_request(messages) - tokens.estimate_request(got.messages)
    if got.tokens_freed != freed:
        raise NotYet(
            f"{where}, tokens_freed is {got.tokens_freed!r}; the result is {freed:,} tokens "
            "smaller.",
            "count what your result frees, not what microcompact would have freed.",
        )
    changed = [i for i, (a, b) in enumerate(zip(messages, got.messages, strict=True)) if a != b]
    first = changed[0] if changed else None
    if got.first_changed != first:
        raise NotYet(
            f"{where}, first_changed is {got.first_changed!r}; the first message that differs "
            f"is {first!r}.",
            "a message whose only cleared result was an error has not changed.",
        )
    return got


_KEEP_ERRORS_HINT = (
    "let microcompact decide what is old enough, then undo its work on the errors; make "
    "cleared, tokens_freed and first_changed describe your messages, not microcompact's."
)
_KEEP_ERRORS_FIRST = (
    "with ten results, one a call, three of them errors, microcompact_keep_errors(messages) "
    "should clear toolu_01 and toolu_04 only (microcompact clears toolu_00 to toolu_04)."
)
_KEEP_ERRORS_RECIPE = """\
1. errors = the tool_use_id of every tool_result block with "is_error": True
   (m.tool_results(message) gives a message's results).
2. cleared = microcompact(messages, keep=keep). Walk messages and cleared.messages together
   (zip, with enumerate for the index). Where the new message is the old one (`is`),
   microcompact left it alone: keep it.
3. Otherwise rebuild its content block by block: an old block that is an error result goes
   back as it was (copy.deepcopy), any other block is taken from the new message. If the
   rebuilt blocks equal the old content, the only results cleared there were errors: keep
   the old message; else use {**new, "content": blocks}.
4. tokens_freed = tokens.estimate_request(messages) - tokens.estimate_request(out);
   first_changed = the first index whose message in `out` is not the old one (None if
   none); cleared = microcompact's ids without the errors.
5. Return MicrocompactResult(out, cleared_ids, tokens_freed, first_changed)."""


@exercise("microcompact_keep_errors", _KEEP_ERRORS_HINT, first=_KEEP_ERRORS_FIRST, number=2)
def check_keep_errors(microcompact_keep_errors: Callable[..., Any]) -> str:
    """Exercise 2: ``microcompact_keep_errors(messages, keep=5)`` never clears an error."""
    kept = 0
    for what, messages in keep_errors_cases():
        for keep in (KEEP_RECENT, 2):
            got = _check_one(microcompact_keep_errors, what, messages, keep)
            kept += microcompact(messages, keep=keep).tokens_freed - got.tokens_freed
        again = microcompact_keep_errors(got.messages, keep=2)
        if (
            not isinstance(again, MicrocompactResult)
            or again.cleared
            or again.first_changed is not None
        ):
            raise NotYet(
                f"on the conversation with {what}, applying it a second time changed something.",
                "a result that already reads the marker is not cleared again.",
            )
    return (
        f"every error kept, everything else cleared as microcompact does; the kept errors cost "
        f"{kept:,} tokens over the {2 * len(keep_errors_cases())} clearings"
    )


hint = hints(__name__, {1: _BUDGET_RECIPE, 2: _KEEP_ERRORS_RECIPE})

__all__ = [
    "BUDGET_CASES",
    "check_auto_compact_threshold",
    "check_keep_errors",
    "hint",
    "keep_errors_cases",
]
