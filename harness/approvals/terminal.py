"""Asking at the terminal: show a pending call, read a person's decision, record it.

The command line's inbox: :func:`ask_in_terminal` prints the call and reads ``y`` or ``n``
with an optional note.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from harness.approvals.snapshot import Decision
from harness.approvals.store import ApprovalStore


def ask_in_terminal(
    store: ApprovalStore,
    approval_id: str,
    *,
    ask: Callable[[str], str] = input,
    say: Callable[[str], None] = print,
    by: str = "you, at the terminal",
) -> Decision:
    """Show a pending call and read a decision (the command line's inbox). ``y`` approves;
    anything else refuses, and what follows a refusal's ``n`` (``n use the staging db``) goes
    to the model as the note. Records the decision in the store and returns it."""
    snapshot = store.get(approval_id).snapshot
    left = snapshot.expires_at.timestamp() - store.clock.now()
    say(f"{snapshot.approval_id}: {snapshot.tool} wants to run ({snapshot.reason})")
    say(json.dumps(snapshot.input, indent=2, ensure_ascii=False))
    say(f"expires in {max(0.0, left) / 60:.0f} min")
    answer = ask("Approve? [y/N, or n and a note] ").strip()
    head, _, note = answer.partition(" ")
    decision = Decision(approve=head.lower() in ("y", "yes"), by=by, note=note.strip())
    store.decide(approval_id, decision)
    return decision
