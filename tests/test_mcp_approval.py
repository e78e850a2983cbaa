"""An MCP call waits for a person's approval (chapter 09) and runs once when a fresh agent,
with its own server process, resumes it: the same gate, store and snapshot as any tool."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness import messages as m
from harness.agent import Agent
from harness.approvals import ApprovalGate, ApprovalStore, continue_run, resume
from harness.clock import FakeClock
from harness.events import AwaitingApproval
from harness.mcp.session import session_mcp
from harness.model import ScriptedModel, reply, tool_call
from harness.resume import Sessions

SETTINGS = {"enableAllProjectMcpServers": True}


def test_an_mcp_call_waits_for_approval_and_runs_once_after_resume(tmp_path: Path) -> None:
    server = {"command": sys.executable, "args": ["-m", "harness.mcp.servers.course"]}
    config = {"mcpServers": {"course": server}}
    (tmp_path / ".mcp.json").write_text(json.dumps(config), encoding="utf-8")
    clock = FakeClock()
    sessions = Sessions.for_workspace(tmp_path, clock=clock)
    call = tool_call("mcp__course__lookup_ticket", ticket_id="T-102")
    with session_mcp(tmp_path, None, settings=SETTINGS, search="off") as first:
        model = ScriptedModel([reply("Checking.", tool_calls=[call])], clock=clock)
        agent = Agent(model, tools=first.all_tools(), workspace=tmp_path, clock=clock)
        transcript = sessions.new(fsync=False)
        agent.plugins.append(transcript)
        store = ApprovalStore(tmp_path / "approvals.db")
        ApprovalGate(store, ids=lambda: "apr_0001").attach(agent)
        stop = list(agent.run("What is T-102's status?"))[-1]
        transcript.close()
        assert isinstance(stop, AwaitingApproval)
        assert stop.name == "mcp__course__lookup_ticket"
    # A new process: its own servers, agent and store object.
    with session_mcp(tmp_path, None, settings=SETTINGS, search="off") as second:
        later = FakeClock()
        agent = Agent(
            ScriptedModel([reply("T-102 is in review.")], clock=later, id_prefix="r"),
            tools=second.all_tools(),
            workspace=tmp_path,
            clock=later,
        )
        store = ApprovalStore(tmp_path / "approvals.db")
        ApprovalGate(store).attach(agent)
        resumed = resume(
            agent, Sessions.for_workspace(tmp_path, clock=later), store, "apr_0001", "approve"
        )
        assert resumed.applied_now and resumed.ran
        list(continue_run(agent, resumed))
        answers = [
            r
            for message in agent.messages
            if message["role"] == "user"
            for r in m.tool_results(message)
        ]
        assert len(answers) == 1 and "T-102" in str(answers[0]["content"])
        again = resume(
            agent, Sessions.for_workspace(tmp_path, clock=later), store, "apr_0001", "approve"
        )
        assert not again.applied_now and not again.ran
