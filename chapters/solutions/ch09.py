"""Chapter 09: approvals, interrupt and resume."""

from __future__ import annotations

import hashlib
import json

from harness import messages as m
from harness.approvals import PendingToolCall


def decide_rule(
    state: str, expired: bool, approve: bool, recorded: bool | None
) -> tuple[str, int | None]:
    """Exercise 1: the state a row ends in when a person answers, and the error's status."""
    if state == "pending":
        if expired:
            return "expired", 410  # marked expired, and the person is told
        return ("approved" if approve else "rejected"), None
    if state == "expired":
        return "expired", 410
    if recorded == approve:  # the same answer again (a double click): nothing changes
        return state, None
    return state, 409  # decided the other way already


def bound(snapshot: PendingToolCall, use: m.Block) -> bool:
    """Exercise 2: whether ``use`` is the exact call the approval was given for."""
    text = json.dumps(use.get("input"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(f"{use.get('name')}\n{text}".encode()).hexdigest()
    return use.get("id") == snapshot.tool_use_id and digest == snapshot.call_hash
