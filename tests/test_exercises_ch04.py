"""Chapter 04's exercise checks: the solution passes, the stub and plausible slips do not."""

from __future__ import annotations

from typing import Any

import pytest

from harness import messages as m
from harness import tokens
from harness.compaction.microcompact import (
    CLEARED,
    KEEP_RECENT,
    MicrocompactResult,
    microcompact,
)
from harness.exercises import ch04
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch04")


def stub(*args: object, **kwargs: object) -> Any:
    raise NotImplementedError


def test_the_solutions_pass() -> None:
    assert ch04.check_auto_compact_threshold(
        solutions.effective_window, solutions.auto_compact_threshold
    )
    assert ch04.check_keep_errors(solutions.microcompact_keep_errors)


def test_a_stub_is_told_not_yet_with_a_hint() -> None:
    for verdict in (
        ch04.check_auto_compact_threshold(stub, stub),
        ch04.check_keep_errors(stub),
    ):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)


def test_a_stub_is_told_its_first_case_and_where_the_recipe_is() -> None:
    both = str(ch04.check_auto_compact_threshold(stub, stub))
    assert "`effective_window` is still the stub" in both and "192,000" in both
    assert "ch04.hint(1)" in both
    second = str(ch04.check_auto_compact_threshold(solutions.effective_window, stub))
    assert "`auto_compact_threshold` is still the stub" in second and "179,000" in second
    keep = str(ch04.check_keep_errors(stub))
    assert "toolu_01 and toolu_04" in keep and "ch04.hint(2)" in keep


def test_hint_gives_each_recipe_and_refuses_a_third() -> None:
    assert "min(max_output, 20_000)" in str(ch04.hint(1))
    assert "MicrocompactResult(" in str(ch04.hint(2))
    with pytest.raises(ValueError, match="no exercise 3"):
        ch04.hint(3)


def test_the_pass_message_answers_the_million_token_question() -> None:
    verdict = str(
        ch04.check_auto_compact_threshold(
            solutions.effective_window, solutions.auto_compact_threshold
        )
    )
    assert "967,000" in verdict and "3.3%" in verdict and "16.5%" in verdict


# --- exercise 1: wrong answers ---------------------------------------------------------------


def test_a_threshold_that_uses_context_budget_is_refused() -> None:
    def effective(window: int, max_output: int) -> int:
        return tokens.ContextBudget(window=window, max_output=max_output).effective_window

    def threshold(window: int, max_output: int) -> int:
        return tokens.ContextBudget(window=window, max_output=max_output).auto_compact_threshold

    verdict = ch04.check_auto_compact_threshold(effective, threshold)
    assert not verdict and "ContextBudget" in str(verdict)


def test_a_threshold_that_uses_context_budget_under_another_name_is_refused() -> None:
    from harness.tokens import ContextBudget as Budget

    def threshold(window: int, max_output: int) -> int:
        return Budget(window=window, max_output=max_output).auto_compact_threshold

    assert not ch04.check_auto_compact_threshold(solutions.effective_window, threshold)


def test_forgetting_the_20k_cap_on_the_reserve_is_rejected() -> None:
    def effective(window: int, max_output: int) -> int:
        return window - max_output

    def threshold(window: int, max_output: int) -> int:
        return effective(window, max_output) - 13_000

    verdict = ch04.check_auto_compact_threshold(effective, threshold)
    assert not verdict and "has a cap" in str(verdict)


def test_reserving_20k_whatever_the_output_is_rejected() -> None:
    def effective(window: int, max_output: int) -> int:
        return window - 20_000

    def threshold(window: int, max_output: int) -> int:
        return window - 33_000

    verdict = ch04.check_auto_compact_threshold(effective, threshold)
    assert not verdict and "8,000" in str(verdict)


def test_forgetting_the_buffer_is_rejected() -> None:
    verdict = ch04.check_auto_compact_threshold(
        solutions.effective_window, solutions.effective_window
    )
    assert not verdict and "179,000" in str(verdict) and "a buffer" in str(verdict)


# --- exercise 2: wrong answers ---------------------------------------------------------------


def test_plain_microcompact_clears_errors_and_is_rejected() -> None:
    def clears_errors(messages: list[m.MessageDict], keep: int = KEEP_RECENT) -> Any:
        return microcompact(messages, keep=keep)

    verdict = ch04.check_keep_errors(clears_errors)
    assert not verdict and "errors" in str(verdict)


def test_a_variant_that_edits_its_input_is_rejected() -> None:
    def in_place(messages: list[m.MessageDict], keep: int = KEEP_RECENT) -> Any:
        result = solutions.microcompact_keep_errors(messages, keep=keep)
        cleared = set(result.cleared)
        for message in messages:
            for block in m.tool_results(message):
                if block["tool_use_id"] in cleared:
                    block["content"] = CLEARED
        return result

    verdict = ch04.check_keep_errors(in_place)
    assert not verdict and "changed its input" in str(verdict)


def test_first_changed_taken_from_microcompact_is_rejected() -> None:
    def slip(messages: list[m.MessageDict], keep: int = KEEP_RECENT) -> Any:
        right = solutions.microcompact_keep_errors(messages, keep=keep)
        plain = microcompact(messages, keep=keep)
        return MicrocompactResult(
            right.messages, right.cleared, right.tokens_freed, plain.first_changed
        )

    verdict = ch04.check_keep_errors(slip)
    assert not verdict and "first_changed" in str(verdict)


def test_tokens_freed_taken_from_microcompact_is_rejected() -> None:
    def slip(messages: list[m.MessageDict], keep: int = KEEP_RECENT) -> Any:
        right = solutions.microcompact_keep_errors(messages, keep=keep)
        plain = microcompact(messages, keep=keep)
        return MicrocompactResult(
            right.messages, right.cleared, plain.tokens_freed, right.first_changed
        )

    verdict = ch04.check_keep_errors(slip)
    assert not verdict and "tokens_freed" in str(verdict)


def test_leaving_alone_every_message_that_holds_an_error_is_rejected() -> None:
    def slip(messages: list[m.MessageDict], keep: int = KEEP_RECENT) -> Any:
        right = solutions.microcompact_keep_errors(messages, keep=keep)
        out = [
            old if any(b.get("is_error") for b in m.tool_results(old)) else new
            for old, new in zip(messages, right.messages, strict=True)
        ]
        ids = tuple(
            b["tool_use_id"]
            for old, new in zip(messages, out, strict=True)
            if new is not old
            for b in m.tool_results(new)
            if b["content"] == CLEARED
        )
        freed = tokens.estimate_request(messages) - tokens.estimate_request(out)
        first = next(
            (i for i, (a, b) in enumerate(zip(messages, out, strict=True)) if a is not b), None
        )
        return MicrocompactResult(out, ids, freed, first)

    verdict = ch04.check_keep_errors(slip)
    assert not verdict and "two calls at a time" in str(verdict)


def test_ignoring_keep_is_rejected() -> None:
    def slip(messages: list[m.MessageDict], keep: int = KEEP_RECENT) -> Any:
        return solutions.microcompact_keep_errors(messages)

    verdict = ch04.check_keep_errors(slip)
    assert not verdict and "keep=2" in str(verdict)


@pytest.mark.parametrize("returned", [None, [], "done"])
def test_returning_something_else_is_told_not_yet(returned: object) -> None:
    verdict = ch04.check_keep_errors(lambda messages, keep=KEEP_RECENT: returned)
    assert not verdict and str(verdict).startswith("not yet: ")


# --- mutation tests ----------------------------------------------------------------------------

EQUIVALENT_THRESHOLD: dict[str, str] = {}

# The solution zips lists that always have the same length: `microcompact` returns as many
# messages as it was given, and a message it rewrites keeps its number of blocks; `out` is a
# copy of `messages` with some entries replaced. `strict=True` only changes what happens when
# the lengths differ (ruff's B905 asks for it), and `a is not b` reads the same both ways.
EQUIVALENT_KEEP_ERRORS: dict[str, str] = {
    "line 31: `True` → `False`": (
        "zip(messages, cleared.messages, strict=False): microcompact returns as many messages "
        "as it was given, so strict never has a length difference to refuse"
    ),
    "line 36: `True` → `False`": (
        "zip(old content, new content, strict=False): microcompact replaces a result's content "
        "and keeps every block, so both lists always have the same length"
    ),
    "line 42: `zip(messages, out, strict=True)` with its first two arguments swapped": (
        "the pairs are only compared with `a is not b`, which reads the same either way round"
    ),
    "line 42: `True` → `False`": (
        "`out` starts as list(messages) and only has entries replaced, never added or removed: "
        "the two lists always have the same length"
    ),
}


def test_every_mutant_of_the_threshold_solution_is_caught() -> None:
    assert_exercise_caught("ch04", 1, EQUIVALENT_THRESHOLD)


def test_every_mutant_of_the_keep_errors_solution_is_caught() -> None:
    assert_exercise_caught("ch04", 2, EQUIVALENT_KEEP_ERRORS)
