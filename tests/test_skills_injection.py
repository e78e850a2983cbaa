"""``!`command` `` in skills and commands: run only as the permissions allow, never asked."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.skills import (
    CommandError,
    SkillLoader,
    discover_commands,
    discover_skills,
    expand,
    lookup,
    skill_tool,
)
from harness.skills.injection import ShellInjection, bash_rules
from harness.tools import Permissions, ToolContext, ToolError, Workspace
from harness.tools.sandbox import no_sandbox
from harness.tools.shell import bash_tool

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code" / "skills"


def injection(root: Path, permissions: Permissions | None = None) -> ShellInjection:
    return ShellInjection(
        permissions or Permissions(),
        Workspace(root),
        bash=bash_tool(no_sandbox("tests")),
        timeout=20.0,
    )


def skill(root: Path, name: str, front: str, body: str) -> None:
    folder = root / ".claude" / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\ndescription: d\n{front}---\n{body}")


def load(root: Path, name: str, permissions: Permissions | None = None) -> str:
    loader = SkillLoader(discover_skills(root, None), injection=injection(root, permissions))
    result = skill_tool(loader)({"skill": name}, ToolContext(Workspace(root)))
    assert isinstance(result, str)
    return result


def test_a_command_the_skill_pre_approves_runs_and_its_output_takes_its_place(
    tmp_path: Path,
) -> None:
    skill(tmp_path, "hi", "allowed-tools: Bash(echo *)\n", "Now: !`echo hello`\nend\n")
    assert "Now: hello\nend" in load(tmp_path, "hi")


def test_a_command_nothing_allows_aborts_the_skill_and_never_asks(tmp_path: Path) -> None:
    skill(tmp_path, "hi", "", "Now: !`echo hello`\n")
    with pytest.raises(ToolError, match='permission check failed for pattern "!`echo hello`"'):
        load(tmp_path, "hi")


def test_a_deny_rule_beats_the_skills_allowed_tools(tmp_path: Path) -> None:
    skill(tmp_path, "hi", "allowed-tools: Bash(echo *)\n", "!`echo hello`\n")
    deny = Permissions.from_rules(deny=["bash(echo *)"])
    with pytest.raises(ToolError, match="deny rule"):
        load(tmp_path, "hi", deny)


def test_plan_mode_ignores_a_skills_own_rules(tmp_path: Path) -> None:
    skill(tmp_path, "hi", "allowed-tools: Bash(echo *)\n", "!`echo hello`\n")
    allowed = Permissions.from_rules("plan", allow=["bash(echo *)"])
    with pytest.raises(ToolError, match="permission check failed"):
        load(tmp_path, "hi", Permissions(mode="plan"))
    assert "hello" in load(tmp_path, "hi", allowed)  # an allow rule is explicit consent


def test_a_failing_command_aborts_the_skill_with_its_output(tmp_path: Path) -> None:
    skill(tmp_path, "bad", "allowed-tools: Bash(ls *)\n", "!`ls missing-file`\n")
    with pytest.raises(ToolError, match='Shell command failed for pattern "!`ls missing-file`"'):
        load(tmp_path, "bad")


def test_exit_code_1_of_grep_is_an_answer_not_a_failure(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing here\n")
    skill(tmp_path, "g", "allowed-tools: Bash(grep *)\n", "Found: !`grep TODO notes.txt`|\n")
    assert "Found: |" in load(tmp_path, "g")


def test_a_fenced_block_runs_each_line(tmp_path: Path) -> None:
    body = "## Env\n```!\necho one\necho two\n```\nafter\n"
    skill(tmp_path, "env", "allowed-tools: Bash(echo *)\n", body)
    assert "## Env\none\ntwo\nafter" in load(tmp_path, "env")


def test_output_is_inserted_as_text_and_never_run_again(tmp_path: Path) -> None:
    (tmp_path / "trap.txt").write_text("!`echo nested`")
    skill(tmp_path, "t", "allowed-tools: Bash(cat *)\n", "Got: !`cat trap.txt`\n")
    assert "Got: !`echo nested`" in load(tmp_path, "t")


def test_a_skills_own_rules_can_be_switched_off_until_the_folder_is_trusted(
    tmp_path: Path,
) -> None:
    skill(tmp_path, "hi", "allowed-tools: Bash(echo *)\n", "!`echo hello`\n")
    untrusted = injection(tmp_path)
    untrusted.skill_rules = False
    loader = SkillLoader(discover_skills(tmp_path, None), injection=untrusted)
    with pytest.raises(ToolError, match="permission check failed"):
        skill_tool(loader)({"skill": "hi"}, ToolContext(Workspace(tmp_path)))


def test_skill_dir_is_substituted_in_allowed_tools_rules() -> None:
    rules = bash_rules(
        ["Bash(${CLAUDE_SKILL_DIR}/scripts/render.sh *)", "Read", "Bash"], skill_dir="s/x"
    )
    assert [str(r) for r in rules] == ["bash(s/x/scripts/render.sh *)", "bash"]


def test_without_injection_nothing_runs(tmp_path: Path) -> None:
    skill(tmp_path, "hi", "allowed-tools: Bash(echo *)\n", "!`echo hello`\n")
    loader = SkillLoader(discover_skills(tmp_path, None))
    text = skill_tool(loader)({"skill": "hi"}, ToolContext(Workspace(tmp_path)))
    assert "[shell command execution disabled by policy]" in str(text)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_documentations_first_skill_runs_unchanged_on_a_real_diff(tmp_path: Path) -> None:
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "app.py").write_text("x = 1\n")
    subprocess.run([*git, "-C", str(tmp_path), "add", "app.py"], check=True)
    subprocess.run([*git, "-C", str(tmp_path), "commit", "-qm", "first"], check=True)
    (tmp_path / "app.py").write_text("x = 2\n")
    shutil.copytree(FIXTURES / "summarize-changes", tmp_path / ".claude/skills/summarize-changes")
    allowed = Permissions.from_rules(allow=["bash(git diff *)"])
    text = load(tmp_path, "summarize-changes", allowed)
    assert "## Current changes\n\ndiff --git a/app.py b/app.py" in text
    assert "+x = 2" in text and "## Instructions" in text


def test_a_typed_command_runs_its_injected_lines_too(tmp_path: Path) -> None:
    folder = tmp_path / ".claude" / "commands"
    folder.mkdir(parents=True)
    (folder / "ctx.md").write_text("---\nallowed-tools: Bash(echo *)\n---\nBranch: !`echo main`\n")
    (folder / "no.md").write_text("Branch: !`echo main`\n")
    commands = discover_commands(tmp_path, None)
    ran = expand(lookup(commands, "ctx"), "", injection=injection(tmp_path))
    assert ran == "Branch: main\n"
    with pytest.raises(CommandError, match=r"/no did not run\. Shell command permission"):
        expand(lookup(commands, "no"), "", injection=injection(tmp_path))
