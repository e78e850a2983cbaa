"""Running one command hook for real: stdin, where, environment, exit codes, hangs, floods.

Each test starts a real ``/bin/sh``; none asserts a duration. The hang test gives a command
that sleeps 30 s a 0.5 s timeout and checks the outcome, not the clock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.events import HookReported, TurnEnded
from harness.model import ScriptedModel, reply, tool_call
from harness.settings.command import HookCall, run_command
from harness.settings.hooks import MAX_CONTEXT_CHARS, SettingsHooks
from harness.settings.schema import ConfiguredHook
from harness.tools.builtins import builtin_tools
from harness.tools.hooks import Hooks
from harness.tools.permissions import Permissions


def call(command: str, cwd: Path, *, stdin: str = "{}", timeout: float = 20.0) -> HookCall:
    return HookCall(command, stdin, cwd, timeout, {"CLAUDE_PROJECT_DIR": str(cwd)})


def test_the_event_json_arrives_on_stdin_in_the_project_folder(tmp_path: Path) -> None:
    payload = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "x": "é"})

    run = run_command(call('cat; pwd; echo "$CLAUDE_PROJECT_DIR"', tmp_path, stdin=payload))

    lines = run.stdout.splitlines()
    assert json.loads(lines[0]) == json.loads(payload)
    assert lines[1:] == [str(tmp_path), str(tmp_path)]
    assert run.exit_code == 0


def test_the_exit_code_and_stderr_come_back(tmp_path: Path) -> None:
    run = run_command(call("echo blocked >&2; exit 2", tmp_path))

    assert (run.exit_code, run.stderr, run.timed_out) == (2, "blocked\n", False)


def test_a_hook_that_hangs_is_killed_at_its_timeout(tmp_path: Path) -> None:
    run = run_command(call("sleep 30", tmp_path, timeout=0.5))

    assert run.timed_out and run.exit_code is None


def test_a_flood_of_output_is_read_but_only_the_cap_is_kept(tmp_path: Path) -> None:
    run = run_command(
        call("yes | head -c 200000; yes e | head -c 5000 >&2", tmp_path), max_output=1000
    )

    assert len(run.stdout) == 1000 and run.stdout_dropped == 199_000
    assert len(run.stderr) == 1000 and run.stderr_dropped == 4000
    assert run.exit_code == 0


def test_output_that_is_not_utf8_is_replaced_not_raised(tmp_path: Path) -> None:
    run = run_command(call(r"printf 'ok\377\376'", tmp_path))

    assert run.stdout.startswith("ok") and "\ufffd" in run.stdout


def test_a_command_that_cannot_start_says_why(tmp_path: Path) -> None:
    run = run_command(call("true", tmp_path / "missing"))

    assert run.exit_code is None and "could not start" in run.error


def test_a_hook_killed_by_a_signal_reports_it(tmp_path: Path) -> None:
    run = run_command(call("kill -9 $$", tmp_path))

    assert run.exit_code == -9


def test_a_hook_that_ignores_a_large_stdin_still_finishes(tmp_path: Path) -> None:
    run = run_command(call("exit 0", tmp_path, stdin="x" * 2_000_000))

    assert run.exit_code == 0


def test_a_child_left_in_the_background_does_not_hold_the_hook(tmp_path: Path) -> None:
    run = run_command(call("sleep 30 & echo started", tmp_path))

    assert (run.exit_code, run.stdout, run.timed_out) == (0, "started\n", False)


def test_the_anthropic_key_and_otel_exporters_stay_out_of_a_hooks_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector")
    monkeypatch.setenv("SOME_SETTING", "kept")

    command = 'echo "${ANTHROPIC_API_KEY:-none} ${OTEL_EXPORTER_OTLP_ENDPOINT:-none} $SOME_SETTING"'
    run = run_command(call(command, tmp_path))

    assert run.stdout == "none none kept\n"


def real_run(tmp_path: Path, configured: list[ConfiguredHook], prompt: str = "go") -> Any:
    settings = SettingsHooks(configured, workspace=tmp_path, session_id="s")
    agent = Agent(
        ScriptedModel(
            [reply(tool_calls=[tool_call("write_file", path="a.txt", content="x")]), reply("ok")]
        ),
        tools=builtin_tools(),
        workspace=tmp_path,
        clock=FakeClock(),
        hooks=settings.install(Hooks()),
        plugins=[settings],
        permissions=Permissions(mode="bypass"),
    )
    return agent, list(agent.run(prompt))


def test_a_hanging_hook_on_a_real_run_times_out_and_the_call_goes_ahead(tmp_path: Path) -> None:
    hang = ConfiguredHook("PreToolUse", "Write", "sleep 30", 0.5, tmp_path / "s.json", "user")

    _, events = real_run(tmp_path, [hang])

    (report,) = [e for e in events if isinstance(e, HookReported)]
    assert report.outcome == "timed out" and "0.5 s" in report.detail
    assert (tmp_path / "a.txt").exists()
    assert isinstance(events[-1], TurnEnded)


def test_a_flooding_prompt_hook_adds_only_a_capped_context(tmp_path: Path) -> None:
    flood = ConfiguredHook(
        "UserPromptSubmit", "", "yes | head -c 3000000", 20.0, tmp_path / "s.json", "user"
    )

    agent, events = real_run(tmp_path, [flood])

    context = m.blocks(agent.messages[0])[1]["text"]
    assert len(context) < MAX_CONTEXT_CHARS + 100
    (report,) = [e for e in events if isinstance(e, HookReported)]
    assert "output cut" in report.detail
    assert isinstance(events[-1], TurnEnded)
