"""Resuming a stopped run: apply a decided call to its session exactly once, and go on.

:func:`resume` takes an approval id and a decision, in this process or a fresh one: it loads
the session from its transcript (chapter 08), applies or refuses the call exactly once, puts
its result where the placeholder was, and lets the run go on (:func:`continue_run`). Nothing
that ran before the stop runs again: its results are in the transcript.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from harness import messages as m
from harness.approvals.errors import ApprovalInvalid
from harness.approvals.rows import Claim, Record
from harness.approvals.snapshot import Decision, PendingToolCall, call_hash
from harness.approvals.store import ApprovalStore
from harness.events import AwaitingApproval, Event, HookReported, PermissionDecided, _short
from harness.loop import INTERRUPTED, BaseAgent, Rewrite, StopRun
from harness.resume import Sessions
from harness.resume import continue_run as _continue
from harness.resume import resume as resume_session
from harness.tools.dispatch import ToolRunner, awaiting_approval_text, waiting_text
from harness.tools.outputs import output_text
from harness.tools.permissions import Approval, ApprovalRequest, Approver, Deferred
from harness.transcript import Transcript

MAY_HAVE_RUN = (
    "The call was approved and started, but the process applying it stopped before its "
    "result was recorded: it may have run. It is not run again; check before retrying."
)


def refused_text(decision: Decision) -> str:
    """What the model is told of a refused call (Claude Code's wording differs; it also
    asks the model to stop and wait, where this run goes on)."""
    note = f" Their note: {decision.note}" if decision.note else ""
    return f"Not run: {decision.by} refused this call.{note}"


@dataclass(frozen=True)
class ApprovalApplied(Event):
    """A decided call was applied: it ran, or its refusal went to the model."""

    approval_id: str
    name: str
    decision: str
    """``approved`` or ``rejected``, by whom."""
    ran: bool
    outcome: str
    is_error: bool

    def __str__(self) -> str:
        did = "ran" if self.ran else "did not run"
        return (
            f"▶ {self.approval_id} {self.decision}: {self.name} {did} → {_short(self.outcome, 60)}"
        )


@dataclass
class ApprovalResume:
    """What :func:`resume` did."""

    record: Record
    """The approval's row afterwards."""
    outcome: m.Block
    """The ``tool_result`` the model gets (or got) for the call."""
    applied_now: bool
    """This call applied the decision; False: it was applied before, and this is its
    recorded outcome (nothing ran)."""
    ran: bool
    """The tool ran in this call."""
    refused: str | None = None
    """Why an approved call did not run (it changed, or the session went on without it)."""
    events: list[Event] = field(default_factory=list)
    paused: AwaitingApproval | None = None
    """A later call of the same reply now waits for an approval of its own."""

    @property
    def needs_continue(self) -> bool:
        """The conversation ends on the results just given: the run goes on from there."""
        return self.applied_now and self.paused is None and self.refused != _MOVED_ON


_MOVED_ON = "the session went on without this decision; nothing was changed"


def resume(
    agent: BaseAgent,
    sessions: Sessions,
    store: ApprovalStore,
    approval_id: str,
    decision: Decision | Literal["approve", "reject"] | bool | None = None,
    *,
    owner: str | None = None,
) -> ApprovalResume:
    """Apply the decision on ``approval_id`` to its session, exactly once.

    ``decision`` is recorded first (leave it out if a person already decided, in the store's
    inbox). Then the call is claimed under the store's write lock: a call applied before
    returns its recorded outcome and nothing runs; one being applied elsewhere is a conflict.
    The owner loads the session from its transcript into ``agent`` (chapter 08), checks the
    call is still the one approved (same hash), runs it, or answers its refusal, then runs
    the calls that waited behind it (they may stop the run again, for their own approval),
    and puts the results where the placeholders were. Follow with :func:`continue_run`.
    """
    runner = agent.tools
    if not isinstance(runner, ToolRunner):
        raise TypeError("resume needs an agent whose tools run through a ToolRunner")
    record = store.get(approval_id)
    if record.state == "applied":
        return _recorded(record)
    if decision is not None:
        store.decide(approval_id, decision)
    snapshot = record.snapshot
    if not sessions.path(snapshot.session_id).exists():
        raise ApprovalInvalid(
            f"approval {approval_id} belongs to session {snapshot.session_id}, whose "
            "transcript is not in this folder; nothing was applied"
        )
    claim = store.claim(approval_id, owner)
    if isinstance(claim, Record):
        return _recorded(claim)
    try:
        resume_session(agent, sessions, snapshot.session_id)
        spot = _locate(agent.messages, snapshot)
    except BaseException:
        store.release(claim)  # nothing ran: the next resumer may try again
        raise
    if isinstance(spot, str):  # nowhere to put a result: the model never sees one
        outcome = m.tool_result(snapshot.tool_use_id, f"Not run: {spot}.", is_error=True)
        record = store.finish(claim, outcome)
        return ApprovalResume(record, outcome, True, False, refused=spot)
    index, use, later, done = spot
    if done is not None:  # a resumer wrote the result, then stopped before finishing
        return ApprovalResume(store.finish(claim, done), done, True, False)
    decided = claim.record.decision
    assert decided is not None  # claimed, so decided
    results, events, paused, refused = _apply(runner, claim, use, later, decided)
    outcome = results[snapshot.tool_use_id]
    ran = _ran(snapshot.tool_use_id, events)
    if decided.approve and not ran and refused is None and not claim.recovered:
        refused = _why_not_run(snapshot.tool_use_id, events)
    event = ApprovalApplied(
        approval_id,
        snapshot.tool,
        f"{'approved' if decided.approve else 'rejected'} by {decided.by}",
        ran=ran,
        outcome=_text(outcome),
        is_error=bool(outcome.get("is_error")),
    )
    try:  # the results replace the placeholders: a content replacement in the transcript
        new = [dict(message) for message in agent.messages]
        new[index] = {
            "role": "user",
            "content": [results.get(str(b.get("tool_use_id")), b) for b in m.blocks(new[index])],
        }
        agent.apply(Rewrite(new, event))
        for transcript in [p for p in agent.plugins if isinstance(p, Transcript)]:
            transcript.flush(durable=transcript.fsync)
    finally:
        record = store.finish(claim, outcome)  # the call ran: never leave it claimable
    return ApprovalResume(record, outcome, True, event.ran, refused, [*events, event], paused)


def continue_run(agent: BaseAgent, resumed: ApprovalResume) -> Iterator[Event]:
    """Go on with the run once the call is applied (nothing to do if it was applied
    before, or a later call waits for an approval of its own)."""
    yield from _continue(agent, resumed)


def _apply(
    runner: ToolRunner,
    claim: Claim,
    use: m.Block,
    later: list[m.Block],
    decided: Decision,
) -> tuple[dict[str, m.Block], list[Event], AwaitingApproval | None, str | None]:
    """Run (or refuse) the claimed call and the calls that waited behind it."""
    snapshot = claim.record.snapshot
    results: dict[str, m.Block] = {}
    refused: str | None = None
    if claim.recovered:  # its owner may have run it (and the calls after it): never twice
        text = MAY_HAVE_RUN if decided.approve else refused_text(decided)  # refused never runs
        results[snapshot.tool_use_id] = m.tool_result(snapshot.tool_use_id, text, is_error=True)
        for block in later:
            results[str(block["id"])] = m.tool_result(str(block["id"]), INTERRUPTED, is_error=True)
        return results, [], None, None
    calls = list(later)
    if call_hash(str(use.get("name")), use.get("input")) != snapshot.call_hash:
        refused = "the call in the session is not the one approved (its tool or input changed)"
        results[snapshot.tool_use_id] = m.tool_result(
            snapshot.tool_use_id, f"Not run: {refused}.", is_error=True
        )
    elif not decided.approve:
        results[snapshot.tool_use_id] = m.tool_result(
            snapshot.tool_use_id, refused_text(decided), is_error=True
        )
    else:
        calls.insert(0, use)
    events: list[Event] = []
    paused: AwaitingApproval | None = None
    if calls:
        fallback = runner.approver
        runner.approver = _decided(snapshot, decided, fallback)
        try:
            run = runner.run(calls)
            while True:
                events.append(next(run))
        except StopIteration:
            pass
        except StopRun as stop:  # a later call waits for an approval of its own
            paused = stop.event if isinstance(stop.event, AwaitingApproval) else None
            events.append(stop.event)
        finally:
            runner.approver = fallback
        results.update(runner.finished)
    return results, events, paused, refused


def _ran(tool_use_id: str, events: list[Event]) -> bool:
    """Whether the runner let the call run: its permission came out ``allow`` (the tool ran,
    whether or not it then failed)."""
    return any(
        isinstance(e, PermissionDecided) and e.tool_use_id == tool_use_id and e.decision == "allow"
        for e in events
    )


def _why_not_run(tool_use_id: str, events: list[Event]) -> str:
    """Why an approved call did not run after all: a permission denied it now (a deny rule,
    or a PreToolUse hook changed it into another call than the one approved), or a hook
    blocked it."""
    for e in events:
        if isinstance(e, PermissionDecided) and e.tool_use_id == tool_use_id:
            return f"permission denied at resume: {e.reason}"
    blocked = [e.detail for e in events if isinstance(e, HookReported) and e.outcome == "blocked"]
    return f"a PreToolUse hook blocked it: {blocked[0]}" if blocked else "it was refused"


def _decided(snapshot: PendingToolCall, decided: Decision, fallback: Approver) -> Approver:
    """The approver while a decided call runs: its answer for that exact call (checked again
    after the PreToolUse hooks, which may change an input), the usual one for the rest."""

    def approve(request: ApprovalRequest) -> Approval | Deferred | bool:
        if request.tool_use_id != snapshot.tool_use_id:
            return fallback(request)
        if call_hash(request.tool, request.input) != snapshot.call_hash:
            return Approval(False, f"{snapshot.approval_id} approved another input than this")
        return Approval(True, f"approved by {decided.by} ({snapshot.approval_id})")

    return approve


def _locate(
    conversation: list[m.MessageDict], snapshot: PendingToolCall
) -> tuple[int, m.Block, list[m.Block], m.Block | None] | str:
    """Where the call's placeholder is: the index of the results message, the tool_use, the
    calls that wait behind it, and its result if one replaced the placeholder already. Or
    why there is nowhere to apply it."""
    for i, message in enumerate(conversation):
        uses = {str(u.get("id")): u for u in m.tool_uses(message)}
        if snapshot.tool_use_id not in uses:
            continue
        if i + 2 != len(conversation):
            return _MOVED_ON
        results = {str(b.get("tool_use_id")): b for b in m.tool_results(conversation[i + 1])}
        mine = results.get(snapshot.tool_use_id)
        if mine is None:
            return "the call has no result in the session to replace"
        later = [
            uses[use_id]
            for use_id, block in results.items()
            if use_id in uses and _text(block) == waiting_text(snapshot.approval_id)
        ]
        if _text(mine) != awaiting_approval_text(snapshot.approval_id):
            return i + 1, uses[snapshot.tool_use_id], later, mine
        return i + 1, uses[snapshot.tool_use_id], later, None
    return "the call is no longer in the session (compacted or rewound away)"


def _recorded(record: Record) -> ApprovalResume:
    assert record.outcome is not None
    return ApprovalResume(record, record.outcome, applied_now=False, ran=False)


def _text(block: m.Block) -> str:
    """The text of a tool result's content, as the tool runner makes it."""
    return output_text(block.get("content") or "")
