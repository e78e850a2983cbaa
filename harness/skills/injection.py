"""Dynamic context injection: a skill's ``!``-command lines, run as the permissions allow.

Claude Code runs each ``!``-command (at the start of a line or after whitespace) and each
fenced block opened with three backquotes and ``!`` before the model sees the skill, and puts
the output in its place (https://code.claude.com/docs/en/skills, "Inject dynamic context",
"How injected commands run", "When an injected command fails"). As documented:

* the commands **never ask**: when the permission check says anything but *allow*, the whole
  invocation is aborted (``Shell command permission check failed for pattern "..."``);
* the skill's ``allowed-tools`` pre-approve commands (``Bash(git diff *)``), but a matching
  ask or deny rule still aborts; ``${CLAUDE_SKILL_DIR}`` is substituted in those rules too.
  "Workspace trust doesn't gate this field", the docs warn: a cloned project's skill can
  pre-approve its own commands. We keep that by default and let the caller switch it off
  (``skill_rules=False``) until the folder is trusted; in plan mode a skill's own rules never
  count (our choice: plan mode changes nothing on a file's say-so);
* a command that fails aborts the invocation (``Shell command failed for pattern "..."``),
  except exit code 1 from ``grep``, ``rg``, ``egrep``, ``fgrep``, ``find``, ``diff``,
  ``test``, ``[``, ``git diff`` and ``git grep`` (tools-reference, "Output limits");
* the output is inserted as plain text and never scanned again.

Here the check is chapter 02's :class:`~harness.tools.permissions.Permissions` (``decide``, the
same rules and mode as every ``bash`` call; nothing is asked), and the command runs through the
``bash`` tool itself, with its sandbox, environment, timeout and output cap. So there is one
way to run a shell command, not two. Without a :class:`ShellInjection`, nothing runs and each
command is replaced with the documented ``[shell command execution disabled by policy]``
(:func:`harness.skills.render.without_shell`).

The bash tool reports a failure as a last line ``exit code: N``; output that itself ends with
such a line is read as a failure too (a limit of reading the tool's text, said plainly).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.skills.render import BLOCK_SHELL, INLINE_SHELL
from harness.tools.base import Tool, ToolContext, ToolError
from harness.tools.permissions import Permissions, Rule
from harness.tools.shell import bash_tool
from harness.tools.workspace import Workspace

BENIGN_EXIT_1 = (
    "grep",
    "rg",
    "egrep",
    "fgrep",
    "find",
    "diff",
    "test",
    "[",
    "git diff",
    "git grep",
)
"""Commands whose exit code 1 is an answer, not a failure (documented list)."""

_EXIT = re.compile(r"(?:^|\n)exit code: (\d+)$")


class InjectionError(RuntimeError):
    """An injected command was not allowed, or failed: the skill is not loaded."""


def bash_rules(allowed_tools: Sequence[str], *, skill_dir: str | None = None) -> list[Rule]:
    """Our ``bash(...)`` allow rules for the ``Bash`` entries of ``allowed-tools``
    (``Bash(git add:*)`` becomes ``bash(git add:*)``; other tools do not concern commands)."""
    rules = []
    for entry in allowed_tools:
        text = entry.replace("${CLAUDE_SKILL_DIR}", skill_dir) if skill_dir else entry
        match = re.fullmatch(r"\s*Bash\s*(\((.*)\))?\s*", text, re.DOTALL)
        if match is not None:
            rules.append(Rule("bash", match.group(2)))
    return rules


def _benign(command: str, code: int) -> bool:
    words = command.split()
    first, two = (words[0] if words else ""), " ".join(words[:2])
    return code == 1 and (first in BENIGN_EXIT_1 or two in BENIGN_EXIT_1)


@dataclass
class ShellInjection:
    """Runs the injected commands of a skill or command, as the permissions allow."""

    permissions: Permissions
    workspace: Workspace
    bash: Tool[Any] = field(default_factory=bash_tool)
    timeout: float = 120.0
    """Seconds per command: the Bash tool's default, as documented."""
    skill_rules: bool = True
    """Whether a skill's own ``allowed-tools`` pre-approve its commands (Claude Code: always,
    "Workspace trust doesn't gate this field"). Turn it off for a folder not trusted yet:
    then only the user's own rules can allow a command a cloned project put in a skill."""

    def _run(self, command: str, pattern: str, allow: list[Rule]) -> str:
        rules = Permissions(
            self.permissions.mode,
            allow=[*allow, *self.permissions.allow],
            ask=list(self.permissions.ask),
            deny=list(self.permissions.deny),
            workspace=self.permissions.workspace,
        )
        decision, why = rules.decide(
            "bash", {"command": command}, read_only=False, workspace=self.workspace
        )
        if decision != "allow":
            raise InjectionError(
                f'Shell command permission check failed for pattern "{pattern}": {why}'
            )
        try:
            output = self.bash(
                {"command": command, "timeout": self.timeout}, ToolContext(self.workspace)
            )
        except ToolError as error:
            raise InjectionError(f'Shell command failed for pattern "{pattern}": {error}') from None
        text = output if isinstance(output, str) else str(output)
        failed = _EXIT.search(text)
        if failed is not None and not _benign(command, int(failed.group(1))):
            raise InjectionError(f'Shell command failed for pattern "{pattern}":\n{text}')
        if failed is not None:
            text = text[: failed.start()]
        return "" if text == "(no output)" else text

    def apply(
        self, text: str, *, allowed_tools: Sequence[str] = (), skill_dir: str | None = None
    ) -> str:
        """``text`` with each injected command replaced by its output, in one pass.
        Raises :class:`InjectionError` (the skill must not be loaded)."""
        allow = bash_rules(allowed_tools, skill_dir=skill_dir) if self.skill_rules else []
        if self.permissions.mode == "plan":
            allow = []  # plan mode changes nothing on a file's say-so; the user's rules still count

        def block(match: re.Match[str]) -> str:
            lines = match.group(0).split("\n")[1:-1]
            return self._run("\n".join(lines), match.group(0), allow)

        def inline(match: re.Match[str]) -> str:
            return self._run(match.group(0)[2:-1], match.group(0), allow)

        pattern = re.compile(
            f"(?P<block>{BLOCK_SHELL.pattern})|(?P<inline>{INLINE_SHELL.pattern})",
            re.MULTILINE | re.DOTALL,
        )

        def either(match: re.Match[str]) -> str:
            return block(match) if match.group("block") else inline(match)

        return pattern.sub(either, text)
