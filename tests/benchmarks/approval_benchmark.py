"""What the approval store costs, and how a race for one approval splits.

    uv run python tests/benchmarks/approval_benchmark.py [folder]

In a temporary folder (or ``folder``: put it on the disk you care about, since every
transition is an fsync'd SQLite commit), on this one machine:

1. **Per operation**, over 1,000 approvals: ``add`` (a pending call), ``decide`` (approve)
   and ``claim`` + ``finish`` (what a resume does to the row), each in its own transaction
   on its own connection, as the store does. Twice: with the store alone (each operation's
   connection is the last one open, so SQLite checkpoints the write-ahead log into the
   database and deletes it when that connection closes), and with a reader connection held
   open the whole time (as a notebook widget or a web server would), which keeps the log
   alive: it grows until SQLite's automatic checkpoint (1,000 pages) and is reused after.
   The WAL file's size is sampled after every operation.
2. **The race**: 16 threads, then 16 forked processes, each a fresh agent with its own
   store object, resume one paused approval with "approve" at the same moment (the
   session of ``tests/approval_session.py``, whose ``transfer`` tool takes 20 ms). Wall
   time from the barrier to the last answer, how many applied it (must be 1), got the
   recorded outcome or a conflict, and the ledger's lines (must be 1). ``ROUNDS`` rounds.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import sqlite3

from harness import messages as m
from harness.approvals import ApprovalConflict, ApprovalStore, Claim, PendingToolCall
from harness.tools.permissions import ApprovalRequest
from tests.approval_session import Paused, fork_context, pause, resumer, try_resume

N = 1_000
RACERS = 16
ROUNDS = 5


def filesystem(path: Path) -> str:
    """The type of the filesystem ``path`` is on (from /proc/mounts; '?' elsewhere)."""
    best, kind = "", "?"
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return kind
    target = str(path.resolve())
    for line in mounts:
        parts = line.split()
        if len(parts) > 2 and target.startswith(parts[1]) and len(parts[1]) > len(best):
            best, kind = parts[1], parts[2]
    return kind


def snapshot(i: int) -> PendingToolCall:
    request = ApprovalRequest(f"toolu_{i:05d}", "transfer", {"to": "bob", "amount": i}, "ask")
    return PendingToolCall.of(
        request,
        approval_id=f"apr_{i:05d}",
        session_id="bench",
        reply_uuid=None,
        now=time.time(),
        ttl=3600.0,
    )


def wal_size(db: Path) -> int:
    wal = db.with_name(db.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def timed(db: Path, operation: Callable[[int], object]) -> tuple[list[float], int]:
    """Seconds per call of ``operation(i)`` for each approval, and the WAL's largest size."""
    seconds, largest = [], 0
    for i in range(N):
        start = time.perf_counter()
        operation(i)
        seconds.append(time.perf_counter() - start)
        largest = max(largest, wal_size(db))
    return seconds, largest


def describe(name: str, seconds: list[float], largest: int) -> str:
    ordered = sorted(seconds)
    p99 = ordered[int(0.99 * len(ordered)) - 1]
    return (
        f"  {name:<16} mean {1e3 * statistics.fmean(seconds):6.2f} ms  median "
        f"{1e3 * statistics.median(seconds):6.2f} ms  p99 {1e3 * p99:6.2f} ms   "
        f"WAL at most {largest / 1024:7.1f} KiB"
    )


def per_operation(folder: Path, reader: bool) -> None:
    db = folder / ("held.db" if reader else "alone.db")
    store = ApprovalStore(db)
    held = sqlite3.connect(db) if reader else None
    if held is not None:
        held.execute("SELECT count(*) FROM approvals").fetchone()  # opens the WAL, stays open
    snapshots = [snapshot(i) for i in range(N)]

    def claim_finish(i: int) -> None:
        claim = store.claim(f"apr_{i:05d}")
        assert isinstance(claim, Claim)
        store.finish(claim, m.tool_result(f"toolu_{i:05d}", "sent"))

    title = "with a reader held open" if reader else "the store alone (checkpoint on close)"
    print(f"{N:,} approvals, {title}:")
    for name, operation in [
        ("add", lambda i: store.add(snapshots[i])),
        ("decide", lambda i: store.decide(f"apr_{i:05d}", "approve")),
        ("claim + finish", claim_finish),
    ]:
        print(describe(name, *timed(db, operation)))
    print(
        f"  after the run: database {db.stat().st_size / 1024:.0f} KiB, WAL "
        f"{wal_size(db) / 1024:.0f} KiB"
        + ("" if held is not None else " (deleted when the last connection closed)")
    )
    if held is not None:
        held.close()
        print(f"  after the reader closed: WAL {wal_size(db) / 1024:.0f} KiB")


def _race_thread(paused: Paused, racers: list[Any], barrier: Any, i: int, out: list[Any]) -> None:
    barrier.wait()
    start = time.monotonic()
    outcome: str
    try:
        outcome, _ = try_resume(racers[i], paused)
    except Exception as error:  # a benchmark reports, never hides
        outcome = f"error {type(error).__name__}"
    out.append((outcome, start, time.monotonic()))


def _race_process(paused: Paused, prefix: str, barrier: Any, out: Any) -> None:
    racer = resumer(paused, prefix)
    barrier.wait()
    start = time.monotonic()
    outcome: str
    try:
        outcome, _ = try_resume(racer, paused)
    except ApprovalConflict:
        outcome = "conflict"
    except Exception as error:
        outcome = f"error {type(error).__name__}"
    out.put((outcome, start, time.monotonic()))


def race(folder: Path, kind: str, rounds: int) -> None:
    print(f"{RACERS} {kind} resume one approval at once ({rounds} rounds):")
    totals: Counter[str] = Counter()
    walls = []
    for n in range(rounds):
        workspace = folder / f"{kind}-{n}"
        workspace.mkdir()
        paused = pause(workspace)
        if kind == "threads":
            racers = [resumer(paused, f"t{i:02d}") for i in range(RACERS)]
            barrier: Any = threading.Barrier(RACERS)
            seen: list[Any] = []
            threads = [
                threading.Thread(target=_race_thread, args=(paused, racers, barrier, i, seen))
                for i in range(RACERS)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        else:
            context = fork_context()
            barrier = context.Barrier(RACERS)
            queue = context.SimpleQueue()
            children = [
                context.Process(target=_race_process, args=(paused, f"p{i:02d}", barrier, queue))
                for i in range(RACERS)
            ]
            for child in children:
                child.start()
            for child in children:
                child.join()
            seen = [queue.get() for _ in range(RACERS)]
        outcomes = Counter(outcome for outcome, _, _ in seen)
        wall = max(end for _, _, end in seen) - min(start for _, start, _ in seen)
        walls.append(wall)
        totals.update(outcomes)
        split = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        print(
            f"  round {n + 1}: {1e3 * wall:6.1f} ms wall; {split}; ledger "
            f"{len(paused.ledger)} line(s); WAL {wal_size(paused.store_path) / 1024:.0f} KiB"
        )
    split = ", ".join(f"{k} {v}" for k, v in sorted(totals.items()))
    print(f"  all rounds: median wall {1e3 * statistics.median(walls):.1f} ms; {split}")


def main() -> None:
    base = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    with tempfile.TemporaryDirectory(dir=base) as name:
        folder = Path(name)
        print(
            f"folder {folder} ({filesystem(folder)}), {os.cpu_count()} CPUs, "
            f"SQLite {sqlite3.sqlite_version}, synchronous=FULL\n"
        )
        per_operation(folder, reader=False)
        print()
        per_operation(folder, reader=True)
        print()
        race(folder, "threads", ROUNDS)
        print()
        race(folder, "processes", ROUNDS)


if __name__ == "__main__":
    main()
