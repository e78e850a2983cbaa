"""Skills and custom slash commands in Claude Code's formats (chapter 13).

* :mod:`~harness.skills.frontmatter`: the YAML block at the top of a markdown file, typed.
* :mod:`~harness.skills.discovery`: ``.claude/skills/<name>/SKILL.md``, project and personal.
* :mod:`~harness.skills.listing`: names and descriptions for the system prompt, within budget.
* :mod:`~harness.skills.tool`: the ``Skill`` tool, which loads a body on demand.
* :mod:`~harness.skills.commands`: ``/name`` from ``.claude/commands`` and from skills.
* :mod:`~harness.skills.arguments` and :mod:`~harness.skills.render`: filling a body in.
* :mod:`~harness.skills.injection`: ``!``-command lines, run as the permissions allow.
* :mod:`~harness.skills.session`: all of it set up for one session in one call.
"""

from harness.skills.commands import (
    CommandCatalog,
    CommandError,
    CustomCommand,
    discover_commands,
    expand,
    lookup,
    parse_slash,
)
from harness.skills.discovery import (
    SkillCatalog,
    SkillFile,
    SkillLoadError,
    SkillProblem,
    discover_skills,
)
from harness.skills.frontmatter import FrontMatterError, split_front_matter
from harness.skills.injection import InjectionError, ShellInjection
from harness.skills.listing import format_listing, skills_section
from harness.skills.session import SessionSkills, session_skills
from harness.skills.tool import SKILL_TOOL, SkillLoader, skill_tool

__all__ = [
    "SKILL_TOOL",
    "CommandCatalog",
    "CommandError",
    "CustomCommand",
    "FrontMatterError",
    "InjectionError",
    "SessionSkills",
    "ShellInjection",
    "SkillCatalog",
    "SkillFile",
    "SkillLoadError",
    "SkillLoader",
    "SkillProblem",
    "discover_commands",
    "discover_skills",
    "expand",
    "format_listing",
    "lookup",
    "parse_slash",
    "session_skills",
    "skill_tool",
    "skills_section",
    "split_front_matter",
]
