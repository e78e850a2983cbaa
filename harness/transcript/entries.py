"""Transcript entries: one line of the file as an :class:`Entry`, or a :class:`BadLine` that
says why not.

:func:`parse_line` reads one line. Unknown entry types and fields pass; a torn or corrupt
line, a known field of the wrong type, or JSON nested deeper than :data:`MAX_DEPTH` makes a
:class:`BadLine`, which the loader reports as a :class:`Finding` and skips.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness import messages as m

ENTRY_TYPES_WITH_MESSAGES = ("user", "assistant")


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
