"""Chapter 09's exercise checks: the solutions pass, the stubs and plausible slips do not."""

from __future__ import annotations

import hashlib
import json

from harness import messages as m
from harness.approvals import PendingToolCall, call_hash
from harness.exercises import ch09
from tests.solutions import load

solutions = load("ch09")


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


def test_calling_the_packages_hash_is_refused() -> None:
    def shortcut(snapshot: PendingToolCall, use: m.Block) -> bool:
        same = call_hash(str(use["name"]), use["input"]) == snapshot.call_hash
        return bool(use["id"] == snapshot.tool_use_id and same)

    verdict = ch09.check_bound(shortcut)
    assert not verdict and "call_hash" in str(verdict)
