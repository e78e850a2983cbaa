"""Approvals that wait: a call stops the run until a person decides, hours later if need be.

Chapter 02's approver answers inside the running process: a prompt, a button, a policy. A
real approval (a payment, a deploy, a mail to a customer) can wait for a person for hours,
across restarts. So here the approver writes the call down and the run stops:

* :class:`PendingToolCall` is the snapshot of the call that waits: tool, canonical input,
  a hash of both, where it sits in the session, when it was made and when it expires. It is
  versioned (``version: 2``) and strict: an unknown version, a missing one or an unknown
  field is refused with the reason, never guessed at.
* :class:`ApprovalStore` keeps them in SQLite (WAL), one row per call with its state::

      pending ──approve──▶ approved ──┐
         │  ──reject───▶ rejected ──┴─claim─▶ applying ──finish─▶ applied
         └──(its time is up)──▶ expired      (approved too, if not applied in time)

  Every transition runs under ``BEGIN IMMEDIATE``, SQLite's write lock, so two resumers
  cannot both claim a call: one applies it, the others get its recorded outcome or a
  conflict.
* :class:`ApprovalGate` is the approver that defers: it writes the pending call and answers
  :class:`~harness.tools.permissions.Deferred`; the tool runner stops the run with an
  :class:`~harness.events.AwaitingApproval` event that carries the approval id.
* :func:`resume` takes an approval id and a decision, in this process or a fresh one: it
  loads the session from its transcript (chapter 08), applies or refuses the call exactly
  once, puts its result where the placeholder was, and lets the run go on. Nothing that ran
  before the stop runs again: its results are in the transcript.

Errors are typed and each says what a person should be shown: :class:`ApprovalConflict`
(409: decided otherwise, or being applied elsewhere), :class:`ApprovalExpired` (410),
:class:`ApprovalInvalid` (422: a snapshot or store this code cannot read) and
:class:`ApprovalNotFound` (404). The status numbers are the HTTP codes seed 004 maps them
to, for a caller that serves approvals over the web.

What is read from disk is checked, never assumed: a store file that is not SQLite, is cut
short, is a folder, is read-only or holds another program's tables is refused as
:class:`ApprovalInvalid` naming the file, where it is opened or queried; a row whose columns
contradict its state (``applied`` with no outcome, say) is refused naming the row, and the
sound rows around it stay usable. (``assert`` is kept for this module's own invariants: it
vanishes under ``python -O``, so it never guards data.)
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import sqlite3
import threading
import uuid as uuidlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    ValidationError,
    field_validator,
    model_validator,
)

from harness import messages as m
from harness.clock import Clock, RealClock, isoformat
from harness.events import AwaitingApproval, Event, HookReported, PermissionDecided, _short
from harness.loop import INTERRUPTED, BaseAgent, Rewrite, StopRun
from harness.resume import Sessions
from harness.resume import continue_run as _continue
from harness.resume import resume as resume_session
from harness.tools.dispatch import ToolRunner, awaiting_approval_text, output_text, waiting_text
from harness.tools.permissions import Approval, ApprovalRequest, Approver, Deferred
from harness.transcript import Transcript

SNAPSHOT_VERSION = 2
"""The one snapshot version this code reads (version 1 had no hash: it could not bind an
approval to the exact call, so it is refused rather than upgraded by guesswork)."""

SCHEMA_VERSION = 1
"""The store's own layout (``PRAGMA user_version``)."""

DEFAULT_TTL = 24 * 3600.0
"""How long a pending call may wait for its decision, in seconds (our choice: a working day
and a night; seed 004's example used 5 minutes)."""

APPLY_LEASE = 600.0
"""Seconds after which a claim whose owner never finished is taken over (our choice). The
new owner does not run the call again: it may have run, so it is answered as interrupted."""

State = Literal["pending", "approved", "rejected", "applying", "applied", "expired"]
STATES: tuple[State, ...] = ("pending", "approved", "rejected", "applying", "applied", "expired")


# -- errors ---------------------------------------------------------------------------------


class ApprovalError(Exception):
    """Something a person asked of an approval that cannot be done, and why."""

    status = 400


class ApprovalNotFound(ApprovalError, LookupError):
    status = 404


class ApprovalConflict(ApprovalError):
    """Decided the other way already, not decided yet, or being applied by another resumer."""

    status = 409


class ApprovalExpired(ApprovalError):
    status = 410


class ApprovalInvalid(ApprovalError):
    """A snapshot (or a store) this code cannot read: the message says what was found."""

    status = 422


class ApprovalStoreBusy(ApprovalInvalid):
    """The store stayed locked by another process past the busy timeout: try again later
    (unlike the other problems of a store, this one passes)."""

    status = 503


# -- the snapshot ---------------------------------------------------------------------------


def canonical(value: Any) -> str:
    """The input as one exact string: keys sorted, no spaces, no NaN (so equal inputs hash
    equal, and an input written another way, ``1`` for ``1.0``, does not)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def call_hash(tool: str, input: Any) -> str:
    """What an approval is bound to: SHA-256 of the tool's name and its canonical input."""
    return hashlib.sha256(f"{tool}\n{canonical(input)}".encode()).hexdigest()


class PendingToolCall(BaseModel):
    """The snapshot of a call that waits for a person: everything needed to apply it later,
    in another process, and to tell whether what is applied is what was approved."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[2]
    approval_id: str
    session_id: str
    """The session whose transcript holds the call (chapter 08)."""
    reply_uuid: str | None
    """The call's place in the session: the last transcript entry written when it asked,
    which is the reply that made it (for a call that waited behind another one and asked
    only at resume, the results entry of that pause)."""
    tool_use_id: str
    tool: str
    input: dict[str, Any]
    call_hash: str
    reason: str
    """Why it asks (the permission rule or mode)."""
    created_at: AwareDatetime
    expires_at: AwareDatetime
    """Times carry their zone: a time without one could mean any of 24 moments."""

    @model_validator(mode="before")
    @classmethod
    def _known_version(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if "version" not in data:
                raise ValueError(
                    f"the snapshot has no version; this harness reads version {SNAPSHOT_VERSION}"
                )
            found = data["version"]
            if type(found) is not int or found != SNAPSHOT_VERSION:  # not True, not 2.0
                raise ValueError(
                    f"snapshot version {found!r} is not supported; this harness reads "
                    f"version {SNAPSHOT_VERSION} only (it will not guess at another layout)"
                )
        return data

    @field_validator("session_id")
    @classmethod
    def _not_a_path(cls, value: str) -> str:
        # The session id names the transcript file resume opens: a path would reach outside
        # the sessions folder (chapter 08's ``Sessions.path`` refuses the same ids).
        problem = session_id_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _hash_matches(self) -> PendingToolCall:
        if self.call_hash != call_hash(self.tool, self.input):
            raise ValueError("call_hash does not match the tool and input it is stored with")
        if self.expires_at <= self.created_at:
            raise ValueError("expires_at must come after created_at")
        return self

    @classmethod
    def parse(cls, raw: str | bytes | dict[str, Any]) -> PendingToolCall:
        """Read a stored snapshot, or raise :class:`ApprovalInvalid` saying what is wrong."""
        try:
            if isinstance(raw, dict):
                return cls.model_validate(raw)
            return cls.model_validate_json(raw)
        except ValidationError as error:
            raise _unreadable(error) from None

    @classmethod
    def of(
        cls,
        request: ApprovalRequest,
        *,
        approval_id: str,
        session_id: str,
        reply_uuid: str | None,
        now: float,
        ttl: float,
    ) -> PendingToolCall:
        """The snapshot of ``request``, or :class:`ApprovalInvalid` saying why it cannot be
        made (a session id that is a path, a ttl that is not positive)."""
        try:
            return cls(
                version=SNAPSHOT_VERSION,
                approval_id=approval_id,
                session_id=session_id,
                reply_uuid=reply_uuid,
                tool_use_id=request.tool_use_id,
                tool=request.tool,
                input=dict(request.input),
                call_hash=call_hash(request.tool, request.input),
                reason=request.reason,
                created_at=_moment(now),
                expires_at=_moment(now + ttl),
            )
        except ValidationError as error:
            raise _unreadable(error, "approval snapshot refused") from None

    def expired(self, now: float) -> bool:
        return now >= self.expires_at.timestamp()


def session_id_problem(session_id: str) -> str | None:
    """Why ``session_id`` cannot name a session's transcript, or None if it can. A session id
    is a file name, never a path: no separator, not ``.`` or ``..``, not empty."""
    if not session_id or session_id in (".", ".."):
        return f"{session_id!r} is not a session id"
    if "/" in session_id or "\\" in session_id or "\x00" in session_id:
        return f"{session_id!r} is not a session id: a session id is never a path"
    return None


def _unreadable(
    error: ValidationError, what: str = "unreadable approval snapshot"
) -> ApprovalInvalid:
    return ApprovalInvalid(f"{what}: {_problems(error, '(snapshot)')}")


def _problems(error: ValidationError, whole: str = "(the whole of it)") -> str:
    """Each problem pydantic found, as ``field: what is wrong``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in issue['loc']) or whole}: {issue['msg']}"
        for issue in error.errors()
    )


class Decision(BaseModel):
    """A person's answer: approve or not, who, and a note (sent to the model with it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    approve: bool
    by: str = "a person"
    note: str = ""

    @classmethod
    def of(cls, value: Decision | Literal["approve", "reject"] | bool) -> Decision:
        if isinstance(value, Decision):
            return value
        if isinstance(value, bool):
            return cls(approve=value)
        if value in ("approve", "reject"):
            return cls(approve=value == "approve")
        raise ApprovalInvalid(f"a decision is 'approve' or 'reject', not {value!r}")


@dataclass(frozen=True)
class Record:
    """One row of the store, read."""

    snapshot: PendingToolCall
    state: State
    decision: Decision | None
    decided_at: float | None
    claimed_by: str | None
    claimed_at: float | None
    outcome: m.Block | None
    """The ``tool_result`` the model was given for the call, once applied."""
    updated_at: float

    @property
    def approval_id(self) -> str:
        return self.snapshot.approval_id


@dataclass(frozen=True)
class Claim:
    """The right to apply one decided call; only one resumer holds it."""

    record: Record
    owner: str
    recovered: bool
    """Taken over from an owner that never finished (its lease ran out): the call may have
    run, so it must not run again."""


# -- the store ------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN
                  ('pending','approved','rejected','applying','applied','expired')),
    snapshot    TEXT NOT NULL,
    decision    TEXT,
    decided_at  REAL,
    claimed_by  TEXT,
    claimed_at  REAL,
    outcome     TEXT,
    updated_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS approvals_by_state ON approvals (state, session_id);
"""
_COLUMNS = (
    "id",
    "session_id",
    "state",
    "snapshot",
    "decision",
    "decided_at",
    "claimed_by",
    "claimed_at",
    "outcome",
    "updated_at",
)


class ApprovalStore:
    """Pending calls in SQLite: safe across threads and processes on one machine.

    Each operation opens its own connection (a ``sqlite3`` connection must not be shared
    between threads) and every change runs in a ``BEGIN IMMEDIATE`` transaction, which
    takes the database's write lock before reading, so a row is checked and changed with
    nobody in between. WAL lets readers go on while one writer works; ``synchronous=FULL``
    makes a decision survive a power cut once it is acknowledged.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Clock | None = None,
        lease: float = APPLY_LEASE,
        busy_timeout: float = 30.0,
    ) -> None:
        self.path = Path(path)
        self.clock: Clock = clock or RealClock()
        self.lease = lease
        self.busy_timeout = busy_timeout
        if self.path.is_dir():
            raise ApprovalInvalid(f"the approval store {self.path} is a folder, not a file")
        if not _may_be_sqlite(self.path):  # SQLite would take a 1-byte file for an empty one
            raise ApprovalInvalid(
                f"the approval store {self.path} {_WHAT_WENT_WRONG[sqlite3.SQLITE_NOTADB]}; "
                "it was left as it is"
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:  # a parent that is a file, or a folder we may not write
            why = (
                f"{error.filename} is a file, not a folder"
                if isinstance(error, FileExistsError | NotADirectoryError)
                else error.strerror
            )
            raise ApprovalInvalid(
                f"cannot make the folder of the approval store {self.path}: {why}"
            ) from None
        with self._connection() as con:
            # Read before writing anything: another program's file is refused untouched.
            found = con.execute("PRAGMA user_version").fetchone()[0]
            if found > SCHEMA_VERSION:
                raise ApprovalInvalid(
                    f"the approval store {self.path} has layout version {found}; this "
                    f"harness reads version {SCHEMA_VERSION}"
                )
            self._check_tables(con)
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(_SCHEMA)
            if found == 0:
                con.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _check_tables(self, con: sqlite3.Connection) -> None:
        """Refuse a database that is not an approval store: other tables and no
        ``approvals``, or an ``approvals`` table with other columns (another program's)."""
        tables = sorted(
            name
            for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not str(name).startswith("sqlite_")
        )
        if "approvals" in tables:
            columns = [str(row[1]) for row in con.execute("PRAGMA table_info(approvals)")]
            if sorted(columns) != sorted(_COLUMNS):
                raise ApprovalInvalid(
                    f"{self.path} has an approvals table with other columns "
                    f"({', '.join(columns)}) than an approval store's ({', '.join(_COLUMNS)}): "
                    "another program's table? It was left as it is; give the store a file of "
                    "its own"
                )
        elif tables:
            raise ApprovalInvalid(
                f"{self.path} holds other tables ({', '.join(tables)}) and no approvals table: "
                "it is another program's database, not an approval store. It was left as it "
                "is; give the store a file of its own"
            )

    # -- reading ----------------------------------------------------------------------------

    def get(self, approval_id: str) -> Record:
        """The row of ``approval_id``; :class:`ApprovalInvalid` if it cannot be read."""
        with self._connection() as con:
            row = con.execute(_SELECT + " WHERE id = ?", (approval_id,)).fetchone()
        if row is None:
            raise ApprovalNotFound(f"no approval {approval_id!r} in this store")
        return _record(row)

    def pending(self, session_id: str | None = None) -> list[Record]:
        """Calls waiting for a decision, oldest first. Expired ones are not shown, nor are
        rows this code cannot read (:meth:`unreadable` lists those, with the reason), so one
        bad row never hides the others."""
        now = self.clock.now()
        records = [r for r in self._rows(session_id, pending=True) if isinstance(r, Record)]
        return [r for r in records if not r.snapshot.expired(now)]

    def all(self) -> list[Record]:
        """Every row this code can read, oldest first, whatever its state (for a view of the
        whole store). The others are in :meth:`unreadable`: one bad row hides nothing."""
        return [r for r in self._rows(None) if isinstance(r, Record)]

    def unreadable(self) -> list[tuple[str, str]]:
        """Rows this code cannot read, in any state, as (approval id, what is wrong)."""
        return [r for r in self._rows(None) if isinstance(r, tuple)]

    def _rows(
        self, session_id: str | None, *, pending: bool = False
    ) -> list[Record | tuple[str, str]]:
        where = ["state = 'pending'"] if pending else []
        if session_id:
            where.append("session_id = ?")
        query = _SELECT + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY rowid"
        out: list[Record | tuple[str, str]] = []
        with self._connection() as con:
            for row in con.execute(query, (session_id,) if session_id else ()):
                try:
                    out.append(_record(row))
                except ApprovalInvalid as error:
                    out.append((str(row[0]), str(error)))
        return out

    # -- the transitions --------------------------------------------------------------------

    def add(self, snapshot: PendingToolCall) -> Record:
        """Write a new pending call (an id used before is refused)."""
        now = self.clock.now()
        with self._write() as con:
            try:
                con.execute(
                    "INSERT INTO approvals (id, session_id, state, snapshot, updated_at) "
                    "VALUES (?, ?, 'pending', ?, ?)",
                    (snapshot.approval_id, snapshot.session_id, snapshot.model_dump_json(), now),
                )
            except sqlite3.IntegrityError:
                raise ApprovalConflict(f"approval {snapshot.approval_id} exists already") from None
        return self.get(snapshot.approval_id)

    def decide(
        self, approval_id: str, decision: Decision | Literal["approve", "reject"] | bool
    ) -> Record:
        """Record a person's decision: pending → approved or rejected.

        The same decision again changes nothing (a double click, a retried request); the
        other decision is a conflict. A call whose time is up becomes expired instead.
        """
        answer = Decision.of(decision)
        with self._write() as con:
            record = self._locked(con, approval_id)
            if record.state == "pending":
                if record.snapshot.expired(self.clock.now()):
                    self._set(con, approval_id, state="expired")
                    expired = record
                else:
                    state: State = "approved" if answer.approve else "rejected"
                    now = self.clock.now()
                    self._set(
                        con,
                        approval_id,
                        state=state,
                        decision=answer.model_dump_json(),
                        decided_at=now,
                    )
                    expired = None
            elif record.state == "expired":
                expired = record
            elif record.decision is not None and record.decision.approve == answer.approve:
                return record  # said twice: the first one stands
            else:
                raise ApprovalConflict(_conflict(record))
        if expired is not None:
            raise ApprovalExpired(_expired(expired.snapshot))
        return self.get(approval_id)

    def claim(self, approval_id: str, owner: str | None = None) -> Claim | Record:
        """Take the right to apply a decided call: approved or rejected → applying.

        Returns the :class:`Claim`, or the :class:`Record` of a call already applied (its
        recorded outcome: nothing to do). Raises :class:`ApprovalConflict` if it is not
        decided yet or another owner is applying it, :class:`ApprovalExpired` if it was
        approved but its time ran out first.
        """
        owner = owner or new_owner()
        now = self.clock.now()
        recovered = False
        expired: PendingToolCall | None = None
        with self._write() as con:
            record = self._locked(con, approval_id)
            if record.state == "applied":
                return record
            if record.state == "expired":
                expired = record.snapshot
            elif record.state in ("pending", "approved") and record.snapshot.expired(now):
                self._set(con, approval_id, state="expired")
                expired = record.snapshot
            elif record.state == "applying":
                assert record.claimed_at is not None
                if now < record.claimed_at + self.lease:
                    raise ApprovalConflict(_conflict(record))
                recovered = True  # its owner never finished: take it over, run nothing
            elif record.state == "pending":
                raise ApprovalConflict(_conflict(record))
            if expired is None:
                self._set(con, approval_id, state="applying", claimed_by=owner, claimed_at=now)
        if expired is not None:
            raise ApprovalExpired(_expired(expired))
        return Claim(self.get(approval_id), owner, recovered)

    def finish(self, claim: Claim, outcome: m.Block) -> Record:
        """applying → applied, with the result the model was given. Only the owner may."""
        with self._write() as con:
            record = self._locked(con, claim.record.approval_id)
            if record.state != "applying" or record.claimed_by != claim.owner:
                raise ApprovalConflict(_conflict(record))
            self._set(con, record.approval_id, state="applied", outcome=json.dumps(outcome))
        return self.get(claim.record.approval_id)

    def release(self, claim: Claim) -> None:
        """Give a claim back unapplied (the resumer failed before anything ran). A claim
        taken over from an owner that never finished stays applying, with its lease already
        run out: the next claimer must also know the call may have run."""
        with self._write() as con:
            record = self._locked(con, claim.record.approval_id)
            if record.state != "applying" or record.claimed_by != claim.owner:
                return
            if claim.recovered:
                self._set(con, record.approval_id, claimed_at=0.0)
            else:
                approved = record.decision is not None and record.decision.approve
                back: State = "approved" if approved else "rejected"
                self._set(con, record.approval_id, state=back, claimed_by=None, claimed_at=None)

    # -- internals --------------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A connection of its own; any SQLite error while it is open (opening it, or a
        query of the caller's) becomes :class:`ApprovalInvalid` naming the file."""
        try:
            con = sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise _store_error(self.path, error, self.busy_timeout) from error
        try:
            con.execute("PRAGMA synchronous=FULL")
            yield con
        except sqlite3.Error as error:
            if getattr(error, "sqlite_errorcode", None) is None:
                raise  # not from the database (a wrong binding, say): this code's own bug
            raise _store_error(self.path, error, self.busy_timeout) from error
        finally:
            con.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._connection() as con:
            con.execute("BEGIN IMMEDIATE")  # the write lock, before anything is read
            try:
                yield con
            except BaseException:
                if con.in_transaction:  # a failed statement may have ended it already
                    with suppress(sqlite3.Error):  # the first error is the one to report
                        con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def _locked(self, con: sqlite3.Connection, approval_id: str) -> Record:
        row = con.execute(_SELECT + " WHERE id = ?", (approval_id,)).fetchone()
        if row is None:
            raise ApprovalNotFound(f"no approval {approval_id!r} in this store")
        return _record(row)

    def _set(self, con: sqlite3.Connection, approval_id: str, **columns: Any) -> None:
        columns["updated_at"] = self.clock.now()
        names = ", ".join(f"{name} = ?" for name in columns)
        con.execute(f"UPDATE approvals SET {names} WHERE id = ?", (*columns.values(), approval_id))


_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM approvals"

_WHAT_WENT_WRONG = {
    sqlite3.SQLITE_NOTADB: "is not an SQLite database (another kind of file, or a damaged one)",
    sqlite3.SQLITE_CORRUPT: "is damaged (cut short or overwritten); restore it from a copy",
    sqlite3.SQLITE_CANTOPEN: "cannot be opened (is its folder missing or not writable?)",
    sqlite3.SQLITE_READONLY: "is read-only, and the store writes every decision to it",
    sqlite3.SQLITE_PERM: "may not be opened by this process (permission denied)",
    sqlite3.SQLITE_IOERR: "could not be read or written (an input/output error)",
    sqlite3.SQLITE_FULL: "cannot grow: the disk is full",
}


_SQLITE_HEADER = b"SQLite format 3\x00"


def _may_be_sqlite(path: Path) -> bool:
    """Whether ``path`` is missing, empty, or starts as an SQLite database does."""
    try:
        with path.open("rb") as file:
            head = file.read(len(_SQLITE_HEADER))
    except OSError:  # missing (a new store), or unreadable: SQLite will say why
        return True
    return not head or head == _SQLITE_HEADER


def _store_error(path: Path, error: sqlite3.Error, timeout: float) -> ApprovalInvalid:
    """The SQLite error ``error`` as what a person can act on, naming the file."""
    code = getattr(error, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None  # extended codes keep it low
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return ApprovalStoreBusy(
            f"the approval store {path} stayed locked by another process for {timeout:g} s; "
            f"try again (SQLite: {error})"
        )
    what = _WHAT_WENT_WRONG.get(primary or 0, "cannot be used")
    return ApprovalInvalid(f"the approval store {path} {what} (SQLite: {error})")


def _record(row: tuple[Any, ...]) -> Record:
    """A row, read and checked: its columns must agree with each other and with its state
    (a call marked applied has the outcome it was applied with, and so on), or it is refused
    as :class:`ApprovalInvalid` naming the row. The module's transitions rely on these."""
    approval_id, session_id, state, snapshot, decision, decided_at, *rest = row  # _COLUMNS
    claimed_by, claimed_at, outcome, updated_at = rest

    def bad(problem: str) -> ApprovalInvalid:
        return ApprovalInvalid(f"approval row {approval_id!r}: {problem}")

    if not isinstance(snapshot, str):
        raise bad(f"its snapshot is {type(snapshot).__name__}, not JSON text")
    try:
        parsed = PendingToolCall.parse(snapshot)
    except ApprovalInvalid as error:
        raise bad(str(error)) from None
    if parsed.approval_id != approval_id:
        raise bad(f"its snapshot is of another approval, {parsed.approval_id!r}")
    if parsed.session_id != session_id:
        raise bad(
            f"its snapshot is of session {parsed.session_id!r}, the row says session {session_id!r}"
        )
    if state not in STATES:
        raise bad(f"its state {state!r} is none of {', '.join(STATES)}")
    for name, value in (("decision", decision), ("outcome", outcome), ("claimed_by", claimed_by)):
        if value is not None and not isinstance(value, str):
            raise bad(f"its {name} is {type(value).__name__}, not text")
    for name, value in (
        ("decided_at", decided_at),
        ("claimed_at", claimed_at),
        ("updated_at", updated_at),
    ):
        number = isinstance(value, int | float) and math.isfinite(value)
        if not (number or (value is None and name != "updated_at")):
            raise bad(f"its {name} is {value!r}, not a time")
    try:
        answer = Decision.model_validate_json(decision) if decision else None
    except ValidationError as error:
        raise bad(f"its decision is unreadable: {_problems(error)}") from None
    try:
        result = json.loads(outcome) if outcome else None
    except ValueError as error:
        raise bad(f"its outcome is not JSON: {error}") from None
    if result is not None and not (
        isinstance(result, dict) and result.get("type") == "tool_result"
    ):
        raise bad("its outcome is not a tool_result block")
    problem = _contradiction(state, answer, claimed_by, claimed_at, result)
    if problem is not None:
        raise bad(problem)
    return Record(parsed, state, answer, decided_at, claimed_by, claimed_at, result, updated_at)


def _contradiction(
    state: State,
    decision: Decision | None,
    claimed_by: str | None,
    claimed_at: float | None,
    outcome: m.Block | None,
) -> str | None:
    """What in a row contradicts its state, if anything: the states the transitions move
    through, and what each has written by then."""
    if state == "pending" and (decision is not None or outcome is not None):
        return "state 'pending' with a decision or an outcome recorded (it would run again)"
    if state in ("approved", "rejected", "applying", "applied") and decision is None:
        return f"state {state!r} without a decision"
    if (
        state in ("approved", "rejected")
        and decision is not None
        and decision.approve != (state == "approved")
    ):
        said = "approve" if decision.approve else "reject"
        return f"state {state!r} with a decision to {said}"
    if state == "applying" and (not claimed_by or claimed_at is None):
        return "state 'applying' without an owner and the time of its claim"
    if state == "applied" and outcome is None:
        return "state 'applied' without the outcome it was applied with"
    return None


def _moment(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, tz=UTC)


def _expired(snapshot: PendingToolCall) -> str:
    return (
        f"approval {snapshot.approval_id} expired at {isoformat(snapshot.expires_at.timestamp())}"
        f"; {snapshot.tool} did not run"
    )


def _conflict(record: Record) -> str:
    who = f" by {record.decision.by}" if record.decision else ""
    if record.state == "pending":
        return f"approval {record.approval_id} waits for a decision; nothing was applied"
    if record.state == "applying":
        owner = record.claimed_by
        return f"approval {record.approval_id} is being applied by another resumer ({owner})"
    return f"approval {record.approval_id} is {record.state}{who} already"


def new_owner() -> str:
    """A claim owner that names where it runs (host, process, thread) and is unique."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}:{uuidlib.uuid4().hex[:8]}"


def new_approval_id() -> str:
    return f"apr_{uuidlib.uuid4().hex[:20]}"


# -- the approver that defers ---------------------------------------------------------------


@dataclass
class ApprovalGate:
    """The approver that asks by writing the call to the store: the run stops, a person
    decides whenever, and :func:`resume` applies it. ``attach(agent)`` makes it the agent's
    approver; the agent needs a :class:`~harness.transcript.Transcript` (resume reads it)."""

    store: ApprovalStore
    ttl: float = DEFAULT_TTL
    ids: Callable[[], str] = new_approval_id
    agent: BaseAgent | None = field(default=None, repr=False)

    def attach(self, agent: BaseAgent) -> ApprovalGate:
        runner = agent.tools
        if not hasattr(runner, "approver"):
            raise TypeError("the agent's tool runner has no approver to replace")
        runner.approver = self
        self.agent = agent
        return self

    def __call__(self, request: ApprovalRequest) -> Deferred:
        transcript = _transcript(self.agent) if self.agent is not None else None
        if transcript is None:  # the runner turns this into a refusal that says why
            raise RuntimeError(
                "a deferred approval needs the session's transcript to resume from; give "
                "the agent a Transcript (chapter 08) and attach the gate to it"
            )
        snapshot = PendingToolCall.of(
            request,
            approval_id=self.ids(),
            session_id=transcript.session_id,
            reply_uuid=transcript.parent,  # the reply's entry: written before tools run
            now=self.store.clock.now(),
            ttl=self.ttl,
        )
        self.store.add(snapshot)
        return Deferred(snapshot.approval_id, request.reason)


def _transcript(agent: BaseAgent) -> Transcript | None:
    return next((p for p in agent.plugins if isinstance(p, Transcript)), None)


# -- resume -----------------------------------------------------------------------------------

MAY_HAVE_RUN = (
    "The call was approved and started, but the process applying it stopped before its "
    "result was recorded: it may have run. It is not run again; check before retrying."
)


def refused_text(decision: Decision) -> str:
    """What the model is told of a refused call (Claude Code's wording differs; it also
    asks the model to stop and wait, where this run goes on)."""
    note = f" Their note: {decision.note}" if decision.note else ""
    return f"Not run: {decision.by} refused this call.{note}"


@dataclass(frozen=True)
class ApprovalApplied(Event):
    """A decided call was applied: it ran, or its refusal went to the model."""

    approval_id: str
    name: str
    decision: str
    """``approved`` or ``rejected``, by whom."""
    ran: bool
    outcome: str
    is_error: bool

    def __str__(self) -> str:
        did = "ran" if self.ran else "did not run"
        return (
            f"▶ {self.approval_id} {self.decision}: {self.name} {did} → {_short(self.outcome, 60)}"
        )


@dataclass
class ApprovalResume:
    """What :func:`resume` did."""

    record: Record
    """The approval's row afterwards."""
    outcome: m.Block
    """The ``tool_result`` the model gets (or got) for the call."""
    applied_now: bool
    """This call applied the decision; False: it was applied before, and this is its
    recorded outcome (nothing ran)."""
    ran: bool
    """The tool ran in this call."""
    refused: str | None = None
    """Why an approved call did not run (it changed, or the session went on without it)."""
    events: list[Event] = field(default_factory=list)
    paused: AwaitingApproval | None = None
    """A later call of the same reply now waits for an approval of its own."""

    @property
    def needs_continue(self) -> bool:
        """The conversation ends on the results just given: the run goes on from there."""
        return self.applied_now and self.paused is None and self.refused != _MOVED_ON


_MOVED_ON = "the session went on without this decision; nothing was changed"


def resume(
    agent: BaseAgent,
    sessions: Sessions,
    store: ApprovalStore,
    approval_id: str,
    decision: Decision | Literal["approve", "reject"] | bool | None = None,
    *,
    owner: str | None = None,
) -> ApprovalResume:
    """Apply the decision on ``approval_id`` to its session, exactly once.

    ``decision`` is recorded first (leave it out if a person already decided, in the store's
    inbox). Then the call is claimed under the store's write lock: a call applied before
    returns its recorded outcome and nothing runs; one being applied elsewhere is a conflict.
    The owner loads the session from its transcript into ``agent`` (chapter 08), checks the
    call is still the one approved (same hash), runs it, or answers its refusal, then runs
    the calls that waited behind it (they may stop the run again, for their own approval),
    and puts the results where the placeholders were. Follow with :func:`continue_run`.
    """
    runner = agent.tools
    if not isinstance(runner, ToolRunner):
        raise TypeError("resume needs an agent whose tools run through a ToolRunner")
    record = store.get(approval_id)
    if record.state == "applied":
        return _recorded(record)
    if decision is not None:
        store.decide(approval_id, decision)
    snapshot = record.snapshot
    if not sessions.path(snapshot.session_id).exists():
        raise ApprovalInvalid(
            f"approval {approval_id} belongs to session {snapshot.session_id}, whose "
            "transcript is not in this folder; nothing was applied"
        )
    claim = store.claim(approval_id, owner)
    if isinstance(claim, Record):
        return _recorded(claim)
    try:
        resume_session(agent, sessions, snapshot.session_id)
        spot = _locate(agent.messages, snapshot)
    except BaseException:
        store.release(claim)  # nothing ran: the next resumer may try again
        raise
    if isinstance(spot, str):  # nowhere to put a result: the model never sees one
        outcome = m.tool_result(snapshot.tool_use_id, f"Not run: {spot}.", is_error=True)
        record = store.finish(claim, outcome)
        return ApprovalResume(record, outcome, True, False, refused=spot)
    index, use, later, done = spot
    if done is not None:  # a resumer wrote the result, then stopped before finishing
        return ApprovalResume(store.finish(claim, done), done, True, False)
    decided = claim.record.decision
    assert decided is not None  # claimed, so decided
    results, events, paused, refused = _apply(runner, claim, use, later, decided)
    outcome = results[snapshot.tool_use_id]
    ran = _ran(snapshot.tool_use_id, events)
    if decided.approve and not ran and refused is None and not claim.recovered:
        refused = _why_not_run(snapshot.tool_use_id, events)
    event = ApprovalApplied(
        approval_id,
        snapshot.tool,
        f"{'approved' if decided.approve else 'rejected'} by {decided.by}",
        ran=ran,
        outcome=_text(outcome),
        is_error=bool(outcome.get("is_error")),
    )
    try:  # the results replace the placeholders: a content replacement in the transcript
        new = [dict(message) for message in agent.messages]
        new[index] = {
            "role": "user",
            "content": [results.get(str(b.get("tool_use_id")), b) for b in m.blocks(new[index])],
        }
        agent.apply(Rewrite(new, event))
        for transcript in [p for p in agent.plugins if isinstance(p, Transcript)]:
            transcript.flush(durable=transcript.fsync)
    finally:
        record = store.finish(claim, outcome)  # the call ran: never leave it claimable
    return ApprovalResume(record, outcome, True, event.ran, refused, [*events, event], paused)


def continue_run(agent: BaseAgent, resumed: ApprovalResume) -> Iterator[Event]:
    """Go on with the run once the call is applied (nothing to do if it was applied
    before, or a later call waits for an approval of its own)."""
    yield from _continue(agent, resumed)


def _apply(
    runner: ToolRunner,
    claim: Claim,
    use: m.Block,
    later: list[m.Block],
    decided: Decision,
) -> tuple[dict[str, m.Block], list[Event], AwaitingApproval | None, str | None]:
    """Run (or refuse) the claimed call and the calls that waited behind it."""
    snapshot = claim.record.snapshot
    results: dict[str, m.Block] = {}
    refused: str | None = None
    if claim.recovered:  # its owner may have run it (and the calls after it): never twice
        text = MAY_HAVE_RUN if decided.approve else refused_text(decided)  # refused never runs
        results[snapshot.tool_use_id] = m.tool_result(snapshot.tool_use_id, text, is_error=True)
        for block in later:
            results[str(block["id"])] = m.tool_result(str(block["id"]), INTERRUPTED, is_error=True)
        return results, [], None, None
    calls = list(later)
    if call_hash(str(use.get("name")), use.get("input")) != snapshot.call_hash:
        refused = "the call in the session is not the one approved (its tool or input changed)"
        results[snapshot.tool_use_id] = m.tool_result(
            snapshot.tool_use_id, f"Not run: {refused}.", is_error=True
        )
    elif not decided.approve:
        results[snapshot.tool_use_id] = m.tool_result(
            snapshot.tool_use_id, refused_text(decided), is_error=True
        )
    else:
        calls.insert(0, use)
    events: list[Event] = []
    paused: AwaitingApproval | None = None
    if calls:
        fallback = runner.approver
        runner.approver = _decided(snapshot, decided, fallback)
        try:
            run = runner.run(calls)
            while True:
                events.append(next(run))
        except StopIteration:
            pass
        except StopRun as stop:  # a later call waits for an approval of its own
            paused = stop.event if isinstance(stop.event, AwaitingApproval) else None
            events.append(stop.event)
        finally:
            runner.approver = fallback
        results.update(runner.finished)
    return results, events, paused, refused


def _ran(tool_use_id: str, events: list[Event]) -> bool:
    """Whether the runner let the call run: its permission came out ``allow`` (the tool ran,
    whether or not it then failed)."""
    return any(
        isinstance(e, PermissionDecided) and e.tool_use_id == tool_use_id and e.decision == "allow"
        for e in events
    )


def _why_not_run(tool_use_id: str, events: list[Event]) -> str:
    """Why an approved call did not run after all: a permission denied it now (a deny rule,
    or a PreToolUse hook changed it into another call than the one approved), or a hook
    blocked it."""
    for e in events:
        if isinstance(e, PermissionDecided) and e.tool_use_id == tool_use_id:
            return f"permission denied at resume: {e.reason}"
    blocked = [e.detail for e in events if isinstance(e, HookReported) and e.outcome == "blocked"]
    return f"a PreToolUse hook blocked it: {blocked[0]}" if blocked else "it was refused"


def _decided(snapshot: PendingToolCall, decided: Decision, fallback: Approver) -> Approver:
    """The approver while a decided call runs: its answer for that exact call (checked again
    after the PreToolUse hooks, which may change an input), the usual one for the rest."""

    def approve(request: ApprovalRequest) -> Approval | Deferred | bool:
        if request.tool_use_id != snapshot.tool_use_id:
            return fallback(request)
        if call_hash(request.tool, request.input) != snapshot.call_hash:
            return Approval(False, f"{snapshot.approval_id} approved another input than this")
        return Approval(True, f"approved by {decided.by} ({snapshot.approval_id})")

    return approve


def _locate(
    conversation: list[m.MessageDict], snapshot: PendingToolCall
) -> tuple[int, m.Block, list[m.Block], m.Block | None] | str:
    """Where the call's placeholder is: the index of the results message, the tool_use, the
    calls that wait behind it, and its result if one replaced the placeholder already. Or
    why there is nowhere to apply it."""
    for i, message in enumerate(conversation):
        uses = {str(u.get("id")): u for u in m.tool_uses(message)}
        if snapshot.tool_use_id not in uses:
            continue
        if i + 2 != len(conversation):
            return _MOVED_ON
        results = {str(b.get("tool_use_id")): b for b in m.tool_results(conversation[i + 1])}
        mine = results.get(snapshot.tool_use_id)
        if mine is None:
            return "the call has no result in the session to replace"
        later = [
            uses[use_id]
            for use_id, block in results.items()
            if use_id in uses and _text(block) == waiting_text(snapshot.approval_id)
        ]
        if _text(mine) != awaiting_approval_text(snapshot.approval_id):
            return i + 1, uses[snapshot.tool_use_id], later, mine
        return i + 1, uses[snapshot.tool_use_id], later, None
    return "the call is no longer in the session (compacted or rewound away)"


def _recorded(record: Record) -> ApprovalResume:
    assert record.outcome is not None
    return ApprovalResume(record, record.outcome, applied_now=False, ran=False)


def _text(block: m.Block) -> str:
    """The text of a tool result's content, as the tool runner makes it."""
    return output_text(block.get("content") or "")


# -- asking at the terminal -------------------------------------------------------------------


def ask_in_terminal(
    store: ApprovalStore,
    approval_id: str,
    *,
    ask: Callable[[str], str] = input,
    say: Callable[[str], None] = print,
    by: str = "you, at the terminal",
) -> Decision:
    """Show a pending call and read a decision (the command line's inbox). ``y`` approves;
    anything else refuses, and what follows a refusal's ``n`` (``n use the staging db``) goes
    to the model as the note. Records the decision in the store and returns it."""
    snapshot = store.get(approval_id).snapshot
    left = snapshot.expires_at.timestamp() - store.clock.now()
    say(f"{snapshot.approval_id}: {snapshot.tool} wants to run ({snapshot.reason})")
    say(json.dumps(snapshot.input, indent=2, ensure_ascii=False))
    say(f"expires in {max(0.0, left) / 60:.0f} min")
    answer = ask("Approve? [y/N, or n and a note] ").strip()
    head, _, note = answer.partition(" ")
    decision = Decision(approve=head.lower() in ("y", "yes"), by=by, note=note.strip())
    store.decide(approval_id, decision)
    return decision
