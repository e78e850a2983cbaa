"""Whether loading and repairing a transcript grow linearly with its size (issue 29).

    uv run python tests/benchmarks/transcript_linearity_benchmark.py [scale] [--no-gc]

Two shapes that used to take quadratic time, each built at 1x, 10x and 100x (``scale``
multiplies the three sizes; 1 by default, 0.1 for a quick look):

* **same-role run**: a transcript of 2,000 / 20,000 / 200,000 user entries in a row, each
  hanging from the one before (a prompt queue, pasted lines: the loader joins them into one
  message). Timed: ``load`` of the file (read, parse, walk the chain, join the run), and
  ``repair`` of what it gives.
* **text before results**: a conversation of 100 / 1,000 / 10,000 rounds, each an assistant
  message with a tool call and a user message holding a line of text *before* the call's
  result (results must come first: repair moves them). Timed: ``repair``; and ``load`` of
  the same rounds written as a transcript.

Each time is the best of ``REPEAT`` runs; next to it, the ratio to the 1x time. Linear
means about 10x and 100x (a little above, for the memory of bigger lists; a quadratic
step shows as 100x and 10,000x). It also checks the results (one message with every line;
every result kept, in front). Files go to a temporary folder, deleted at the end.
Deterministic input; the times are this machine's.

``--no-gc`` times with Python's cyclic garbage collector off: its full collections walk
every live object, and a 200,000-entry session is a lot of live objects, so at 100x part
of the excess over 100x is the collector's, not the loader's. The two runs side by side
tell them apart.
"""

from __future__ import annotations

import gc
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness import messages as m
from harness.transcript import load, repair
from tests.benchmarks.transcript_benchmark import timed as best_of

REPEAT = 2
RUN_SIZES = (2_000, 20_000, 200_000)
ROUND_SIZES = (100, 1_000, 10_000)
T = TypeVar("T")


def timed(action: Callable[[], T], repeat: int = REPEAT) -> tuple[float, T]:
    """The best time of ``repeat`` runs (``transcript_benchmark``'s timer)."""
    return best_of(action, repeat)


def entry(kind: str, n: int, content: Any, **extra: Any) -> str:
    line: dict[str, Any] = {
        "parentUuid": f"e{n - 1}" if n else None,
        "isSidechain": False,
        "sessionId": "bench",
        "type": kind,
        "uuid": f"e{n}",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": kind, "content": content, **extra},
    }
    return json.dumps(line) + "\n"


def same_role_file(path: Path, count: int) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for n in range(count):
            handle.write(entry("user", n, f"Queued line {n}."))
    return path


def rounds(count: int) -> list[m.MessageDict]:
    out = [m.user("Check each file.")]
    for n in range(count):
        use_id = f"toolu_{n:06d}"
        out.append(m.assistant([m.tool_use(use_id, "read_file", {"path": f"f{n}.txt"})]))
        out.append(m.user([m.text(f"About file {n}:"), m.tool_result(use_id, f"contents {n}")]))
    return out


def rounds_file(path: Path, conversation: list[m.MessageDict]) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for n, message in enumerate(conversation):
            extra = {"id": f"msg_{n}"} if message["role"] == "assistant" else {}
            handle.write(entry(message["role"], n, message["content"], **extra))
    return path


def report(title: str, sizes: tuple[int, ...], seconds: list[float]) -> None:
    print(f"\n{title}")
    print(f"{'size':>10}{'time':>11}{'x 1x':>9}")
    for size, took in zip(sizes, seconds, strict=True):
        print(f"{size:>10,}{took:>10.3f}s{took / seconds[0]:>8.1f}x")


def main(scale: float = 1.0, *, collect: bool = True) -> None:
    folder = Path(tempfile.mkdtemp(prefix="transcript-linearity-"))
    print(f"scale {scale}, garbage collector {'on' if collect else 'off'}")
    if not collect:
        gc.disable()
    try:
        run_sizes = tuple(max(1, int(n * scale)) for n in RUN_SIZES)
        round_sizes = tuple(max(1, int(n * scale)) for n in ROUND_SIZES)

        loads, repairs = [], []
        for size in run_sizes:
            path = same_role_file(folder / f"run-{size}.jsonl", size)
            took, session = timed(lambda p=path: load(p))  # type: ignore[misc]
            assert len(session.messages) == 1 and len(m.blocks(session.messages[0])) == size
            loads.append(took)
            took, fixed = timed(lambda s=session: repair(s.messages))  # type: ignore[misc]
            assert m.validate(fixed.messages) == []
            repairs.append(took)
            path.unlink()
        report("same-role run: load", run_sizes, loads)
        report("same-role run: repair of what load gave", run_sizes, repairs)

        repairs, loads = [], []
        for size in round_sizes:
            conversation = rounds(size)
            took, fixed = timed(lambda c=conversation: repair(c))  # type: ignore[misc]
            assert m.validate(fixed.messages) == []
            assert [c.kind for c in fixed.changes] == ["reordered"] * size  # nothing lost
            repairs.append(took)
            path = rounds_file(folder / f"rounds-{size}.jsonl", conversation)
            took, session = timed(lambda p=path: load(p))  # type: ignore[misc]
            assert len(session.messages) == 2 * size + 1
            loads.append(took)
            path.unlink()
        report("text before results: repair", round_sizes, repairs)
        report("text before results: load", round_sizes, loads)
    finally:
        gc.enable()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    numbers = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(float(numbers[0]) if numbers else 1.0, collect="--no-gc" not in sys.argv)
