"""What progressive disclosure saves: 30 and 50 skills, listed vs inlined, over 10 turns.

    uv run python tests/benchmarks/skills_benchmark.py

Three layouts of the same 10-turn coding session (chapter 04's scripted session, with one
first turn added), on the course's model (``harness.model.DEFAULT_MODEL``) at its prices
(``harness.pricing``), with the harness's cache breakpoints (``PromptCaching``):

* **inlined**: every skill's whole body in the system prompt (chapter 13's failure);
* **listed**: only names and descriptions in the system prompt (``skills_section``), the
  ``Skill`` tool offered, and no skill loaded;
* **listed + load**: the same, and the first turn loads one skill with the ``Skill`` tool.

The skills are chapter 13's (``harness.notebook.extensions``, one generator for both): made
up but shaped like real ones, with descriptions that say what the skill does and then "Use
when ...", and ``SKILL.md`` files sized like the 17 of github.com/anthropics/skills at commit
9d2f1ae187231d8199c64b5b762e1bdf2244733d (``SKILL_SIZES``, in bytes, in the repository's
order, cycled). 30 skills are the chapter's project; 50 add ``MORE_SKILLS``.

Printed per layout: the system prompt's tokens, the mean prompt tokens per turn, the
first turn's cost (it writes the cache), the mean cost of turns 2-10 (they read it), and the
session's cost; then, turn by turn, what loading one skill adds: the cache writes of the
turn that loads it and the cache reads of every turn after. Deterministic: the scripted
model computes usage from the requests, and the clock is fake.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.agent import Agent
from harness.clock import FakeClock
from harness.loop import AgentConfig
from harness.model import DEFAULT_MODEL, ScriptedModel, Step, reply, tool_call
from harness.model.models import context_window_of
from harness.notebook.extensions import LOADED_SKILL, write_skills
from harness.notebook.sessions import ThinkingTime, coding_script, make_project
from harness.pricing import MeteredCall
from harness.prompt import PromptCaching, Section, SystemPrompt, default_sections
from harness.skills import SkillLoader, discover_skills, skill_tool
from harness.skills.listing import format_listing, inlined_section, skills_section
from harness.tokens import estimate_system
from harness.tools import Tool, builtin_tools

TURNS = 10
MODEL = DEFAULT_MODEL
LOADED = LOADED_SKILL
"""The skill the first turn loads in the "listed + load" layout (its SKILL.md: 2,235 bytes)."""


@dataclass(frozen=True)
class Run:
    layout: str
    skills: int
    system_tokens: int
    calls: list[MeteredCall]

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def cost(self) -> float:
        return sum(c.cost.total for c in self.calls if c.cost is not None)

    def turn_cost(self, turn: int) -> float:
        cost = self.calls[turn].cost
        return cost.total if cost is not None else 0.0


def run(layout: str, count: int) -> Run:
    """One 10-turn session; ``layout`` is ``inlined``, ``listed`` or ``listed + load``."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root)
        write_skills(root, count)
        catalog = discover_skills(root, None)
        assert len(catalog.skills) == count and not catalog.problems, catalog.problems
        clock = FakeClock()
        tools: list[Tool] = list(builtin_tools())  # type: ignore[type-arg]
        sections: list[Section] = []
        if layout == "inlined":
            inlined = inlined_section([(s.name, s.body()) for s in catalog.skills])
            assert inlined is not None
            sections.append(inlined)
        else:
            listed = skills_section(catalog.skills, context_window=context_window_of(MODEL))
            assert listed is not None
            sections.append(listed)
            tools.append(skill_tool(SkillLoader(catalog)))
        prompt = SystemPrompt((*default_sections(t.name for t in tools), *sections))
        first = (
            tool_call("Skill", skill=LOADED)
            if layout == "listed + load"
            else tool_call("glob", pattern="app/*.py")
        )
        script: list[Step] = [reply("First, what this task needs.", tool_calls=[first])]
        script += coding_script(TURNS - 1)
        agent = Agent(
            ScriptedModel(script, clock=clock),
            tools=tools,
            system=prompt.render(),
            workspace=root,
            clock=clock,
            plugins=[ThinkingTime(20.0), PromptCaching()],
            config=AgentConfig(model=MODEL, max_turns=TURNS + 1),
            approver=lambda request: True,
        )
        for _ in agent.run("Write the release notes for this week, then check the rounding."):
            pass
        assert len(agent.meter.calls) == TURNS, len(agent.meter.calls)
        return Run(layout, count, estimate_system(prompt.render()), list(agent.meter.calls))


def listing_figures(count: int) -> tuple[int, int, int]:
    """The listing's characters and the descriptions dropped at a 1M and at a 200K window."""
    with tempfile.TemporaryDirectory() as tmp:
        write_skills(Path(tmp), count)
        skills = discover_skills(Path(tmp), None).skills
        big = format_listing(skills, context_window=context_window_of(MODEL))
        small = format_listing(skills, context_window=200_000)
        return len(big.text), big.descriptions_dropped, small.descriptions_dropped


def loaded_body_size() -> int:
    """The characters of the loaded skill's body (its SKILL.md without the front matter)."""
    with tempfile.TemporaryDirectory() as tmp:
        write_skills(Path(tmp), 50)
        skills = discover_skills(Path(tmp), None).skills
        return len(next(s for s in skills if s.name == LOADED).body())


def main() -> None:
    print(f"{TURNS}-turn session on {MODEL}, prompt caching on (harness layout)\n")
    for count in (30, 50):
        chars, dropped_big, dropped_small = listing_figures(count)
        print(
            f"{count} skills: listing {chars:,} characters; descriptions dropped to fit the "
            f"budget: {dropped_big} at {context_window_of(MODEL):,} tokens of window, "
            f"{dropped_small} at 200,000"
        )
        print(
            f"{'layout':<15}{'system tok':>11}{'prompt tok/turn':>17}{'turn 1':>10}"
            f"{'turns 2-10':>12}{'session':>10}"
        )
        runs = {layout: run(layout, count) for layout in ("inlined", "listed", "listed + load")}
        for r in runs.values():
            later = sum(r.turn_cost(t) for t in range(1, TURNS)) / (TURNS - 1)
            print(
                f"{r.layout:<15}{r.system_tokens:>11,}{r.prompt_tokens // TURNS:>17,}"
                f"{'$' + format(r.turn_cost(0), '.4f'):>10}{'$' + format(later, '.4f'):>12}"
                f"{'$' + format(r.cost, '.4f'):>10}"
            )
        ratio = runs["inlined"].cost / runs["listed"].cost
        late = [sum(r.turn_cost(t) for t in range(1, TURNS)) for r in runs.values()]
        print(
            f"inlined costs {ratio:.1f}x the listed session ({late[0] / late[1]:.1f}x on the "
            "turns that only read the cache)\n"
        )
    base, loaded = run("listed", 50), run("listed + load", 50)
    size = loaded_body_size()
    print(f"what loading '{LOADED}' ({size:,}-character body) costs, turn by turn (50 skills):")
    print(f"{'turn':>4}{'extra cache write':>19}{'extra cache read':>18}{'extra cost':>12}")
    for t in range(TURNS):
        a, b = base.calls[t].usage, loaded.calls[t].usage
        write = (b.cache_creation_input_tokens or 0) - (a.cache_creation_input_tokens or 0)
        read = (b.cache_read_input_tokens or 0) - (a.cache_read_input_tokens or 0)
        extra = loaded.turn_cost(t) - base.turn_cost(t)
        print(f"{t + 1:>4}{write:>19,}{read:>18,}{'$' + format(extra, '.5f'):>12}")
    print(f"session: +${loaded.cost - base.cost:.4f} for one skill loaded")


if __name__ == "__main__":
    main()
