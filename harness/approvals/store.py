"""The approval store: pending calls in SQLite, one row per call, moved from state to state.

::

      pending ──approve──▶ approved ──┐
         │  ──reject───▶ rejected ──┴─claim─▶ applying ──finish─▶ applied
         └──(its time is up)──▶ expired      (approved too, if not applied in time)

Every transition runs under ``BEGIN IMMEDIATE``, SQLite's write lock, so two resumers cannot
both claim a call: one applies it, the others get its recorded outcome or a conflict. A store
file that is not SQLite, is cut short, is a folder, is read-only or holds another program's
tables is refused as :class:`~harness.approvals.errors.ApprovalInvalid` naming the file,
where it is opened or queried.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import uuid as uuidlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Literal

from harness import messages as m
from harness.approvals.errors import (
    ApprovalConflict,
    ApprovalExpired,
    ApprovalInvalid,
    ApprovalNotFound,
    ApprovalStoreBusy,
)
from harness.approvals.rows import _COLUMNS, _SCHEMA, _SELECT, Claim, Record, State, _record
from harness.approvals.snapshot import Decision, PendingToolCall
from harness.clock import Clock, RealClock, isoformat

SCHEMA_VERSION = 1
"""The store's own layout (``PRAGMA user_version``)."""

APPLY_LEASE = 600.0
"""Seconds after which a claim whose owner never finished is taken over (our choice). The
new owner does not run the call again: it may have run, so it is answered as interrupted."""


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
