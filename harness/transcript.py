"""Transcripts: the conversation on disk, one JSON entry a line, as Claude Code writes it.

A session's transcript is an append-only JSONL file. Each entry is one message (or one
event: a compaction, a progress note) with its own ``uuid`` and the ``parentUuid`` of the
entry before it, so the file is a tree: a rewind starts a second child under an old entry,
and the conversation is the path from the newest leaf back to a root. This module has the
four pieces chapter 08 builds:

* :class:`Transcript`, the writer, a loop plugin. It appends each message as it joins the
  conversation and flushes it to the operating system at once; before each model call it
  also ``fsync``\\ s, so every finished tool result is on disk before the model is asked
  anything (a crash then loses nothing that was done). A compaction writes a
  ``compact_boundary`` entry (``parentUuid: null``, which cuts the chain on purpose) and
  the new conversation after it, its first message marked ``isCompactSummary``.
* :func:`load`, the reader. It reads Claude Code's own files as well as ours: unknown
  entry types and fields pass, a torn or corrupt line is reported and skipped, a reply
  written one entry per content block is merged back by ``message.id``, parallel tool
  results that hang off the chain as side branches are found by their ``tool_use_id``,
  branches from rewinds resolve to the newest leaf, sidechains (subagents) are kept apart.
  A large file is read from its last compact boundary only.
* :func:`fsck`, a pure function from entries to a report of what is wrong, by line.
* :func:`repair`, a pure function that makes a loaded conversation one the API accepts,
  and says what it changed.

Where this differs from Claude Code (the chapter says so too): our writer puts a whole
message in one entry, where Claude Code 2.x writes one entry per content block (the loader
reads both); after a compaction it writes the kept messages again under the boundary, where
Claude Code relinks them in place ("preserved segments"); and a microcompaction is recorded
as a ``content-replacement`` entry that the loader applies, so a resumed conversation is the
one the model last saw (chapter 09 records an approved call's result the same way, in place
of its placeholder).
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import random
import re
import stat
import uuid as uuidlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from anthropic.types import Message
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness import messages as m
from harness.clock import Clock, RealClock, isoformat
from harness.compaction.events import Compacted
from harness.events import Event
from harness.loop import INTERRUPTED, MAY_HAVE_RUN, BaseAgent, Plugin, Rewrite, ToolProgress

VERSION = "harness-0.1.0"
"""What our entries carry in ``version`` (Claude Code writes its own version, "2.1.39")."""

FAST_PATH_BYTES = 5 * 1024 * 1024
"""Files larger than this are read from their last compact boundary only. Claude Code's
threshold is 5 MB (``SKIP_PRECOMPACT_THRESHOLD``, observed in its source, seed 003)."""

BOUNDARY_MARK = b'"compact_boundary"'

ENTRY_TYPES_WITH_MESSAGES = ("user", "assistant")


# -- entries ------------------------------------------------------------------------------


class Entry(BaseModel):
    """One line of a transcript: the fields the loader relies on, checked; the rest kept.

    Unknown fields (``gitBranch``, ``toolUseResult``, whatever a later version adds) pass
    through untouched, and so do unknown entry types: a reader that refused them would
    refuse every new version's files. A known field of the wrong type (a ``uuid`` that is a
    number) makes the line unreadable, and the loader reports it.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)

    type: str
    uuid: str | None = None
    parent_uuid: str | None = Field(None, alias="parentUuid")
    logical_parent_uuid: str | None = Field(None, alias="logicalParentUuid")
    session_id: str | None = Field(None, alias="sessionId")
    is_sidechain: bool = Field(False, alias="isSidechain")
    agent_id: str | None = Field(None, alias="agentId")
    timestamp: str | None = None
    subtype: str | None = None
    message: dict[str, Any] | None = None
    is_compact_summary: bool = Field(False, alias="isCompactSummary")
    line: int = Field(0, exclude=True)
    """Where it was read (1-based); 0 for an entry not read from a file."""

    @property
    def is_boundary(self) -> bool:
        return self.type == "system" and self.subtype == "compact_boundary"

    @property
    def role(self) -> str | None:
        role = (self.message or {}).get("role")
        return role if isinstance(role, str) else None

    @property
    def message_id(self) -> str | None:
        """The API message id of an assistant entry (shared by the entries of one reply)."""
        value = (self.message or {}).get("id")
        return value if isinstance(value, str) else None

    def blocks(self) -> list[m.Block]:
        """The message's content as blocks (a string becomes one text block)."""
        content = (self.message or {}).get("content")
        if isinstance(content, str):
            return [m.text(content)] if content else []
        if isinstance(content, list):
            return [b for b in content if isinstance(b, dict)]
        return []

    def json_line(self) -> str:
        """The entry as one line of JSONL (without the newline)."""
        return json.dumps(self.model_dump(by_alias=True, exclude_none=True), ensure_ascii=False)


@dataclass(frozen=True)
class BadLine:
    """A line that is not an entry: cut short by a crash (``torn``) or corrupt."""

    line: int
    text: str
    """The start of the line, for the report."""
    error: str
    torn: bool
    """The file's last line, not ended by a newline: a write a crash cut short."""


@dataclass(frozen=True)
class Finding:
    """One thing :func:`load` skipped or :func:`fsck` found, with the line it is on."""

    line: int
    kind: str
    detail: str
    uuid: str | None = None

    def __str__(self) -> str:
        return f"line {self.line}: {self.kind}: {self.detail}"


MAX_DEPTH = 200
"""How deeply a line's JSON may nest (objects and arrays). No entry we or Claude Code write
comes near it; a line nested deeper is reported as bad, since what reads a message later
(validation, ``json.dumps``, :func:`repair`) recurses once per level and would fail on it."""

_TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` (JSON-like) nests objects and arrays more than ``limit`` levels
    deep. It keeps its own stack rather than recursing: the point is to refuse, in linear
    time, what would make recursive code fail."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (Mapping, list, tuple)))
    return False


def parse_line(text: str | bytes, line: int, *, last: bool = False) -> Entry | BadLine:
    """One line of JSONL as an :class:`Entry`, or a :class:`BadLine` that says why not."""
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    ended = raw.endswith("\n")
    body = raw.rstrip("\r\n")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as error:
        torn = last and not ended
        return BadLine(line, body[:80], f"not JSON ({error.msg} at column {error.colno})", torn)
    except ValueError as error:  # bytes that are not UTF-8 text, say
        return BadLine(line, body[:80], f"not JSON ({error})", last and not ended)
    except RecursionError:  # the decoder recurses once per level: a hostile line
        return BadLine(line, body[:80], _TOO_DEEP, last and not ended)
    if not isinstance(data, dict):
        return BadLine(line, body[:80], f"a JSON {type(data).__name__}, not an object", False)
    # Brackets are counted first (fast), so only a line with many of them is walked.
    if body.count("[") + body.count("{") > MAX_DEPTH and too_deep(data):
        return BadLine(line, body[:80], _TOO_DEEP, False)
    try:
        return Entry.model_validate({**data, "line": line})
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return BadLine(line, body[:80], f"{where}: {first['msg']}", False)


class NotATranscript(OSError):
    """The path is not a regular file (a folder, a pipe, a device), so it is no transcript.
    An ``OSError``, so callers that catch those for a missing file catch this too."""


def _regular_file(path: str | Path) -> os.stat_result:
    """The path's status, if it is a regular file (checked without opening it: opening a
    named pipe waits for a writer, forever if none comes); else :class:`NotATranscript`."""
    status = os.stat(path)
    if not stat.S_ISREG(status.st_mode):
        kind = (
            "a folder"
            if stat.S_ISDIR(status.st_mode)
            else "a named pipe (FIFO)"
            if stat.S_ISFIFO(status.st_mode)
            else "a socket"
            if stat.S_ISSOCK(status.st_mode)
            else "a device"
            if stat.S_ISCHR(status.st_mode) or stat.S_ISBLK(status.st_mode)
            else "not a regular file"
        )
        raise NotATranscript(
            f"{os.fspath(path)} is {kind}, not a transcript: give the path of a session's "
            ".jsonl file"
        )
    return status


def read_entries(path: str | Path, *, start: int = 0, first_line: int = 1) -> list[Entry | BadLine]:
    """Every line of ``path`` from byte ``start``, parsed (blank lines are skipped).

    ``path`` must be a regular file (else :class:`NotATranscript`, before it is opened)."""
    out: list[Entry | BadLine] = []
    _regular_file(path)
    with open(path, "rb") as handle:
        handle.seek(start)
        number = first_line - 1
        previous: bytes | None = None
        for chunk in handle:
            if previous is not None:
                number += 1
                if previous.strip():
                    out.append(parse_line(previous, number))
            previous = chunk
        if previous is not None:
            number += 1
            if previous.strip():
                out.append(parse_line(previous, number, last=True))
    return out


def last_boundary_offset(path: str | Path) -> tuple[int, int] | None:
    """Where the last main-chain compact boundary starts: (byte offset, line number).

    Searches backwards for the marker and parses only the candidate lines (a tool result
    that mentions "compact_boundary" is not a boundary). ``None`` if there is none.
    """
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return None
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            end = size
            while (hit := view.rfind(BOUNDARY_MARK, 0, end)) != -1:
                start = view.rfind(b"\n", 0, hit) + 1
                stop = view.find(b"\n", hit)
                stop = size if stop == -1 else stop
                entry = parse_line(view[start:stop], 0)
                if isinstance(entry, Entry) and entry.is_boundary and not entry.is_sidechain:
                    return start, _count_lines(view, start) + 1
                end = start
    return None


def _count_lines(view: mmap.mmap, stop: int, chunk: int = 4 * 1024 * 1024) -> int:
    count = 0
    for at in range(0, stop, chunk):
        count += view[at : min(at + chunk, stop)].count(b"\n")
    return count


# -- loading ------------------------------------------------------------------------------


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


def _conversation(
    chain: Sequence[Entry],
    main: Sequence[Entry],
    replacements: Mapping[str, Mapping[str, Any]],
    findings: list[Finding],
) -> list[m.MessageDict]:
    """The API messages of ``chain``: replies merged by message id, side-branch results
    found by tool_use id, microcompactions applied."""
    usable: dict[int, list[m.Block]] = {}  # by id(entry): each bad block reported once

    def blocks_of(entry: Entry) -> list[m.Block]:
        if id(entry) not in usable:
            usable[id(entry)] = _usable_blocks(entry, findings)
        return usable[id(entry)]

    blocks_of_reply: dict[str, list[m.Block]] = {}
    seen_blocks: dict[str, set[str]] = {}
    results: dict[str, m.Block] = {}
    for entry in main:
        if entry.type == "assistant" and entry.message_id is not None:
            # One reply may be written twice (whole, then block by block: Claude Code 2.0
            # does this after a retry): keep each block once.
            seen = seen_blocks.setdefault(entry.message_id, set())
            for block in blocks_of(entry):
                key = _block_key(block)
                if key not in seen:
                    seen.add(key)
                    blocks_of_reply.setdefault(entry.message_id, []).append(block)
        elif entry.type == "user":
            for block in blocks_of(entry):
                if block.get("type") == "tool_result":
                    results.setdefault(block["tool_use_id"], block)
    out: list[m.MessageDict] = []
    replies_done: set[str] = set()
    on_chain: set[str] = set()
    for entry in chain:
        if entry.type not in ENTRY_TYPES_WITH_MESSAGES or entry.message is None:
            continue
        text = entry.message.get("content")
        if entry.type == "user" and isinstance(text, str) and text:
            out.append({"role": "user", "content": text})  # a prompt typed as text stays so
            continue
        reply_id = entry.message_id if entry.type == "assistant" else None
        if reply_id is not None and reply_id in replies_done:
            continue
        content = blocks_of(entry) if reply_id is None else blocks_of_reply.get(reply_id, [])
        if not content:
            findings.append(Finding(entry.line, "empty message", _emptiness(entry), entry.uuid))
            continue
        if reply_id is not None:
            replies_done.add(reply_id)
        elif entry.type == "user":
            on_chain.update(b["tool_use_id"] for b in content if b.get("type") == "tool_result")
        out.append({"role": entry.type, "content": list(content)})
    # Parallel results that hang off the chain as side branches (Claude Code 2.1): put each
    # one in the user message after its tool_use, where the API wants it.
    spread: list[m.MessageDict] = []
    for i, message in enumerate(out):
        spread.append(message)
        if message["role"] != "assistant":
            continue
        missing = [
            results[u["id"]]
            for u in m.tool_uses(message)
            if u["id"] not in on_chain and u["id"] in results
        ]
        if not missing:
            continue
        on_chain.update(block["tool_use_id"] for block in missing)
        following = out[i + 1] if i + 1 < len(out) else None
        if following is not None and following["role"] == "user":
            following["content"] = [*missing, *m.blocks(following)]  # appended next round
        else:
            spread.append({"role": "user", "content": missing})
    out = _merge_same_role(spread)
    if replacements:
        for message in out:
            if message["role"] == "user" and isinstance(message["content"], list):
                message["content"] = [
                    _replaced(b, replacements[b["tool_use_id"]])
                    if b.get("type") == "tool_result" and b.get("tool_use_id") in replacements
                    else b
                    for b in message["content"]
                ]
    return out


def _replaced(block: m.Block, item: Mapping[str, Any]) -> m.Block:
    """A tool result with a ``content-replacement`` applied: its content, and whether it is
    an error when the entry says (an approved call's result replaces a placeholder)."""
    out = {**block, "content": item.get("content")}
    if isinstance(item.get("isError"), bool):
        if item["isError"]:
            out["is_error"] = True
        else:
            out.pop("is_error", None)
    return out


def _block_key(block: m.Block) -> str:
    if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
        return f"tool_use:{block['id']}"
    return json.dumps(block, sort_keys=True, default=str)


def _usable_blocks(entry: Entry, findings: list[Finding]) -> list[m.Block]:
    """The entry's blocks, less any tool call or result whose id is not a string: the API's
    ids are strings, and a list or an object cannot even be looked up. Each is reported."""
    out: list[m.Block] = []
    for block in entry.blocks():
        kind = block.get("type")
        name = "id" if kind == "tool_use" else "tool_use_id" if kind == "tool_result" else None
        if name is not None and not isinstance(block.get(name), str):
            got = type(block.get(name)).__name__ if name in block else "missing"
            findings.append(
                Finding(
                    entry.line, "bad block", f"a {kind} whose {name} is {got}: skipped", entry.uuid
                )
            )
            continue
        out.append(block)
    return out


def _emptiness(entry: Entry) -> str:
    """Why a message entry gives no message (for its finding)."""
    content = (entry.message or {}).get("content")
    shown = repr(content)[:60] if "content" in (entry.message or {}) else "no content field"
    return f"nothing in it can be sent ({shown}): skipped"


def _merge_same_role(conversation: list[m.MessageDict]) -> list[m.MessageDict]:
    """Consecutive messages of one role as one (tool results first), as the API view has
    them: a prompt typed after tool results is its own entry, but joins their message.
    Each run is joined once, so a long run costs its length, not its length squared."""
    out: list[m.MessageDict] = []
    run: list[m.MessageDict] = []
    for message in conversation:
        if run and run[-1]["role"] != message["role"]:
            out.append(run[0] if len(run) == 1 else _joined(*run))
            run = []
        run.append(message)
    if run:
        out.append(run[0] if len(run) == 1 else _joined(*run))
    return out


def _joined(*messages: m.MessageDict) -> m.MessageDict:
    """Messages of one role as one; in a user message, tool results go first (the API
    refuses a tool_result after other content), each part in its order."""
    merged = [b for message in messages for b in m.blocks(message)]
    if messages[0]["role"] == "user":
        merged = [b for b in merged if b.get("type") == "tool_result"] + [
            b for b in merged if b.get("type") != "tool_result"
        ]
    return {"role": messages[0]["role"], "content": merged}


# -- fsck ---------------------------------------------------------------------------------


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


# -- repair -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One thing :func:`repair` changed, and where (an index into the input messages)."""

    kind: str
    index: int
    detail: str

    def __str__(self) -> str:
        return f"messages[{self.index}]: {self.kind}: {self.detail}"


@dataclass(frozen=True)
class Repair:
    messages: list[m.MessageDict]
    changes: list[Change]

    @property
    def changed(self) -> bool:
        return bool(self.changes)


RESUMED_WITHOUT_START = "[The start of this conversation was not recorded.]"

UnresolvedPolicy = Literal["answer", "drop"]


NET_ROUNDS = 4
"""How many times :func:`repair`'s safety net may drop what is still invalid and settle
again before it gives up (each round is one pass over the conversation)."""


def repair(
    messages: Sequence[Mapping[str, Any]],
    *,
    unresolved: UnresolvedPolicy = "answer",
    answers: Mapping[str, m.Block] | None = None,
) -> Repair:
    """Make ``messages`` a conversation the API accepts, and list every change.

    In order: blocks the API does not know, blank text and text that is not valid Unicode
    are dropped or mended; assistant messages left with only thinking (or nothing) are
    dropped; same-role neighbours are merged (tool results first); a tool call with no
    result is answered as interrupted (``unresolved="answer"``, which keeps what the model
    asked) or dropped (``"drop"``, Claude Code's choice); a result that answers no call in
    the message before it is dropped, as is a second result or call with the same id. A
    user message with text before its tool results is reordered, results first. A
    conversation that starts with the model gets a first user line saying the start is
    missing. The input is not changed. ``[]`` stays ``[]`` (there is nothing to resume).

    ``answers``: results known from elsewhere (the tool journal), by tool_use id. A call
    with no result whose id is there gets that ``tool_result`` block, whatever
    ``unresolved`` says: a call that ran keeps its result.

    Linear in the size of the conversation: each rule is one pass.
    """
    changes: list[Change] = []
    work: list[tuple[int, m.MessageDict]] = []
    for index, message in enumerate(messages):
        mended = _mend_message(index, message, changes)
        if mended is not None:
            work.append((index, mended))
    known = answers or {}
    work = _settle(work, changes, unresolved, known)
    if work and work[0][1]["role"] != "user":
        work.insert(0, (0, m.user([m.text(RESUMED_WITHOUT_START)])))
        changes.append(Change("start added", 0, "the conversation began with the model"))
    # A safety net for what the rules above do not foresee: drop every message the API
    # would still refuse, and settle again; a few rounds at most, so it stays linear.
    # (The property tests have not found such a case.)
    for round_ in range(NET_ROUNDS + 1):
        problems = m.validate([msg for _, msg in work]) if work else []
        if not problems:
            break
        if round_ == NET_ROUNDS:
            work = []  # nothing the API accepts could be kept
            changes.append(Change("message dropped", 0, "no valid conversation could be kept"))
            break
        why: dict[int, str] = {}
        for problem in problems:
            why.setdefault(problem.index, problem.detail)
        for k, (index, _) in enumerate(work):
            if k in why:
                changes.append(Change("message dropped", index, f"still invalid: {why[k]}"))
        work = [item for k, item in enumerate(work) if k not in why]
        work = _settle(work, changes, unresolved, known)
        if work and work[0][1]["role"] != "user":
            work.insert(0, (0, m.user([m.text(RESUMED_WITHOUT_START)])))
    return Repair([msg for _, msg in work], changes)


def _settle(
    work: list[tuple[int, m.MessageDict]],
    changes: list[Change],
    unresolved: UnresolvedPolicy,
    answers: Mapping[str, m.Block],
) -> list[tuple[int, m.MessageDict]]:
    for _ in range(4):  # each pass can only shrink what is left to fix; two usually do
        before = len(changes)
        work = _merge_neighbours(work, changes)
        work = _pair_tools(work, changes, unresolved, answers)
        work = [(i, msg) for i, msg in work if _keep(i, msg, changes)]
        if len(changes) == before:
            break
    return work


def _mend_message(
    index: int, message: Mapping[str, Any], changes: list[Change]
) -> m.MessageDict | None:
    role = message.get("role")
    if role not in ("user", "assistant"):
        shown = repr(role) if role is None or isinstance(role, str) else type(role).__name__
        changes.append(Change("message dropped", index, f"role {shown} is not user or assistant"))
        return None
    content = message.get("content")
    raw = (
        [m.text(content)]
        if isinstance(content, str)
        else content
        if isinstance(content, list)
        else []
    )
    kept: list[m.Block] = []
    for j, block in enumerate(raw):
        fixed = _mend_block(role, block)
        if fixed is None:
            what = _kind_of(block)
            if isinstance(block, Mapping) and too_deep(block):
                what += f", nested more than {MAX_DEPTH} levels deep"
            changes.append(Change("block dropped", index, f"content[{j}] ({what})"))
            continue
        if fixed != block:
            changes.append(Change("block mended", index, f"content[{j}] ({fixed.get('type')})"))
        kept.append(fixed)
    results = [b for b in kept if b.get("type") == "tool_result"] if role == "user" else []
    if any(b.get("type") != "tool_result" for b in kept[: len(results)]):
        # Text before a result: the API wants results first. Moving them keeps them.
        kept = results + [b for b in kept if b.get("type") != "tool_result"]
        changes.append(Change("reordered", index, "tool results moved before the other content"))
    if isinstance(content, str) and kept == raw:
        return {"role": role, "content": content}  # a prompt kept as plain text stays so
    return {"role": role, "content": kept}


def _kind_of(block: Any) -> str:
    """What a block is, for a change's detail (never the repr of a nested value)."""
    if not isinstance(block, Mapping):
        return type(block).__name__
    kind = block.get("type")
    if isinstance(kind, str):
        return kind
    if kind is None or isinstance(kind, (int, float)):
        return repr(kind)
    return f"a type that is a {type(kind).__name__}"


def _mend_block(role: str, given: Any) -> m.Block | None:
    block: dict[str, Any]
    if not isinstance(given, Mapping) or too_deep(given):
        return None  # (what is nested too deeply would make the checks below recurse)
    block = {str(k): v for k, v in given.items()}
    kind = block.get("type")
    if kind not in m.CONTENT_BLOCK_TYPES:
        return None
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str) or not text.strip():
            return None
        block["text"] = m.valid_text(text)
    if kind == "tool_use":
        if role != "assistant" or not isinstance(block.get("id"), str):
            return None
        if not isinstance(block.get("input"), dict) or not m.is_valid_tool_name(block.get("name")):
            return None
    if kind == "tool_result":
        if role != "user" or not isinstance(block.get("tool_use_id"), str):
            return None
        if m.tool_result_content_problem(block.get("content", "")) is not None:
            block["content"] = m.valid_text(json.dumps(block.get("content"), default=str))
        elif isinstance(block.get("content"), str):
            block["content"] = m.valid_text(block["content"])
    if m.bad_unicode(block, "") is not None:
        cleaned: Any = json.loads(m.valid_text(json.dumps(block, ensure_ascii=False)))
        block = dict(cleaned) if isinstance(cleaned, dict) else block
    if kind in ("tool_use", "server_tool_use") and role != "assistant":
        return None
    return block


def _merge_neighbours(
    work: list[tuple[int, m.MessageDict]], changes: list[Change]
) -> list[tuple[int, m.MessageDict]]:
    """Each run of same-role messages as one, joined once (linear however long the run)."""
    out: list[tuple[int, m.MessageDict]] = []
    run: list[tuple[int, m.MessageDict]] = []

    def close() -> None:
        if len(run) == 1:
            out.append(run[0])
        elif run:
            out.append((run[0][0], _joined(*(message for _, message in run))))
            for index, message in run[1:]:
                changes.append(
                    Change("merged", index, f"into the {message['role']} message before it")
                )

    for item in work:
        if run and run[-1][1]["role"] != item[1]["role"]:
            close()
            run = []
        run.append(item)
    close()
    return out


def _pair_tools(
    work: list[tuple[int, m.MessageDict]],
    changes: list[Change],
    unresolved: UnresolvedPolicy,
    answers: Mapping[str, m.Block],
) -> list[tuple[int, m.MessageDict]]:
    """Every tool call answered in the next message, every result answering a call in the
    one before: one pass, the answers made for a call carried into the user message after
    it (never inserted into the middle of a list, which would make the pass quadratic)."""
    out: list[tuple[int, m.MessageDict]] = []
    seen_uses: set[str] = set()
    carry: list[m.Block] = []  # answers made for the assistant message just before
    for k, (index, message) in enumerate(work):
        if message["role"] == "assistant":
            uses: list[m.Block] = []
            content: list[m.Block] = []
            for block in m.blocks(message):
                if block.get("type") == "tool_use":
                    if block["id"] in seen_uses:
                        changes.append(
                            Change("tool_use dropped", index, f"{block['id']} used twice")
                        )
                        continue
                    seen_uses.add(block["id"])
                    uses.append(block)
                content.append(block)
            following = work[k + 1][1] if k + 1 < len(work) else None
            answered = (
                {str(r.get("tool_use_id")) for r in m.tool_results(following)}
                if following is not None and following["role"] == "user"
                else set()
            )
            made: list[m.Block] = []
            gone: set[str] = set()
            for use in uses:
                use_id = use["id"]
                if use_id in answered:
                    continue
                journaled = _journaled(use_id, answers)
                if journaled is not None:  # it ran: its result wins over dropping it
                    made.append(journaled)
                    how = (
                        "as may have run (started, no result recorded)"
                        if journaled.get("content") == MAY_HAVE_RUN
                        else "from the tool journal"
                    )
                    changes.append(Change("tool_use answered", index, f"{use_id} {how}"))
                elif unresolved == "drop":
                    gone.add(use_id)
                    changes.append(
                        Change("tool_use dropped", index, f"{use_id} was never answered")
                    )
                else:
                    made.append(m.tool_result(use_id, INTERRUPTED, is_error=True))
                    changes.append(Change("tool_use answered", index, f"{use_id} as interrupted"))
            if gone:
                content = [
                    b for b in content if not (b.get("type") == "tool_use" and b["id"] in gone)
                ]
            if content != m.blocks(message):
                message = {"role": "assistant", "content": content}
            out.append((index, message))
            if made and following is not None and following["role"] == "user":
                carry = made
            elif made:
                out.append((index, m.user(made)))
        else:
            if carry:
                message = {"role": "user", "content": [*carry, *m.blocks(message)]}
                carry = []
            previous = out[-1][1] if out else None
            asked = (
                {str(u.get("id")) for u in m.tool_uses(previous)}
                if previous is not None and previous["role"] == "assistant"
                else set()
            )
            kept: list[m.Block] = []
            done: set[str] = set()
            for block in m.blocks(message):
                if block.get("type") == "tool_result":
                    use_id = str(block.get("tool_use_id"))
                    if use_id not in asked or use_id in done:
                        why = (
                            "answers no call in the message before"
                            if use_id not in asked
                            else "a second answer"
                        )
                        changes.append(Change("tool_result dropped", index, f"{use_id}: {why}"))
                        continue
                    done.add(use_id)
                kept.append(block)
            if kept != m.blocks(message):
                message = {"role": "user", "content": kept}
            out.append((index, message))
    return out


def _journaled(use_id: str, answers: Mapping[str, m.Block]) -> m.Block | None:
    """The result ``answers`` holds for ``use_id``, as a block the API takes (its
    ``tool_use_id`` set to the call's), or ``None`` if there is none or it is no
    ``tool_result`` block."""
    given = answers.get(use_id)
    if not isinstance(given, Mapping) or given.get("type") != "tool_result":
        return None
    return _mend_block("user", {**given, "tool_use_id": use_id})


def _keep(index: int, message: m.MessageDict, changes: list[Change]) -> bool:
    content = m.blocks(message)
    if not content:
        changes.append(Change("message dropped", index, f"an empty {message['role']} message"))
        return False
    if message["role"] == "assistant" and all(
        b.get("type") in ("thinking", "redacted_thinking") for b in content
    ):
        changes.append(Change("message dropped", index, "an assistant message with only thinking"))
        return False
    return True


# -- writing ------------------------------------------------------------------------------


def project_folder(cwd: str | Path) -> str:
    """Claude Code's folder name for a working directory: each character that is not a
    letter or digit becomes ``-`` (``/home/ana/shop`` → ``-home-ana-shop``)."""
    return re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))


def seeded_ids(seed: int) -> Callable[[], str]:
    """A source of version-4 UUIDs that repeats for the same seed (for stable notebooks)."""
    generator = random.Random(seed)
    return lambda: str(uuidlib.UUID(int=generator.getrandbits(128), version=4))


def random_ids() -> str:
    return str(uuidlib.uuid4())


@dataclass(frozen=True)
class TranscriptFailed(Event):
    """The transcript could not be written (a full disk, a removed folder). The run goes on;
    what is not on disk cannot be resumed."""

    reason: str

    def __str__(self) -> str:
        return f"⚠ transcript not written: {self.reason}"


@dataclass
class Transcript(Plugin):
    """The writer: a plugin that appends each message to ``path`` as it joins the
    conversation.

    * ``after_reply`` writes the reply, ``after_tools`` the results (flushed to the
      operating system at once: a killed process loses nothing already written);
    * ``before_request`` writes anything else new (your prompt) and ``fsync``\\ s the file,
      so the model is never asked anything the disk does not hold;
    * ``on_rewrite``: a compaction writes its boundary and the new conversation; a
      microcompaction writes which tool results it cleared.
    """

    path: Path
    session_id: str
    cwd: str = "."
    clock: Clock = field(default_factory=RealClock)
    ids: Callable[[], str] = random_ids
    fsync: bool = True
    """Also ``fsync`` before each model call (survives a power cut, not only a crash)."""
    sidechain: bool = False
    agent_id: str | None = None
    parent: str | None = None
    """The uuid the next entry hangs from (the last one written)."""
    written: int = 0
    """Entries written by this writer."""
    _count: int = 0
    _last: m.MessageDict | None = None
    _last_blocks: int = 0
    _handle: IO[str] | None = None
    _planned: list[str] = field(default_factory=list)
    """Uuids of the entries a boundary announced (its rewrite), handed out in order."""
    _stale: bool = False
    """A write failed: the file may lack an entry or end mid-line. The next write starts
    over under a boundary, so the file holds the whole conversation again."""

    # -- the plugin points -------------------------------------------------------------------

    def before_request(self, agent: BaseAgent) -> Rewrite | None:
        def write() -> None:
            self.sync(agent.messages)
            self.flush(durable=self.fsync)

        self._guard(agent, write)
        return None

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        self._guard(agent, lambda: self.sync(agent.messages, reply=reply))

    def on_tool_progress(self, agent: BaseAgent, progress: ToolProgress) -> None:
        self._guard(agent, lambda: self.journal(progress))

    def after_tools(self, agent: BaseAgent, results: list[m.Block]) -> None:
        self._guard(agent, lambda: self.sync(agent.messages))

    def on_rewrite(self, agent: BaseAgent, rewrite: Rewrite) -> None:
        self._guard(agent, lambda: self.record_rewrite(agent.messages, rewrite))

    # -- writing ---------------------------------------------------------------------------

    def sync(self, conversation: Sequence[m.MessageDict], *, reply: Message | None = None) -> None:
        """Write whatever of ``conversation`` is not written yet, and flush it."""
        if (
            self._stale
            or len(conversation) < self._count
            or (self._count and conversation[self._count - 1] is not self._last)
        ):
            # Changed without a rewrite we were told of: start over under a boundary.
            self._boundary(conversation, "rewrite", None, None)
            self._write_messages(conversation, summary=False, reply=reply)
            self.flush()
            return
        if self._count and self._last is not None:
            grown = m.blocks(self._last)[self._last_blocks :]
            if grown:  # a prompt joined the last user message (after tool results)
                self._append(self._message_entry({"role": self._last["role"], "content": grown}))
                self._last_blocks = len(m.blocks(self._last))
        self._write_messages(
            conversation[self._count :], summary=False, reply=reply, offset=self._count
        )
        self.flush()

    def record_rewrite(self, old: Sequence[m.MessageDict], rewrite: Rewrite) -> None:
        """Write what a rewrite does: the old conversation's last unwritten messages, then a
        content replacement (microcompaction) or a boundary and the new conversation."""
        self.sync(old)
        new = rewrite.messages
        event = rewrite.event
        replaced = _replaced_results(old, new)
        if replaced is not None:
            self._append(
                {
                    "type": "content-replacement",
                    "sessionId": self.session_id,
                    "timestamp": isoformat(self.clock.now()),
                    "replacements": [
                        {"toolUseId": use_id, "content": content, **flag}
                        for use_id, content, flag in replaced
                    ],
                }
            )
            self._count = len(new)
            self._last = new[-1] if new else None
            self._last_blocks = len(m.blocks(self._last)) if self._last is not None else 0
            self.flush()
            return
        if isinstance(event, Compacted):
            trigger = "manual" if event.trigger == "manual" else "auto"
            self._boundary(new, trigger, event.tokens_before, event.tier)
        else:
            self._boundary(new, type(event).__name__, None, None)
        self._write_messages(new, summary=True)
        self.flush()

    def journal(self, progress: ToolProgress) -> None:
        """Record calls starting, or their results, as a ``tool-progress`` entry beside the
        chain (no uuid: it is not part of the conversation). A resume answers a call whose
        result never reached the conversation with its journaled result, or, if it only
        started, says it may have run; a call with neither never ran. Claude Code writes
        each result as a chain entry of its own as its tool finishes; we journal them and
        keep writing the whole results message after, which keeps one entry per message."""
        entry: dict[str, Any] = {
            "type": "tool-progress",
            "state": progress.state,
            "isSidechain": self.sidechain,
            "sessionId": self.session_id,
            "timestamp": isoformat(self.clock.now()),
            "toolUseIds": list(progress.tool_use_ids),
        }
        if progress.results:
            entry["results"] = list(progress.results)
        if self.agent_id is not None:
            entry["agentId"] = self.agent_id
        self._append(entry)
        self.flush(durable=self.fsync)  # before a side effect, or right after one

    def flush(self, *, durable: bool = False) -> None:
        """Hand what was written to the operating system; ``durable``: to the disk too."""
        if self._handle is not None:
            self._handle.flush()
            if durable:
                os.fsync(self._handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            self.flush(durable=self.fsync)
            self._handle.close()
            self._handle = None

    def adopt(self, conversation: Sequence[m.MessageDict], parent: str | None) -> None:
        """Take ``conversation`` as already written, ending at entry ``parent`` (a resume).

        Give it the agent's own message objects (``agent.messages``), not a copy: the
        writer recognises its last message by identity, and a copy looks like a rewrite it
        was not told of (it would write a boundary and the conversation again)."""
        self.parent = parent
        self._count = len(conversation)
        self._last = conversation[-1] if conversation else None
        self._last_blocks = len(m.blocks(self._last)) if self._last is not None else 0

    def write_messages(
        self, conversation: Sequence[m.MessageDict], *, boundary: str | None = None
    ) -> None:
        """Append ``conversation`` (after a boundary whose trigger is ``boundary``, if given)."""
        if boundary is not None:
            self._boundary(conversation, boundary, None, None)
        self._write_messages(conversation, summary=False)
        self.flush()

    # -- internals -------------------------------------------------------------------------

    def _guard(self, agent: BaseAgent, action: Callable[[], object]) -> None:
        try:
            action()
        except (OSError, TypeError, ValueError) as error:  # the run goes on, and says so
            agent.emit(TranscriptFailed(f"{type(error).__name__}: {error}"))
            self._stale, self._planned = True, []
            if self._handle is not None:  # reopened next time: a torn last line is ended
                with contextlib.suppress(OSError):
                    self._handle.close()
                self._handle = None

    def _write_messages(
        self,
        conversation: Sequence[m.MessageDict],
        *,
        summary: bool,
        reply: Message | None = None,
        offset: int = 0,
    ) -> None:
        for k, message in enumerate(conversation):
            extra: dict[str, Any] = {}
            if summary and k == 0 and message["role"] == "user" and not m.tool_results(message):
                extra["isCompactSummary"] = True
            is_reply = (
                reply is not None and k == len(conversation) - 1 and message["role"] == "assistant"
            )
            self._append(self._message_entry(message, reply=reply if is_reply else None, **extra))
        if conversation:
            self._count = offset + len(conversation)
            self._last = conversation[-1]
            self._last_blocks = len(m.blocks(self._last))

    def _message_entry(
        self, message: m.MessageDict, *, reply: Message | None = None, **extra: Any
    ) -> dict[str, Any]:
        content = message["content"]
        body: dict[str, Any] = {
            "role": message["role"],
            "content": content if isinstance(content, str) else m.blocks(message),
        }
        if reply is not None:
            body = {
                "id": reply.id,
                "type": "message",
                "role": "assistant",
                "model": reply.model,
                "content": body["content"],
                "stop_reason": reply.stop_reason,
                "usage": reply.usage.model_dump(exclude_none=True),
            }
        return {**self._header(message["role"]), "message": body, **extra}

    def _header(self, kind: str) -> dict[str, Any]:
        entry = {
            "parentUuid": self.parent,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": VERSION,
            "type": kind,
            "uuid": self._planned.pop(0) if self._planned and kind != "system" else self.ids(),
            "timestamp": isoformat(self.clock.now()),
        }
        if self.agent_id is not None:
            entry["agentId"] = self.agent_id
        return entry

    def _boundary(
        self, new: Sequence[m.MessageDict], trigger: str, pre_tokens: int | None, tier: str | None
    ) -> None:
        entry = self._header("system")
        entry["logicalParentUuid"] = self.parent
        entry["parentUuid"] = None  # cut on purpose: a resume starts from what follows
        metadata: dict[str, Any] = {"trigger": trigger}
        if pre_tokens is not None:
            metadata["preTokens"] = pre_tokens
        if tier is not None:
            metadata["tier"] = tier
        entry.update(
            subtype="compact_boundary",
            content="Conversation compacted",
            level="info",
            isMeta=False,
            compactMetadata=metadata,
        )
        # The boundary names its rewrite's last entry, written last: until that entry is on
        # disk, the loader goes on from the conversation before the boundary (a crash in
        # the middle of the rewrite must not leave a shorter conversation).
        self._planned = [self.ids() for _ in new]
        if self._planned:
            metadata["tailUuid"] = self._planned[-1]
        self._append(entry, chained=True)
        self._count, self._last, self._last_blocks = 0, None, 0
        self._stale = False

    def _append(self, entry: dict[str, Any], *, chained: bool | None = None) -> None:
        if self._handle is None:
            self._handle = _open_for_append(self.path)
        line = json.dumps(entry, ensure_ascii=False)
        if not m.is_utf8(line):  # a lone surrogate cannot be written as UTF-8: escape it
            line = json.dumps(entry)
        self._handle.write(line + "\n")
        self.written += 1
        if "uuid" in entry and (chained is None or chained):
            self.parent = entry["uuid"]


def _open_for_append(path: Path) -> IO[str]:
    """Open ``path`` to append; a last line a crash cut short is ended first, so the next
    entry starts a line of its own (the torn one stays, for fsck to report)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size:
        with open(path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            torn = handle.read(1) != b"\n"
        if torn:
            with open(path, "ab") as handle:
                handle.write(b"\n")
    return open(path, "a", encoding="utf-8", newline="\n")


def _replaced_results(
    old: Sequence[m.MessageDict], new: Sequence[m.MessageDict]
) -> list[tuple[str, Any, dict[str, bool]]] | None:
    """If ``new`` differs from ``old`` only in some tool results' content (a
    microcompaction, or an approved call's result in place of its placeholder), those
    results as (tool_use_id, new content, ``{"isError": ...}`` if that changed too); else
    None."""
    if len(old) != len(new):
        return None
    changed: list[tuple[str, Any, dict[str, bool]]] = []
    for before, after in zip(old, new, strict=True):
        if before["role"] != after["role"]:
            return None
        a, b = m.blocks(before), m.blocks(after)
        if len(a) != len(b):
            return None
        for x, y in zip(a, b, strict=True):
            if x == y:
                continue
            if x.get("type") == y.get("type") == "tool_result" and x.get("tool_use_id") == y.get(
                "tool_use_id"
            ):
                error = bool(y.get("is_error"))
                flag = {} if bool(x.get("is_error")) == error else {"isError": error}
                changed.append((str(y["tool_use_id"]), y.get("content"), flag))
            else:
                return None
    return changed or None


def iter_lines(path: str | Path) -> Iterator[str]:
    """The file's lines, as text (for showing a transcript)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        yield from handle
