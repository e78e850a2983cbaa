"""Chapter 05's exercises: pin the rules a user types, and record what each compaction saved.

Both checks run the mechanism: a scripted session on a small billing project, compacted by
the package (``compact``, and ``AutoCompact`` before each request), with the scripted model
writing the summaries. The learner's code is what the compaction gets: the pinned facts it
checks, or the PostCompact hook it calls.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.auto import AutoCompact
from harness.compaction.pinned import PinnedFacts
from harness.compaction.summary import (
    CompactionHooks,
    CompactionReport,
    compact,
    is_compaction_request,
)
from harness.exercises import NotYet, exercise, hints
from harness.loop import AgentConfig, Plugin
from harness.model import ScriptedModel, reply, tool_call
from harness.model.scripted import Step
from harness.model.scripted_summary import scripted_summary
from harness.notebook.sessions import MODULES, make_project
from harness.tokens import ContextBudget
from harness.tools import builtin_tools
from harness.tools.permissions import Permissions

CLAUDE_MD = "# Billing service\n\n- Amounts are Decimal, never float.\n"
FIRST_PROMPT = "Say in the docstring of each module's step 0 that it rounds half-even."

# (prompt, the rules in it): sentences that start with Always, Never, Keep, Do not or Don't.
PIN_CASES: list[tuple[str, list[str]]] = [
    (
        "Now the last two modules. Keep every docstring under 100 characters. "
        "Never touch the tests.",
        ["Keep every docstring under 100 characters.", "Never touch the tests."],
    ),
    (
        "Always run the tests before you say you are done! Why is tax.py so slow? "
        "Do not add dependencies. Don't rename files.",
        [
            "Always run the tests before you say you are done!",
            "Do not add dependencies.",
            "Don't rename files.",
        ],
    ),
    ("Thanks, that looks right. The tests never ran on CI, so look at them next.", []),
]

_PIN_HINT = (
    "a rule is a sentence, and you can tell it by its first word; the prompt holds other "
    "sentences too. Pin each rule word for word, as typed by the user, and add to what is "
    "already pinned."
)
_PIN_FIRST = (
    "pin_constraints('Now the last two modules. Keep every docstring under 100 characters. "
    "Never touch the tests.', pinned) should pin 'Keep every docstring under 100 characters.' "
    "and 'Never touch the tests.', with source 'user': the first sentence states no rule."
)
_PIN_RECIPE = """\
1. Split the prompt into sentences: a sentence ends with ".", "!" or "?" followed by
   whitespace. re.split(r"(?<=[.!?])\\s+", prompt.strip()) keeps the end mark on each one.
2. A rule starts with Always, Never, Keep, Do not or Don't, as a whole word:
   re.compile(r"(Always|Never|Keep|Do not|Don't)\\b").match(sentence).
3. For each rule, pinned.add(sentence, source="user"). Add only: never replace
   pinned.facts, which may hold facts pinned before (from CLAUDE.md)."""


def _agent(
    root: Path, script: Iterable[Step], *, window: int, plugins: Sequence[Plugin] = ()
) -> Agent:
    """A scripted agent on a fresh billing project whose model answers compaction requests."""
    root.mkdir()
    make_project(root, functions=3)
    (root / "CLAUDE.md").write_text(CLAUDE_MD)
    clock = FakeClock()
    model = ScriptedModel(script, clock=clock, context_window=window)
    model.answer_when(is_compaction_request, scripted_summary)
    return Agent(
        model,
        tools=builtin_tools(),
        system="You are a careful coding agent.",
        workspace=root,
        clock=clock,
        permissions=Permissions(mode="accept_edits"),
        plugins=plugins,
        config=AgentConfig(model="claude-sonnet-4-6", max_tokens=2_000, max_turns=100),
    )


def _run(agent: Agent, prompt: str) -> None:
    for _ in agent.run(prompt):
        pass


def _reads(names: Sequence[str]) -> list[Step]:
    return [
        reply(f"Reading app/{name}.py.", tool_calls=[tool_call("read_file", path=f"app/{name}.py")])
        for name in names
    ]


def _same(pinned: str, rule: str) -> bool:
    return " ".join(pinned.split()).rstrip(".!?") == rule.rstrip(".!?")


@exercise("pin_constraints", _PIN_HINT, first=_PIN_FIRST, number=1)
def check_pin_constraints(pin_constraints: Callable[[str, PinnedFacts], None]) -> str:
    """Exercise 1: ``pin_constraints(prompt, pinned)`` pins the rules a prompt states."""
    prompt, rules = PIN_CASES[0]
    facts = PinnedFacts()
    facts.add("Amounts are Decimal, never float.", source="CLAUDE.md")
    pin_constraints(prompt, facts)
    with tempfile.TemporaryDirectory() as scratch:
        agent = _agent(Path(scratch) / "billing", _reads(MODULES[:3]), window=200_000)
        model = agent.model
        assert isinstance(model, ScriptedModel)
        model.extend([reply("Step 0 now says it rounds half-even in the first three.")])
        _run(agent, FIRST_PROMPT)
        model.extend([*_reads(MODULES[3:5]), reply("Done with the last two modules.")])
        _run(agent, prompt)
        wanted = PinnedFacts()
        for rule in rules:
            wanted.add(rule)
        for number in (1, 2):
            compact(agent, pinned=facts)
            lost = [f.text for f in wanted.missing_from(agent.messages, system=agent.system)]
            if lost:
                raise NotYet(
                    f"after compaction {number}, {lost} had gone from the context: the summary "
                    "keeps only your first request, and a rule that is not pinned is lost.",
                )
            model.extend([*_reads(MODULES[5:6]), reply("Checked once more.")])
            _run(agent, "Check the docstrings once more.")
    if not facts.facts or facts.facts[0].text != "Amounts are Decimal, never float.":
        raise NotYet(
            "the fact pinned before your function ran is gone: add to `pinned`, do not "
            "replace its facts."
        )
    for prompt, rules in PIN_CASES:
        pinned = PinnedFacts()
        pin_constraints(prompt, pinned)
        texts = [f.text for f in pinned.facts]
        extra = [t for t in texts if not any(_same(t, rule) for rule in rules)]
        if extra:
            raise NotYet(
                f"for {prompt!r} you pinned {extra}, which is not a rule: every pinned fact is "
                "checked after every compaction and put back when missing, so it costs tokens "
                "in every request after it. Pin the rules only."
            )
        missing = [rule for rule in rules if not any(_same(t, rule) for t in texts)]
        if missing:
            raise NotYet(f"for {prompt!r}, {missing} was not pinned (word for word).")
        if len(texts) != len(rules):
            raise NotYet(f"for {prompt!r} you pinned {texts}: each rule once.")
        sources = {f.source for f in pinned.facts}
        if sources - {"user"}:
            raise NotYet(f"a rule you typed has source 'user', not {sorted(sources - {'user'})}.")
    return (
        f"the rules survive two compactions, and only the rules are pinned "
        f"({len(PIN_CASES)} prompts)"
    )


_SAVINGS_HINT = (
    "the report a PostCompact hook gets says what set the compaction off and how large the "
    "context was before and after it; every compaction, automatic or not, adds one pair to "
    "`savings`."
)
_SAVINGS_FIRST = (
    "after the session's first compaction (trigger 'auto', 9,156 tokens before, 3,345 after), "
    "`savings` should be [('auto', 5811)]."
)
_SAVINGS_RECIPE = """\
1. The hook gets a CompactionReport: report.trigger ("auto" or "manual"),
   report.tokens_before and report.tokens_after.
2. The tokens saved are report.tokens_before - report.tokens_after.
3. savings.append((report.trigger, saved)) for every report, whatever its trigger. Append
   to the `savings` list defined next to the hook (the check clears it and reads it)."""


def _writes(count: int) -> list[Step]:
    """Replies that read a module, then write a test file of it: tool inputs stay in context."""
    steps: list[Step] = []
    for i in range(count):
        name = MODULES[i % len(MODULES)]
        body = "\n".join(
            f"def test_{name}_{i}_{k}() -> None:\n    assert round(0.125 * {k}, 2) >= 0"
            for k in range(60)
        )
        steps += _reads([name])
        steps.append(
            reply(
                f"Writing tests/test_{name}_{i}.py.",
                tool_calls=[
                    tool_call("write_file", path=f"tests/test_{name}_{i}.py", content=body)
                ],
            )
        )
    return [*steps, reply("Every module has its tests.")]


@exercise("record_savings", _SAVINGS_HINT, first=_SAVINGS_FIRST, number=2)
def check_record_savings(
    record_savings: Callable[[CompactionReport], None], savings: list[tuple[str, int]]
) -> str:
    """Exercise 2: a PostCompact hook that records ``(trigger, tokens saved)`` in ``savings``."""
    raised: list[Exception] = []
    reports: list[CompactionReport] = []

    def watched(report: CompactionReport) -> None:
        try:
            record_savings(report)
        except Exception as error:  # the package would report it and carry on: we say it
            raised.append(error)

    hooks = CompactionHooks(post_compact=[watched, reports.append])
    savings.clear()
    budget = ContextBudget(window=24_000, max_output=2_000)  # threshold 9,000
    with tempfile.TemporaryDirectory() as scratch:
        auto = AutoCompact(budget, hooks=hooks)
        agent = _agent(Path(scratch) / "auto", _writes(14), window=budget.window, plugins=[auto])
        _run(agent, "Write tests for every module.")
        model = agent.model
        assert isinstance(model, ScriptedModel)
        model.extend([*_reads(MODULES[:2]), reply("Read them again.")])
        _run(agent, "Read billing and invoices again.")
        compact(agent, hooks=hooks)
    if raised:
        raise raised[0]
    triggers = [r.trigger for r in reports]
    assert triggers.count("auto") >= 2 and triggers[-1] == "manual", triggers  # the session's shape
    expected = [(r.trigger, r.tokens_before - r.tokens_after) for r in reports]
    if not savings:
        raise NotYet(
            f"`savings` is still empty after {len(reports)} compactions: append to the list "
            "you passed to the check."
        )
    if savings != expected:
        raise NotYet(f"recorded {savings}, but the compactions were {expected}.")
    shown = ", ".join(f"{trigger} saved {saved:,}" for trigger, saved in savings)
    return f"recorded all {len(savings)} compactions: {shown}"


hint = hints(__name__, {1: _PIN_RECIPE, 2: _SAVINGS_RECIPE})

__all__ = ["PIN_CASES", "check_pin_constraints", "check_record_savings", "hint"]
