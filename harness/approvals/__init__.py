"""Approvals that wait: a call stops the run until a person decides, hours later if need be.

Chapter 02's approver answers inside the running process: a prompt, a button, a policy. A
real approval (a payment, a deploy, a mail to a customer) can wait for a person for hours,
across restarts. So here the approver writes the call down and the run stops:

* :class:`PendingToolCall` is the snapshot of the call that waits: tool, canonical input,
  a hash of both, where it sits in the session, when it was made and when it expires. It is
  versioned (``version: 2``) and strict: an unknown version, a missing one or an unknown
  field is refused with the reason, never guessed at.
* :class:`ApprovalStore` keeps them in SQLite (WAL), one row per call with its state
  (pending, approved or rejected, applying, applied, or expired). Every transition runs
  under ``BEGIN IMMEDIATE``, SQLite's write lock, so two resumers cannot both claim a call:
  one applies it, the others get its recorded outcome or a conflict.
* :class:`ApprovalGate` is the approver that defers: it writes the pending call and answers
  :class:`~harness.tools.permissions.Deferred`; the tool runner stops the run with an
  :class:`~harness.events.AwaitingApproval` event that carries the approval id.
* :func:`resume` takes an approval id and a decision, in this process or a fresh one: it
  loads the session from its transcript (chapter 08), applies or refuses the call exactly
  once, puts its result where the placeholder was, and lets the run go on. Nothing that ran
  before the stop runs again: its results are in the transcript.

Errors are typed and each says what a person should be shown (see ``errors``).

What is read from disk is checked, never assumed: a store file this code cannot use is
refused as :class:`ApprovalInvalid` naming the file, and a row whose columns contradict its
state is refused naming the row, while the sound rows around it stay usable. (``assert`` is
kept for this package's own invariants: it vanishes under ``python -O``, so it never guards
data.)

The submodules:

* ``errors``: the typed errors and the HTTP status of each.
* ``snapshot``: :class:`PendingToolCall`, :func:`call_hash` and a person's :class:`Decision`.
* ``rows``: the approvals table, and a row read and checked as a :class:`Record`.
* ``store``: :class:`ApprovalStore`, the SQLite store and its transitions.
* ``gate``: :class:`ApprovalGate`, the approver that defers.
* ``resuming``: :func:`resume` and :func:`continue_run`, applying a decision exactly once.
* ``terminal``: :func:`ask_in_terminal`, the command line's inbox.
"""

from __future__ import annotations

from harness.approvals.errors import (
    ApprovalConflict,
    ApprovalError,
    ApprovalExpired,
    ApprovalInvalid,
    ApprovalNotFound,
    ApprovalStoreBusy,
)
from harness.approvals.gate import DEFAULT_TTL, ApprovalGate, new_approval_id
from harness.approvals.resuming import (
    MAY_HAVE_RUN,
    ApprovalApplied,
    ApprovalResume,
    continue_run,
    refused_text,
    resume,
)
from harness.approvals.rows import STATES, Claim, Record, State
from harness.approvals.snapshot import (
    SNAPSHOT_VERSION,
    Decision,
    PendingToolCall,
    call_hash,
    canonical,
    session_id_problem,
)
from harness.approvals.store import APPLY_LEASE, SCHEMA_VERSION, ApprovalStore, new_owner
from harness.approvals.terminal import ask_in_terminal

__all__ = [
    "APPLY_LEASE",
    "DEFAULT_TTL",
    "MAY_HAVE_RUN",
    "SCHEMA_VERSION",
    "SNAPSHOT_VERSION",
    "STATES",
    "ApprovalApplied",
    "ApprovalConflict",
    "ApprovalError",
    "ApprovalExpired",
    "ApprovalGate",
    "ApprovalInvalid",
    "ApprovalNotFound",
    "ApprovalResume",
    "ApprovalStore",
    "ApprovalStoreBusy",
    "Claim",
    "Decision",
    "PendingToolCall",
    "Record",
    "State",
    "ask_in_terminal",
    "call_hash",
    "canonical",
    "continue_run",
    "new_approval_id",
    "new_owner",
    "refused_text",
    "resume",
    "session_id_problem",
]
