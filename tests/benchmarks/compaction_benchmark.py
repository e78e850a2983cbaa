"""What compaction buys: one long tool-heavy session, four ways.

    uv run python tests/benchmarks/compaction_benchmark.py

A 160-turn scripted coding session (reads of ~4K-token files, searches, edits, shell
commands) on a 200K-token window, with the prompt cache on in every run. A few turns in, the
agent stops to report and the user corrects it ("Actually, ... not ..."); the session then
goes on to the end. The runs:

* no compaction: the conversation grows until the API refuses it (prompt too long);
* microcompact only: old tool results are cleared in batches of 10 (tier 1);
* tier 3 only: the same, plus auto-compact at the threshold (microcompact first, then a
  summary if still over), as chapter 05 built it;
* tier 2 first: the same again with session memory (chapter 07): a forked agent keeps
  ``MEMORY.md`` up to date as the session runs (first after 10K tokens and 3 tool calls, then
  every 5K tokens and 3 tool calls), and at the threshold the memory replaces the old
  messages (no model call) before a summary is tried.

Every 5th turn writes a new module whose content sits in a tool_use input: microcompact
clears results only, so that part of the context can only go by summary or by memory.

The first table gives, for each run, whether it finished, the model calls (the session's
turns, summary requests and memory-extraction forks), the compactions by tier, the peak and
total prompt tokens, the share read from cache, and the cost. The second puts tier 3 only
and tier 2 first side by side, with two checks of what the context still holds: the pinned
facts (the CLAUDE.md rule, the task and a user constraint), counted in the request after
every compaction (the worst case is shown), and whether the user's correction is in the
context when the session ends. The scripted summary keeps the first request and loses later
ones; the memory records the correction under "Errors and corrections".

Deterministic: the scripted model, the fake clock and the memory's facts are all computed.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import anthropic
from anthropic.types import Message

from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.auto import AutoCompact
from harness.compaction.context import prompt_tokens
from harness.compaction.events import Compacted
from harness.compaction.microcompact import Microcompact
from harness.compaction.pinned import PinnedFacts
from harness.compaction.session_memory import SessionMemoryCompaction
from harness.compaction.summary import is_compaction_request
from harness.events import AssistantReplied, MaxTurnsReached, TurnEnded
from harness.loop import AgentConfig, BaseAgent, ModelRequest, Plugin
from harness.memory import SessionMemory
from harness.model import DEFAULT_MODEL, ScriptedModel, Step, reply
from harness.model.scripted_memory import is_extraction_request, scripted_extraction
from harness.model.scripted_summary import scripted_summary
from harness.notebook.sessions import ThinkingTime, coding_script, make_project
from harness.pricing import Cost, cost_of
from harness.prompt import MemoryFile, PromptCaching, SystemPrompt, default_sections, memory_section
from harness.tokens import ContextBudget
from harness.tools import builtin_tools

TURNS = 160  # the session's replies, the correction's pause included
WRITE_LINES = 600  # each write_file call carries ~7K tokens that microcompact cannot clear
WINDOW = 200_000
MODEL = DEFAULT_MODEL  # the course's model

RULE = "Amounts are always rounded to cents with quantize."  # in CLAUDE.md
TASK = "Check that every module rounds amounts to cents the same way."
CONSTRAINT = "Keep the public function names unchanged."
PROMPT = f"{TASK} {CONSTRAINT}"
PAUSE_AFTER = 6  # tool-calling turns before the agent stops to report
PAUSE = (
    "The first modules all round the same way. Note: every module rounds to cents with "
    "quantize. Shall I go on, tests included?"
)
CORRECTION = "Actually, leave the tests alone: only the app/ modules are in scope, not tests/."
CORRECTION_KEY = "only the app/ modules are in scope"
"""The words looked for in the final context (the memory quotes the correction whole)."""


def session_script() -> list[Step]:
    """The standard coding session, with a report after a few turns for the user to correct."""
    steps = coding_script(TURNS - 1, write_lines=WRITE_LINES)
    return [*steps[:PAUSE_AFTER], reply(PAUSE), *steps[PAUSE_AFTER:]]


class CallCounter(Plugin):
    """Counts model calls by purpose: ``turn``, ``compaction`` (summary), ``memory`` (fork)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.costs: dict[str, Cost] = {}

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        answer = call(request)  # a refused request is not counted, as the meter does not bill it
        self.counts[request.purpose] += 1
        cost = cost_of(answer.usage, answer.model or request.model)
        self.costs[request.purpose] = self.costs.get(request.purpose, Cost()) + cost
        return answer


def context_text(agent: BaseAgent) -> str:
    """Everything the next request carries as text: system prompt, messages, tool inputs."""
    request = agent.request()
    parts: list[str] = []
    system = request.system
    if isinstance(system, str):
        parts.append(system)
    elif system:
        parts += [str(block.get("text", "")) for block in system]
    for message in request.messages:
        content = message["content"]
        if isinstance(content, str):
            parts.append(content)
            continue
        for block in content:
            parts.append(str(block.get("text", block.get("content", block.get("input", "")))))
    return " ".join(" ".join(parts).lower().split())


@dataclass
class Outcome:
    label: str
    finished: str
    calls: Counter[str]
    metered: int
    tiers: Counter[str]
    peak: int
    total: int
    read_share: float
    cost: float
    pinned_worst: int | None
    """The fewest pinned facts found in the context after a compaction (None: none ran)."""
    checks: int
    correction_kept: bool
    costs: dict[str, Cost]
    """Cost by kind of call: ``turn``, ``compaction`` (summaries), ``memory`` (forks)."""
    extractions: int
    fork_prompt: int
    fork_cache_read: int
    big: list[str]
    """Tier 2 and tier 3 compactions: after which reply, and what they did."""

    @property
    def compactions(self) -> str:
        return (
            f"{self.tiers['microcompact']} + {self.tiers['session_memory']} + "
            f"{self.tiers['summary']}"
        )

    @property
    def call_split(self) -> str:
        return f"{self.calls['turn']} + {self.calls['compaction']} + {self.calls['memory']}"

    def cost_of(self, purpose: str) -> float:
        return self.costs.get(purpose, Cost()).total

    def pinned(self, of: int) -> str:
        if self.pinned_worst is None:
            return "no compaction"
        if self.pinned_worst == of:
            return f"{of}/{of} after all {self.checks} compactions"
        return f"worst {self.pinned_worst}/{of} ({self.checks} compactions)"


def run(label: str, mode: str) -> Outcome:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root, functions=60)
        clock = FakeClock()
        model = ScriptedModel(session_script(), clock=clock, context_window=WINDOW)
        model.answer_when(is_compaction_request, scripted_summary)
        model.answer_when(is_extraction_request, scripted_extraction)
        tools = builtin_tools()
        pinned = PinnedFacts()
        pinned.add(RULE, "CLAUDE.md")
        pinned.add(TASK, "task")
        pinned.add(CONSTRAINT, "user")
        counter = CallCounter()
        plugins: list[Plugin] = [counter, ThinkingTime(20.0)]
        memory: SessionMemory | None = None
        if mode == "memory":
            memory = SessionMemory(root / ".harness" / "MEMORY.md")
            plugins.append(memory)
        if mode in ("micro", "full", "memory"):
            plugins.append(Microcompact(min_clearable=10))
        if mode in ("full", "memory"):
            budget = ContextBudget(window=WINDOW, max_output=32_000)
            tier2 = SessionMemoryCompaction(memory) if memory is not None else None
            plugins.append(AutoCompact(budget, pinned=pinned, session_memory=tier2))
        plugins.append(PromptCaching())
        claude_md = memory_section([MemoryFile("CLAUDE.md", f"- {RULE}")])
        assert claude_md is not None
        sections = (*default_sections(t.name for t in tools), claude_md)
        agent = Agent(
            model,
            tools=tools,
            system=SystemPrompt(sections).render(),
            workspace=root,
            clock=clock,
            plugins=plugins,
            config=AgentConfig(model=MODEL, max_tokens=8_000, max_turns=TURNS + 5),
            approver=lambda request: True,
        )
        finished = "yes"
        tiers: Counter[str] = Counter()
        found: list[int] = []
        big: list[str] = []
        replies = 0
        try:
            for prompt in (PROMPT, CORRECTION):
                for event in agent.run(prompt):
                    if isinstance(event, AssistantReplied):
                        replies += 1
                    if isinstance(event, Compacted):
                        tiers[event.tier] += 1
                        if event.tier != "microcompact":
                            big.append(f"after reply {replies}: {event}")
                        request = agent.request()
                        missing = pinned.missing_from(request.messages, system=request.system)
                        found.append(len(pinned.facts) - len(missing))
                    if isinstance(event, TurnEnded) and event.stop_reason != "end_turn":
                        finished = f"no ({event.stop_reason})"
                    if isinstance(event, MaxTurnsReached):
                        finished = "no (max turns)"
                if finished != "yes":
                    break
        except anthropic.BadRequestError as error:
            finished = f"no: {error.body['error']['message']}"  # type: ignore[index]
        meter = agent.meter
        return Outcome(
            label,
            finished,
            counter.counts,
            len(meter.calls),
            tiers,
            max((prompt_tokens(c.usage) for c in meter.calls), default=0),
            meter.prompt_tokens,
            meter.cache_read_share,
            meter.total.total,
            min(found) if found else None,
            len(found),
            CORRECTION_KEY.lower() in context_text(agent),
            counter.costs,
            len(memory.extractions) if memory is not None else 0,
            sum(e.usage.prompt_tokens for e in memory.extractions) if memory else 0,
            sum(e.usage.cache_read_tokens for e in memory.extractions) if memory else 0,
            big,
        )


def main() -> None:
    started = time.perf_counter()
    outcomes = [
        run("no compaction", "none"),
        run("microcompact only", "micro"),
        run("tier 3 only", "full"),
        run("tier 2 first", "memory"),
    ]
    for o in outcomes:  # every model call is one of the three kinds
        assert sum(o.calls.values()) == o.metered, (o.label, o.calls, o.metered)
    print(f"{TURNS}-turn coding session on {MODEL}, {WINDOW:,}-token window, prompt cache on")
    print(f"the user's correction after reply {PAUSE_AFTER + 1}: {CORRECTION!r}\n")
    print("calls: turns + summaries + memory forks")
    print("compactions: microcompact + session memory (tier 2) + summary (tier 3)\n")
    header = (
        f"{'run':<19}{'calls':>16}{'compactions':>14}{'peak prompt':>13}{'total prompt':>14}"
        f"{'cache read':>11}{'cost':>9}  finished"
    )
    print(header)
    for o in outcomes:
        print(
            f"{o.label:<19}{o.call_split:>16}{o.compactions:>14}{o.peak:>13,}{o.total:>14,}"
            f"{o.read_share:>11.1%}{'$' + format(o.cost, '.2f'):>9}  {o.finished}"
        )

    tier3, tier2 = outcomes[2], outcomes[3]
    facts = 3
    rows: list[tuple[str, str, str]] = [
        ("finished", tier3.finished, tier2.finished),
        ("model calls", str(tier3.metered), str(tier2.metered)),
        ("  session turns", str(tier3.calls["turn"]), str(tier2.calls["turn"])),
        ("  summary requests", str(tier3.calls["compaction"]), str(tier2.calls["compaction"])),
        (
            "  memory forks",
            f"{tier3.calls['memory']}",
            f"{tier2.calls['memory']} ({tier2.extractions} extractions)",
        ),
        ("compactions", tier3.compactions, tier2.compactions),
        ("peak prompt tokens", f"{tier3.peak:,}", f"{tier2.peak:,}"),
        ("total prompt tokens", f"{tier3.total:,}", f"{tier2.total:,}"),
        ("cache read share", f"{tier3.read_share:.1%}", f"{tier2.read_share:.1%}"),
        ("cost", f"${tier3.cost:.2f}", f"${tier2.cost:.2f}"),
        *(
            (f"  {name}", f"${tier3.cost_of(purpose):.2f}", f"${tier2.cost_of(purpose):.2f}")
            for name, purpose in (
                ("session turns", "turn"),
                ("summary requests", "compaction"),
                ("memory forks", "memory"),
            )
        ),
        (
            "fork prompt from cache",
            "-",
            f"{tier2.fork_cache_read / tier2.fork_prompt:.1%} of {tier2.fork_prompt:,}"
            if tier2.fork_prompt
            else "-",
        ),
        ("pinned facts kept", tier3.pinned(facts), tier2.pinned(facts)),
        (
            "correction at the end",
            "kept" if tier3.correction_kept else "lost",
            "kept" if tier2.correction_kept else "lost",
        ),
    ]
    print(f"\n{'':<24}{tier3.label:<30}{tier2.label}")
    for name, left, right in rows:
        print(f"{name:<24}{left:<30}{right}")
    print("\ncompactions: microcompact + session memory + summary; pinned facts counted in")
    print("the request (system prompt and messages) after every compaction, whatever its tier")
    for o in (tier3, tier2):
        print(f"\n{o.label}, tier 2 and tier 3 compactions:")
        for line in o.big or ["none"]:
            print(f"  {line}")
    print(f"\nran in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
