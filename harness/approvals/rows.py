"""The approvals table and its rows: the layout, and a row read and checked as a Record.

A row holds one call's snapshot and its state (``pending``, ``approved``, ``rejected``,
``applying``, ``applied``, ``expired``) with what each state has written by then. A row whose
columns contradict its state (``applied`` with no outcome, say) is refused as
:class:`~harness.approvals.errors.ApprovalInvalid` naming the row, so the sound rows around
it stay usable.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from harness import messages as m
from harness.approvals.errors import ApprovalInvalid
from harness.approvals.snapshot import Decision, PendingToolCall, _problems

State = Literal["pending", "approved", "rejected", "applying", "applied", "expired"]
STATES: tuple[State, ...] = ("pending", "approved", "rejected", "applying", "applied", "expired")


@dataclass(frozen=True)
class Record:
    """One row of the store, read."""

    snapshot: PendingToolCall
    state: State
    decision: Decision | None
    decided_at: float | None
    claimed_by: str | None
    claimed_at: float | None
    outcome: m.Block | None
    """The ``tool_result`` the model was given for the call, once applied."""
    updated_at: float

    @property
    def approval_id(self) -> str:
        return self.snapshot.approval_id


@dataclass(frozen=True)
class Claim:
    """The right to apply one decided call; only one resumer holds it."""

    record: Record
    owner: str
    recovered: bool
    """Taken over from an owner that never finished (its lease ran out): the call may have
    run, so it must not run again."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN
                  ('pending','approved','rejected','applying','applied','expired')),
    snapshot    TEXT NOT NULL,
    decision    TEXT,
    decided_at  REAL,
    claimed_by  TEXT,
    claimed_at  REAL,
    outcome     TEXT,
    updated_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS approvals_by_state ON approvals (state, session_id);
"""
_COLUMNS = (
    "id",
    "session_id",
    "state",
    "snapshot",
    "decision",
    "decided_at",
    "claimed_by",
    "claimed_at",
    "outcome",
    "updated_at",
)

_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM approvals"


def _record(row: tuple[Any, ...]) -> Record:
    """A row, read and checked: its columns must agree with each other and with its state
    (a call marked applied has the outcome it was applied with, and so on), or it is refused
    as :class:`ApprovalInvalid` naming the row. The module's transitions rely on these."""
    approval_id, session_id, state, snapshot, decision, decided_at, *rest = row  # _COLUMNS
    claimed_by, claimed_at, outcome, updated_at = rest

    def bad(problem: str) -> ApprovalInvalid:
        return ApprovalInvalid(f"approval row {approval_id!r}: {problem}")

    if not isinstance(snapshot, str):
        raise bad(f"its snapshot is {type(snapshot).__name__}, not JSON text")
    try:
        parsed = PendingToolCall.parse(snapshot)
    except ApprovalInvalid as error:
        raise bad(str(error)) from None
    if parsed.approval_id != approval_id:
        raise bad(f"its snapshot is of another approval, {parsed.approval_id!r}")
    if parsed.session_id != session_id:
        raise bad(
            f"its snapshot is of session {parsed.session_id!r}, the row says session {session_id!r}"
        )
    if state not in STATES:
        raise bad(f"its state {state!r} is none of {', '.join(STATES)}")
    for name, value in (("decision", decision), ("outcome", outcome), ("claimed_by", claimed_by)):
        if value is not None and not isinstance(value, str):
            raise bad(f"its {name} is {type(value).__name__}, not text")
    for name, value in (
        ("decided_at", decided_at),
        ("claimed_at", claimed_at),
        ("updated_at", updated_at),
    ):
        number = isinstance(value, int | float) and math.isfinite(value)
        if not (number or (value is None and name != "updated_at")):
            raise bad(f"its {name} is {value!r}, not a time")
    try:
        answer = Decision.model_validate_json(decision) if decision else None
    except ValidationError as error:
        raise bad(f"its decision is unreadable: {_problems(error)}") from None
    try:
        result = json.loads(outcome) if outcome else None
    except ValueError as error:
        raise bad(f"its outcome is not JSON: {error}") from None
    if result is not None and not (
        isinstance(result, dict) and result.get("type") == "tool_result"
    ):
        raise bad("its outcome is not a tool_result block")
    problem = _contradiction(state, answer, claimed_by, claimed_at, result)
    if problem is not None:
        raise bad(problem)
    return Record(parsed, state, answer, decided_at, claimed_by, claimed_at, result, updated_at)


def _contradiction(
    state: State,
    decision: Decision | None,
    claimed_by: str | None,
    claimed_at: float | None,
    outcome: m.Block | None,
) -> str | None:
    """What in a row contradicts its state, if anything: the states the transitions move
    through, and what each has written by then."""
    if state == "pending" and (decision is not None or outcome is not None):
        return "state 'pending' with a decision or an outcome recorded (it would run again)"
    if state in ("approved", "rejected", "applying", "applied") and decision is None:
        return f"state {state!r} without a decision"
    if (
        state in ("approved", "rejected")
        and decision is not None
        and decision.approve != (state == "approved")
    ):
        said = "approve" if decision.approve else "reject"
        return f"state {state!r} with a decision to {said}"
    if state == "applying" and (not claimed_by or claimed_at is None):
        return "state 'applying' without an owner and the time of its claim"
    if state == "applied" and outcome is None:
        return "state 'applied' without the outcome it was applied with"
    return None
