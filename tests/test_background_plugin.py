"""Chapter 15's ``BackgroundWork`` in a real run of the loop, on stand-in commands and a fake
clock: a long command blocks the conversation in the foreground and not in the background;
the model is told once when it finishes, on the next of the loop's own requests; after a
compaction it is reminded what still runs; the permission system still asks for ``bash``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness import messages as m
from harness.agent import Agent
from harness.background import (
    BackgroundShells,
    BackgroundWork,
    Scripted,
    ScriptedCommand,
    ShellFinished,
    ShellsNotified,
    ShellStarted,
    ShellStopped,
    counted_ids,
)
from harness.clock import FakeClock
from harness.compaction.summary import compact, is_compaction_request
from harness.events import Event, ToolFinished
from harness.model import ScriptedModel, Step, reply, tool_call
from harness.model.scripted import Request
from harness.model.scripted_summary import scripted_summary
from harness.tools.permissions import ApprovalRequest, Permissions

SUITE = ScriptedCommand(seconds=120, output="412 passed, 1 failed\n", exit_code=1)
SERVER = ScriptedCommand(seconds=3600, output=[(1.0, "listening on :8000\n")])
NOTE = "<task-notification>"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def work(tmp_path: Path, clock: FakeClock) -> Iterator[BackgroundWork]:
    spawner = Scripted({"pytest": SUITE, "npm run dev": SERVER})
    shells = BackgroundShells(tmp_path / "logs", clock=clock, spawner=spawner, ids=counted_ids())
    plugin = BackgroundWork(shells)
    yield plugin
    plugin.close()


def agent_for(
    work: BackgroundWork,
    clock: FakeClock,
    steps: Sequence[Step],
    tmp_path: Path,
    **more: Any,
) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(steps, clock=clock)
    model.answer_when(is_compaction_request, scripted_summary)
    space = tmp_path / "space"
    space.mkdir(exist_ok=True)
    agent = Agent(
        model,
        tools=work.tools(),
        plugins=[work],
        clock=clock,
        workspace=space,
        permissions=more.pop("permissions", Permissions(mode="bypass")),
        **more,
    )
    return agent, model


def run(agent: Agent, prompt: str) -> list[Event]:
    return list(agent.run(prompt))


def last_texts(request: Request) -> list[str]:
    return [str(b.get("text", "")) for b in m.blocks(request.last_message) if b["type"] == "text"]


def background(command: str, **more: Any) -> Any:
    return tool_call("bash", command=command, run_in_background=True, **more)


# --- blocking, and not ---------------------------------------------------------------------------


def test_a_two_minute_suite_in_the_foreground_blocks_the_conversation_for_two_minutes(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    steps = [reply(tool_calls=[tool_call("bash", command="pytest")]), reply("1 failed.")]
    agent, _ = agent_for(work, clock, steps, tmp_path)
    start = clock.now()
    events = run(agent, "run the tests")
    assert clock.now() - start == 120
    (result,) = [e for e in events if isinstance(e, ToolFinished)]
    assert result.content == "412 passed, 1 failed\nexit code: 1"  # chapter 02's format


def test_in_the_background_the_call_returns_at_once_with_the_task_id_and_log(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    steps = [reply(tool_calls=[background("pytest", description="Run the tests")]), reply("ok")]
    agent, _ = agent_for(work, clock, steps, tmp_path)
    start = clock.now()
    events = run(agent, "run the tests")
    assert clock.now() == start
    (result,) = [e for e in events if isinstance(e, ToolFinished)]
    log = work.shells.get("b1").log
    assert result.content == (
        f"Command running in background with ID: b1. Output is being written to: {log}"
    )
    assert [str(e) for e in events if isinstance(e, ShellStarted)] == [
        "⧉ background shell b1 started: pytest"
    ]


def test_a_foreground_stand_in_past_its_timeout_is_killed_like_chapter_02s(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    steps = [reply(tool_calls=[tool_call("bash", command="pytest", timeout=30)]), reply("slow")]
    agent, _ = agent_for(work, clock, steps, tmp_path)
    events = run(agent, "run the tests")
    (result,) = [e for e in events if isinstance(e, ToolFinished)]
    assert result.is_error and "Command timed out after 30 s and was killed." in result.content
    assert clock.sleeps == [30]


# --- the notification -------------------------------------------------------------------------


def test_a_finished_shell_is_announced_on_the_next_request_exactly_once(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    steps = [
        reply(tool_calls=[background("pytest", description="Run the tests")]),
        reply("Started the tests."),
        reply("They failed: 1 test."),
        reply("Anything else?"),
    ]
    agent, model = agent_for(work, clock, steps, tmp_path)
    run(agent, "run the tests")
    clock.advance(150)  # the suite ends while nobody asks
    events = run(agent, "how did it go?")
    run(agent, "thanks")
    told = [r for r in model.requests if any(NOTE in t for t in last_texts(r))]
    assert len(told) == 1 and told[0] is model.requests[2]
    info = work.shells.get("b1")
    log = info.log
    assert info.tool_use_id == m.tool_uses(agent.messages[1])[0]["id"]
    assert last_texts(told[0])[-1] == (
        f"{NOTE}\n<task-id>b1</task-id>\n<tool-use-id>{info.tool_use_id}"
        f"</tool-use-id>\n<output-file>{log}</output-file>\n<status>failed</status>\n"
        '<summary>Background command "Run the tests" failed with exit code 1</summary>\n'
        "</task-notification>"
    )
    assert not any(NOTE in json.dumps(msg) for msg in agent.messages)  # sent, never kept
    assert [type(e) for e in events if isinstance(e, ShellFinished | ShellsNotified)] == [
        ShellFinished,
        ShellsNotified,
    ]
    assert work.notified == [("b1",)]


def test_a_side_request_never_carries_the_notification(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    steps = [reply(tool_calls=[background("pytest")]), reply("Started."), reply("Done.")]
    agent, model = agent_for(work, clock, steps, tmp_path)
    run(agent, "run the tests")
    clock.advance(150)
    compact(agent)  # a side request: the summary's
    assert not any(NOTE in json.dumps(r.messages) for r in model.requests)
    assert [i.task_id for i in work.shells.unannounced()] == ["b1"]
    run(agent, "and?")
    assert NOTE in last_texts(model.requests[-1])[-1]


def test_a_failed_call_announces_nothing_and_the_next_one_does(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    from harness.model import faults

    steps: list[Step] = [
        reply(tool_calls=[background("pytest")]),
        reply("Started."),
        faults.overloaded(),
        reply("It failed."),
    ]
    agent, model = agent_for(work, clock, steps, tmp_path)
    run(agent, "run the tests")
    clock.advance(150)
    with pytest.raises(Exception, match="verloaded"):
        run(agent, "and?")
    assert work.notified == []
    run(agent, "and now?")
    assert work.notified == [("b1",)]
    assert NOTE in last_texts(model.requests[-1])[-1]


def test_reading_a_finished_shells_end_counts_as_telling_the_model(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    steps = [
        reply(tool_calls=[background("pytest")]),
        reply(tool_calls=[tool_call("task_output", task_id="b1", timeout=600)]),
        reply("1 failed."),
        reply("ok"),
    ]
    agent, model = agent_for(work, clock, steps, tmp_path)
    start = clock.now()
    events = run(agent, "run the tests and wait")
    assert clock.now() - start == 120  # block=true waited, on the clock, until it ended
    result = [e for e in events if isinstance(e, ToolFinished)][-1]
    assert result.content == (
        "<retrieval_status>success</retrieval_status>\n\n<task_id>b1</task_id>\n\n"
        "<task_type>local_bash</task_type>\n\n<status>failed</status>\n\n"
        "<exit_code>1</exit_code>\n\n<output>\n412 passed, 1 failed\n</output>"
    )
    run(agent, "thanks")
    assert not any(NOTE in json.dumps(r.messages) for r in model.requests)


def test_a_non_blocking_read_of_a_running_shell_is_not_ready_and_gives_its_output_so_far(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    steps = [
        reply(tool_calls=[background("npm run dev")]),
        reply("Started."),
        reply(tool_calls=[tool_call("task_output", task_id="b1", block=False)]),
        reply("It listens."),
    ]
    agent, _ = agent_for(work, clock, steps, tmp_path)
    run(agent, "start the server")
    clock.advance(5)
    events = run(agent, "is it up?")
    result = [e for e in events if isinstance(e, ToolFinished)][-1]
    assert result.content.startswith("<retrieval_status>not_ready</retrieval_status>")
    assert "<status>running</status>" in result.content
    assert "<output>\nlistening on :8000\n</output>" in result.content


def test_a_stopped_shell_is_reported_and_never_announced(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    steps = [
        reply(tool_calls=[background("npm run dev")]),
        reply(tool_calls=[tool_call("task_stop", task_id="b1")]),
        reply("Stopped."),
        reply("ok"),
    ]
    agent, model = agent_for(work, clock, steps, tmp_path)
    events = run(agent, "start and stop the server")
    result = [e for e in events if isinstance(e, ToolFinished)][-1]
    assert json.loads(result.content) == {
        "message": "Successfully stopped task: b1 (npm run dev)",
        "task_id": "b1",
        "task_type": "local_bash",
        "command": "npm run dev",
    }
    assert any(isinstance(e, ShellStopped) for e in events)
    run(agent, "ok?")
    assert not any(NOTE in json.dumps(r.messages) for r in model.requests)


def test_stopping_an_unknown_shell_is_an_error_the_model_can_read(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    steps = [reply(tool_calls=[tool_call("task_stop", task_id="b7")]), reply("none")]
    agent, _ = agent_for(work, clock, steps, tmp_path)
    (result,) = [e for e in run(agent, "stop it") if isinstance(e, ToolFinished)]
    assert result.is_error and "No task found with ID: b7" in result.content


# --- compaction ---------------------------------------------------------------------------------


def test_after_a_compaction_the_next_request_recalls_the_shells_still_running(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    steps = [
        reply(tool_calls=[background("npm run dev", description="Run the dev server")]),
        reply("Server started."),
        reply("Still up."),
        reply("Yes."),
    ]
    agent, model = agent_for(work, clock, steps, tmp_path)
    run(agent, "start the server")
    clock.advance(200)
    compact(agent)
    events = run(agent, "what runs?")
    run(agent, "sure?")
    turns = [r for r in model.requests if not is_compaction_request(r)]
    reminder = last_texts(turns[2])[-1]
    assert "still running" in reminder and "b1: 'npm run dev' (Run the dev server)" in reminder
    assert "running for 3m 20s" in reminder
    assert not any("still running" in t for t in last_texts(turns[3]))
    assert ShellsNotified(("b1",), "still running") in events


# --- permissions and the end ---------------------------------------------------------------------


def test_a_background_command_still_asks_before_it_runs(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    asked: list[ApprovalRequest] = []

    def say_no(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    steps = [reply(tool_calls=[background("pytest")]), reply("Not allowed.")]
    agent, _ = agent_for(
        work, clock, steps, tmp_path, permissions=Permissions(mode="default"), approver=say_no
    )
    run(agent, "run the tests")
    assert [(a.tool, a.input["run_in_background"]) for a in asked] == [("bash", True)]
    assert work.shells.list() == []  # nothing started


def test_closing_the_plugin_stops_every_shell(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    steps = [reply(tool_calls=[background("npm run dev")]), reply("Started.")]
    agent, _ = agent_for(work, clock, steps, tmp_path)
    run(agent, "start the server")
    work.close()
    assert [i.status for i in work.shells.list()] == ["killed"]


def test_a_command_no_stand_in_knows_is_not_found(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    steps = [reply(tool_calls=[tool_call("bash", command="make")]), reply("No make.")]
    agent, _ = agent_for(work, clock, steps, tmp_path)
    (result,) = [e for e in run(agent, "build") if isinstance(e, ToolFinished)]
    assert "bash: make: command not found" in result.content
    assert result.content.endswith("exit code: 127")


def test_the_bash_tool_keeps_chapter_02s_fields_and_adds_two(work: BackgroundWork) -> None:
    bash = work.tools()[0].definition()
    assert bash["name"] == "bash"
    fields = list(bash["input_schema"]["properties"])
    assert fields == ["command", "timeout", "cwd", "description", "run_in_background"]
    assert [t.name for t in work.tools()] == ["bash", "task_output", "task_stop"]


def test_the_side_request_kind_is_left_alone(
    work: BackgroundWork, clock: FakeClock, tmp_path: Path
) -> None:
    steps = [reply(tool_calls=[background("pytest")]), reply("Started."), reply("side")]
    agent, model = agent_for(work, clock, steps, tmp_path)
    run(agent, "run the tests")
    clock.advance(150)
    agent.call(replace(agent.request(), purpose="memory"))
    assert NOTE not in json.dumps(model.requests[-1].messages)
