"""Chapter 10's exercises: how a child's run ended, and a fork's messages.

Exercise 1 checks the learner's ``status_of(events)`` against
:func:`harness.subagents.outcome` on the ways a child's run can end: a final answer, a
reply cut short, its turn limit, its token budget, a refusal, an API error, a run that never
started; then on the events of a child's runs one after another (a child resumed with a
follow-up), where only how the last run ended counts.
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
from harness.exercises import NotYet, exercise, forbid, hints, refers_to
from harness.recovery import GaveUp, Retrying
from harness.subagents import BudgetSpent, Fork, fork, outcome, prefix_report
from harness.subagents import capsule as capsule_module
from harness.subagents import children as children_module

# -- exercise 1: complete, partial or failed ---------------------------------------------------

_STATUS_HINT = (
    "how a child's run ended is said by the events it yields as it stops; read the chapter's "
    'list under "Complete, partial, failed" again, then look at which event each way of '
    "stopping leaves, and what that event carries."
)
_STATUS_FIRST = (
    "status_of([ModelCalled(1, 1, 1_000), TurnEnded(1, 'end_turn')]) should be 'complete': "
    "the child answered and stopped."
)
_STATUS_RECIPE = (
    "with no events at all, return 'failed' (it never ran). Otherwise take last = events[-1] "
    "and look at nothing else. If it is a TurnEnded: 'partial' when its stop_reason is "
    "'max_tokens', 'model_context_window_exceeded' or 'pause_turn' (the reply was cut), "
    "'failed' when it is 'refusal', else 'complete'. If it is a MaxTurnsReached or a "
    "BudgetSpent: 'partial' (it stopped mid-work). Anything else (GaveUp, PromptRefused, ...): "
    "'failed'."
)


def _turn(n: int, stop: str | None = None) -> list[Event]:
    """One turn's events: the call, then a tool (``stop`` None) or the run's end."""
    called = ModelCalled(n, 2 * n - 1, 1_000 * n)
    if stop is not None:
        return [called, TurnEnded(n, stop)]
    return [
        called,
        ToolStarted(f"toolu_{n:02d}", "read_file", {"path": "app/tax.py"}),
        ToolFinished(f"toolu_{n:02d}", "read_file", "1 ...", False),
    ]


def _gave_up(n: int) -> list[Event]:
    """A call the API kept refusing: a retry, then recovery gives up (chapter 06)."""
    retry = Retrying(1, 2, 0.5, "backoff", "529 overloaded_error", "m", "subagent", 0.0)
    cause = "529 overloaded_error"
    return [ModelCalled(n, 2 * n - 1, 1_000 * n), retry, GaveUp("overloaded", cause, "2 of 2", "")]


def status_cases() -> list[tuple[str, list[Event]]]:
    """(what happened, the child's events); the expected status is ``outcome``'s.

    A run yields one ending event, last. The later cases join a child's runs one after
    another (a child resumed with a follow-up): only how the last run ended counts.
    """
    failed_tool = [
        ModelCalled(1, 1, 1_000),
        ToolStarted("toolu_01", "read_file", {"path": "app/taxes.py"}),
        ToolFinished("toolu_01", "read_file", "File not found: app/taxes.py", True),
    ]
    return [
        ("a child that answered at once", _turn(1, "end_turn")),
        ("a child that read a file, then answered", [*_turn(1), *_turn(2, "end_turn")]),
        ("a child whose answer hit a stop sequence", _turn(1, "stop_sequence")),
        (
            "a child that ran out of turns (its last event is MaxTurnsReached)",
            [*_turn(1), *_turn(2), MaxTurnsReached(2)],
        ),
        ("a child whose last reply was cut at max_tokens", [*_turn(1), *_turn(2, "max_tokens")]),
        (
            "a child whose reply ran into the end of the context window",
            [*_turn(1), *_turn(2, "model_context_window_exceeded")],
        ),
        ("a child whose long reply was paused (pause_turn)", _turn(1, "pause_turn")),
        (
            "a child stopped by its token budget (its last event is BudgetSpent)",
            [*_turn(1), BudgetSpent(4_200, 5_000, 1_900)],
        ),
        ("a child whose model refused", _turn(1, "refusal")),
        (
            "a child stopped by an API error (its last event is recovery's GaveUp)",
            [*_turn(1), *_gave_up(2)],
        ),
        ("a child whose prompt was refused before any call", [PromptRefused("empty prompt")]),
        ("a child that never ran (no events at all)", []),
        (
            "a child whose first read failed (an error result), then answered",
            [*failed_tool, *_turn(2, "end_turn")],
        ),
        (
            "a child that answered, then a follow-up (resume) stopped by an API error: "
            "TurnEnded, then GaveUp last",
            [*_turn(1, "end_turn"), *_gave_up(1)],
        ),
        (
            "a child that answered, then a follow-up that ran out of turns",
            [*_turn(1, "end_turn"), *_turn(1), *_turn(2), MaxTurnsReached(2)],
        ),
        (
            "a child that ran out of turns, then a follow-up that answered",
            [*_turn(1), *_turn(2), MaxTurnsReached(2), *_turn(1, "end_turn")],
        ),
        (
            "a child cut at max_tokens, then a follow-up that answered",
            [*_turn(1, "max_tokens"), *_turn(1, "end_turn")],
        ),
        (
            "a child stopped by its budget, then a follow-up that answered",
            [*_turn(1), BudgetSpent(4_200, 5_000, 1_900), *_turn(1, "end_turn")],
        ),
        (
            "a child whose model refused, then a follow-up that answered",
            [*_turn(1, "refusal"), *_turn(1, "end_turn")],
        ),
        (
            "a child that answered, then a follow-up whose model refused",
            [*_turn(1, "end_turn"), *_turn(1, "refusal")],
        ),
    ]


@exercise("status_of", _STATUS_HINT, first=_STATUS_FIRST, number=1)
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
                raise NotYet(
                    f"{what}: that is {want!r}; yours says {got!r}.", _status_nudge(events)
                )
    return (
        f"{len(cases)} ways a child's runs end: your status matches the capsule's for each "
        "(only a finished answer is complete; a cut, a turn limit or a budget is partial)."
    )


def _status_nudge(events: list[Event]) -> str | None:
    """A nudge for a list that holds more than one run's ending (else the exercise's hint)."""
    ending = (TurnEnded, MaxTurnsReached, BudgetSpent, GaveUp, PromptRefused)
    if sum(isinstance(e, ending) for e in events) > 1:
        return (
            "these events hold two runs, one after the other, each with its own ending; "
            "which of them says how the child stands now?"
        )
    return None


# -- exercise 2: a fork's messages -------------------------------------------------------------

_FORK_HINT = (
    "a fork's messages are its parent's, unchanged, and one more user message; the API wants "
    "every tool call of the parent's last reply answered in that message, and siblings share "
    "their bytes only if everything before their directive is the same. The list you are "
    "given is the parent's own."
)
_FORK_FIRST = (
    "fork_messages_for(parent, 'Review app/tax.py for rounding bugs.'), with a parent whose "
    "last reply asked for three read_file calls, should return the parent's four messages and "
    "one user message: a tool_result for each of the three calls, then the directive."
)
_FORK_RECIPE = (
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


@exercise("fork_messages_for", _FORK_HINT, first=_FORK_FIRST, number=2)
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


hint = hints(__name__, {1: _STATUS_RECIPE, 2: _FORK_RECIPE})

__all__ = [
    "DIRECTIVES",
    "check_fork_messages_for",
    "check_status_of",
    "hint",
    "parent_answered",
    "parent_with_calls",
    "status_cases",
]
