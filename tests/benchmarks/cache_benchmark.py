"""How much the prompt cache saves: one 30-turn coding session, two prompt layouts.

    uv run python tests/benchmarks/cache_benchmark.py

Both runs send the same conversation. The first has no cache breakpoints (every request
pays the full input price for its whole prompt); the second uses the harness's layout
(``PromptCaching``: breakpoints on the last tool, the end of the static system prompt, the last
message and the message the previous request ended with). Both run on the course's default
model, ``harness.model.DEFAULT_MODEL``, at its prices. Prints prompt tokens, the share read from
cache and the cost of each run.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.agent import Agent
from harness.clock import FakeClock
from harness.loop import AgentConfig, Plugin
from harness.model import DEFAULT_MODEL, ScriptedModel
from harness.notebook.sessions import ThinkingTime, coding_script, make_project
from harness.pricing import CostMeter
from harness.prompt import (
    PromptCaching,
    SystemPrompt,
    default_sections,
    environment_section,
)
from harness.tools import builtin_tools

TURNS = 30
MODEL = DEFAULT_MODEL  # the course's model: its prices and its minimum cacheable prefix


def run(cached: bool) -> CostMeter:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root)
        clock = FakeClock()
        tools = builtin_tools()
        prompt = SystemPrompt(
            (
                *default_sections(t.name for t in tools),
                environment_section(clock, workspace_name="billing"),
            )
        )
        plugins: list[Plugin] = [ThinkingTime(20.0)]
        if cached:
            plugins.append(PromptCaching())
        agent = Agent(
            ScriptedModel(coding_script(TURNS), clock=clock),
            tools=tools,
            system=prompt.render(cache=cached),
            workspace=root,
            clock=clock,
            plugins=plugins,
            config=AgentConfig(model=MODEL, max_turns=TURNS + 1),
            approver=lambda request: True,
        )
        for _ in agent.run("Check that every module rounds amounts to cents the same way."):
            pass
        assert len(agent.meter.calls) == TURNS, len(agent.meter.calls)
        return agent.meter


def main() -> None:
    plain, cached = run(cached=False), run(cached=True)
    print(f"{TURNS}-turn coding session on {MODEL}, same conversation, two prompt layouts\n")
    print(f"{'layout':<18}{'prompt tokens':>15}{'read from cache':>18}{'cost':>10}")
    for label, meter in (("no breakpoints", plain), ("harness layout", cached)):
        print(
            f"{label:<18}{meter.prompt_tokens:>15,}{meter.cache_read_share:>17.1%}"
            f"{'$' + format(meter.total.total, '.4f'):>11}"
        )
    ratio = cached.total.total / plain.total.total
    print(f"\ncached run costs {ratio:.1%} of the uncached one")


if __name__ == "__main__":
    main()
