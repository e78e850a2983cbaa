"""Chapter 05's exercise checks: the solution passes, the stub and plausible slips do not."""

from __future__ import annotations

import re

import pytest

from harness.compaction.pinned import PinnedFacts
from harness.compaction.summary import CompactionReport
from harness.exercises import ch05
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch05")


def stub(*args: object) -> None:
    raise NotImplementedError


def sentences(prompt: str) -> list[str]:
    return re.split(r"(?<=[.!?])\s+", prompt.strip())


def test_the_solutions_pass() -> None:
    assert ch05.check_pin_constraints(solutions.pin_constraints)
    assert ch05.check_record_savings(solutions.record_savings, solutions.savings)


def test_the_stubs_are_told_not_yet_with_a_hint() -> None:
    for verdict in (ch05.check_pin_constraints(stub), ch05.check_record_savings(stub, [])):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)


def test_a_stub_is_told_its_first_case_and_where_the_recipe_is() -> None:
    pin = str(ch05.check_pin_constraints(stub))
    assert "should pin 'Keep every docstring under 100 characters.'" in pin
    assert "ch05.hint(1)" in pin
    save = str(ch05.check_record_savings(stub, []))
    assert "[('auto', 5811)]" in save and "ch05.hint(2)" in save


def test_the_first_case_of_exercise_2_is_the_sessions_first_compaction() -> None:
    reports: list[CompactionReport] = []
    assert ch05.check_record_savings(reports.append, []) is not None
    first = reports[0]
    assert (first.trigger, first.tokens_before, first.tokens_after) == ("auto", 9_156, 3_345)


def test_hint_gives_each_recipe_and_refuses_a_third() -> None:
    assert 'pinned.add(sentence, source="user")' in str(ch05.hint(1))
    assert "savings.append(" in str(ch05.hint(2))
    with pytest.raises(ValueError, match="no exercise 3"):
        ch05.hint(3)


# -- exercise 1: pin the rules -------------------------------------------------------------------


def test_pinning_nothing_loses_the_rules_at_the_first_compaction() -> None:
    def slip(prompt: str, pinned: PinnedFacts) -> None:
        pass

    verdict = ch05.check_pin_constraints(slip)
    assert not verdict and "after compaction 1" in str(verdict)


def test_pinning_every_sentence_is_rejected() -> None:
    def slip(prompt: str, pinned: PinnedFacts) -> None:
        for sentence in sentences(prompt):
            pinned.add(sentence, source="user")

    verdict = ch05.check_pin_constraints(slip)
    assert not verdict and "not a rule" in str(verdict)


def test_pinning_the_whole_prompt_as_one_fact_is_rejected() -> None:
    def slip(prompt: str, pinned: PinnedFacts) -> None:
        pinned.add(prompt, source="user")

    assert not ch05.check_pin_constraints(slip)


def test_replacing_the_facts_already_pinned_is_rejected() -> None:
    def slip(prompt: str, pinned: PinnedFacts) -> None:
        fresh = PinnedFacts()
        solutions.pin_constraints(prompt, fresh)
        pinned.facts = fresh.facts

    verdict = ch05.check_pin_constraints(slip)
    assert not verdict and "do not replace" in str(verdict)


def test_forgetting_a_contraction_is_rejected() -> None:
    def slip(prompt: str, pinned: PinnedFacts) -> None:
        for sentence in sentences(prompt):
            if sentence.startswith(("Always", "Never", "Keep", "Do not")):
                pinned.add(sentence, source="user")

    verdict = ch05.check_pin_constraints(slip)
    assert not verdict and "Don't rename files." in str(verdict)


def test_splitting_on_full_stops_only_is_rejected() -> None:
    def slip(prompt: str, pinned: PinnedFacts) -> None:
        for sentence in re.split(r"(?<=\.)\s+", prompt.strip()):
            if sentence.startswith(("Always", "Never", "Keep", "Do not", "Don't")):
                pinned.add(sentence, source="user")

    assert not ch05.check_pin_constraints(slip)


def test_pinning_a_typed_rule_as_coming_from_claude_md_is_rejected() -> None:
    def slip(prompt: str, pinned: PinnedFacts) -> None:
        for sentence in sentences(prompt):
            if solutions.RULE.match(sentence):
                pinned.add(sentence, source="CLAUDE.md")

    verdict = ch05.check_pin_constraints(slip)
    assert not verdict and "source" in str(verdict)


# -- exercise 2: record what each compaction saved -----------------------------------------------


def test_recording_the_tokens_before_is_rejected() -> None:
    savings: list[tuple[str, int]] = []

    def slip(report: CompactionReport) -> None:
        savings.append((report.trigger, report.tokens_before))

    assert not ch05.check_record_savings(slip, savings)


def test_recording_after_less_before_is_rejected() -> None:
    savings: list[tuple[str, int]] = []

    def slip(report: CompactionReport) -> None:
        savings.append((report.trigger, report.tokens_after - report.tokens_before))

    assert not ch05.check_record_savings(slip, savings)


def test_recording_only_automatic_compactions_is_rejected() -> None:
    savings: list[tuple[str, int]] = []

    def slip(report: CompactionReport) -> None:
        if report.trigger == "auto":
            savings.append((report.trigger, report.tokens_before - report.tokens_after))

    verdict = ch05.check_record_savings(slip, savings)
    assert not verdict and "manual" in str(verdict)


def test_recording_into_another_list_is_told_savings_is_empty() -> None:
    elsewhere: list[tuple[str, int]] = []

    def slip(report: CompactionReport) -> None:
        elsewhere.append((report.trigger, report.tokens_before - report.tokens_after))

    verdict = ch05.check_record_savings(slip, [])
    assert not verdict and "still empty" in str(verdict)


def test_a_hook_that_fails_is_told_what_it_raised() -> None:
    savings: list[tuple[str, int]] = []

    def slip(report: CompactionReport) -> None:
        savings.append((report.trigger, report.saved))  # type: ignore[attr-defined]

    verdict = ch05.check_record_savings(slip, savings)
    assert not verdict and "AttributeError" in str(verdict)


# -- mutation tests ------------------------------------------------------------------------------

EQUIVALENT_PIN: dict[str, str] = {}
EQUIVALENT_SAVINGS: dict[str, str] = {}


def test_every_mutant_of_the_pin_solution_is_caught() -> None:
    assert_exercise_caught("ch05", 1, EQUIVALENT_PIN)


def test_every_mutant_of_the_savings_solution_is_caught() -> None:
    assert_exercise_caught("ch05", 2, EQUIVALENT_SAVINGS)
