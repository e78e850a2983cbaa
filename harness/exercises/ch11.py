"""Chapter 11's exercises: the command line's exit code, and a plugin that counts tool calls.

Exercise 1 checks the learner's ``exit_code(events, interrupted=False)`` against
:func:`harness.cli.report.ending` on the ways a run can end: an answer, the turn limit, a call
that waits for a person, recovery giving up, a refused prompt, Ctrl-C, no events at all. It
refuses code that calls ``ending``. Exercise 2 checks a ``ToolTally`` plugin: it runs a
scripted agent with the learner's plugin attached (two runs, several calls per reply) and
compares the counts per tool with the calls the model made.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.agent import Agent
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
from harness.exercises import NotYet, exercise, forbid, refers_to
from harness.loop import Plugin
from harness.model import ScriptedModel, reply, tool_call
from harness.recovery import GaveUp
from harness.tools.builtins import glob, grep, read_file

# -- exercise 1: the exit code -----------------------------------------------------------------

_EXIT_HINT = (
    "interrupted wins: 130. Otherwise look at the last event only: TurnEnded → 0 (done), "
    "MaxTurnsReached → 3, AwaitingApproval → 4, GaveUp or PromptRefused → 1; anything else, "
    "or no events at all, → 1 (the run failed without saying why). Return an int."
)


def _answered(n: int, stop: str = "end_turn") -> list[Event]:
    """A turn that ends the run (no AssistantReplied: ``ending`` only needs it for the text)."""
    return [ModelCalled(n, 2 * n - 1, 1_000 * n), TurnEnded(n, stop)]


def _tool(n: int) -> list[Event]:
    return [
        ModelCalled(n, 2 * n - 1, 1_000 * n),
        ToolStarted(f"toolu_{n:02d}", "read_file", {"path": "app/tax.py"}),
        ToolFinished(f"toolu_{n:02d}", "read_file", "1 ...", False),
    ]


def exit_cases() -> list[tuple[str, list[Event], bool]]:
    """(what happened, the run's events, whether Ctrl-C stopped it)."""
    waiting = AwaitingApproval(
        "apr_0001", "toolu_03", "write_file", {"path": "NOTES.md"}, "write_file changes things"
    )
    gave_up = GaveUp("overloaded", "529 overloaded_error", "attempts used up", "try later")
    return [
        ("a run that answered", _answered(1), False),
        ("a run that read a file, then answered", [*_tool(1), *_answered(2)], False),
        ("a run whose answer hit max_tokens", _answered(1, "max_tokens"), False),
        ("a run that used up --max-turns", [*_tool(1), *_tool(2), MaxTurnsReached(2)], False),
        ("a run stopped for an approval", [*_tool(1), ModelCalled(2, 3, 2_000), waiting], False),
        (
            "a run whose model calls failed (recovery gave up)",
            [ModelCalled(1, 1, 900), gave_up],
            False,
        ),
        ("a prompt refused before any call", [PromptRefused("empty prompt")], False),
        ("a run stopped with Ctrl-C in a tool", [*_tool(1)], True),
        ("a run stopped with Ctrl-C just after its answer", _answered(1), True),
        ("a run cut off after a tool, with no ending event", [*_tool(1)], False),
        ("a run that yielded nothing", [], False),
    ]


@exercise("exit_code", _EXIT_HINT)
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
                    f"{what}: the command line exits {want} ({Exit(want).name}); yours says {got}."
                )
    return (
        f"{len(cases)} ways a run ends: your exit code matches the command line's for each "
        "(0 done, 1 failed, 3 turn limit, 4 awaiting approval, 130 Ctrl-C)."
    )


# -- exercise 2: a plugin that counts tool calls -----------------------------------------------

_TALLY_HINT = (
    "subclass Plugin; in __init__ set self.counts = {}; in after_reply(self, agent, reply) go "
    "through reply.content and, for every block whose type is 'tool_use', add 1 to "
    "self.counts[block.name]. Every call counts, several per reply, across runs."
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
    reply("Once more.", tool_calls=[tool_call("read_file", path="a.py")]),
    reply("Same as before."),
]
_EXPECTED = {"glob": 1, "read_file": 3, "grep": 1}


@exercise("ToolTally", _TALLY_HINT)
def check_tool_tally(tool_tally: Callable[[], Any]) -> str:
    try:
        tally = tool_tally()
    except NotImplementedError:
        raise
    if not isinstance(tally, Plugin):
        raise NotYet("ToolTally() is not a Plugin: write `class ToolTally(Plugin):`.")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "a.py").write_text("x = 1  # TODO\n")
        (root / "b.py").write_text("y = 2\n")
        agent = Agent(
            ScriptedModel(_SCRIPT, clock=FakeClock()),
            tools=[glob, read_file, grep],
            workspace=root,
            plugins=[tally],
        )
        for prompt in ("What is in this folder?", "And now?"):
            events = list(agent.run(prompt))
            if not isinstance(events[-1], TurnEnded):
                raise NotYet(f"the test run did not finish: its last event was {events[-1]}")
    replies = sum(isinstance(e, AssistantReplied) for e in events)
    counts = getattr(tally, "counts", None)
    if not isinstance(counts, dict):
        raise NotYet(f"after two runs, tally.counts is {counts!r}; keep a dict of name → calls.")
    got = {str(k): v for k, v in counts.items() if v}
    if got != _EXPECTED:
        raise NotYet(
            f"two runs made these calls: {_EXPECTED}; your tally says {got}. (The last run "
            f"had {replies} replies: count calls, not replies, and keep counting across runs.)"
        )
    return "two runs, five tool calls over three replies: your tally counts each one by name."


__all__ = ["check_exit_code", "check_tool_tally", "exit_cases"]
