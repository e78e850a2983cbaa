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

import json
import mmap
import os
import random
import re
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
from harness.loop import INTERRUPTED, BaseAgent, Plugin, Rewrite

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
    if not isinstance(data, dict):
        return BadLine(line, body[:80], f"a JSON {type(data).__name__}, not an object", False)
    try:
        return Entry.model_validate({**data, "line": line})
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return BadLine(line, body[:80], f"{where}: {first['msg']}", False)


def read_entries(path: str | Path, *, start: int = 0, first_line: int = 1) -> list[Entry | BadLine]:
    """Every line of ``path`` from byte ``start``, parsed (blank lines are skipped)."""
    out: list[Entry | BadLine] = []
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
    cannot be opened raises ``OSError``, an ``at`` not in the file :class:`EntryNotFound`.
    """
    path = Path(path)
    start, first_line = 0, 1
    if at is not None:
        fast = False
    if fast if fast is not None else path.stat().st_size > FAST_PATH_BYTES:
        found = last_boundary_offset(path)
        if found is not None:
            start, first_line = found
    session = from_entries(read_entries(path, start=start, first_line=first_line), at=at)
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
    )


def _walk(leaf: Entry, by_uuid: Mapping[str, Entry], findings: list[Finding]) -> list[Entry]:
    """The entries from ``leaf`` back up its ``parentUuid`` links, oldest first."""
    chain: list[Entry] = []
    seen: set[str] = set()
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
        current = by_uuid.get(parent)
        if current is None:
            findings.append(
                Finding(chain[-1].line, "broken chain", f"parent {parent} is not in the file")
            )
    chain.reverse()
    return chain


def _conversation(
    chain: Sequence[Entry],
    main: Sequence[Entry],
    replacements: Mapping[str, Mapping[str, Any]],
    findings: list[Finding],
) -> list[m.MessageDict]:
    """The API messages of ``chain``: replies merged by message id, side-branch results
    found by tool_use id, microcompactions applied."""
    blocks_of_reply: dict[str, list[m.Block]] = {}
    seen_blocks: dict[str, set[str]] = {}
    results: dict[str, m.Block] = {}
    for entry in main:
        if entry.type == "assistant" and entry.message_id is not None:
            # One reply may be written twice (whole, then block by block: Claude Code 2.0
            # does this after a retry): keep each block once.
            seen = seen_blocks.setdefault(entry.message_id, set())
            for block in entry.blocks():
                key = _block_key(block)
                if key not in seen:
                    seen.add(key)
                    blocks_of_reply.setdefault(entry.message_id, []).append(block)
        elif entry.type == "user":
            for block in entry.blocks():
                if block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                    results.setdefault(block["tool_use_id"], block)
    out: list[m.MessageDict] = []
    replies_done: set[str] = set()
    on_chain: set[str] = set()
    for entry in chain:
        if entry.type == "user" and entry.message is not None:
            content = entry.blocks()
            text = entry.message.get("content")
            if isinstance(text, str) and text:  # a prompt typed as plain text stays so
                out.append({"role": "user", "content": text})
                continue
            on_chain.update(
                str(b.get("tool_use_id")) for b in content if b.get("type") == "tool_result"
            )
            out.append({"role": "user", "content": content})
        elif entry.type == "assistant" and entry.message is not None:
            reply_id = entry.message_id
            if reply_id is None:
                out.append({"role": "assistant", "content": entry.blocks()})
                continue
            if reply_id in replies_done:
                continue
            replies_done.add(reply_id)
            out.append({"role": "assistant", "content": list(blocks_of_reply[reply_id])})
    # Parallel results that hang off the chain as side branches (Claude Code 2.1): put each
    # one in the user message after its tool_use, where the API wants it.
    for i, message in enumerate(out):
        if message["role"] != "assistant":
            continue
        missing = [
            results[u["id"]]
            for u in m.tool_uses(message)
            if u.get("id") not in on_chain and u.get("id") in results
        ]
        if not missing:
            continue
        for block in missing:
            on_chain.add(str(block["tool_use_id"]))
        following = out[i + 1] if i + 1 < len(out) else None
        if following is not None and following["role"] == "user":
            following["content"] = [*missing, *m.blocks(following)]
        else:
            out.insert(i + 1, {"role": "user", "content": missing})
    out = _merge_same_role(out)
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


def _merge_same_role(conversation: list[m.MessageDict]) -> list[m.MessageDict]:
    """Consecutive messages of one role as one (tool results first), as the API view has
    them: a prompt typed after tool results is its own entry, but joins their message."""
    out: list[m.MessageDict] = []
    for message in conversation:
        if out and out[-1]["role"] == message["role"]:
            out[-1] = _joined(out[-1], message)
        else:
            out.append(message)
    return out


def _joined(first: m.MessageDict, second: m.MessageDict) -> m.MessageDict:
    """Two messages of one role as one; in a user message, tool results go first (the API
    refuses a tool_result after other content)."""
    merged = [*m.blocks(first), *m.blocks(second)]
    if first["role"] == "user":
        merged = [b for b in merged if b.get("type") == "tool_result"] + [
            b for b in merged if b.get("type") != "tool_result"
        ]
    return {"role": first["role"], "content": merged}


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
    no call. A pure function: it reads nothing and changes nothing."""
    findings: list[Finding] = []
    uuids: dict[str, int] = {}
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
    readable = [e for e in entries if isinstance(e, Entry)]
    for entry in readable:
        if entry.uuid is not None and entry.parent_uuid and entry.parent_uuid not in uuids:
            findings.append(
                Finding(
                    entry.line,
                    "broken chain",
                    f"parent {entry.parent_uuid} is not in the file",
                    entry.uuid,
                )
            )
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
            for block in entry.blocks():
                if entry.type == "assistant" and block.get("type") == "tool_use":
                    uses.setdefault(str(block.get("id")), entry.line)
                elif entry.type == "user" and block.get("type") == "tool_result":
                    answers.setdefault(str(block.get("tool_use_id")), entry.line)
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


def repair(
    messages: Sequence[Mapping[str, Any]], *, unresolved: UnresolvedPolicy = "answer"
) -> Repair:
    """Make ``messages`` a conversation the API accepts, and list every change.

    In order: blocks the API does not know, blank text and text that is not valid Unicode
    are dropped or mended; assistant messages left with only thinking (or nothing) are
    dropped; same-role neighbours are merged (tool results first); a tool call with no
    result is answered as interrupted (``unresolved="answer"``, which keeps what the model
    asked) or dropped (``"drop"``, Claude Code's choice); a result that answers no call in
    the message before it is dropped, as is a second result or call with the same id. A
    conversation that starts with the model gets a first user line saying the start is
    missing. The input is not changed. ``[]`` stays ``[]`` (there is nothing to resume).
    """
    changes: list[Change] = []
    work: list[tuple[int, m.MessageDict]] = []
    for index, message in enumerate(messages):
        mended = _mend_message(index, message, changes)
        if mended is not None:
            work.append((index, mended))
    work = _settle(work, changes, unresolved)
    if work and work[0][1]["role"] != "user":
        work.insert(0, (0, m.user([m.text(RESUMED_WITHOUT_START)])))
        changes.append(Change("start added", 0, "the conversation began with the model"))
    # A safety net for what the rules above do not foresee: drop what the API would still
    # refuse, and settle again. (The property tests have not found such a case.)
    for _ in range(2 * len(work) + 2):
        problems = m.validate([msg for _, msg in work]) if work else []
        if not problems:
            break
        index, _ = work.pop(problems[0].index)
        changes.append(Change("message dropped", index, f"still invalid: {problems[0].detail}"))
        work = _settle(work, changes, unresolved)
        if work and work[0][1]["role"] != "user":
            work.insert(0, (0, m.user([m.text(RESUMED_WITHOUT_START)])))
    else:
        work = []  # nothing the API accepts could be kept
        changes.append(Change("message dropped", 0, "no valid conversation could be kept"))
    return Repair([msg for _, msg in work], changes)


def _settle(
    work: list[tuple[int, m.MessageDict]], changes: list[Change], unresolved: UnresolvedPolicy
) -> list[tuple[int, m.MessageDict]]:
    for _ in range(4):  # each pass can only shrink what is left to fix; two usually do
        before = len(changes)
        work = _merge_neighbours(work, changes)
        work = _pair_tools(work, changes, unresolved)
        work = [(i, msg) for i, msg in work if _keep(i, msg, changes)]
        if len(changes) == before:
            break
    return work


def _mend_message(
    index: int, message: Mapping[str, Any], changes: list[Change]
) -> m.MessageDict | None:
    role = message.get("role")
    if role not in ("user", "assistant"):
        changes.append(Change("message dropped", index, f"role {role!r} is not user or assistant"))
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
            what = block.get("type") if isinstance(block, Mapping) else type(block).__name__
            changes.append(Change("block dropped", index, f"content[{j}] ({what})"))
            continue
        if fixed != block:
            changes.append(Change("block mended", index, f"content[{j}] ({fixed.get('type')})"))
        kept.append(fixed)
    if isinstance(content, str) and kept == raw:
        return {"role": role, "content": content}  # a prompt kept as plain text stays so
    return {"role": role, "content": kept}


def _mend_block(role: str, given: Any) -> m.Block | None:
    block: dict[str, Any]
    if not isinstance(given, Mapping):
        return None
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
        if m._tool_result_content_problem(block.get("content", "")) is not None:
            block["content"] = m.valid_text(json.dumps(block.get("content"), default=str))
        elif isinstance(block.get("content"), str):
            block["content"] = m.valid_text(block["content"])
    if m._bad_unicode(block, "") is not None:
        cleaned: Any = json.loads(m.valid_text(json.dumps(block, ensure_ascii=False)))
        block = dict(cleaned) if isinstance(cleaned, dict) else block
    if kind in ("tool_use", "server_tool_use") and role != "assistant":
        return None
    return block


def _merge_neighbours(
    work: list[tuple[int, m.MessageDict]], changes: list[Change]
) -> list[tuple[int, m.MessageDict]]:
    out: list[tuple[int, m.MessageDict]] = []
    for index, message in work:
        if out and out[-1][1]["role"] == message["role"]:
            first_index, first = out[-1]
            out[-1] = (first_index, _joined(first, message))
            changes.append(Change("merged", index, f"into the {message['role']} message before it"))
        else:
            out.append((index, message))
    return out


def _pair_tools(
    work: list[tuple[int, m.MessageDict]], changes: list[Change], unresolved: UnresolvedPolicy
) -> list[tuple[int, m.MessageDict]]:
    out = list(work)
    seen_uses: set[str] = set()
    for k, (index, message) in enumerate(out):
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
            following = out[k + 1][1] if k + 1 < len(out) else None
            answered = (
                {str(r.get("tool_use_id")) for r in m.tool_results(following)}
                if following is not None and following["role"] == "user"
                else set()
            )
            missing = [u for u in uses if u["id"] not in answered]
            if missing and unresolved == "drop":
                gone = {u["id"] for u in missing}
                content = [
                    b for b in content if not (b.get("type") == "tool_use" and b["id"] in gone)
                ]
                for use in missing:
                    changes.append(
                        Change("tool_use dropped", index, f"{use['id']} was never answered")
                    )
            elif missing:
                answers = [m.tool_result(u["id"], INTERRUPTED, is_error=True) for u in missing]
                for use in missing:
                    changes.append(
                        Change("tool_use answered", index, f"{use['id']} as interrupted")
                    )
                if following is not None and following["role"] == "user":
                    out[k + 1] = (
                        out[k + 1][0],
                        {"role": "user", "content": [*answers, *m.blocks(following)]},
                    )
                else:
                    out.insert(k + 1, (index, m.user(answers)))
            if content != m.blocks(message):
                out[k] = (index, {"role": "assistant", "content": content})
        else:
            previous = out[k - 1][1] if k > 0 else None
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
                out[k] = (index, {"role": "user", "content": kept})
    return out


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

    # -- the plugin points -------------------------------------------------------------------

    def before_request(self, agent: BaseAgent) -> Rewrite | None:
        def write() -> None:
            self.sync(agent.messages)
            self.flush(durable=self.fsync)

        self._guard(agent, write)
        return None

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        self._guard(agent, lambda: self.sync(agent.messages, reply=reply))

    def after_tools(self, agent: BaseAgent, results: list[m.Block]) -> None:
        self._guard(agent, lambda: self.sync(agent.messages))

    def on_rewrite(self, agent: BaseAgent, rewrite: Rewrite) -> None:
        self._guard(agent, lambda: self.record_rewrite(agent.messages, rewrite))

    # -- writing ---------------------------------------------------------------------------

    def sync(self, conversation: Sequence[m.MessageDict], *, reply: Message | None = None) -> None:
        """Write whatever of ``conversation`` is not written yet, and flush it."""
        if len(conversation) < self._count or (
            self._count and conversation[self._count - 1] is not self._last
        ):
            # Changed without a rewrite we were told of: start over under a boundary.
            self._boundary(conversation, "rewrite", None, None)
            self._write_messages(conversation, summary=False, reply=reply)
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
            "uuid": self.ids(),
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
        self._append(entry, chained=True)
        self._count, self._last, self._last_blocks = 0, None, 0

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
