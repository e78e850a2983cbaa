"""Loading a large transcript: the compact-boundary fast path against a full parse.

    uv run python tests/benchmarks/transcript_benchmark.py [megabytes]

Writes a ~150 MB transcript with the real writer (``harness.transcript.Transcript``) in a
temporary folder: a long tool-heavy session (prompts, replies with a tool call, tool results
of 2 to 20 KB of text, progress entries now and then) with a compaction at about 80 % of the
bytes, which writes a ``compact_boundary`` and the summary, and the session goes on after
it. Then, in this one run, it measures:

* ``load(path, fast=True)``: find the last boundary from the end, parse only what follows;
* ``load(path, fast=False)``: parse every line;

each timed on its own (best of ``REPEAT``) and once more under ``tracemalloc`` for the peak
of memory allocated while loading, next to the bytes after the boundary. Targets (issue 13):
the fast path within 1 s, and its peak within 2x the bytes after the boundary. It also
times ``fsck`` over the entries each path read and ``is_flushed`` (the flush gate's check,
which reads from the end), and checks that both paths give the same conversation. The file
is deleted at the end.
"""

from __future__ import annotations

import gc
import json
import random
import shutil
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from harness import messages as m
from harness.clock import FakeClock
from harness.compaction.events import Compacted
from harness.loop import Rewrite
from harness.resume import is_flushed
from harness.transcript import Transcript, fsck, load, seeded_ids

MB = 1024 * 1024
TARGET_SECONDS = 1.0
TARGET_PEAK_RATIO = 2.0
REPEAT = 3
T = TypeVar("T")

WORDS = [
    "def", "class", "return", "import", "self", "value", "result", "error", "path", "file",
    "line", "test", "data", "list", "dict", "config", "update", "check", "load", "write",
    "read", "parse", "token", "model", "agent", "session", "for", "if", "else", "None",
]  # fmt: skip


def text_pool(rng: random.Random, size: int = 256 * 1024) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
        if rng.random() < 0.08:
            words.append("\n   ")
    return " ".join(words)


def write_transcript(path: Path, megabytes: float, seed: int = 8) -> tuple[int, int]:
    """Write the session; return (bytes before the boundary, total bytes)."""
    rng = random.Random(seed)
    pool = text_pool(rng)
    clock = FakeClock()
    writer = Transcript(
        path=path, session_id="bench-0000", cwd="/work/project", clock=clock,
        ids=seeded_ids(seed), fsync=False,
    )  # fmt: skip
    target = int(megabytes * MB)
    conversation: list[m.MessageDict] = []
    boundary_at = 0
    turn = 0

    def size() -> int:
        writer.flush()
        return path.stat().st_size if path.exists() else 0

    def progress() -> None:  # a Claude Code progress entry, off the message chain
        writer.flush()
        entry = {
            "parentUuid": writer.parent, "isSidechain": False, "userType": "external",
            "cwd": "/work/project", "sessionId": "bench-0000", "version": "2.1.39",
            "type": "progress", "uuid": f"progress-{turn:06d}", "timestamp": "2026-01-01T00:00:00Z",
            "data": {"type": "hook_progress", "hookEvent": "PostToolUse", "command": "lint"},
        }  # fmt: skip
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")

    conversation.append(m.user("Work through the backlog, file by file."))
    while (written := size()) < target:
        turn += 1
        if turn % 40 == 0:  # a new request from the user, with a short answer first
            conversation.append(m.assistant(f"Done with batch {turn // 40}."))
            conversation.append(
                m.user(f"Now batch {turn // 40 + 1}: {pool[: rng.randint(50, 400)]}")
            )
        use_id = f"toolu_{turn:06d}"
        conversation.append(
            m.assistant(
                [
                    m.text(f"Reading the next file ({turn})."),
                    m.tool_use(use_id, "read_file", {"path": f"src/module_{turn}.py"}),
                ]
            )
        )
        start = rng.randrange(0, len(pool) - 20_000)
        body = pool[start : start + rng.randint(2_000, 20_000)]
        conversation.append(m.user([m.tool_result(use_id, body)]))
        writer.sync(conversation)
        if turn % 10 == 0:
            progress()
        if not boundary_at and written >= 0.8 * target:
            conversation.append(m.assistant("Pausing here to summarise."))
            writer.sync(conversation)
            boundary_at = size()
            summary = [
                m.user("Summary of the session so far: " + pool[:6_000]),
                m.assistant("Understood; continuing from the summary."),
            ]
            writer.record_rewrite(
                conversation, Rewrite(summary, Compacted("summary", "threshold", 180_000, 9_000))
            )
            conversation = summary
            conversation.append(m.user("Go on with the backlog."))
    conversation.append(m.assistant("The backlog is done."))
    writer.sync(conversation)
    writer.close()
    return boundary_at, path.stat().st_size


def timed(action: Callable[[], T], repeat: int = 1) -> tuple[float, T]:
    best, out = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        began = time.perf_counter()
        out = action()
        best = min(best, time.perf_counter() - began)
    assert out is not None
    return best, out


def peak(action: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        result = action()
        _, high = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return high


def main(megabytes: float = 150.0) -> bool:
    folder = Path(tempfile.mkdtemp(prefix="transcript-bench-"))
    try:
        path = folder / "bench-0000.jsonl"
        began = time.perf_counter()
        boundary_at, total = write_transcript(path, megabytes)
        write_seconds = time.perf_counter() - began
        with open(path, "rb") as handle:
            lines = sum(1 for _ in handle)
        print(
            f"transcript: {total / MB:.1f} MB, {lines:,} lines, written in {write_seconds:.1f} s; "
            f"boundary at {boundary_at / MB:.1f} MB ({boundary_at / total:.0%})"
        )

        fast_s, fast = timed(lambda: load(path, fast=True), REPEAT)
        full_s, full = timed(lambda: load(path, fast=False))
        after = total - fast.start_offset
        fast_peak = peak(lambda: load(path, fast=True))
        full_peak = peak(lambda: load(path, fast=False))
        assert fast.boundary is not None and fast.start_offset > 0
        assert fast.messages == full.messages, "the two paths disagree"
        assert m.validate(fast.messages) == []

        fsck_fast_s, report_fast = timed(lambda: fsck(fast.entries))
        fsck_full_s, report_full = timed(lambda: fsck(full.entries))
        flushed_s, flushed = timed(lambda: is_flushed(path), REPEAT)

        rows = [
            ("load fast=True", fast_s, fast_peak, fast),
            ("load fast=False", full_s, full_peak, full),
        ]
        print(f"\nbytes after the boundary: {after / MB:.1f} MB")
        print(f"{'':18}{'time':>9}{'peak (tracemalloc)':>21}{'peak / after':>14}{'lines':>10}")
        for name, seconds, high, session in rows:
            print(
                f"{name:18}{seconds:8.2f}s{high / MB:18.1f} MB{high / after:13.2f}x"
                f"{len(session.entries):>10,}"
            )
        print(f"{'fsck (fast entries)':24}{fsck_fast_s:6.3f}s   {len(report_fast.findings)} found")
        print(f"{'fsck (all entries)':24}{fsck_full_s:6.3f}s   {len(report_full.findings)} found")
        print(f"{'is_flushed':24}{flushed_s * 1000:6.2f}ms  {flushed}")

        time_ok = fast_s <= TARGET_SECONDS
        peak_ok = fast_peak <= TARGET_PEAK_RATIO * after
        print(
            f"\ntargets: fast path <= {TARGET_SECONDS:.0f} s: {'yes' if time_ok else 'NO'} "
            f"({fast_s:.2f} s); peak <= {TARGET_PEAK_RATIO:.0f}x the bytes after the boundary: "
            f"{'yes' if peak_ok else 'NO'} ({fast_peak / after:.2f}x); "
            f"speed-up over a full parse {full_s / fast_s:.0f}x"
        )
        return time_ok and peak_ok
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(0 if main(float(sys.argv[1]) if len(sys.argv) > 1 else 150.0) else 1)
