"""Generated hostile hook output: no answer a hook gives can crash a run or go unreported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.events import HookReported, MaxTurnsReached, PromptRefused, TurnEnded
from harness.model import ScriptedModel, reply, tool_call
from harness.settings.claude_names import CLAUDE_NAMES, from_claude, to_claude
from harness.settings.command import HookCall, HookRun
from harness.settings.hooks import SettingsHooks
from harness.settings.protocol import interpret
from harness.settings.schema import ConfiguredHook
from harness.tools.builtins import builtin_tools
from harness.tools.hooks import Hooks
from harness.tools.permissions import Permissions

EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart", "Stop", "PreCompact")

anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def field(name: str, good: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[str, Any]]:
    return st.tuples(st.just(name), good | anything)


specific = st.lists(
    field("hookEventName", st.sampled_from(EVENTS))
    | field("permissionDecision", st.sampled_from(["allow", "deny", "ask", "maybe"]))
    | field("permissionDecisionReason", st.text(max_size=20))
    | field(
        "updatedInput",
        st.dictionaries(
            st.sampled_from(["file_path", "content", "command", "x"]), anything, max_size=3
        ),
    )
    | field("additionalContext", st.text(max_size=40)),
    max_size=5,
).map(dict)

answer_json = st.lists(
    field("continue", st.booleans())
    | field("stopReason", st.text(max_size=20))
    | field("suppressOutput", st.booleans())
    | field("systemMessage", st.text(max_size=20))
    | field("decision", st.sampled_from(["approve", "block", "allow", ""]))
    | field("reason", st.text(max_size=20))
    | field("hookSpecificOutput", specific),
    max_size=6,
).map(lambda pairs: json.dumps(dict(pairs)))

stdout = (
    answer_json
    | st.text(max_size=60)
    | st.binary(max_size=60).map(lambda b: b.decode("utf-8", errors="replace"))
    | st.just("{")
    | st.just("{" * 3000 + "}" * 3000)
)

hook_runs = st.builds(
    HookRun,
    exit_code=st.none() | st.sampled_from([0, 0, 0, 1, 2, 2, 3, 126, 127, 255, -9, -15]),
    stdout=stdout,
    stderr=st.text(max_size=40),
    timed_out=st.booleans(),
    error=st.sampled_from(["", "", "", "could not start"]),
    stdout_dropped=st.sampled_from([0, 0, 5, 10**9]),
    stderr_dropped=st.sampled_from([0, 7]),
)


@given(event=st.sampled_from(EVENTS), run=hook_runs)
def test_reading_any_answer_never_raises(event: str, run: HookRun) -> None:
    answer = interpret(event, run, 1.0)

    assert answer.status in ("success", "blocking", "non_blocking_error")
    if answer.status == "non_blocking_error":
        assert answer.problem


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(runs=st.lists(hook_runs, min_size=6, max_size=6))
def test_no_answer_from_any_hook_can_crash_a_run(tmp_path: Path, runs: list[HookRun]) -> None:
    answers = dict(zip(EVENTS, runs, strict=True))
    calls: list[HookCall] = []

    def runner(call: HookCall) -> HookRun:
        calls.append(call)
        return answers[call.command]

    hooks = [ConfiguredHook(e, "", e, 1.0, Path("s.json"), "user") for e in EVENTS]
    plugin = SettingsHooks(hooks, workspace=tmp_path, session_id="s", runner=runner)
    script = [reply(tool_calls=[tool_call("write_file", path="a.txt", content="x")])]
    script += [reply("done")] * 6
    agent = Agent(
        ScriptedModel(script),
        tools=builtin_tools(),
        workspace=tmp_path,
        clock=FakeClock(),
        hooks=plugin.install(Hooks()),
        plugins=[plugin],
        permissions=Permissions(mode="bypass"),
        max_turns=4,
    )

    events = list(agent.run("go"))

    last = events[-1]
    assert isinstance(last, TurnEnded | PromptRefused | MaxTurnsReached | HookReported)
    if isinstance(last, HookReported):
        assert last.outcome == "stopped the run"
    assert not agent.messages or m.validate(agent.messages) == []
    per_hook = {"success", "blocking error", "non-blocking error", "timed out"}
    reported = [e for e in events if isinstance(e, HookReported) and e.outcome in per_hook]
    assert sorted(r.hook for r in reported) == sorted(c.command for c in calls)


paths = st.text(alphabet="abc/._-", min_size=1, max_size=12).filter(lambda p: not p.startswith("/"))


@given(tool=st.sampled_from(sorted(CLAUDE_NAMES)), path=paths, content=st.text(max_size=10))
def test_an_input_survives_the_trip_to_claude_codes_shape_and_back(
    tool: str, path: str, content: str
) -> None:
    root = Path("/work/project")
    ours: dict[str, Any] = {"path": path, "content": content}
    if tool == "bash":
        ours = {"command": content, "timeout": 1.5, "cwd": "sub"}
    if tool == "grep":
        ours = {"pattern": content, "path": path, "case_insensitive": True}

    claude = to_claude(tool, ours, root)
    back = from_claude(tool, claude, ours, root)

    expected = dict(ours)
    if "path" in ours and tool != "bash":
        expected["path"] = (root / path).relative_to(root).as_posix()
    assert back == expected
