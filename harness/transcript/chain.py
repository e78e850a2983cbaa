"""The walk from a leaf back to its root: the entries of one branch of the tree, oldest
first.

Each entry has a lane (the main chain, or one subagent's sidechain) and the walk stays on
its leaf's. A missing parent is bridged by the entry written before the child, and said so;
a cycle, or a compact summary whose boundary is lost, ends the walk.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.transcript.entries import Entry, Finding


def _walk(leaf: Entry, by_uuid: Mapping[str, Entry], findings: list[Finding]) -> list[Entry]:
    """The entries from ``leaf`` back up its ``parentUuid`` links, oldest first.

    The walk stays on the leaf's lane (the main chain, or one sidechain). Where a parent is
    missing (its line was lost or is unreadable) or on another lane, it goes on at the entry
    of the lane written just before the child, and says so in a ``reconnected`` finding: a
    lost line costs what was on it, not everything before it. It stops at an entry with no
    parent (a root, a compact boundary), at a compact summary whose boundary is lost (what
    came before it was compacted away on purpose), and where a parent link loops back.
    """
    chain: list[Entry] = []
    seen: set[str] = set()
    lane_of_leaf = _lane(leaf)
    lane: list[Entry] = []
    place: dict[str, int] | None = None  # built at the first broken link only
    current: Entry | None = leaf
    while current is not None:
        assert current.uuid is not None
        if current.uuid in seen:
            findings.append(Finding(current.line, "cycle", "parentUuid loops back", current.uuid))
            break
        seen.add(current.uuid)
        chain.append(current)
        parent = current.parent_uuid
        if parent is None:
            break
        found = by_uuid.get(parent)
        if found is not None and _lane(found) == lane_of_leaf:
            current = found
            continue
        child, current = current, None
        why = f"parent {parent} " + (
            "is not in the file"
            if found is None
            else f"is on line {found.line}, an entry of another chain (a subagent's)"
            if found.is_sidechain
            else f"is on line {found.line}, an entry of the main chain"
        )
        if child.is_compact_summary:
            findings.append(
                Finding(
                    child.line, "broken chain", f"{why}; it starts the conversation", child.uuid
                )
            )
            break
        if place is None:
            lane = [e for e in by_uuid.values() if _lane(e) == lane_of_leaf]
            place = {str(e.uuid): k for k, e in enumerate(lane)}
        k = place[child.uuid]  # type: ignore[index]
        before = lane[k - 1] if k > 0 else None
        if before is None or before.uuid in seen:
            findings.append(Finding(child.line, "broken chain", why, child.uuid))
            break
        gap = child.line - before.line - 1
        bridged = (
            "no line between them"
            if gap < 1
            else f"line {before.line + 1} bridged"
            if gap == 1
            else f"lines {before.line + 1}-{child.line - 1} bridged"
        )
        findings.append(
            Finding(
                child.line,
                "reconnected",
                f"{why}: goes on from line {before.line}, the entry written before ({bridged})",
                child.uuid,
            )
        )
        current = before
    chain.reverse()
    return chain


def _lane(entry: Entry) -> str | None:
    """The chain an entry is on: ``None`` for the main one, else its subagent's id."""
    return (entry.agent_id or "sidechain") if entry.is_sidechain else None
