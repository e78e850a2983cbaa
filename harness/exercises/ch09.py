"""Chapter 09's exercises: the rule that records a decision, and binding an approval to a call.

Exercise 1 checks the learner's ``decide_rule(state, expired, approve, recorded)`` against
what :meth:`harness.approvals.ApprovalStore.decide` really does, on a row in every state
(built in a throwaway store on a fake clock), with its time up or not, for both answers.
Exercise 2 checks ``bound(snapshot, use)`` on calls that are the approved one written
another way (keys in another order, accents) and on calls that differ by an id, a name, a
number or a type. Both refuse code that calls the package's answer. ``hint(n)`` gives one
way to write exercise ``n``, on request only.
"""

from __future__ import annotations

import functools
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness import approvals
from harness import messages as m
from harness.approvals import (
    ApprovalError,
    ApprovalStore,
    Decision,
    PendingToolCall,
    call_hash,
    canonical,
)
from harness.approvals import snapshot as snapshot_module
from harness.clock import FakeClock
from harness.exercises import NotYet, exercise, forbid, hints, refers_to
from harness.tools.permissions import ApprovalRequest

# -- exercise 1: the rule that records a decision ---------------------------------------------

_RULE_HINT = (
    "go through the states of the chapter's section *The store and its states*: which can "
    "still take a decision, which hold one already (compare the answer with `recorded`), and "
    "which are over; then ask in which of them a time that is up changes anything (section "
    "*Expiry*)."
)
_RULE_FIRST = (
    "decide_rule('pending', False, True, None) should be ('approved', None): a call that waits, "
    "answered in time with approve, is approved, and nothing goes wrong."
)
_RULE_RECIPE = (
    "if state == 'pending': return ('expired', 410) if expired else ('approved' if approve "
    "else 'rejected', None). If state == 'expired': return ('expired', 410). Otherwise the row "
    "was decided already (approved, rejected, applying, applied): if recorded == approve, the "
    "same answer again changes nothing: return (state, None); else return (state, 409). Time "
    "only matters while the row waits."
)

_TTL = 3600.0

# (state, the decision recorded on the row: None, True for approve, False for reject)
ROWS: list[tuple[str, bool | None]] = [
    ("pending", None),
    ("approved", True),
    ("rejected", False),
    ("applying", True),
    ("applying", False),
    ("applied", True),
    ("applied", False),
    ("expired", None),  # its time ran out while it waited
    ("expired", True),  # approved, but not applied in time
]

Case = tuple[str, bool, bool, bool | None]
"""(state, its time is up, the answer given: approve?, the decision recorded)."""


class _ScratchStore(ApprovalStore):
    """The real store's transitions, without waiting for the disk (``synchronous=OFF``): a
    throwaway store that only the check reads."""

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with super()._connection() as con:
            con.execute("PRAGMA synchronous=OFF")
            yield con


def _row(folder: Path, state: str, recorded: bool | None, expired: bool) -> ApprovalStore:
    """A store holding one row in ``state``; the row's time is up if ``expired``."""
    clock = FakeClock()
    store = _ScratchStore(folder / "approvals.db", clock=clock)
    request = ApprovalRequest("toolu_01", "transfer", {"to": "bob", "amount": 100}, "asks")
    snapshot = PendingToolCall.of(
        request, approval_id="apr_1", session_id="s1", reply_uuid=None, now=clock.now(), ttl=_TTL
    )
    store.add(snapshot)
    if state == "expired":
        if recorded is not None:
            store.decide("apr_1", Decision(approve=recorded))
        clock.advance(_TTL + 1)
        try:  # touching it marks it expired (and says so)
            if recorded is not None:
                store.claim("apr_1")
            else:
                store.decide("apr_1", "approve")
        except ApprovalError:
            pass
    elif recorded is not None:
        store.decide("apr_1", Decision(approve=recorded))
        if state in ("applying", "applied"):
            claim = store.claim("apr_1", "someone")
            if state == "applied" and not isinstance(claim, approvals.Record):
                store.finish(claim, m.tool_result("toolu_01", "sent 100 to bob"))
    if expired and clock.now() < snapshot.expires_at.timestamp():
        clock.advance(_TTL + 1)
    assert store.get("apr_1").state == state, (state, store.get("apr_1").state)
    return store


@functools.cache
def expected_rule() -> dict[Case, tuple[str, int | None]]:
    """What the store does for every case: the state afterwards, and the error's status."""
    found: dict[Case, tuple[str, int | None]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        n = 0
        for state, recorded in ROWS:
            for expired in (False, True) if state != "expired" else (True,):
                for approve in (True, False):
                    n += 1
                    folder = Path(scratch) / str(n)
                    store = _row(folder, state, recorded, expired)
                    status: int | None = None
                    try:
                        store.decide("apr_1", Decision(approve=approve))
                    except ApprovalError as error:
                        status = error.status
                    found[(state, expired, approve, recorded)] = (store.get("apr_1").state, status)
    return found


def _describe(case: Case) -> str:
    state, expired, approve, recorded = case
    was = "" if recorded is None else f" (it was {'approved' if recorded else 'rejected'})"
    time = "its time is up" if expired else "in time"
    return f"a row {state}{was}, {time}, answered {'approve' if approve else 'reject'}"


def _nudge(case: Case) -> str:
    """Where to look for one case: what kind of row it is, never the answer's code."""
    state, expired, approve, recorded = case
    if state == "pending" and expired:
        return (
            "a call that waited too long cannot be decided any more: the section *Expiry* says "
            "what the store does to its row, and what the person is told."
        )
    if state == "pending":
        return "a call that waits, answered in time, takes the person's answer."
    if state == "expired":
        return "an expired row is over: no answer brings it back, and the person is told so."
    if expired:
        return (
            "this row holds a decision already; a time that runs out after the decision is "
            "for the resume to see (`claim`), not for a second answer."
        )
    if recorded == approve:
        return "the same answer again is a double click or a retried request."
    return "the other answer, on a row that holds a decision, is a conflict."


@exercise("decide_rule", _RULE_HINT, first=_RULE_FIRST, number=1)
def check_decide_rule(decide_rule: Callable[[str, bool, bool, bool | None], Any]) -> str:
    why = "decide_rule uses the store; write the rule as a plain function of its four inputs."
    if refers_to(decide_rule, ApprovalStore) or refers_to(decide_rule, ApprovalStore.decide):
        raise NotYet(why)
    expected = expected_rule()
    with forbid(ApprovalStore, "decide", why):
        for case, want in expected.items():
            got = decide_rule(*case)
            if isinstance(got, list):
                got = tuple(got)
            if not (isinstance(got, tuple) and len(got) == 2):
                raise NotYet(
                    f"for {_describe(case)}, you returned {got!r}; return a pair "
                    "(the state afterwards, the error's status or None)."
                )
            if got != want:
                raise NotYet(
                    f"for {_describe(case)}, the store gives {want}; yours gives {got}.",
                    _nudge(case),
                )
    return (
        f"{len(expected)} cases (every state, in time or not, both answers): your rule does "
        "what the store does."
    )


# -- exercise 2: is this the call that was approved? -------------------------------------------

_BOUND_HINT = (
    "an approval is for one call: the id says which call, the hash says what it does. Reread "
    "the exercise for what the hash is made of, byte for byte, and compare what you compute "
    "with snapshot.call_hash. Python's == on dicts is not the same test."
)
_BOUND_FIRST = (
    "bound(snapshot, the approved call: toolu_07, transfer, {'amount': 100, 'memo': {...}, "
    "'to': 'Zoë'}) should be True: it is the call the person approved."
)
_BOUND_RECIPE = (
    "text = json.dumps(use['input'], sort_keys=True, separators=(',', ':'), "
    "ensure_ascii=False); digest = hashlib.sha256(f\"{use['name']}\\n{text}\".encode())"
    ".hexdigest(); return use['id'] == snapshot.tool_use_id and digest == snapshot.call_hash. "
    "Comparing dicts with == says True == 1 and 100 == 100.0; the JSON text does not."
)

APPROVED: dict[str, Any] = {"amount": 100, "memo": {"invoice": 7, "lines": [1, 2]}, "to": "Zoë"}


def approved_snapshot() -> PendingToolCall:
    request = ApprovalRequest("toolu_07", "transfer", APPROVED, "asks")
    return PendingToolCall.of(
        request, approval_id="apr_7", session_id="s1", reply_uuid=None, now=0.0, ttl=_TTL
    )


_SAME_INPUT = "the input is what the person approved, every field of it, nested ones too."
_AS_JSON = (
    "Python's == says 100 == 100.0 and True == 1; the canonical JSON text of the input does "
    "not, and neither does the hash."
)


def bound_cases() -> list[tuple[str, m.Block, bool, str]]:
    """(what it is, the tool_use block, whether it is the approved call, a nudge if missed)."""

    def call(input: dict[str, Any], *, name: str = "transfer", id: str = "toolu_07") -> m.Block:
        return m.tool_use(id, name, input)

    same = dict(APPROVED)
    memo = APPROVED["memo"]
    reordered = {"to": "Zoë", "memo": {"lines": [1, 2], "invoice": 7}, "amount": 100}
    exact = (
        "the approved call must pass: write the hash exactly as the exercise says (the name, a "
        "newline, the input as JSON with keys sorted, no spaces, accents as they are) and "
        "compare it with snapshot.call_hash, and the id with snapshot.tool_use_id."
    )
    return [
        ("the approved call", call(same), True, exact),
        (
            "the same call, keys in another order",
            call(reordered),
            True,
            "the order of the keys is how the call was written, not what it does: the "
            "canonical JSON writes them in one order.",
        ),
        ("the amount changed", call({**same, "amount": 10000}), False, _SAME_INPUT),
        (
            "another tool, same input",
            call(same, name="refund"),
            False,
            "the tool's name is part of what was approved: which name goes into your hash?",
        ),
        (
            "the same input in a later call",
            call(same, id="toolu_09"),
            False,
            "the same input in another call is another call: the id says which one was approved.",
        ),
        ("amount 100.0 instead of 100", call({**same, "amount": 100.0}), False, _AS_JSON),
        (
            "a nested field changed",
            call({**same, "memo": {**memo, "invoice": 8}}),
            False,
            _SAME_INPUT,
        ),
        (
            "a list in another order",
            call({**same, "memo": {**memo, "lines": [2, 1]}}),
            False,
            "the keys of an object have no order, but a list's items do.",
        ),
        ("a field added", call({**same, "fee": 0}), False, _SAME_INPUT),
        (
            "true where 1 was",
            call({**same, "memo": {**memo, "lines": [True, 2]}}),
            False,
            _AS_JSON,
        ),
    ]


@exercise("bound", _BOUND_HINT, first=_BOUND_FIRST, number=2)
def check_bound(bound: Callable[[PendingToolCall, m.Block], Any]) -> str:
    why = "bound uses the package's call_hash (or canonical); hash the call yourself."
    if refers_to(bound, call_hash, attributes=False) or refers_to(
        bound, canonical, attributes=False
    ):
        raise NotYet(why)
    snapshot = approved_snapshot()
    # The package's names, and the submodule's where PendingToolCall's checks look them up.
    with (
        forbid(approvals, "call_hash", why),
        forbid(approvals, "canonical", why),
        forbid(snapshot_module, "call_hash", why),
        forbid(snapshot_module, "canonical", why),
    ):
        for name, use, want, nudge in bound_cases():
            got = bound(snapshot, use)
            if not isinstance(got, bool):
                raise NotYet(f"for {name}, you returned {got!r}; return True or False.")
            if got != want:
                if want:
                    raise NotYet(
                        f"{name}: it is the call that was approved; yours says it is not.", nudge
                    )
                raise NotYet(
                    f"{name}: it is not the call that was approved; yours says it is.", nudge
                )
    return (
        f"{len(bound_cases())} calls: your check binds the approval to the exact call (its id, "
        "its tool, its input written canonically)."
    )


hint = hints(__name__, {1: _RULE_RECIPE, 2: _BOUND_RECIPE})

__all__ = [
    "ROWS",
    "approved_snapshot",
    "bound_cases",
    "check_bound",
    "check_decide_rule",
    "expected_rule",
    "hint",
]
