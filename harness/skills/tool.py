"""The ``Skill`` tool: the model loads a skill's body when it needs it.

Claude Code's tool of the same name (``src/tools/SkillTool/`` in github.com/Gitlawb/openclaude)
takes ``skill`` (the name, a leading ``/`` allowed) and optional ``args``, and:

* refuses an unknown name: ``Unknown skill: <name>`` (we add the names there are, so the
  model can correct itself in one step);
* refuses a skill with ``disable-model-invocation: true``: ``Skill <name> cannot be used with
  Skill tool due to disable-model-invocation`` (the docs add that it "instructs it not to
  reproduce the deploy steps another way"; so do we);
* renders the body (:mod:`harness.skills.render`): ``Base directory for this skill: <dir>``,
  then the body with its arguments filled in. The base directory is how the model finds the
  files the skill refers to and reads them with ``read_file``, ``grep`` and ``bash``.

Where we differ: Claude Code's ``tool_result`` says only ``Launching skill: <name>`` and the
body arrives as a separate user message beside it; our tools answer with one result, so the
result is that line followed by the body. Either way the body enters the conversation once,
after the cached prefix, and is read from the cache on every later request.

Custom commands (``.claude/commands``) can be loaded too, as in Claude Code, skills first when
a name is both. ``!``-command lines run only with a :class:`ShellInjection` (through the
permissions; a refused or failed command means the skill is not loaded, as documented).
``allowed-tools`` pre-approves those commands only; it is not granted to the model's own
calls, and ``model`` and ``context: fork`` are not applied (see
:mod:`harness.skills.commands`). With ``dedupe=True`` a second call whose rendered content is
identical answers with a short note instead of a second copy, as the docs describe ("Skill
content lifecycle"); it is off by default because after a compaction the first copy may be
gone, and the loader cannot see that (call :meth:`SkillLoader.forget` when compacting).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import Field

from harness.skills.commands import CommandCatalog, CustomCommand
from harness.skills.discovery import SkillCatalog, SkillFile, SkillLoadError
from harness.skills.injection import InjectionError, ShellInjection
from harness.skills.render import render
from harness.tools.base import Tool, ToolContext, ToolError, ToolInput

SKILL_TOOL = "Skill"

DESCRIPTION = (
    "Load a skill: specialised instructions for a kind of task, listed by name and "
    "description in the system prompt. When the user's request matches a listed skill, call "
    "this tool with its name before doing anything else about the task, and then follow the "
    "instructions it returns. A request that names /something refers to a skill or command "
    "of that name. Pass args when the skill takes arguments. The result starts with the "
    "skill's base directory: read the files the skill refers to from there with your usual "
    "tools. Do not call it again for a skill whose instructions are already in the "
    "conversation, and never mention a skill without loading it."
)


class SkillInput(ToolInput):
    skill: str = Field(description='The skill name, e.g. "pdf" or "review-pr".')
    args: str | None = Field(default=None, description="Optional arguments for the skill.")


@dataclass
class SkillLoader:
    """What the ``Skill`` tool can load: the skills, and the command files, of a session."""

    skills: SkillCatalog
    commands: CommandCatalog | None = None
    session_id: str = ""
    project_dir: str = "."
    dedupe: bool = False
    injection: ShellInjection | None = None
    """Runs ``!``-command lines through the permissions; None: they are not run."""
    loaded: set[str] = field(default_factory=set)
    uses: dict[str, int] = field(default_factory=dict)
    """How often each name was loaded (the listing's budget drops the least used first)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def invocable(self) -> list[SkillFile | CustomCommand]:
        """Everything the model may load, skills first: the listing shows exactly these."""
        items: list[SkillFile | CustomCommand] = list(self.skills.model_invocable())
        names = {s.name for s in self.skills.skills}
        if self.commands is not None:
            items += [
                c
                for c in self.commands.commands
                if c.kind == "command" and c.name not in names and not c.disable_model_invocation
            ]
        return items

    def _find(self, name: str) -> SkillFile | CustomCommand | None:
        skill = self.skills.get(name)
        if skill is not None:
            return skill
        command = self.commands.get(name) if self.commands is not None else None
        return command if command is not None and command.kind == "command" else None

    def forget(self) -> None:
        """Forget which contents were loaded (after a compaction removed them)."""
        with self._lock:
            self.loaded.clear()

    def load(self, name: str, args: str | None) -> str:
        """The tool's answer for ``name``; :class:`ToolError` with the reason otherwise."""
        wanted = name.strip().removeprefix("/")
        if not wanted:
            raise ToolError('Missing skill name: pass the name as skill, e.g. skill: "pdf".')
        item = self._find(wanted)
        if item is None:
            known = ", ".join(i.name for i in self.invocable()) or "none"
            raise ToolError(f"Unknown skill: {wanted}. Available skills: {known}.")
        if item.disable_model_invocation:
            raise ToolError(
                f"Skill {wanted} cannot be used with {SKILL_TOOL} tool due to "
                "disable-model-invocation. Only the user can run it (by typing "
                f"/{wanted}); do not carry out its steps another way, suggest the user runs it."
            )
        try:
            body = item.body()
        except SkillLoadError as error:
            raise ToolError(f"Skill {wanted} could not be read: {error}") from None
        injection = self.injection
        shell = None
        if injection is not None:

            def shell(text: str) -> str:
                return injection.apply(
                    text, allowed_tools=item.allowed_tools, skill_dir=item.base_dir
                )

        try:
            text = render(
                body,
                args,
                base_dir=item.base_dir,
                names=item.fields.arguments,
                session_id=self.session_id,
                project_dir=self.project_dir,
                shell=shell,
            )
        except InjectionError as error:
            raise ToolError(f"Skill {wanted} was not loaded. {error}") from None
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:  # read-only tools may run in parallel
            self.uses[item.name] = self.uses.get(item.name, 0) + 1
            again = digest in self.loaded
            self.loaded.add(digest)
        if self.dedupe and again:
            return (
                f"Skill {item.name} is already loaded: its instructions, unchanged, are earlier "
                "in this conversation. Follow them."
            )
        return f"Launching skill: {item.name}\n\n{text}"


def skill_tool(loader: SkillLoader) -> Tool[SkillInput]:
    """The ``Skill`` tool over ``loader``. Read-only: it reads skill files and changes nothing,
    so it runs in plan mode and beside other read-only calls. With a
    :class:`~harness.skills.injection.ShellInjection` it may run a skill's ``!``-command lines
    lines, but each of them only when the permissions *allow* it outright (nothing is asked;
    plan mode ignores a skill's own rules), so the tool itself needs no approval."""

    def run(args: SkillInput, context: ToolContext) -> str:
        return loader.load(args.skill, args.args)

    return Tool(SKILL_TOOL, DESCRIPTION, SkillInput, run, read_only=True)


__all__: Sequence[str] = ("SKILL_TOOL", "SkillInput", "SkillLoader", "skill_tool")
