"""Finding skills: ``.claude/skills/<name>/SKILL.md`` in the workspace and the user's home.

A skill is a folder with a ``SKILL.md`` (https://code.claude.com/docs/en/skills, "Where
skills live"): ``~/.claude/skills/<name>/SKILL.md`` is personal, for every project;
``.claude/skills/<name>/SKILL.md`` belongs to the project. Discovery reads each file's front
matter only; the body is read again when the skill is used (:meth:`SkillFile.body`), so a
session with fifty skills pays for fifty descriptions, not fifty bodies.

As documented:

* The command name, the one the model passes to the ``Skill`` tool and the user types after
  ``/``, is the **folder's** name. The front matter's ``name`` is only a display label for
  personal and project skills ("How a skill gets its command name").
* When two levels have a skill of the same name, the personal one wins ("personal overrides
  project"); the other is reported as shadowed.
* ``SKILL.md`` is matched in any letter case (Claude Code's ``isSkillFile`` is
  ``/^skill\\.md$/i``).

Not done (said plainly): skills in nested ``.claude/skills`` folders below the working
directory, plugin and managed (enterprise) skills, ``category/skill/SKILL.md`` layouts,
``paths`` activation, and live reloading when a file changes. Discovery runs once, at the
start of a session. A personal skill's folder lies outside the workspace, so the file tools
cannot read the files it refers to (course invariant 5); its body still loads.

Nothing in a skills folder can stop discovery. Each file that cannot be used is a
:class:`SkillProblem` with the reason: not UTF-8, too big, front matter that is not YAML or
not a mapping or has a field of the wrong type, a folder named ``SKILL.md``, a symlink that
loops or points nowhere, a project SKILL.md that is a symlink to a file outside the
project (course invariant 5: nothing outside the workspace is read on a project's say-so), a
folder name that is not a usable command name, the same file reached twice, a name another
skill already has.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harness.skills.frontmatter import (
    Fields,
    FieldsView,
    FrontMatterError,
    first_line_description,
    parse_fields,
    split_front_matter,
)
from harness.skills.render import render

Scope = Literal["project", "user"]

MAX_SKILL_BYTES = 1024 * 1024
"""Our cap on a SKILL.md (the largest in anthropics/skills, claude-api, is about 74 KB; the
docs advise "Keep SKILL.md under 500 lines")."""

MAX_ENTRIES = 1000
"""Our cap on the folders looked at in one skills directory."""

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""A folder name we accept as a command name (our choice: Claude Code takes any name; we
refuse spaces, control characters and ``:`` so ``/name args`` always parses)."""


class SkillLoadError(RuntimeError):
    """A skill's file could not be read again when it was used (moved, changed, broken)."""


@dataclass(frozen=True)
class SkillProblem:
    """A file or folder that was skipped, and why."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def _describe_os_error(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "a symlink loop"
    if error.errno == errno.ENOENT:
        return "a symlink that points nowhere"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "not readable (permission denied)"
    return f"cannot be read ({errno.errorcode.get(error.errno or 0, 'error')})"


def read_markdown(path: Path, *, limit: int = MAX_SKILL_BYTES) -> str:
    """The file's text. Raises :class:`SkillLoadError` with a plain reason: not a regular file,
    bigger than ``limit`` bytes, unreadable, not UTF-8."""
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise SkillLoadError(f"{path.name} is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise SkillLoadError(f"{path.name} is not a regular file")
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as error:
        raise SkillLoadError(_describe_os_error(error)) from None
    if len(data) > limit:
        raise SkillLoadError(f"bigger than the {limit:,}-byte limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SkillLoadError(f"not UTF-8 text (byte {error.start:,} cannot be decoded)") from None


@dataclass(frozen=True)
class SkillFile(FieldsView):
    """One skill, from its front matter. The body is read on demand (:meth:`body`)."""

    name: str
    """The command name: the folder's name. What the ``Skill`` tool and ``/name`` take."""
    description: str
    path: Path
    """The ``SKILL.md`` file."""
    scope: Scope
    base_dir: str
    """The skill's folder as the model is shown it: relative to the workspace for a project
    skill (so the file tools reach it), absolute for a personal one."""
    fields: Fields = field(default_factory=Fields)

    @property
    def display_name(self) -> str:
        return self.fields.name or self.name

    @property
    def directory(self) -> Path:
        return self.path.parent

    def body(self) -> str:
        """The markdown after the front matter, read from disk now. Raises
        :class:`SkillLoadError` if the file is gone or no longer valid."""
        text = read_markdown(self.path)
        try:
            _, body = split_front_matter(text, source=self.path.name)
        except FrontMatterError as error:
            raise SkillLoadError(error.reason) from None
        return body

    def render(self, arguments: str | None, *, session_id: str = "", project_dir: str = "") -> str:
        """What the model receives when the skill is used (see :mod:`harness.skills.render`)."""
        return render(
            self.body(),
            arguments,
            base_dir=self.base_dir,
            names=self.fields.arguments,
            session_id=session_id,
            project_dir=project_dir,
        )


@dataclass(frozen=True)
class SkillCatalog:
    """The skills found, in listing order (personal first, then project, each by name), and
    the problems met on the way."""

    skills: tuple[SkillFile, ...] = ()
    problems: tuple[SkillProblem, ...] = ()

    def get(self, name: str) -> SkillFile | None:
        return next((s for s in self.skills if s.name == name), None)

    def names(self) -> list[str]:
        return [s.name for s in self.skills]

    def model_invocable(self) -> list[SkillFile]:
        """The skills the model may load (not ``disable-model-invocation``)."""
        return [s for s in self.skills if not s.disable_model_invocation]


def _entries(root: Path, problems: list[SkillProblem]) -> Iterator[Path]:
    """The folders directly under ``root``, sorted, at most :data:`MAX_ENTRIES`."""
    try:
        if not root.exists() and not root.is_symlink():
            return
        info = root.stat()
    except OSError as error:
        problems.append(SkillProblem(root, _describe_os_error(error)))
        return
    if not stat.S_ISDIR(info.st_mode):
        problems.append(SkillProblem(root, "is not a folder"))
        return
    try:
        names = sorted(os.listdir(root))
    except OSError as error:
        problems.append(SkillProblem(root, _describe_os_error(error)))
        return
    if len(names) > MAX_ENTRIES:
        problems.append(
            SkillProblem(root, f"has {len(names):,} entries; only the first {MAX_ENTRIES:,} read")
        )
    for name in names[:MAX_ENTRIES]:
        yield root / name


def _skill_file(folder: Path, problems: list[SkillProblem]) -> Path | None:
    """The folder's SKILL.md (any letter case), or None when it is not a skill folder."""
    try:
        info = folder.stat()
    except OSError as error:
        problems.append(SkillProblem(folder, _describe_os_error(error)))
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None  # a stray file beside the skill folders: not a skill, not a problem
    try:
        candidates = sorted(n for n in os.listdir(folder) if n.lower() == "skill.md")
    except OSError as error:
        problems.append(SkillProblem(folder, _describe_os_error(error)))
        return None
    if not candidates:
        return None
    if len(candidates) > 1:
        problems.append(
            SkillProblem(folder, f"has {' and '.join(candidates)}; {candidates[0]} is used")
        )
    return folder / candidates[0]


def load_skill(path: Path, *, scope: Scope, base_dir: str) -> SkillFile:
    """One skill from its SKILL.md. Raises :class:`SkillLoadError` or
    :class:`~harness.skills.frontmatter.FrontMatterError` with the reason."""
    name = path.parent.name
    if not NAME_PATTERN.match(name):
        raise SkillLoadError(
            "the folder's name is not a usable skill name: letters, digits, '.', '_' and '-', "
            "starting with a letter or digit, at most 64 characters"
        )
    text = read_markdown(path)
    data, body = split_front_matter(text, source=path.name)
    fields = parse_fields(data, source=path.name)
    description = fields.description
    if description is None or not description.strip():
        description = first_line_description(body)
    return SkillFile(name, " ".join(description.split()), path, scope, base_dir, fields)


def _label(folder: Path, workspace: Path, scope: Scope) -> str:
    if scope == "project":
        return folder.relative_to(workspace).as_posix()
    return str(folder)


def discover_skills(workspace: Path, home: Path | None) -> SkillCatalog:
    """Every skill in ``home/.claude/skills`` (personal) and ``workspace/.claude/skills``
    (project). ``home=None`` looks at the project only. Never raises for what it finds on
    disk: each unusable file is a :class:`SkillProblem`."""
    workspace = Path(workspace).absolute()
    roots: list[tuple[Path, Scope]] = []
    if home is not None:
        roots.append((Path(home).absolute() / ".claude" / "skills", "user"))
    roots.append((workspace / ".claude" / "skills", "project"))
    skills: dict[str, SkillFile] = {}
    seen: dict[Path, Path] = {}
    problems: list[SkillProblem] = []
    for root, scope in roots:
        if scope == "project" and home is not None and roots[0][0] == root:
            continue  # the workspace is the home folder: one set of skills, not two
        for folder in _entries(root, problems):
            path = _skill_file(folder, problems)
            if path is None:
                continue
            try:
                real = path.resolve(strict=True)
            except (OSError, RuntimeError) as error:
                reason = (
                    _describe_os_error(error) if isinstance(error, OSError) else "a symlink loop"
                )
                problems.append(SkillProblem(path, reason))
                continue
            if scope == "project" and not real.is_relative_to(workspace.resolve()):
                # A cloned project must not make the harness read, and send to the model,
                # a file of the user's (a SKILL.md symlinked to ~/.ssh/id_rsa).
                problems.append(SkillProblem(path, "a symlink to a file outside the project"))
                continue
            if real in seen:
                problems.append(SkillProblem(path, f"the same file as {seen[real]}; skipped"))
                continue
            seen[real] = path
            try:
                skill = load_skill(path, scope=scope, base_dir=_label(folder, workspace, scope))
            except (SkillLoadError, FrontMatterError) as error:
                reason = error.reason if isinstance(error, FrontMatterError) else str(error)
                problems.append(SkillProblem(path, reason))
                continue
            if skill.name in skills:
                winner = skills[skill.name]
                problems.append(
                    SkillProblem(
                        path,
                        f"a {winner.scope} skill named {skill.name!r} ({winner.path}) takes "
                        "precedence; this one is not used",
                    )
                )
                continue
            skills[skill.name] = skill
    return SkillCatalog(tuple(skills.values()), tuple(problems))
