"""A session's MCP servers end to end: configured in ``.mcp.json``, started, offered to an agent,
and every call under the rules every tool obeys (permissions, hooks, input checks, result storage),
with tool search when the tools are deferred.

One real server (the course's own, ``python -m harness.mcp.servers.course``) is started once for
the whole file; the agents are scripted, so every request can be read back.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.agent import Agent
from harness.clock import FakeClock
from harness.events import PermissionDecided
from harness.mcp.config import ServerConfig
from harness.mcp.session import SessionMcp, session_mcp
from harness.model import ScriptedModel, reply, tool_call
from harness.tools.hooks import Hooks, PreToolUseResult, ToolUse
from harness.tools.permissions import Permissions

COURSE = {"command": sys.executable, "args": ["-m", "harness.mcp.servers.course"]}


def write_config(root: Path, servers: dict[str, Any]) -> None:
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    write_config(root, {"course": COURSE})
    return root


@pytest.fixture(scope="module")
def mcp(project: Path) -> Iterator[SessionMcp]:
    session = session_mcp(
        project, None, settings={"enableAllProjectMcpServers": True}, search="off"
    )
    yield session
    session.close()


def results(model: ScriptedModel) -> list[dict[str, Any]]:
    return [
        block
        for message in model.requests[-1].messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def run(
    mcp: SessionMcp,
    project: Path,
    calls: list[Any],
    *,
    permissions: Permissions | None = None,
    hooks: Hooks | None = None,
    approver: Any = lambda request: True,
) -> tuple[ScriptedModel, list[Any]]:
    clock = FakeClock()
    model = ScriptedModel([reply("Calling.", tool_calls=calls), reply("Done.")], clock=clock)
    agent = Agent(
        model,
        tools=mcp.all_tools(),
        workspace=project,
        clock=clock,
        permissions=permissions,
        approver=approver,
        hooks=hooks,
    )
    return model, list(agent.run("Use the tracker."))


def test_a_project_server_offers_its_tools_under_their_full_names(mcp: SessionMcp) -> None:
    names = {tool.name for tool in mcp.tools}
    assert {"mcp__course__lookup_ticket", "mcp__course__slow", "mcp__course__crash"} <= names
    definition = next(t for t in mcp.tools if t.name == "mcp__course__lookup_ticket").definition()
    assert definition["input_schema"]["properties"]["ticket_id"]["type"] == "string"
    assert "defer_loading" not in definition
    assert mcp.problems == [] and mcp.search is None


def test_an_agent_calls_an_mcp_tool_and_reads_its_answer(mcp: SessionMcp, project: Path) -> None:
    model, _ = run(mcp, project, [tool_call("mcp__course__lookup_ticket", ticket_id="T-101")])
    (result,) = results(model)
    assert not result.get("is_error") and "T-101" in str(result["content"])


def test_input_that_breaks_the_servers_schema_is_refused_before_it_is_sent(
    mcp: SessionMcp, project: Path
) -> None:
    model, events = run(mcp, project, [tool_call("mcp__course__lookup_ticket", ticket_id=7)])
    (result,) = results(model)
    assert result.get("is_error") and "ticket_id" in str(result["content"])
    assert not [e for e in events if isinstance(e, PermissionDecided)]  # never got that far


def test_a_deny_rule_naming_the_server_refuses_every_tool_of_it(
    mcp: SessionMcp, project: Path
) -> None:
    permissions = Permissions.from_rules(deny=["mcp__course"], workspace=project)
    model, _ = run(
        mcp,
        project,
        [tool_call("mcp__course__lookup_ticket", ticket_id="T-101")],
        permissions=permissions,
    )
    (result,) = results(model)
    assert result.get("is_error") and "deny rule mcp__course" in str(result["content"])


def test_an_mcp_tool_asks_in_default_mode_unless_a_rule_allows_it(
    mcp: SessionMcp, project: Path
) -> None:
    asked: list[str] = []

    def approver(request: Any) -> bool:
        asked.append(request.tool)
        return False

    call = tool_call("mcp__course__lookup_ticket", ticket_id="T-101")
    run(mcp, project, [call], approver=approver)
    assert asked == ["mcp__course__lookup_ticket"]  # readOnlyHint does not skip the question
    allowed = Permissions.from_rules(allow=["mcp__course__lookup_ticket"], workspace=project)
    model, _ = run(mcp, project, [call], permissions=allowed, approver=approver)
    assert asked == ["mcp__course__lookup_ticket"] and "T-101" in str(results(model)[0]["content"])


def test_a_pre_tool_use_hook_sees_the_full_name_and_can_block(
    mcp: SessionMcp, project: Path
) -> None:
    seen: list[str] = []
    hooks = Hooks()

    def guard(use: ToolUse) -> PreToolUseResult:
        seen.append(use.name)
        return PreToolUseResult(block=True, reason="tickets are read-only today")

    hooks.on_pre_tool_use(guard, matcher="mcp__course__.*")
    model, _ = run(
        mcp, project, [tool_call("mcp__course__lookup_ticket", ticket_id="T-1")], hooks=hooks
    )
    assert seen == ["mcp__course__lookup_ticket"]
    assert "tickets are read-only today" in str(results(model)[0]["content"])


def test_a_big_result_is_stored_and_previewed_like_any_tools(
    mcp: SessionMcp, project: Path
) -> None:
    model, _ = run(mcp, project, [tool_call("mcp__course__big_report", lines=5000)])
    content = str(results(model)[0]["content"])
    assert len(content) < 10_000 and "line 0000001" in content
    assert "tool-results" in content or "stored" in content


def test_a_timeout_and_a_server_error_are_error_results_and_the_run_goes_on(
    mcp: SessionMcp, project: Path
) -> None:
    slow = next(t for t in mcp.tools if t.name == "mcp__course__slow")
    quick = type(slow)(**{**slow.__dict__, "timeout": 0.2})
    clock = FakeClock()
    model = ScriptedModel(
        [
            reply("Try.", tool_calls=[tool_call("mcp__course__slow", seconds=3600)]),
            reply("Again.", tool_calls=[tool_call("mcp__course__fail", reason="quota used up")]),
            reply("Done."),
        ],
        clock=clock,
    )
    tools = [quick if t.name == slow.name else t for t in mcp.tools]
    agent = Agent(model, tools=tools, workspace=project, clock=clock, approver=lambda r: True)
    list(agent.run("Go."))
    texts = [
        str(b["content"])
        for m in model.requests[-1].messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert "did not answer within 0.2 s" in texts[0] and "quota used up" in texts[1]


def test_an_unapproved_project_server_is_not_started(project: Path) -> None:
    with session_mcp(project, None) as session:
        assert session.tools == [] and session.connections == {}
        assert any(
            "was not started" in p and "enabledMcpjsonServers" in p for p in session.problems
        )


def test_a_person_asked_about_a_project_server_decides_whether_it_starts(project: Path) -> None:
    asked: list[str] = []

    def approve(server: ServerConfig) -> bool:
        asked.append(server.name)
        return False

    with session_mcp(project, None, approve=approve) as session:
        assert asked == ["course"] and session.tools == []
    with session_mcp(
        project, None, settings={"disabledMcpjsonServers": ["course"]}, approve=approve
    ) as session:
        assert asked == ["course"]  # the settings said no: nobody is asked
        assert any("disabled" in p for p in session.problems)


def test_a_server_that_cannot_start_is_a_problem_and_the_others_still_serve(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, {"broken": {"command": "/no/such/binary"}, "course": COURSE})
    with session_mcp(tmp_path, None, settings={"enableAllProjectMcpServers": True}) as session:
        assert any("'broken' did not start: command not found" in p for p in session.problems)
        assert any(t.server == "course" for t in session.tools)


def test_with_search_on_the_tools_are_deferred_and_loaded_by_reference(project: Path) -> None:
    with session_mcp(
        project, None, settings={"enableAllProjectMcpServers": True}, search="on"
    ) as session:
        assert session.search is not None and session.section is not None
        assert all(t.definition().get("defer_loading") is True for t in session.tools)
        assert "mcp__course__lookup_ticket" in session.section.text
        clock = FakeClock()
        model = ScriptedModel(
            [
                reply(
                    "Finding it.",
                    tool_calls=[
                        tool_call(session.search.name, query="select:mcp__course__lookup_ticket")
                    ],
                ),
                reply(
                    "Now.", tool_calls=[tool_call("mcp__course__lookup_ticket", ticket_id="T-101")]
                ),
                reply("Done."),
            ],
            clock=clock,
        )
        agent = Agent(
            model,
            tools=session.all_tools(),
            workspace=project,
            clock=clock,
            approver=lambda r: True,
        )
        list(agent.run("Look up T-101."))
        found, answer = results(model)
        assert found["content"] == [
            {"type": "tool_reference", "tool_name": "mcp__course__lookup_ticket"}
        ]
        assert "T-101" in str(answer["content"])


def test_tools_loaded_by_reference_outlive_a_full_compaction(project: Path) -> None:
    from types import SimpleNamespace

    with session_mcp(
        project, None, settings={"enableAllProjectMcpServers": True}, search="on"
    ) as session:
        carry = session.carry_over()
        assert carry is not None
        loaded = "mcp__course__lookup_ticket"
        reference = {"type": "tool_reference", "tool_name": loaded}
        messages = [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": [reference]}],
            }
        ]
        assert carry.before_compaction(SimpleNamespace(messages=messages), "auto", "") is None  # type: ignore[arg-type]
        by_name = {t.name: t.definition() for t in session.tools}
        assert "defer_loading" not in by_name[loaded]
        assert by_name["mcp__course__slow"]["defer_loading"] is True


def test_without_tool_search_there_is_nothing_to_carry(mcp: SessionMcp) -> None:
    assert mcp.carry_over() is None


def test_a_searched_and_called_mcp_tool_is_written_to_the_transcript_and_resumes(
    project: Path, tmp_path: Path
) -> None:
    from harness.resume import resume_with
    from harness.transcript import Transcript

    with session_mcp(
        project, None, settings={"enableAllProjectMcpServers": True}, search="on"
    ) as session:
        assert session.search is not None
        clock = FakeClock()
        search = tool_call(session.search.name, query="ticket")
        lookup = tool_call("mcp__course__lookup_ticket", ticket_id="T-103")
        model = ScriptedModel(
            [
                reply("Search.", tool_calls=[search]),
                reply("Look.", tool_calls=[lookup]),
                reply("Ok."),
            ],
            clock=clock,
        )
        path = tmp_path / "s.jsonl"
        writer = Transcript(path=path, session_id="s", clock=clock)
        agent = Agent(
            model,
            tools=session.all_tools(),
            workspace=project,
            clock=clock,
            approver=lambda r: True,
            plugins=[writer],
        )
        list(agent.run("Find T-103."))
        from harness.mcp.search import referenced_names

        assert "mcp__course__lookup_ticket" in referenced_names(agent.messages)
        writer.flush()
        again = Agent(
            ScriptedModel([reply("Resumed.")], clock=clock),
            tools=session.all_tools(),
            workspace=project,
            clock=clock,
        )
        resumed = resume_with(again, Transcript(path=path, session_id="s", clock=clock))
        assert not resumed.changes
        assert again.messages == agent.messages
        list(again.run("And now?"))  # the API's rules accept the resumed references


def test_a_settings_hook_matching_mcp_tools_blocks_one_as_claude_codes_docs_show(
    mcp: SessionMcp, project: Path
) -> None:
    # The hooks reference's MCP example: matcher "mcp__memory__.*", here for our server. The
    # command reads the event's JSON on stdin and blocks with exit 2 and a reason on stderr.
    from harness.settings.hooks import SettingsHooks
    from harness.settings.schema import hooks_in

    command = (
        f'{sys.executable} -c "import json,sys; e=json.load(sys.stdin); '
        "print('no tracker for ' + e['tool_input']['ticket_id'], file=sys.stderr); sys.exit(2)\""
    )
    settings = {
        "hooks": {
            "PreToolUse": [
                {"matcher": "mcp__course__.*", "hooks": [{"type": "command", "command": command}]}
            ]
        }
    }
    hooks, problems = hooks_in(settings, project / ".claude/settings.json", "user")
    assert problems == []
    configured = SettingsHooks(hooks, workspace=project, session_id="mcp")
    model, _ = run(
        mcp,
        project,
        [tool_call("mcp__course__lookup_ticket", ticket_id="T-104")],
        hooks=configured.install(Hooks()),
    )
    assert "no tracker for T-104" in str(results(model)[0]["content"])


def test_a_tool_whose_name_no_reference_can_carry_is_sent_in_full() -> None:
    from harness.mcp.tools import MAX_REFERENCE_NAME, Deferral

    deferral = Deferral()
    assert deferral.defers("mcp__s__" + "t" * (MAX_REFERENCE_NAME - 8))
    assert not deferral.defers("mcp__s__" + "t" * (MAX_REFERENCE_NAME - 7))
    deferral.keep({"mcp__s__kept"})
    assert not deferral.defers("mcp__s__kept") and not Deferral(on=False).defers("mcp__s__x")
