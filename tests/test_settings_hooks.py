"""Hooks from settings files on real agent runs, with an injected runner (no processes).

Each test scripts the model (``ScriptedModel``) and the hooks' answers (a fake runner that
returns a :class:`HookRun` per command), and checks what Claude Code's protocol says should
happen: who is told what, and that the run always goes on.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.summary import CompactionError, compact, summarise
from harness.events import (
    Event,
    HookReported,
    PermissionDecided,
    PromptRefused,
    ToolFinished,
    TurnEnded,
)
from harness.model import ScriptedModel, reply, tool_call
from harness.settings.command import HookCall, HookRun
from harness.settings.hooks import SettingsHooks
from harness.settings.schema import ConfiguredHook
from harness.tools.builtins import builtin_tools
from harness.tools.hooks import Hooks
from harness.tools.permissions import Approval, ApprovalRequest, Permissions

SESSION = "session-1"


def hook(event: str, command: str, matcher: str = "", scope: str = "project") -> ConfiguredHook:
    return ConfiguredHook(event, matcher, command, 5.0, Path("settings.json"), scope)  # type: ignore[arg-type]


def ok(stdout: str = "", stderr: str = "") -> HookRun:
    return HookRun(0, stdout, stderr)


class FakeRunner:
    """Answers each command with a fixed :class:`HookRun`; records what each was sent."""

    def __init__(self, answers: Mapping[str, HookRun | Callable[[HookCall], HookRun]]) -> None:
        self.answers = answers
        self.calls: list[HookCall] = []
        self.lock = threading.Lock()

    def __call__(self, call: HookCall) -> HookRun:
        with self.lock:
            self.calls.append(call)
        answer = self.answers[call.command]
        return answer(call) if callable(answer) else answer

    def sent(self, command: str) -> list[dict[str, Any]]:
        return [json.loads(c.stdin) for c in self.calls if c.command == command]


def run(
    tmp_path: Path,
    hooks: Sequence[ConfiguredHook],
    answers: Mapping[str, HookRun | Callable[[HookCall], HookRun]],
    script: list[Any],
    *,
    prompt: str = "go",
    permissions: Permissions | None = None,
    approver: Callable[[ApprovalRequest], Any] | None = None,
    allows: Callable[[ConfiguredHook], bool] = lambda h: True,
) -> tuple[Agent, ScriptedModel, list[Event], FakeRunner]:
    runner = FakeRunner(answers)
    settings = SettingsHooks(
        hooks,
        workspace=tmp_path,
        session_id=SESSION,
        transcript_path=tmp_path / "t.jsonl",
        runner=runner,
        allows=allows,
    )
    model = ScriptedModel(script)
    kwargs: dict[str, Any] = {}
    if approver is not None:
        kwargs["approver"] = approver
    agent = Agent(
        model,
        tools=builtin_tools(),
        workspace=tmp_path,
        clock=FakeClock(),
        hooks=settings.install(Hooks()),
        plugins=[settings],
        permissions=permissions or Permissions(mode="bypass"),
        **kwargs,
    )
    events = list(agent.run(prompt))
    assert not agent.messages or m.validate(agent.messages) == []
    return agent, model, events, runner


def reports(events: list[Event], event: str | None = None) -> list[HookReported]:
    return [e for e in events if isinstance(e, HookReported) and event in (None, e.hook)]


def result_of(agent: Agent, index: int = 2) -> m.Block:
    return m.tool_results(agent.messages[index])[0]


def write(path: str, content: str = "x") -> Any:
    return reply(tool_calls=[tool_call("write_file", path=path, content=content)])


# --- PreToolUse ---------------------------------------------------------------------------


def test_exit_2_from_a_pre_tool_use_hook_blocks_the_call_and_tells_the_model(
    tmp_path: Path,
) -> None:
    hooks = [hook("PreToolUse", "guard", "Bash")]
    answers = {"guard": HookRun(2, "ignored stdout", "no rm here\n")}
    script = [reply(tool_calls=[tool_call("bash", command="touch made")]), reply("ok")]

    agent, _, events, _ = run(tmp_path, hooks, answers, script)

    assert not (tmp_path / "made").exists()
    result = result_of(agent)
    assert result["is_error"] is True
    assert "[guard]: no rm here" in str(result["content"])
    assert "ignored stdout" not in str(result["content"])
    assert [r.outcome for r in reports(events, "PreToolUse")] == ["blocking error", "blocked"]
    assert isinstance(events[-1], TurnEnded)


@pytest.mark.parametrize(
    ("matcher", "runs"),
    [("Bash", True), ("bash", True), ("Ba.*", True), ("*", True), ("", True), ("Read", False)],
)
def test_a_matcher_selects_a_tool_by_claude_codes_name_or_ours(
    tmp_path: Path, matcher: str, runs: bool
) -> None:
    hooks = [hook("PreToolUse", "h", matcher)]
    script = [reply(tool_calls=[tool_call("bash", command="true")]), reply("ok")]

    _, _, _, runner = run(tmp_path, hooks, {"h": ok()}, script)

    assert bool(runner.calls) is runs


def test_the_hook_reads_the_call_as_claude_code_would_send_it(tmp_path: Path) -> None:
    hooks = [hook("PreToolUse", "h", "Edit|Write")]
    script = [write("src/a.py", "x = 1\n"), reply("ok")]

    _, _, _, runner = run(tmp_path, hooks, {"h": ok()}, script)

    (sent,) = runner.sent("h")
    assert sent["hook_event_name"] == "PreToolUse"
    assert sent["tool_name"] == "Write"
    assert sent["tool_input"] == {
        "file_path": str(tmp_path.resolve() / "src/a.py"),
        "content": "x = 1\n",
    }
    assert sent["session_id"] == SESSION
    assert sent["cwd"] == str(tmp_path.resolve())
    assert sent["transcript_path"] == str(tmp_path / "t.jsonl")
    assert sent["tool_use_id"]
    assert runner.calls[0].env["CLAUDE_PROJECT_DIR"] == str(tmp_path.resolve())
    assert runner.calls[0].cwd == tmp_path.resolve()


def test_updated_input_in_claude_codes_shape_changes_our_call(tmp_path: Path) -> None:
    new = {"file_path": str(tmp_path.resolve() / "elsewhere.txt"), "content": "changed"}
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": new}}
    hooks = [hook("PreToolUse", "h", "Write")]
    script = [write("a.txt", "original"), reply("ok")]

    _, _, events, _ = run(tmp_path, hooks, {"h": ok(json.dumps(out))}, script)

    assert not (tmp_path / "a.txt").exists()
    assert (tmp_path / "elsewhere.txt").read_text() == "changed"
    assert "changed input" in [r.outcome for r in reports(events)]


def recording_approver(asked: list[ApprovalRequest], answer: bool = True) -> Any:
    def approve(request: ApprovalRequest) -> Approval:
        asked.append(request)
        return Approval(answer)

    return approve


def decision(value: str, reason: str = "policy") -> HookRun:
    out = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": value,
            "permissionDecisionReason": reason,
        }
    }
    return ok(json.dumps(out))


def test_a_hooks_allow_skips_the_question_the_mode_would_ask(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []
    script = [write("a.txt"), reply("ok")]

    _, _, events, _ = run(
        tmp_path,
        [hook("PreToolUse", "h", "Write")],
        {"h": decision("allow")},
        script,
        permissions=Permissions(mode="default"),
        approver=recording_approver(asked),
    )

    assert asked == []
    assert (tmp_path / "a.txt").exists()
    (decided,) = [e for e in events if isinstance(e, PermissionDecided)]
    assert decided.decision == "allow" and "PreToolUse hook allowed" in decided.reason


@pytest.mark.parametrize("rules", [{"deny": ["write_file"]}, {"ask": ["write_file(a.txt)"]}])
def test_a_deny_or_ask_rule_still_wins_over_a_hooks_allow(
    tmp_path: Path, rules: dict[str, list[str]]
) -> None:
    asked: list[ApprovalRequest] = []

    _, _, events, _ = run(
        tmp_path,
        [hook("PreToolUse", "h", "Write")],
        {"h": decision("allow")},
        [write("a.txt"), reply("ok")],
        permissions=Permissions.from_rules(
            "default", deny=rules.get("deny", ()), ask=rules.get("ask", ())
        ),
        approver=recording_approver(asked, answer=False),
    )

    assert not (tmp_path / "a.txt").exists()
    (decided,) = [e for e in events if isinstance(e, PermissionDecided)]
    assert decided.decision == "deny"
    assert len(asked) == ("ask" in rules)


def test_a_hooks_ask_asks_even_when_the_rules_allow(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    run(
        tmp_path,
        [hook("PreToolUse", "h", "Write")],
        {"h": decision("ask", "check this one")},
        [write("a.txt"), reply("ok")],
        approver=recording_approver(asked, answer=False),
    )

    assert len(asked) == 1 and "check this one" in asked[0].reason
    assert not (tmp_path / "a.txt").exists()


def test_deny_beats_ask_beats_allow_whatever_order_the_hooks_are_in(tmp_path: Path) -> None:
    hooks = [hook("PreToolUse", c, "Write") for c in ("a", "b", "c")]
    answers: dict[str, Any] = {
        "a": decision("allow"),
        "b": decision("deny", "no"),
        "c": decision("ask"),
    }

    agent, _, _, _ = run(tmp_path, hooks, answers, [write("a.txt"), reply("ok")])

    assert not (tmp_path / "a.txt").exists()
    assert "[b]: no" in str(result_of(agent)["content"])


@pytest.mark.parametrize(("spelling", "runs"), [("approve", True), ("block", False)])
def test_the_deprecated_decision_spellings_still_work(
    tmp_path: Path, spelling: str, runs: bool
) -> None:
    asked: list[ApprovalRequest] = []
    out = json.dumps({"decision": spelling, "reason": "old style"})

    run(
        tmp_path,
        [hook("PreToolUse", "h", "Write")],
        {"h": ok(out)},
        [write("a.txt"), reply("ok")],
        permissions=Permissions(mode="default"),
        approver=recording_approver(asked, answer=False),
    )

    assert (tmp_path / "a.txt").exists() is runs
    assert asked == []


def test_continue_false_stops_the_run_before_the_next_model_call(tmp_path: Path) -> None:
    out = json.dumps({"continue": False, "stopReason": "enough for today"})

    _, model, events, _ = run(
        tmp_path, [hook("PreToolUse", "h")], {"h": ok(out)}, [write("a.txt"), reply("never")]
    )

    assert len(model.requests) == 1
    assert isinstance(events[-1], HookReported)
    assert events[-1].outcome == "stopped the run" and "enough for today" in events[-1].detail


# --- PostToolUse --------------------------------------------------------------------------


def test_post_tool_use_feedback_and_context_follow_the_result(tmp_path: Path) -> None:
    context = {
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "lint: ok"}
    }
    hooks = [hook("PostToolUse", "fb", "Write"), hook("PostToolUse", "ctx", "Edit|Write")]
    answers: dict[str, Any] = {
        "fb": HookRun(2, "", "line too long"),
        "ctx": ok(json.dumps(context)),
    }

    agent, _, _, _ = run(tmp_path, hooks, answers, [write("a.txt", "hi"), reply("ok")])

    content = str(result_of(agent)["content"])
    assert (tmp_path / "a.txt").read_text() == "hi"  # it ran: the hook comes after
    assert content.index("PostToolUse:Write hook feedback: [fb]: line too long") < content.index(
        "lint: ok"
    )


def test_post_tool_use_hooks_skip_a_call_that_failed(tmp_path: Path) -> None:
    script = [reply(tool_calls=[tool_call("read_file", path="missing.txt")]), reply("ok")]

    _, _, _, runner = run(tmp_path, [hook("PostToolUse", "h")], {"h": ok()}, script)

    assert runner.calls == []


def test_post_tool_use_gets_the_tool_response(tmp_path: Path) -> None:
    _, _, _, runner = run(
        tmp_path, [hook("PostToolUse", "h", "Write")], {"h": ok()}, [write("a.txt"), reply("ok")]
    )

    (sent,) = runner.sent("h")
    assert sent["tool_response"]["filePath"] == str(tmp_path.resolve() / "a.txt")
    assert sent["tool_input"]["file_path"] == str(tmp_path.resolve() / "a.txt")


# --- UserPromptSubmit and SessionStart -----------------------------------------------------


def test_exit_2_from_user_prompt_submit_refuses_the_prompt(tmp_path: Path) -> None:
    _, model, events, _ = run(
        tmp_path, [hook("UserPromptSubmit", "h")], {"h": HookRun(2, "", "not now")}, []
    )

    assert model.requests == []
    refused = [e for e in events if isinstance(e, PromptRefused)]
    assert len(refused) == 1 and "not now" in refused[0].reason


def test_plain_stdout_of_user_prompt_submit_and_session_start_is_context(tmp_path: Path) -> None:
    hooks = [hook("SessionStart", "start", "startup"), hook("UserPromptSubmit", "prompt")]
    answers: dict[str, Any] = {"start": ok("project rules\n"), "prompt": ok("the time is noon")}

    agent, _, _, runner = run(tmp_path, hooks, answers, [reply("ok")], prompt="hello")

    texts = [b["text"] for b in m.blocks(agent.messages[0])]
    assert texts == ["hello", "project rules\n\nthe time is noon"]
    assert runner.sent("start")[0]["source"] == "startup"
    assert runner.sent("prompt")[0]["prompt"] == "hello"


def test_session_start_runs_once_and_says_resume_for_a_conversation_that_exists(
    tmp_path: Path,
) -> None:
    runner = FakeRunner({"start": ok("ctx")})
    settings = SettingsHooks(
        [hook("SessionStart", "start")], workspace=tmp_path, session_id=SESSION, runner=runner
    )
    agent = Agent(
        ScriptedModel([reply("one"), reply("two")]),
        workspace=tmp_path,
        clock=FakeClock(),
        plugins=[settings],
    )
    agent.messages = [m.user("earlier"), m.assistant("yes")]

    list(agent.run("a"))
    list(agent.run("b"))

    assert [s["source"] for s in runner.sent("start")] == ["resume"]


def test_a_json_block_from_user_prompt_submit_shows_the_reason(tmp_path: Path) -> None:
    out = json.dumps({"decision": "block", "reason": "no secrets please"})

    _, _, events, _ = run(tmp_path, [hook("UserPromptSubmit", "h")], {"h": ok(out)}, [])

    (refused,) = [e for e in events if isinstance(e, PromptRefused)]
    assert "no secrets please" in refused.reason


# --- Stop ---------------------------------------------------------------------------------


def test_a_stop_hook_sends_the_model_back_once_and_says_it_is_active(tmp_path: Path) -> None:
    def answer(call: HookCall) -> HookRun:
        active = json.loads(call.stdin)["stop_hook_active"]
        return ok() if active else HookRun(2, "", "run the tests first")

    agent, model, events, runner = run(
        tmp_path, [hook("Stop", "h")], {"h": answer}, [reply("done"), reply("tests pass")]
    )

    assert [s["stop_hook_active"] for s in runner.sent("h")] == [False, True]
    assert runner.sent("h")[0]["last_assistant_message"] == "done"
    assert "Stop hook feedback:\n[h]: run the tests first" in str(agent.messages[2]["content"])
    assert len(model.requests) == 2
    assert isinstance(events[-1], TurnEnded)


def test_continue_false_from_a_stop_hook_wins_over_its_block(tmp_path: Path) -> None:
    out = json.dumps({"decision": "block", "reason": "more", "continue": False})

    _, model, _, _ = run(tmp_path, [hook("Stop", "h")], {"h": ok(out)}, [reply("done")])

    assert len(model.requests) == 1


# --- PreCompact and SessionEnd ------------------------------------------------------------


def compaction_agent(tmp_path: Path, answers: dict[str, Any], matcher: str = "") -> Agent:
    runner = FakeRunner(answers)
    settings = SettingsHooks(
        [hook("PreCompact", "h", matcher)], workspace=tmp_path, session_id=SESSION, runner=runner
    )
    agent = Agent(
        ScriptedModel([reply("first"), reply("<summary>what happened</summary>")]),
        workspace=tmp_path,
        clock=FakeClock(),
        plugins=[settings],
    )
    list(agent.run("go"))
    return agent


def test_a_pre_compact_block_stops_a_manual_compaction(tmp_path: Path) -> None:
    agent = compaction_agent(tmp_path, {"h": HookRun(2, "", "not yet")}, "manual")
    before = list(agent.messages)

    with pytest.raises(CompactionError, match="not yet"):
        compact(agent)

    assert agent.messages == before


def test_pre_compact_output_adds_to_the_summary_instructions(tmp_path: Path) -> None:
    agent = compaction_agent(tmp_path, {"h": ok("keep the file list")})

    compact(agent, instructions="focus on tests")

    request = agent.model.requests[-1]  # type: ignore[attr-defined]
    last = m.blocks(request.messages[-1])[-1]["text"]
    assert "focus on tests" in last and "keep the file list" in last


def test_a_pre_compact_hook_for_auto_does_not_run_for_manual(tmp_path: Path) -> None:
    agent = compaction_agent(tmp_path, {"h": HookRun(2, "", "never")}, "auto")

    compact(agent)  # not blocked: the hook is for "auto" only

    assert "what happened" in str(agent.messages[0]["content"])


def test_session_end_hooks_run_with_the_reason(tmp_path: Path) -> None:
    runner = FakeRunner({"h": ok()})
    settings = SettingsHooks(
        [hook("SessionEnd", "h", "other")], workspace=tmp_path, session_id=SESSION, runner=runner
    )

    events = settings.end_session()

    assert runner.sent("h")[0]["reason"] == "other"
    assert [e.outcome for e in events if isinstance(e, HookReported)] == ["success"]


# --- running several, trust, failures -------------------------------------------------------


def test_hooks_of_one_event_run_at_the_same_time(tmp_path: Path) -> None:
    both = threading.Barrier(2, timeout=30)  # a serial run would break it (never a wait here)

    def meet(call: HookCall) -> HookRun:
        both.wait()
        return ok()

    hooks = [hook("PreToolUse", "a"), hook("PreToolUse", "b")]
    _, _, events, _ = run(tmp_path, hooks, {"a": meet, "b": meet}, [write("x"), reply("ok")])

    assert [r.outcome for r in reports(events, "PreToolUse")] == ["success", "success"]


def test_answers_combine_in_settings_order_whichever_finishes_first(tmp_path: Path) -> None:
    first_done = threading.Event()

    def slow(call: HookCall) -> HookRun:
        first_done.wait(30)
        return HookRun(2, "", "first")

    def fast(call: HookCall) -> HookRun:
        first_done.set()
        return HookRun(2, "", "second")

    hooks = [hook("PreToolUse", "slow"), hook("PreToolUse", "fast")]
    agent, _, _, _ = run(tmp_path, hooks, {"slow": slow, "fast": fast}, [write("x"), reply("ok")])

    content = str(result_of(agent)["content"])
    assert content.index("first") < content.index("second")


def test_identical_commands_run_once(tmp_path: Path) -> None:
    hooks = [hook("PreToolUse", "h", "Write"), hook("PreToolUse", "h", "*")]

    _, _, _, runner = run(tmp_path, hooks, {"h": ok()}, [write("x"), reply("ok")])

    assert len(runner.calls) == 1


def test_a_hook_the_trust_gate_refuses_never_runs_and_is_reported_once(tmp_path: Path) -> None:
    script = [write("a"), write("b"), reply("ok")]

    _, _, events, runner = run(
        tmp_path, [hook("PreToolUse", "h")], {"h": ok()}, script, allows=lambda h: False
    )

    assert runner.calls == []
    assert [r.outcome for r in reports(events)] == ["skipped"]
    assert (tmp_path / "a").exists() and (tmp_path / "b").exists()


def test_a_trust_gate_that_raises_counts_as_a_refusal(tmp_path: Path) -> None:
    def broken(h: ConfiguredHook) -> bool:
        raise OSError("trust file unreadable")

    _, _, events, runner = run(
        tmp_path, [hook("PreToolUse", "h")], {"h": ok()}, [write("a"), reply("ok")], allows=broken
    )

    assert runner.calls == []
    assert "trust file unreadable" in reports(events)[0].detail


@pytest.mark.parametrize(
    ("answer", "outcome", "words"),
    [
        (HookRun(None, timed_out=True), "timed out", "timed out after 5 s"),
        (
            HookRun(1, "", "Traceback: boom\n  File x"),
            "non-blocking error",
            "Failed with non-blocking status code: Traceback: boom (exit 1)",
        ),
        (HookRun(137, "", ""), "non-blocking error", "No stderr output (exit 137)"),
        (HookRun(-9), "non-blocking error", "killed by signal 9"),
        (HookRun(None, error="no such shell"), "non-blocking error", "failed to run"),
        (HookRun(1, "{not json", "bad"), "non-blocking error", "status code: bad (exit 1)"),
        (ok('{"continue": "yes"}'), "non-blocking error", "continue: expected boolean"),
        (ok('{"hookSpecificOutput": {"hookEventName": "Stop"}}'), "non-blocking error", "Stop"),
        (HookRun(0, "x" * 10, "", stdout_dropped=10**9), "success", "output cut"),
    ],
)
def test_a_failing_hook_is_reported_and_the_call_goes_ahead(
    tmp_path: Path, answer: HookRun, outcome: str, words: str
) -> None:
    _, _, events, _ = run(
        tmp_path, [hook("PreToolUse", "h")], {"h": answer}, [write("a.txt"), reply("ok")]
    )

    (report,) = reports(events)
    assert report.outcome == outcome and words in report.detail
    assert (tmp_path / "a.txt").exists()
    assert isinstance(events[-1], TurnEnded)


def test_a_runner_that_raises_is_a_hook_that_failed_to_run(tmp_path: Path) -> None:
    def boom(call: HookCall) -> HookRun:
        raise RuntimeError("fork failed")

    _, _, events, _ = run(
        tmp_path, [hook("PreToolUse", "h")], {"h": boom}, [write("a.txt"), reply("ok")]
    )

    assert "fork failed" in reports(events)[0].detail
    assert next(e for e in events if isinstance(e, ToolFinished)).is_error is False


def test_automatic_compaction_tells_the_hook_it_is_auto(tmp_path: Path) -> None:
    runner = FakeRunner({"h": ok()})
    settings = SettingsHooks(
        [hook("PreCompact", "h", "auto")], workspace=tmp_path, session_id=SESSION, runner=runner
    )
    agent = Agent(
        ScriptedModel([reply("first"), reply("<summary>s</summary>")]),
        workspace=tmp_path,
        clock=FakeClock(),
        plugins=[settings],
    )
    list(agent.run("go"))

    summarise(agent, trigger="auto")  # what AutoCompact calls

    assert runner.sent("h")[0]["trigger"] == "auto"
    assert runner.sent("h")[0]["custom_instructions"] is None


def test_pre_tool_use_context_reaches_the_model_with_the_result(tmp_path: Path) -> None:
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "be brief"}}

    agent, _, _, _ = run(
        tmp_path, [hook("PreToolUse", "h")], {"h": ok(json.dumps(out))}, [write("a"), reply("ok")]
    )

    assert str(result_of(agent)["content"]).endswith("be brief")


def test_exit_2_from_session_start_is_shown_but_cannot_refuse_the_prompt(tmp_path: Path) -> None:
    _, model, events, _ = run(
        tmp_path, [hook("SessionStart", "h")], {"h": HookRun(2, "", "hm")}, [reply("ok")]
    )

    assert len(model.requests) == 1
    (report,) = reports(events)
    assert report.outcome == "non-blocking error" and "exit 2: hm" in report.detail


def test_a_system_message_is_shown_in_the_hooks_event(tmp_path: Path) -> None:
    out = json.dumps({"systemMessage": "formatter is slow today"})

    _, _, events, _ = run(
        tmp_path, [hook("PostToolUse", "h")], {"h": ok(out)}, [write("a"), reply("ok")]
    )

    assert "formatter is slow today" in reports(events)[0].detail
