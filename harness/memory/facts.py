"""Session memory's facts: one fact and where it came from, the facts that stand, and the errors.

:class:`Fact` is one fact, with where it came from (a tool call's id or the user, the reply it
belongs to, when it was written, and the fact it supersedes); :func:`live_facts` gives the
facts that stand (a loop of supersedes is broken at its newest fact, so none is lost).
:class:`SessionMemoryError` and its two kinds say why a memory file cannot be used.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness import messages as m

SectionName = Literal[
    "Current state",
    "Task",
    "Files and functions",
    "Errors and corrections",
    "Learnings",
    "Worklog",
]
SECTIONS: tuple[SectionName, ...] = get_args(SectionName)
"""Claude Code's session-memory sections (as observed), in the file's order."""

HAND_EDIT = "hand-edit"
"""The source of a fact someone wrote into the file by hand."""

_ID = r"^f[1-9][0-9]*$"


class Fact(BaseModel):
    """One fact of the session, and where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    section: SectionName
    text: str
    """One line of text (runs of whitespace become one space)."""
    id: str | None = Field(None, pattern=_ID)
    """``f1``, ``f2``...: given when the fact is recorded (None for a line not yet recorded)."""
    source: str = Field(HAND_EDIT, pattern=r"^[A-Za-z0-9_.:@-]{1,100}$")
    """Where it came from: a tool call's id (``toolu_...``), ``user``, or ``hand-edit``."""
    turn: int | None = Field(None, ge=1)
    """The reply of the session it came from (1 is the first reply)."""
    at: datetime | None = None
    """When it was recorded (UTC, to the second)."""
    supersedes: str | None = Field(None, pattern=_ID)
    """The fact this one corrects or updates."""

    @field_validator("text")
    @classmethod
    def _one_line(cls, value: str) -> str:
        flat = " ".join(value.split())
        if not flat:
            raise ValueError("a fact needs some text")
        if "<!--" in flat or "-->" in flat:
            raise ValueError("a fact's text cannot contain '<!--' or '-->' (they mark its origin)")
        if not m.is_utf8(flat):
            raise ValueError("a fact's text must be valid Unicode (it has a lone surrogate)")
        return flat

    @field_validator("at")
    @classmethod
    def _utc_seconds(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        try:
            moment = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        except OverflowError:  # a time zone that pushes it past the ends of the calendar
            raise ValueError(f"{value.isoformat()} is out of range in UTC") from None
        if not 1000 <= moment.year <= 9999:
            raise ValueError(f"a fact's time must be in the years 1000-9999, not {moment.year}")
        return moment.replace(microsecond=0)

    @model_validator(mode="after")
    def _not_its_own_successor(self) -> Fact:
        if self.id is not None and self.supersedes == self.id:
            raise ValueError(f"a fact cannot supersede itself ({self.id})")
        return self

    @property
    def number(self) -> int:
        """The number in its id (0 for a fact not yet recorded): larger is newer."""
        return int(self.id[1:]) if self.id else 0


class SessionMemoryError(Exception):
    """The memory file cannot be used as it is; it is left untouched, and the message says why.

    The one class to catch around :meth:`SessionMemory.load` (resuming a session, ``/memory``,
    tier 2): a broken or misplaced file is something a person fixes, not a crash.
    """


class MemoryFormatError(SessionMemoryError, ValueError):
    """``MEMORY.md`` does not follow the format; says which line and why.

    ``path`` is the file when it was read from one (:meth:`SessionMemory.load`), None when
    :func:`parse` was given text.
    """

    def __init__(self, line: int, problem: str, *, path: Path | None = None) -> None:
        super().__init__(f"MEMORY.md line {line}: {problem}")
        self.line = line
        self.problem = problem
        self.path = path


class MemoryPathError(SessionMemoryError):
    """The memory file cannot be read or written where it is: it leads out of the folder it
    must stay in (a symbolic link on the way), or the file system refused.

    ``path`` is the memory file as it was given.
    """

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def live_facts(facts: Sequence[Fact]) -> list[Fact]:
    """The facts that stand: those no other fact supersedes, in their order.

    A fact naming one that is not there (``supersedes=f99``) drops nothing. Supersedes can
    form a loop (f1 supersedes f2 and f2 supersedes f1, or f1 → f2 → f3 → f1: a hand edit,
    or a fork that edited an old line's comment), where each fact is superseded by another
    and none would stand. The loop is broken at its newest fact (the largest id): the link
    that points at it is ignored, so it stands and every other fact of the loop is superseded,
    through it. So no fact is lost: each one left out is superseded, directly or along a
    chain, by one that stands. Linear in the number of facts.
    """
    where: dict[str, int] = {}
    for n, fact in enumerate(facts):
        if fact.id is not None:
            where.setdefault(fact.id, n)
    # Each fact supersedes at most one other: follow the links, one walk per fact at most.
    target = [where.get(f.supersedes) if f.supersedes else None for f in facts]
    state = [0] * len(facts)  # 0 not seen, 1 on the current walk, 2 done
    for start in range(len(facts)):
        walk: list[int] = []
        at: int | None = start
        while at is not None and state[at] == 0:
            state[at] = 1
            walk.append(at)
            at = target[at]
        if at is not None and state[at] == 1:  # back on this walk: a loop
            loop = walk[walk.index(at) :]
            newest = max(loop, key=lambda i: (facts[i].number, i))
            for i in loop:
                if target[i] == newest:
                    target[i] = None
        for i in walk:
            state[i] = 2
    superseded = {t for t in target if t is not None}
    return [f for n, f in enumerate(facts) if n not in superseded]
