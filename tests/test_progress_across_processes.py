"""A task finished over three processes, the first two killed (SIGKILL) mid-task: the progress
file carries the work across them, and no step is done twice. The kills come at a fixed call
count (``--die-at``), so the test is the same on every run: no timing."""

from __future__ import annotations

import signal
import subprocess
import sys
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


def test_three_processes_two_killed_finish_the_task_with_every_step_done_once(
    tmp_path: Path,
) -> None:
    first = run(tmp_path, "--die-at", "5")
    second = run(tmp_path, "--die-at", "4")
    third = run(tmp_path)

    assert first.returncode == -signal.SIGKILL
    assert second.returncode == -signal.SIGKILL
    assert third.returncode == 0, third.stderr
    calls = (tmp_path / CALLS_LOG).read_text(encoding="utf-8").split()
    assert calls == module_names()  # each module exactly once, in order
    progress = parse_progress((tmp_path / PROGRESS_FILE).read_text(encoding="utf-8"))
    assert progress.todos.count("completed") == 12
    assert len(progress.todos.items) == 12


def test_a_killed_process_leaves_its_step_in_progress_and_the_steps_before_it_done(
    tmp_path: Path,
) -> None:
    assert run(tmp_path, "--die-at", "3").returncode == -signal.SIGKILL

    progress = parse_progress((tmp_path / PROGRESS_FILE).read_text(encoding="utf-8"))
    assert progress.todos.count("completed") == 2
    current = progress.todos.current
    assert current is not None and current.content == "Migrate mod_03"
    assert (tmp_path / CALLS_LOG).read_text(encoding="utf-8").split() == ["mod_01", "mod_02"]


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
