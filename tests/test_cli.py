"""The command line (``harness.cli``), in-process: flags, exit codes, output shapes, sessions.

Every test calls :func:`harness.cli.main` with an argv, in a fresh workspace that is the
current folder, with ``HOME`` in a tmp folder (the command line reads ``~/.claude/CLAUDE.md``)
and the standard input a string. No key is set (see ``conftest.py``), so the offline demo
model answers. The functions behind the commands (``report``, ``demo``, ``assemble``) are
tested directly. The real program in a terminal is ``test_cli_pty.py``.
"""

from __future__ import annotations

import importlib
import io
import json
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from harness import messages as m
from harness.cli import main
from harness.cli.assemble import Harness, Options, assemble, sessions_for
from harness.cli.commands import Shell, dispatch
from harness.cli.demo import DEMO_NOTE, HELP, demo_model, demo_reply
from harness.cli.report import Exit, context_parts, cost_rows
from harness.cli.terminal import Activity
from harness.clock import Clock, FakeClock
from harness.events import Event, ToolFinished, ToolStarted
from harness.model import DEFAULT_MODEL, ScriptedModel, faults
from harness.model.models import DEFAULT_CONTEXT_WINDOW
from harness.model.scripted import Request
from harness.recovery import GaveUp, Retrying
from harness.tokens import ContextBudget
from harness.tools.permissions import Approval, ApprovalRequest
from harness.transcript import load, project_folder

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
# ``harness.cli`` exports the function ``assemble``, which hides the module of that name.
assembly = importlib.import_module("harness.cli.assemble")
REAL_FOLDER = Path(__file__).resolve().parents[2] / "shared" / "cc_transcripts"
NO_REAL_FILES = (
    f"the real Claude Code transcripts are not here ({REAL_FOLDER}): they live next to the "
    "project, not in it, and a learner's clone does not have them"
)


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, Any]:
        record: dict[str, Any] = json.loads(self.out)
        return record

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder as the current folder, a home of its own, plain (uncoloured) output."""
    ws = tmp_path / "shop"
    ws.mkdir()
    (ws / "README.md").write_text("# The shop\n\nTODO: set the prices\n", encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("COLUMNS", "120")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(ws)
    return ws


@pytest.fixture
def cli(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Any:
    """``cli(*argv, stdin="")``: run the command line once, return its code and output."""

    def run(*argv: str, stdin: str = "") -> Run:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        code = main(list(argv))
        got = capsys.readouterr()
        return Run(code, ANSI.sub("", got.out), ANSI.sub("", got.err))

    return run


def transcripts(workspace: Path) -> list[Path]:
    return sorted((workspace / ".harness" / "projects").glob("*/*.jsonl"))


def user_texts(messages: list[m.MessageDict]) -> list[str]:
    return [
        str(b.get("text", ""))
        for msg in messages
        if msg["role"] == "user"
        for b in m.blocks(msg)
        if b.get("type") == "text"
    ]


def tool_results(messages: list[m.MessageDict]) -> list[m.Block]:
    return [b for msg in messages for b in m.tool_results(msg)]


# --- exit codes, one per ending -----------------------------------------------------------------


def test_a_one_shot_answer_goes_to_stdout_and_the_event_lines_to_stderr(cli: Any) -> None:
    run = cli("-p", "list files")
    assert run.code == Exit.DONE == 0
    assert "glob returned" in run.out and "README.md" in run.out and DEMO_NOTE in run.out
    assert "⚙ glob" in run.err and "⚙" not in run.out
    assert "glob returned" not in run.err  # the answer is printed once, on stdout


def test_a_prompt_that_calls_a_tool_with_max_turns_1_stops_with_exit_3(cli: Any) -> None:
    run = cli("--max-turns", "1", "-p", "list files", "--output-format", "json")
    assert run.code == Exit.MAX_TURNS == 3
    result = run.json()
    assert result["subtype"] == "error_max_turns" and result["is_error"] is True
    assert result["exit_code"] == 3 and result["num_turns"] == 1


def test_a_blank_prompt_is_refused_with_exit_1_and_the_reason(cli: Any) -> None:
    run = cli("-p", "   ")
    assert run.code == Exit.FAILED == 1
    assert run.out == ""
    assert "empty or only whitespace" in run.err


def test_a_prompt_read_from_stdin_is_answered(cli: Any) -> None:
    run = cli("-p", "-", "--output-format", "json", stdin="search TODO\n")
    assert run.code == 0
    assert run.json()["result"].startswith("grep returned:\nREADME.md")


def test_a_model_that_always_answers_529_gives_up_with_exit_1(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    overloaded = ScriptedModel(faults=lambda _request: faults.overloaded())
    monkeypatch.setattr(assembly, "model_for", lambda options, clock: overloaded)
    # The retries' waits pass on a fake clock: the command line's clock wraps a real one.
    monkeypatch.setattr("harness.cli.terminal.RealClock", FakeClock)
    run = cli("-p", "hello", "--output-format", "json")
    assert run.code == Exit.FAILED
    result = run.json()
    assert result["subtype"] == "error_during_execution" and result["is_error"] is True
    assert "gave up" in result["reason"] and "overloaded" in result["reason"].lower()
    assert len(overloaded.requests) == 10  # Recovery's max_attempts, every one a 529
    assert result["num_turns"] == 0 and result["total_cost_usd"] == 0


def test_continue_and_resume_together_are_a_usage_error(cli: Any) -> None:
    run = cli("--continue", "--resume", "abc", "-p", "hi")
    assert run.code == Exit.USAGE == 2
    assert "not both" in run.err


def test_max_turns_below_1_is_a_usage_error(cli: Any) -> None:
    run = cli("--max-turns", "0", "-p", "hi")
    assert run.code == Exit.USAGE and "--max-turns" in run.err


def test_a_one_shot_without_a_terminal_refuses_a_call_that_asks_and_tells_the_model(
    cli: Any, workspace: Path
) -> None:
    run = cli("-p", "write notes.md hello", "--output-format", "json")
    assert run.code == 0
    assert not (workspace / "notes.md").exists()
    (results,) = [tool_results(load(p).messages) for p in transcripts(workspace)]
    assert len(results) == 1 and results[0]["is_error"] is True
    assert "no terminal to ask" in json.dumps(results[0])
    assert "write_file failed" in run.json()["result"]


def test_accept_edits_lets_a_one_shot_write_without_asking(cli: Any, workspace: Path) -> None:
    run = cli("--permission-mode", "acceptEdits", "-p", "write notes.md remember the milk")
    assert run.code == 0
    assert (workspace / "notes.md").read_text(encoding="utf-8") == "remember the milk\n"


# --- json and stream-json -----------------------------------------------------------------------


def test_the_json_result_has_claude_codes_fields_and_names_the_session_on_disk(
    cli: Any, workspace: Path
) -> None:
    run = cli("-p", "read README.md", "--output-format", "json")
    assert run.code == 0 and run.err == ""  # json mode: nothing but the result
    result = run.json()
    assert result["type"] == "result" and result["subtype"] == "success"
    assert result["is_error"] is False and result["num_turns"] == 2
    assert "# The shop" in result["result"]
    (path,) = transcripts(workspace)
    assert result["session_id"] == path.stem
    assert isinstance(result["total_cost_usd"], float) and result["total_cost_usd"] > 0
    usage = result["usage"]
    assert set(usage) == {
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens",
    }
    assert usage["output_tokens"] > 0
    # The second call reads the first call's prefix from the (simulated) prompt cache.
    assert usage["cache_read_input_tokens"] > 0


def test_stream_json_is_an_init_line_one_line_per_event_and_the_result_last(cli: Any) -> None:
    run = cli("-p", "search TODO", "--output-format", "stream-json")
    assert run.code == 0
    lines = run.lines()  # every line parses
    assert len(lines) == len(run.out.strip().splitlines())
    init, *events, result = lines
    assert init["type"] == "system" and init["subtype"] == "init"
    assert {"read_file", "bash", "subagent", "fork"} <= set(init["tools"])
    assert init["live"] is False
    assert result["type"] == "result" and result["subtype"] == "success"
    assert {line["session_id"] for line in lines} == {init["session_id"]}
    replies = [e for e in events if e["type"] == "assistant"]
    calls = [e for e in events if e.get("event") == "ModelCalled"]
    assert len(replies) == len(calls) == result["num_turns"] == 2  # one line per reply
    assert replies[0]["message"]["content"][1]["name"] == "grep"
    assert [e["event"] for e in events if e["type"] == "event"][-1] == "TurnEnded"
    # The result's usage is the sum of its replies' usage (no side calls in this run).
    for key in ("cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"):
        assert result["usage"][key] == sum(r["message"]["usage"][key] for r in replies)


# --- sessions: --continue, --resume -------------------------------------------------------------


def test_continue_carries_on_the_latest_session_of_the_folder(cli: Any, workspace: Path) -> None:
    first = cli("--permission-mode", "acceptEdits", "-p", "write notes.md from the first run")
    assert first.code == 0
    (path,) = transcripts(workspace)
    second = cli("--continue", "-p", "read notes.md", "--output-format", "stream-json")
    assert second.code == 0
    init, resumed, *_ = second.lines()
    assert init["session_id"] == path.stem
    assert resumed["event"] == "Resumed" and resumed["messages"] == 4
    assert "from the first run" in second.lines()[-1]["result"]
    assert transcripts(workspace) == [path]  # no new session: the same file grew
    conversation = load(path).messages
    assert m.validate(conversation) == []
    assert user_texts(conversation) == ["write notes.md from the first run", "read notes.md"]


def test_each_demo_model_of_the_command_line_numbers_its_ids_apart() -> None:
    # A session resumed in a new process holds the last process's ids: the new model's
    # must not repeat them (a repeated tool_use id is a 400).
    options, clock = Options(), FakeClock()
    first, second = (assembly.model_for(options, clock) for _ in range(2))
    assert isinstance(first, ScriptedModel) and isinstance(second, ScriptedModel)
    assert first.id_prefix != second.id_prefix


def test_continue_in_a_folder_with_no_session_exits_2(cli: Any) -> None:
    run = cli("--continue", "-p", "hi")
    assert run.code == Exit.USAGE
    assert "no earlier session in this folder" in run.err


def test_resume_by_id_reads_that_session_and_not_the_latest(cli: Any, workspace: Path) -> None:
    a = cli("-p", "search TODO", "--output-format", "json").json()["session_id"]
    b = cli("-p", "list files", "--output-format", "json").json()["session_id"]
    assert a != b
    run = cli("--resume", a, "-p", "read README.md", "--output-format", "json")
    assert run.code == 0 and run.json()["session_id"] == a
    folder = transcripts(workspace)[0].parent
    assert user_texts(load(folder / f"{a}.jsonl").messages) == ["search TODO", "read README.md"]
    assert user_texts(load(folder / f"{b}.jsonl").messages) == ["list files"]
    # --continue follows the last session the command line used: the resumed one.
    again = cli("--continue", "-p", "hello", "--output-format", "json")
    assert again.json()["session_id"] == a


def test_resume_of_an_unknown_id_exits_2_with_a_clear_message(cli: Any, workspace: Path) -> None:
    cli("-p", "hello")
    run = cli("--resume", "no-such-session", "-p", "hi")
    assert run.code == Exit.USAGE
    assert run.out == ""
    assert run.err.strip() == "harness: no session no-such-session in " + project_folder(
        workspace.resolve()
    )
    missing = cli("--resume", "gone.jsonl", "-p", "hi")
    assert missing.code == Exit.USAGE and "no transcript at gone.jsonl" in missing.err


def test_resume_without_an_id_picks_from_a_numbered_list_newest_first(
    cli: Any, workspace: Path
) -> None:
    older = cli("-p", "search TODO", "--output-format", "json").json()["session_id"]
    cli("-p", "list files", "--output-format", "json")
    # The picker asks on stdin; "2" is the older session; then the interactive prompt ends.
    run = cli("--resume", stdin="2\n/exit\n")
    assert run.code == 0
    assert "1." in run.out + run.err and "2." in run.out + run.err
    assert f"session {older[:8]}" in run.out
    assert "resumed" in run.out


def test_resume_without_an_id_in_an_empty_folder_exits_2(cli: Any) -> None:
    run = cli("--resume", "-p", "hi")
    assert run.code == Exit.USAGE and "no sessions in this folder" in run.err


REAL_SMALL = ("marot__spotter__short", "marot__spotter__tool_heavy", "1af7fc5e")


def real_transcript(name_part: str) -> Path:
    found = sorted(REAL_FOLDER.glob(f"*{name_part}*.jsonl")) if REAL_FOLDER.is_dir() else []
    if not found:
        pytest.skip(NO_REAL_FILES)
    assert len(found) == 1
    return found[0]


def session_id_inside(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("sessionId"):
            return str(entry["sessionId"])
    raise AssertionError(f"no sessionId in {path.name}")


@pytest.mark.parametrize("name_part", REAL_SMALL)
def test_resume_of_a_real_claude_code_transcript_gives_a_valid_conversation_and_an_answer(
    cli: Any, workspace: Path, tmp_path: Path, name_part: str
) -> None:
    source = real_transcript(name_part)
    session_id = session_id_inside(source)
    # Laid out as Claude Code lays out ~/.claude: projects/<cwd as a folder name>/<id>.jsonl
    root = tmp_path / "claude"
    folder = root / "projects" / project_folder(workspace.resolve())
    folder.mkdir(parents=True)
    copy = folder / f"{session_id}.jsonl"
    shutil.copyfile(source, copy)
    before = load(copy).messages

    run = cli(
        "--sessions",
        str(root),
        "--resume",
        session_id,
        "-p",
        "list files",
        "--output-format",
        "json",
    )

    assert run.code == 0, run.err
    result = run.json()
    assert result["session_id"] == session_id
    assert "glob returned" in result["result"]
    after = load(copy).messages
    assert m.validate(after) == []
    assert len(after) > len(before)
    assert "list files" in user_texts(after)
    assert m.text_of(after[-1]).startswith("glob returned")
    # What we appended belongs to the same session as Claude Code's entries.
    entries = [json.loads(line) for line in copy.read_text(encoding="utf-8").splitlines()]
    assert {e["sessionId"] for e in entries if e.get("sessionId")} == {session_id}


def test_resume_of_a_claude_code_transcript_by_path(
    cli: Any, workspace: Path, tmp_path: Path
) -> None:
    source = real_transcript("1af7fc5e")
    copy = tmp_path / f"{session_id_inside(source)}.jsonl"
    shutil.copyfile(source, copy)
    run = cli("--resume", str(copy), "-p", "hello", "--output-format", "json")
    assert run.code == 0, run.err
    # Outside the sessions folder: copied into a new session, and the file is not changed.
    (imported,) = transcripts(workspace)
    assert run.json()["session_id"] == imported.stem != copy.stem
    assert f"copied {copy} into new session {imported.stem}" in run.err
    assert copy.read_bytes() == source.read_bytes()
    assert m.validate(load(imported).messages) == []


# --- interactive, in-process (lines from stdin) ------------------------------------------------


def test_an_unknown_slash_command_is_named_and_the_session_goes_on(cli: Any) -> None:
    run = cli(stdin="/nope\nhelp\n/exit\n")
    assert run.code == 0
    assert "Unknown command /nope: /help lists them." in run.out
    assert "I am the offline demo model" in run.out  # the next prompt was answered


def test_end_of_input_leaves_the_session_with_exit_0(cli: Any) -> None:
    run = cli(stdin="list files\n")
    assert run.code == 0 and "glob returned" in run.out


def test_quit_is_exit(cli: Any) -> None:
    run = cli(stdin="/quit\nlist files\n")
    assert run.code == 0 and "glob" not in run.out


def test_an_approval_answered_on_stdin_runs_or_refuses_the_call(cli: Any, workspace: Path) -> None:
    run = cli(stdin="write a.md first\ny\nwrite b.md second\nn not now\n/exit\n")
    assert run.code == 0
    assert "Allow?" in run.out
    assert (workspace / "a.md").read_text(encoding="utf-8") == "first\n"
    assert not (workspace / "b.md").exists()
    (path,) = transcripts(workspace)
    refused = tool_results(load(path).messages)[-1]
    assert refused["is_error"] is True
    assert "refused at the terminal: not now" in json.dumps(refused)


def test_clear_starts_a_new_session_and_keeps_the_old_one_on_disk(
    cli: Any, workspace: Path
) -> None:
    run = cli(stdin="list files\n/clear\nsearch TODO\n/exit\n")
    assert run.code == 0 and "New session" in run.out
    paths = transcripts(workspace)
    assert len(paths) == 2
    assert sorted(user_texts(load(p).messages)[0] for p in paths) == ["list files", "search TODO"]


def test_context_and_cost_print_every_part_and_the_calls(cli: Any) -> None:
    run = cli(stdin="/cost\nlist files\n/context\n/cost\n/exit\n")
    assert run.code == 0
    assert "No model calls yet: $0." in run.out
    for part in ("system prompt", "tool definitions", "tool results", "free before auto-compact"):
        assert part in run.out
    assert f"Context window: {DEFAULT_CONTEXT_WINDOW:,} tokens" in run.out  # the model's: 1M
    assert "Cost of this session" in run.out and DEFAULT_MODEL in run.out


# --- /context and /cost: the numbers -----------------------------------------------------------


def approve_all(request: ApprovalRequest) -> Approval:
    return Approval(True, "test")


def assembled(workspace: Path, *, window: int = 200_000, clock: Clock | None = None) -> Harness:
    clock = clock or FakeClock()
    options = Options(workspace=workspace, context_window=window, home=workspace.parent / "home")
    return assemble(
        options,
        approver=approve_all,
        clock=clock,
        sessions=sessions_for(options, clock=clock),
        model=demo_model(clock=clock, context_window=window),
        fsync=False,
    )


def run(harness: Harness, prompt: str) -> list[Event]:
    return list(harness.agent.run(prompt))


def test_context_parts_sum_to_the_window_before_and_after_a_run(workspace: Path) -> None:
    h = assembled(workspace)
    empty = {p.name: p.tokens for p in context_parts(h.agent, h.auto.budget)}
    assert sum(empty.values()) == 200_000
    assert empty["system prompt"] > 0 and empty["tool definitions"] > 0
    assert empty["your messages"] == empty["tool results"] == 0
    run(h, "read README.md")
    after = {p.name: p.tokens for p in context_parts(h.agent, h.auto.budget)}
    assert sum(after.values()) == 200_000
    assert after["your messages"] > 0 and after["tool calls"] > 0 and after["tool results"] > 0
    assert after["model's replies"] > 0
    used = sum(v for k, v in after.items() if not k.startswith(("free", "kept")))
    assert after["free before auto-compact"] == h.auto.threshold - used
    assert after["free before auto-compact"] < empty["free before auto-compact"]


def test_context_parts_over_the_threshold_have_nothing_free_and_still_sum_to_the_window(
    workspace: Path,
) -> None:
    h = assembled(workspace)
    # A 4,000-token window whose threshold (1,000) the system prompt and tools are past.
    budget = ContextBudget(window=4_000, max_output=1_000, buffer=2_000)
    parts = {p.name: p.tokens for p in context_parts(h.agent, budget)}
    used = sum(v for k, v in parts.items() if not k.startswith(("free", "kept")))
    assert used > budget.auto_compact_threshold
    assert parts["free before auto-compact"] == 0
    assert parts["kept free (buffer and reply)"] == 4_000 - used
    assert sum(parts.values()) == 4_000


def test_cost_rows_add_up_to_the_meter_with_a_subagent_and_a_fork(workspace: Path) -> None:
    h = assembled(workspace)
    run(h, "read README.md")
    run(h, "delegate search TODO")
    run(h, "fork what does README.md say")
    meter = h.agent.meter
    rows = cost_rows(meter)
    assert sum(r.calls for r in rows) == len(meter.calls) >= 6
    assert sum(r.input for r in rows) == sum(c.usage.input_tokens for c in meter.calls)
    assert sum(r.cache_read for r in rows) == sum(
        c.usage.cache_read_input_tokens or 0 for c in meter.calls
    )
    assert sum(r.output for r in rows) == sum(c.usage.output_tokens for c in meter.calls)
    assert sum(r.usd or 0 for r in rows) == pytest.approx(meter.total.total)
    assert [r.model for r in rows] == [DEFAULT_MODEL]


def test_the_cost_command_prints_the_meters_total(workspace: Path) -> None:
    h = assembled(workspace)
    run(h, "list files")
    console = Console(file=io.StringIO(), width=120, color_system=None)
    shell = Shell(h, console, Activity(console, enabled=False), lambda: assembled(workspace))
    assert dispatch(shell, "/cost") is True
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    assert f"total ${h.agent.meter.total.total:.4f}" in printed
    assert dispatch(shell, "/exit") is False


# --- the demo model ----------------------------------------------------------------------------


def request(text: str) -> Request:
    return Request(
        model="claude-sonnet-4-6",
        max_tokens=1000,
        messages=[{"role": "user", "content": [{"type": "text", "text": text}]}],
        system=None,
        tools=None,
        extra={},
        input_tokens=0,
    )


@pytest.mark.parametrize(
    ("said", "tool", "arguments"),
    [
        ("list files", "glob", {"pattern": "**/*"}),
        ("read README.md", "read_file", {"path": "README.md"}),
        ("please show src/app.py", "read_file", {"path": "src/app.py"}),
        ("search TODO", "grep", {"pattern": "TODO"}),
        ("search a.b", "grep", {"pattern": r"a\.b"}),
        ("write notes.md remember the milk", "write_file", {"path": "notes.md"}),
        ("run ls -la", "bash", {"command": "ls -la"}),
        ("sleep 5", "bash", {"command": "sleep 5; echo awake"}),
        ("delegate search TODO", "subagent", {"prompt": "search TODO"}),
        ("fork what does README.md say", "fork", {"prompt": "what does README.md say"}),
    ],
)
def test_the_demo_model_picks_a_tool_by_keyword(
    said: str, tool: str, arguments: dict[str, str]
) -> None:
    reply = demo_reply(request(said))
    (call,) = reply.tool_calls
    assert call.name == tool
    assert arguments.items() <= call.input.items()


def test_the_demo_model_writes_the_words_after_the_path() -> None:
    (call,) = demo_reply(request("write notes.md remember the milk")).tool_calls
    assert call.input["content"] == "remember the milk\n"


def test_the_demo_model_answers_help_and_unknown_words_without_a_tool() -> None:
    assert demo_reply(request("help")).text == HELP
    other = demo_reply(request("good morning"))
    assert not other.tool_calls and other.text.startswith("You said: good morning")


def test_the_demo_model_reports_tool_results_once_they_come_back(workspace: Path) -> None:
    h = assembled(workspace)
    events = run(h, "read README.md")
    assert [e.name for e in events if isinstance(e, ToolStarted)] == ["read_file"]
    assert [e.is_error for e in events if isinstance(e, ToolFinished)] == [False]
    final = m.text_of(h.agent.messages[-1])
    assert final.startswith("read_file returned:") and "# The shop" in final


def test_a_flaky_prompt_gets_two_529s_that_recovery_retries(workspace: Path) -> None:
    clock = FakeClock()
    h = assembled(workspace, clock=clock)
    events = run(h, "flaky: list files")
    assert len([e for e in events if isinstance(e, Retrying)]) == 2
    assert len(clock.sleeps) == 2
    assert not [e for e in events if isinstance(e, GaveUp)]
    assert m.text_of(h.agent.messages[-1]).startswith("glob returned")
