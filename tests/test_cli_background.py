"""The command line with chapter 15's background shells: the session's tools and plugin,
``/bashes`` (and ``/tasks``), and no shell left running when a session ends.

As ``test_cli.py`` does: :func:`harness.cli.main` in-process in a fresh workspace, or a
session from :func:`~harness.cli.assemble.assemble` driven through
:func:`~harness.cli.commands.dispatch`. The model is scripted; the commands are real
processes (in the machine's sandbox where it has one) or stand-ins on the clock. A wait is
for an outcome, never a duration.
"""

from __future__ import annotations

import importlib
import io
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from test_background import until
from test_cli import cli, workspace

from harness.background import BackgroundWork, Scripted, ScriptedCommand
from harness.cli.assemble import Harness, Options, assemble
from harness.cli.commands import Shell, dispatch
from harness.cli.report import Exit
from harness.cli.terminal import Activity
from harness.clock import FakeClock
from harness.model import ScriptedModel, reply, tool_call
from harness.notebook.background import group_members
from harness.planning import Planning

__all__ = ["cli", "workspace"]  # fixtures, used by name

SERVER = ScriptedCommand(seconds=3600, output=[(1.0, "listening on :8000\n")])
SUITE = ScriptedCommand(seconds=120, output="412 passed\n")


def background(command: str, **more: Any) -> Any:
    return tool_call("bash", command=command, run_in_background=True, **more)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def session(workspace: Path, clock: FakeClock) -> Iterator[Harness]:
    model = ScriptedModel(
        [
            reply(tool_calls=[background("npm run dev", description="Run the dev server")]),
            reply(tool_calls=[background("pytest")]),
            reply("Both started."),
        ],
        clock=clock,
    )
    harness = assemble(
        Options(workspace=workspace, permission_mode="bypass"),
        clock=clock,
        model=model,
        spawner=Scripted({"npm run dev": SERVER, "pytest": SUITE}),
        fsync=False,
    )
    yield harness
    harness.close()


def shell_for(harness: Harness) -> tuple[Shell, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=120, highlight=False, color_system=None)
    return Shell(harness, console, Activity(console, enabled=False), lambda: harness), out


# --- the session ---------------------------------------------------------------------------------


def test_the_session_offers_background_bash_and_the_two_task_tools(session: Harness) -> None:
    definitions = {d["name"]: d for d in session.agent.tools.definitions()}
    assert {"task_output", "task_stop"} <= set(definitions)
    assert "run_in_background" in definitions["bash"]["input_schema"]["properties"]
    plugins = session.agent.plugins
    assert isinstance(session.background, BackgroundWork)
    # After planning (its notes go after the cache breakpoint), before recovery.
    found = [type(p).__name__ for p in plugins]
    assert found.index("Planning") < found.index("BackgroundWork") < found.index("Recovery")
    assert any(isinstance(p, Planning) for p in plugins)


# --- /bashes -----------------------------------------------------------------------------------


def test_bashes_lists_the_shells_with_status_runtime_and_command(
    session: Harness, clock: FakeClock
) -> None:
    list(session.agent.run("start the server and the tests"))
    clock.advance(150)
    shell, out = shell_for(session)
    assert dispatch(shell, "/bashes")
    table = out.getvalue()
    assert "Background shells" in table
    server, suite = [i.task_id for i in session.background.shells.list()]  # type: ignore[union-attr]
    assert f"{server}" in table and "running" in table and "Run the dev server" in table
    assert f"{suite}" in table and "completed" in table and "2m 0s" in table


def test_bashes_with_an_id_shows_the_end_of_its_output_without_moving_the_models_read(
    session: Harness, clock: FakeClock
) -> None:
    list(session.agent.run("start them"))
    clock.advance(5)
    work = session.background
    assert work is not None
    server = work.shells.list()[0].task_id
    shell, out = shell_for(session)
    dispatch(shell, f"/bashes {server}")
    assert "listening on :8000" in out.getvalue()
    assert work.shells.read_new(server).output == "listening on :8000\n"  # still new to it


@pytest.mark.parametrize("swap", ["fifo", "link"])
def test_bashes_with_an_id_never_follows_a_swapped_log_nor_waits_on_it(
    session: Harness, clock: FakeClock, tmp_path: Path, swap: str
) -> None:
    list(session.agent.run("start them"))
    work = session.background
    assert work is not None
    info = work.shells.list()[0]
    secret = tmp_path / "secret"
    secret.write_text("do not show\n")
    info.log.unlink()
    if swap == "fifo":
        os.mkfifo(info.log)  # opened for reading the plain way, it waits for a writer
    else:
        info.log.symlink_to(secret)
    shell, out = shell_for(session)
    done = threading.Thread(target=dispatch, args=(shell, f"/bashes {info.task_id}"), daemon=True)
    done.start()
    done.join(20)
    assert not done.is_alive(), "/bashes waited on the log"
    assert "do not show" not in out.getvalue()
    assert "cannot be read" in out.getvalue()


def test_bashes_stop_stops_a_shell_and_tasks_is_the_same_command(
    session: Harness, clock: FakeClock
) -> None:
    list(session.agent.run("start them"))
    work = session.background
    assert work is not None
    server = work.shells.list()[0].task_id
    shell, out = shell_for(session)
    dispatch(shell, f"/tasks stop {server}")
    assert f"Stopped {server} (Run the dev server)." in out.getvalue()
    assert work.shells.get(server).status == "killed"
    dispatch(shell, f"/bashes stop {server}")
    assert f"Task {server} is not running (status: killed)" in out.getvalue()
    dispatch(shell, "/bashes stop b404")
    assert "No task found with ID: b404" in out.getvalue()


def test_bashes_in_a_session_without_shells_says_how_one_starts(workspace: Path) -> None:
    harness = assemble(Options(workspace=workspace), clock=FakeClock(), fsync=False)
    shell, out = shell_for(harness)
    dispatch(shell, "/bashes")
    assert "No background shells in this session" in out.getvalue()
    harness.close()


def test_clear_stops_the_old_sessions_shells(session: Harness) -> None:
    list(session.agent.run("start them"))
    work = session.background
    assert work is not None
    shell, _ = shell_for(session)
    shell.new_session = lambda: assemble(
        Options(workspace=session.agent.workspace), clock=FakeClock(), fsync=False
    )
    dispatch(shell, "/clear")
    assert {i.status for i in work.shells.list()} == {"killed"}
    assert shell.harness is not session
    shell.harness.close()


# --- the end of the program --------------------------------------------------------------------


class EndsBadly(ScriptedModel):
    """A model whose second call raises ``error``: the run ends in it."""

    error: BaseException | None = None

    def create(self, **request: Any) -> Any:
        if self.requests and self.error is not None:
            raise self.error
        return super().create(**request)


@pytest.mark.parametrize(
    "ending",
    ["done", "error", "ctrl-c"],
)
def test_a_one_shot_run_leaves_no_background_process_behind(
    cli: Any, monkeypatch: pytest.MonkeyPatch, ending: str
) -> None:
    def scripted(options: Options, clock: Any) -> ScriptedModel:
        steps = [reply(tool_calls=[background("sleep 1000")]), reply("Started it.")]
        model = EndsBadly(steps, clock=clock)
        model.error = {"done": None, "error": RuntimeError("boom"), "ctrl-c": KeyboardInterrupt()}[
            ending
        ]
        return model

    made: list[Harness] = []

    def keep(*args: Any, **kwargs: Any) -> Harness:
        harness = assemble(*args, **kwargs)
        made.append(harness)
        return harness

    monkeypatch.setattr(importlib.import_module("harness.cli.assemble"), "model_for", scripted)
    monkeypatch.setattr(importlib.import_module("harness.cli.program"), "assemble", keep)
    if ending == "error":
        with pytest.raises(RuntimeError):
            cli("-p", "start a long command", "--permission-mode", "bypassPermissions")
    else:
        run = cli("-p", "start a long command", "--permission-mode", "bypassPermissions")
        assert run.code == (Exit.DONE if ending == "done" else Exit.INTERRUPTED), run.err
    (harness,) = made
    assert harness.background is not None
    (info,) = harness.background.shells.list()  # the program has ended: so has the shell
    assert info.status == "killed" and info.pid is not None
    group = info.pid
    until(lambda: group_members(group) == [], "the command's group is gone")
