"""Chapter 15's background shells with real processes: start, read, stop, and nothing left
behind, not even after ``kill -9`` of the harness.

Commands run unsandboxed here (the sandbox probe costs a process; the sandbox itself is
chapter 02's). A command that must wait does so on a file the test creates, never on a
duration; every wait is for an outcome, with a generous bound that only limits a failure.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.background import BackgroundShells, Processes, ShellError, counted_ids
from harness.clock import FakeClock
from harness.notebook.background import group_members
from harness.tools.sandbox import Sandbox, detect_sandbox

UNSANDBOXED = Sandbox("none", "tests: no sandbox")
BOUND = 20.0
"""Seconds any wait may take before the test fails (each takes milliseconds)."""


def until(check: Callable[[], bool], what: str) -> None:
    """Wait for an outcome (not a duration): fail only if it never comes."""
    deadline = time.monotonic() + BOUND
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.01)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def gone(group: int) -> None:
    """Wait until no process of ``group`` is left: a stop returns once the command's first
    process is reaped; the others it started may take a moment more to finish dying."""
    until(lambda: group_members(group) == [], f"every process of group {group} is gone")


@pytest.fixture
def shells(tmp_path: Path) -> Iterator[BackgroundShells]:
    with BackgroundShells(
        tmp_path / "logs", clock=FakeClock(), spawner=Processes(UNSANDBOXED), ids=counted_ids()
    ) as manager:
        yield manager


@pytest.fixture
def space(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder


def start(shells: BackgroundShells, space: Path, command: str) -> str:
    return shells.start(command, cwd=space, workspace=space).task_id


def finished(shells: BackgroundShells, task_id: str) -> None:
    until(lambda: shells.get(task_id).status != "running", f"{task_id} ends")


# --- start, read, stop ---------------------------------------------------------------------


def test_a_command_runs_in_the_background_and_its_output_is_read_when_it_ends(
    shells: BackgroundShells, space: Path
) -> None:
    task_id = start(shells, space, "echo built; echo warned >&2; exit 3")
    assert task_id == "b1"
    finished(shells, task_id)
    reading = shells.read_new(task_id)
    assert reading.output == "built\nwarned\n"
    assert (reading.shell.status, reading.shell.exit_code) == ("failed", 3)
    assert reading.shell.log.read_text() == "built\nwarned\n"  # the whole output stays on disk


def test_a_read_returns_only_what_is_new_since_the_last_one(
    shells: BackgroundShells, space: Path
) -> None:
    task_id = start(
        shells, space, "echo first; while [ ! -e go ]; do sleep 0.01; done; echo second"
    )
    log = shells.get(task_id).log
    until(lambda: log.exists() and log.read_text() == "first\n", "the first line is written")
    assert shells.read_new(task_id).output == "first\n"
    assert shells.read_new(task_id).output == ""
    (space / "go").touch()
    finished(shells, task_id)
    reading = shells.read_new(task_id)
    assert (reading.output, reading.shell.status) == ("second\n", "completed")


def test_a_character_cut_between_two_reads_comes_whole_in_the_second(
    shells: BackgroundShells, space: Path
) -> None:
    task_id = start(
        shells, space, r"printf '\xc3'; while [ ! -e go ]; do sleep 0.01; done; printf '\xa9!'"
    )
    log = shells.get(task_id).log
    until(lambda: log.exists() and log.stat().st_size == 1, "the first byte of é is written")
    assert shells.read_new(task_id).output == ""  # held back, not a replacement character
    (space / "go").touch()
    finished(shells, task_id)
    assert shells.read_new(task_id).output == "é!"


def test_a_stopped_command_is_killed_with_every_process_it_started(
    shells: BackgroundShells, space: Path
) -> None:
    task_id = start(shells, space, "sleep 1000 & sleep 1000 & echo $! > child; wait")
    child = space / "child"
    until(lambda: child.exists() and child.read_text() != "", "the pid is written")
    group = shells.get(task_id).pid
    assert group is not None and len(group_members(group)) == 3  # bash and its two sleeps
    info = shells.stop(task_id)
    assert (info.status, info.exit_code, info.announced) == ("killed", 137, True)
    gone(group)


def test_a_command_that_ignores_sigterm_is_stopped_all_the_same(
    shells: BackgroundShells, space: Path
) -> None:
    task_id = start(shells, space, "trap '' TERM; echo ready; while :; do sleep 0.01; done")
    log = shells.get(task_id).log
    until(lambda: log.exists() and log.read_text() == "ready\n", "the trap is set")
    group = shells.get(task_id).pid
    assert group is not None
    shells.stop(task_id)
    gone(group)


def test_stopping_a_shell_twice_or_one_that_does_not_exist_says_why(
    shells: BackgroundShells, space: Path
) -> None:
    task_id = start(shells, space, "true")
    finished(shells, task_id)
    with pytest.raises(ShellError, match=r"Task b1 is not running \(status: completed\)"):
        shells.stop(task_id)
    with pytest.raises(ShellError, match="No task found with ID: b9"):
        shells.read_new("b9")


def test_what_a_command_leaves_running_in_its_group_ends_with_it(
    shells: BackgroundShells, space: Path
) -> None:
    task_id = start(shells, space, "sleep 1000 & echo $! > child")
    finished(shells, task_id)  # bash is done: the command is, even with sleep holding the pipe
    leftover = int((space / "child").read_text())
    until(lambda: not alive(leftover), "the leftover sleep is killed")
    assert shells.get(task_id).status == "completed"


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_keeper_told_to_terminate_takes_its_command_with_it(
    shells: BackgroundShells, space: Path
) -> None:
    task_id = start(shells, space, "sleep 1000 & wait")
    group = shells.get(task_id).pid
    assert group is not None
    until(lambda: len(group_members(group)) == 2, "the command and its sleep run")
    os.kill(parent_of(group), signal.SIGTERM)  # a closed terminal, a shutdown
    finished(shells, task_id)
    gone(group)
    assert (shells.get(task_id).status, shells.get(task_id).exit_code) == ("failed", 137)


def test_a_flood_of_output_is_capped_in_the_log_and_in_each_read(
    tmp_path: Path, space: Path
) -> None:
    with BackgroundShells(
        tmp_path / "logs", spawner=Processes(UNSANDBOXED), log_cap=100_000, read_cap=30_000
    ) as shells:
        task_id = start(shells, space, "head -c 3000000 /dev/zero | tr '\\0' y")
        finished(shells, task_id)
        reading = shells.read_new(task_id)
        info = reading.shell
        assert info.dropped == 2_900_000
        assert info.log.stat().st_size < 100_000 + 100  # the cap, and the note that says so
        assert "2,900,000 bytes dropped" in info.log.read_text()
        assert len(reading.output) <= 30_000
        assert str(info.log) in reading.output  # where the whole is


def test_closing_the_manager_stops_every_shell(tmp_path: Path, space: Path) -> None:
    shells = BackgroundShells(tmp_path / "logs", spawner=Processes(UNSANDBOXED))
    groups = []
    for _ in range(2):
        info = shells.start("sleep 1000", cwd=space, workspace=space)
        assert info.pid is not None
        groups.append(info.pid)
    shells.close()
    for group in groups:
        gone(group)
    assert {i.status for i in shells.list()} == {"killed"}
    shells.close()  # twice is fine
    with pytest.raises(ShellError, match="closed"):
        shells.start("true", cwd=space, workspace=space)


def test_list_gives_each_shell_its_status_exit_code_and_runtime(
    shells: BackgroundShells, space: Path
) -> None:
    clock = shells.clock
    assert isinstance(clock, FakeClock)
    done = start(shells, space, "exit 0")
    finished(shells, done)
    running = start(shells, space, "sleep 1000")
    clock.advance(90)
    rows = {i.task_id: i for i in shells.list()}
    assert (rows[done].status, rows[done].exit_code) == ("completed", 0)
    assert (rows[running].status, rows[running].runtime) == ("running", 90.0)
    assert [i.task_id for i in shells.unannounced()] == [done]


# --- kill -9 of the harness --------------------------------------------------------------------

HARNESS = """
import sys
from pathlib import Path
from harness.background import BackgroundShells, Processes
from harness.tools.sandbox import Sandbox, detect_sandbox
space = Path(sys.argv[1])
shells = BackgroundShells(space / "logs", spawner=Processes(Sandbox("none", "test")))
for n in range(2):
    info = shells.start(
        f"sleep 1000 & sleep 1000 & echo $! >> pids; wait", cwd=space, workspace=space
    )
    print(info.pid, flush=True)
sys.stdin.read()  # until the test kills this process
"""


def test_no_process_outlives_a_harness_killed_with_sigkill(space: Path) -> None:
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, str(space)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert harness.stdout is not None
    groups = [int(harness.stdout.readline()) for _ in range(2)]
    until(
        lambda: all(len(group_members(g)) == 3 for g in groups), "both commands run, with children"
    )
    keepers = {parent_of(g) for g in groups}
    os.kill(harness.pid, signal.SIGKILL)
    harness.wait()
    until(lambda: all(group_members(g) == [] for g in groups), "every command's group is gone")
    until(lambda: not any(alive(k) for k in keepers), "every keeper is gone")


def running_argv(argv: list[str]) -> list[int]:
    """Live processes whose command line is exactly ``argv``."""
    wanted = b"".join(a.encode() + b"\0" for a in argv)
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == wanted:
                found.append(int(entry.name))
        except OSError:
            continue
    return [pid for pid in found if alive(pid)]


def test_in_the_sandbox_even_a_process_that_left_the_group_is_stopped(
    tmp_path: Path, space: Path
) -> None:
    sandbox = detect_sandbox()
    if not sandbox.active:
        pytest.skip(f"no sandbox on this machine: {sandbox.detail}")
    marker = "987654.25"  # a sleep no other test runs
    with BackgroundShells(tmp_path / "logs", spawner=Processes(sandbox)) as shells:
        task_id = start(shells, space, f"setsid sleep {marker} & echo started; wait")
        log = shells.get(task_id).log
        until(lambda: log.exists() and log.read_text() == "started\n", "the command runs")
        until(lambda: len(running_argv(["sleep", marker])) == 1, "the escaped sleep runs")
        shells.stop(task_id)
        # The command was process 1 of its own PID namespace: when it died, so did all in it.
        until(lambda: running_argv(["sleep", marker]) == [], "the escaped sleep is gone")


def test_a_command_that_cannot_start_fails_and_its_output_says_why(
    tmp_path: Path, space: Path
) -> None:
    broken = Sandbox("broken", "a sandbox whose program is missing", ("/nonexistent/unshare",))
    with BackgroundShells(tmp_path / "logs", spawner=Processes(broken)) as shells:
        task_id = start(shells, space, "echo hi")
        finished(shells, task_id)
        reading = shells.read_new(task_id)
        assert (reading.shell.status, reading.shell.exit_code) == ("failed", None)
        assert "the command could not start" in reading.output
        assert "/nonexistent/unshare" in reading.output
