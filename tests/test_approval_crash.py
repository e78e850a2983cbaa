"""A resumer killed with SIGKILL at exact points, then resumed again: the call runs at most
once, and the session always loads and goes on to its end.

The session of ``tests/approval_session.py`` stops because ``transfer`` waits for a person.
A forked child resumes it with "approve"; a patch inside the child (a wrapped store method,
or the tool's ``after_write``) writes the point's name to a pipe and blocks there, and the
parent kills it with SIGKILL. The points:

* ``decided``: the decision is in the store, nothing is claimed. The decision survives; a
  fresh resume applies the call once (ledger: 1 line) and the run goes on.
* ``claimed``: claimed, the tool has not run (ledger: 0 lines).
* ``ledger``: inside the tool, right after its ledger line (ledger: 1 line).
* ``written``: the real result replaced the placeholder in the transcript, ``finish`` not
  yet called (ledger: 1 line).

After the last three the row stays ``applying``. With the real clock a resume right after
is a conflict: the dead owner's lease (10 minutes) still holds. With the store's clock past
the lease, the next resume takes the claim over and never runs the tool: the model is told
:data:`~harness.approvals.MAY_HAVE_RUN`, unless the result was already in the transcript,
which is then kept. Run with ``-s`` to see the kills.
"""

from __future__ import annotations

import os
import select
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from harness import messages as m
from harness.approvals import (
    APPLY_LEASE,
    MAY_HAVE_RUN,
    ApprovalConflict,
    ApprovalStore,
)
from harness.clock import FakeClock
from harness.loop import INTERRUPTED
from tests.approval_session import (
    FINAL,
    SENT,
    Paused,
    fork_context,
    pause,
    result_for,
    resumer,
)

WAIT = 120.0
"""Seconds a child may take to reach its point (never reached unless something hangs)."""

POINTS = {
    "decided": "after decide(approve), before the claim",
    "claimed": "after the claim, before the tool runs",
    "ledger": "inside the tool, after its ledger write",
    "written": "after the result replaced the placeholder in the transcript, before finish",
}


def _stop_in_child(
    paused: Paused, point: str, prefix: str, clock: FakeClock | None, pipe: int
) -> None:
    """The child: resume with "approve", and stop for good at ``point``."""

    def stop() -> None:
        os.write(pipe, point.encode())
        while True:  # until the SIGKILL
            time.sleep(3600)

    def before(method: Any) -> Any:
        def patched(self: ApprovalStore, *args: Any, **kwargs: Any) -> Any:
            stop()
            return method(self, *args, **kwargs)

        return patched

    def after(method: Any) -> Any:
        def patched(self: ApprovalStore, *args: Any, **kwargs: Any) -> Any:
            result = method(self, *args, **kwargs)
            stop()
            return result

        return patched

    try:  # this process's copy of the class: the parent's is untouched
        if point == "decided":
            ApprovalStore.claim = before(ApprovalStore.claim)  # type: ignore[method-assign]
        elif point == "claimed":
            ApprovalStore.claim = after(ApprovalStore.claim)  # type: ignore[method-assign]
        elif point == "written":
            ApprovalStore.finish = before(ApprovalStore.finish)  # type: ignore[method-assign]
        who = resumer(
            paused, prefix, store_clock=clock, after_write=stop if point == "ledger" else None
        )
        resumed = who.resume(paused)
        who.finish_run(resumed)
        os.write(pipe, b"finished without stopping")
    except BaseException as error:
        os.write(pipe, f"error {type(error).__name__}: {error}".encode())
    os._exit(3)


KILLS: list[str] = []


def kill_at(paused: Paused, point: str, prefix: str, clock: FakeClock | None = None) -> None:
    """Fork a resumer, wait until it reports ``point``, SIGKILL it."""
    read, write = os.pipe()
    child = fork_context().Process(
        target=_stop_in_child, args=(paused, point, prefix, clock, write)
    )
    child.start()
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], WAIT)
        said = os.read(read, 4096).decode() if ready else "(nothing: timed out)"
    finally:
        os.close(read)
    assert child.pid is not None
    if child.is_alive():
        os.kill(child.pid, signal.SIGKILL)
    child.join(WAIT)
    assert said == point, f"the child did not stop {POINTS[point]}: {said}"
    assert child.exitcode == -signal.SIGKILL
    KILLS.append(point)


def later_call(paused: Paused) -> str:
    (use_id,) = paused.event.waiting
    return use_id


def valid_transcript(paused: Paused) -> list[m.MessageDict]:
    conversation = paused.transcript()
    assert m.validate(conversation) == []
    return conversation


def past_the_lease(leases: int = 1) -> FakeClock:
    """A store clock that reads now plus more than ``leases`` leases."""
    return FakeClock(time.time() + leases * APPLY_LEASE + 60)


def test_a_resumer_killed_between_decision_and_apply_leaves_a_decision_that_applies_once(
    tmp_path: Path,
) -> None:
    paused = pause(tmp_path)
    kill_at(paused, "decided", "k1")

    record = ApprovalStore(paused.store_path).get(paused.approval_id)
    assert record.state == "approved" and record.decision is not None  # it survived the kill
    assert paused.ledger == []
    valid_transcript(paused)

    fresh = resumer(paused, "z1")
    resumed = fresh.resume(paused, decision=None)  # the person decided already
    assert resumed.applied_now and resumed.ran and resumed.outcome["content"] == SENT
    fresh.finish_run(resumed)
    assert len(paused.ledger) == 1
    assert paused.looks == ["balance", "balance after"]
    conversation = valid_transcript(paused)
    assert m.text_of(conversation[-1]) == FINAL
    assert result_for(conversation, paused.event.tool_use_id)["content"] == SENT

    again = resumer(paused, "z2").resume(paused)
    assert not again.applied_now and not again.ran and again.outcome == resumed.outcome
    assert len(paused.ledger) == 1
    print(f"\nkilled {POINTS['decided']}: ledger {len(paused.ledger)} line after the resume")


EXPECTED = {  # point: (ledger lines, what the model is told of the transfer, of the later look)
    "claimed": (0, MAY_HAVE_RUN, INTERRUPTED),
    "ledger": (1, MAY_HAVE_RUN, INTERRUPTED),
    "written": (1, SENT, "looked at balance after"),
}


@pytest.mark.parametrize("point", list(EXPECTED))
def test_a_resumer_killed_while_applying_holds_its_lease_then_is_taken_over_without_a_rerun(
    tmp_path: Path, point: str
) -> None:
    lines, told, later = EXPECTED[point]
    paused = pause(tmp_path)
    kill_at(paused, point, "k1")
    assert len(paused.ledger) == lines
    assert ApprovalStore(paused.store_path).get(paused.approval_id).state == "applying"
    valid_transcript(paused)

    with pytest.raises(ApprovalConflict, match="being applied by another resumer"):
        resumer(paused, "z1").resume(paused)  # the real clock: the lease still holds
    assert len(paused.ledger) == lines

    late = resumer(paused, "z2", store_clock=past_the_lease())
    resumed = late.resume(paused)
    assert resumed.applied_now and not resumed.ran
    assert resumed.outcome["content"] == told
    assert resumed.outcome.get("is_error", False) == (told != SENT)
    late.finish_run(resumed)

    assert len(paused.ledger) == lines  # never ran again
    conversation = valid_transcript(paused)
    assert result_for(conversation, paused.event.tool_use_id) == resumed.outcome
    assert result_for(conversation, later_call(paused))["content"] == later
    assert m.text_of(conversation[-1]) == FINAL
    record = ApprovalStore(paused.store_path).get(paused.approval_id)
    assert record.state == "applied" and record.outcome == resumed.outcome

    again = resumer(paused, "z3").resume(paused)
    assert not again.applied_now and again.outcome == resumed.outcome
    print(f"\nkilled {POINTS[point]}: ledger {lines}, the model is told {told[:40]!r}")


def test_a_taking_over_resumer_killed_before_finishing_is_taken_over_again_and_nothing_runs(
    tmp_path: Path,
) -> None:
    paused = pause(tmp_path)
    kill_at(paused, "claimed", "k1")  # the first owner dies before the tool runs
    kill_at(paused, "written", "k2", clock=past_the_lease(1))  # its successor, before finish
    assert paused.ledger == []
    on_disk = result_for(valid_transcript(paused), paused.event.tool_use_id)
    assert on_disk["content"] == MAY_HAVE_RUN  # the successor's answer reached the transcript

    last = resumer(paused, "z1", store_clock=past_the_lease(3))
    resumed = last.resume(paused)
    assert resumed.applied_now and not resumed.ran and resumed.outcome == on_disk
    last.finish_run(resumed)
    conversation = valid_transcript(paused)
    assert m.text_of(conversation[-1]) == FINAL
    assert paused.ledger == [] and paused.looks == ["balance"]
    print(f"\n{len(KILLS)} kills so far in this process: {', '.join(KILLS)}")
