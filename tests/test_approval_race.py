"""Sixteen resumers, one approval: the call runs exactly once.

The session of ``tests/approval_session.py`` stops because ``transfer`` waits for a
person. Then 16 threads, and in another test 16 forked processes, each a fresh agent with
its own store object on the same SQLite file, resume it with "approve" at the same moment
(a barrier). The store's ``BEGIN IMMEDIATE`` claim lets exactly one of them run the call;
every other one gets the recorded outcome (the winner had finished) or a conflict (the
winner was still applying it). The ledger the tool appends to says how often it really ran.

The last two tests race ``ApprovalStore.claim`` itself, with no agent around it.

Nothing here asserts a time: on a busy machine the split between "recorded" and "conflict"
changes, never the number of winners. Run with ``-s`` to see the split.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

from harness import messages as m
from harness.approvals import ApprovalConflict, ApprovalResume, ApprovalStore, Claim
from harness.events import Event
from tests.approval_session import (
    FINAL,
    SENT,
    Paused,
    fork_context,
    pause,
    result_for,
    resumer,
    try_resume,
)

RACERS = 16
WAIT = 120.0
"""Seconds a barrier or a child may take before the test gives up (never reached unless
something hangs; a loaded 2-core machine needs well under one)."""


def check_applied_once(paused: Paused, outcomes: Counter[str]) -> None:
    """One winner; the ledger, the looks file and the transcript agree with one run."""
    assert set(outcomes) <= {"applied", "recorded", "conflict"}, outcomes
    assert sum(outcomes.values()) == RACERS
    assert outcomes["applied"] == 1, outcomes
    assert len(paused.ledger) == 1, paused.ledger
    assert paused.looks == ["balance", "balance after"]  # before: once; after: once, on resume
    conversation = paused.transcript()
    assert m.validate(conversation) == []
    result = result_for(conversation, paused.event.tool_use_id)
    assert result["content"] == SENT and not result.get("is_error")
    record = ApprovalStore(paused.store_path).get(paused.approval_id)
    assert record.state == "applied" and record.outcome == result


def test_sixteen_threads_resuming_one_approval_run_the_call_once(tmp_path: Path) -> None:
    paused = pause(tmp_path)
    racers = [resumer(paused, f"t{i:02d}") for i in range(RACERS)]
    barrier = threading.Barrier(RACERS, timeout=WAIT)
    seen: dict[int, tuple[str, ApprovalResume | None]] = {}
    errors: list[BaseException] = []

    def go(i: int) -> None:
        try:
            barrier.wait()
            seen[i] = try_resume(racers[i], paused)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert errors == [] and not any(t.is_alive() for t in threads)

    outcomes = Counter(outcome for outcome, _ in seen.values())
    check_applied_once(paused, outcomes)
    first = next(i for i, (outcome, _) in seen.items() if outcome == "applied")
    winner = seen[first][1]
    assert winner is not None
    for outcome, resumed in seen.values():  # a loser that saw the row applied got the same result
        if outcome == "recorded":
            assert resumed is not None and resumed.outcome == winner.outcome
    print(f"\n16 threads: {dict(outcomes)}")

    # the winner's agent goes on with the run; the session ends on the model's reply
    events: list[Event] = racers[first].finish_run(winner)
    assert events, "the run did not go on"
    conversation = paused.transcript()
    assert m.validate(conversation) == [] and m.text_of(conversation[-1]) == FINAL
    assert len(paused.ledger) == 1


def _resume_in_child(paused: Paused, prefix: str, barrier: Any, out: Any) -> None:
    try:
        racer = resumer(paused, prefix)
        barrier.wait()
        outcome, _ = try_resume(racer, paused)
        out.put(outcome)
    except BaseException as error:  # reported, so the parent can show it
        out.put(f"error {type(error).__name__}: {error}")


def run_children(target: Any, args: list[tuple[Any, ...]]) -> list[str]:
    """Fork one child per ``args`` (each also gets the barrier and the queue); what each
    put on the queue."""
    context = fork_context()
    barrier = context.Barrier(len(args), timeout=WAIT)
    out = context.SimpleQueue()
    children = [context.Process(target=target, args=(*a, barrier, out)) for a in args]
    for child in children:
        child.start()
    for child in children:
        child.join(WAIT)
    hung = [c for c in children if c.is_alive()]
    for child in hung:
        child.kill()
        child.join()
    assert hung == [], f"{len(hung)} children hung"
    assert [c.exitcode for c in children] == [0] * len(children)
    reports = []
    while not out.empty():
        reports.append(out.get())
    out.close()
    return reports


def test_sixteen_processes_resuming_one_approval_run_the_call_once(tmp_path: Path) -> None:
    paused = pause(tmp_path)
    reports = run_children(_resume_in_child, [(paused, f"p{i:02d}") for i in range(RACERS)])
    assert [r for r in reports if r.startswith("error")] == []
    outcomes = Counter(reports)
    check_applied_once(paused, outcomes)
    print(f"\n16 processes: {dict(outcomes)}")


# -- the store alone ------------------------------------------------------------------------


def claim_or_not(path: Path, approval_id: str, tool_use_id: str, owner: str) -> str:
    """Claim; a winner finishes at once with an outcome that names it."""
    store = ApprovalStore(path, busy_timeout=60.0)
    try:
        got = store.claim(approval_id, owner)
    except ApprovalConflict:
        return "conflict"
    if isinstance(got, Claim):
        assert not got.recovered
        store.finish(got, m.tool_result(tool_use_id, f"applied by {owner}"))
        return "claim"
    assert got.outcome is not None
    return f"recorded {got.outcome['content']}"


def approved(tmp_path: Path) -> Paused:
    paused = pause(tmp_path)
    ApprovalStore(paused.store_path).decide(paused.approval_id, "approve")
    return paused


def check_one_claim(paused: Paused, reports: list[str]) -> Counter[str]:
    assert len(reports) == RACERS
    kinds = Counter(r.split()[0] for r in reports)
    assert kinds["claim"] == 1 and set(kinds) <= {"claim", "recorded", "conflict"}, reports
    record = ApprovalStore(paused.store_path).get(paused.approval_id)
    assert record.state == "applied" and record.outcome is not None
    winner = str(record.outcome["content"])
    assert {r.removeprefix("recorded ") for r in reports if r.startswith("recorded")} <= {winner}
    return kinds


def test_sixteen_threads_claiming_one_approved_call_get_one_claim(tmp_path: Path) -> None:
    paused = approved(tmp_path)
    barrier = threading.Barrier(RACERS, timeout=WAIT)
    reports: list[str] = []

    def go(i: int) -> None:
        barrier.wait()
        reports.append(
            claim_or_not(paused.store_path, paused.approval_id, paused.event.tool_use_id, f"t{i}")
        )

    threads = [threading.Thread(target=go, args=(i,)) for i in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    kinds = check_one_claim(paused, reports)
    print(f"\nstore claim, 16 threads: {dict(kinds)}")


def _claim_in_child(paused: Paused, owner: str, barrier: Any, out: Any) -> None:
    try:
        store_path, approval_id = paused.store_path, paused.approval_id
        barrier.wait()
        out.put(claim_or_not(store_path, approval_id, paused.event.tool_use_id, owner))
    except BaseException as error:
        out.put(f"error {type(error).__name__}: {error}")


def test_sixteen_processes_claiming_one_approved_call_get_one_claim(tmp_path: Path) -> None:
    paused = approved(tmp_path)
    reports = run_children(_claim_in_child, [(paused, f"p{i}") for i in range(RACERS)])
    assert [r for r in reports if r.startswith("error")] == []
    kinds = check_one_claim(paused, reports)
    print(f"\nstore claim, 16 processes: {dict(kinds)}")
