"""The loader: a transcript file read into a :class:`Session`, its main conversation and
what was skipped on the way.

:func:`load` reads Claude Code's own files as well as ours: unknown entry types and fields
pass, a torn or corrupt line is reported and skipped, a reply written one entry per content
block is merged back by ``message.id``, parallel tool results that hang off the chain as
side branches are found by their ``tool_use_id``, branches from rewinds resolve to the
newest leaf, sidechains (subagents) are kept apart. A large file is read from its last
compact boundary only. :func:`from_entries` does the work on lines already parsed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import messages as m
from harness.transcript.chain import _walk
from harness.transcript.conversation import _conversation
from harness.transcript.entries import ENTRY_TYPES_WITH_MESSAGES, BadLine, Entry, Finding
from harness.transcript.reading import _regular_file, last_boundary_offset, read_entries

FAST_PATH_BYTES = 5 * 1024 * 1024
"""Files larger than this are read from their last compact boundary only. Claude Code's
threshold is 5 MB (``SKIP_PRECOMPACT_THRESHOLD``, observed in its source; see the sources
page, ``chapters/sources.md``)."""


@dataclass
class Session:
    """A loaded transcript: its entries, its conversation, and what the loader reported."""

    path: Path | None
    entries: list[Entry | BadLine]
    """Every line read (after the last boundary, on the fast path)."""
    messages: list[m.MessageDict]
    """The main conversation as API messages, from the root to the newest leaf, before any
    repair (see :func:`repair`)."""
    chain: list[Entry]
    """The entries of the followed branch, oldest first."""
    leaf: str | None
    """The uuid of the entry the conversation ends at (the newest message)."""
    sidechains: dict[str, list[Entry]]
    """Subagent entries, by ``agentId`` (kept apart from the main conversation)."""
    findings: list[Finding]
    """What the loader skipped or worked around: bad lines, missing parents, cycles."""
    session_id: str | None = None
    start_offset: int = 0
    """Bytes skipped before the last compact boundary (0 if the whole file was read)."""
    boundary: Entry | None = None
    """The compact boundary the conversation starts after, if any."""
    tool_journal: dict[str, m.Block] = field(default_factory=dict)
    """Results of calls as the tool runner recorded them (``tool-progress`` entries), by
    ``tool_use_id``: a call whose results message a crash cut off still has its answer."""
    tools_started: set[str] = field(default_factory=set)
    """Calls recorded as started; one of them with no result may have run."""

    @property
    def torn(self) -> BadLine | None:
        """The torn last line, if a crash cut the last write short."""
        return next((e for e in self.entries if isinstance(e, BadLine) and e.torn), None)

    @property
    def last_uuid(self) -> str | None:
        """The newest chain entry of this file (what a new entry should hang from)."""
        return self.leaf


def load(path: str | Path, *, fast: bool | None = None, at: str | None = None) -> Session:
    """Read a transcript (ours or Claude Code's) into its main conversation.

    ``fast``: read from the last compact boundary only; by default, for files over
    :data:`FAST_PATH_BYTES`. ``at``: the conversation as it was at that entry (a uuid) instead
    of at the newest leaf; the whole file is read, since the entry may lie before a boundary.
    Never raises for what is in the file: bad lines are reported in ``findings``; a file that
    cannot be opened raises ``OSError``, a path that is not a regular file (a folder, a pipe)
    :class:`NotATranscript`, an ``at`` not in the file :class:`EntryNotFound`.
    """
    path = Path(path)
    size = _regular_file(path).st_size
    start, first_line = 0, 1
    if at is not None:
        fast = False
    if fast if fast is not None else size > FAST_PATH_BYTES:
        found = last_boundary_offset(path)
        if found is not None:
            start, first_line = found
    session = from_entries(read_entries(path, start=start, first_line=first_line), at=at)
    if start and (
        not session.messages or any(f.kind == "incomplete boundary" for f in session.findings)
    ):
        # The last boundary's rewrite is incomplete (or not begun): what it replaced lies
        # before it, where the fast path did not read.
        return load(path, fast=False)
    session.path = path
    session.start_offset = start
    return session


class EntryNotFound(LookupError):
    """The entry asked for (``load(path, at=uuid)``) is not in the file."""


def from_entries(entries: list[Entry | BadLine], *, at: str | None = None) -> Session:
    """Build the session from parsed lines (what :func:`load` does after reading); ``at``:
    end the conversation at that entry rather than at the newest leaf."""
    findings: list[Finding] = []
    by_uuid: dict[str, Entry] = {}
    main: list[Entry] = []
    sidechains: dict[str, list[Entry]] = {}
    replacements: dict[str, dict[str, Any]] = {}
    journal: dict[str, m.Block] = {}
    started: set[str] = set()
    for entry in entries:
        if isinstance(entry, BadLine):
            kind = "torn line" if entry.torn else "unreadable line"
            findings.append(Finding(entry.line, kind, f"{entry.error}: {entry.text!r}"))
            continue
        if entry.type == "content-replacement":
            for item in entry.model_extra.get("replacements", []) if entry.model_extra else []:
                if isinstance(item, dict) and isinstance(item.get("toolUseId"), str):
                    replacements[item["toolUseId"]] = item
            continue
        if entry.type == "tool-progress":
            _read_journal(entry, journal, started)
            continue
        if entry.uuid is None:
            continue  # metadata without a place in the chain (snapshots, titles, queues)
        if entry.uuid in by_uuid:
            findings.append(Finding(entry.line, "duplicate uuid", "skipped", entry.uuid))
            continue
        by_uuid[entry.uuid] = entry
        if entry.is_sidechain:
            sidechains.setdefault(entry.agent_id or "sidechain", []).append(entry)
            continue
        main.append(entry)
    if not any(e.type in ENTRY_TYPES_WITH_MESSAGES for e in main) and len(sidechains) == 1:
        # A subagent's own file (``subagents/agent-*.jsonl``): its sidechain is the story.
        main = next(iter(sidechains.values()))
    leaf = next(
        (e for e in reversed(main) if e.type in ENTRY_TYPES_WITH_MESSAGES and e.message), None
    )
    if at is not None:
        leaf = by_uuid.get(at)
        if leaf is None:
            raise EntryNotFound(f"no entry with uuid {at!r} in this transcript")
    chain = _walk(leaf, by_uuid, findings) if leaf is not None else []
    passed: set[str] = set()  # boundaries gone around (a damaged file could loop back)
    while at is None and chain and _incomplete(chain[0], by_uuid):
        # A crash cut the rewrite after this boundary short: what it replaces is still on
        # disk before it, whole. Go on from there (a resume writes the rewrite again).
        cut = chain[0]
        before = by_uuid.get(cut.logical_parent_uuid or "")
        if cut.uuid in passed:
            break
        passed.add(str(cut.uuid))
        if before is None or before.is_sidechain:
            findings.append(
                Finding(cut.line, "incomplete boundary", "what it replaced is not in the file")
            )
            break
        findings.append(
            Finding(
                cut.line,
                "incomplete boundary",
                "the rewrite after it was cut short; the conversation before it is used",
                cut.uuid,
            )
        )
        leaf = before
        chain = _walk(before, by_uuid, findings)
    messages = _conversation(chain, main, replacements, findings)
    boundary = chain[0] if chain and chain[0].is_boundary else None
    session_id = next((e.session_id for e in reversed(main) if e.session_id), None)
    return Session(
        path=None,
        entries=entries,
        messages=messages,
        chain=chain,
        leaf=leaf.uuid if leaf is not None else None,
        sidechains=sidechains,
        findings=findings,
        session_id=session_id,
        boundary=boundary,
        tool_journal=journal,
        tools_started=started,
    )


def _incomplete(entry: Entry, by_uuid: Mapping[str, Entry]) -> bool:
    """Whether ``entry`` is a compact boundary whose rewrite is not all on disk: its
    ``compactMetadata.tailUuid`` names the rewrite's last entry (written last)."""
    if not entry.is_boundary:
        return False
    metadata = (entry.model_extra or {}).get("compactMetadata")
    tail = metadata.get("tailUuid") if isinstance(metadata, dict) else None
    return isinstance(tail, str) and tail not in by_uuid


def _read_journal(entry: Entry, journal: dict[str, m.Block], started: set[str]) -> None:
    """Take in one ``tool-progress`` entry (see :meth:`Transcript.journal`); what is not
    well formed is ignored (the journal only ever adds answers a resume would lack)."""
    extra = entry.model_extra or {}
    if extra.get("state") == "started":
        ids = extra.get("toolUseIds")
        if isinstance(ids, list):
            started.update(i for i in ids if isinstance(i, str))
    elif extra.get("state") == "finished" and isinstance(extra.get("results"), list):
        for block in extra["results"]:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_result"
                and isinstance(block.get("tool_use_id"), str)
            ):
                journal[block["tool_use_id"]] = block
