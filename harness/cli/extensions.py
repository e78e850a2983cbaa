"""Chapter 13 on the command line: skills, the user's slash commands, hooks from settings.

:func:`load_extensions` reads what a user configures without writing Python, in Claude
Code's formats, for one session:

* skills (``.claude/skills/<name>/SKILL.md``, the project's and the user's): the ``Skill``
  tool and the listing of names and descriptions in the system prompt;
* slash commands from ``.claude/commands/*.md`` (and every skill the user may invoke): typed
  as ``/name arguments``, expanded into a prompt by :func:`expand_command`;
* hooks from the settings files (the user's, the project's, the project's local one, and the
  machine's managed policy), run as shell commands in Claude Code's protocol through chapter
  02's hook points and the loop's ``before_prompt`` and ``on_stop``;
* folder trust: a project's own hooks run only once a person said they trust the folder
  (asked the first time one would run, asked again when they change); a skill's
  ``allowed-tools`` pre-approve its shell lines only in a folder already trusted.

A file that cannot be used (broken JSON, bad YAML, a hook entry of the wrong shape) is one
line of :attr:`Extensions.problems`, said once at start-up; the session goes on without it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.text import Text

from harness.cli.terminal import Activity, NoInput, Reader, readable
from harness.settings import FolderTrust, Settings, TrustRequest, default_store_path
from harness.settings.hooks import SettingsHooks
from harness.settings.session import session_hooks
from harness.skills import (
    CommandError,
    SessionSkills,
    SkillLoadError,
    expand,
    lookup,
    parse_slash,
    session_skills,
)
from harness.skills.injection import ShellInjection
from harness.tools.permissions import Permissions
from harness.tools.workspace import Workspace

AskTrust = Callable[[TrustRequest], bool]


def never_trust(_request: TrustRequest) -> bool:
    """Nobody to ask (one-shot mode without a terminal): the project's hooks do not run."""
    return False


@dataclass
class Extensions:
    """What the user configured for this session, loaded and checked."""

    skills: SessionSkills
    settings: Settings
    trust: FolderTrust
    hooks: SettingsHooks
    injection: ShellInjection
    session_id: str = ""
    problems: list[str] = field(default_factory=list)
    """Every file or entry skipped, one line each (skills, commands, settings, trust)."""


def load_extensions(
    workspace: Workspace,
    *,
    home: Path,
    permissions: Permissions,
    session_id: str,
    transcript_path: Path,
    ask_trust: AskTrust = never_trust,
    managed_dir: Path | None = None,
    context_window: int | None = None,
    resumed: bool = False,
) -> Extensions:
    """Skills, commands, settings hooks and the trust gate of ``workspace`` for one session."""
    problems: list[str] = []
    configured = session_hooks(
        workspace.root,
        home,
        ask=ask_trust,
        store=default_store_path(home),
        session_id=session_id,
        transcript_path=transcript_path,
        permission_mode=permissions.mode,
        managed_dir=managed_dir,
        source="resume" if resumed else "startup",
        on_problem=problems.append,  # the trust file's, said when they happen
    )
    settings, trust, hooks = configured.settings, configured.trust, configured.hooks
    problems += settings.problems
    # A cloned project's skill may not pre-approve its own shell lines until the folder is
    # trusted (Claude Code does not tie allowed-tools to trust; we are stricter).
    injection = ShellInjection(permissions, workspace, skill_rules=trust.status() is True)
    skills = session_skills(
        workspace.root,
        home,
        context_window=context_window,
        session_id=session_id,
        injection=injection,
    )
    problems += [str(problem) for problem in skills.problems]
    return Extensions(skills, settings, trust, hooks, injection, session_id, problems)


def expand_command(extensions: Extensions, line: str) -> str | None:
    """The prompt a typed ``/name arguments`` line stands for, or None if no skill or command
    file of the user's is called ``name``. Raises :class:`ValueError` with a reason a person
    can act on when the command cannot be expanded (unreadable, refused shell line)."""
    parsed = parse_slash(line)
    if parsed is None:
        return None
    name, arguments = parsed
    try:
        command = lookup(extensions.skills.commands, name)
    except CommandError:
        return None
    try:
        return expand(
            command,
            arguments,
            session_id=extensions.session_id,
            project_dir=str(extensions.injection.workspace.root),
            injection=extensions.injection,
        )
    except (CommandError, SkillLoadError, OSError) as error:
        raise ValueError(f"/{name} could not be expanded: {error}") from error


def terminal_trust(reader: Reader, console: Console, activity: Activity) -> AskTrust:
    """Claude Code's folder-trust question at the terminal: the commands the project's hooks
    would run, shown as they are written (control characters made visible), then yes or no.
    Only ``y`` trusts; no answer (Ctrl-D, a closed input) is no."""

    def ask(request: TrustRequest) -> bool:
        activity.hide()
        for line in readable(request.text()).splitlines():
            console.print(Text(line), style="bold yellow")
        try:
            answer = reader.read("  Trust this folder? [y/N] ").strip().lower()
        except (EOFError, NoInput):
            answer = ""
        activity.show("working…")
        return answer in ("y", "yes")

    return ask


__all__ = [
    "AskTrust",
    "Extensions",
    "expand_command",
    "load_extensions",
    "never_trust",
    "terminal_trust",
]
