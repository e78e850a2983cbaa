"""Chapter 09's notebook helpers: the inbox records decisions from clicks (no thread running),
shows conflicts and expiry as messages; the broken versions fail the way the chapter says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.agent import Agent
from harness.approvals import (
    ApprovalGate,
    ApprovalStore,
    Decision,
    PendingToolCall,
    Record,
    resume,
)
from harness.clock import FakeClock
from harness.model import ScriptedModel, reply, tool_call
from harness.notebook.inbox import (
    ApprovalInbox,
    ApprovedByName,
    Timeline,
    ledger_lines,
    naive_resume,
    payment_tools,
    plot_states,
    plot_timeline,
    state_table,
    time_left,
)
from harness.resume import Sessions
from harness.resume import continue_run as continue_session
from harness.resume import resume as resume_session
from harness.tools.permissions import Approval, ApprovalRequest, Permissions
from harness.transcript import seeded_ids

DAY = 24 * 3600.0


def pending(store: ApprovalStore, n: int, amount: int = 100) -> str:
    request = ApprovalRequest(f"toolu_{n:04d}", "transfer", {"to": "bob", "amount": amount}, "asks")
    snapshot = PendingToolCall.of(
        request,
        approval_id=f"apr_{n}",
        session_id="session-1",
        reply_uuid=None,
        now=store.clock.now(),
        ttl=DAY,
    )
    return store.add(snapshot).approval_id


@pytest.fixture
def store(tmp_path: Path) -> ApprovalStore:
    return ApprovalStore(tmp_path / "approvals.db", clock=FakeClock())


def test_the_inbox_lists_each_pending_call_with_its_input_and_time_left(
    store: ApprovalStore,
) -> None:
    pending(store, 1)
    pending(store, 2, amount=250)
    store.clock.advance(3600)  # type: ignore[attr-defined]

    inbox = ApprovalInbox(store)

    assert list(inbox.cards) == ["apr_1", "apr_2"]
    header = inbox.cards["apr_2"].box.children[0].value
    assert "transfer" in header and "250" in header
    assert "apr_2 · session session- · 23 h 0 min left" in header
    assert "2 calls wait" in inbox.panel.children[0].value


def test_a_click_records_the_decision_and_calls_on_decided(store: ApprovalStore) -> None:
    pending(store, 1)
    seen: list[Record] = []
    inbox = ApprovalInbox(store, on_decided=seen.append, by="alice")

    card = inbox.cards["apr_1"]
    card.note.value = "invoice checked"
    card.approve.click()

    record = store.get("apr_1")
    assert record.state == "approved"
    assert record.decision == Decision(approve=True, by="alice", note="invoice checked")
    assert [r.approval_id for r in seen] == ["apr_1"]
    assert inbox.status("apr_1").startswith("✓ approved: by alice (note: invoice checked)")
    assert card.approve.disabled and card.deny.disabled


def test_what_on_decided_returns_is_shown(store: ApprovalStore) -> None:
    pending(store, 1)
    inbox = ApprovalInbox(store, on_decided=lambda record: "resumed: sent 100 to bob")

    status = inbox.answer("apr_1", False, note="not this week")

    assert store.get("apr_1").state == "rejected"
    assert store.get("apr_1").decision == Decision(
        approve=False, by="you, in the notebook", note="not this week"
    )
    assert status.endswith("→ resumed: sent 100 to bob")


def test_a_decision_recorded_elsewhere_meanwhile_is_shown_as_a_conflict(
    store: ApprovalStore,
) -> None:
    pending(store, 1)
    seen: list[Record] = []
    inbox = ApprovalInbox(store, on_decided=seen.append)
    store.decide("apr_1", Decision(approve=False, by="bob"))  # from another inbox

    status = inbox.answer("apr_1", True)

    assert status.startswith("✗ not recorded: 409 conflict: approval apr_1 is rejected by bob")
    assert store.get("apr_1").state == "rejected"
    assert seen == []
    assert inbox.cards["apr_1"].approve.disabled


def test_the_same_answer_given_elsewhere_first_changes_nothing(store: ApprovalStore) -> None:
    pending(store, 1)
    seen: list[Record] = []
    inbox = ApprovalInbox(store, on_decided=seen.append)
    store.decide("apr_1", Decision(approve=True, by="bob"))

    status = inbox.answer("apr_1", True)

    assert status == "= approved already: by bob; nothing changed"
    assert store.get("apr_1").decision == Decision(approve=True, by="bob")
    assert seen == []


def test_a_call_whose_time_ran_out_is_shown_as_expired(store: ApprovalStore) -> None:
    pending(store, 1)
    inbox = ApprovalInbox(store)
    store.clock.advance(DAY + 1)  # type: ignore[attr-defined]

    status = inbox.answer("apr_1", True)

    assert status.startswith("✗ not recorded: 410 expired: approval apr_1 expired at")
    assert store.get("apr_1").state == "expired"
    inbox.refresh()
    assert inbox.cards == {}
    assert "0 calls wait" in inbox.panel.children[0].value


def test_a_failing_on_decided_is_a_message_and_the_decision_stands(store: ApprovalStore) -> None:
    pending(store, 1)

    def broken(record: Record) -> None:
        raise RuntimeError("the transcript is gone")

    status = ApprovalInbox(store, on_decided=broken).answer("apr_1", True)

    assert status == "decided, but resuming failed: RuntimeError: the transcript is gone"
    assert store.get("apr_1").state == "approved"


def test_refresh_drops_decided_calls_and_shows_new_ones(store: ApprovalStore) -> None:
    pending(store, 1)
    inbox = ApprovalInbox(store)
    inbox.answer("apr_1", True)
    pending(store, 2)

    inbox.refresh()

    assert list(inbox.cards) == ["apr_2"]
    assert "1 call waits" in inbox.panel.children[0].value


def test_the_inbox_shows_as_a_widget_with_a_text_summary(store: ApprovalStore) -> None:
    pending(store, 1)
    inbox = ApprovalInbox(store)

    bundle = inbox._repr_mimebundle_()

    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"].splitlines() == [
        "Approval inbox: 1 call(s) listed",
        "  apr_1: waiting for a decision (the run stopped; nothing runs until you decide)",
    ]


def test_time_left_reads_in_hours_and_minutes() -> None:
    assert time_left(DAY) == "24 h 0 min left"
    assert time_left(59 * 60 + 30) == "59 min left"
    assert time_left(0) == "expired"


# -- the broken versions, and the pictures ----------------------------------------------------


def shop(tmp_path: Path, steps: list[Any], prefix: str, approver: Any) -> Agent:
    return Agent(
        ScriptedModel(steps, clock=FakeClock(), id_prefix=prefix),
        tools=payment_tools(tmp_path / "ledger.txt"),
        workspace=tmp_path,
        clock=FakeClock(),
        permissions=Permissions.from_rules(allow=["refund"]),
        approver=approver,
    )


PAY = [
    reply(
        tool_calls=[
            tool_call("refund", order="order-7", amount=20),
            tool_call("transfer", to="bob", amount=100),
        ]
    ),
    reply("Done."),
]


def stopped_run(tmp_path: Path) -> tuple[Sessions, ApprovalStore, str]:
    clock = FakeClock()
    sessions = Sessions(tmp_path / ".harness", Path("/srv/shop"), clock, seeded_ids(1))
    store = ApprovalStore(tmp_path / "approvals.db", clock=clock)
    agent = shop(tmp_path, PAY, "", None)
    transcript = sessions.new(fsync=False)
    agent.plugins.append(transcript)
    ApprovalGate(store, ids=lambda: "apr_1").attach(agent)
    list(agent.run("Refund order 7 and pay Bob."))
    transcript.close()
    return sessions, store, transcript.session_id


def test_naive_resume_runs_the_call_before_the_stop_a_second_time(tmp_path: Path) -> None:
    sessions, _, session_id = stopped_run(tmp_path)
    assert ledger_lines(tmp_path / "ledger.txt") == ["refund order-7 20"]

    naive_resume(shop(tmp_path, [], "b", lambda r: Approval(True, "yes")), sessions, session_id)

    assert ledger_lines(tmp_path / "ledger.txt") == [
        "refund order-7 20",
        "refund order-7 20",
        "transfer bob 100",
    ]


def test_the_real_resume_runs_only_the_approved_call(tmp_path: Path) -> None:
    sessions, store, _ = stopped_run(tmp_path)

    resume(shop(tmp_path, [], "b", None), sessions, store, "apr_1", "approve")

    assert ledger_lines(tmp_path / "ledger.txt") == ["refund order-7 20", "transfer bob 100"]


def test_approvals_by_tool_name_let_a_changed_call_through(tmp_path: Path) -> None:
    by_name = ApprovedByName()
    clock = FakeClock()
    sessions = Sessions(tmp_path / ".harness", Path("/srv/shop"), clock, seeded_ids(2))
    first = shop(
        tmp_path, [reply(tool_calls=[tool_call("transfer", to="bob", amount=100)])], "", by_name
    )
    transcript = sessions.new(fsync=False)
    first.plugins.append(transcript)
    assert "awaiting approval transfer" in str(list(first.run("Pay Bob."))[-1])
    transcript.close()
    by_name.approved.add("transfer")  # a person saw amount 100, and said yes

    later = [reply(tool_calls=[tool_call("transfer", to="bob", amount=10000)]), reply("Paid.")]
    second = shop(tmp_path, later, "b", by_name)
    list(continue_session(second, resume_session(second, sessions, transcript.session_id)))

    assert ledger_lines(tmp_path / "ledger.txt") == ["transfer bob 10000"]


def test_the_pictures_show_every_row(tmp_path: Path, store: ApprovalStore) -> None:
    for n in (1, 2, 3):
        pending(store, n)
    store.decide("apr_1", "approve")
    store.decide("apr_2", "reject")

    text = str(state_table(store))
    figure = plot_states(store)
    timeline = Timeline(store.clock)
    timeline.mark("process 1", "stops")
    store.clock.advance(3 * 3600)  # type: ignore[attr-defined]
    timeline.mark("process 2", "resumes")

    rows = text.splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["apr_1", "apr_2", "apr_3"]
    assert [" approved " in rows[0], " rejected " in rows[1], " pending" in rows[2]] == [True] * 3
    labels = {t.get_text() for t in figure.axes[0].texts}
    assert {"apr_1", "apr_2", "apr_3"} <= labels
    assert plot_timeline(timeline).axes[0].get_xlim()[1] > 3
