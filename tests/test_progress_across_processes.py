"""A task finished over three processes, the first two killed (SIGKILL) mid-task: the progress
file carries the work across them, and no step is done twice. The kills come at a fixed call
count (``--die-at``), so the test is the same on every run: no timing."""

from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.notebook.planning import module_names
from harness.notebook.progress_run import CALLS_LOG, main
from harness.planning import PROGRESS_FILE, parse_progress

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")


def run(workspace: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.notebook.progress_run", str(workspace), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@dataclass(frozen=True)
class ThreeRuns:
    """Three processes on one workspace, the first killed at its 5th ``migrate`` call and the
    second at its 4th, with what the first left on disk."""

    workspace: Path
    runs: list[subprocess.CompletedProcess[str]]
    progress_after_first: str
    calls_after_first: list[str]


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> ThreeRuns:
    # Both tests read the same runs: each process takes seconds to start.
    workspace = tmp_path_factory.mktemp("migration")
    first = run(workspace, "--die-at", "5")
    progress = (workspace / PROGRESS_FILE).read_text(encoding="utf-8")
    calls = (workspace / CALLS_LOG).read_text(encoding="utf-8").split()
    second = run(workspace, "--die-at", "4")
    third = run(workspace)
    return ThreeRuns(workspace, [first, second, third], progress, calls)


def test_three_processes_two_killed_finish_the_task_with_every_step_done_once(
    three_runs: ThreeRuns,
) -> None:
    first, second, third = three_runs.runs

    assert first.returncode == -signal.SIGKILL
    assert second.returncode == -signal.SIGKILL
    assert third.returncode == 0, third.stderr
    calls = (three_runs.workspace / CALLS_LOG).read_text(encoding="utf-8").split()
    assert calls == module_names()  # each module exactly once, in order
    progress = parse_progress((three_runs.workspace / PROGRESS_FILE).read_text(encoding="utf-8"))
    assert progress.todos.count("completed") == 12
    assert len(progress.todos.items) == 12


def test_a_killed_process_leaves_its_step_in_progress_and_the_steps_before_it_done(
    three_runs: ThreeRuns,
) -> None:
    assert three_runs.runs[0].returncode == -signal.SIGKILL

    progress = parse_progress(three_runs.progress_after_first)
    assert progress.todos.count("completed") == 4
    current = progress.todos.current
    assert current is not None and current.content == "Migrate mod_05"
    assert three_runs.calls_after_first == ["mod_01", "mod_02", "mod_03", "mod_04"]


def test_a_session_with_nothing_to_do_calls_no_tool_again(tmp_path: Path) -> None:
    # In this process: no kill here, so no subprocess is needed (they take seconds each).
    assert main([str(tmp_path)]) == 0
    assert main([str(tmp_path)]) == 0

    assert (tmp_path / CALLS_LOG).read_text(encoding="utf-8").split() == module_names()


def test_an_unreadable_progress_file_is_reported_and_the_task_starts_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / PROGRESS_FILE).write_bytes(b"\xff\xfe not text")

    assert main([str(tmp_path)]) == 0

    assert "not UTF-8" in capsys.readouterr().err
    assert (tmp_path / CALLS_LOG).read_text(encoding="utf-8").split() == module_names()


def test_a_workspace_that_is_not_a_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([str(tmp_path / "missing")])

    assert stopped.value.code == 2
    assert "is not a folder" in capsys.readouterr().err
