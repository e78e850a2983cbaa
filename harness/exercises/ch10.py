"""Chapter 10's exercises: how a child's run ended, and a fork's messages.

Exercise 1 checks the learner's ``status_of(events)`` against
:func:`harness.subagents.outcome` on the ways a child's run can end: a final answer, a
reply cut short, its turn limit, its token budget, a refusal, a run that never started.
Exercise 2 checks ``fork_messages_for(parent_messages, directive)``: three siblings built
from one parent conversation must be valid, answer every pending call with one identical
placeholder, end on their directive, leave the parent's list alone, and share their
serialised prefix byte for byte (:func:`harness.subagents.prefix_report`). Both refuse code
that calls the package's answer.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from harness import fork as fork_module
from harness import messages as m
from harness import subagents
from harness.events import (
    Event,
    MaxTurnsReached,
    ModelCalled,
    PromptRefused,
    ToolFinished,
    ToolStarted,
    TurnEnded,
)
from harness.exercises import NotYet, exercise, forbid, refers_to
from harness.subagents import BudgetSpent, Fork, fork, outcome, prefix_report
from harness.subagents import capsule as capsule_module
from harness.subagents import children as children_module

# -- exercise 1: complete, partial or failed ---------------------------------------------------

_STATUS_HINT = (
    "look at the last event only (none at all: 'failed'). TurnEnded: 'partial' if its "
    "stop_reason is 'max_tokens', 'model_context_window_exceeded' or 'pause_turn' (the reply "
    "was cut), 'failed' if it is 'refusal', else 'complete'. MaxTurnsReached or BudgetSpent: "
    "'partial' (it stopped mid-work). Anything else: 'failed'."
)


def _turn(n: int, stop: str, *, tool: bool = False) -> list[Event]:
    """One turn's events: the call, maybe a tool, and how it ended."""
    events: list[Event] = [ModelCalled(n, 2 * n - 1, 1_000 * n)]
    if tool:
        events += [
            ToolStarted(f"toolu_{n:02d}", "read_file", {"path": "app/tax.py"}),
            ToolFinished(f"toolu_{n:02d}", "read_file", "1 ...", False),
        ]
    return [*events, TurnEnded(n, stop)]


def status_cases() -> list[tuple[str, list[Event]]]:
    """(what happened, the child's events); the expected status is ``outcome``'s."""
    two_turns = _turn(1, "tool_use", tool=True)
    return [
        ("a child that answered at once", _turn(1, "end_turn")),
        ("a child that read a file, then answered", [*two_turns, *_turn(2, "end_turn")]),
        ("a child whose answer hit a stop sequence", _turn(1, "stop_sequence")),
        (
            "a child that ran out of turns (its last event is MaxTurnsReached)",
            [*two_turns, *_turn(2, "tool_use", tool=True), MaxTurnsReached(2)],
        ),
        (
            "a child whose last reply was cut at max_tokens",
            [*two_turns, *_turn(2, "max_tokens")],
        ),
        (
            "a child whose reply ran into the end of the context window",
            [*two_turns, *_turn(2, "model_context_window_exceeded")],
        ),
        ("a child whose long reply was paused (pause_turn)", _turn(1, "pause_turn")),
        (
            "a child stopped by its token budget (its last event is BudgetSpent)",
            [*two_turns, BudgetSpent(4_200, 5_000, 1_900)],
        ),
        ("a child whose model refused", _turn(1, "refusal")),
        ("a child whose prompt was refused before any call", [PromptRefused("empty prompt")]),
        ("a child that never ran (no events at all)", []),
    ]


@exercise("status_of", _STATUS_HINT)
def check_status_of(status_of: Callable[[list[Event]], Any]) -> str:
    why = "status_of calls the package's outcome; read the events yourself."
    if refers_to(status_of, outcome, attributes=False):
        raise NotYet(why)
    cases = status_cases()
    expected = [outcome(events)[0] for _, events in cases]
    with forbid(capsule_module, "outcome", why), forbid(subagents, "outcome", why):
        for (what, events), want in zip(cases, expected, strict=True):
            try:
                got = status_of(list(events))
            except NotImplementedError:
                raise
            except Exception as error:
                raise NotYet(
                    f"for {what}, your code raised {type(error).__name__}: {error}"
                ) from None
            if got not in ("complete", "partial", "failed"):
                raise NotYet(
                    f"for {what}, you returned {got!r}; return 'complete', 'partial' or 'failed'."
                )
            if got != want:
                raise NotYet(f"{what}: that is {want!r}; yours says {got!r}.")
    return (
        f"{len(cases)} ways a child's run ends: your status matches the capsule's for each "
        "(only a finished answer is complete; a cut, a turn limit or a budget is partial)."
    )


# -- exercise 2: a fork's messages -------------------------------------------------------------

_FORK_HINT = (
    "copy the list (out = list(parent_messages)); if the last message is the assistant's, "
    "append ONE user message: a m.tool_result(id, PLACEHOLDER) for every tool_use in it "
    "(m.tool_uses(last)), the same PLACEHOLDER text for all, then m.text(directive) as its "
    "last block. A reply with no tool calls gets just the directive. Never change the "
    "parent's list or its messages."
)

SYSTEM = "You are a coding agent in a billing service's repository."
TOOLS: list[dict[str, Any]] = [
    {
        "name": name,
        "description": f"The {name} tool.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    for name in ("read_file", "grep")
]
DIRECTIVES = [
    "Review app/tax.py for rounding bugs.",
    "Review app/billing.py for rounding bugs.",
    "Review app/invoices.py for rounding bugs.",
]


def parent_with_calls() -> list[m.MessageDict]:
    """A parent conversation whose last reply asked for three tools (not run yet)."""
    return [
        m.user("Review the rounding in app/, one module at a time."),
        m.assistant(
            [m.text("Listing the modules."), m.tool_use("toolu_01", "grep", {"path": "app"})]
        ),
        m.user([m.tool_result("toolu_01", "app/tax.py\napp/billing.py\napp/invoices.py")]),
        m.assistant(
            [
                m.text("Three modules: one reviewer each."),
                m.tool_use("toolu_02", "read_file", {"path": "app/tax.py"}),
                m.tool_use("toolu_03", "read_file", {"path": "app/billing.py"}),
                m.tool_use("toolu_04", "read_file", {"path": "app/invoices.py"}),
            ]
        ),
    ]


def parent_answered() -> list[m.MessageDict]:
    """A parent conversation whose last reply was a plain answer."""
    return [*parent_with_calls()[:3], m.assistant("Three modules: tax, billing, invoices.")]


def _sibling(
    fork_messages_for: Callable[[list[m.MessageDict], str], Any],
    parent: list[m.MessageDict],
    directive: str,
    what: str,
) -> list[m.MessageDict]:
    before = copy.deepcopy(parent)
    given = parent
    got = fork_messages_for(given, directive)
    if given != before:
        raise NotYet(
            f"{what}: the parent's conversation changed while you built the fork (a fork "
            "must not touch its parent's list or messages: copy first)."
        )
    if not isinstance(got, list) or not all(isinstance(x, dict) and "role" in x for x in got):
        raise NotYet(f"{what}: return a list of messages (dicts with a role), not {got!r:.80}.")
    problems = m.validate(got)
    if problems:
        raise NotYet(f"{what}: the API would refuse these messages: {problems[0]}")
    if got[: len(parent)] != parent:
        raise NotYet(f"{what}: the fork must start with the parent's messages, unchanged.")
    if len(got) != len(parent) + 1:
        raise NotYet(
            f"{what}: add exactly one user message after the parent's; yours adds "
            f"{len(got) - len(parent)}."
        )
    blocks = m.blocks(got[-1])
    last = blocks[-1] if blocks else {}
    if last.get("type") != "text" or last.get("text") != directive:
        raise NotYet(f"{what}: the directive must be the last block of the last message.")
    calls = (
        [str(u["id"]) for u in m.tool_uses(parent[-1])] if parent[-1]["role"] == "assistant" else []
    )
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if [str(b.get("tool_use_id")) for b in results] != calls:
        raise NotYet(f"{what}: answer each pending call, in order, with one tool_result.")
    texts = {str(b.get("content")) for b in results}
    if len(texts) > 1:
        raise NotYet(
            f"{what}: the calls got different placeholder texts ({len(texts)} of them); give "
            "every call the same text, so every sibling's bytes match up to its directive."
        )
    return got


@exercise("fork_messages_for", _FORK_HINT)
def check_fork_messages_for(
    fork_messages_for: Callable[[list[m.MessageDict], str], Any],
) -> str:
    why = "fork_messages_for uses the package's fork; build the messages yourself."
    for answer in (fork_module.fork_messages, fork, Fork):
        if refers_to(fork_messages_for, answer, attributes=False):
            raise NotYet(why)
    with (
        forbid(fork_module, "fork_messages", why),
        forbid(children_module, "fork", why),
        forbid(subagents, "fork", why),
    ):
        parent = parent_with_calls()
        siblings = [
            _sibling(fork_messages_for, parent, d, f"sibling {n} (three pending calls)")
            for n, d in enumerate(DIRECTIVES, start=1)
        ]
        placeholders = {
            str(b.get("content"))
            for s in siblings
            for b in m.blocks(s[-1])
            if b.get("type") == "tool_result"
        }
        if len(placeholders) > 1:
            raise NotYet(
                "the siblings' placeholders differ from one another; the text must be the same "
                "in every sibling, or their prefixes differ before the directive."
            )
        report = prefix_report(
            [
                {"model": "m", "max_tokens": 100, "system": SYSTEM, "tools": TOOLS, "messages": s}
                for s in siblings
            ]
        )
        for n, sibling in enumerate(report, start=1):
            if not sibling.only_directive_differs:
                raise NotYet(
                    f"sibling {n} differs from sibling 1 at {sibling.diverges_at}, before its "
                    f"directive ({sibling.directive_at})."
                )
        _sibling(fork_messages_for, parent_answered(), DIRECTIVES[0], "a parent that answered")
    shared = min(p.shared for p in report[1:])
    return (
        f"3 siblings, valid, one placeholder for every pending call, directive last, the "
        f"parent untouched; they share {shared:,} of {report[0].bytes:,} bytes, up to the "
        "directive."
    )


__all__ = [
    "DIRECTIVES",
    "check_fork_messages_for",
    "check_status_of",
    "parent_answered",
    "parent_with_calls",
    "status_cases",
]
