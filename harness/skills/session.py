"""One call that sets skills and commands up for a session (for the command line and notebooks).

:func:`session_skills` discovers the skills and the command files once, and returns what an
agent needs: the ``Skill`` tool, the system-prompt section that lists what the tool can load,
the commands the user can type, and every problem met on the way (to show, never to stop on).
When nothing can be loaded by the model there is neither a tool nor a section, so a project
without skills pays nothing for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.prompt import Section
from harness.skills.commands import CommandCatalog, discover_commands
from harness.skills.discovery import SkillCatalog, SkillProblem, discover_skills
from harness.skills.injection import ShellInjection
from harness.skills.listing import skills_section
from harness.skills.tool import SkillInput, SkillLoader, skill_tool
from harness.tools.base import Tool


@dataclass(frozen=True)
class SessionSkills:
    skills: SkillCatalog
    commands: CommandCatalog
    loader: SkillLoader
    tool: Tool[SkillInput] | None
    """The ``Skill`` tool, or None when the model has nothing to load."""
    section: Section | None
    """The listing (static, cached), or None with the tool."""

    @property
    def problems(self) -> tuple[SkillProblem, ...]:
        """Every file skipped, skills' and commands' (the command catalog carries both)."""
        return self.commands.problems

    def tools(self) -> list[Tool[Any]]:
        return [self.tool] if self.tool is not None else []


def session_skills(
    workspace: Path,
    home: Path | None,
    *,
    context_window: int | None = None,
    session_id: str = "",
    injection: ShellInjection | None = None,
) -> SessionSkills:
    """Skills and commands of ``workspace`` and ``home`` (None: the project's only).

    ``injection`` runs skills' ``!``-command lines through the permissions (pass the same
    to :func:`~harness.skills.commands.expand` for typed commands); None leaves them unrun."""
    skills = discover_skills(workspace, home)
    commands = discover_commands(workspace, home, skills)
    loader = SkillLoader(skills, commands, session_id=session_id, injection=injection)
    section = skills_section(loader.invocable(), context_window=context_window)
    tool = skill_tool(loader) if section is not None else None
    return SessionSkills(skills, commands, loader, tool, section)
