"""What compaction buys: one long tool-heavy session, three ways.

    uv run python tests/benchmarks/compaction_benchmark.py

A 160-turn scripted coding session (reads of ~4K-token files, searches, edits, shell
commands) on a 200K-token window, with the prompt cache on in every run:

* no compaction: the conversation grows until the API refuses it (prompt too long);
* microcompact only: old tool results are cleared in batches of 10 (tier 1);
* full tiers: the same, plus auto-compact at the threshold (microcompact first, then a
  summary if still over), as Claude Code layers them.

Every 5th turn writes a new module whose content sits in a tool_use input: microcompact
clears results only, so that part of the context can only go by summary.

For each run it prints whether it finished, the peak and total prompt tokens, the share read
from cache, and the cost.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import anthropic

from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.auto import AutoCompact
from harness.compaction.context import prompt_tokens
from harness.compaction.events import Compacted
from harness.compaction.microcompact import Microcompact
from harness.compaction.pinned import PinnedFacts
from harness.compaction.summary import is_compaction_request
from harness.events import TurnEnded
from harness.loop import AgentConfig, Plugin
from harness.model import ScriptedModel
from harness.model.scripted_summary import scripted_summary
from harness.notebook.sessions import ThinkingTime, coding_script, make_project
from harness.prompt import PromptCaching, SystemPrompt, default_sections
from harness.tokens import ContextBudget
from harness.tools import builtin_tools

TURNS = 160
WRITE_LINES = 600  # each write_file call carries ~7K tokens that microcompact cannot clear
WINDOW = 200_000
MODEL = "claude-sonnet-4-6"


@dataclass
class Outcome:
    label: str
    finished: str
    calls: int
    peak: int
    total: int
    read_share: float
    cost: float
    compactions: str


def run(label: str, mode: str) -> Outcome:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root, functions=60)
        clock = FakeClock()
        script = coding_script(TURNS, write_lines=WRITE_LINES)
        model = ScriptedModel(script, clock=clock, context_window=WINDOW)
        model.answer_when(is_compaction_request, scripted_summary)
        tools = builtin_tools()
        plugins: list[Plugin] = [ThinkingTime(20.0)]
        if mode in ("micro", "full"):
            plugins.append(Microcompact(min_clearable=10))
        if mode == "full":
            pinned = PinnedFacts()
            pinned.add("Amounts are always rounded to cents with quantize.", "CLAUDE.md")
            budget = ContextBudget(window=WINDOW, max_output=32_000)
            plugins.append(AutoCompact(budget, pinned=pinned))
        plugins.append(PromptCaching())
        agent = Agent(
            model,
            tools=tools,
            system=SystemPrompt(tuple(default_sections(t.name for t in tools))).render(),
            workspace=root,
            clock=clock,
            plugins=plugins,
            config=AgentConfig(model=MODEL, max_tokens=8_000, max_turns=TURNS + 5),
            approver=lambda request: True,
        )
        finished = "yes"
        tiers = {"microcompact": 0, "summary": 0}
        try:
            for event in agent.run("Check that every module rounds amounts to cents the same way."):
                if isinstance(event, Compacted):
                    tiers[event.tier] += 1
                if isinstance(event, TurnEnded) and event.stop_reason != "end_turn":
                    finished = f"no ({event.stop_reason})"
        except anthropic.BadRequestError as error:
            finished = f"no: {error.body['error']['message']}"  # type: ignore[index]
        meter = agent.meter
        return Outcome(
            label,
            finished,
            len(meter.calls),
            max((prompt_tokens(c.usage) for c in meter.calls), default=0),
            meter.prompt_tokens,
            meter.cache_read_share,
            meter.total.total,
            f"{tiers['microcompact']} + {tiers['summary']}",
        )


def main() -> None:
    outcomes = [
        run("no compaction", "none"),
        run("microcompact only", "micro"),
        run("full tiers", "full"),
    ]
    print(f"{TURNS}-turn coding session on {MODEL}, {WINDOW:,}-token window, prompt cache on\n")
    print("compactions: microcompact + summary; calls include summary requests\n")
    header = f"{'run':<19}{'calls':>6}{'compactions':>13}{'peak prompt':>13}{'total prompt':>14}"
    print(header + f"{'cache read':>11}{'cost':>9}  finished")
    for o in outcomes:
        print(
            f"{o.label:<19}{o.calls:>6}{o.compactions:>13}{o.peak:>13,}{o.total:>14,}"
            f"{o.read_share:>11.1%}{'$' + format(o.cost, '.2f'):>9}  {o.finished}"
        )


if __name__ == "__main__":
    main()
