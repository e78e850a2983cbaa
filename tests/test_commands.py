"""Custom slash commands: the documentation's command files, run unchanged, and skills as /name.

Fixtures: tests/fixtures/claude_code/commands (see its SOURCES.md) and .../skills.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.skills import (
    CommandCatalog,
    CommandError,
    SkillCatalog,
    SkillLoader,
    discover_commands,
    discover_skills,
    expand,
    lookup,
    parse_slash,
    skills_section,
)
from harness.skills.render import SHELL_DISABLED
from harness.skills.tool import skill_tool
from harness.tools import ToolContext, Workspace

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"


@pytest.fixture
def homes(tmp_path: Path) -> tuple[Path, Path]:
    """A project with the documentation's project commands and skills, and a home folder
    with its personal command."""
    project, home = tmp_path / "project", tmp_path / "home"
    commands = project / ".claude" / "commands"
    shutil.copytree(FIXTURES / "commands", commands, ignore=shutil.ignore_patterns("SOURCES.md"))
    personal = home / ".claude" / "commands"
    personal.mkdir(parents=True)
    shutil.move(commands / "security-review.md", personal / "security-review.md")
    skills = project / ".claude" / "skills"
    shutil.copytree(FIXTURES / "skills", skills, ignore=shutil.ignore_patterns("SOURCES.md"))
    return project, home


def catalogs(project: Path, home: Path | None) -> tuple[SkillCatalog, CommandCatalog]:
    skills = discover_skills(project, home)
    return skills, discover_commands(project, home, skills)


def test_the_documentations_commands_are_all_found(homes: tuple[Path, Path]) -> None:
    project, home = homes
    _, commands = catalogs(project, home)
    names = set(commands.names())
    assert {"optimize", "fix-issue", "review-pr", "commit", "git-commit-context"} <= names
    assert {"deploy-staging", "frontend:component", "security-review"} <= names
    reasons = sorted(p.reason for p in commands.problems)
    assert reasons[0].startswith("/commit is already the project skill")
    assert reasons[1].startswith("/fix-issue is already the project skill")


def test_scope_and_namespace_show_in_help(homes: tuple[Path, Path]) -> None:
    project, home = homes
    _, commands = catalogs(project, home)
    lines = commands.help_lines()
    assert "/security-review  Review this code for security vulnerabilities: (user)" in lines
    assert any(line.startswith("/frontend:component  Create a React component") for line in lines)
    assert any(line.endswith("(project:frontend)") for line in lines)


def test_arguments_replace_the_placeholder(homes: tuple[Path, Path]) -> None:
    project, home = homes
    commands = discover_commands(project, home)  # the command files alone, no skills
    text = expand(lookup(commands, "fix-issue"), "123 high-priority")
    assert text == "Fix issue #123 high-priority following our coding standards\n"


def test_positional_arguments_count_from_zero_as_claude_code_does_now(
    homes: tuple[Path, Path],
) -> None:
    project, home = homes
    _, commands = catalogs(project, home)
    text = expand(lookup(commands, "review-pr"), "456 high alice")
    # Written for the January 2026 page ($1 = first); today $1 is the second argument and
    # a missing $3 stays as written.
    assert "Review PR #high with priority alice and assign to $3." in text


def test_a_command_without_placeholders_gets_the_arguments_appended(
    homes: tuple[Path, Path],
) -> None:
    project, home = homes
    _, commands = catalogs(project, home)
    text = expand(lookup(commands, "optimize"), "src/app.py")
    assert text.endswith("\n\nARGUMENTS: src/app.py")
    assert expand(lookup(commands, "optimize"), "").endswith("optimizations:\n")


def test_front_matter_of_a_command_is_read(homes: tuple[Path, Path]) -> None:
    project, home = homes
    _, commands = catalogs(project, home)
    context = lookup(commands, "git-commit-context")
    assert context.allowed_tools == (
        "Bash(git add:*)",
        "Bash(git status:*)",
        "Bash(git commit:*)",
    )
    assert SHELL_DISABLED in expand(context, "")
    staging = lookup(commands, "deploy-staging")
    assert staging.fields.has_hooks and staging.description == "Deploy to staging with validation"


def test_a_skill_is_a_command_and_wins_over_a_command_file_of_the_same_name(
    homes: tuple[Path, Path],
) -> None:
    project, home = homes
    _, commands = catalogs(project, home)
    commit = lookup(commands, "commit")
    assert commit.kind == "skill" and commit.base_dir == ".claude/skills/commit"
    text = expand(lookup(commands, "deploy"), "production")
    assert text.startswith("Base directory for this skill: .claude/skills/deploy")
    assert "Deploy production to production:" in text


def test_a_skill_the_user_may_not_invoke_is_not_a_command(tmp_path: Path) -> None:
    folder = tmp_path / ".claude" / "skills" / "legacy-context"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\ndescription: d\nuser-invocable: false\n---\nx\n")
    skills, commands = catalogs(tmp_path, None)
    assert commands.get("legacy-context") is None
    assert skills.get("legacy-context") is not None


def test_an_unknown_command_lists_the_known_ones(homes: tuple[Path, Path]) -> None:
    project, home = homes
    _, commands = catalogs(project, home)
    with pytest.raises(CommandError, match=r"unknown command /nope; available: .*/optimize"):
        lookup(commands, "nope")


def test_the_skill_tool_loads_command_files_too_but_not_model_disabled_ones(
    homes: tuple[Path, Path],
) -> None:
    project, home = homes
    skills, commands = catalogs(project, home)
    loader = SkillLoader(skills, commands)
    tool = skill_tool(loader)
    text = tool({"skill": "optimize", "args": "x.py"}, ToolContext(Workspace(project)))
    assert "Analyze this code for performance issues" in str(text)
    names = [item.name for item in loader.invocable()]
    assert "optimize" in names and "commit" not in names  # commit: the skill, model-disabled
    section = skills_section(loader.invocable())
    assert section is not None and "- optimize: Analyze this code" in section.text


def test_a_personal_command_wins_over_a_project_one(tmp_path: Path) -> None:
    for root, text in ((tmp_path / "home", "mine"), (tmp_path / "project", "ours")):
        folder = root / ".claude" / "commands"
        folder.mkdir(parents=True)
        (folder / "go.md").write_text(text)
    _, commands = catalogs(tmp_path / "project", tmp_path / "home")
    assert expand(lookup(commands, "go"), "") == "mine"
    assert len(commands.problems) == 1


def test_hostile_command_folders_are_problems_not_crashes(tmp_path: Path) -> None:
    folder = tmp_path / ".claude" / "commands"
    folder.mkdir(parents=True)
    (folder / "binary.md").write_bytes(b"\xff\xfe\x00")
    (folder / "list.md").write_text("---\n- a\n---\n")
    (folder / "dir.md").mkdir()
    os.symlink("loop", folder / "loop")
    os.symlink(".", folder / "here")
    (folder / "good.md").write_text("fine")
    _, commands = catalogs(tmp_path, None)
    assert [c.name for c in commands.commands if c.name.endswith("good")] == ["good"]
    reasons = " | ".join(p.reason for p in commands.problems)
    assert "not UTF-8" in reasons and "mapping of fields" in reasons
    assert "symlink loop" in reasons


def test_parse_slash_splits_name_and_arguments() -> None:
    assert parse_slash("/fix-issue 123 high") == ("fix-issue", "123 high")
    assert parse_slash("/frontend:component  Button") == ("frontend:component", "Button")
    assert parse_slash("/help") == ("help", "")
    assert parse_slash("not a command") is None
    assert parse_slash("/") is None


@given(st.text(max_size=60))
def test_parse_slash_never_crashes(text: str) -> None:
    parsed = parse_slash(text)
    assert parsed is None or (parsed[0] and not parsed[0].startswith("/"))


def test_the_documented_argument_hints_read_as_written(homes: tuple[Path, Path]) -> None:
    project, home = homes
    commands = discover_commands(project, home)  # [message] is a YAML list: shown as written
    assert lookup(commands, "commit").argument_hint == "[message]"
    assert lookup(commands, "commit").model == "claude-3-5-haiku-20241022"
    hint = lookup(commands, "review-pr").argument_hint
    assert hint == "[pr-number] [priority] [assignee]"
    assert commands.problems == ()
