"""Chapter 07's exercise checks: the solutions pass, the stubs and plausible slips do not."""

from __future__ import annotations

import random

from harness import messages as m
from harness import tokens
from harness.compaction.session_memory import keep_from
from harness.exercises import ch07
from harness.memory import ExtractionSchedule
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch07")


def stub(*args: object) -> None:
    raise NotImplementedError


def test_the_solutions_pass() -> None:
    assert ch07.check_due(solutions.due)
    assert ch07.check_cut_point(solutions.cut_point)


def test_the_stubs_are_told_not_yet_with_a_hint() -> None:
    for verdict in (ch07.check_due(stub), ch07.check_cut_point(stub)):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)


# -- exercise 1: when to extract ----------------------------------------------------------------


def test_a_rule_that_ignores_tool_calls_is_rejected() -> None:
    def slip(context: int, at_last: int | None, calls_since: int) -> bool:
        return context >= 10_000 if at_last is None else context - at_last >= 5_000

    verdict = ch07.check_due(slip)
    assert not verdict and "3 tool calls" in str(verdict)


def test_a_rule_that_uses_the_size_instead_of_the_growth_is_rejected() -> None:
    def slip(context: int, at_last: int | None, calls_since: int) -> bool:
        return calls_since >= 3 and context >= 10_000

    verdict = ch07.check_due(slip)
    assert not verdict and "growth" in str(verdict)


def test_a_strict_comparison_at_the_threshold_is_rejected() -> None:
    def slip(context: int, at_last: int | None, calls_since: int) -> bool:
        if calls_since < 3:
            return False
        return context > 10_000 if at_last is None else context - at_last > 5_000

    verdict = ch07.check_due(slip)
    assert not verdict and "should be True" in str(verdict)


def test_a_rule_that_returns_a_truthy_non_bool_is_told_to_return_a_bool() -> None:
    def slip(context: int, at_last: int | None, calls_since: int) -> object:
        right = solutions.due(context, at_last, calls_since)
        return "yes" if right else ""

    verdict = ch07.check_due(slip)
    assert not verdict and "not a bool" in str(verdict)


def test_calling_the_packages_schedule_is_refused() -> None:
    def shortcut(context: int, at_last: int | None, calls_since: int) -> bool:
        return ExtractionSchedule().due(context, at_last, calls_since)

    verdict = ch07.check_due(shortcut)
    assert not verdict and "ExtractionSchedule.due" in str(verdict)


def test_a_rule_right_on_the_edges_but_wrong_in_the_session_is_caught() -> None:
    """ "Every 5K" read as "at every multiple of 5K": right on each edge case the check lists,
    early in a session whose extractions do not fall on round numbers."""

    def slip(context: int, at_last: int | None, calls_since: int) -> bool:
        if calls_since < 3:
            return False
        if at_last is None:
            return context >= 10_000
        return context // 5_000 > at_last // 5_000

    verdict = ch07.check_due(slip)
    assert not verdict and "24-turn session" in str(verdict)


# -- exercise 2: where tier 2 cuts --------------------------------------------------------------


def test_a_cut_that_splits_a_tool_pair_is_rejected() -> None:
    def slip(messages: list[m.MessageDict], min_tokens: int, min_messages: int) -> int:
        start, kept = len(messages), 0
        while start > 0 and (kept < min_tokens or len(messages) - start < min_messages):
            start -= 1
            kept += tokens.estimate_message(messages[start])
        return start

    verdict = ch07.check_cut_point(slip)
    assert not verdict and "not a valid conversation" in str(verdict)


def test_a_cut_that_checks_only_the_tokens_is_rejected() -> None:
    def slip(messages: list[m.MessageDict], min_tokens: int, min_messages: int) -> int:
        start, kept = len(messages), 0
        while start > 0 and (kept < min_tokens or start == len(messages)):
            start -= 1
            kept += tokens.estimate_message(messages[start])
        while start > 0 and m.tool_results(messages[start]):
            start -= 1
        return start

    verdict = ch07.check_cut_point(slip)
    assert not verdict and "fewer than asked for" in str(verdict)


def test_a_cut_that_moves_forward_to_fix_a_split_is_rejected() -> None:
    """Moving the cut forward past the results keeps a valid conversation but too little."""

    def slip(messages: list[m.MessageDict], min_tokens: int, min_messages: int) -> int:
        start, kept = len(messages), 0
        while start > 0 and (kept < min_tokens or len(messages) - start < min_messages):
            start -= 1
            kept += tokens.estimate_message(messages[start])
        while 0 < start < len(messages) - 1 and m.tool_results(messages[start]):
            start += 1
        return start

    verdict = ch07.check_cut_point(slip)
    assert not verdict


def test_a_cut_that_keeps_everything_is_rejected() -> None:
    verdict = ch07.check_cut_point(lambda messages, min_tokens, min_messages: 0)
    assert not verdict and "keep from" in str(verdict)


def test_calling_keep_from_is_refused() -> None:
    def shortcut(messages: list[m.MessageDict], min_tokens: int, min_messages: int) -> int:
        return keep_from(messages, len(messages), min_tokens=min_tokens, min_messages=min_messages)

    verdict = ch07.check_cut_point(shortcut)
    assert not verdict and "keep_from" in str(verdict)


def test_the_generated_conversations_are_valid_and_have_tool_pairs() -> None:
    rng = random.Random(3)
    for _ in range(20):
        messages = ch07.conversation(rng, rng.randint(1, 20))
        assert m.validate(messages) == []
    assert any(m.tool_results(msg) for msg in messages)


def test_a_schedule_wrong_after_a_compaction_shrinks_the_context_is_rejected() -> None:
    """The 10K floor applied to every extraction: right until a compaction leaves the context
    under 10K, where SessionMemory counts growth from the smaller size."""

    def slip(context: int, at_last: int | None, calls_since: int) -> bool:
        if calls_since < 3 or context < 10_000:
            return False
        return at_last is None or context - at_last >= 5_000

    verdict = ch07.check_due(slip)
    assert not verdict and "compaction left 3,000 tokens" in str(verdict)


def test_a_token_count_without_the_per_message_overhead_is_rejected() -> None:
    def slip(messages: list[m.MessageDict], min_tokens: int, min_messages: int) -> int:
        start, kept = len(messages), 0
        while start > 0 and (kept < min_tokens or len(messages) - start < min_messages):
            start -= 1
            kept += tokens.estimate_content(messages[start]["content"])  # no overhead
        while start > 0 and messages[start]["role"] == "user" and m.tool_results(messages[start]):
            start -= 1
        return start

    verdict = ch07.check_cut_point(slip)
    assert not verdict and "tokens by tokens.estimate_message" in str(verdict)


def test_a_cut_that_stops_one_message_early_at_the_edge_is_rejected() -> None:
    def slip(messages: list[m.MessageDict], min_tokens: int, min_messages: int) -> int:
        start, kept = len(messages), 0
        while start > 0 and (kept < min_tokens - 1 or len(messages) - start < min_messages):
            start -= 1
            kept += tokens.estimate_message(messages[start])
        while start > 0 and messages[start]["role"] == "user" and m.tool_results(messages[start]):
            start -= 1
        return start

    verdict = ch07.check_cut_point(slip)
    assert not verdict and "fewer than asked for" in str(verdict)


# -- mutation tests ------------------------------------------------------------------------------

EQUIVALENT_DUE: dict[str, str] = {}  # every mutant of due is caught by a case

# In a valid conversation (every one tier 2 cuts, and every one the check generates) the first
# message is the user's prompt, with no tool results, and the second is the assistant's reply:
# roles alternate from a user message. So the second walk back, which only moves past a user
# message holding tool results, never moves at index 0 or at index 1, and these guards on it
# change nothing.
EQUIVALENT_CUT: dict[str, str] = {
    "line 24: `start > 0` → `start >= 0`": "at start 0 the walk stops anyway: messages[0] is "
    "the first user prompt, which holds no tool results",
    "line 24: `0` → `1`": "stopping at 1 instead of 0 changes nothing: messages[1] is the "
    "assistant's reply, never a user message with tool results",
    "line 24: `0` → `-1`": "the same as `start >= 0`: at start 0 the walk stops anyway, "
    "messages[0] holds no tool results",
}


def test_every_mutant_of_the_due_solution_is_caught() -> None:
    assert_exercise_caught("ch07", 1, EQUIVALENT_DUE)


def test_every_mutant_of_the_cut_point_solution_is_caught() -> None:
    assert_exercise_caught("ch07", 2, EQUIVALENT_CUT)
