"""Chapter 09's exercise checks: the solutions pass, the stubs and plausible slips do not."""

from __future__ import annotations

import hashlib
import json

from harness import messages as m
from harness.approvals import PendingToolCall, call_hash
from harness.exercises import ch09
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch09")

EQUIVALENT_RULE: dict[str, str] = {}  # mutants that behave like the solution, and why
EQUIVALENT_BOUND: dict[str, str] = {}


def stub(*args: object) -> None:
    raise NotImplementedError


def test_the_solutions_pass() -> None:
    assert ch09.check_decide_rule(solutions.decide_rule)
    assert ch09.check_bound(solutions.bound)


def test_the_stubs_are_told_not_yet_with_a_hint() -> None:
    for verdict in (ch09.check_decide_rule(stub), ch09.check_bound(stub)):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)
        assert "first case: " in str(verdict) and "stuck? ch09.hint(" in str(verdict)


def test_every_mutant_of_the_rule_solution_is_caught() -> None:
    assert_exercise_caught("ch09", 1, EQUIVALENT_RULE)


def test_every_mutant_of_the_bound_solution_is_caught() -> None:
    assert_exercise_caught("ch09", 2, EQUIVALENT_BOUND)


def test_the_expected_rule_covers_every_state_and_follows_the_store() -> None:
    expected = ch09.expected_rule()
    assert {state for state, *_ in expected} == {
        "pending",
        "approved",
        "rejected",
        "applying",
        "applied",
        "expired",
    }
    assert expected[("pending", True, True, None)] == ("expired", 410)
    assert expected[("approved", True, True, True)] == ("approved", None)
    assert expected[("applied", False, False, True)] == ("applied", 409)


# -- exercise 1: the rule that records a decision ---------------------------------------------


def test_checking_the_time_before_the_state_is_rejected() -> None:
    """A decided row whose time is up is still decided: the answer is about the decision."""

    def slip(state: str, expired: bool, approve: bool, recorded: bool | None) -> object:
        if expired or state == "expired":
            return ("expired", 410)
        return solutions.decide_rule(state, expired, approve, recorded)

    verdict = ch09.check_decide_rule(slip)
    assert not verdict and "a row approved" in str(verdict) and "time is up" in str(verdict)


def test_refusing_an_expired_call_without_marking_it_is_rejected() -> None:
    def slip(state: str, expired: bool, approve: bool, recorded: bool | None) -> object:
        if state == "pending" and expired:
            return ("pending", 410)
        return solutions.decide_rule(state, expired, approve, recorded)

    verdict = ch09.check_decide_rule(slip)
    assert not verdict and "('expired', 410)" in str(verdict)


def test_a_double_click_that_conflicts_is_rejected() -> None:
    def slip(state: str, expired: bool, approve: bool, recorded: bool | None) -> object:
        if state == "pending":
            return solutions.decide_rule(state, expired, approve, recorded)
        if state == "expired":
            return ("expired", 410)
        return (state, 409)

    verdict = ch09.check_decide_rule(slip)
    assert not verdict and "answered approve" in str(verdict) and "None" in str(verdict)


def test_a_later_answer_that_overwrites_the_first_is_rejected() -> None:
    def slip(state: str, expired: bool, approve: bool, recorded: bool | None) -> object:
        if state == "expired" or (state == "pending" and expired):
            return ("expired", 410)
        return ("approved" if approve else "rejected", None)

    verdict = ch09.check_decide_rule(slip)
    assert not verdict and "409" in str(verdict)


def test_treating_an_expired_row_as_decided_is_rejected() -> None:
    def slip(state: str, expired: bool, approve: bool, recorded: bool | None) -> object:
        if state == "pending":
            return solutions.decide_rule(state, expired, approve, recorded)
        return (state, None if recorded == approve else 409)

    verdict = ch09.check_decide_rule(slip)
    assert not verdict and "a row expired" in str(verdict)


def test_letting_time_expire_an_approved_row_on_a_second_answer_is_rejected() -> None:
    """An approved call that was not applied in time does expire, but at the claim: a second
    answer to it is still a double click or a conflict."""

    def slip(state: str, expired: bool, approve: bool, recorded: bool | None) -> object:
        if state in ("pending", "approved") and expired:
            return ("expired", 410)
        return solutions.decide_rule(state, expired, approve, recorded)

    verdict = ch09.check_decide_rule(slip)
    assert not verdict and "a row approved (it was approved), its time is up" in str(verdict)
    assert "not for a second answer" in str(verdict)


def test_a_time_that_makes_every_late_answer_a_410_is_rejected() -> None:
    """Time matters after the decision: the state is kept, but the answer is refused as late."""

    def slip(state: str, expired: bool, approve: bool, recorded: bool | None) -> object:
        if state not in ("pending", "expired") and expired:
            return (state, 410)
        return solutions.decide_rule(state, expired, approve, recorded)

    verdict = ch09.check_decide_rule(slip)
    assert not verdict and "410" in str(verdict) and "time is up" in str(verdict)


def test_a_rule_that_ignores_the_recorded_decision_on_an_applied_row_is_rejected() -> None:
    """Reading the decision from the state: an applied (or applying) row may hold either."""

    def slip(state: str, expired: bool, approve: bool, recorded: bool | None) -> object:
        if state in ("pending", "expired"):
            return solutions.decide_rule(state, expired, approve, recorded)
        return (state, None if approve else 409)

    verdict = ch09.check_decide_rule(slip)
    assert not verdict and "it was rejected" in str(verdict)


def test_returning_only_the_state_is_rejected() -> None:
    def slip(state: str, expired: bool, approve: bool, recorded: bool | None) -> object:
        return solutions.decide_rule(state, expired, approve, recorded)[0]

    verdict = ch09.check_decide_rule(slip)
    assert not verdict and "return a pair" in str(verdict)


# -- exercise 2: is this the call that was approved? ------------------------------------------


def digest(name: object, text: str) -> str:
    return hashlib.sha256(f"{name}\n{text}".encode()).hexdigest()


def test_comparing_the_tool_name_only_is_rejected() -> None:
    def slip(snapshot: PendingToolCall, use: m.Block) -> bool:
        return bool(use.get("name") == snapshot.tool)

    verdict = ch09.check_bound(slip)
    assert not verdict and "the amount changed: it is not the call that was approved" in str(
        verdict
    )


def test_comparing_the_inputs_as_dicts_is_rejected() -> None:
    """Python says 100 == 100.0 and True == 1; the canonical JSON does not."""

    def slip(snapshot: PendingToolCall, use: m.Block) -> bool:
        return bool(
            use.get("id") == snapshot.tool_use_id
            and use.get("name") == snapshot.tool
            and use.get("input") == snapshot.input
        )

    verdict = ch09.check_bound(slip)
    assert not verdict and "100.0" in str(verdict)


def test_a_hash_that_ignores_the_call_id_is_rejected() -> None:
    def slip(snapshot: PendingToolCall, use: m.Block) -> bool:
        text = json.dumps(use["input"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return digest(use["name"], text) == snapshot.call_hash

    verdict = ch09.check_bound(slip)
    assert not verdict and "a later call" in str(verdict)


def test_a_hash_of_unsorted_keys_is_rejected() -> None:
    def slip(snapshot: PendingToolCall, use: m.Block) -> bool:
        text = json.dumps(use["input"], separators=(",", ":"), ensure_ascii=False)
        return use["id"] == snapshot.tool_use_id and digest(use["name"], text) == snapshot.call_hash

    verdict = ch09.check_bound(slip)
    assert not verdict and "another order" in str(verdict)


def test_a_hash_with_escaped_accents_is_rejected() -> None:
    def slip(snapshot: PendingToolCall, use: m.Block) -> bool:
        text = json.dumps(use["input"], sort_keys=True, separators=(",", ":"))
        return use["id"] == snapshot.tool_use_id and digest(use["name"], text) == snapshot.call_hash

    verdict = ch09.check_bound(slip)
    assert not verdict and "the approved call: it is the call that was approved" in str(verdict)


def test_comparing_the_call_id_only_is_rejected() -> None:
    def slip(snapshot: PendingToolCall, use: m.Block) -> bool:
        return bool(use.get("id") == snapshot.tool_use_id)

    verdict = ch09.check_bound(slip)
    assert not verdict and "the amount changed: it is not the call" in str(verdict)
    assert "every field of it" in str(verdict)


def test_hashing_under_the_snapshots_tool_name_is_rejected() -> None:
    """The name in the hash must be the call's: with the snapshot's, any tool passes."""

    def slip(snapshot: PendingToolCall, use: m.Block) -> bool:
        text = json.dumps(use["input"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return (
            use["id"] == snapshot.tool_use_id and digest(snapshot.tool, text) == snapshot.call_hash
        )

    verdict = ch09.check_bound(slip)
    assert not verdict and "another tool, same input" in str(verdict)
    assert "which name goes into your hash" in str(verdict)


def test_comparing_the_id_and_the_name_only_is_rejected() -> None:
    def slip(snapshot: PendingToolCall, use: m.Block) -> bool:
        return bool(use["id"] == snapshot.tool_use_id and use["name"] == snapshot.tool)

    verdict = ch09.check_bound(slip)
    assert not verdict and "the amount changed" in str(verdict)


def test_comparing_canonical_texts_without_hashing_passes() -> None:
    """Not a slip: the snapshot's input matches its hash (parse checks it), so comparing the
    canonical JSON texts and the name is the same test."""

    def other_way(snapshot: PendingToolCall, use: m.Block) -> bool:
        def text(value: object) -> str:
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

        return bool(
            use["id"] == snapshot.tool_use_id
            and use["name"] == snapshot.tool
            and text(use["input"]) == text(snapshot.input)
        )

    assert ch09.check_bound(other_way)


def test_calling_the_packages_hash_is_refused() -> None:
    def shortcut(snapshot: PendingToolCall, use: m.Block) -> bool:
        same = call_hash(str(use["name"]), use["input"]) == snapshot.call_hash
        return bool(use["id"] == snapshot.tool_use_id and same)

    verdict = ch09.check_bound(shortcut)
    assert not verdict and "call_hash" in str(verdict)
