"""A session killed with SIGKILL at random points, then resumed to its end.

``tests/crash_session.py`` runs a scripted 12-step session whose tool writes its
``tool_use`` id to a ledger file (fsynced) in the middle of its work. A fork server (one
interpreter, harness imported once) forks a child per trial; the test kills the child with
SIGKILL after a seeded random delay, sometimes kills the child that resumes it too, and then
finishes the session here with :func:`tests.crash_session.drive`. After every kill:

* the conversation resumed from disk is one the API accepts;
* every tool result that was on disk before the kill is in the final conversation, unchanged;
* no ``tool_use`` id is twice in the ledger, and every (step, part) has exactly one real
  result: a finished tool never ran again;
* every call in the ledger whose result never reached the disk (the crash came between its
  side effect and the tool journal's record of its result: that window is inherent) is
  answered that it *may have run*, never as interrupted; a call whose result reached the
  journal but not the conversation gets that result back on resume.

Run with ``-s`` to see where the kills landed.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from harness import messages as m
from harness.loop import INTERRUPTED, MAY_HAVE_RUN
from harness.resume import Sessions
from harness.transcript import load, repair
from tests.crash_session import FINAL, LEDGER, TRACE, drive, plan

KILLS = 52
"""Kills that must land while a session runs (a child that finished first does not count)."""
MAX_TRIALS = 150
HERE = Path(__file__).parent

PHASES = {
    "start": "starting or resuming (load, repair, first writes)",
    "resumed": "resumed, before its first request",
    "request-fsynced": "request on disk, waiting for the reply",
    "reply-written": "reply on disk, before its tools ran",
    "tool-start": "mid-tool, before its ledger write",
    "ledger": "mid-tool, after its ledger write",
    "results-written": "results on disk, before the next request",
}


class ForkServer:
    """``tests/crash_session.py serve``: forks a child per session, on request."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "crash_session.py"), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            cwd=HERE.parent,
        )
        assert self._read() == "ready"

    def _read(self) -> str:
        out: IO[str] | None = self.process.stdout
        assert out is not None
        return out.readline().strip()

    def _send(self, line: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self._read()

    def run(self, workspace: Path, seed: int, prefix: str) -> int:
        answer = self._send(f"run {workspace} {seed} {prefix} 1")
        return int(answer.split()[1])

    def wait(self, pid: int) -> int:
        return int(self._send(f"wait {pid}").split()[1])

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.write("quit\n")
            self.process.stdin.close()
            self.process.wait(timeout=10)


def results_by_id(messages: list[m.MessageDict]) -> dict[str, m.Block]:
    return {
        str(r["tool_use_id"]): r
        for message in messages
        if message["role"] == "user"
        for r in m.tool_results(message)
    }


def tool_use_ids(messages: list[m.MessageDict]) -> set[str]:
    return {
        str(u["id"])
        for message in messages
        if message["role"] == "assistant"
        for u in m.tool_uses(message)
    }


def on_disk(workspace: Path) -> tuple[dict[str, m.Block], int]:
    """The tool results on disk in the bound session, and how many lines a kill tore."""
    sessions = Sessions.for_workspace(workspace)
    latest = sessions.latest()
    results: dict[str, m.Block] = {}
    torn = 0
    for path in sorted(sessions.folder.glob("*.jsonl")) if sessions.folder.is_dir() else []:
        session = load(path)
        torn += session.torn is not None
        found = results_by_id(session.messages)
        if path.stem == latest:
            results = found
            assert m.validate(repair(session.messages).messages) == []  # what a resume gets
        else:  # a session killed before its pointer was written: no tool had run in it yet
            assert found == {}, f"an unbound session holds tool results: {path}"
    return results, torn


def last_marker(workspace: Path, pid: int) -> str:
    path = workspace / TRACE
    lines = path.read_text().splitlines() if path.exists() else []
    mine = [line.split()[1] for line in lines if line.split()[0] == str(pid)]
    return mine[-1] if mine else "start"


@dataclass
class Figures:
    kills: int = 0
    trials: int = 0
    finished_before_kill: int = 0
    phases: Counter[str] = field(default_factory=Counter)
    torn_lines: int = 0
    ran_but_may_have_run: int = 0
    """Calls in the ledger whose result never reached the disk (answered "may have run",
    never "interrupted")."""
    never_ran_answered: int = 0
    """Calls on disk that a kill stopped before they ran (answered as interrupted, or as
    "may have run" when the kill came after they were recorded as started)."""
    ledger_lines: int = 0
    seconds: float = 0.0

    def report(self) -> str:
        lines = [
            f"{self.kills} kills in {self.trials} trials ({self.finished_before_kill} children "
            f"finished before their kill), {self.seconds:.1f} s",
            "where the kills landed:",
            *(f"  {n:3d}  {PHASES.get(k, k)}" for k, n in self.phases.most_common()),
            f"torn last lines: {self.torn_lines}",
            f"ledger lines: {self.ledger_lines}; ran but their result never on disk (answered "
            f"'may have run'): {self.ran_but_may_have_run}; stopped before they ran: "
            f"{self.never_ran_answered}",
        ]
        return "\n".join(lines)


def check_final(
    workspace: Path, seed: int, snapshots: list[dict[str, m.Block]], figures: Figures
) -> None:
    driven = drive(workspace, seed, "z", durable=False)  # this process finishes it
    if driven.resumed is not None:
        assert m.validate(driven.resumed) == []
    path = Sessions.for_workspace(workspace).path(driven.session_id)
    final = load(path).messages
    assert final == driven.agent.messages  # the file loads to the agent's conversation
    assert m.validate(final) == []
    assert m.text_of(final[-1]) == FINAL
    results = results_by_id(final)
    calls = tool_use_ids(final)

    for snapshot in snapshots:  # nothing that was on disk was lost or changed
        for use_id, block in snapshot.items():
            assert results.get(use_id) == block, f"{use_id}: on disk before a kill, then lost"

    ledger = [line.split() for line in (workspace / LEDGER).read_text().splitlines()]
    counts = Counter(use_id for use_id, _, _ in ledger)
    assert [i for i, n in counts.items() if n > 1] == [], "a tool_use id ran twice"
    real: Counter[tuple[int, int]] = Counter()
    for use_id, step, part in ledger:
        assert use_id in calls, f"{use_id} ran but its call is not in the conversation"
        result = results[use_id]
        if result.get("is_error"):
            assert result["content"] == MAY_HAVE_RUN, f"{use_id} ran; told it was interrupted"
            figures.ran_but_may_have_run += 1
        else:
            real[int(step), int(part)] += 1
    expected = {(s, p) for s, n in enumerate(plan(seed), start=1) for p in range(1, n + 1)}
    assert set(real) == expected and set(real.values()) == {1}, "a finished part ran again"
    for use_id, result in results.items():
        if not result.get("is_error"):
            assert counts[use_id] == 1, f"{use_id} has a result but never ran"
        elif use_id not in counts:
            assert result["content"] in (INTERRUPTED, MAY_HAVE_RUN)
            figures.never_ran_answered += 1
    figures.ledger_lines += len(ledger)


def kill_at_random(
    server: ForkServer, workspace: Path, seed: int, prefix: str, delay: float, figures: Figures
) -> bool:
    """Start a child on ``workspace``, SIGKILL it after ``delay``; True if it was killed."""
    pid = server.run(workspace, seed, prefix)
    time.sleep(delay)
    with contextlib.suppress(ProcessLookupError):  # gone already (finished, not reaped)
        os.kill(pid, signal.SIGKILL)
    status = server.wait(pid)
    error = workspace / "error.txt"
    assert not error.exists(), error.read_text()
    phase = last_marker(workspace, pid)
    if status != -signal.SIGKILL or phase == "done":
        assert status in (0, -signal.SIGKILL)
        figures.finished_before_kill += 1
        return False
    figures.kills += 1
    figures.phases[phase] += 1
    return True


def test_sigkill_at_random_points_then_resume_loses_no_finished_work(tmp_path: Path) -> None:
    started = time.perf_counter()
    rng = random.Random(20_808)
    figures = Figures()
    server = ForkServer()
    try:
        # How long an unkilled session takes here, so the delays cover all of it.
        calibration = tmp_path / "calibration"
        calibration.mkdir()
        began = time.perf_counter()
        pid = server.run(calibration, 0, "c")
        assert server.wait(pid) == 0
        span = time.perf_counter() - began
        check_final(calibration, 0, [], figures)

        trial = 0
        while figures.kills < KILLS and trial < MAX_TRIALS:
            trial += 1
            workspace = tmp_path / f"trial{trial:03d}"
            workspace.mkdir()
            snapshots: list[dict[str, m.Block]] = []
            # A first child, and for one trial in three a second one that resumes it.
            left = span  # roughly how long the rest of the session takes
            for prefix in ("a", "b")[: 2 if trial % 3 == 0 else 1]:
                delay = rng.uniform(0, left)
                left = max(left - delay, span / 10)
                if kill_at_random(server, workspace, trial, prefix, delay, figures):
                    results, torn = on_disk(workspace)
                    snapshots.append(results)
                    figures.torn_lines += torn
            check_final(workspace, trial, snapshots, figures)
        figures.trials = trial
    finally:
        server.close()
    figures.seconds = time.perf_counter() - started
    print("\n" + figures.report())
    assert figures.kills >= KILLS
    assert len(figures.phases) >= 5, f"the kills landed in too few places: {figures.phases}"
    assert figures.ledger_lines >= figures.kills * 10  # the sessions really did their work
