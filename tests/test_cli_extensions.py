"""The command line with chapter 13's configuration: the user's slash commands and skills,
hooks from the settings files, the folder-trust question, problems said once.

In-process, as ``test_cli.py`` runs it: each test calls :func:`harness.cli.main` in a fresh
workspace that is the current folder, with ``HOME`` a folder of its own (so the user's
``~/.claude`` is the test's), the standard input a string, and the offline demo model
answering (``run <command>`` runs it with ``bash``; ``skill <name>`` loads a skill).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from test_cli import cli, transcripts, user_texts, workspace

from harness import messages as m
from harness.cli.report import Exit
from harness.transcript import load

__all__ = ["cli", "workspace"]  # fixtures, used by name

PYTHON = shlex.quote(sys.executable)

# Blocks any bash command that starts with rm, in Claude Code's protocol: exit 2, the reason
# on stderr (it goes back to the model as the tool's error).
BLOCK_RM = """import json, sys
call = json.load(sys.stdin)
if call["tool_input"]["command"].startswith("rm"):
    print("Blocked: rm is not allowed here", file=sys.stderr)
    sys.exit(2)
"""

# Writes what the hook received, one JSON object per line, to the file it is given.
RECORD = """import json, sys
with open(sys.argv[1], "a") as out:
    out.write(json.dumps(json.load(sys.stdin)) + "\\n")
"""


def home(workspace: Path) -> Path:
    return workspace.parent / "home"


def settings(folder: Path, name: str, hooks: dict[str, Any]) -> None:
    (folder / ".claude").mkdir(parents=True, exist_ok=True)
    (folder / ".claude" / name).write_text(json.dumps({"hooks": hooks}))


def script(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text)
    return f"{PYTHON} {shlex.quote(str(path))}"


def on(event: str, command: str, matcher: str | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {"hooks": [{"type": "command", "command": command}]}
    if matcher is not None:
        group["matcher"] = matcher
    return {event: [group]}


def conversation(workspace: Path) -> list[m.MessageDict]:
    (path,) = transcripts(workspace)
    return load(path).messages


def results(workspace: Path) -> list[str]:
    return [
        json.dumps(b.get("content")) for msg in conversation(workspace) for b in m.tool_results(msg)
    ]


# --- the user's own slash commands and skills ----------------------------------------------


def command_file(workspace: Path) -> None:
    folder = workspace / ".claude" / "commands"
    folder.mkdir(parents=True)
    (folder / "greet.md").write_text(
        "---\ndescription: Greet someone by name\nargument-hint: <name>\n---\n"
        "Say hello to $ARGUMENTS, politely.\n"
    )


def skill_file(workspace: Path) -> None:
    folder = workspace / ".claude" / "skills" / "release-notes"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Write release notes from the changelog. "
        "Use when asked for release notes.\n---\n# Release notes\n\nRead CHANGELOG.md, then "
        "group the entries by kind.\n"
    )


def test_help_lists_the_projects_commands_and_skills_with_their_hints(cli: Any) -> None:
    command_file(Path.cwd())
    skill_file(Path.cwd())
    run = cli(stdin="/help\n/exit\n")
    assert run.code == Exit.DONE
    assert "/greet <name>" in run.out and "Greet someone by name" in run.out
    assert "/release-notes" in run.out and "Write release notes" in run.out
    assert "/hooks" in run.out


def test_a_typed_command_is_expanded_and_sent_as_the_prompt(cli: Any, workspace: Path) -> None:
    command_file(workspace)
    run = cli(stdin="/greet Ada Lovelace\n/exit\n")
    assert run.code == Exit.DONE
    assert user_texts(conversation(workspace))[0].strip() == "Say hello to Ada Lovelace, politely."


def test_a_command_runs_in_one_shot_mode_too(cli: Any, workspace: Path) -> None:
    command_file(workspace)
    run = cli("-p", "/greet Grace")
    assert run.code == Exit.DONE
    assert "Say hello to Grace, politely." in run.out  # the demo model repeats what it got


def test_an_unknown_slash_command_is_said_and_nothing_is_sent(cli: Any, workspace: Path) -> None:
    run = cli(stdin="/nosuch thing\n/exit\n")
    assert "Unknown command /nosuch" in run.out
    assert transcripts(workspace) == [] or user_texts(conversation(workspace)) == []


def test_the_model_loads_a_skill_with_the_skill_tool(cli: Any, workspace: Path) -> None:
    skill_file(workspace)
    run = cli("-p", "skill release-notes")
    assert run.code == Exit.DONE
    (loaded,) = results(workspace)
    assert "Read CHANGELOG.md" in loaded and "release-notes" in loaded


def test_broken_configuration_files_are_said_once_and_the_session_goes_on(
    cli: Any, workspace: Path
) -> None:
    (workspace / ".claude" / "skills" / "broken").mkdir(parents=True)
    (workspace / ".claude" / "skills" / "broken" / "SKILL.md").write_text("---\n: [\n---\nx\n")
    (workspace / ".claude" / "settings.json").write_text("{not json")
    run = cli("-p", "list files")
    assert run.code == Exit.DONE
    skipped = [line for line in run.err.splitlines() if line.startswith("harness: skipped")]
    assert len(skipped) == 2
    assert any("settings.json" in line for line in skipped)
    assert any("SKILL.md" in line for line in skipped)


# --- hooks from the settings files, and trust ----------------------------------------------


def test_a_users_pretooluse_hook_blocks_a_command_and_the_model_is_told_why(
    cli: Any, workspace: Path
) -> None:
    settings(
        home(workspace),
        "settings.json",
        on("PreToolUse", script(home(workspace), "block.py", BLOCK_RM), "Bash"),
    )
    (workspace / "keep.txt").write_text("keep me\n")
    run = cli("--permission-mode", "bypassPermissions", "-p", "run rm keep.txt")
    assert (workspace / "keep.txt").exists()
    assert "Blocked: rm is not allowed here" in results(workspace)[0]
    assert "PreToolUse" in run.err


def test_a_projects_hook_does_not_run_in_a_folder_nobody_trusted(cli: Any, workspace: Path) -> None:
    settings(
        workspace,
        "settings.json",
        on("PreToolUse", script(workspace, "block.py", BLOCK_RM), "Bash"),
    )
    (workspace / "gone.txt").write_text("x\n")
    cli("--permission-mode", "bypassPermissions", "-p", "run rm gone.txt")
    assert not (workspace / "gone.txt").exists()  # no terminal to ask: the hook did not run


def test_trusting_a_folder_at_the_prompt_runs_its_hooks_and_is_remembered(
    cli: Any, workspace: Path
) -> None:
    log = workspace.parent / "calls.jsonl"
    record = f"{script(workspace, 'record.py', RECORD)} {shlex.quote(str(log))}"
    settings(workspace, "settings.json", on("UserPromptSubmit", record))
    first = cli(stdin="hello there\ny\n/exit\n")
    assert "Do you trust this folder's hooks?" in first.out
    assert [json.loads(line)["prompt"] for line in log.read_text().splitlines()] == ["hello there"]
    second = cli(stdin="hello again\n/exit\n")  # asked once: the answer is on disk
    assert "Do you trust" not in second.out
    assert len(log.read_text().splitlines()) == 2


def test_a_refused_trust_question_keeps_the_projects_hooks_off(cli: Any, workspace: Path) -> None:
    log = workspace.parent / "calls.jsonl"
    record = f"{script(workspace, 'record.py', RECORD)} {shlex.quote(str(log))}"
    settings(workspace, "settings.json", on("UserPromptSubmit", record))
    cli(stdin="hello there\nn\n/exit\n")
    cli(stdin="hello again\n/exit\n")
    assert not log.exists()


def test_user_prompt_submit_context_joins_the_prompt_and_session_end_runs_at_exit(
    cli: Any, workspace: Path
) -> None:
    log = workspace.parent / "ends.jsonl"
    record = f"{script(home(workspace), 'record.py', RECORD)} {shlex.quote(str(log))}"
    hooks = {**on("UserPromptSubmit", "echo 'Branch: main'"), **on("SessionEnd", record)}
    settings(home(workspace), "settings.json", hooks)
    run = cli(stdin="what changed\n/exit\n")
    assert run.code == Exit.DONE
    assert user_texts(conversation(workspace))[:2] == ["what changed", "Branch: main"]
    (ended,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert ended["hook_event_name"] == "SessionEnd" and ended["reason"] == "prompt_input_exit"


def test_hooks_lists_the_configured_hooks_and_the_folders_trust(cli: Any, workspace: Path) -> None:
    settings(workspace, "settings.json", on("PreToolUse", "echo ok", "Bash"))
    run = cli(stdin="/hooks\n/exit\n")
    assert "PreToolUse" in run.out and "echo ok" in run.out and "project" in run.out
    assert "not asked yet" in run.out


def test_hooks_shows_control_characters_in_a_command_as_text_never_raw(
    cli: Any, workspace: Path
) -> None:
    settings(workspace, "settings.json", on("Stop", "printf '\x1b[2J'; echo cleared"))
    run = cli(stdin="/hooks\n/exit\n")
    assert "\\x1b[2J" in run.out and "\x1b[2J" not in run.out


def test_a_hooks_output_with_escape_sequences_is_printed_as_text(cli: Any, workspace: Path) -> None:
    (workspace / "x.sh").write_text("printf '\\033[2Jgone' >&2; exit 1\n")
    settings(home(workspace), "settings.json", on("UserPromptSubmit", "sh x.sh"))
    run = cli("-p", "list files")
    assert run.code == Exit.DONE
    assert "\x1b" not in run.err and "\\x1b[2J" in run.err
