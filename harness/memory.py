"""Session memory: the facts of a session, kept in a file as it runs, for compaction to use.

A summary written when the context is full (tier 3) is one model's reading of a long
conversation at its most crowded moment: a correction the user made an hour ago can be left
out, and then the agent makes the same mistake again. Claude Code also keeps *session memory*
while the session runs: after some replies, a forked agent (``harness.fork``) reads the
conversation from the cache and updates a markdown file of fixed sections. When the context
fills up, the memory replaces the old messages with no model call at all (tier 2,
``harness.compaction.session_memory``).

This module holds:

* :class:`Fact`: one fact, with where it came from (a tool call's id or the user, the reply
  it belongs to, when it was written, and the fact it supersedes); :func:`live_facts`, the
  facts that stand (a loop of supersedes is broken at its newest fact, so none is lost);
* :func:`render` and :func:`parse`: facts to ``MEMORY.md`` and back, exactly (a person may
  edit the file; the next read sees the edit, and a line that breaks the format is an error
  naming its line, never a guess);
* :func:`write_atomic`: a new file is written beside the old one, flushed to disk and moved
  over it in one step, so a crash leaves the old file or the new one, never half of either
  (and the next write removes the temporary file a killed writer left);
* :class:`SessionMemory`: the plugin that decides when to extract (first after 10K tokens
  and 3 tool calls, then every 5K tokens and 3 tool calls: Claude Code's numbers as observed),
  runs the fork, checks its edits, holds each section to about 2K tokens and the whole to
  about 12K (what it trims, it names), and writes the file, never over a file it could not
  read or one changed meanwhile, and never through a link out of its folder (``root``).

The fork edits the file with the agent's own ``edit_file`` tool definition, as Claude Code's
memory agent uses its Edit tool: the definitions must be the parent's, byte for byte, or the
cached prefix would not match. Its edits are applied to a copy in memory
(:class:`MemoryEditor`), checked, and written once at the end.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

import anthropic
from anthropic.types import Message
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness import messages as m
from harness import tokens
from harness.compaction.context import ContextTracker
from harness.events import Event
from harness.fork import DEFAULT_FORK_TURNS, ForkResult, run_fork
from harness.loop import BaseAgent, Plugin
from harness.pricing import prompt_tokens
from harness.tools.base import ToolError
from harness.tools.builtins import replace_text

# -- facts --------------------------------------------------------------------------------------

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

SECTION_TOKENS = 2_000  # per section, as observed in Claude Code's session memory
TOTAL_TOKENS = 12_000  # the whole memory, as observed
TRIM_ORDER: tuple[SectionName, ...] = (
    "Worklog",
    "Files and functions",
    "Learnings",
    "Current state",
    "Errors and corrections",
    "Task",
)
"""Where room is made first when the whole memory is over budget (our choice: the log of what
was done goes before what the user asked for and corrected)."""

HAND_EDIT = "hand-edit"
"""The source of a fact someone wrote into the file by hand."""

_ID = r"^f[1-9][0-9]*$"
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


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


# -- MEMORY.md ----------------------------------------------------------------------------------

TITLE = "# Session memory"
NOTE = (
    "<!-- One fact per line, under its section. The comment after a fact says where it came "
    "from; a line you add without one is kept as written. -->"
)
_FACT_LINE = re.compile(r"^[-*] (?P<text>.*?)(?: <!-- (?P<meta>[^<>]*) -->)?$")
_SECTION_BY_KEY = {name.lower(): name for name in SECTIONS}


def _meta(fact: Fact) -> str:
    parts = [fact.id] if fact.id else []
    if fact.turn is not None:
        parts.append(f"turn={fact.turn}")
    if fact.source != HAND_EDIT:
        parts.append(f"from={fact.source}")
    if fact.at is not None:
        parts.append(f"at={fact.at.strftime(_TIME_FORMAT)}")
    if fact.supersedes:
        parts.append(f"supersedes={fact.supersedes}")
    return " ".join(parts)


def fact_line(fact: Fact, *, provenance: bool = True) -> str:
    """The fact's line in the file: ``- text <!-- f3 turn=7 from=toolu_0012 ... -->``."""
    meta = _meta(fact) if provenance else ""
    return f"- {fact.text} <!-- {meta} -->" if meta else f"- {fact.text}"


def render(facts: Iterable[Fact], *, provenance: bool = True) -> str:
    """``MEMORY.md`` for ``facts``: a title, then every section in order, facts as bullets.

    With ``provenance=False`` the origin comments are left out: the text that goes into the
    model's context (tier 2), where they would only cost tokens.
    """
    by_section: dict[str, list[Fact]] = {name: [] for name in SECTIONS}
    for fact in facts:
        by_section[fact.section].append(fact)
    out = [TITLE, ""]
    if provenance:
        out += [NOTE, ""]
    for name in SECTIONS:
        out.append(f"## {name}")
        out += [fact_line(f, provenance=provenance) for f in by_section[name]]
        out.append("")
    return "\n".join(out)


def _parse_meta(meta: str, line: int) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    keys = {"turn": "turn", "from": "source", "at": "at", "supersedes": "supersedes"}
    for n, token in enumerate(meta.split()):
        if n == 0 and re.match(_ID, token):
            fields["id"] = token
            continue
        key, sep, value = token.partition("=")
        if not sep or key not in keys or not value:
            raise MemoryFormatError(
                line, f"{token!r} in the comment is not one of turn=, from=, at=, supersedes="
            )
        if keys[key] in fields:
            raise MemoryFormatError(line, f"{key}= is given twice")
        if key == "at":
            try:
                fields["at"] = datetime.strptime(value, _TIME_FORMAT).replace(tzinfo=UTC)
            except ValueError:
                raise MemoryFormatError(
                    line, f"at={value} is not a time like 2026-01-01T12:00:00Z"
                ) from None
        else:
            fields[keys[key]] = value
    return fields


def parse(text: str) -> list[Fact]:
    """The facts in a ``MEMORY.md``, in file order; :class:`MemoryFormatError` if it is off.

    ``parse(render(facts)) == facts`` for facts in section order (``render`` groups them by
    section) whose ids are unique. A line added by hand (no comment) is a
    fact with source ``hand-edit`` and no id yet; a title, blank lines and comment lines are
    skipped; anything else (an unknown section, a paragraph, a bad comment) is an error that
    names the line.
    """
    facts: list[Fact] = []
    section: str | None = None
    lines_of: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or (line.startswith("# ") and not line.startswith("## ")):
            continue
        if line.startswith("<!--") and line.endswith("-->"):
            continue
        if line.startswith("## "):
            key = " ".join(line[3:].split()).lower()
            if key not in _SECTION_BY_KEY:
                raise MemoryFormatError(
                    number,
                    f"unknown section {line[3:].strip()!r}; the sections are "
                    + ", ".join(SECTIONS),
                )
            section = _SECTION_BY_KEY[key]
            continue
        found = _FACT_LINE.match(line)
        if found is None:
            raise MemoryFormatError(
                number, f"{_shorten(line)!r} is not a fact: a fact is one line starting with '- '"
            )
        if section is None:
            raise MemoryFormatError(number, "a fact before the first '## ' section heading")
        fields = _parse_meta(found.group("meta") or "", number)
        if (taken := lines_of.setdefault(fields.get("id", ""), number)) != number and fields.get(
            "id"
        ):
            raise MemoryFormatError(
                number, f"id {fields['id']} is already used on line {taken}: ids are unique"
            )
        try:
            facts.append(Fact(section=section, text=found.group("text"), **fields))
        except ValidationError as error:
            problem = "; ".join(str(e["msg"]) for e in error.errors())
            raise MemoryFormatError(number, problem) from None
    return facts


def _shorten(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


_WRITING: set[str] = set()
"""The temporary files this process is writing now (any thread): never stale."""
_WRITING_LOCK = threading.Lock()


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that a crash at any moment leaves a whole file.

    The text goes to a temporary file in the same folder, is flushed to the disk (``fsync``),
    and is then moved over the old file with ``os.replace``, one step the file system does
    whole. The folder is synced too, so the move itself survives a power cut (POSIX). Never
    delete-then-write: a crash between the two would lose the memory.

    A process killed before the move leaves its temporary file behind. So the temporary file
    is named ``.<name>.<pid>-<random>.tmp``, and each write, once its own file is in place,
    removes the ones of the same target left by a process that is gone
    (:func:`stale_temporaries`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp", dir=path.parent
    )
    try:
        with _being_written(temporary):
            with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    if hasattr(os, "O_DIRECTORY"):  # not on Windows, where the rename is already durable
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    for stale in stale_temporaries(path):  # the write is done: tidying can only help
        with contextlib.suppress(OSError):
            os.unlink(stale)


@contextlib.contextmanager
def _being_written(temporary: str) -> Iterator[None]:
    """Mark ``temporary`` as this process's write in progress (another thread's write of the
    same target must not take it for a dead writer's)."""
    key = os.path.abspath(temporary)
    with _WRITING_LOCK:
        _WRITING.add(key)
    try:
        yield
    finally:
        with _WRITING_LOCK:
            _WRITING.discard(key)


def stale_temporaries(path: Path) -> list[Path]:
    """The temporary files of ``path``'s earlier writes whose writer is gone.

    They are told from a live writer's by the process id in their name, not by their age: a
    slow write of a large file is not stale however long it takes, and a dead writer's file is
    stale at once. A file of a process that is still running is kept (whatever it is doing:
    if its id was reused, the file waits for that process to end), and so is one this process
    is writing now, from another thread. Other targets' files are never touched, nor
    temporary files without a process id (from before this naming). On Windows, where a
    process cannot be asked whether it runs without being ended, only this process's own
    leftovers count. Limit: a folder shared between machines or containers would need their
    names in the file name too, as process ids are only meaningful on one machine.
    """
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(\d+)-[a-z0-9_]+\.tmp$")
    folder = os.path.abspath(path.parent)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    with _WRITING_LOCK:
        writing = set(_WRITING)
    out: list[Path] = []
    for name in sorted(names):
        found = pattern.match(name)
        full = os.path.join(folder, name)
        if found is None or full in writing:
            continue
        pid = int(found.group(1))
        if pid == os.getpid() or not _running(pid):
            out.append(Path(full))
    return out


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists (True when it cannot be told: nothing is removed)."""
    if os.name != "posix":  # os.kill would end the process there
        return True
    if pid <= 0:  # 0 and -1 are groups of processes, not a writer
        return False
    try:
        os.kill(pid, 0)  # signal 0: only asks whether it exists
    except ProcessLookupError:
        return False
    except OverflowError:  # not a process id this system can have
        return False
    except OSError:  # PermissionError: it exists, another user's
        return True
    return True


# -- budgets ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trimmed:
    """A fact taken out to keep the memory in budget, and which budget it broke."""

    fact: Fact
    budget: str
    """``section`` (its section was over ``section_tokens``) or ``total``."""

    def __str__(self) -> str:
        return f"{self.fact.id} from {self.fact.section} ({self.budget} budget)"


def _section_tokens(section: str, lines: Iterable[str]) -> int:
    return tokens.estimate_text("\n".join([f"## {section}", *lines]))


def section_tokens(facts: Sequence[Fact], section: str) -> int:
    """Tokens one section takes in the model's context (heading and facts, no comments)."""
    return _section_tokens(
        section, (fact_line(f, provenance=False) for f in facts if f.section == section)
    )


def _fewest(most: int, fits: Callable[[int], bool]) -> int:
    """The smallest ``k`` in ``0..most`` for which ``fits(k)``, or ``most`` if none does.

    ``fits`` must stay true once it is (dropping more never makes the memory bigger). Tried
    first at 0 (nothing to drop: the usual case), then from ``most`` down, 1, 2, 4... short of
    it, then by bisection: a memory far over its budget keeps only a few facts, and checking
    a few facts is quick.
    """
    if most == 0 or fits(0):
        return 0
    low, high = 0, most  # fits(low) is false; fits(high), unless high == most
    step = 1
    while step < most:
        if not fits(most - step):
            low = most - step
            break
        high = most - step
        step *= 2
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle
    return high


def fit_budgets(
    facts: Sequence[Fact], *, per_section: int = SECTION_TOKENS, total: int = TOTAL_TOKENS
) -> tuple[list[Fact], list[Trimmed]]:
    """Drop the oldest facts until each section and the whole fit; say what was dropped.

    A section over ``per_section`` loses its oldest facts first; then, while the whole is over
    ``total``, the oldest fact of the first section in :data:`TRIM_ORDER` that has any goes.
    (Oldest: the smallest id; between equals, the first in the list.)

    Dropping one fact at a time and measuring again took time quadratic in the facts (a
    hand-pasted log of 8,000 lines: 16 s). But the facts go in a known order (a section's
    oldest first; for the total, :data:`TRIM_ORDER`'s sections one after the other, each
    measured against what the others take), and the more are dropped the fewer tokens are
    left, so how many must go is searched for (:func:`_fewest`): the same facts are dropped,
    in the same order, in n log n time.
    """
    facts = list(facts)
    lines = [fact_line(f, provenance=False) for f in facts]
    left: dict[str, list[int]] = {name: [] for name in SECTIONS}
    for n, fact in enumerate(facts):
        left[fact.section].append(n)
    trimmed: list[Trimmed] = []

    def trim(name: str, budget: int, reason: str) -> int:
        """Drop the section's oldest facts until it takes at most ``budget`` tokens (or has
        none left); its tokens after."""
        order = sorted(left[name], key=lambda n: (facts[n].number, n))

        def size(k: int) -> int:  # with the k oldest gone; the rest in the list's order
            return _section_tokens(name, (lines[n] for n in sorted(order[k:])))

        drop = _fewest(len(order), lambda k: size(k) <= budget)
        trimmed.extend(Trimmed(facts[n], reason) for n in order[:drop])
        left[name] = sorted(order[drop:])
        return size(drop)

    size_of = {name: trim(name, per_section, "section") for name in SECTIONS}
    for name in TRIM_ORDER:
        others = sum(size_of.values()) - size_of[name]
        if others + size_of[name] <= total:
            break
        size_of[name] = trim(name, total - others, "total")
    kept = sorted(n for name in SECTIONS for n in left[name])
    return [facts[n] for n in kept], trimmed


# -- the fork's edit tool -----------------------------------------------------------------------


class MemoryEditor:
    """Runs the memory fork's tool calls against a copy of ``MEMORY.md`` held in memory.

    Only ``edit_file`` (and ``write_file``) on the memory file are allowed, as Claude Code lets
    its memory agent use only its Edit tool on that one file. Each edit follows
    ``edit_file``'s rules (the old text must occur exactly once) and must leave a file that
    :func:`parse` accepts: an edit that would break it is refused with the reason, so the fork
    can try again, and the copy stays as it was.
    """

    def __init__(self, path: str, text: str, *, real: Path | None = None) -> None:
        self.path = path
        self.real = real.resolve() if real is not None else None
        """The file itself: a model may name it by its absolute path instead."""
        self.text = text
        self.edits = 0
        self.refused = 0

    def _is_memory(self, path: object) -> bool:
        if not isinstance(path, str):
            return False
        if path.strip().removeprefix("./") == self.path:
            return True
        given = Path(path.strip())
        return self.real is not None and given.is_absolute() and given.resolve() == self.real

    def run(self, calls: Sequence[m.Block]) -> list[m.Block]:
        return [self._one(call) for call in calls]

    def _one(self, call: m.Block) -> m.Block:
        call_id, name, args = str(call["id"]), call.get("name"), call.get("input")
        if not isinstance(args, dict):
            args = {}
        try:
            if name not in ("edit_file", "write_file") or not self._is_memory(args.get("path")):
                raise ValueError(
                    f"this memory update may only change {self.path}, with edit_file "
                    f"(not {name} on {args.get('path')!r})"
                )
            new = self._edited(name, args)
            parse(new)  # the file must stay readable: a broken edit is refused, not written
        except (ValueError, TypeError) as error:
            self.refused += 1
            return m.tool_result(call_id, f"Refused: {error}", is_error=True)
        self.text = new
        self.edits += 1
        return m.tool_result(call_id, f"Edited {self.path}")

    def _edited(self, name: object, args: dict[str, Any]) -> str:
        if name == "write_file":
            content = args.get("content")
            if not isinstance(content, str):
                raise ValueError("write_file needs content, the whole new file")
            return content
        old, new = args.get("old_string"), args.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str):
            raise ValueError("edit_file needs old_string and new_string")
        try:  # the builtin edit_file's own rule, on the copy
            text, _ = replace_text(self.text, old, new, bool(args.get("replace_all")), self.path)
        except ToolError as error:
            raise ValueError(str(error)) from None
        return text


# -- when to extract ----------------------------------------------------------------------------


class ExtractionSchedule(BaseModel):
    """When session memory is brought up to date (Claude Code's numbers, as observed)."""

    model_config = ConfigDict(frozen=True)

    first_tokens: int = Field(10_000, gt=0)
    """The first extraction waits until the context holds this many tokens..."""
    every_tokens: int = Field(5_000, gt=0)
    """...and each later one until it has grown by this many since the last..."""
    tool_calls: int = Field(3, ge=0)
    """...and, both times, until this many tool calls were made since the last."""

    def due(self, context: int, at_last: int | None, calls_since: int) -> bool:
        """Whether to extract now: ``context`` tokens, ``at_last`` at the last extraction."""
        if calls_since < self.tool_calls:
            return False
        if at_last is None:
            return context >= self.first_tokens
        return context - at_last >= self.every_tokens


# -- events and records -------------------------------------------------------------------------


@dataclass(frozen=True)
class ForkUsage:
    """The model calls of one extraction fork, and their tokens."""

    calls: int = 0
    prompt_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def of(cls, fork: ForkResult) -> ForkUsage:
        return cls(
            calls=fork.calls,
            prompt_tokens=sum(prompt_tokens(r.usage) for r in fork.replies),
            cache_read_tokens=fork.tokens("cache_read_input_tokens"),
            output_tokens=fork.tokens("output_tokens"),
        )


@dataclass(frozen=True)
class Extraction:
    """One extraction: when, what it changed, and what its fork cost."""

    reply: int
    """The session's reply it followed."""
    context_tokens: int
    ok: bool
    reason: str = ""
    """Why it failed (the memory was left as it was)."""
    added: tuple[Fact, ...] = ()
    superseded: tuple[Fact, ...] = ()
    removed: tuple[Fact, ...] = ()
    """Facts the fork deleted without superseding them."""
    trimmed: tuple[Trimmed, ...] = ()
    usage: ForkUsage = field(default_factory=lambda: ForkUsage())
    """What the fork's model calls took."""


@dataclass(frozen=True)
class MemoryUpdated(Event):
    extraction: Extraction

    def __str__(self) -> str:
        e, u = self.extraction, self.extraction.usage
        parts = [f"+{len(e.added)} fact{'' if len(e.added) == 1 else 's'}"]
        if e.superseded:
            parts.append(f"{len(e.superseded)} superseded")
        if e.removed:
            parts.append(f"{len(e.removed)} removed")
        line = (
            f"🧠 session memory after reply {e.reply}: {', '.join(parts)}; fork: {u.calls} "
            f"call{'' if u.calls == 1 else 's'}, {u.cache_read_tokens:,} of "
            f"{u.prompt_tokens:,} prompt tokens from cache"
        )
        if e.trimmed:
            line += "; trimmed " + ", ".join(str(t) for t in e.trimmed)
        return line


@dataclass(frozen=True)
class MemoryNotUpdated(Event):
    reply: int
    reason: str

    def __str__(self) -> str:
        return (
            f"⚠ session memory not updated after reply {self.reply}: {self.reason} "
            "(the previous memory is kept)"
        )


# -- the plugin ---------------------------------------------------------------------------------

EXTRACTION_MARKER = "Update the session memory file"


def extraction_directive(path: str, current: str, *, per_section: int, total: int) -> str:
    """The fork's instruction: the file as it is now, and how to update it."""
    return f"""{EXTRACTION_MARKER} {path} from the conversation above. Do not answer or \
continue the conversation's work: only update that file, with the edit_file tool (no other \
tool, no other file).

The file now holds:
```markdown
{current}```

Rules:
- One fact per line, "- " then the fact, under its section: {", ".join(SECTIONS)}.
- End each line you add with <!-- from=ID -->: the id of the tool call it comes from \
(toolu_...), or user for something the user said.
- To correct or update a fact, replace its whole line with the new one and name the old \
fact's id in the comment: <!-- from=ID supersedes=f3 -->. Leave every other line as it is, \
comment included.
- Record what someone taking over would need: the task in the user's words, every \
correction the user made, errors and how they were fixed, the files and functions that \
matter, what was learned, the current state, and a line of worklog.
- Keep each section under about {per_section:,} tokens and the file under about {total:,}.
- When the file is up to date, answer with one short sentence."""


class SessionMemory(Plugin):
    """Keeps ``MEMORY.md`` up to date as the session runs; tier 2 compacts with it.

    Put it in the agent's ``plugins``; after each reply it checks the schedule and, when due,
    runs the extraction fork. Hand it to ``harness.compaction.session_memory`` for tier 2.

    Teaching simplification: Claude Code runs the extraction in the background while the
    session goes on (and tier 2 waits for a running one to finish before it reads the file).
    Here it runs at once, after the reply, so every run is deterministic; the cost in tokens
    is the same, only the wait differs.

    ``root``, when given, is the folder the file must stay in: the memory is neither read nor
    written when the file's real path (every symbolic link on the way followed) is outside
    ``root``'s real path, so a ``session-memory`` folder linked elsewhere cannot make the
    extraction write there (:class:`MemoryPathError`). The command line gives its sessions
    folder.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        root: str | Path | None = None,
        schedule: ExtractionSchedule | None = None,
        per_section: int = SECTION_TOKENS,
        total: int = TOTAL_TOKENS,
        fork_turns: int = DEFAULT_FORK_TURNS,
    ) -> None:
        self.path = Path(path)
        self.root = Path(root) if root is not None else None
        self.schedule = schedule or ExtractionSchedule()
        self.per_section = per_section
        self.total = total
        self.fork_turns = fork_turns
        self.tracker = ContextTracker()
        """How big the context is: the last reply's usage, as auto-compact measures it."""
        self.facts: list[Fact] = []
        """The memory as last read or written (the file is the truth: see :meth:`load`)."""
        self.extractions: list[Extraction] = []
        self.covered: m.MessageDict | None = None
        """The last message of the conversation the latest extraction read (by identity)."""
        self.replies = 0
        """Replies of the session so far (``after_reply`` counts them)."""
        self.last_fork: ForkResult | None = None
        self._at_last: int | None = None
        self._calls_since = 0
        self._text: str | None = None
        """The file's text as last read or written, to notice an edit made by hand."""
        self._next = 1

    # -- the file ----------------------------------------------------------------------------

    def load(self, now: float | None = None) -> list[Fact]:
        """Read ``MEMORY.md`` again if it changed (a hand edit); ``self.facts`` keeps the last
        good memory when it cannot be read.

        Raises :class:`MemoryFormatError` (with the line, and ``path``) if the file is broken,
        bytes that are not UTF-8 included, and :class:`MemoryPathError` if it is outside
        ``root`` or cannot be read; both are :class:`SessionMemoryError`. Lines added by hand
        get an id here, with source ``hand-edit``.
        """
        text = self._read()
        if text is None or text == self._text:
            return self.facts
        try:
            parsed = parse(text)
        except MemoryFormatError as error:
            raise MemoryFormatError(error.line, error.problem, path=self.path) from None
        moment = datetime.fromtimestamp(now, tz=UTC) if now is not None else None
        self.facts = live_facts(self._number(parsed, lambda _source: self.replies or None, moment))
        self._text = text
        return self.facts

    def check_place(self) -> None:
        """:class:`MemoryPathError` unless the file's real path is inside ``root``'s (if any).

        Checked before each read and each write, not once: a link can appear at any time.
        """
        if self.root is None:
            return
        try:
            inside = self.path.resolve().is_relative_to(self.root.resolve())
        except (OSError, RuntimeError) as error:  # RuntimeError: a loop of symbolic links
            raise MemoryPathError(self.path, f"cannot follow its path ({error})") from None
        if not inside:
            raise MemoryPathError(
                self.path,
                f"leads to {self.path.resolve()}, outside {self.root} (a symbolic link on the "
                "way): the session memory is neither read nor written there",
            )

    def _read(self) -> str | None:
        """The file's text, or None if there is no file yet."""
        self.check_place()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise MemoryPathError(self.path, f"cannot be read ({error.strerror})") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
            problem = f"byte 0x{data[error.start]:02x} at column {column} is not UTF-8"
            raise MemoryFormatError(line, problem, path=self.path) from None

    def text(self, *, provenance: bool = True) -> str:
        """The memory as ``MEMORY.md`` (``provenance=False``: as the model's context gets it)."""
        return render(self.facts, provenance=provenance)

    def _display_path(self, agent: BaseAgent) -> str:
        try:
            return self.path.resolve().relative_to(agent.workspace).as_posix()
        except ValueError:
            return self.path.as_posix()

    def _number(
        self,
        parsed: Sequence[Fact],
        turn_of: Any,
        moment: datetime | None,
    ) -> list[Fact]:
        """Give new lines an id, turn and time (:func:`live_facts` then drops the superseded)."""
        self._next = max([self._next, *(f.number + 1 for f in parsed)])
        out: list[Fact] = []
        for fact in parsed:
            if fact.id is None:
                fact = fact.model_copy(
                    update={
                        "id": f"f{self._next}",
                        "turn": fact.turn or turn_of(fact.source),
                        "at": fact.at or moment,
                    }
                )
                self._next += 1
            out.append(fact)
        return out

    # -- extraction -----------------------------------------------------------------------------

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        self.replies += 1
        self._calls_since += len(m.tool_uses(agent.messages[-1]))
        self.tracker.after_reply(agent, reply)
        context = self.tracker.size(agent)
        if self._at_last is not None and context < self._at_last:
            self._at_last = context  # a compaction shrank the context: growth counts from here
        if self.schedule.due(context, self._at_last, self._calls_since):
            self.extract(agent, context_tokens=context)

    def extract(self, agent: BaseAgent, *, context_tokens: int | None = None) -> Extraction:
        """Run the extraction fork now and write the file; report by event and return it.

        Whatever fails (the file was broken by hand, the API, the fork's edits, the write),
        the memory and its file stay as they were, and the event says why.
        """
        context = self.tracker.size(agent) if context_tokens is None else context_tokens
        self._at_last, self._calls_since = context, 0
        offered = {str(t.get("name")) for t in agent.request().tools or []}
        if "edit_file" not in offered:
            return self._failed(
                agent,
                context,
                "the agent has no edit_file tool for the memory fork to use "
                "(the fork's tools are the parent's, so that the cached prefix matches)",
            )
        now = agent.clock.now()
        moment = datetime.fromtimestamp(now, tz=UTC)
        path = self._display_path(agent)
        try:
            before = self.load(now)
        except MemoryFormatError as error:  # a hand edit: never overwritten, never guessed at
            return self._failed(
                agent,
                context,
                f"{path} line {error.line}: {error.problem}; fix the file by hand "
                "(it is left as it is)",
            )
        except MemoryPathError as error:
            return self._failed(agent, context, str(error))
        text_before = render(before)
        editor = MemoryEditor(path, text_before, real=self.path)
        directive = extraction_directive(
            path, text_before, per_section=self.per_section, total=self.total
        )
        try:
            fork = run_fork(
                agent, directive, tools=editor, purpose="memory", max_turns=self.fork_turns
            )
        except anthropic.APIError as error:
            return self._failed(agent, context, f"the extraction request failed: {error}")
        self.last_fork = fork
        usage = ForkUsage.of(fork)
        if editor.edits == 0 and editor.refused:
            return self._failed(
                agent, context, f"all {editor.refused} of the fork's edits were refused", usage
            )
        numbered = self._number(parse(editor.text), self._turn_finder(agent), moment)
        after = live_facts(numbered)
        kept, trimmed = fit_budgets(after, per_section=self.per_section, total=self.total)
        text = render(kept)
        # The file must still be the one the fork started from: a person may have edited it
        # meanwhile (or put a link in its way), and their edit is not to be written over.
        try:
            on_disk = self._read()
        except SessionMemoryError as error:
            return self._failed(agent, context, f"{error}; it is left as it is", usage)
        if on_disk is not None and on_disk != self._text:
            return self._failed(
                agent,
                context,
                f"{path} was changed while the memory was being updated; the change is kept, "
                "and the next extraction reads it",
                usage,
            )
        try:
            write_atomic(self.path, text)
        except OSError as error:
            return self._failed(agent, context, f"could not write {path}: {error}", usage)
        known = {f.id for f in before}
        live = {f.id for f in after}
        targets = {f.supersedes for f in numbered if f.supersedes}
        gone = [f for f in before if f.id not in live]
        record = Extraction(
            reply=self.replies,
            context_tokens=context,
            ok=True,
            added=tuple(f for f in after if f.id not in known),
            superseded=tuple(f for f in gone if f.id in targets),
            removed=tuple(f for f in gone if f.id not in targets),
            trimmed=tuple(trimmed),
            usage=usage,
        )
        self.facts, self._text = kept, text
        self.covered = agent.messages[-1] if agent.messages else None
        self.extractions.append(record)
        agent.emit(MemoryUpdated(record))
        return record

    def _failed(
        self, agent: BaseAgent, context: int, reason: str, usage: ForkUsage | None = None
    ) -> Extraction:
        record = Extraction(
            reply=self.replies,
            context_tokens=context,
            ok=False,
            reason=reason,
            usage=usage or ForkUsage(),
        )
        self.extractions.append(record)
        agent.emit(MemoryNotUpdated(self.replies, reason))
        return record

    def _turn_finder(self, agent: BaseAgent) -> Any:
        """A function from a fact's source to the reply it came from (the latest if unknown)."""
        replies = [msg for msg in agent.messages if msg["role"] == "assistant"]
        where: dict[str, int] = {}
        for k, msg in enumerate(replies):
            for use in m.tool_uses(msg):
                where[str(use["id"])] = self.replies - (len(replies) - 1 - k)
        return lambda source: max(1, where.get(source, self.replies))


__all__ = [
    "EXTRACTION_MARKER",
    "HAND_EDIT",
    "SECTIONS",
    "SECTION_TOKENS",
    "TOTAL_TOKENS",
    "Extraction",
    "ExtractionSchedule",
    "Fact",
    "ForkUsage",
    "MemoryEditor",
    "MemoryFormatError",
    "MemoryNotUpdated",
    "MemoryPathError",
    "MemoryUpdated",
    "SectionName",
    "SessionMemory",
    "SessionMemoryError",
    "Trimmed",
    "extraction_directive",
    "fit_budgets",
    "live_facts",
    "parse",
    "render",
    "stale_temporaries",
    "write_atomic",
]
