"""The transcript check: :func:`fsck`, a pure function from a transcript's lines to a
:class:`Report` of what is wrong, by line.

It finds torn and corrupt lines, duplicate uuids, broken and crossed chains, messages whose
role does not fit their entry, tool calls never answered and answers to no call, tool
blocks whose id is not a string, and message entries with nothing to send.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness import messages as m
from harness.transcript.chain import _lane
from harness.transcript.conversation import _emptiness, _usable_blocks
from harness.transcript.entries import ENTRY_TYPES_WITH_MESSAGES, BadLine, Entry, Finding


@dataclass(frozen=True)
class Report:
    """What :func:`fsck` found; empty ``findings`` means the file is sound."""

    findings: list[Finding]
    entries: int
    """Lines looked at."""

    @property
    def ok(self) -> bool:
        return not self.findings

    def kinds(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for finding in self.findings:
            counts[finding.kind] = counts.get(finding.kind, 0) + 1
        return counts

    def __str__(self) -> str:
        if self.ok:
            return f"fsck: {self.entries} lines, no problems"
        lines = [f"fsck: {self.entries} lines, {len(self.findings)} problem(s)"]
        lines += [f"  {f}" for f in self.findings]
        return "\n".join(lines)


def fsck(entries: Sequence[Entry | BadLine]) -> Report:
    """Check a transcript's lines: torn and corrupt lines, duplicate uuids, broken chains,
    messages whose role does not fit their entry, tool calls never answered and answers to
    no call; tool blocks whose id is not a string, message entries with nothing to send. A
    pure function: it reads nothing and changes nothing."""
    findings: list[Finding] = []
    uuids: dict[str, int] = {}
    lanes: dict[str, str | None] = {}
    for entry in entries:
        if isinstance(entry, BadLine):
            kind = "torn line" if entry.torn else "unreadable line"
            findings.append(Finding(entry.line, kind, entry.error))
        elif entry.uuid is not None:
            if entry.uuid in uuids:
                findings.append(
                    Finding(
                        entry.line,
                        "duplicate uuid",
                        f"first on line {uuids[entry.uuid]}",
                        entry.uuid,
                    )
                )
            else:
                uuids[entry.uuid] = entry.line
                lanes[entry.uuid] = _lane(entry)
    readable = [e for e in entries if isinstance(e, Entry)]
    usable: dict[int, list[m.Block]] = {}  # by id(entry)
    for entry in readable:
        parent = entry.parent_uuid
        if entry.uuid is not None and parent and parent not in uuids:
            findings.append(
                Finding(
                    entry.line, "broken chain", f"parent {parent} is not in the file", entry.uuid
                )
            )
        elif entry.uuid is not None and parent and lanes[parent] != _lane(entry):
            findings.append(
                Finding(
                    entry.line,
                    "crossed chains",
                    f"parent {parent} (line {uuids[parent]}) is on another chain "
                    "(the main one and a subagent's, or two subagents')",
                    entry.uuid,
                )
            )
        usable[id(entry)] = _usable_blocks(entry, findings)
        if (
            entry.type in ENTRY_TYPES_WITH_MESSAGES
            and entry.message is not None
            and not usable[id(entry)]
        ):
            findings.append(Finding(entry.line, "empty message", _emptiness(entry), entry.uuid))
        if (
            entry.type in ENTRY_TYPES_WITH_MESSAGES
            and entry.message is not None
            and entry.role != entry.type
        ):
            findings.append(
                Finding(
                    entry.line,
                    "bad role",
                    f"a {entry.type} entry holds a {entry.role!r} message",
                    entry.uuid,
                )
            )
    for group in _groups(readable):
        uses: dict[str, int] = {}
        answers: dict[str, int] = {}
        for entry in group:
            for block in usable[id(entry)]:
                if entry.type == "assistant" and block.get("type") == "tool_use":
                    uses.setdefault(block["id"], entry.line)
                elif entry.type == "user" and block.get("type") == "tool_result":
                    answers.setdefault(block["tool_use_id"], entry.line)
        for use_id, line in uses.items():
            if use_id not in answers:
                findings.append(Finding(line, "orphan tool_use", f"{use_id} is never answered"))
        for use_id, line in answers.items():
            if use_id not in uses:
                findings.append(Finding(line, "orphan tool_result", f"{use_id} answers no call"))
    findings.sort(key=lambda f: f.line)
    return Report(findings, len(entries))


def _groups(entries: Iterable[Entry]) -> list[list[Entry]]:
    """The main chain's entries, then each sidechain's: tool ids pair up within a group."""
    groups: dict[str, list[Entry]] = {}
    for entry in entries:
        key = f"side:{entry.agent_id}" if entry.is_sidechain else "main"
        groups.setdefault(key, []).append(entry)
    return list(groups.values())
