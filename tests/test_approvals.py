"""Chapter 09's approvals, rule by rule: the strict snapshot, the hash that binds an approval
to one exact call, the SQLite store's states and locks, and a run that stops for a person and
is resumed by a fresh agent, exactly once.

Everything is scripted and on a :class:`FakeClock`; stores and transcripts live in ``tmp_path``.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from harness import messages as m
from harness.agent import Agent
from harness.approvals import (
    MAY_HAVE_RUN,
    SNAPSHOT_VERSION,
    ApprovalConflict,
    ApprovalError,
    ApprovalExpired,
    ApprovalGate,
    ApprovalInvalid,
    ApprovalNotFound,
    ApprovalResume,
    ApprovalStore,
    Claim,
    Decision,
    PendingToolCall,
    Record,
    ask_in_terminal,
    call_hash,
    canonical,
    continue_run,
    refused_text,
    resume,
)
from harness.clock import FakeClock
from harness.events import AwaitingApproval, Event
from harness.loop import INTERRUPTED
from harness.model import ScriptedModel, reply, tool_call
from harness.resume import Sessions
from harness.tools import ToolContext, tool
from harness.tools.dispatch import awaiting_approval_text, waiting_text
from harness.tools.hooks import Hooks, PreToolUseResult, ToolUse
from harness.tools.permissions import ApprovalRequest
from harness.transcript import load, seeded_ids

# -- snapshots ------------------------------------------------------------------------------

HOUR = 3600.0


def snapshot(
    approval_id: str = "apr_1",
    *,
    session_id: str = "s1",
    tool_name: str = "transfer",
    input: dict[str, Any] | None = None,
    now: float = 1_000_000.0,
    ttl: float = HOUR,
) -> PendingToolCall:
    request = ApprovalRequest(
        tool=tool_name,
        input=input if input is not None else {"to": "bob", "amount": 100},
        reason="transfer changes things",
        tool_use_id="toolu_0001",
    )
    return PendingToolCall.of(
        request, approval_id=approval_id, session_id=session_id, reply_uuid="u1", now=now, ttl=ttl
    )


def payload(**changes: Any) -> dict[str, Any]:
    """A valid snapshot as plain JSON data, with ``changes`` applied."""
    raw: dict[str, Any] = json.loads(snapshot().model_dump_json())
    raw.update(changes)
    return raw


def test_a_valid_version_2_payload_parses() -> None:
    parsed = PendingToolCall.parse(payload())
    assert parsed.version == SNAPSHOT_VERSION == 2
    assert parsed.tool == "transfer"
    assert parsed.input == {"to": "bob", "amount": 100}


def test_a_valid_payload_parses_from_json_text_and_bytes() -> None:
    text = json.dumps(payload())
    assert PendingToolCall.parse(text) == PendingToolCall.parse(text.encode()) == snapshot()


@pytest.mark.parametrize(
    ("version", "named"),
    [(1, "version 1"), (3, "version 3"), ("2", "version '2'"), (True, "version True")],
)
def test_an_unsupported_version_is_refused_naming_what_was_found(
    version: object, named: str
) -> None:
    with pytest.raises(ApprovalInvalid, match="not supported") as caught:
        PendingToolCall.parse(payload(version=version))
    assert named in str(caught.value)


def test_a_missing_version_is_refused_saying_it_is_missing() -> None:
    raw = payload()
    del raw["version"]
    with pytest.raises(ApprovalInvalid, match="no version"):
        PendingToolCall.parse(raw)


def test_an_unknown_field_is_refused_naming_the_field() -> None:
    with pytest.raises(ApprovalInvalid, match="approved_by"):
        PendingToolCall.parse(payload(approved_by="mallory"))


def test_a_missing_field_is_refused_naming_the_field() -> None:
    raw = payload()
    del raw["tool_use_id"]
    with pytest.raises(ApprovalInvalid, match="tool_use_id"):
        PendingToolCall.parse(raw)


def test_a_hash_that_does_not_match_the_input_is_refused() -> None:
    with pytest.raises(ApprovalInvalid, match="call_hash"):
        PendingToolCall.parse(payload(input={"to": "mallory", "amount": 100}))


def test_expiry_before_creation_is_refused() -> None:
    raw = payload()
    raw["expires_at"], raw["created_at"] = raw["created_at"], raw["expires_at"]
    with pytest.raises(ApprovalInvalid, match="expires_at"):
        PendingToolCall.parse(raw)


def test_broken_json_is_refused_as_invalid() -> None:
    with pytest.raises(ApprovalInvalid, match="JSON"):
        PendingToolCall.parse('{"version": 2, "tool": ')


def test_a_naive_expiry_time_is_refused_as_invalid() -> None:
    with pytest.raises(ApprovalInvalid, match="expires_at"):
        PendingToolCall.parse(payload(expires_at="2099-01-01T00:00:00"))


def test_the_snapshot_records_the_hash_of_its_call_and_its_expiry() -> None:
    made = snapshot(now=1_000_000.0, ttl=HOUR)
    assert made.call_hash == call_hash("transfer", {"to": "bob", "amount": 100})
    assert made.expires_at - made.created_at == timedelta(hours=1)
    assert not made.expired(1_000_000.0 + HOUR - 1)
    assert made.expired(1_000_000.0 + HOUR)


def test_a_snapshot_round_trips_through_the_store_unchanged(tmp_path: Path) -> None:
    store = ApprovalStore(tmp_path / "a.db", clock=FakeClock())
    made = snapshot(input={"to": "bøb", "amount": 100, "memo": {"b": [1, 2.5, None], "a": True}})
    store.add(made)
    assert store.get("apr_1").snapshot == made


# -- canonical input and the call hash ------------------------------------------------------


def test_canonical_input_ignores_key_order() -> None:
    assert canonical({"b": 1, "a": {"y": 2, "x": 3}}) == canonical({"a": {"x": 3, "y": 2}, "b": 1})
    assert call_hash("t", {"b": 1, "a": 2}) == call_hash("t", {"a": 2, "b": 1})


def test_a_changed_value_changes_the_hash() -> None:
    assert call_hash("transfer", {"amount": 100}) != call_hash("transfer", {"amount": 101})


def test_a_changed_tool_changes_the_hash() -> None:
    assert call_hash("transfer", {"amount": 100}) != call_hash("refund", {"amount": 100})


def test_an_integer_and_the_same_float_hash_differently() -> None:
    assert call_hash("transfer", {"amount": 1}) != call_hash("transfer", {"amount": 1.0})


def test_nan_is_refused_by_the_canonical_form() -> None:
    with pytest.raises(ValueError):
        canonical({"amount": float("nan")})


# -- decisions and errors -------------------------------------------------------------------


def test_a_decision_reads_approve_reject_and_booleans() -> None:
    assert Decision.of("approve").approve
    assert not Decision.of("reject").approve
    assert Decision.of(True).approve
    given = Decision(approve=False, by="alice", note="no")
    assert Decision.of(given) is given
    with pytest.raises(ApprovalInvalid, match="maybe"):
        Decision.of("maybe")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ApprovalNotFound, 404),
        (ApprovalConflict, 409),
        (ApprovalExpired, 410),
        (ApprovalInvalid, 422),
    ],
)
def test_each_error_maps_to_its_http_status(error: type[ApprovalError], status: int) -> None:
    assert error.status == status
    assert issubclass(error, ApprovalError)


# -- the store ------------------------------------------------------------------------------


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> ApprovalStore:
    return ApprovalStore(tmp_path / "approvals.db", clock=clock, lease=600.0)


def added(store: ApprovalStore, approval_id: str = "apr_1", **kwargs: Any) -> PendingToolCall:
    made = snapshot(approval_id, now=store.clock.now(), **kwargs)
    store.add(made)
    return made


def claimed(store: ApprovalStore, approval_id: str = "apr_1", owner: str = "me") -> Claim:
    got = store.claim(approval_id, owner)
    assert isinstance(got, Claim)
    return got


RESULT = m.tool_result("toolu_0001", "sent 100 to bob")


def test_an_added_call_is_pending_and_can_be_read_back(store: ApprovalStore) -> None:
    made = added(store)
    record = store.get("apr_1")
    assert (record.state, record.snapshot, record.decision, record.outcome) == (
        "pending",
        made,
        None,
        None,
    )


def test_adding_the_same_id_twice_is_a_conflict(store: ApprovalStore) -> None:
    added(store)
    with pytest.raises(ApprovalConflict, match="exists"):
        added(store)


def test_an_unknown_id_is_not_found_with_status_404(store: ApprovalStore) -> None:
    with pytest.raises(ApprovalNotFound) as caught:
        store.get("apr_nope")
    assert caught.value.status == 404
    with pytest.raises(ApprovalNotFound):
        store.decide("apr_nope", "approve")


@pytest.mark.parametrize(("given", "state"), [("approve", "approved"), ("reject", "rejected")])
def test_a_decision_moves_a_pending_call_to_approved_or_rejected(
    store: ApprovalStore, clock: FakeClock, given: Any, state: str
) -> None:
    added(store)
    clock.advance(5)
    record = store.decide("apr_1", Decision(approve=given == "approve", by="alice", note="ok"))
    assert record.state == state
    assert record.decision == Decision(approve=given == "approve", by="alice", note="ok")
    assert record.decided_at == clock.now()


def test_the_same_decision_twice_changes_nothing(store: ApprovalStore, clock: FakeClock) -> None:
    added(store)
    first = store.decide("apr_1", Decision(approve=True, by="alice"))
    clock.advance(30)
    again = store.decide("apr_1", Decision(approve=True, by="bob", note="me too"))
    assert again == first
    assert store.get("apr_1").decided_at == first.decided_at


def test_the_other_decision_afterwards_is_a_conflict_with_status_409(store: ApprovalStore) -> None:
    added(store)
    store.decide("apr_1", "approve")
    with pytest.raises(ApprovalConflict, match="approved") as caught:
        store.decide("apr_1", "reject")
    assert caught.value.status == 409
    assert store.get("apr_1").state == "approved"


def test_an_expired_pending_call_cannot_be_approved(store: ApprovalStore, clock: FakeClock) -> None:
    added(store, ttl=HOUR)
    clock.advance(HOUR)
    with pytest.raises(ApprovalExpired, match="expired") as caught:
        store.decide("apr_1", "approve")
    assert caught.value.status == 410
    assert store.get("apr_1").state == "expired"


def test_an_expired_call_stays_expired(store: ApprovalStore, clock: FakeClock) -> None:
    added(store, ttl=HOUR)
    clock.advance(2 * HOUR)
    with pytest.raises(ApprovalExpired):
        store.decide("apr_1", "approve")
    with pytest.raises(ApprovalExpired):
        store.decide("apr_1", "reject")
    with pytest.raises(ApprovalExpired):
        store.claim("apr_1", "me")
    assert store.get("apr_1").state == "expired"


def test_pending_lists_only_undecided_unexpired_calls(
    store: ApprovalStore, clock: FakeClock
) -> None:
    added(store, "apr_old", ttl=10)
    added(store, "apr_decided")
    added(store, "apr_a1", session_id="a")
    added(store, "apr_b1", session_id="b")
    store.decide("apr_decided", "reject")
    clock.advance(10)  # apr_old's time is up
    assert [r.approval_id for r in store.pending()] == ["apr_a1", "apr_b1"]
    assert [r.approval_id for r in store.pending("b")] == ["apr_b1"]
    assert store.pending("nobody") == []


def test_all_lists_every_row_in_the_order_added_whatever_its_state(
    store: ApprovalStore,
) -> None:
    for approval_id in ("apr_p", "apr_r", "apr_x"):
        added(store, approval_id)
    store.decide("apr_r", "reject")
    claimed(store, "apr_r")
    assert [(r.approval_id, r.state) for r in store.all()] == [
        ("apr_p", "pending"),
        ("apr_r", "applying"),
        ("apr_x", "pending"),
    ]


def test_a_call_cannot_be_claimed_before_a_decision(store: ApprovalStore) -> None:
    added(store)
    with pytest.raises(ApprovalConflict, match="waits for a decision"):
        store.claim("apr_1", "me")
    assert store.get("apr_1").state == "pending"


def test_a_claim_moves_a_decided_call_to_applying(store: ApprovalStore) -> None:
    added(store)
    store.decide("apr_1", "approve")
    claim = claimed(store, owner="me")
    assert (claim.owner, claim.recovered) == ("me", False)
    assert (claim.record.state, claim.record.claimed_by) == ("applying", "me")


def test_a_second_claim_within_the_lease_is_a_conflict(
    store: ApprovalStore, clock: FakeClock
) -> None:
    added(store)
    store.decide("apr_1", "approve")
    claimed(store, owner="first")
    clock.advance(599)
    with pytest.raises(ApprovalConflict, match="first"):
        store.claim("apr_1", "second")
    assert store.get("apr_1").claimed_by == "first"


def test_a_claim_past_the_lease_is_recovered(store: ApprovalStore, clock: FakeClock) -> None:
    added(store)
    store.decide("apr_1", "approve")
    claimed(store, owner="dead")
    clock.advance(600)
    claim = claimed(store, owner="heir")
    assert claim.recovered
    assert claim.record.claimed_by == "heir"


def test_the_owner_that_lost_its_lease_cannot_finish(
    store: ApprovalStore, clock: FakeClock
) -> None:
    added(store)
    store.decide("apr_1", "approve")
    stale = claimed(store, owner="slow")
    clock.advance(601)
    claimed(store, owner="heir")
    with pytest.raises(ApprovalConflict):
        store.finish(stale, RESULT)


def test_finish_by_another_owner_is_a_conflict(store: ApprovalStore) -> None:
    added(store)
    store.decide("apr_1", "approve")
    claim = claimed(store, owner="me")
    impostor = Claim(claim.record, "someone else", recovered=False)
    with pytest.raises(ApprovalConflict):
        store.finish(impostor, RESULT)
    assert store.get("apr_1").state == "applying"


def test_finish_records_the_outcome_as_applied(store: ApprovalStore) -> None:
    added(store)
    store.decide("apr_1", "approve")
    record = store.finish(claimed(store), RESULT)
    assert (record.state, record.outcome) == ("applied", RESULT)
    assert store.get("apr_1") == record


def test_finishing_twice_is_a_conflict(store: ApprovalStore) -> None:
    added(store)
    store.decide("apr_1", "approve")
    claim = claimed(store)
    store.finish(claim, RESULT)
    with pytest.raises(ApprovalConflict):
        store.finish(claim, m.tool_result("toolu_0001", "something else"))
    assert store.get("apr_1").outcome == RESULT


def test_a_claim_after_applied_returns_the_recorded_outcome(store: ApprovalStore) -> None:
    added(store)
    store.decide("apr_1", "approve")
    store.finish(claimed(store), RESULT)
    again = store.claim("apr_1", "late")
    assert isinstance(again, Record)
    assert (again.state, again.outcome, again.claimed_by) == ("applied", RESULT, "me")


@pytest.mark.parametrize(("given", "state"), [("approve", "approved"), ("reject", "rejected")])
def test_release_gives_the_call_back_to_its_decision(
    store: ApprovalStore, given: Any, state: str
) -> None:
    added(store)
    store.decide("apr_1", given)
    store.release(claimed(store))
    record = store.get("apr_1")
    assert (record.state, record.claimed_by, record.claimed_at) == (state, None, None)
    assert isinstance(store.claim("apr_1", "next"), Claim)


def test_release_by_another_owner_changes_nothing(store: ApprovalStore) -> None:
    added(store)
    store.decide("apr_1", "approve")
    claim = claimed(store, owner="me")
    store.release(Claim(claim.record, "someone else", recovered=False))
    assert store.get("apr_1").claimed_by == "me"


def test_a_released_recovered_claim_stays_recovered(store: ApprovalStore, clock: FakeClock) -> None:
    added(store)
    store.decide("apr_1", "approve")
    claimed(store, owner="dead")
    clock.advance(601)
    store.release(claimed(store, owner="heir"))
    assert claimed(store, owner="next").recovered


def test_an_approved_call_that_expires_before_its_claim_cannot_be_applied(
    store: ApprovalStore, clock: FakeClock
) -> None:
    added(store, ttl=HOUR)
    store.decide("apr_1", "approve")
    clock.advance(HOUR)
    with pytest.raises(ApprovalExpired):
        store.claim("apr_1", "me")
    assert store.get("apr_1").state == "expired"


def test_a_store_with_a_newer_layout_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "approvals.db"
    with sqlite3.connect(path) as con:
        con.execute("PRAGMA user_version=7")
    with pytest.raises(ApprovalInvalid, match="7"):
        ApprovalStore(path, clock=FakeClock())


def test_a_row_whose_snapshot_is_version_1_is_refused_on_read(
    store: ApprovalStore, tmp_path: Path
) -> None:
    added(store)
    old = payload(version=1)
    con = sqlite3.connect(tmp_path / "approvals.db")
    with con:
        con.execute("UPDATE approvals SET snapshot = ? WHERE id = 'apr_1'", (json.dumps(old),))
    con.close()
    with pytest.raises(ApprovalInvalid, match="version 1"):
        store.get("apr_1")


def test_the_store_runs_in_wal_mode_with_its_layout_version(
    store: ApprovalStore, tmp_path: Path
) -> None:
    con = sqlite3.connect(tmp_path / "approvals.db")
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("PRAGMA user_version").fetchone()[0] == 1
    finally:
        con.close()


def test_reopening_a_store_keeps_its_rows(store: ApprovalStore, tmp_path: Path) -> None:
    made = added(store)
    store.decide("apr_1", "approve")
    again = ApprovalStore(tmp_path / "approvals.db", clock=FakeClock())
    assert (again.get("apr_1").snapshot, again.get("apr_1").state) == (made, "approved")


# -- the command line's prompt --------------------------------------------------------------


@dataclass
class Terminal:
    answer: str
    shown: list[str] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)

    def ask(self, prompt: str) -> str:
        self.asked.append(prompt)
        return self.answer


def test_y_at_the_terminal_approves_and_is_recorded(store: ApprovalStore) -> None:
    added(store)
    terminal = Terminal("y")
    decision = ask_in_terminal(store, "apr_1", ask=terminal.ask, say=terminal.shown.append)
    assert decision.approve
    assert store.get("apr_1").state == "approved"
    assert any("transfer" in line for line in terminal.shown)
    assert any('"bob"' in line for line in terminal.shown)  # the input is shown


def test_n_and_a_note_at_the_terminal_rejects_with_the_note(store: ApprovalStore) -> None:
    added(store)
    terminal = Terminal("n use staging")
    decision = ask_in_terminal(store, "apr_1", ask=terminal.ask, say=terminal.shown.append)
    assert (decision.approve, decision.note) == (False, "use staging")
    record = store.get("apr_1")
    assert record.state == "rejected"
    assert record.decision == decision


# -- a run that stops for a person, and its resume ------------------------------------------


class Pay(BaseModel):
    to: str
    amount: int


class Look(BaseModel):
    text: str


def make_tools(ledger: Path) -> list[Any]:
    """``transfer`` asks for approval (it changes things); ``look`` is read-only. Both write
    a line to ``ledger``, so a test counts what really ran."""

    @tool(Pay)
    def transfer(args: Pay, context: ToolContext) -> str:
        """Send money."""
        with ledger.open("a") as out:
            out.write(f"transfer {args.to} {args.amount}\n")
        return f"sent {args.amount} to {args.to}"

    @tool(Look, read_only=True)
    def look(args: Look, context: ToolContext) -> str:
        """Look something up."""
        with ledger.open("a") as out:
            out.write(f"look {args.text}\n")
        return f"looked at {args.text}"

    return [transfer, look]


PAY_BOB = [
    reply(
        tool_calls=[
            tool_call("look", {"text": "balance"}),
            tool_call("transfer", {"to": "bob", "amount": 100}),
            tool_call("look", {"text": "receipt"}),
        ]
    ),
    reply("Paid bob."),
]


@dataclass
class World:
    """One folder, one clock, one store: what survives between processes."""

    folder: Path
    clock: FakeClock
    store: ApprovalStore
    seeds: Iterator[int] = field(default_factory=lambda: itertools.count(100))

    @property
    def ledger(self) -> list[str]:
        path = self.folder / "ledger.txt"
        return path.read_text().splitlines() if path.exists() else []

    def sessions(self) -> Sessions:
        """A fresh process's view of the sessions (its own uuids, the same folder)."""
        return Sessions.for_workspace(
            self.folder, clock=self.clock, ids=seeded_ids(next(self.seeds))
        )

    def agent(
        self, steps: list[Any], prefix: str, *, gate: bool = True, hooks: Hooks | None = None
    ) -> tuple[Agent, ScriptedModel]:
        model = ScriptedModel(steps, clock=self.clock, id_prefix=prefix)
        agent = Agent(
            model,
            tools=make_tools(self.folder / "ledger.txt"),
            workspace=self.folder,
            clock=self.clock,
            hooks=hooks,
        )
        if gate:
            counter = itertools.count(1)
            ApprovalGate(self.store, ids=lambda: f"apr_{prefix}{next(counter)}").attach(agent)
        return agent, model


@dataclass
class Paused:
    session_id: str
    path: Path
    events: list[Event]
    agent: Agent
    model: ScriptedModel

    @property
    def stop(self) -> AwaitingApproval:
        last = self.events[-1]
        assert isinstance(last, AwaitingApproval)
        return last


@pytest.fixture
def world(tmp_path: Path) -> World:
    clock = FakeClock()
    return World(tmp_path, clock, ApprovalStore(tmp_path / "approvals.db", clock=clock))


def paused_run(world: World, steps: list[Any] = PAY_BOB, prompt: str = "pay bob 100") -> Paused:
    """The first process: a run that stops at the call that needs approval."""
    agent, model = world.agent(steps, "a")
    transcript = world.sessions().new(fsync=False)
    agent.plugins.append(transcript)
    events = list(agent.run(prompt))
    transcript.close()
    return Paused(transcript.session_id, transcript.path, events, agent, model)


def fresh_resume(
    world: World,
    approval_id: str,
    decision: Any,
    steps: list[Any],
    prefix: str,
    **kwargs: Any,
) -> tuple[ApprovalResume, Agent, ScriptedModel, list[Event]]:
    """A fresh process: new model, new agent, new Sessions; resume, then continue the run."""
    agent, model = world.agent(steps, prefix, hooks=kwargs.pop("hooks", None))
    resumed = resume(agent, world.sessions(), world.store, approval_id, decision, **kwargs)
    return resumed, agent, model, list(continue_run(agent, resumed))


def results_on_disk(path: Path) -> dict[str, m.Block]:
    blocks: dict[str, m.Block] = {}
    for message in load(path).messages:
        for block in m.tool_results(message):
            blocks[str(block["tool_use_id"])] = block
    return blocks


def text_of(block: m.Block) -> str:
    content = block.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def test_a_call_that_needs_approval_stops_the_run_with_its_id(world: World) -> None:
    run = paused_run(world)
    assert run.stop.approval_id == "apr_a1"
    assert (run.stop.name, run.stop.input) == ("transfer", {"to": "bob", "amount": 100})
    assert len(run.stop.waiting) == 1
    record = world.store.get("apr_a1")
    assert (record.state, record.snapshot.session_id) == ("pending", run.session_id)
    assert record.snapshot.tool_use_id == run.stop.tool_use_id


def test_calls_before_the_paused_one_ran_once_and_the_rest_did_not(world: World) -> None:
    paused_run(world)
    assert world.ledger == ["look balance"]


def test_no_model_call_is_made_after_the_pause(world: World) -> None:
    run = paused_run(world)
    assert len(run.model.requests) == 1
    assert run.model.remaining == 1


def test_the_paused_conversation_is_valid_and_ends_on_placeholders(world: World) -> None:
    run = paused_run(world)
    assert m.validate(run.agent.messages) == []
    on_disk = load(run.path).messages
    assert m.validate(on_disk) == []
    assert on_disk == run.agent.messages
    results = m.tool_results(on_disk[-1])
    assert [text_of(b) for b in results] == [
        "looked at balance",
        awaiting_approval_text("apr_a1"),
        waiting_text("apr_a1"),
    ]
    assert [bool(b.get("is_error")) for b in results] == [False, True, True]


def test_approving_in_a_fresh_agent_runs_the_call_once_and_continues(world: World) -> None:
    run = paused_run(world)
    resumed, agent, model, _ = fresh_resume(
        world, "apr_a1", Decision(approve=True, by="alice"), [reply("Paid bob.")], "b"
    )
    assert (resumed.applied_now, resumed.ran, resumed.refused, resumed.paused) == (
        True,
        True,
        None,
        None,
    )
    assert resumed.record.state == "applied"
    assert resumed.outcome == m.tool_result(run.stop.tool_use_id, "sent 100 to bob")
    assert world.ledger == ["look balance", "transfer bob 100", "look receipt"]
    assert m.blocks(agent.messages[-1])[0].get("text") == "Paid bob."
    assert len(model.requests) == 1 and model.remaining == 0


def test_approving_replaces_the_placeholders_in_the_transcript(world: World) -> None:
    run = paused_run(world)
    fresh_resume(world, "apr_a1", "approve", [reply("Paid bob.")], "b")
    session = load(run.path)
    assert m.validate(session.messages) == []
    results = results_on_disk(run.path)
    transfer = results[run.stop.tool_use_id]
    assert text_of(transfer) == "sent 100 to bob"
    assert "is_error" not in transfer
    assert text_of(results[run.stop.waiting[0]]) == "looked at receipt"
    assert "is_error" not in results[run.stop.waiting[0]]
    assert m.blocks(session.messages[-1])[0].get("text") == "Paid bob."


def test_a_second_resume_returns_the_recorded_outcome_and_runs_nothing(world: World) -> None:
    paused_run(world)
    first, *_ = fresh_resume(world, "apr_a1", "approve", [reply("Paid bob.")], "b")
    ledger = world.ledger
    for decision in ("approve", "reject", None):
        again, _, model, events = fresh_resume(world, "apr_a1", decision, [], f"c{decision}")
        assert (again.applied_now, again.ran, again.needs_continue) == (False, False, False)
        assert again.outcome == first.outcome
        assert events == [] and model.requests == []
    assert world.ledger == ledger


def test_rejecting_runs_nothing_and_tells_the_model_with_the_note(world: World) -> None:
    run = paused_run(world)
    decision = Decision(approve=False, by="alice", note="use staging")
    resumed, _, model, _ = fresh_resume(world, "apr_a1", decision, [reply("Understood.")], "b")
    assert world.ledger == ["look balance", "look receipt"]  # the later read still runs
    assert not resumed.ran and resumed.applied_now
    assert resumed.outcome == m.tool_result(
        run.stop.tool_use_id, refused_text(decision), is_error=True
    )
    assert "use staging" in refused_text(decision)
    assert refused_text(decision) in json.dumps(model.requests[0].messages)
    assert world.store.get("apr_a1").state == "applied"


def edit_call(path: Path, tool_use_id: str, **changes: Any) -> None:
    """Change one tool_use's input in the JSONL, as someone with the file open might."""
    lines = path.read_text().splitlines()
    edited = []
    for line in lines:
        entry = json.loads(line)
        for block in (entry.get("message") or {}).get("content") or []:
            if isinstance(block, dict) and block.get("id") == tool_use_id:
                block["input"].update(changes)
        edited.append(json.dumps(entry))
    path.write_text("\n".join(edited) + "\n")


def test_an_approval_does_not_apply_to_changed_arguments(world: World) -> None:
    run = paused_run(world)
    edit_call(run.path, run.stop.tool_use_id, amount=1_000_000)
    resumed, _, model, _ = fresh_resume(world, "apr_a1", "approve", [reply("Did not pay.")], "b")
    assert world.ledger == ["look balance", "look receipt"]
    assert not resumed.ran
    assert resumed.refused is not None and "changed" in resumed.refused
    assert resumed.outcome.get("is_error") is True
    assert resumed.refused in json.dumps(model.requests[0].messages)  # the model is told


def test_an_approval_of_another_input_does_not_apply(world: World) -> None:
    """The store's snapshot holds one input, the session's call another: nothing runs."""
    paused_run(world)
    real = world.store.get("apr_a1").snapshot
    other = {"to": "bob", "amount": 1}
    forged = real.model_copy(update={"input": other, "call_hash": call_hash("transfer", other)})
    con = sqlite3.connect(world.store.path)
    with con:
        con.execute(
            "UPDATE approvals SET snapshot = ? WHERE id = 'apr_a1'", (forged.model_dump_json(),)
        )
    con.close()
    resumed, *_ = fresh_resume(world, "apr_a1", "approve", [reply("Did not pay.")], "b")
    assert not resumed.ran
    assert resumed.refused is not None and "changed" in resumed.refused
    assert world.ledger == ["look balance", "look receipt"]


def test_a_hook_that_changes_the_input_at_resume_is_refused(world: World) -> None:
    paused_run(world)
    hooks = Hooks()

    def more(use: ToolUse) -> PreToolUseResult:
        return PreToolUseResult(input={**use.input, "amount": 999})

    hooks.on_pre_tool_use(more, "transfer")
    resumed, _, model, _ = fresh_resume(
        world, "apr_a1", "approve", [reply("Did not pay.")], "b", hooks=hooks
    )
    assert not any(line.startswith("transfer") for line in world.ledger)
    assert resumed.outcome.get("is_error") is True
    assert "approved another input" in text_of(resumed.outcome)
    assert "approved another input" in json.dumps(model.requests[0].messages)


def test_a_hook_changed_call_is_reported_as_not_run(world: World) -> None:
    paused_run(world)
    hooks = Hooks()
    hooks.on_pre_tool_use(lambda use: PreToolUseResult(input={**use.input, "amount": 9}))
    resumed, *_ = fresh_resume(world, "apr_a1", "approve", [reply("ok")], "b", hooks=hooks)
    assert not any(line.startswith("transfer") for line in world.ledger)  # holds today
    assert not resumed.ran
    assert resumed.refused is not None


def test_a_later_call_that_needs_approval_pauses_again_and_resumes(world: World) -> None:
    two = [
        reply(
            tool_calls=[
                tool_call("transfer", {"to": "bob", "amount": 100}),
                tool_call("transfer", {"to": "carol", "amount": 5}),
            ]
        )
    ]
    run = paused_run(world, two, "pay bob and carol")
    assert run.stop.approval_id == "apr_a1"
    first, _, model_b, events_b = fresh_resume(world, "apr_a1", "approve", [], "b")
    assert world.ledger == ["transfer bob 100"]
    assert first.paused is not None and first.paused.approval_id == "apr_b1"
    assert first.paused.name == "transfer" and first.paused.input["to"] == "carol"
    assert not first.needs_continue and events_b == [] and model_b.requests == []
    assert world.store.get("apr_b1").state == "pending"
    results = results_on_disk(run.path)
    assert text_of(results[first.paused.tool_use_id]) == awaiting_approval_text("apr_b1")
    second, _, model_c, _ = fresh_resume(world, "apr_b1", "approve", [reply("Paid both.")], "c")
    assert second.ran and second.paused is None
    assert world.ledger == ["transfer bob 100", "transfer carol 5"]
    assert len(model_c.requests) == 1
    assert m.blocks(load(run.path).messages[-1])[0].get("text") == "Paid both."
    assert m.validate(load(run.path).messages) == []


def test_resuming_after_expiry_says_so_and_runs_nothing(world: World) -> None:
    paused_run(world)
    world.clock.advance(24 * HOUR)
    with pytest.raises(ApprovalExpired):
        fresh_resume(world, "apr_a1", "approve", [reply("late")], "b")
    assert world.ledger == ["look balance"]
    assert world.store.get("apr_a1").state == "expired"


def test_a_recovered_claim_answers_may_have_run_and_runs_nothing(world: World) -> None:
    run = paused_run(world)
    world.store.decide("apr_a1", "approve")
    world.store.claim("apr_a1", owner="dead")  # a resumer that died before finishing
    world.clock.advance(world.store.lease + 1)
    resumed, *_ = fresh_resume(world, "apr_a1", None, [reply("Checking.")], "b")
    assert resumed.outcome == m.tool_result(run.stop.tool_use_id, MAY_HAVE_RUN, is_error=True)
    assert not resumed.ran
    assert world.ledger == ["look balance"]  # neither the transfer nor the later look ran
    later = results_on_disk(run.path)[run.stop.waiting[0]]
    assert text_of(later) == INTERRUPTED
    assert world.store.get("apr_a1").state == "applied"


def test_a_recovered_rejected_claim_tells_the_model_it_was_refused(world: World) -> None:
    run = paused_run(world)
    decision = Decision(approve=False, by="carol", note="wrong account")
    world.store.decide("apr_a1", decision)
    world.store.claim("apr_a1", owner="dead")  # a resumer that died before finishing
    world.clock.advance(world.store.lease + 1)
    resumed, *_ = fresh_resume(world, "apr_a1", None, [reply("Understood.")], "b")
    assert resumed.outcome == m.tool_result(
        run.stop.tool_use_id, refused_text(decision), is_error=True
    )
    assert "may have run" not in text_of(resumed.outcome)
    assert not resumed.ran and world.ledger == ["look balance"]


def test_a_resume_whose_transcript_is_gone_is_invalid_and_keeps_the_decision(
    world: World,
) -> None:
    run = paused_run(world)
    run.path.unlink()
    with pytest.raises(ApprovalInvalid, match="transcript"):
        fresh_resume(world, "apr_a1", "approve", [], "b")
    assert world.store.get("apr_a1").state == "approved"
    assert isinstance(world.store.claim("apr_a1", "later"), Claim)
    assert world.ledger == ["look balance"]


def test_the_gate_without_a_transcript_refuses_the_call_and_the_run_goes_on(
    world: World,
) -> None:
    agent, model = world.agent(PAY_BOB, "a")  # gate attached, no Transcript plugin
    events = list(agent.run("pay bob 100"))
    assert not any(isinstance(e, AwaitingApproval) for e in events)
    assert world.ledger == ["look balance", "look receipt"]
    results = {str(b["tool_use_id"]): b for b in m.tool_results(agent.messages[2])}
    refusal = next(b for b in results.values() if b.get("is_error"))
    assert "transcript" in text_of(refusal)
    assert len(model.requests) == 2  # the model was told and gave its final reply
    assert world.store.pending() == []


def test_the_gate_writes_a_pending_call_bound_to_its_session(world: World) -> None:
    run = paused_run(world)
    record = world.store.get("apr_a1")
    snap = record.snapshot
    assert snap.call_hash == call_hash("transfer", {"to": "bob", "amount": 100})
    assert snap.reply_uuid is not None
    uuids = [getattr(e, "uuid", None) for e in load(run.path).entries]
    assert snap.reply_uuid in uuids
    assert world.store.pending(run.session_id) == [record]
