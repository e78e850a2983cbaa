"""Chapter 13's settings files and hook scripts, as a team and one person write them.

* ``.claude/settings.json`` (the project's, committed): a PreToolUse guard on ``Bash`` that
  blocks a command containing any of its arguments (``rm -rf``, ``git push --force``) by
  exiting 2, and a PostToolUse formatter on ``Edit|Write``;
* ``.claude/settings.local.json`` (one person's, not committed): a UserPromptSubmit hook that
  refuses a prompt holding an AWS access key and otherwise adds a note as context.

The scripts are Python with only the standard library, so they run wherever the course runs;
the commands reach them through ``$CLAUDE_PROJECT_DIR``, as Claude Code's documentation does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

GUARD_SCRIPT = '''\
"""PreToolUse hook: block a Bash command that contains any of this script's arguments."""

import json
import sys

call = json.load(sys.stdin)  # the event, as Claude Code sends it
command = call.get("tool_input", {}).get("command", "")
for banned in sys.argv[1:]:
    if banned in command:
        print(f"Blocked by the project's policy: {banned!r} is not allowed here.", file=sys.stderr)
        sys.exit(2)  # 2 blocks the call; stderr goes to the model
sys.exit(0)  # no decision: the normal permission flow applies
'''

FORMAT_SCRIPT = '''\
"""PostToolUse hook: tidy a Python file after an edit (a stand-in for ruff format)."""

import json
import sys
from pathlib import Path

call = json.load(sys.stdin)
path = Path(call.get("tool_input", {}).get("file_path", ""))
if path.suffix == ".py" and path.is_file():
    lines = path.read_text().expandtabs(4).splitlines()
    tidy = "\\n".join(line.rstrip() for line in lines).rstrip("\\n") + "\\n"
    if tidy != path.read_text():
        path.write_text(tidy)
        print(f"formatted {path.name}")
'''

PROMPT_SCRIPT = '''\
"""UserPromptSubmit hook: refuse a prompt that holds an API key; otherwise add a note."""

import json
import re
import sys

prompt = json.load(sys.stdin).get("prompt", "")
if re.search(r"AKIA[0-9A-Z]{16}", prompt):
    print("The prompt holds an AWS access key: remove it and send it again.", file=sys.stderr)
    sys.exit(2)  # 2 refuses the prompt: it is never sent
print("Release freeze until Monday: no deploys.")  # plain stdout on exit 0: context
'''

HOOKS_DIR = '"$CLAUDE_PROJECT_DIR"/.claude/hooks'
BANNED = ("rm -rf", "git push --force")


def guard_command(banned: tuple[str, ...] = BANNED) -> str:
    """The guard hook's command line: the script, then each banned text, quoted."""
    return f"python3 {HOOKS_DIR}/guard.py " + " ".join(f"'{b}'" for b in banned)


def project_settings(banned: tuple[str, ...] = BANNED) -> dict[str, Any]:
    """``.claude/settings.json``: the two hooks, in the documented shape."""
    return {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": guard_command(banned), "timeout": 10}],
                }
            ],
            "PostToolUse": [
                {
                    "matcher": "Edit|Write",
                    "hooks": [{"type": "command", "command": f"python3 {HOOKS_DIR}/format.py"}],
                }
            ],
        }
    }


def write_settings(root: Path, banned: tuple[str, ...] = BANNED) -> Path:
    """Write ``.claude/settings.json`` and the two hook scripts; the settings file's path."""
    hooks = root / ".claude" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    (hooks / "guard.py").write_text(GUARD_SCRIPT, encoding="utf-8")
    (hooks / "format.py").write_text(FORMAT_SCRIPT, encoding="utf-8")
    path = root / ".claude" / "settings.json"
    path.write_text(json.dumps(project_settings(banned), indent=2) + "\n", encoding="utf-8")
    return path


def local_settings() -> dict[str, Any]:
    """``.claude/settings.local.json``: one person's UserPromptSubmit hook (not committed)."""
    command = f"python3 {HOOKS_DIR}/prompt_guard.py"
    return {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]}}


def write_local_settings(root: Path) -> Path:
    """Write ``.claude/settings.local.json`` and its script; the settings file's path."""
    (root / ".claude" / "hooks" / "prompt_guard.py").write_text(PROMPT_SCRIPT, encoding="utf-8")
    path = root / ".claude" / "settings.local.json"
    path.write_text(json.dumps(local_settings(), indent=2) + "\n", encoding="utf-8")
    return path


__all__ = [
    "BANNED",
    "FORMAT_SCRIPT",
    "GUARD_SCRIPT",
    "HOOKS_DIR",
    "PROMPT_SCRIPT",
    "guard_command",
    "local_settings",
    "project_settings",
    "write_local_settings",
    "write_settings",
]
