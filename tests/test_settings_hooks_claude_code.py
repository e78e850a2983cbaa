"""Claude Code's own example hooks, run unchanged through ``SettingsHooks`` on agent runs.

The scripts and the settings in ``tests/fixtures/claude_code/hooks/`` come from Claude Code's
public documentation and examples (addresses in its ``SOURCES.md``); the scripts are byte for
byte the published ones. Each test copies them into a fresh project's ``.claude/`` folder,
reads the settings file, and runs a scripted agent with real processes.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.events import Event, HookReported, PromptRefused, TurnEnded
from harness.model import ScriptedModel, reply, tool_call
from harness.settings.files import load_settings
from harness.settings.hooks import SettingsHooks
from harness.settings.schema import hooks_in
from harness.settings.trust import FolderTrust, TrustRequest
from harness.tools.builtins import builtin_tools
from harness.tools.hooks import Hooks
from harness.tools.permissions import Permissions

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code" / "hooks"
SCRIPTS = (
    "bash_command_validator_example.py",
    "post_edit_auto_format_example.py",
    "user_prompt_submit_context.py",
    "session_start_context_loader_example.sh",
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    hooks = tmp_path / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    for name in SCRIPTS:
        shutil.copy(FIXTURES / name, hooks / name)
    shutil.copy(FIXTURES / "settings.json", tmp_path / ".claude" / "settings.json")
    return tmp_path


def run(project: Path, script: list[Any], prompt: str = "go") -> tuple[Agent, list[Event]]:
    source = project / ".claude" / "settings.json"
    hooks, problems = hooks_in(json.loads(source.read_text()), source, "project")
    assert problems == []
    settings = SettingsHooks(hooks, workspace=project, session_id="docs")
    agent = Agent(
        ScriptedModel(script),
        tools=builtin_tools(),
        workspace=project,
        clock=FakeClock(),
        hooks=settings.install(Hooks()),
        plugins=[settings],
        permissions=Permissions(mode="bypass"),
    )
    events = list(agent.run(prompt))
    assert not agent.messages or m.validate(agent.messages) == []
    return agent, events


def failures(events: list[Event]) -> list[HookReported]:
    bad = ("non-blocking error", "timed out")
    return [e for e in events if isinstance(e, HookReported) and e.outcome in bad]


def test_the_bash_validator_blocks_grep_and_tells_the_model_to_use_rg(project: Path) -> None:
    calls = [tool_call("bash", command="grep -r TODO ."), tool_call("bash", command="echo hi")]
    agent, events = run(project, [reply(tool_calls=calls), reply("ok")])

    blocked, ran = m.tool_results(agent.messages[2])
    assert blocked["is_error"] is True
    assert "Use 'rg' (ripgrep) instead of 'grep'" in str(blocked["content"])
    assert "hi" in str(ran["content"]) and not ran.get("is_error")
    assert failures(events) == []
    assert isinstance(events[-1], TurnEnded)


def test_the_file_protection_hook_blocks_an_edit_of_dot_env(project: Path) -> None:
    calls = [
        tool_call("write_file", path=".env", content="KEY=1"),
        tool_call("write_file", path="notes.txt", content="fine"),
    ]
    agent, events = run(project, [reply(tool_calls=calls), reply("ok")])

    assert not (project / ".env").exists()
    assert (project / "notes.txt").read_text() == "fine"
    assert m.tool_results(agent.messages[2])[0]["is_error"] is True
    assert failures(events) == []


def test_the_post_edit_formatter_formats_the_file_claude_code_wrote(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The script calls `black`; a stand-in on PATH formats as black would for this input,
    # so the test needs neither black installed nor a particular version of it.
    tools = project / "bin"
    tools.mkdir()
    black = tools / "black"
    black.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "path = sys.argv[-1]\n"
        "text = open(path).read()\n"
        "open(path, 'w').write(text.replace('x=1', 'x = 1'))\n"
    )
    black.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{Path(sys.executable).parent}:/usr/bin:/bin")

    _, events = run(
        project,
        [reply(tool_calls=[tool_call("write_file", path="a.py", content="x=1\n")]), reply("ok")],
    )

    assert (project / "a.py").read_text() == "x = 1\n"
    post = [e for e in events if isinstance(e, HookReported) and e.hook == "PostToolUse"]
    assert [e.outcome for e in post] == ["success"]


def test_the_prompt_hook_refuses_a_prompt_with_a_secret(project: Path) -> None:
    agent, events = run(project, [], prompt="deploy with password: hunter2")

    (refused,) = [e for e in events if isinstance(e, PromptRefused)]
    assert "Security policy violation: Prompt contains potential secrets" in refused.reason
    assert agent.messages == []


def test_the_prompt_hook_adds_the_current_time_to_the_prompt(project: Path) -> None:
    agent, events = run(project, [reply("ok")], prompt="what time is it?")

    texts = [b["text"] for b in m.blocks(agent.messages[0])]
    assert texts[0] == "what time is it?"
    assert texts[1].startswith("Current time: ")
    assert failures(events) == []


@pytest.mark.skipif(shutil.which("jq") is None, reason="the docs' SessionStart example needs jq")
def test_the_session_start_loader_puts_the_project_context_in_the_first_prompt(
    project: Path,
) -> None:
    (project / ".claude" / "project-context.md").write_text("Use tabs, not spaces.\n")

    agent, events = run(project, [reply("ok")], prompt="hello")

    texts = [b["text"] for b in m.blocks(agent.messages[0])]
    assert "Use tabs, not spaces." in texts[1]
    assert failures(events) == []


@pytest.mark.parametrize("trusted", [False, True])
def test_the_project_hooks_run_only_once_the_folder_is_trusted(
    project: Path, tmp_path_factory: pytest.TempPathFactory, trusted: bool
) -> None:
    home = tmp_path_factory.mktemp("home")
    loaded = load_settings(project, home)
    asked: list[TrustRequest] = []

    def ask(request: TrustRequest) -> bool:
        asked.append(request)
        return trusted

    trust = FolderTrust(home / "trust.json", project, ask, loaded.hooks)
    settings = SettingsHooks(loaded.hooks, workspace=project, session_id="s", allows=trust.allows)
    agent = Agent(
        ScriptedModel([reply(tool_calls=[tool_call("bash", command="grep x y")]), reply("ok")]),
        tools=builtin_tools(),
        workspace=project,
        clock=FakeClock(),
        hooks=settings.install(Hooks()),
        plugins=[settings],
        permissions=Permissions(mode="bypass"),
    )

    events = list(agent.run("go"))

    assert len(asked) == 1
    blocked = m.tool_results(agent.messages[2])[0]
    assert ("Use 'rg'" in str(blocked["content"])) is trusted
    skipped = [e for e in events if isinstance(e, HookReported) and e.outcome == "skipped"]
    assert bool(skipped) is not trusted
