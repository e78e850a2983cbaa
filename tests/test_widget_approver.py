"""The notebook approver: buttons answer a call waiting in a background run."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.model import ScriptedModel, reply, tool_call
from harness.notebook import WidgetApprover, run_in_background
from harness.tools import builtin_tools
from harness.tools.permissions import ApprovalRequest

REQUEST = ApprovalRequest("toolu_0001", "bash", {"command": "ls"}, "default mode: bash changes")


def ask_in_background(approver: WidgetApprover) -> tuple[threading.Thread, list[Any]]:
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(approver(REQUEST)), daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while not approver.waiting and time.monotonic() < deadline:
        time.sleep(0.01)
    return thread, answers


def buttons(approver: WidgetApprover) -> tuple[Any, Any]:
    prompt = approver.panel.children[-1]
    approve, deny, _ = prompt.children[1].children
    return approve, deny


def test_a_click_on_approve_lets_the_call_run() -> None:
    approver = WidgetApprover(timeout=5)
    thread, answers = ask_in_background(approver)

    buttons(approver)[0].click()
    thread.join(5)

    assert answers[0].approved is True
    assert answers[0].reason == "approved in the notebook"
    assert approver.waiting == []


def test_a_refusal_carries_the_note_to_the_model() -> None:
    approver = WidgetApprover(timeout=5)
    thread, answers = ask_in_background(approver)

    assert approver.answer(False, "use git clean instead") == REQUEST
    thread.join(5)

    assert answers[0].approved is False
    assert answers[0].reason == "refused in the notebook: use git clean instead"


def test_no_answer_in_time_is_a_refusal_and_a_late_click_changes_nothing() -> None:
    approver = WidgetApprover(timeout=0.05)
    thread, answers = ask_in_background(approver)
    thread.join(5)

    buttons(approver)[0].click()

    assert answers == [answers[0]]
    assert answers[0].approved is False
    assert "no answer within 0.05 s" in answers[0].reason
    assert all(button.disabled for button in buttons(approver))


def test_a_background_run_waits_for_the_answer_and_shows_every_event(tmp_path: Path) -> None:
    approver = WidgetApprover(timeout=5)
    script = [reply(tool_calls=[tool_call("bash", command="echo hi")]), reply("Done.")]
    agent = Agent(
        ScriptedModel(script),
        tools=builtin_tools(),
        workspace=tmp_path,
        clock=FakeClock(),
        approver=approver,
    )

    panel, thread = run_in_background(agent, "say hi")
    deadline = time.monotonic() + 5
    while not approver.waiting and time.monotonic() < deadline:
        time.sleep(0.01)
    assert thread.is_alive(), "the run waits for an answer"
    approver.answer(True)
    thread.join(5)

    assert not thread.is_alive()
    assert panel is approver.panel
    assert m.tool_results(agent.messages[2])[0]["content"] == "hi"
    lines = [child.value for child in panel.children if hasattr(child, "value")]
    assert any("done after 2 model call(s)" in line for line in lines)


def test_a_run_that_fails_says_so_in_the_panel(tmp_path: Path) -> None:
    agent = Agent(ScriptedModel([]), workspace=tmp_path, clock=FakeClock())

    panel, thread = run_in_background(agent, "hello")
    thread.join(5)

    assert "the run failed: ScriptExhausted" in panel.children[-1].value
