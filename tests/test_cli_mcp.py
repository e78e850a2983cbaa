"""The command line with chapter 14's MCP servers: started with the session, approved like
Claude Code's, shown by ``/mcp``, named by the spinner, stopped with the program.

In-process, as ``test_cli.py`` runs it (:func:`harness.cli.main` in a fresh workspace that is
the current folder, ``HOME`` a folder of its own, the standard input a string, the offline
demo model answering: ``mcp <full tool name> <json>`` calls an MCP tool). The server is the
course's own, ``python -m harness.mcp.servers.course``, started with ``sys.executable``;
where a test must know its process, a two-line wrapper writes the server's pid to a file and
then serves in the same process. A wait is always for an outcome, never a duration.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from test_cli import cli, request, transcripts, workspace
from test_cli_pty import PROMPT, STARTUP, STEP, Spawn, place, spawn

from harness import messages as m
from harness.cli import main
from harness.cli.assemble import Options, assemble
from harness.cli.demo import demo_reply
from harness.cli.mcp import LOCAL_SETTINGS, McpServers, remember, seconds_from, tool_label
from harness.cli.program import Program
from harness.cli.report import Exit
from harness.cli.terminal import Activity, Progress, running
from harness.loop import ToolProgress
from harness.mcp.session import CarryLoadedTools
from harness.transcript import load

__all__ = ["cli", "place", "spawn", "workspace"]  # fixtures, used by name

SERVE = [
    "-c",
    "import os, sys\n"
    "if len(sys.argv) > 1:\n"
    "    open(sys.argv[1], 'a').write(f'{os.getpid()}\\n')\n"
    "    sys.stderr.write(sys.argv[2] if len(sys.argv) > 2 else '')\n"
    "    sys.stderr.flush()\n"
    "from harness.mcp.servers.course import main\n"
    "main([])\n",
]
"""The course server, after adding its pid to ``argv[1]`` and writing ``argv[2]`` to stderr."""

LOOKUP = 'mcp mcp__course__lookup_ticket {"ticket_id": "T-101"}'
ANSWER = "T-101 [open] assigned to ana"
BYPASS = ("--permission-mode", "bypassPermissions")


def servers(workspace: Path, **entries: dict[str, Any]) -> None:
    """``.mcp.json`` in the workspace with these servers."""
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": entries}))


def course(pidfile: Path | None = None, stderr: str = "") -> dict[str, Any]:
    extra = [str(pidfile), stderr] if pidfile is not None else []
    return {"command": sys.executable, "args": [*SERVE, *extra]}


def approve(workspace: Path, *names: str, **more: Any) -> None:
    path = workspace / LOCAL_SETTINGS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"enabledMcpjsonServers": list(names), **more}))


def local_settings(workspace: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((workspace / LOCAL_SETTINGS).read_text())
    return data


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, ended but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def results(workspace: Path) -> list[str]:
    (path,) = transcripts(workspace)
    return [
        json.dumps(b.get("content")) for msg in load(path).messages for b in m.tool_results(msg)
    ]


# --- a tool call, start to end ----------------------------------------------------------------


def test_a_one_shot_prompt_calls_an_approved_project_servers_tool(
    workspace: Path, cli: Any
) -> None:
    servers(workspace, course=course())
    approve(workspace, "course")
    run = cli("-p", LOOKUP, *BYPASS)
    assert run.code == Exit.DONE, run.err
    assert ANSWER in run.out
    assert any(ANSWER in text for text in results(workspace))
    assert "harness:" not in run.err  # nothing went wrong, so nothing is said


def test_a_user_server_from_claude_json_starts_without_a_question(
    workspace: Path, cli: Any
) -> None:
    home = Path(os.environ["HOME"])
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"course": course()}}))
    run = cli("-p", LOOKUP, *BYPASS)
    assert run.code == Exit.DONE, run.err
    assert ANSWER in run.out


def test_the_stream_json_init_record_names_the_servers_and_their_tools(
    workspace: Path, cli: Any
) -> None:
    servers(workspace, course=course())
    approve(workspace, "course")
    run = cli("-p", "hello", "--output-format", "stream-json")
    init = run.lines()[0]
    assert init["mcp_servers"] == [{"name": "course", "status": "connected"}]
    assert "mcp__course__lookup_ticket" in init["tools"]


# --- approval ------------------------------------------------------------------------------------


def test_a_project_server_is_not_started_in_one_shot_mode_without_approval(
    workspace: Path, cli: Any, tmp_path: Path
) -> None:
    pidfile = tmp_path / "server.pid"
    servers(workspace, course=course(pidfile))
    run = cli("-p", LOOKUP, *BYPASS)
    assert not pidfile.exists()  # the program was never started
    assert run.err.count("MCP server 'course' from .mcp.json was not started") == 1
    assert "Unknown tool 'mcp__course__lookup_ticket'" in "".join(results(workspace))


def test_the_projects_shared_settings_may_reject_a_server_but_not_approve_one(
    workspace: Path, cli: Any, tmp_path: Path
) -> None:
    pidfile = tmp_path / "server.pid"
    servers(workspace, course=course(pidfile))
    (workspace / ".claude").mkdir()
    shared = workspace / ".claude" / "settings.json"
    shared.write_text(json.dumps({"enableAllProjectMcpServers": True}))
    cli("-p", LOOKUP, *BYPASS)
    assert not pidfile.exists()
    shared.write_text(json.dumps({"disabledMcpjsonServers": ["course"]}))
    run = cli(stdin="/exit\n")  # interactive: the settings answer, so nobody is asked
    assert "New MCP server" not in run.out
    assert not pidfile.exists()


def test_yes_at_the_terminal_starts_the_server_and_is_remembered_with_the_files_other_keys(
    workspace: Path, cli: Any
) -> None:
    servers(workspace, course=course())
    (workspace / ".claude").mkdir()
    (workspace / LOCAL_SETTINGS).write_text(json.dumps({"spinnerTipsEnabled": False}))
    run = cli(stdin="y\n/mcp\n/exit\n")
    assert "New MCP server found in .mcp.json: course" in run.out
    assert "connected" in run.out
    assert local_settings(workspace) == {
        "spinnerTipsEnabled": False,
        "enabledMcpjsonServers": ["course"],
    }
    again = cli("-p", LOOKUP, *BYPASS)  # a second session is not asked, and needs no terminal
    assert ANSWER in again.out


def test_no_at_the_terminal_is_remembered_and_not_asked_again(workspace: Path, cli: Any) -> None:
    servers(workspace, course=course())
    run = cli(stdin="n\n/exit\n")
    assert "New MCP server found" in run.out
    assert local_settings(workspace) == {"disabledMcpjsonServers": ["course"]}
    again = cli(stdin="/mcp\n/exit\n")
    assert "New MCP server found" not in again.out
    assert "disabled" in again.out


def test_no_answer_starts_nothing_and_remembers_nothing(workspace: Path, cli: Any) -> None:
    servers(workspace, course=course())
    run = cli(stdin="\n/exit\n")
    assert "New MCP server found" in run.out
    assert not (workspace / LOCAL_SETTINGS).exists()


def test_all_at_the_terminal_approves_the_later_servers_without_asking_again(
    workspace: Path, cli: Any
) -> None:
    servers(workspace, course=course(), second=course())
    run = cli(stdin="a\n/mcp\n/exit\n")
    assert run.out.count("New MCP server found") == 1
    assert local_settings(workspace) == {
        "enabledMcpjsonServers": ["course"],
        "enableAllProjectMcpServers": True,
    }
    assert run.out.count("connected") == 2


def test_the_question_shows_a_hostile_name_and_command_without_obeying_their_escapes(
    workspace: Path, cli: Any
) -> None:
    evil = {"command": "printf", "args": ["\x1b]0;owned\x07"]}
    servers(workspace, **{"clear\x1b[2J": evil})
    run = cli(stdin="n\n/exit\n")
    assert "New MCP server found in .mcp.json: clear\\x1b[2J" in run.out
    assert "\\x1b]0;owned\\x07" in run.out
    assert "\x1b" not in run.out.replace("\x1b[", "")  # no raw escape but rich's own colours
    assert local_settings(workspace) == {"disabledMcpjsonServers": ["clear\x1b[2J"]}


def test_a_broken_local_settings_file_is_left_as_it_is(workspace: Path) -> None:
    (workspace / ".claude").mkdir()
    path = workspace / LOCAL_SETTINGS
    path.write_text("{not json")
    problem = remember(workspace, "course", "yes")
    assert problem is not None and "not remembered" in problem
    assert path.read_text() == "{not json"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)


@settings(max_examples=40, deadline=None)
@given(
    data=st.dictionaries(st.text(max_size=12), json_values, max_size=6),
    name=st.text(min_size=1, max_size=20),
    choice=st.sampled_from(["yes", "all", "no"]),
)
def test_remember_keeps_every_other_key_and_lists_the_name_once(
    tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any], name: str, choice: Any
) -> None:
    folder = tmp_path_factory.mktemp("project")
    (folder / ".claude").mkdir()
    (folder / LOCAL_SETTINGS).write_text(json.dumps(data))
    assert remember(folder, name, choice) is None
    assert remember(folder, name, choice) is None  # twice: still listed once
    after = local_settings(folder)
    key = "disabledMcpjsonServers" if choice == "no" else "enabledMcpjsonServers"
    assert after[key].count(name) == 1
    changed = {key, "enableAllProjectMcpServers"} if choice == "all" else {key}
    assert {k: v for k, v in after.items() if k not in changed} == {
        k: v for k, v in data.items() if k not in changed
    }


# --- faults and problems ---------------------------------------------------------------------


def test_a_server_that_fails_to_start_is_said_once_and_the_session_goes_on(
    workspace: Path, cli: Any
) -> None:
    servers(workspace, broken={"command": "no-such-command-for-harness-tests"}, course=course())
    approve(workspace, "broken", "course")
    run = cli(*BYPASS, stdin=f"{LOOKUP}\n/clear\n/mcp\n/exit\n")
    assert run.code == Exit.DONE
    assert run.err.count("harness: MCP server 'broken' did not start") == 1  # /clear: not again
    assert ANSWER in run.out
    assert "failed" in run.out  # the /mcp table
    one = cli("-p", LOOKUP, *BYPASS)
    assert one.code == Exit.DONE and ANSWER in one.out


def test_strict_mcp_config_starts_no_server(workspace: Path, cli: Any, tmp_path: Path) -> None:
    pidfile = tmp_path / "server.pid"
    servers(workspace, course=course(pidfile))
    approve(workspace, "course")
    run = cli("--strict-mcp-config", stdin="/mcp\n/exit\n")
    assert "MCP servers are off" in run.out
    assert not pidfile.exists()


def test_mcp_config_servers_start_without_approval_and_win_over_the_files(
    workspace: Path, cli: Any, tmp_path: Path
) -> None:
    servers(workspace, course={"command": "/no/such/server"})  # overridden, never started
    given = tmp_path / "servers.json"
    given.write_text(json.dumps({"mcpServers": {"course": course()}}))
    run = cli("--mcp-config", str(given), "-p", LOOKUP, *BYPASS)
    assert run.code == Exit.DONE, run.err
    assert ANSWER in run.out and "/no/such/server" not in run.err


def test_strict_mcp_config_with_a_json_string_starts_only_that_server(
    workspace: Path, cli: Any, tmp_path: Path
) -> None:
    pidfile = tmp_path / "project.pid"
    servers(workspace, other=course(pidfile))
    approve(workspace, "other")
    inline = json.dumps({"mcpServers": {"course": course()}})
    run = cli("--strict-mcp-config", "--mcp-config", inline, "-p", LOOKUP, *BYPASS)
    assert run.code == Exit.DONE, run.err
    assert ANSWER in run.out and not pidfile.exists()


@pytest.mark.parametrize("value", ["{not json", "/no/such/file.json", "[1, 2]"])
def test_an_unreadable_mcp_config_is_a_usage_error_in_one_line(cli: Any, value: str) -> None:
    run = cli("--mcp-config", value, "-p", "hi")
    assert run.code == Exit.USAGE
    assert run.err.startswith("harness: --mcp-config: ") and run.err.count("\n") == 1


def test_deferred_tools_are_named_in_a_static_section_and_not_among_your_tools(
    workspace: Path,
) -> None:
    many = {"command": sys.executable, "args": ["-m", "harness.mcp.servers.many", "--tools", "30"]}
    servers(workspace, many=many)
    approve(workspace, "many")
    mcp = McpServers(workspace, None, context_window=20_000)  # 30 tools pass 10% of it
    try:
        options = Options(workspace=workspace, home=workspace.parent / "home")
        harness = assemble(options, mcp=mcp)
        blocks = harness.agent.system
        assert isinstance(blocks, list)
        system = "\n".join(str(block["text"]) for block in blocks)
        yours = next(line for line in system.splitlines() if "Your tools:" in line)
        definitions = {d["name"]: d for d in harness.agent.tools.definitions()}
        carried = [p for p in harness.agent.plugins if isinstance(p, CarryLoadedTools)]
    finally:
        mcp.close()
    assert "<available-deferred-tools>" in system and "mcp__many__issues_list" in system
    assert "mcp__many__" not in yours and "ToolSearch" in yours
    assert definitions["mcp__many__issues_list"].get("defer_loading") is True
    assert system.index("<available-deferred-tools>") < system.index("Working directory")
    assert len(carried) == 1  # tools loaded by search outlive a full compaction


# --- /mcp ---------------------------------------------------------------------------------------


def test_slash_mcp_shows_the_servers_and_one_servers_tools_and_stderr_made_readable(
    workspace: Path, cli: Any, tmp_path: Path
) -> None:
    servers(workspace, course=course(tmp_path / "pid", "\x1b[31mred alert\n"))
    approve(workspace, "course")
    run = cli(*BYPASS, stdin=f"{LOOKUP}\n/mcp\n/mcp course\n/mcp nobody\n/help\n/exit\n")
    table = next(line for line in run.out.splitlines() if line.startswith("course"))
    assert [cell.strip() for cell in table.split("│")][:5] == [
        "course",
        "project",
        "connected",
        "7",
        "0",
    ]
    for tool in ("lookup_ticket", "word_count", "slow", "fail", "flaky", "big_report", "crash"):
        assert f"mcp__course__{tool}" in run.out
    assert "course: MCP server starting on stdio" in run.out  # its stderr, for a person
    assert "\\x1b[31mred alert" in run.out  # the escape shown, not sent to the terminal
    assert "No MCP server 'nobody' was started" in run.out
    assert "/mcp" in run.out.split("Commands", 1)[1]  # /help lists it
    sent = json.dumps([load(path).messages for path in transcripts(workspace)])
    assert ANSWER in sent and "red alert" not in sent and "starting on stdio" not in sent


def test_slash_mcp_without_servers_says_how_to_add_one(cli: Any) -> None:
    run = cli(stdin="/mcp\n/exit\n")
    assert "No MCP servers configured" in run.out


# --- no process left behind ------------------------------------------------------------------


def pid_of(pidfile: Path) -> int:
    """The pid of the one server process started (a second start would add a line)."""
    (pid,) = pidfile.read_text().split()
    return int(pid)


def test_the_server_process_ends_with_a_one_shot_run(
    workspace: Path, cli: Any, tmp_path: Path
) -> None:
    pidfile = tmp_path / "server.pid"
    servers(workspace, course=course(pidfile))
    approve(workspace, "course")
    cli("-p", LOOKUP, *BYPASS)
    assert not alive(pid_of(pidfile))


def test_the_server_survives_clear_and_ends_with_the_session(
    workspace: Path, cli: Any, tmp_path: Path
) -> None:
    pidfile = tmp_path / "server.pid"
    servers(workspace, course=course(pidfile))
    approve(workspace, "course")
    run = cli(*BYPASS, stdin=f"/clear\n{LOOKUP}\n/exit\n")
    assert ANSWER in run.out  # after /clear, the same server answers
    assert not alive(pid_of(pidfile))  # one process for the whole run, and it is gone


def test_the_server_process_ends_when_the_program_fails(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "server.pid"
    servers(workspace, course=course(pidfile))
    approve(workspace, "course")

    def broken(self: Program, harness: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(Program, "interactive", broken)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with pytest.raises(RuntimeError):
        main([])
    assert not alive(pid_of(pidfile))


def test_the_server_process_ends_on_ctrl_c(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "server.pid"
    servers(workspace, course=course(pidfile))
    approve(workspace, "course")

    def interrupted(self: Program, harness: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(Program, "interactive", interrupted)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert main([]) == Exit.INTERRUPTED
    assert not alive(pid_of(pidfile))


def test_at_a_terminal_a_server_is_approved_named_while_it_runs_and_gone_after_ctrl_c(
    spawn: Spawn, place: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    ws, _ = place
    pidfile = tmp_path / "server.pid"
    servers(ws, course=course(pidfile))
    screen = spawn("--permission-mode", "bypassPermissions")
    screen.expect(r"New MCP server found in \.mcp\.json: course", timeout=STARTUP)
    screen.expect(r"Use it\?")
    screen.type("y")
    screen.expect(r"MCP servers: course \(7 tools\)", timeout=STARTUP)
    screen.expect(PROMPT)
    screen.type('mcp mcp__course__slow {"seconds": 600}')
    screen.expect(r"running mcp__course__slow \(MCP server course\)")  # the spinner
    screen.child.sendintr()
    screen.expect(r"interrupted: the turn stopped")
    screen.expect(PROMPT)
    screen.child.sendintr()  # right after an interrupted turn, one more Ctrl-C exits
    assert screen.exit_code() == 130
    pid = pid_of(pidfile)
    deadline = time.monotonic() + STEP  # the server may take a moment to be reaped by init
    while alive(pid):
        assert time.monotonic() < deadline, f"server {pid} outlived the program"
        time.sleep(0.05)
    assert local_settings(ws) == {"enabledMcpjsonServers": ["course"]}


# --- the spinner and the demo model ----------------------------------------------------------


def test_the_spinner_names_each_running_tool_and_an_mcp_tools_server() -> None:
    said = running(["mcp__course__slow"], tool_label)
    assert said == "running mcp__course__slow (MCP server course)…"
    assert running(["read_file", "grep", "read_file"], tool_label) == "running read_file, grep…"
    assert running([]) == "working…"


class Recorder(Activity):
    def __init__(self) -> None:
        super().__init__(Console(file=io.StringIO()), enabled=False)
        self.said: list[str] = []

    def show(self, text: str) -> None:
        self.said.append(text)


def test_progress_shows_the_tools_of_the_reply_while_they_run() -> None:
    activity = Recorder()
    agent: Any = type("Agent", (), {})()
    agent.messages = [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "mcp__course__slow", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "bash", "input": {}},
            ],
        }
    ]
    progress = Progress(activity, tool_label)
    progress.on_tool_progress(agent, ToolProgress("started", ("t1", "t2")))
    progress.on_tool_progress(agent, ToolProgress("finished", ("t1", "t2")))
    assert activity.said == [
        "running mcp__course__slow (MCP server course), bash…",
        "working…",
    ]


def test_the_demo_model_calls_the_mcp_tool_it_is_told_to_with_its_json() -> None:
    reply = demo_reply(request('mcp mcp__course__word_count {"text": "a b"}'))
    assert [(c.name, c.input) for c in reply.tool_calls] == [
        ("mcp__course__word_count", {"text": "a b"})
    ]
    assert demo_reply(request("mcp mcp__course__flaky")).tool_calls[0].input == {}


@given(st.text(max_size=40))
def test_the_demo_model_answers_any_mcp_arguments_without_failing(text: str) -> None:
    reply = demo_reply(request(f"mcp mcp__course__fail {text}"))
    for call in reply.tool_calls:  # a call only ever carries a JSON object
        assert isinstance(call.input, dict)
        assert call.name.startswith("mcp__course__fail")


def test_timeouts_come_from_claude_codes_variables_in_milliseconds() -> None:
    assert seconds_from({"MCP_TIMEOUT": "5000"}, "MCP_TIMEOUT", 30) == 5
    assert seconds_from({"MCP_TIMEOUT": "10"}, "MCP_TIMEOUT", 30) == 1
    for bad in ("", "soon", "-5", "0", "1e3"):
        assert seconds_from({"MCP_TIMEOUT": bad}, "MCP_TIMEOUT", 30) == 30
