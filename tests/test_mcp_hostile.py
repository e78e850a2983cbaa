"""Hostile MCP servers never crash a run: every fault of ``harness.mcp.servers.hostile`` through
the whole harness (configuration, start, tool checks, an agent calling every tool it lists).

What must hold for each fault: the session starts (a server that cannot is a problem line),
no tool the API would refuse is offered (every request the scripted model receives passes its
rules, which are the API's), each call ends in a result (an error the model can read where
the server misbehaved), the run reaches its final reply, and nothing of the server's stderr
reaches the model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.agent import Agent
from harness.clock import FakeClock
from harness.events import TurnEnded
from harness.mcp.servers.hostile import FAULTS
from harness.mcp.session import session_mcp
from harness.messages import is_valid_tool_name
from harness.model import ScriptedModel, reply, tool_call
from harness.tokens import estimate_content

# Words each fault writes to stderr never reach the model; these all appear in its stderr.
STDERR_MARKERS = ("Traceback", "hostile:")


def start(tmp_path: Path, fault: str, *extra: str) -> Any:
    args = ["-m", "harness.mcp.servers.hostile", "--fault", fault, *extra]
    config = {"mcpServers": {"hostile": {"command": sys.executable, "args": args}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(config), encoding="utf-8")
    return session_mcp(
        tmp_path,
        None,
        settings={"enableAllProjectMcpServers": True},
        # Generous for the servers that must start on a loaded machine; short for the one that
        # never answers, whose outcome (it did not start) is the same after any wait.
        startup_timeout=0.5 if fault == "hang-at-start" else 3,
        call_timeout=1,
        search="off",
    )


@pytest.mark.parametrize("fault", FAULTS)
def test_a_hostile_server_never_crashes_a_run(tmp_path: Path, fault: str) -> None:
    extra = ("--size", "300000") if fault in ("huge-result", "flood-stderr") else ()
    with start(tmp_path, fault, *extra) as session:
        for tool in session.tools:
            assert is_valid_tool_name(tool.name)
        echo = "mcp__hostile__echo"
        calls = [tool_call(t.name) for t in session.tools if t.name != echo]
        if any(t.name == echo for t in session.tools):  # last: the server still answers
            calls.append(tool_call(echo, text="hi"))
        clock = FakeClock()
        script = [reply(f"Calling {c.name}.", tool_calls=[c]) for c in calls] + [reply("Done.")]
        model = ScriptedModel(script, clock=clock)
        agent = Agent(
            model,
            tools=session.all_tools(),
            workspace=tmp_path,
            clock=clock,
            approver=lambda request: True,
        )
        events = list(agent.run("Try every tool."))
        assert isinstance(events[-1], TurnEnded)
        answers = [
            block
            for message in model.requests[-1].messages
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        assert len(answers) == len(calls)
        for answer in answers:
            shown = json.dumps(answer["content"])
            assert not any(marker in shown for marker in STDERR_MARKERS)
            assert estimate_content(answer["content"]) < 30_000
        said = [str(answer["content"]) for answer in answers]
        if fault in ("exit-at-start", "hang-at-start"):
            assert session.tools == []
            assert any("did not start" in p for p in session.problems)
            return
        if fault == "schema-not-object":  # the SDK's client refuses the whole listing
            assert session.tools == [] and any("did not start" in p for p in session.problems)
            return
        assert said[-1] == "hi" and session.connections["hostile"].status().state == "connected"
        if fault == "hang-on-call":
            assert "did not answer within 1 s" in said[0]
        if fault == "bad-tool-names":  # the API would refuse them: only the good ones offered
            names = [t.name for t in session.tools]
            assert len(names) == len(set(names)) and any("hostile" in p for p in session.problems)
        if fault == "bad-schemas":
            assert len(session.problems) >= 2
