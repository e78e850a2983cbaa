"""Chapter 15's background shells under hostile conditions: reads that race, a keeper that
says nonsense or dies, a log folder or file swapped for something else, ids the model makes
up, a session that starts too many shells, a child agent that leaves a shell behind.

Every wait is for an outcome, bounded only to limit a failure; no test depends on which
thread runs first (a race is set up with a barrier, and the fixed code passes either way).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.agent import Agent
from harness.background import (
    BackgroundShells,
    BackgroundWork,
    Processes,
    Scripted,
    ScriptedCommand,
    ShellError,
    counted_ids,
)
from harness.background import processes as kept
from harness.background.logs import LogReader, LogUnreadable
from harness.background.scripted import ScriptedRun
from harness.background.shells import MAX_RUNNING
from harness.background.tools import task_output_tool, task_stop_tool
from harness.clock import FakeClock
from harness.model import ScriptedModel, reply, said, tool_call
from harness.notebook.background import group_members
from harness.subagents import Subagent
from harness.tools.base import ToolContext, ToolError
from harness.tools.permissions import Permissions
from harness.tools.sandbox import Sandbox
from harness.tools.workspace import Workspace

UNSANDBOXED = Sandbox("none", "tests: no sandbox")
BOUND = 20.0
"""Seconds any wait may take before the test fails (each takes milliseconds)."""


def until(check: Any, what: str) -> None:
    deadline = time.monotonic() + BOUND
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.01)


@pytest.fixture
def space(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder


@pytest.fixture
def real(tmp_path: Path) -> Iterator[BackgroundShells]:
    with BackgroundShells(
        tmp_path / "logs", clock=FakeClock(), spawner=Processes(UNSANDBOXED), ids=counted_ids()
    ) as manager:
        yield manager


# --- reads that race ---------------------------------------------------------------------------


class Meeting(list[tuple[float, str]]):
    """A stand-in's pieces whose slicing waits (briefly) for a second thread to slice them
    too: two threads that no lock keeps apart both take the pieces not yet written."""

    def __init__(self, pieces: list[tuple[float, str]]) -> None:
        super().__init__(pieces)
        self.meeting = threading.Barrier(2)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            with contextlib.suppress(threading.BrokenBarrierError):
                self.meeting.wait(timeout=0.3)  # only bounds the fixed code: nobody comes
        return super().__getitem__(index)


def test_two_waits_on_one_stand_in_at_once_write_its_output_once(tmp_path: Path) -> None:
    clock = FakeClock()
    spawner = Scripted({"pytest": ScriptedCommand(seconds=10, output=[(1.0, "412 passed\n")])})
    shells = BackgroundShells(tmp_path / "logs", clock=clock, spawner=spawner, ids=counted_ids())
    with shells:
        info = shells.start("pytest", cwd=tmp_path, workspace=tmp_path)
        run = shells._get(info.task_id).job
        assert isinstance(run, ScriptedRun)
        run._pieces = Meeting(run._pieces)
        clock.advance(5)  # the piece is due; nobody has looked yet
        threads = [threading.Thread(target=shells.wait, args=(info.task_id, 0.0)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(BOUND)
        clock.advance(10)
        assert shells.read_new(info.task_id).output == "412 passed\n"


def test_parallel_task_output_calls_on_a_real_shell_neither_double_read_nor_skip(
    real: BackgroundShells, space: Path
) -> None:
    lines = "".join(f"line {i}\n" for i in range(2000))
    script = space / "lines.txt"
    script.write_text(lines)
    info = real.start(f"cat {script}", cwd=space, workspace=space)
    real.wait(info.task_id, BOUND)
    pieces: list[str] = []
    lock = threading.Lock()

    def read() -> None:
        for _ in range(20):
            out = real.read_new(info.task_id).output
            with lock:
                pieces.append(out)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BOUND)
    assert "".join(pieces) == lines


# --- the keeper's reports ----------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    line=st.one_of(
        st.binary(max_size=80),
        st.dictionaries(
            st.sampled_from(["pid", "returncode", "dropped", "error", "x"]),
            st.one_of(
                st.none(),
                st.booleans(),
                st.integers(),
                st.floats(allow_nan=True),
                st.text(max_size=20),
                st.lists(st.integers(), max_size=2),
            ),
        ).map(lambda d: json.dumps(d).encode()),
    )
)
def test_any_line_from_a_keeper_is_read_as_a_valid_report_or_ignored(line: bytes) -> None:
    said = kept.report(line)
    pid = said.get("pid")
    assert pid is None or (type(pid) is int and pid > 1)
    code = said.get("returncode")
    assert code is None or (type(code) is int and -64 <= code <= 255)
    dropped = said.get("dropped")
    assert dropped is None or (type(dropped) is int and dropped >= 0)
    assert len(str(said.get("error", ""))) <= kept.ERROR_CHARS


def test_a_keeper_that_says_nonsense_never_makes_the_harness_signal_its_own_group(
    tmp_path: Path, space: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A keeper that reports group 0 (killpg(0) is the harness's own group), then hangs.
    liar = tmp_path / "liar.py"
    liar.write_text(
        "import sys, time\n"
        "print('not json', flush=True)\n"
        "print('{\"pid\": 0}', flush=True)\n"
        "print('{\"pid\": true}', flush=True)\n"
        "sys.stdin.read()\n"  # until the harness closes the pipe
    )
    monkeypatch.setattr(kept, "KEEPER", liar)
    signals: list[int] = []
    monkeypatch.setattr(os, "killpg", lambda group, sig: signals.append(group))
    job = Processes(UNSANDBOXED).start(
        "true", cwd=space, workspace=space, log=tmp_path / "b1.output", cap=100, clock=FakeClock()
    )
    assert job.pid is None
    ended = job.kill()
    assert ended is not None
    assert 0 not in signals and not any(group <= 1 for group in signals)


def test_a_keeper_killed_with_sigkill_takes_its_command_with_it(
    real: BackgroundShells, space: Path
) -> None:
    info = real.start("sleep 300", cwd=space, workspace=space)
    assert info.pid is not None
    job = real._get(info.task_id).job
    assert isinstance(job, kept.KeptProcess)
    os.kill(job.keeper.pid, signal.SIGKILL)
    until(lambda: real.get(info.task_id).status != "running", "the harness sees it end")
    until(lambda: group_members(info.pid or 0) == [], "the orphaned command is stopped too")
    said = real.read_new(info.task_id)
    assert said.shell.status == "failed"
    assert "keeper" in said.output


# --- the log, an untrusted file ----------------------------------------------------------------


def test_a_log_replaced_by_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    log = tmp_path / "b1.output"
    os.mkfifo(log)
    outcome: list[object] = []

    def read() -> None:
        try:
            outcome.append(LogReader(log).read())
        except LogUnreadable as error:
            outcome.append(error)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), "the read waited on a FIFO for a writer"
    assert isinstance(outcome[0], LogUnreadable)


def test_a_log_replaced_by_a_hard_link_to_another_file_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("do not read")
    log = tmp_path / "b1.output"
    os.link(secret, log)
    with pytest.raises(LogUnreadable):
        LogReader(log).read()


def test_a_log_folder_replaced_by_a_link_is_refused(tmp_path: Path) -> None:
    logs, elsewhere = tmp_path / "logs", tmp_path / "elsewhere"
    logs.mkdir(mode=0o700)
    elsewhere.mkdir()
    reader = LogReader(logs / "b1.output", folder=os.stat(logs))
    (logs / "b1.output").write_text("mine\n")
    assert reader.read() == "mine\n"
    (elsewhere / "b1.output").write_text("mine\nsomeone else's\n")
    (logs / "b1.output").unlink()
    logs.rmdir()
    logs.symlink_to(elsewhere)
    with pytest.raises(LogUnreadable):
        reader.read()


def test_a_log_folder_removed_while_it_runs_is_said_not_taken_for_silence(
    tmp_path: Path, space: Path
) -> None:
    spawner = Scripted({"serve": ScriptedCommand(seconds=60, output=[(1.0, "up\n")])})
    clock = FakeClock()
    with BackgroundShells(tmp_path / "logs", clock=clock, spawner=spawner) as shells:
        info = shells.start("serve", cwd=space, workspace=space)
        for file in (tmp_path / "logs").iterdir():
            file.unlink()
        (tmp_path / "logs").rmdir()
        tool = task_output_tool(shells)
        context = ToolContext(Workspace(space), clock=clock)
        with pytest.raises(ToolError, match="could not be read"):
            tool.function(tool.input_model(task_id=info.task_id, block=False), context)


def test_a_log_grown_past_its_cap_is_read_only_up_to_the_cap(tmp_path: Path) -> None:
    log = tmp_path / "b1.output"
    with log.open("wb") as file:
        file.truncate(1 << 30)  # a sparse gigabyte: reading it whole would take a gigabyte
    reader = LogReader(log, limit=4096)
    assert len(reader.read()) <= 4096
    assert reader.read() == ""


# --- what the model sends ----------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(task_id=st.text(max_size=5_000))
@example(task_id="../../etc/passwd")
@example(task_id="b" * 5_000)
def test_an_id_the_model_makes_up_is_an_error_it_can_read_and_touches_no_file(
    tmp_path_factory: pytest.TempPathFactory, task_id: str
) -> None:
    folder = tmp_path_factory.mktemp("ids")
    spawner = Scripted({"pytest": ScriptedCommand(seconds=5, output="ok\n")})
    with BackgroundShells(folder / "logs", clock=FakeClock(), spawner=spawner) as shells:
        shells.start("pytest", cwd=folder, workspace=folder)
        context = ToolContext(Workspace(folder), clock=FakeClock())
        reading, stopping = task_output_tool(shells), task_stop_tool(shells)
        if task_id not in {i.task_id for i in shells.list()}:
            with pytest.raises(ToolError) as read:
                reading.function(reading.input_model(task_id=task_id), context)
            with pytest.raises(ToolError) as stop:
                stopping.function(stopping.input_model(task_id=task_id), context)
            assert len(str(read.value)) < 200 and len(str(stop.value)) < 200
        assert {p.name for p in (folder / "logs").iterdir()} == {
            f"{i.task_id}.output" for i in shells.list()
        }


@settings(max_examples=60, deadline=None)
@given(timeout=st.one_of(st.floats(), st.integers(-(10**6), 10**6)))
def test_a_timeout_out_of_range_is_refused_before_anything_waits(timeout: float) -> None:
    from pydantic import ValidationError

    tool = task_output_tool(BackgroundShells(spawner=Scripted({})))
    try:
        args = tool.input_model(task_id="b1", timeout=timeout)
    except ValidationError:
        assert not (0 <= timeout <= 600)
    else:
        assert 0 <= args.timeout <= 600


def test_a_blocking_read_of_a_stand_in_waits_on_the_fake_clock_until_it_ends(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    spawner = Scripted({"pytest": ScriptedCommand(seconds=120, output="412 passed\n")})
    with BackgroundShells(tmp_path / "logs", clock=clock, spawner=spawner) as shells:
        info = shells.start("pytest", cwd=tmp_path, workspace=tmp_path)
        tool = task_output_tool(shells)
        context = ToolContext(Workspace(tmp_path), clock=clock)
        first = tool.function(tool.input_model(task_id=info.task_id, timeout=30), context)
        assert "<retrieval_status>timeout</retrieval_status>" in str(first)
        assert clock.sleeps == [30.0]
        second = tool.function(tool.input_model(task_id=info.task_id, timeout=600), context)
        assert "<status>completed</status>" in str(second) and "412 passed" in str(second)
        assert clock.sleeps == [30.0, 90.0]  # until it ended, not the whole timeout


# --- how many, and until when ------------------------------------------------------------------


def test_past_the_cap_of_running_shells_a_new_one_is_refused_with_the_reason(
    tmp_path: Path,
) -> None:
    spawner = Scripted({"serve": ScriptedCommand(seconds=3600)})
    with BackgroundShells(tmp_path / "logs", clock=FakeClock(), spawner=spawner) as shells:
        for _ in range(MAX_RUNNING):
            shells.start("serve", cwd=tmp_path, workspace=tmp_path)
        with pytest.raises(ShellError, match="task_stop"):
            shells.start("serve", cwd=tmp_path, workspace=tmp_path)
        shells.stop(shells.list()[0].task_id)
        shells.start("serve", cwd=tmp_path, workspace=tmp_path)  # room again


def test_a_shell_started_while_the_session_closes_is_stopped_not_left_running(
    tmp_path: Path,
) -> None:
    started: list[Any] = []

    class ClosingMeanwhile(Scripted):
        """Another thread closes the session while this command is being started."""

        def start(self, command: str, **where: Any) -> Any:
            job = super().start(command, **where)
            started.append(job)
            shells.close()
            return job

    shells = BackgroundShells(
        tmp_path / "logs",
        clock=FakeClock(),
        spawner=ClosingMeanwhile({"serve": ScriptedCommand(seconds=3600)}),
    )
    with pytest.raises(ShellError, match="closed"):
        shells.start("serve", cwd=tmp_path, workspace=tmp_path)
    assert started[0].ended() is not None  # killed


@pytest.mark.parametrize("fork", [False, True], ids=["subagent", "fork"])
def test_a_childs_background_shell_is_stopped_when_the_child_ends(
    tmp_path: Path, space: Path, fork: bool
) -> None:
    clock = FakeClock()
    spawner = Scripted({"npm run dev": ScriptedCommand(seconds=3600, output="up\n")})
    work = BackgroundWork(
        BackgroundShells(tmp_path / "logs", clock=clock, spawner=spawner, ids=counted_ids())
    )
    child_says = "Start the dev server."
    model = ScriptedModel(
        [
            reply(tool_calls=[tool_call("subagent", description="serve", prompt=child_says)]),
            reply("The child is done."),
            reply("And now?"),
        ],
        clock=clock,
    )
    model.script_when(
        said(child_says),
        [
            reply(tool_calls=[tool_call("bash", command="npm run dev", run_in_background=True)]),
            reply("Started it."),
        ],
    )
    agent = Agent(
        model,
        tools=work.tools(),
        plugins=[work],
        clock=clock,
        workspace=space,
        permissions=Permissions(mode="bypass"),
    )
    Subagent(fork=fork).attach(agent)
    try:
        list(agent.run("Have a subagent start the server."))
        (child_shell,) = work.shells.list()
        assert child_shell.status == "killed"
        list(agent.run("Anything else?"))
        # The parent never heard of the child's shell, and is not told of it now.
        sent = json.dumps(model.requests[-1].messages)
        assert "<task-notification>" not in sent
        assert child_shell.task_id not in sent
    finally:
        work.close()


def test_the_parents_own_shell_outlives_its_turn(tmp_path: Path, space: Path) -> None:
    clock = FakeClock()
    spawner = Scripted({"npm run dev": ScriptedCommand(seconds=3600, output="up\n")})
    work = BackgroundWork(BackgroundShells(tmp_path / "logs", clock=clock, spawner=spawner))
    model = ScriptedModel(
        [
            reply(tool_calls=[tool_call("bash", command="npm run dev", run_in_background=True)]),
            reply("Started."),
        ],
        clock=clock,
    )
    agent = Agent(
        model,
        tools=work.tools(),
        plugins=[work],
        clock=clock,
        workspace=space,
        permissions=Permissions(mode="bypass"),
    )
    try:
        list(agent.run("Start the server."))
        assert [s.status for s in work.shells.list()] == ["running"]
    finally:
        work.close()


def test_a_keeper_that_cannot_make_its_log_says_why_instead_of_dying_silently(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    missing = tmp_path / "gone" / "b1.output"
    ran = subprocess.run(
        [sys.executable, "-I", str(kept.KEEPER), str(missing), "100", "--", "true"],
        capture_output=True,
        timeout=BOUND,
        check=False,
    )
    said = kept.report(ran.stdout.splitlines()[0]) if ran.stdout else {}
    assert "log" in str(said.get("error", "")), ran.stderr
    assert ran.returncode == 1


def test_a_shell_whose_log_could_not_be_made_says_why_when_read(
    real: BackgroundShells, space: Path
) -> None:
    (real.folder / "b1.output").write_text("")  # the name is taken: the keeper cannot make it
    info = real.start("echo hello", cwd=space, workspace=space)
    real.wait(info.task_id, BOUND)
    reading = real.read_new(info.task_id)
    assert reading.shell.status == "failed"
    assert "the log could not be made" in reading.output
