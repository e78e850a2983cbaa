"""One hook's answer read as Claude Code's current hooks reference says, and several combined.

The rules come from https://code.claude.com/docs/en/hooks ("Exit code output", "JSON output",
"Decision control", and each event's section), checked 2026-11-27 through the copy at
github.com/thevibeworks/claude-code-docs, commit 3f1ef7c2 (2026-08-22).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.events import HookReported, PromptRefused
from harness.model import reply
from harness.settings.combine import Ran, combine_pre_tool_use
from harness.settings.command import HookRun
from harness.settings.hooks import MAX_STOP_CONTINUATIONS, SettingsHooks
from harness.settings.protocol import HookAnswer, interpret
from harness.settings.schema import ConfiguredHook
from tests.test_settings_hooks import FakeRunner, hook, ok, reports, result_of, run, write


def pre(decision: str | None = None, reason: str | None = None, **more: Any) -> str:
    specific: dict[str, Any] = {"hookEventName": "PreToolUse", **more}
    if decision is not None:
        specific["permissionDecision"] = decision
    if reason is not None:
        specific["permissionDecisionReason"] = reason
    return json.dumps({"hookSpecificOutput": specific})


def write_then_ok() -> list[Any]:
    return [write("a.txt"), reply("ok")]


def read(code: int | None, stdout: str = "", stderr: str = "", event: str = "PreToolUse") -> Any:
    return interpret(event, HookRun(code, stdout, stderr), 5)


# --- one answer ------------------------------------------------------------------------------


def test_json_is_read_on_a_non_zero_exit_and_decides_alone() -> None:
    answer = read(1, pre("deny", "no deploys on Friday"), "exit 1 out of habit")

    assert answer.status == "success" and answer.blocks
    assert answer.block_reason == "no deploys on Friday"


def test_valid_json_on_exit_1_without_a_decision_is_not_an_error() -> None:
    answer = read(1, '{"systemMessage": "checked"}', "oops")

    assert answer.status == "success" and answer.system_message == "checked"
    assert not answer.blocks and answer.permission_decision is None


@pytest.mark.parametrize(
    ("stdout", "stderr", "reason"),
    [
        (pre("allow", "fine by me"), "rm is not allowed", "rm is not allowed"),
        (pre("deny", "use trash/"), "blocked", "use trash/"),
        (pre("deny"), "  no force pushes \n", "no force pushes"),
        (pre("maybe"), "blocked anyway", "blocked anyway"),
        ('{"decision": "block", "reason": "deprecated spelling"}', "x", "deprecated spelling"),
        ("checking...\n", "Blocked: force push", "Blocked: force push"),
        ("", "", "No stderr output"),
    ],
)
def test_exit_2_always_blocks_with_the_jsons_reason_or_stderr(
    stdout: str, stderr: str, reason: str
) -> None:
    answer = read(2, stdout, stderr)

    assert answer.status == "blocking" and answer.blocks
    assert answer.block_reason == reason


def test_exit_2_with_json_that_fails_validation_blocks_and_keeps_the_validation_message() -> None:
    answer = read(2, pre("maybe"), "blocked anyway")

    assert answer.blocks and "permissionDecision" in answer.problem


def test_exit_2_still_reads_the_other_json_fields() -> None:
    answer = read(2, '{"continue": false, "stopReason": "build broke"}', "no", "Stop")

    assert answer.blocks and not answer.continue_ and answer.stop_reason == "build broke"


@pytest.mark.parametrize("event", ["SessionStart", "SessionEnd"])
def test_exit_2_on_an_event_that_cannot_block_only_shows_stderr(event: str) -> None:
    answer = read(2, "", "no network", event)

    assert answer.status == "non_blocking_error" and not answer.blocks
    assert "no network" in answer.problem


@pytest.mark.parametrize(
    ("code", "stdout", "stderr", "words"),
    [
        (1, "", "guard.py: no config\nTraceback", "status code: guard.py: no config (exit 1)"),
        (127, "", "/bin/sh: 1: guard.sh: not found\n", "status code: /bin/sh: 1: guard.sh"),
        (1, "", "\n\n  disk full  \nmore", "status code: disk full (exit 1)"),
        (3, "", "", "status code: No stderr output (exit 3)"),
        (1, "{not json", "bad output", "status code: bad output"),
        (1, '["deny"]', "no", "status code: no"),
        (1, "all fine", "", "status code: No stderr output"),
    ],
)
def test_another_code_without_a_json_answer_is_a_non_blocking_error(
    code: int, stdout: str, stderr: str, words: str
) -> None:
    answer = read(code, stdout, stderr)

    assert answer.status == "non_blocking_error" and not answer.blocks
    assert answer.problem.startswith("Failed with non-blocking status code:")
    assert words in answer.problem


@pytest.mark.parametrize("code", [0, 1])
def test_json_that_fails_validation_is_a_non_blocking_error_with_the_validation_message(
    code: int,
) -> None:
    answer = read(code, '{"hookSpecificOutput": "deny"}', "guard: unsure")

    assert answer.status == "non_blocking_error" and not answer.blocks
    assert "hookSpecificOutput: expected object" in answer.problem


@pytest.mark.parametrize("stdout", ["{not json", '["deny"]', '"deny"', "  {" * 3])
def test_stdout_that_is_not_a_json_object_is_plain_text(stdout: str) -> None:
    assert read(0, stdout).status == "success"
    assert read(0, stdout, event="UserPromptSubmit").context == stdout.strip()


def test_plain_text_is_context_only_for_prompt_and_session_start() -> None:
    assert read(0, "hi", event="UserPromptSubmit").context == "hi"
    assert read(0, "hi", event="SessionStart").context == "hi"
    assert read(0, "hi", event="Stop").context == ""
    assert read(1, "hi", "no", event="UserPromptSubmit").context == ""


def test_a_timed_out_hook_renders_no_decision() -> None:
    answer = interpret("PreToolUse", HookRun(None, pre("deny", "late"), timed_out=True), 5)

    assert answer.status == "non_blocking_error" and not answer.blocks
    assert answer.permission_decision is None and "timed out after 5 s" in answer.problem


def test_defer_is_a_valid_permission_decision() -> None:
    answer = read(0, pre("defer"))

    assert answer.status == "success" and answer.permission_decision == "defer"


def test_the_deprecated_approve_means_allow_only_for_pre_tool_use() -> None:
    assert read(0, '{"decision": "approve"}').permission_decision == "allow"
    assert read(0, '{"decision": "approve"}', event="Stop").permission_decision is None


@given(
    code=st.one_of(st.none(), st.integers(-64, 300)),
    stdout=st.text(max_size=200) | st.builds(json.dumps, st.dictionaries(st.text(), st.text())),
    stderr=st.text(max_size=100),
    event=st.sampled_from(["PreToolUse", "PostToolUse", "Stop", "SessionStart", "PreCompact"]),
)
def test_exit_2_blocks_and_nothing_else_blocks_without_saying_so(
    code: int | None, stdout: str, stderr: str, event: str
) -> None:
    answer = interpret(event, HookRun(code, stdout, stderr))

    if code == 2 and event != "SessionStart":
        assert answer.blocks and answer.block_reason
    if answer.blocks:
        assert code == 2 or answer.decision == "block" or answer.permission_decision == "deny"


# --- several answers to one call ----------------------------------------------------------------


def ran(answer: HookAnswer, command: str = "h") -> Ran:
    hook = ConfiguredHook("PreToolUse", "", command, 5.0, Path("s.json"), "project")
    return Ran(hook, HookRun(0), answer)


def said(decision: str, reason: str = "", **more: Any) -> HookAnswer:
    return interpret("PreToolUse", HookRun(0, pre(decision, reason or None, **more)))


@pytest.mark.parametrize(
    ("decisions", "winner"),
    [
        (["allow", "ask"], "ask"),
        (["ask", "allow"], "ask"),
        (["allow", "defer", "ask"], "defer"),
        (["defer", "deny"], "deny"),
        (["allow"], "allow"),
    ],
)
def test_precedence_is_deny_then_defer_then_ask_then_allow(
    decisions: list[str], winner: str
) -> None:
    combined = combine_pre_tool_use([ran(said(d), f"h{i}") for i, d in enumerate(decisions)])

    if winner == "deny":
        assert combined.denials and combined.decision is None
    elif winner == "defer":
        assert combined.deferred and combined.decision is None and not combined.denials
    else:
        assert combined.decision == winner and not combined.deferred


def test_a_deferring_hooks_input_and_context_are_ignored() -> None:
    combined = combine_pre_tool_use(
        [ran(said("defer", updatedInput={"command": "x"}, additionalContext="c"))]
    )

    assert combined.updated_input is None and combined.contexts == ()


def test_only_the_winning_decisions_reasons_go_to_the_user() -> None:
    combined = combine_pre_tool_use([ran(said("allow", "safe"), "a"), ran(said("ask", "prod"))])

    assert combined.decision == "ask" and combined.reason == "prod"


# --- on real runs --------------------------------------------------------------------------------


def test_a_json_deny_on_exit_1_refuses_the_call(tmp_path: Path) -> None:
    answers = {"h": HookRun(1, pre("deny", "frozen"), "habit")}
    agent, _, events, _ = run(tmp_path, [hook("PreToolUse", "h")], answers, write_then_ok())

    assert not (tmp_path / "a.txt").exists()
    assert "frozen" in str(result_of(agent)["content"])
    assert next(r.outcome for r in reports(events, "PreToolUse")) == "success"


def test_exit_2_with_a_json_allow_still_refuses_the_call(tmp_path: Path) -> None:
    answers = {"h": HookRun(2, pre("allow", "fine"), "rm is not allowed")}
    agent, _, _, _ = run(tmp_path, [hook("PreToolUse", "h")], answers, write_then_ok())

    assert not (tmp_path / "a.txt").exists()
    assert "rm is not allowed" in str(result_of(agent)["content"])


def test_a_defer_is_reported_and_the_call_goes_ahead(tmp_path: Path) -> None:
    answers = {"h": ok(pre("defer"))}
    _, _, events, _ = run(tmp_path, [hook("PreToolUse", "h")], answers, write_then_ok())

    assert (tmp_path / "a.txt").exists()
    assert any("defer" in r.detail for r in reports(events, "PreToolUse"))


def test_exit_2_with_invalid_json_still_refuses_the_prompt(tmp_path: Path) -> None:
    answers = {"h": HookRun(2, '{"decision": 7}', "no secrets in prompts")}
    _, model, events, _ = run(tmp_path, [hook("UserPromptSubmit", "h")], answers, [reply("ok")])

    assert model.requests == []
    (refused,) = [e for e in events if isinstance(e, PromptRefused)]
    assert "no secrets in prompts" in refused.reason


def test_text_that_only_looks_like_json_is_prompt_context(tmp_path: Path) -> None:
    answers = {"h": ok("{branch: main}")}
    _, model, _, _ = run(tmp_path, [hook("UserPromptSubmit", "h")], answers, [reply("ok")])

    assert "{branch: main}" in json.dumps(model.requests[0].messages[-1]["content"])


def test_stop_context_sends_the_model_back_as_feedback(tmp_path: Path) -> None:
    stop = json.dumps(
        {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "run the tests"}}
    )
    calls = iter([ok(stop), ok()])
    _, model, events, _ = run(
        tmp_path,
        [hook("Stop", "h")],
        {"h": lambda call: next(calls)},
        [reply("done"), reply("tested")],
    )

    assert len(model.requests) == 2
    continued = [r for r in reports(events, "Stop") if r.outcome == "continued"]
    assert continued and "Stop hook feedback" in continued[0].detail
    assert "run the tests" in continued[0].detail


def test_stop_hooks_send_the_model_back_eight_times_in_a_row_at_most(tmp_path: Path) -> None:
    answers = {"h": HookRun(2, "", "not yet")}
    script: list[Any] = [reply("again") for _ in range(MAX_STOP_CONTINUATIONS + 3)]
    _, model, events, _ = run(tmp_path, [hook("Stop", "h")], answers, script)

    assert len(model.requests) == MAX_STOP_CONTINUATIONS + 1
    last = [r for r in reports(events, "Stop") if isinstance(r, HookReported)][-1]
    assert last.outcome == "stopped the run" and "8 times in a row" in last.detail


def test_post_tool_use_can_replace_the_result_in_our_response_shape(tmp_path: Path) -> None:
    output = {"hookEventName": "PostToolUse", "updatedToolOutput": {"output": "[redacted]"}}
    answers = {"h": ok(json.dumps({"hookSpecificOutput": output}))}
    agent, _, _, _ = run(tmp_path, [hook("PostToolUse", "h")], answers, write_then_ok())

    assert result_of(agent)["content"] == "[redacted]"


def test_an_updated_tool_output_of_another_shape_is_ignored(tmp_path: Path) -> None:
    output = {"hookEventName": "PostToolUse", "updatedToolOutput": {"stdout": "x"}}
    answers = {"h": ok(json.dumps({"hookSpecificOutput": output}))}
    agent, _, _, _ = run(tmp_path, [hook("PostToolUse", "h")], answers, write_then_ok())

    assert "[redacted]" not in str(result_of(agent)["content"])
    assert "a.txt" in str(result_of(agent)["content"])


def test_a_system_message_from_session_end_is_discarded(tmp_path: Path) -> None:
    runner = FakeRunner({"h": ok('{"systemMessage": "bye now"}')})
    settings = SettingsHooks(
        [hook("SessionEnd", "h")], workspace=tmp_path, session_id="s", runner=runner
    )

    (report,) = settings.end_session("logout")

    assert isinstance(report, HookReported) and "bye now" not in report.detail
    assert runner.sent("h")[0]["reason"] == "logout"


def test_an_identical_command_runs_once_with_the_last_entrys_timeout(tmp_path: Path) -> None:
    first = ConfiguredHook("Stop", "", "h", 5.0, Path("a.json"), "user")
    last = ConfiguredHook("Stop", "", "h", 9.0, Path("b.json"), "project")
    runner = FakeRunner({"h": ok()})
    settings = SettingsHooks([first, last], workspace=tmp_path, session_id="s", runner=runner)

    ran, _ = settings.run_event("Stop", {}, None)

    assert [call.timeout for call in runner.calls] == [9.0] and len(ran) == 1
