"""A stored result is read back as an untrusted file: whatever replaces it between the spill and
the read (a symlink to a file outside, a FIFO, a hard link to a secret, another file moved over
it, a huge sparse file), and at whatever moment, even between the storage's check and its read,
the harness reads the output it wrote or refuses; it never reads the other file and never waits.
The logs of background commands are guarded by the same code."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.tools.base import ToolContext, ToolError
from harness.tools.builtins import grep, read_file
from harness.tools.storage import STORED_PREFIX, ResultStorage, StoredResultError
from harness.tools.workspace import Workspace

BOUND = 20.0
"""Seconds a read may take before the test fails (each takes milliseconds)."""

SECRET = "password=hunter2\n"
HUGE = 1 << 36
"""A 64 GiB sparse file: it takes no disk, and reading it whole would take 64 GiB of memory."""


def output(lines: int = 2_000) -> str:
    return "".join(f"row {i:05d} " + "." * 40 + "\n" for i in range(1, lines + 1))


def symlink_to_secret(stored: Path, secret: Path) -> None:
    stored.unlink()
    stored.symlink_to(secret)


def fifo(stored: Path, secret: Path) -> None:
    stored.unlink()
    os.mkfifo(stored)


def hard_link_to_secret(stored: Path, secret: Path) -> None:
    stored.unlink()
    os.link(secret, stored)


def secret_moved_over_it(stored: Path, secret: Path) -> None:
    copy = secret.with_name("moved")
    copy.write_text(SECRET)
    copy.replace(stored)  # a plain file with one name, as the stored one


def huge_sparse_file(stored: Path, secret: Path) -> None:
    sparse = secret.with_name("sparse")
    with sparse.open("wb") as file:
        file.write(SECRET.encode())
        file.truncate(HUGE)
    sparse.replace(stored)


def grown_in_place(stored: Path, secret: Path) -> None:
    os.truncate(stored, HUGE)  # the very file the harness wrote, made huge


SWAPS: dict[str, Callable[[Path, Path], None]] = {
    "a symlink to a file outside": symlink_to_secret,
    "a FIFO": fifo,
    "a hard link to a file outside": hard_link_to_secret,
    "another file moved over it": secret_moved_over_it,
    "a huge sparse file": huge_sparse_file,
    "the same file grown huge": grown_in_place,
}


def stored_with_secret(base: Path) -> tuple[ResultStorage, Path, Path]:
    """A storage that spilled ``toolu_0001``, its file, and a secret file outside it."""
    storage = ResultStorage(base / "results")
    storage.spill("toolu_0001", output())
    secret = base / "secret.txt"
    secret.write_text(SECRET)
    return storage, storage.directory / "toolu_0001.txt", secret


def bounded(read: Callable[[], Any]) -> Any:
    """What ``read`` returned or raised, run in a thread: a read that waits (a FIFO opened for
    reading waits for a writer) fails the test after ``BOUND`` seconds instead of hanging it."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(read())
        except BaseException as error:  # handed to the test to judge
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), "the read waited (on a FIFO?) instead of refusing"
    return outcome[0]


@contextmanager
def swapped_when_checked(
    storage: ResultStorage, stored: Path, swap: Callable[[], None], at: int = 0
) -> Iterator[None]:
    """Run ``swap`` right after the harness's ``at``-th look at the storage folder or the
    stored file (an ``lstat``, ``stat`` or ``fstat`` of either, or the ``close`` of a
    descriptor open on either): the moment between a check and the read it guards, when a
    check made on a name is worth nothing. Nothing is swapped if the harness looks fewer
    times."""
    ours = {(info.st_dev, info.st_ino) for info in map(os.stat, (storage.directory, stored))}
    real_fstat, real_close = os.fstat, os.close
    looks = [0]

    def looked(info: os.stat_result | None) -> None:
        if info is None or (info.st_dev, info.st_ino) not in ours or looks[0] < 0:
            return
        if looks[0] == at:
            looks[0] = -1  # once
            swap()
        else:
            looks[0] += 1

    def looking(real: Callable[..., os.stat_result]) -> Callable[..., os.stat_result]:
        def look(*args: Any, **kwargs: Any) -> os.stat_result:
            info = real(*args, **kwargs)
            looked(info)
            return info

        return look

    def close(fd: int) -> None:
        try:
            info: os.stat_result | None = real_fstat(fd)
        except OSError:
            info = None
        real_close(fd)
        looked(info)

    with mock.patch.multiple(
        os, lstat=looking(os.lstat), stat=looking(os.stat), fstat=looking(real_fstat), close=close
    ):
        yield


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    (tmp_path / "ws").mkdir()
    return Workspace(tmp_path / "ws")


@pytest.mark.parametrize("kind", SWAPS)
def test_a_stored_file_replaced_before_the_read_is_refused(tmp_path: Path, kind: str) -> None:
    storage, stored, secret = stored_with_secret(tmp_path)
    SWAPS[kind](stored, secret)
    outcome = bounded(lambda: storage.read("toolu_0001"))
    assert isinstance(outcome, StoredResultError)
    assert str(tmp_path) not in str(outcome)  # the model sees it: no absolute path


@pytest.mark.parametrize("kind", SWAPS)
def test_a_stored_file_replaced_between_the_check_and_the_read_is_never_read(
    tmp_path: Path, kind: str
) -> None:
    storage, stored, secret = stored_with_secret(tmp_path)
    for at in range(6):  # after each look the storage takes, and after none
        with swapped_when_checked(storage, stored, lambda: SWAPS[kind](stored, secret), at):
            outcome = bounded(lambda: storage.read("toolu_0001"))
        assert outcome == output() or isinstance(outcome, StoredResultError), at
        storage.spill("toolu_0001", output())  # the harness's own file again


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(sorted(SWAPS)), at=st.integers(0, 6), lines=st.integers(0, 3_000))
def test_whatever_replaces_a_stored_file_and_whenever_the_read_gives_the_output_or_refuses(
    tmp_path_factory: pytest.TempPathFactory, kind: str, at: int, lines: int
) -> None:
    base = tmp_path_factory.mktemp("swap")
    storage = ResultStorage(base / "results")
    storage.spill("toolu_0001", output(lines) + "end", force=True)
    stored, secret = storage.directory / "toolu_0001.txt", base / "secret.txt"
    secret.write_text(SECRET)
    with swapped_when_checked(storage, stored, lambda: SWAPS[kind](stored, secret), at):
        outcome = bounded(lambda: storage.read("toolu_0001"))
    assert outcome == output(lines) + "end" or isinstance(outcome, StoredResultError)


def test_a_stored_file_left_alone_still_reads_back_after_a_swap_was_refused(
    tmp_path: Path,
) -> None:
    storage, stored, secret = stored_with_secret(tmp_path)
    storage.spill("toolu_0002", output(3_000))
    hard_link_to_secret(stored, secret)
    with pytest.raises(StoredResultError):
        storage.read("toolu_0001")
    assert storage.read("toolu_0002") == output(3_000)
    storage.spill(
        "toolu_0001", output(10), force=True
    )  # spilled again: the new file is the harness's
    assert storage.read("toolu_0001") == output(10)


def test_a_result_in_the_folder_that_this_storage_did_not_write_is_not_read(
    tmp_path: Path,
) -> None:
    storage, _, _ = stored_with_secret(tmp_path)
    (storage.directory / "toolu_0009.txt").write_text(SECRET)
    with pytest.raises(StoredResultError, match="no stored result"):
        storage.stored_bytes(STORED_PREFIX + "toolu_0009.txt")


@pytest.mark.parametrize("kind", SWAPS)
def test_read_file_and_grep_never_read_what_replaced_a_stored_result(
    tmp_path: Path, workspace: Workspace, kind: str
) -> None:
    storage, stored, secret = stored_with_secret(tmp_path)
    context = ToolContext(workspace=workspace, storage=storage)
    path = STORED_PREFIX + "toolu_0001.txt"
    calls = {
        "read_file": lambda: read_file({"path": path, "offset": 1, "limit": 3}, context),
        "grep": lambda: grep({"pattern": "hunter2|row 0000", "path": path}, context),
    }
    for (name, call), at in itertools.product(calls.items(), range(8)):
        with swapped_when_checked(storage, stored, lambda: SWAPS[kind](stored, secret), at):
            outcome = bounded(call)
        assert isinstance(outcome, str | ToolError), (name, at, outcome)
        assert "hunter2" not in str(outcome), (name, at)
        storage.spill("toolu_0001", output())  # the harness's own file again


def test_a_log_and_a_stored_result_are_guarded_by_the_same_code() -> None:
    from harness.background import logs
    from harness.tools import owned

    assert logs.open_owned is owned.open_owned
    assert logs.LogUnreadable is owned.NotOwned
    assert issubclass(StoredResultError, owned.NotOwned)
