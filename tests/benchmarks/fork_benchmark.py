"""What sibling forks cost: four forks of one parent, naive against the harness's ``fork``.

    uv run python tests/benchmarks/fork_benchmark.py

One parent conversation of a realistic size (the harness's own system prompt and builtin
tools, the fork tool, four modules of a project read in full: about 34,000 tokens), sent
with the harness's cache breakpoints (``PromptCaching``). Then four sibling children are
started from its last reply, each with its own directive, in two ways, in this one run:

* **naive** (``harness.notebook.subagents.naive_fork``, broken on purpose): each child
  rebuilds its system prompt with its task and start time in it, so its request differs
  from the parent's from the system prompt on;
* **fork** (``harness.subagents.fork``): each child sends the parent's exact request, plus
  its directive.

Each arm runs against a parent of its own (built the same way, so the same bytes) and a
scripted model of its own (so its own prompt-cache simulator): neither arm warms the cache
for the other. Per sibling it prints the prompt tokens, the tokens read from and written
to the cache, and the cost in USD (``harness.pricing``), with totals; then the byte-level
prefix report (``harness.subagents.prefix_report``): each sibling's serialised prompt, how
many bytes it shares with the first sibling's, and the block where they part. Deterministic
(``FakeClock``, scripted replies): the same numbers on every run.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.agent import Agent
from harness.clock import FakeClock
from harness.loop import AgentConfig, BaseAgent
from harness.model import DEFAULT_MODEL, Request, ScriptedModel, reply, said, tool_call
from harness.notebook.sessions import MODULES, make_project
from harness.notebook.subagents import naive_fork
from harness.prompt import PromptCaching, SystemPrompt, default_sections
from harness.subagents import Fork, SiblingPrefix, Subagent, fork, prefix_report
from harness.tools import builtin_tools

MODEL = DEFAULT_MODEL  # the course's model
FUNCTIONS = 120  # functions per module: four modules read in full make ~34K tokens
READ = MODULES[:4]
DIRECTIVES = [
    f"Review {name}.py for amounts that are rounded differently from the other modules; "
    "report each function with its line number."
    for name in READ
]


@dataclass
class Sibling:
    directive: str
    request: Request
    prompt: int
    read: int
    written: int
    cost: float


@dataclass
class Arm:
    name: str
    parent_prompt: int
    parent_cost: float
    siblings: list[Sibling]
    prefix: list[SiblingPrefix]


def parent_in(root: Path) -> tuple[Agent, ScriptedModel]:
    """The parent: reads four modules, then says it will split the review."""
    clock = FakeClock()
    make_project(root, functions=FUNCTIONS)
    tools = builtin_tools()
    system = SystemPrompt(tuple(default_sections(t.name for t in tools))).render(cache=True)
    steps = [reply(tool_calls=[tool_call("read_file", path=f"app/{n}.py")]) for n in READ]
    steps.append(reply("I have read the four modules. Each area gets a reviewer of its own."))
    model = ScriptedModel(steps, clock=clock)
    parent = Agent(
        model,
        tools=tools,
        system=system,
        workspace=root,
        clock=clock,
        plugins=[PromptCaching()],
        config=AgentConfig(model=MODEL, max_turns=len(steps)),
        approver=lambda request: True,
    )
    Subagent(name="fork", fork=True).attach(parent)  # its definition is part of the prefix
    for _ in parent.run("Check that every module rounds amounts to cents the same way."):
        pass
    for name, directive in zip(READ, DIRECTIVES, strict=True):
        model.script_when(
            said(directive),
            [reply(f"{name}.py: every function rounds with quantize(Decimal('0.01')); fine.")],
        )
    return parent, model


def body(request: Request) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": request.messages,
    }
    if request.system is not None:
        out["system"] = request.system
    if request.tools is not None:
        out["tools"] = request.tools
    return {**out, **request.extra}


def run_arm(name: str, start: Callable[[BaseAgent, str], Fork]) -> Arm:
    with tempfile.TemporaryDirectory() as tmp:
        parent, model = parent_in(Path(tmp))
        parent_calls = list(parent.meter.calls)
        siblings: list[Sibling] = []
        for directive in DIRECTIVES:
            child = start(parent, directive)
            for _ in child.run():
                pass
            [call] = child.agent.meter.calls
            request = next(r for r in model.requests if said(directive)(r))
            assert call.cost is not None
            siblings.append(
                Sibling(
                    directive,
                    request,
                    call.prompt_tokens,
                    call.usage.cache_read_input_tokens or 0,
                    call.usage.cache_creation_input_tokens or 0,
                    call.cost.total,
                )
            )
        prefix = prefix_report([body(s.request) for s in siblings])
        return Arm(
            name,
            parent_calls[-1].prompt_tokens,
            sum(c.cost.total for c in parent_calls if c.cost is not None),
            siblings,
            prefix,
        )


def main() -> None:
    arms = [run_arm("naive", naive_fork), run_arm("fork", fork)]
    parent = arms[1]
    print(
        f"4 sibling children of one parent on {MODEL}; the parent's last prompt: "
        f"{parent.parent_prompt:,} tokens (its whole run cost ${parent.parent_cost:.4f})\n"
    )
    print(
        f"{'arm':<7}{'sibling':>8}{'prompt tok':>12}{'cache read':>12}{'cache write':>13}"
        f"{'read share':>12}{'cost USD':>11}"
    )
    for arm in arms:
        for i, s in enumerate(arm.siblings, 1):
            print(
                f"{arm.name:<7}{i:>8}{s.prompt:>12,}{s.read:>12,}{s.written:>13,}"
                f"{s.read / s.prompt:>12.1%}{s.cost:>11.4f}"
            )
        prompt = sum(s.prompt for s in arm.siblings)
        read = sum(s.read for s in arm.siblings)
        written = sum(s.written for s in arm.siblings)
        cost = sum(s.cost for s in arm.siblings)
        print(
            f"{arm.name:<7}{'total':>8}{prompt:>12,}{read:>12,}{written:>13,}"
            f"{read / prompt:>12.1%}{cost:>11.4f}\n"
        )
    naive_cost = sum(s.cost for s in arms[0].siblings)
    fork_cost = sum(s.cost for s in arms[1].siblings)
    print(
        f"the four forks cost {fork_cost / naive_cost:.1%} of the four naive children "
        f"(${fork_cost:.4f} against ${naive_cost:.4f})\n"
    )
    print("byte-level prefix report (each sibling's serialised prompt against the first's)")
    print(
        f"{'arm':<7}{'sibling':>8}{'bytes':>10}{'shared':>10}  {'differs at':<24}{'directive':<24}"
    )
    for arm in arms:
        for i, p in enumerate(arm.prefix, 1):
            print(
                f"{arm.name:<7}{i:>8}{p.bytes:>10,}{p.shared:>10,}  "
                f"{p.diverges_at or '(the first)':<24}{p.directive_at:<24}"
            )
        same = all(p.only_directive_differs for p in arm.prefix)
        print(f"{'':<7}only the directive differs: {'yes' if same else 'no'}\n")


if __name__ == "__main__":
    main()
