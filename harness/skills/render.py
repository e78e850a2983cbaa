"""What a skill or command body becomes before the model reads it.

Claude Code renders a skill as ``Base directory for this skill: <dir>`` and a blank line,
then the body (``createSkillCommand`` in ``src/skills/loadSkillsDir.ts``,
github.com/Gitlawb/openclaude); then it fills the argument placeholders
(:mod:`harness.skills.arguments`) and the variables ``${CLAUDE_SKILL_DIR}``,
``${CLAUDE_SESSION_ID}`` and ``${CLAUDE_PROJECT_DIR}`` (documented in "Available string
substitutions", https://code.claude.com/docs/en/skills). The base directory is what lets
the model read the files a skill refers to (``reference.md``, ``examples/``) with the
ordinary tools.

**Dynamic context injection** (``!``-command lines, and fenced blocks opened with three
backquotes and ``!``) runs only when the caller passes ``shell``
(:mod:`harness.skills.injection`: through the harness's permissions and its bash tool).
Without it we do what Claude Code does when the documented setting
``"disableSkillShellExecution": true`` is on: each command is replaced with
``[shell command execution disabled by policy]`` (the docs' exact text), so the model sees
that something was left out and can run the command itself, through the bash tool.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from harness.skills.arguments import substitute_arguments

SHELL_DISABLED = "[shell command execution disabled by policy]"
"""Claude Code's documented replacement when ``disableSkillShellExecution`` is set."""

INLINE_SHELL = re.compile(r"(?:(?<=^)|(?<=\s))!`[^`\n]+`", re.MULTILINE)
"""A ``!``-command (``!``, then a command in backquotes) at the start of a line or after
whitespace (documented)."""
BLOCK_SHELL = re.compile(r"^```![^\n]*\n.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)
"""A fenced block opened with three backquotes and ``!``: one command per line."""


def without_shell(body: str) -> str:
    """``body`` with each ``!``-command line and each ``!`` fenced block replaced by
    :data:`SHELL_DISABLED` (see the module: we do not run them)."""
    body = BLOCK_SHELL.sub(SHELL_DISABLED, body)
    return INLINE_SHELL.sub(SHELL_DISABLED, body)


def render(
    body: str,
    arguments: str | None,
    *,
    base_dir: str | None = None,
    names: Sequence[str] = (),
    session_id: str = "",
    project_dir: str = "",
    shell: Callable[[str], str] | None = None,
) -> str:
    """The text the model receives for a skill (``base_dir`` given) or a command (``None``).

    ``shell`` runs the injected commands (:class:`harness.skills.injection.ShellInjection`);
    without it they are replaced by :data:`SHELL_DISABLED`. It runs last, as in Claude Code:
    after the arguments and variables are filled in."""
    text = f"Base directory for this skill: {base_dir}\n\n{body}" if base_dir else body
    text = substitute_arguments(text, arguments, names)
    if base_dir:
        text = text.replace("${CLAUDE_SKILL_DIR}", base_dir)
    text = text.replace("${CLAUDE_SESSION_ID}", session_id)
    if project_dir:
        text = text.replace("${CLAUDE_PROJECT_DIR}", project_dir)
    return shell(text) if shell is not None else without_shell(text)
