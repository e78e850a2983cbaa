"""Custom slash commands: ``.claude/commands/**/*.md``, and skills typed as ``/name``.

A command is a markdown file whose body is a prompt: typing ``/name some arguments`` sends
the body, with the arguments filled in (:mod:`harness.skills.arguments`), as the user's
message. Claude Code documents them on https://code.claude.com/docs/en/skills (custom
commands "have been merged into skills") and, before that, on its slash-commands page:

* ``.claude/commands/`` belongs to the project, ``~/.claude/commands/`` to the user. ``/help``
  shows "(project)" or "(user)" after a command's description.
* A command in a subfolder, ``.claude/commands/frontend/component.md``, is named
  ``frontend:component`` (observed: ``getRegularCommandName`` in
  ``src/skills/loadSkillsDir.ts``, github.com/Gitlawb/openclaude; the January 2026 page
  said the subfolder showed only in the description).
* Front matter: ``description`` (else the body's first line), ``argument-hint``,
  ``allowed-tools``, ``model``, ``disable-model-invocation``, and the rest of the skill fields.
* Every skill is a command too: ``.claude/skills/deploy/SKILL.md`` is ``/deploy``; "if a
  skill and a command share the same name, the skill takes precedence". A skill with
  ``user-invocable: false`` cannot be typed. Across levels, personal overrides project (the
  skills page says commands "work the same way"; the older slash-commands page said the
  project's command won, we follow the current page).

Not done (said plainly): ``allowed-tools`` and ``model`` are read and shown but not applied
(no per-command permission grant or model switch); ``context: fork`` runs inline;
``!``-command lines run only when a :class:`~harness.skills.injection.ShellInjection` is given
(through the permissions); ``@file`` references are left as
written (the model reads the file with its tools); stacking several ``/a /b`` in one line
is not expanded.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harness.skills.discovery import (
    NAME_PATTERN,
    Scope,
    SkillCatalog,
    SkillFile,
    SkillLoadError,
    SkillProblem,
    _describe_os_error,
    read_markdown,
)
from harness.skills.frontmatter import (
    Fields,
    FieldsView,
    FrontMatterError,
    first_line_description,
    parse_fields,
    split_front_matter,
)
from harness.skills.injection import InjectionError, ShellInjection
from harness.skills.render import render

MAX_DEPTH = 5
"""Our cap on subfolder depth under a commands folder."""
MAX_FILES = 1000
"""Our cap on the command files read from one commands folder."""

_SLASH = re.compile(r"^/(?P<name>[A-Za-z0-9][A-Za-z0-9._:-]*)(?:\s+(?P<args>.*))?$", re.DOTALL)


class CommandError(ValueError):
    """A ``/name`` that cannot run: unknown, not typable, or its file broke since discovery."""


@dataclass(frozen=True)
class CustomCommand(FieldsView):
    """A command the user can type as ``/name``: a command file or a skill."""

    name: str
    description: str
    path: Path
    scope: Scope
    kind: Literal["command", "skill"] = "command"
    base_dir: str | None = None
    """A skill's folder (shown to the model); ``None`` for a command file."""
    fields: Fields = field(default_factory=Fields)

    @property
    def namespace(self) -> str:
        """``frontend`` for ``frontend:component``; empty at the top level."""
        return self.name.rpartition(":")[0]

    def label(self) -> str:
        """Where it comes from, as ``/help`` shows it: ``(project)``, ``(user:frontend)``."""
        origin = self.scope if not self.namespace else f"{self.scope}:{self.namespace}"
        return f"({origin})"

    def body(self) -> str:
        text = read_markdown(self.path)
        try:
            _, body = split_front_matter(text, source=self.path.name)
        except FrontMatterError as error:
            raise SkillLoadError(error.reason) from None
        return body


def from_skill(skill: SkillFile) -> CustomCommand:
    """A skill as a command (``/name`` loads the skill)."""
    return CustomCommand(
        skill.name,
        skill.description,
        skill.path,
        skill.scope,
        "skill",
        skill.base_dir,
        skill.fields,
    )


@dataclass(frozen=True)
class CommandCatalog:
    """The commands the user can type, sorted by name, and the problems met finding them."""

    commands: tuple[CustomCommand, ...] = ()
    problems: tuple[SkillProblem, ...] = ()

    def get(self, name: str) -> CustomCommand | None:
        return next((c for c in self.commands if c.name == name), None)

    def names(self) -> list[str]:
        return [c.name for c in self.commands]

    def help_lines(self) -> list[str]:
        """One line per command for ``/help``: ``/name [hint]  description (scope)``."""
        lines = []
        for c in self.commands:
            usage = f"/{c.name}" + (f" {c.argument_hint}" if c.argument_hint else "")
            lines.append(f"{usage}  {c.description} {c.label()}".rstrip())
        return lines


def _files(root: Path, problems: list[SkillProblem]) -> Iterator[Path]:
    """The ``.md`` files under ``root``, depth-first, sorted; symlink loops are cut."""
    visited: set[tuple[int, int]] = set()
    count = 0

    def walk(folder: Path, depth: int) -> Iterator[Path]:
        nonlocal count
        try:
            info = folder.stat()
            if (info.st_dev, info.st_ino) in visited:
                problems.append(SkillProblem(folder, "a folder reached twice (a symlink loop)"))
                return
            visited.add((info.st_dev, info.st_ino))
            names = sorted(os.listdir(folder))
        except OSError as error:
            problems.append(SkillProblem(folder, _describe_os_error(error)))
            return
        for name in names:
            path = folder / name
            try:
                mode = path.stat().st_mode
            except OSError as error:
                problems.append(SkillProblem(path, _describe_os_error(error)))
                continue
            if stat.S_ISDIR(mode):
                if depth >= MAX_DEPTH:
                    problems.append(SkillProblem(path, f"deeper than {MAX_DEPTH} folders; skipped"))
                    continue
                yield from walk(path, depth + 1)
            elif name.lower().endswith(".md"):
                count += 1
                if count > MAX_FILES:
                    reason = f"more than {MAX_FILES:,} files; the rest are skipped"
                    problems.append(SkillProblem(root, reason))
                    return
                yield path

    try:
        if not root.exists() and not root.is_symlink():
            return
    except OSError:
        return
    try:
        if not stat.S_ISDIR(root.stat().st_mode):
            problems.append(SkillProblem(root, "is not a folder"))
            return
    except OSError as error:
        problems.append(SkillProblem(root, _describe_os_error(error)))
        return
    yield from walk(root, 0)


def load_command(path: Path, root: Path, scope: Scope) -> CustomCommand:
    """One command file. Raises :class:`SkillLoadError` or ``FrontMatterError``."""
    parts = [*path.relative_to(root).parent.parts, path.name[: -len(".md")]]
    bad = next((p for p in parts if not NAME_PATTERN.match(p)), None)
    if bad is not None:
        raise SkillLoadError(
            "not a usable command name: each part is letters, digits, '.', '_' and '-', "
            "starting with a letter or digit"
        )
    text = read_markdown(path)
    data, body = split_front_matter(text, source=path.name)
    fields = parse_fields(data, source=path.name)
    description = fields.description
    if description is None or not description.strip():
        description = first_line_description(body) or "Custom command"
    return CustomCommand(":".join(parts), " ".join(description.split()), path, scope, fields=fields)


def discover_commands(
    workspace: Path, home: Path | None, skills: SkillCatalog | None = None
) -> CommandCatalog:
    """The command files of the user (``home/.claude/commands``) and the project
    (``workspace/.claude/commands``), and every user-invocable skill in ``skills``.

    A skill beats a command of the same name; a personal command beats a project one. The
    losers are reported as problems, never raised."""
    workspace = Path(workspace).absolute()
    problems: list[SkillProblem] = list(skills.problems) if skills is not None else []
    found: dict[str, CustomCommand] = {}
    if skills is not None:
        for skill in skills.skills:
            if skill.user_invocable:
                found[skill.name] = from_skill(skill)
    roots: list[tuple[Path, Scope]] = []
    if home is not None:
        roots.append((Path(home).absolute() / ".claude" / "commands", "user"))
    project_root = workspace / ".claude" / "commands"
    if not roots or roots[0][0] != project_root:
        roots.append((project_root, "project"))
    for root, scope in roots:
        for path in _files(root, problems):
            try:
                if scope == "project" and not path.resolve().is_relative_to(workspace.resolve()):
                    raise SkillLoadError("a symlink to a file outside the project")
                command = load_command(path, root, scope)
            except (SkillLoadError, FrontMatterError) as error:
                reason = error.reason if isinstance(error, FrontMatterError) else str(error)
                problems.append(SkillProblem(path, reason))
                continue
            if command.name in found:
                winner = found[command.name]
                problems.append(
                    SkillProblem(
                        path,
                        f"/{command.name} is already the {winner.scope} {winner.kind} at "
                        f"{winner.path}; this file is not used",
                    )
                )
                continue
            found[command.name] = command
    ordered = tuple(sorted(found.values(), key=lambda c: c.name))
    return CommandCatalog(ordered, tuple(problems))


def parse_slash(text: str) -> tuple[str, str] | None:
    """``("deploy", "staging now")`` for ``/deploy staging now``; None if ``text`` is not a
    command line. The arguments are everything after the first run of spaces, kept as typed."""
    match = _SLASH.match(text.strip())
    if match is None:
        return None
    return match.group("name"), (match.group("args") or "").strip()


def expand(
    command: CustomCommand,
    arguments: str,
    *,
    session_id: str = "",
    project_dir: str = "",
    injection: ShellInjection | None = None,
) -> str:
    """The prompt ``/name arguments`` sends: the body with its placeholders filled.

    A skill gets its base-directory line, as when the model loads it. ``!``-command lines
    run only with ``injection`` (see :mod:`harness.skills.injection`). Raises
    :class:`CommandError` if the command may not be typed, its file broke since discovery,
    or an injected command was refused or failed.
    """
    if not command.user_invocable:
        raise CommandError(f"/{command.name} is for the model only (user-invocable: false)")
    try:
        body = command.body()
    except SkillLoadError as error:
        raise CommandError(f"/{command.name} cannot be read: {error}") from None
    shell = None
    if injection is not None:

        def shell(text: str) -> str:
            return injection.apply(
                text, allowed_tools=command.allowed_tools, skill_dir=command.base_dir
            )

    try:
        return render(
            body,
            arguments,
            base_dir=command.base_dir,
            names=command.fields.arguments,
            session_id=session_id,
            project_dir=project_dir,
            shell=shell,
        )
    except InjectionError as error:
        raise CommandError(f"/{command.name} did not run. {error}") from None


def lookup(catalog: CommandCatalog, name: str) -> CustomCommand:
    """The command named ``name``; :class:`CommandError` listing the known names if none."""
    command = catalog.get(name)
    if command is None:
        known = ", ".join(f"/{n}" for n in catalog.names()) or "none"
        raise CommandError(f"unknown command /{name}; available: {known}")
    return command
