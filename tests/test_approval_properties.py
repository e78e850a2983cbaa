"""Approvals under generated inputs: whatever a stored snapshot holds, reading it either
gives a snapshot or says why not; the call hash sees every leaf of an input and no key
order; and whatever order people and resumers act in, an approval never leaves ``applied``
or ``expired`` and is applied at most once, with one outcome.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness.approvals import (
    ApprovalError,
    ApprovalInvalid,
    ApprovalStore,
    Claim,
    PendingToolCall,
    Record,
    call_hash,
    canonical,
)
from harness.clock import FakeClock
from harness.tools.permissions import ApprovalRequest

FIELDS = list(PendingToolCall.model_fields)

json_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and infinity too: never valid JSON for a hash
    | st.text(max_size=8)
    | st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat())
)
json_values = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def valid_payload() -> dict[str, Any]:
    request = ApprovalRequest(
        tool="transfer", input={"to": "bob", "amount": 100}, reason="asks", tool_use_id="toolu_1"
    )
    made = PendingToolCall.of(
        request, approval_id="apr_1", session_id="s", reply_uuid=None, now=1e9, ttl=3600.0
    )
    raw: dict[str, Any] = json.loads(made.model_dump_json())
    return raw


@st.composite
def snapshot_like(draw: st.DrawFn) -> dict[str, Any]:
    """Either a dict of random keys (the snapshot's own names among them, ``version`` with a
    random value), or a valid snapshot changed a little: another tool and input with their
    hash (still valid), fields given random values, dropped, or unknown ones added."""
    if draw(st.booleans()):
        keys = st.sampled_from(FIELDS) | st.text(max_size=6)
        raw: dict[str, Any] = draw(st.dictionaries(keys, json_values, max_size=12))
        if draw(st.booleans()):
            raw["version"] = draw(json_values | st.sampled_from([1, 2, 3, "2", 2.0, True]))
        return raw
    raw = valid_payload()
    tool: str = draw(st.text(max_size=8))
    if draw(st.booleans()):  # another call, hashed as the gate would: still a valid snapshot
        raw["tool"] = tool
        raw["input"] = draw(st.dictionaries(st.text(max_size=5), json_values, max_size=4))
        with contextlib.suppress(ValueError):  # NaN or infinity: the old hash stays
            raw["call_hash"] = call_hash(tool, raw["input"])
    changed = draw(st.lists(st.sampled_from(FIELDS), max_size=3, unique=True))
    for name in changed if draw(st.booleans()) else []:
        if draw(st.booleans()):
            del raw[name]
        else:
            raw[name] = draw(json_values)
    if draw(st.integers(0, 3)) == 0:
        raw.update(draw(st.dictionaries(st.text(max_size=6), json_values, min_size=1, max_size=2)))
    return raw


@settings(max_examples=100, deadline=None)
@given(snapshot_like())
def test_reading_any_dict_gives_a_snapshot_or_says_why_not(raw: dict[str, Any]) -> None:
    for given_as in (raw, _dumps(raw)):
        if given_as is None:
            continue
        try:
            parsed = PendingToolCall.parse(given_as)
        except ApprovalInvalid as error:
            assert str(error).startswith("unreadable approval snapshot")
        else:
            assert parsed.version == 2
            assert parsed.call_hash == call_hash(parsed.tool, parsed.input)


def _dumps(raw: dict[str, Any]) -> str | None:
    try:
        return json.dumps(raw)
    except (TypeError, ValueError):
        return None


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200))
def test_reading_any_bytes_or_text_gives_a_snapshot_or_says_why_not(raw: bytes | str) -> None:
    with contextlib.suppress(ApprovalInvalid):
        assert PendingToolCall.parse(raw).version == 2


def test_the_valid_payload_the_properties_start_from_parses() -> None:
    assert PendingToolCall.parse(valid_payload()).tool == "transfer"


# -- the call hash --------------------------------------------------------------------------

input_leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=6)
input_values = st.recursive(
    input_leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
)
tool_inputs = st.dictionaries(st.text(max_size=6), input_values, min_size=1, max_size=5)


def shuffled(value: Any, draw: Callable[[st.SearchStrategy[Any]], Any]) -> Any:
    """The same value with every dict's keys in another (drawn) order."""
    if isinstance(value, dict):
        keys = draw(st.permutations(list(value)))
        return {key: shuffled(value[key], draw) for key in keys}
    if isinstance(value, list):
        return [shuffled(item, draw) for item in value]
    return value


def leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in leaves(item, (*path, key))]
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in leaves(item, (*path, i))]
    return [path]


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, *rest = path
    if isinstance(value, dict):
        return {
            key: replaced(item, tuple(rest), new) if key == head else item
            for key, item in value.items()
        }
    return [replaced(item, tuple(rest), new) if i == head else item for i, item in enumerate(value)]


def get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


@settings(max_examples=100, deadline=None)
@given(tool_inputs, st.data())
def test_the_hash_ignores_key_order(input: dict[str, Any], data: st.DataObject) -> None:
    copy = shuffled(input, data.draw)
    assert copy == input
    assert call_hash("transfer", copy) == call_hash("transfer", input)


@settings(max_examples=100, deadline=None)
@given(tool_inputs, st.data())
def test_the_hash_changes_when_any_leaf_changes(input: dict[str, Any], data: st.DataObject) -> None:
    paths = leaves(input)
    if not paths:  # every value is an empty list or dict: nothing to change
        return
    path = data.draw(st.sampled_from(paths))
    old = get(input, path)
    new = data.draw(input_leaves.filter(lambda v: canonical(v) != canonical(old)))
    assert call_hash("transfer", replaced(input, path, new)) != call_hash("transfer", input)


# -- the state machine of one approval ------------------------------------------------------

LEASE = 600.0
TTL = 3600.0

operations = st.lists(
    st.one_of(
        st.tuples(st.just("decide"), st.booleans()),
        st.tuples(st.just("claim"), st.sampled_from(["A", "B"])),
        st.tuples(st.just("finish"), st.integers(0, 3)),
        st.tuples(st.just("release"), st.integers(0, 3)),
        st.tuples(st.just("advance"), st.sampled_from([1.0, 300.0, LEASE, 2 * TTL])),
    ),
    max_size=20,
)

FINAL = ("applied", "expired")

SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") else None
"""Where the generated stores live: in memory where there is such a folder, since each
commit under ``synchronous=FULL`` waits for the disk (20-50 ms on a slow one); the states,
not the durability, are under test here."""


@settings(max_examples=60, deadline=None)
@given(operations)
def test_an_approval_never_leaves_applied_or_expired_and_applies_once(
    ops: list[tuple[str, Any]],
) -> None:
    clock = FakeClock()
    with tempfile.TemporaryDirectory(dir=SCRATCH) as folder:
        store = ApprovalStore(Path(folder) / "a.db", clock=clock, lease=LEASE)
        request = ApprovalRequest(
            tool="transfer", input={"amount": 1}, reason="asks", tool_use_id="t1"
        )
        store.add(
            PendingToolCall.of(
                request,
                approval_id="apr",
                session_id="s",
                reply_uuid=None,
                now=clock.now(),
                ttl=TTL,
            )
        )
        claims: list[Claim] = []
        finished: list[m.Block] = []
        states = ["pending"]
        outcome: m.Block | None = None
        for step, (op, arg) in enumerate(ops):
            try:
                if op == "decide":
                    store.decide("apr", arg)
                elif op == "claim":
                    got = store.claim("apr", arg)
                    if isinstance(got, Claim):
                        claims.append(got)
                    else:
                        assert isinstance(got, Record) and got.state == "applied"
                        assert got.outcome == finished[0]
                elif op == "finish" and claims:
                    result = m.tool_result("t1", f"outcome {step}")
                    store.finish(claims[-1 - arg % len(claims)], result)
                    finished.append(result)
                elif op == "release" and claims:
                    store.release(claims[-1 - arg % len(claims)])
                elif op == "advance":
                    clock.advance(arg)
            except ApprovalError:
                pass
            record = store.get("apr")
            if states[-1] in FINAL:
                assert record.state == states[-1], f"{states[-1]} became {record.state} by {op}"
            states.append(record.state)
            assert len(finished) <= 1
            if outcome is not None:
                assert record.outcome == outcome
            outcome = record.outcome
            assert (record.state == "applied") == (outcome is not None)
            if finished:
                assert outcome == finished[0]
