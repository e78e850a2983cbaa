"""Chapter 13's sessions: the same work with 30 skills inlined and listed, and hooks at work.

:func:`skill_session` runs three prompts on the project of :mod:`harness.notebook.extensions`
with a scripted model, prompt caching and a fake clock, with the skills either inlined into
the system prompt (every body, every request) or listed (a line each, and the ``Skill`` tool
to load a body when it is needed). :func:`edit_and_restart` then changes one skill's body, as
a teammate fixing a typo would, and starts a second session against the same prompt cache.
:func:`hooks_agent` builds an agent whose hooks come from the project's settings files, behind
the folder-trust gate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness import messages as m
from harness.agent import Agent
from harness.clock import Clock, FakeClock
from harness.model import DEFAULT_MODEL, ScriptedModel
from harness.model.models import context_window_of
from harness.model.scripted import Step, reply, tool_call
from harness.notebook.extensions import LOADED_SKILL
from harness.pricing import MeteredCall
from harness.prompt import PromptCaching, Section, SystemPrompt, default_sections
from harness.settings import FolderTrust, Settings, TrustRequest
from harness.settings.hooks import SettingsHooks
from harness.settings.session import session_hooks
from harness.skills import SKILL_TOOL, discover_skills, session_skills
from harness.skills.listing import inlined_section
from harness.tokens import estimate_system
from harness.tools import Hooks, Permissions, builtin_tools
from harness.tools.base import Tool
from harness.tools.builtins import read_file, write_file

Layout = Literal["inlined", "listed"]

PROMPTS = (
    "What does app/tax.py do?",
    "Write the release notes for 1.4.0.",
    "Which rate does app/billing.py use?",
)
"""The session's three prompts: only the second needs a skill."""

NOTES = """\
## 1.4.0 (2026-11-27)

### Added
- A CSV export of customers (#44)

### Changed
- Tax rates are read from config/tax.toml (#47)

### Fixed
- Invoices round each line to cents before the total (#41)
"""


def script(layout: Layout) -> list[Step]:
    """The model's replies: a question, the release notes (loading the skill first when it is
    only listed), another question."""
    steps: list[Step] = [
        reply("Reading it.", tool_calls=[tool_call("read_file", path="app/tax.py")]),
        reply("app/tax.py applies the tax rate in twenty steps, each rounded to cents."),
    ]
    if layout == "listed":
        steps.append(
            reply(
                "The release-notes skill says how.",
                tool_calls=[tool_call(SKILL_TOOL, skill=LOADED_SKILL)],
            )
        )
    steps += [
        reply(tool_calls=[tool_call("read_file", path="CHANGELOG.md")]),
        reply(tool_calls=[tool_call("write_file", path="RELEASE_NOTES.md", content=NOTES)]),
        reply("RELEASE_NOTES.md is written: one entry under each of Added, Changed and Fixed."),
        reply(tool_calls=[tool_call("read_file", path="app/billing.py")]),
        reply("app/billing.py uses RATE_0, 0.1."),
    ]
    return steps


def skills_prompt(section: Section | None, tools: Sequence[str]) -> SystemPrompt:
    """The system prompt: the course's static sections, then the skills' section if any."""
    return SystemPrompt((*default_sections(tools), *([section] if section else [])))


@dataclass
class SkillSession:
    """One session of :data:`PROMPTS`: the agent, its model, and what each request cost."""

    layout: Layout
    agent: Agent
    model: ScriptedModel
    system_tokens: int
    calls: list[MeteredCall] = field(default_factory=list)

    @property
    def loaded_at(self) -> int | None:
        """The request (from 1) that first carried the loaded skill's body as a tool result."""
        for n, request in enumerate(self.model.requests, start=1):
            for message in request.messages:
                for block in m.tool_results(message):
                    if "Launching skill:" in str(block.get("content", "")):
                        return n
        return None

    def prompt_tokens(self) -> list[int]:
        return [c.prompt_tokens for c in self.calls]

    def costs(self) -> list[float]:
        return [c.cost.total if c.cost else 0.0 for c in self.calls]


def skill_agent(
    root: Path, layout: Layout, model: ScriptedModel, clock: Clock
) -> tuple[Agent, int]:
    """An agent on ``root`` with its skills ``layout``; and its system prompt's tokens.

    Listed, the skills come from :func:`~harness.skills.session_skills` (the listing section
    and the ``Skill`` tool, as the command line sets them up); inlined, every body goes into
    one section (:func:`~harness.skills.listing.inlined_section`) and there is no tool."""
    tools: list[Tool[Any]] = [read_file, write_file]
    if layout == "listed":
        found = session_skills(root, None, context_window=context_window_of(DEFAULT_MODEL))
        tools += found.tools()
        section = found.section
    else:
        catalog = discover_skills(root, home=None)
        section = inlined_section([(s.name, s.body()) for s in catalog.skills])
    blocks = skills_prompt(section, [t.name for t in tools]).render()
    agent = Agent(
        model, tools=tools, workspace=root, system=blocks, clock=clock, plugins=[PromptCaching()]
    )
    return agent, estimate_system(blocks)


def skill_session(root: Path, layout: Layout) -> SkillSession:
    """:data:`PROMPTS` on ``root`` with the skills ``layout``; every request measured."""
    clock = FakeClock()
    model = ScriptedModel(script(layout), clock=clock)
    agent, tokens = skill_agent(root, layout, model, clock)
    for prompt in PROMPTS:
        list(agent.run(prompt))
    return SkillSession(layout, agent, model, tokens, list(agent.meter.calls))


def edit_and_restart(root: Path, session: SkillSession, skill: str = "tax-rules") -> MeteredCall:
    """Change one line of ``skill``'s body, then send the first request of a new session to
    the same model (and so the same prompt cache); what that request cost."""
    path = root / ".claude" / "skills" / skill / "SKILL.md"
    path.write_text(path.read_text().replace("check item 1 ", "check item one ", 1))
    agent, _ = skill_agent(root, session.layout, session.model, session.model.clock)
    session.model.extend([reply("app/tax.py applies the tax rate, rounded to cents.")])
    list(agent.run(PROMPTS[0]))
    return agent.meter.calls[-1]


# -- hooks from settings ------------------------------------------------------------------------

HOOK_TASK = "Clean out build/, then note the standard rate in app/tax.py."


def hook_script() -> list[Step]:
    """``rm -rf build`` (the guard blocks it), a plain ``rm``, an edit that leaves trailing
    spaces and a tab (the formatter tidies them), a last word."""
    return [
        reply("Cleaning build/.", tool_calls=[tool_call("bash", command="rm -rf build")]),
        reply(
            "Removing the file instead.", tool_calls=[tool_call("bash", command="rm build/old.log")]
        ),
        reply(
            tool_calls=[
                tool_call(
                    "edit_file",
                    path="app/tax.py",
                    old_string="RATE_4 = Decimal('0.5')",
                    new_string="RATE_4 = Decimal('0.5')  # the standard rate  \t",
                )
            ]
        ),
        reply("build/ is clean and app/tax.py says which rate is the standard one."),
    ]


@dataclass
class HookedAgent:
    """An agent with hooks from settings: the pieces, to look at after a run."""

    agent: Agent
    settings: Settings
    trust: FolderTrust
    hooks: SettingsHooks
    asked: list[TrustRequest]


def hooks_agent(
    root: Path,
    store: Path,
    answer: bool | Callable[[TrustRequest], bool],
    steps: Sequence[Step] | None = None,
) -> HookedAgent:
    """An agent on ``root`` whose hooks come from its settings files; the trust store is
    ``store``, and ``answer`` is the person's answer to the trust question (each question is
    kept in ``asked``)."""
    asked: list[TrustRequest] = []

    def ask(request: TrustRequest) -> bool:
        asked.append(request)
        return answer(request) if callable(answer) else answer

    configured = session_hooks(root, None, ask=ask, store=store, session_id="ch13-demo")
    settings, trust, settings_hooks = configured.settings, configured.trust, configured.hooks
    clock = FakeClock()
    agent = Agent(
        ScriptedModel(list(steps if steps is not None else hook_script()), clock=clock),
        tools=builtin_tools(),
        workspace=root,
        permissions=Permissions(mode="bypass"),
        hooks=settings_hooks.install(Hooks()),
        clock=clock,
        plugins=[settings_hooks],
    )
    return HookedAgent(agent, settings, trust, settings_hooks, asked)


__all__ = [
    "HOOK_TASK",
    "NOTES",
    "PROMPTS",
    "HookedAgent",
    "Layout",
    "SkillSession",
    "edit_and_restart",
    "hook_script",
    "hooks_agent",
    "script",
    "skill_agent",
    "skill_session",
    "skills_prompt",
]
