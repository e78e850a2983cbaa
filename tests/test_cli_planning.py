"""The command line with chapter 12's planning: ``/todos``, the status line, plan mode at the
terminal, resumed lists, the progress file.

In-process, as ``test_cli.py`` runs it: each test calls :func:`harness.cli.main` in a fresh
workspace that is the current folder, the standard input a string (so the plain reader reads
prompts, slash commands and approval answers from it), and the offline demo model answers:
``todo a; [x] b; [~] c`` makes it write that list, ``plan a; b`` present that plan.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from test_cli import assembled, cli, tool_results, transcripts, user_texts, workspace

from harness import messages as m
from harness.cli import parser
from harness.cli.assemble import PLANNING_TOOLS, Harness
from harness.cli.commands import COMMANDS, Shell, dispatch
from harness.cli.demo import demo_reply
from harness.cli.program import Program, describe
from harness.cli.report import Exit
from harness.cli.terminal import Activity, readable
from harness.cli.todos import status
from harness.compaction.summary import compact
from harness.events import ToolFinished
from harness.model.scripted import Request
from harness.planning import PROGRESS_FILE, Planning, list_in, parse_progress
from harness.planning.reminders import PLAN_MODE_REMINDER, system_reminder
from harness.prompt import PromptCaching
from harness.recovery import Recovery
from harness.transcript import load

__all__ = ["cli", "workspace"]  # fixtures, used by name

TODO = "todo read the code; fix it; test it"
CHECKLIST = "- [~] read the code\n- [ ] fix it\n- [ ] test it"


def conversation(workspace: Path) -> list[m.MessageDict]:
    (path,) = transcripts(workspace)
    return load(path).messages


# --- /todos and the status line ------------------------------------------------------------


def test_todos_says_there_are_none_before_a_todo_write_and_shows_the_checklist_after(
    cli: Any,
) -> None:
    run = cli(stdin=f"/todos\n{TODO}\n/todos\n/exit\n")
    assert run.code == 0
    before, after = run.out.split("Updating my todo list.")
    assert "no todos yet" in before and "- [" not in before
    assert "Todos: 0/3 done · now: read the code" in after
    assert CHECKLIST in after


def test_help_lists_todos(cli: Any) -> None:
    assert "todos" in COMMANDS
    run = cli(stdin="/help\n/exit\n")
    assert "/todos" in run.out and "todo list" in run.out


def test_a_todo_write_prints_a_status_line_with_the_summary(cli: Any) -> None:
    run = cli(stdin="todo [x] read the code; [~] fix it; test it\nlist files\n/exit\n")
    assert run.code == 0
    assert run.out.count("☑ todos: 1/3 done · now: fix it") == 1  # once: when it changed


def test_the_spinner_line_carries_the_todo_summary_once_the_list_has_items(
    workspace: Path,
) -> None:
    program = Program(parser().parse_args([]), stdin=io.StringIO(""))
    harness = program.open(None)
    assert program.activity.line("thinking…") == "thinking…"  # no list, no status
    list(harness.agent.run(TODO))
    assert program.activity.line("thinking…") == "thinking… · 0/3 done · now: read the code"


def test_status_says_plan_mode_while_it_is_on() -> None:
    assert status(Planning()) == ""
    console = Console(file=io.StringIO())
    activity = Activity(console, enabled=False)
    activity.status = lambda: "plan mode"
    assert activity.line("working…") == "working… · plan mode"


# --- plan mode -----------------------------------------------------------------------------


def test_plan_mode_denies_a_write_and_an_approved_plan_switches_the_mode_and_fills_the_list(
    cli: Any, workspace: Path
) -> None:
    run = cli(
        "--permission-mode",
        "plan",
        stdin="write a.md hi\nplan read the code; fix it; test it\ny\n/todos\nwrite b.md ok\ny\n",
    )
    assert run.code == 0
    assert not (workspace / "a.md").exists()
    assert "plan mode: only read-only tools may run" in run.out
    # The plan is shown as the person will read it, one step a line, before the question.
    shown = run.out.index("    1. read the code\n    2. fix it\n    3. test it")
    assert shown < run.out.index("Allow?", shown)
    assert "permissions default (was plan)" in run.out
    assert "☑ todos: 0/3 done · now: read the code" in run.out
    assert f"Todos: 0/3 done · now: read the code\n{CHECKLIST}" in run.out  # /todos
    assert (workspace / "b.md").read_text(encoding="utf-8") == "ok\n"  # asked, then ran


def test_a_rejected_plan_keeps_plan_mode_and_tells_the_model_why(cli: Any, workspace: Path) -> None:
    run = cli(
        "--permission-mode",
        "plan",
        stdin="plan fix it\nn add a test first\n/todos\nwrite a.md hi\n",
    )
    assert run.code == 0
    assert "permissions default" not in run.out
    assert "no todos yet" in run.out and "plan mode is on" in run.out
    assert not (workspace / "a.md").exists()
    refused, denied = tool_results(conversation(workspace))
    assert refused["is_error"] and "refused at the terminal: add a test first" in json.dumps(
        refused
    )
    assert denied["is_error"] and "plan mode" in json.dumps(denied)


def test_a_long_plan_is_shown_whole_and_its_control_characters_escaped(cli: Any) -> None:
    steps = [f"step number {i} of a long plan, with enough words to need room" for i in range(40)]
    plan = "plan " + "; ".join(steps[:-1]) + "; the last \x1b[2J step"
    run = cli("--permission-mode", "plan", stdin=f"{plan}\nn\n")
    assert run.code == 0
    for i in range(39):
        assert f"    {i + 1}. step number {i} of a long plan" in run.out
    assert "    40. the last \\x1b[2J step" in run.out and "\x1b[2J" not in run.out
    assert readable("a\tb\r\nc\x07") == "a   b\nc\\x07"


def test_exit_plan_mode_in_one_shot_without_a_terminal_is_refused_as_any_ask(
    cli: Any, workspace: Path
) -> None:
    run = cli("--permission-mode", "plan", "-p", "plan fix it", "--output-format", "json")
    assert run.code == 0
    (refused,) = tool_results(conversation(workspace))
    assert refused["is_error"] and "no terminal to ask" in json.dumps(refused)


# --- a resumed session keeps its list ------------------------------------------------------


def test_continue_and_resume_of_a_session_that_wrote_a_list_show_it_in_todos(
    cli: Any, workspace: Path
) -> None:
    first = cli("-p", TODO)
    assert first.code == 0
    (path,) = transcripts(workspace)
    for flags in (["--continue"], ["--resume", path.stem]):
        run = cli(*flags, stdin="/todos\n/exit\n")
        assert run.code == 0
        assert "☑ todos: 0/3 done · now: read the code" in run.out  # said at the start
        assert CHECKLIST in run.out


# --- the progress file ---------------------------------------------------------------------


def test_progress_reads_the_file_an_earlier_run_wrote_and_keeps_it_current(
    cli: Any, workspace: Path
) -> None:
    assert cli("--progress", "-p", TODO).code == 0
    path = workspace / PROGRESS_FILE
    written = parse_progress(path.read_text(encoding="utf-8"))
    assert written.task == TODO and written.todos.render() == CHECKLIST
    second = cli("--progress", stdin="/todos\ntodo [x] read the code; [~] fix it; test it\n")
    assert second.code == 0
    assert CHECKLIST in second.out.split("Updating my todo list.")[0]  # read before any prompt
    now = parse_progress(path.read_text(encoding="utf-8"))
    assert now.todos.summary() == "1/3 done · now: fix it" and now.task == TODO
    # The briefing went in front of the new session's first prompt, not instead of it.
    firsts = {p.stem: user_texts(load(p).messages)[0] for p in transcripts(workspace)}
    (session, first), *_ = [(s, t) for s, t in firsts.items() if t.startswith("<system-")]
    assert "0 of 3 steps done" in first
    assert first.endswith("\n\ntodo [x] read the code; [~] fix it; test it")
    sessions = Program(parser().parse_args([]), stdin=io.StringIO("")).sessions
    assert describe(sessions, session).endswith("todo [x] read the code; [~] fix it; test it")


def test_progress_takes_a_path_and_without_the_flag_there_is_no_file(
    cli: Any, workspace: Path
) -> None:
    assert cli("-p", TODO).code == 0
    assert not (workspace / PROGRESS_FILE).exists()
    assert cli("--progress", "notes/progress.md", "-p", TODO).code == 0
    assert CHECKLIST in (workspace / "notes" / "progress.md").read_text(encoding="utf-8")


def test_a_hostile_progress_file_is_one_warning_line_and_the_session_goes_on(
    cli: Any, workspace: Path
) -> None:
    hostile = {
        "binary.md": b"\x00\xff\xfe\x1b[2Jbinary",
        "prose.md": b"# Notes\n\nnothing to resume here\n",
    }
    (workspace / "folder.md").mkdir()
    for name, raw in [*hostile.items(), ("folder.md", None)]:
        if raw is not None:
            (workspace / name).write_bytes(raw)
        run = cli("--progress", name, stdin=f"{TODO}\n/todos\n")
        assert run.code == 0 and "Traceback" not in run.err
        (warning,) = run.err.strip().splitlines()
        assert warning.startswith(f"harness: the progress file {name} was not used: ")
        assert "left as it is" in warning
        assert CHECKLIST in run.out  # the session went on, with a list of its own
        if raw is not None:
            assert (workspace / name).read_bytes() == raw  # never written over


def test_a_progress_path_with_a_nul_is_a_usage_error(cli: Any) -> None:
    run = cli("--progress", "a\0b", "-p", "hi")
    assert run.code == Exit.USAGE and "--progress" in run.err


# --- the assembly --------------------------------------------------------------------------


def test_planning_sits_after_prompt_caching_shares_pinned_facts_and_is_named_in_the_prompt(
    workspace: Path,
) -> None:
    h = assembled(workspace)
    kinds = [type(p) for p in h.agent.plugins]
    assert kinds.index(Planning) == kinds.index(PromptCaching) + 1 < kinds.index(Recovery)
    assert h.auto.pinned is h.planning.pinned
    names = [t["name"] for t in h.agent.tools.definitions()]
    assert set(PLANNING_TOOLS) <= set(names)
    prompt = json.dumps(h.agent.request().system)
    assert "todo_write, exit_plan_mode" in prompt


def test_a_compaction_keeps_the_list(workspace: Path) -> None:
    h = assembled(workspace)
    list(h.agent.run(TODO))
    list(h.agent.run("list files"))
    compact(h.agent, pinned=h.auto.pinned, trigger="manual")
    found = list_in(h.agent.messages)
    assert found is not None and found.render() == CHECKLIST


def test_a_fork_may_not_write_its_parents_list(workspace: Path) -> None:
    h = assembled(workspace)
    (done,) = [e for e in h.agent.run("fork todo a; b") if isinstance(e, ToolFinished)]
    assert "todo_write was denied: deny rule todo_write" in done.content
    assert h.planning.todos.current.items == ()
    assert h.planning.todos.writes == 0


def test_the_todos_command_in_process(workspace: Path) -> None:
    h: Harness = assembled(workspace)
    console = Console(file=io.StringIO(), width=120, color_system=None)
    shell = Shell(h, console, Activity(console, enabled=False), lambda: assembled(workspace))
    assert dispatch(shell, "/todos") is True
    list(h.agent.run(TODO))
    assert dispatch(shell, "/TODOS") is True
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    assert printed.index("no todos yet") < printed.index(CHECKLIST)


# --- the demo model ------------------------------------------------------------------------


def _request(*content: m.Block) -> Request:
    return Request(
        model="claude-sonnet-4-6",
        max_tokens=1000,
        messages=[{"role": "user", "content": list(content)}],
        system=None,
        tools=None,
        extra={},
        input_tokens=0,
    )


def test_the_demo_model_reads_past_system_reminders() -> None:
    reminder = {"type": "text", "text": system_reminder(PLAN_MODE_REMINDER)}
    result = m.tool_result("toolu_1", "a.md")
    reply = demo_reply(_request(result, reminder))
    assert reply.tool_calls == ()  # it reports the result; "edit files" is not a prompt
    said = demo_reply(_request({"type": "text", "text": f"{reminder['text']}\n\nsearch TODO"}))
    assert [c.name for c in said.tool_calls] == ["grep"]


def test_the_demo_model_writes_a_todo_list_and_presents_a_plan() -> None:
    todo = demo_reply(_request({"type": "text", "text": "todo [x] a; b; [ ] c"}))
    ((name, arguments),) = [(c.name, c.input) for c in todo.tool_calls]
    assert name == "todo_write"
    assert [i["status"] for i in arguments["todos"]] == ["completed", "in_progress", "pending"]
    plan = demo_reply(_request({"type": "text", "text": "plan read it;  fix it ;"}))
    assert [(c.name, c.input) for c in plan.tool_calls] == [
        ("exit_plan_mode", {"plan": "1. read it\n2. fix it"})
    ]
