"""The approver that defers: it writes the call to the store and the run stops.

:class:`ApprovalGate` answers :class:`~harness.tools.permissions.Deferred`; the tool runner
stops the run with an :class:`~harness.events.AwaitingApproval` event that carries the
approval id, and :func:`~harness.approvals.resuming.resume` applies the decision later.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.approvals.snapshot import PendingToolCall
from harness.approvals.store import ApprovalStore
from harness.loop import BaseAgent
from harness.tools.permissions import ApprovalRequest, Deferred
from harness.transcript import Transcript

DEFAULT_TTL = 24 * 3600.0
"""How long a pending call may wait for its decision, in seconds (our choice: a working day
and a night; the example in an implementation plan for approvals used 5 minutes)."""


def new_approval_id() -> str:
    return f"apr_{uuidlib.uuid4().hex[:20]}"


@dataclass
class ApprovalGate:
    """The approver that asks by writing the call to the store: the run stops, a person
    decides whenever, and :func:`resume` applies it. ``attach(agent)`` makes it the agent's
    approver; the agent needs a :class:`~harness.transcript.Transcript` (resume reads it)."""

    store: ApprovalStore
    ttl: float = DEFAULT_TTL
    ids: Callable[[], str] = new_approval_id
    agent: BaseAgent | None = field(default=None, repr=False)

    def attach(self, agent: BaseAgent) -> ApprovalGate:
        runner = agent.tools
        if not hasattr(runner, "approver"):
            raise TypeError("the agent's tool runner has no approver to replace")
        runner.approver = self
        self.agent = agent
        return self

    def __call__(self, request: ApprovalRequest) -> Deferred:
        transcript = _transcript(self.agent) if self.agent is not None else None
        if transcript is None:  # the runner turns this into a refusal that says why
            raise RuntimeError(
                "a deferred approval needs the session's transcript to resume from; give "
                "the agent a Transcript (chapter 08) and attach the gate to it"
            )
        snapshot = PendingToolCall.of(
            request,
            approval_id=self.ids(),
            session_id=transcript.session_id,
            reply_uuid=transcript.parent,  # the reply's entry: written before tools run
            now=self.store.clock.now(),
            ttl=self.ttl,
        )
        self.store.add(snapshot)
        return Deferred(snapshot.approval_id, request.reason)


def _transcript(agent: BaseAgent) -> Transcript | None:
    return next((p for p in agent.plugins if isinstance(p, Transcript)), None)
