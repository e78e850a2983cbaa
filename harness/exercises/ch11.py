"""Chapter 11's exercises: the command line's exit code, and a plugin that counts tool calls.

Exercise 1 checks the learner's ``exit_code(events, interrupted=False)`` against
:func:`harness.cli.report.ending` on the ways a run can end: an answer, the turn limit, a call
that waits for a person, recovery giving up, a refused prompt, Ctrl-C at any point, no events
at all; then on the events of two runs one after another, where only how the last ended
counts. It refuses code that calls ``ending``. Exercise 2 checks a ``ToolTally`` plugin: one
tally on two scripted agents in turn (a run each, several calls per reply), its counts per
tool against the calls the model made, and a second tally that must start from nothing.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.agent import Agent
from harness.approvals import ApprovalApplied
from harness.cli import report
from harness.cli.report import Exit, ending
from harness.clock import FakeClock
from harness.events import (
    AssistantReplied,
    AwaitingApproval,
    Event,
    MaxTurnsReached,
    ModelCalled,
    PromptRefused,
    ToolFinished,
    ToolStarted,
    TurnEnded,
)
from harness.exercises import NotYet, exercise, forbid, hints, refers_to
from harness.loop import Plugin
from harness.model import ScriptedModel, reply, tool_call
from harness.recovery import GaveUp, Retrying
from harness.tools.builtins import glob, grep, read_file

# -- exercise 1: the exit code -----------------------------------------------------------------

_EXIT_HINT = (
    "one exit code comes from outside the events (what the person did at the keyboard) and "
    "wins over everything; the others come from how the run stopped, which one event says. "
    "The table of exit codes in this chapter (`Exit`) names each."
)
_EXIT_FIRST = (
    "exit_code([ModelCalled(1, 1, 1_000), TurnEnded(1, 'end_turn')]) should be 0: the run answered."
)
_EXIT_RECIPE = (
    "if interrupted: return 130, whatever the events. Otherwise take last = events[-1] (None "
    "when there are no events) and look at nothing else: TurnEnded → 0 (done), "
    "MaxTurnsReached → 3, AwaitingApproval → 4; anything else (GaveUp, PromptRefused, a run "
    "cut off, no events at all) → 1. Return an int."
)


def _answered(n: int, stop: str = "end_turn") -> list[Event]:
    """A turn that ends the run (no AssistantReplied: ``ending`` only needs it for the text)."""
    return [ModelCalled(n, 2 * n - 1, 1_000 * n), TurnEnded(n, stop)]


def _tool(n: int, *, failed: bool = False) -> list[Event]:
    text = "File not found: app/taxes.py" if failed else "1 ..."
    return [
        ModelCalled(n, 2 * n - 1, 1_000 * n),
        ToolStarted(f"toolu_{n:02d}", "read_file", {"path": "app/tax.py"}),
        ToolFinished(f"toolu_{n:02d}", "read_file", text, failed),
    ]


def _retry(attempt: int) -> Retrying:
    return Retrying(attempt, 10, 0.5 * attempt, "backoff", "529 overloaded_error", "m", "turn", 0)


def exit_cases() -> list[tuple[str, list[Event], bool]]:
    """(what happened, the events, whether Ctrl-C stopped it).

    A run yields one ending event, last. The later cases are two runs of one session, one
    after the other: only how the last ended counts.
    """
    waiting = AwaitingApproval(
        "apr_0001", "toolu_03", "write_file", {"path": "NOTES.md"}, "write_file changes things"
    )
    gave_up = GaveUp("overloaded", "529 overloaded_error", "attempts used up", "try later")
    applied = ApprovalApplied("apr_0001", "write_file", "approved", True, "Wrote 3 lines", False)
    stopped = [*_tool(1), ModelCalled(2, 3, 2_000), waiting]
    return [
        ("a run that answered", _answered(1), False),
        ("a run that read a file, then answered", [*_tool(1), *_answered(2)], False),
        ("a run whose answer hit max_tokens", _answered(1, "max_tokens"), False),
        ("a run that used up --max-turns", [*_tool(1), *_tool(2), MaxTurnsReached(2)], False),
        ("a run stopped for an approval", stopped, False),
        (
            "a run whose model calls failed (recovery gave up)",
            [ModelCalled(1, 1, 900), _retry(1), gave_up],
            False,
        ),
        ("a prompt refused before any call", [PromptRefused("empty prompt")], False),
        ("a run stopped with Ctrl-C in a tool", [*_tool(1)], True),
        ("a run stopped with Ctrl-C just after its answer", _answered(1), True),
        ("a run stopped with Ctrl-C before any event", [], True),
        (
            "a run stopped with Ctrl-C while recovery waited",
            [ModelCalled(1, 1, 900), _retry(1)],
            True,
        ),
        ("a run stopped with Ctrl-C as it hit --max-turns", [*_tool(1), MaxTurnsReached(1)], True),
        ("a run cut off after a tool, with no ending event", [*_tool(1)], False),
        ("a run that yielded nothing", [], False),
        (
            "a run that retried twice (529s), then answered",
            [ModelCalled(1, 1, 900), _retry(1), _retry(2), *_answered(1)[1:]],
            False,
        ),
        ("a run whose read failed, then answered", [*_tool(1, failed=True), *_answered(2)], False),
        (
            "two runs: the first answered, the second stopped for an approval",
            [*_answered(1), *stopped],
            False,
        ),
        (
            "two runs: the first stopped for an approval; approved, the second used up --max-turns",
            [*stopped, applied, *_tool(1), *_tool(2), MaxTurnsReached(2)],
            False,
        ),
        (
            "two runs: the first used up --max-turns, the second's model calls failed",
            [*_tool(1), MaxTurnsReached(1), ModelCalled(1, 3, 2_000), gave_up],
            False,
        ),
        (
            "two runs: the first's model calls failed, the second answered",
            [ModelCalled(1, 1, 900), gave_up, *_answered(1)],
            False,
        ),
        (
            "two runs: the first's prompt was refused, the second answered",
            [PromptRefused("empty prompt"), *_answered(1)],
            False,
        ),
    ]


@exercise("exit_code", _EXIT_HINT, first=_EXIT_FIRST, number=1)
def check_exit_code(exit_code: Callable[..., Any]) -> str:
    why = "exit_code calls the command line's own ending(); read the events yourself."
    if refers_to(exit_code, ending, attributes=False):
        raise NotYet(why)
    cases = exit_cases()
    expected = [int(ending(events, interrupted=stopped).exit) for _, events, stopped in cases]
    with forbid(report, "ending", why):
        for (what, events, stopped), want in zip(cases, expected, strict=True):
            try:
                got = exit_code(list(events), interrupted=stopped)
            except NotImplementedError:
                raise
            except Exception as error:
                raise NotYet(
                    f"for {what}, your code raised {type(error).__name__}: {error}"
                ) from None
            if isinstance(got, bool) or not isinstance(got, int):
                raise NotYet(f"for {what}, you returned {got!r}; return an int (an Exit is one).")
            if got != want:
                raise NotYet(
                    f"{what}: the command line exits {want} ({Exit(want).name}); yours says {got}.",
                    _exit_nudge(events, stopped),
                )
    return (
        f"{len(cases)} ways a run ends: your exit code matches the command line's for each "
        "(0 done, 1 failed, 3 turn limit, 4 awaiting approval, 130 Ctrl-C)."
    )


def _exit_nudge(events: list[Event], interrupted: bool) -> str | None:
    """A nudge for Ctrl-C, or for two runs' events (else the exercise's hint)."""
    if interrupted:
        return "Ctrl-C is not an event: it comes in as `interrupted`, and it wins."
    ending = (TurnEnded, MaxTurnsReached, AwaitingApproval, GaveUp, PromptRefused)
    if sum(isinstance(e, ending) for e in events) > 1:
        return (
            "these events hold two runs, one after the other, each with its own ending; "
            "the command line exits with how the last one ended."
        )
    return None


# -- exercise 2: a plugin that counts tool calls -----------------------------------------------

_TALLY_HINT = (
    "after_reply hears each reply once, as it comes back; one reply can ask for several "
    "tools, and what it asked for is in its content. The counts belong to one tally object: "
    "they go on over every run it sees, and a new tally starts from nothing."
)
_TALLY_FIRST = (
    "one ToolTally on two scripted agents in turn, whose replies call glob once, read_file "
    "three times (twice in one reply) and grep once, should end with tally.counts == "
    "{'glob': 1, 'read_file': 3, 'grep': 1}."
)
_TALLY_RECIPE = (
    "subclass Plugin; in __init__ set self.counts = {} (on the object, not in the class "
    "body); in after_reply(self, agent, reply) go through reply.content and, for every block "
    "whose type is 'tool_use', add 1 to self.counts[block.name] "
    "(self.counts.get(block.name, 0) + 1). Every call counts, several per reply, across runs."
)

_SCRIPT = [
    reply(
        "Looking around.",
        tool_calls=[
            tool_call("glob", pattern="*.py"),
            tool_call("read_file", path="a.py"),
            tool_call("read_file", path="b.py"),
        ],
    ),
    reply(tool_calls=[tool_call("grep", pattern="TODO")]),
    reply("a.py and b.py; one TODO."),
]
_SCRIPT_2 = [
    reply("Once more.", tool_calls=[tool_call("read_file", path="a.py")]),
    reply("Same as before."),
]
_EXPECTED = {"glob": 1, "read_file": 3, "grep": 1}


def _counts(tally: object, when: str) -> dict[str, Any]:
    counts = getattr(tally, "counts", None)
    if not isinstance(counts, dict):
        raise NotYet(f"{when}, tally.counts is {counts!r}; keep a dict of name → calls.")
    return {str(k): v for k, v in counts.items() if v}


@exercise("ToolTally", _TALLY_HINT, first=_TALLY_FIRST, number=2)
def check_tool_tally(tool_tally: Callable[[], Any]) -> str:
    try:
        tally = tool_tally()
    except NotImplementedError:
        raise
    if not isinstance(tally, Plugin):
        raise NotYet("ToolTally() is not a Plugin: write `class ToolTally(Plugin):`.")
    start = getattr(tally, "counts", None)
    if isinstance(start, dict) and any(start.values()):
        raise NotYet(f"a new ToolTally() starts with counts {start}; it should start empty.")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "a.py").write_text("x = 1  # TODO\n")
        (root / "b.py").write_text("y = 2\n")
        runs = [
            ("What is in this folder?", _SCRIPT),
            ("And now?", _SCRIPT_2),  # a second agent: a new session, the same tally
        ]
        for prompt, script in runs:
            agent = Agent(
                ScriptedModel(script, clock=FakeClock()),
                tools=[glob, read_file, grep],
                workspace=root,
                plugins=[tally],
            )
            events = list(agent.run(prompt))
            if not isinstance(events[-1], TurnEnded):
                raise NotYet(f"the test run did not finish: its last event was {events[-1]}")
    replies = sum(isinstance(e, AssistantReplied) for e in events)
    got = _counts(tally, "after two runs")
    if got != _EXPECTED:
        raise NotYet(
            f"two runs, on two agents in turn, made these calls: {_EXPECTED}; your tally says "
            f"{got}. (The last run had {replies} replies: count calls, not replies, and keep "
            "counting across runs and agents.)"
        )
    if second := _counts(tool_tally(), "for a second ToolTally()"):
        raise NotYet(
            f"a second ToolTally(), made after the runs, starts with counts {second}: the "
            "first tally's. Each tally needs counts of its own.",
            "where does a value live that every object of a class shares, and where does "
            "one that belongs to a single object live?",
        )
    return (
        "two runs on two agents, five tool calls over three replies: your tally counts each "
        "one by name, and a new tally starts empty."
    )


hint = hints(__name__, {1: _EXIT_RECIPE, 2: _TALLY_RECIPE})

__all__ = ["check_exit_code", "check_tool_tally", "exit_cases", "hint"]
