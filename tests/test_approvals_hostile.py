"""The approval store given hostile files and rows (chapter 09): every problem is typed.

The module promises :class:`ApprovalInvalid` for a store it cannot read. These tests hand it
what a disk can hold: a file that is not SQLite, a store cut short at any byte, a folder, a
path under a file, a read-only connection or file, another program's tables, rows whose
columns contradict their state, and snapshots whose session id is a path. Each is refused
as :class:`ApprovalInvalid` (never a raw ``sqlite3`` error, an ``AssertionError`` or a
``SessionNotFound``) with a message that names the file or the row, nothing on disk is
changed by the refusal, and the sound rows next to a bad one stay usable.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness.agent import Agent
from harness.approvals import (
    ApprovalError,
    ApprovalInvalid,
    ApprovalStore,
    ApprovalStoreBusy,
    Claim,
    Decision,
    PendingToolCall,
    resume,
)
from harness.approvals.rows import _COLUMNS
from harness.clock import FakeClock
from harness.model import ScriptedModel
from harness.resume import Sessions
from harness.tools.permissions import ApprovalRequest

SOME = settings(max_examples=50, deadline=None)
FEWER = settings(max_examples=25, deadline=None)  # each example writes a database
HOUR = 3600.0
COLUMNS = list(_COLUMNS)  # the store's own schema


@contextmanager
def folder() -> Iterator[Path]:
    """A fresh folder per generated example (pytest's ``tmp_path`` is one per test)."""
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def snapshot(approval_id: str, *, session_id: str = "s1", now: float = 0.0) -> PendingToolCall:
    request = ApprovalRequest(
        tool="transfer",
        input={"to": "bob", "amount": 100},
        reason="transfer changes things",
        tool_use_id=f"toolu_{approval_id}",
    )
    return PendingToolCall.of(
        request, approval_id=approval_id, session_id=session_id, reply_uuid="u1", now=now, ttl=HOUR
    )


def outcome(approval_id: str) -> m.Block:
    return m.tool_result(f"toolu_{approval_id}", "sent 100 to bob")


def sound_store(path: Path) -> ApprovalStore:
    """A store with a row in each state: pending (two), approved, rejected, applying,
    applied and expired."""
    clock = FakeClock()
    store = ApprovalStore(path, clock=clock)
    store.add(snapshot("apr_e", now=clock.now() - 2 * HOUR))
    with pytest.raises(ApprovalError):
        store.decide("apr_e", "approve")  # its time is up: expired
    for approval_id in ("apr_p", "apr_ok", "apr_a", "apr_r", "apr_c", "apr_d"):
        store.add(snapshot(approval_id, now=clock.now()))
    store.decide("apr_a", "approve")
    store.decide("apr_r", "reject")
    store.decide("apr_c", "approve")
    store.claim("apr_c", "someone")
    store.decide("apr_d", "approve")
    claim = store.claim("apr_d", "me")
    assert isinstance(claim, Claim)
    store.finish(claim, outcome("apr_d"))
    return store


STATES = {
    "apr_p": "pending",
    "apr_ok": "pending",
    "apr_a": "approved",
    "apr_r": "rejected",
    "apr_c": "applying",
    "apr_d": "applied",
    "apr_e": "expired",
}


@functools.cache
def store_bytes() -> bytes:
    """A sound store's file, every change in it (no WAL left over)."""
    with folder() as here:
        sound_store(here / "approvals.db")
        assert not (here / "approvals.db-wal").exists()
        return (here / "approvals.db").read_bytes()


def refused(error: ApprovalInvalid, path: Path) -> None:
    assert str(path) in str(error), f"the message does not name the file: {error}"


# -- files that are not an approval store -----------------------------------------------------

not_sqlite = st.binary(min_size=1, max_size=3000) | st.text(min_size=1, max_size=500).map(
    str.encode
)


@SOME
@given(not_sqlite)
def test_a_file_that_is_not_sqlite_is_refused_naming_it_and_left_as_it_was(data: bytes) -> None:
    if data.startswith(b"SQLite format 3\x00"):
        return  # a header that says SQLite: the truncation test covers those
    with folder() as here:
        path = here / "approvals.db"
        path.write_bytes(data)
        with pytest.raises(ApprovalInvalid, match="not an SQLite database") as caught:
            ApprovalStore(path, clock=FakeClock())
        refused(caught.value, path)
        assert path.read_bytes() == data


def test_a_text_file_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("# my notes\nnot a database\n")
    with pytest.raises(ApprovalInvalid, match="not an SQLite database") as caught:
        ApprovalStore(path, clock=FakeClock())
    refused(caught.value, path)


@pytest.mark.parametrize("data", [b"\x00", b"a", b"\n"])
def test_a_one_byte_file_is_refused_though_sqlite_would_read_it_as_empty(
    tmp_path: Path, data: bytes
) -> None:
    path = tmp_path / "approvals.db"
    path.write_bytes(data)
    with pytest.raises(ApprovalInvalid, match="not an SQLite database"):
        ApprovalStore(path, clock=FakeClock())
    assert path.read_bytes() == data


def test_an_empty_file_is_an_empty_store(tmp_path: Path) -> None:
    """SQLite reads an empty file as an empty database: there is nothing to lose in it."""
    path = tmp_path / "approvals.db"
    path.touch()
    store = ApprovalStore(path, clock=FakeClock())
    store.add(snapshot("apr_1"))
    assert [r.approval_id for r in store.all()] == ["apr_1"]


@SOME
@given(st.data())
def test_a_store_cut_short_anywhere_is_read_or_refused_never_a_raw_error(
    data: st.DataObject,
) -> None:
    whole = store_bytes()
    cut = data.draw(st.integers(1, len(whole) - 1), label="cut at")
    with folder() as here:
        path = here / "approvals.db"
        path.write_bytes(whole[:cut])
        actions: list[Callable[[ApprovalStore], object]] = [
            ApprovalStore.all,
            ApprovalStore.unreadable,
            ApprovalStore.pending,
            lambda s: s.get("apr_p"),
            lambda s: s.decide("apr_ok", "approve"),
            lambda s: s.claim("apr_a"),
        ]
        try:
            store = ApprovalStore(path, clock=FakeClock())
            for action in actions:
                try:
                    action(store)
                except ApprovalInvalid as error:
                    if not str(error).startswith("approval row"):  # else it names the row
                        refused(error, path)
                except ApprovalError:
                    pass  # not found (a cut lost its row), expired, conflict: typed
        except ApprovalInvalid as error:
            refused(error, path)


def test_a_store_cut_in_half_is_refused_as_damaged(tmp_path: Path) -> None:
    whole = store_bytes()
    path = tmp_path / "approvals.db"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ApprovalInvalid, match=r"damaged|not an SQLite") as caught:
        ApprovalStore(path, clock=FakeClock()).all()
    refused(caught.value, path)


def test_a_folder_is_refused_as_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ApprovalInvalid, match="is a folder") as caught:
        ApprovalStore(tmp_path, clock=FakeClock())
    refused(caught.value, tmp_path)


def test_a_path_under_a_regular_file_is_refused_and_the_file_kept(tmp_path: Path) -> None:
    blocker = tmp_path / "notes.txt"
    blocker.write_text("keep me")
    path = blocker / "approvals.db"
    with pytest.raises(ApprovalInvalid, match="is a file, not a folder") as caught:
        ApprovalStore(path, clock=FakeClock())
    refused(caught.value, path)
    assert blocker.read_text() == "keep me"


def test_a_read_only_connection_refuses_each_write_naming_the_file_and_keeps_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root ignores permission bits, so the store is opened read-only the way SQLite itself
    does it (``mode=ro``): the refusal then comes from SQLite, as on a read-only disk."""
    path = tmp_path / "approvals.db"
    sound_store(path)
    connect = sqlite3.connect

    def read_only(database: Any, **options: Any) -> sqlite3.Connection:
        return connect(f"file:{database}?mode=ro", uri=True, **options)

    monkeypatch.setattr(sqlite3, "connect", read_only)
    store = ApprovalStore(path, clock=FakeClock())  # reading works
    assert store.get("apr_p").state == "pending"
    for write in (
        lambda: store.decide("apr_p", "approve"),
        lambda: store.add(snapshot("apr_new")),
        lambda: store.claim("apr_a"),
    ):
        with pytest.raises(ApprovalInvalid, match="read-only") as caught:
            write()
        refused(caught.value, path)
    monkeypatch.undo()
    again = ApprovalStore(path, clock=FakeClock())
    assert {r.approval_id: r.state for r in again.all()} == STATES


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="root ignores permission bits; the read-only connection test covers this as root",
)
def test_a_read_only_file_refuses_each_write_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "approvals.db"
    sound_store(path)
    path.chmod(0o444)
    try:
        with pytest.raises(ApprovalInvalid, match="read-only") as caught:
            ApprovalStore(path, clock=FakeClock()).decide("apr_p", "approve")
        refused(caught.value, path)
    finally:
        path.chmod(0o644)


def test_a_store_locked_past_its_busy_timeout_is_busy_and_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "approvals.db"
    sound_store(path)
    store = ApprovalStore(path, clock=FakeClock(), busy_timeout=0.0)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        with pytest.raises(ApprovalStoreBusy, match="locked by another process") as caught:
            store.decide("apr_p", "approve")
        refused(caught.value, path)
        assert isinstance(caught.value, ApprovalInvalid) and caught.value.status == 503
    finally:
        holder.close()
    assert store.decide("apr_p", "approve").state == "approved"  # once it is free


# -- another program's database ---------------------------------------------------------------

names = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(
    lambda n: not n.startswith("sqlite_")
)


def other_program(path: Path, tables: dict[str, list[str]], user_version: int) -> bytes:
    con = sqlite3.connect(path)
    con.execute("PRAGMA synchronous=OFF")  # a test file: no need to wait for the disk
    with con:
        for table, columns in tables.items():
            con.execute(f'CREATE TABLE "{table}" ({", ".join(f"{c!r} TEXT" for c in columns)})')
            con.execute(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(columns))})', columns)
        con.execute(f"PRAGMA user_version={user_version}")
    con.close()
    return path.read_bytes()


@FEWER
@given(
    columns=st.lists(names | st.sampled_from(COLUMNS), min_size=1, max_size=12, unique=True),
    user_version=st.integers(0, 1),
)
def test_another_programs_approvals_table_is_refused_and_left_as_it_was(
    columns: list[str], user_version: int
) -> None:
    if sorted(columns) == sorted(COLUMNS):
        return  # the store's own layout
    with folder() as here:
        path = here / "approvals.db"
        before = other_program(path, {"approvals": columns}, user_version)
        with pytest.raises(ApprovalInvalid, match="other columns") as caught:
            ApprovalStore(path, clock=FakeClock())
        refused(caught.value, path)
        assert path.read_bytes() == before


@pytest.mark.parametrize(
    "columns",
    [COLUMNS[:-1], [*COLUMNS, "priority"], ["id", "state", "session_id"]],
    ids=["one-missing", "one-more", "three-of-ours"],
)
def test_an_approvals_table_of_another_layout_is_refused_naming_its_columns(
    tmp_path: Path, columns: list[str]
) -> None:
    path = tmp_path / "approvals.db"
    other_program(path, {"approvals": columns}, 0)
    with pytest.raises(ApprovalInvalid, match="other columns") as caught:
        ApprovalStore(path, clock=FakeClock())
    assert ", ".join(columns) in str(caught.value)


@FEWER
@given(
    tables=st.dictionaries(
        names.filter(lambda n: n != "approvals"),
        st.lists(names, min_size=1, max_size=4, unique=True),
        min_size=1,
        max_size=4,
    ),
    user_version=st.integers(0, 1),
)
def test_another_programs_database_is_refused_and_left_as_it_was(
    tables: dict[str, list[str]], user_version: int
) -> None:
    with folder() as here:
        path = here / "app.db"
        before = other_program(path, tables, user_version)
        with pytest.raises(ApprovalInvalid, match="another program's database") as caught:
            ApprovalStore(path, clock=FakeClock())
        refused(caught.value, path)
        assert path.read_bytes() == before
        assert not (here / "app.db-wal").exists()


# -- rows whose columns contradict their state -------------------------------------------------

APPROVE = Decision(approve=True).model_dump_json()
REJECT = Decision(approve=False).model_dump_json()
RESULT = json.dumps(outcome("apr_p"))

CONTRADICTIONS: list[tuple[str, str, tuple[Any, ...], str]] = [
    ("apr_a", "decision = NULL", (), "without a decision"),
    ("apr_r", "decision = NULL", (), "without a decision"),
    ("apr_a", "decision = ?", (REJECT,), "decision to reject"),
    ("apr_r", "decision = ?", (APPROVE,), "decision to approve"),
    ("apr_c", "claimed_by = NULL", (), "without an owner"),
    ("apr_c", "claimed_at = NULL", (), "without an owner"),
    ("apr_c", "decision = NULL", (), "without a decision"),
    ("apr_d", "outcome = NULL", (), "without the outcome"),
    ("apr_d", "decision = NULL", (), "without a decision"),
    ("apr_p", "outcome = ?", (RESULT,), "'pending' with a decision or an outcome"),
    ("apr_p", "decision = ?", (APPROVE,), "'pending' with a decision or an outcome"),
]
"""(row, change, its parameters, what the refusal says): each contradicts the row's state."""

ANY_ROW: list[tuple[str, tuple[Any, ...], str]] = [
    ("outcome = ?", ("[1, 2]",), "not a tool_result"),
    ("outcome = ?", ("sent it",), "not JSON"),
    ("decision = ?", ("{}",), "decision is unreadable"),
    ("decision = ?", ('"yes"',), "decision is unreadable"),
    ("claimed_by = ?", (b"\x07",), "claimed_by is bytes"),
    ("claimed_at = ?", ("soon",), "claimed_at is 'soon'"),
    ("decided_at = ?", (b"\x00",), "decided_at is"),
    ("updated_at = ?", ("now",), "updated_at is 'now'"),
    ("snapshot = ?", ("{",), "unreadable approval snapshot"),
    ("snapshot = ?", (b"\x00\xff",), "not JSON text"),
    ("snapshot = ?", (snapshot("apr_x").model_dump_json(),), "another approval"),
    ("session_id = ?", ("s2",), "the row says session 's2'"),
]
"""(change, parameters, what the refusal says): wrong in a row of any state."""

a_bad_row = st.sampled_from(CONTRADICTIONS) | st.tuples(
    st.sampled_from(sorted(STATES)), st.sampled_from(ANY_ROW)
).map(lambda pair: (pair[0], *pair[1]))


@settings(max_examples=40, deadline=None)
@given(a_bad_row)
def test_a_row_that_contradicts_itself_is_refused_by_id_and_the_others_stay_usable(
    bad: tuple[str, str, tuple[Any, ...], str],
) -> None:
    bad_id, change, parameters, says = bad
    with folder() as here:
        path = here / "approvals.db"
        path.write_bytes(store_bytes())
        con = sqlite3.connect(path)
        con.execute("PRAGMA synchronous=OFF")
        with con:
            con.execute(f"UPDATE approvals SET {change} WHERE id = ?", (*parameters, bad_id))
        con.close()
        store = ApprovalStore(path, clock=FakeClock())

        for touch in (store.get, store.claim, lambda i: store.decide(i, "approve")):
            with pytest.raises(ApprovalInvalid) as caught:
                touch(bad_id)
            assert f"approval row {bad_id!r}" in str(caught.value) and says in str(caught.value)
        others = {i: s for i, s in STATES.items() if i != bad_id}
        assert {r.approval_id: r.state for r in store.all()} == others
        ((listed, why),) = store.unreadable()
        assert listed == bad_id and says in why
        assert {r.approval_id for r in store.pending()} == {
            i for i, s in others.items() if s == "pending"
        }
        if bad_id != "apr_ok":  # a sound row still moves on
            assert store.decide("apr_ok", "approve").state == "approved"


def test_a_state_no_code_writes_is_refused_in_a_table_without_the_check(tmp_path: Path) -> None:
    path = tmp_path / "approvals.db"
    con = sqlite3.connect(path)
    with con:  # our columns, but no CHECK on the state (an older or hand-made table)
        con.execute(f"CREATE TABLE approvals ({', '.join(COLUMNS)})")
        for approval_id, state in (("apr_1", "paused"), ("apr_2", "pending")):
            con.execute(
                "INSERT INTO approvals (id, session_id, state, snapshot, updated_at) "
                "VALUES (?, 's1', ?, ?, 0)",
                (approval_id, state, snapshot(approval_id).model_dump_json()),
            )
    con.close()
    store = ApprovalStore(path, clock=FakeClock())
    with pytest.raises(ApprovalInvalid, match="'apr_1': its state 'paused' is none of"):
        store.get("apr_1")
    assert [r.approval_id for r in store.all()] == ["apr_2"]


# -- session ids that are paths ----------------------------------------------------------------

plain_ids = st.text(min_size=1, max_size=20).filter(
    lambda s: not any(c in s for c in "/\\\x00") and s not in (".", "..")
)


@st.composite
def path_ids(draw: st.DrawFn) -> str:
    """A session id that is a path: a separator somewhere, or ``.``, ``..`` or nothing."""
    if draw(st.booleans()):
        return draw(st.sampled_from(["", ".", "..", "../x", "a/b", "..\\x", "/etc/passwd"]))
    head, tail = draw(plain_ids | st.just("")), draw(plain_ids | st.just(""))
    return head + draw(st.sampled_from(["/", "\\", "\x00", "/../"])) + tail


def request() -> ApprovalRequest:
    return ApprovalRequest(tool="transfer", input={"amount": 1}, reason="r", tool_use_id="toolu_1")


@SOME
@given(path_ids())
def test_a_session_id_that_is_a_path_is_refused_when_the_snapshot_is_made_or_read(
    session_id: str,
) -> None:
    with pytest.raises(ApprovalInvalid, match="is not a session id"):
        PendingToolCall.of(
            request(), approval_id="apr_1", session_id=session_id, reply_uuid=None, now=0, ttl=1
        )
    raw = json.loads(snapshot("apr_1").model_dump_json())
    with pytest.raises(ApprovalInvalid, match=r"session_id: .*is not a session id"):
        PendingToolCall.parse({**raw, "session_id": session_id})


@SOME
@given(plain_ids)
def test_a_plain_session_id_is_kept(session_id: str) -> None:
    made = PendingToolCall.of(
        request(), approval_id="apr_1", session_id=session_id, reply_uuid=None, now=0, ttl=1
    )
    assert PendingToolCall.parse(made.model_dump_json()).session_id == session_id


@pytest.mark.parametrize("session_id", ["../x", "a/b"])
def test_a_stored_snapshot_whose_session_is_a_path_is_refused_by_resume(
    tmp_path: Path, session_id: str
) -> None:
    clock = FakeClock()
    store = ApprovalStore(tmp_path / "approvals.db", clock=clock)
    store.add(snapshot("apr_ok", now=clock.now()))
    forged = {**json.loads(snapshot("apr_1", now=clock.now()).model_dump_json())}
    forged["session_id"] = session_id
    con = sqlite3.connect(store.path)
    with con:  # written by something else than this code
        con.execute(
            "INSERT INTO approvals (id, session_id, state, snapshot, updated_at) "
            "VALUES ('apr_1', ?, 'pending', ?, 0)",
            (session_id, json.dumps(forged)),
        )
    con.close()
    agent = Agent(ScriptedModel([], clock=clock), tools=[], workspace=tmp_path, clock=clock)
    sessions = Sessions.for_workspace(tmp_path, clock=clock)

    with pytest.raises(ApprovalInvalid, match=r"'apr_1'.*is not a session id"):
        resume(agent, sessions, store, "apr_1", "approve")
    assert store.unreadable()[0][0] == "apr_1"
    assert [r.approval_id for r in store.pending()] == ["apr_ok"]
