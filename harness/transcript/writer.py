"""The transcript writer: :class:`Transcript`, a loop plugin that appends each message to
the file as it joins the conversation.

It flushes each entry to the operating system at once; before each model call it also
``fsync``\\ s, so every finished tool result is on disk before the model is asked anything
(a crash then loses nothing that was done). A compaction writes a ``compact_boundary``
entry (``parentUuid: null``, which cuts the chain on purpose) and the new conversation
after it, its first message marked ``isCompactSummary``. Also here: where Claude Code keeps
a project's sessions (:func:`project_folder`) and the ids entries get.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import uuid as uuidlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from anthropic.types import Message

from harness import messages as m
from harness.clock import Clock, RealClock, isoformat
from harness.compaction.events import Compacted
from harness.events import Event
from harness.loop import BaseAgent, Plugin, Rewrite, ToolProgress

VERSION = "harness-0.1.0"
"""What our entries carry in ``version`` (Claude Code writes its own version, "2.1.39")."""


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
