"""Chapter 07's exercises: when to extract session memory, and where tier 2 cuts.

Exercise 1 checks the learner's ``due`` on the schedule's edges, then runs it inside
``SessionMemory`` on a small scripted session and compares the extractions with the
package's own. Exercise 2 checks ``cut_point`` on generated conversations against
``keep_from`` and asks ``messages.validate`` whether what is kept, after the memory, is a
conversation the API accepts. Both refuse code that calls the package's answer.
"""

from __future__ import annotations

import functools
import random
import tempfile
from collections.abc import Callable
from copy import deepcopy
from pathlib import Path
from typing import Any

from harness import messages as m
from harness import tokens
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction import session_memory
from harness.compaction.session_memory import keep_from, memory_message
from harness.exercises import NotYet, exercise, forbid, hints, refers_to
from harness.memory import ExtractionSchedule, SessionMemory
from harness.model import ScriptedModel
from harness.model.scripted_memory import is_extraction_request, scripted_extraction
from harness.notebook.sessions import coding_script, make_project
from harness.tools import builtin_tools
from harness.tools.permissions import Permissions

# -- exercise 1: when to extract ----------------------------------------------------------------

_DUE_HINT = (
    "the schedule has two thresholds, one for the first extraction and one for every later "
    "one, and a condition on tool calls that holds for both; read the chapter's table of "
    "observed numbers again."
)
_DUE_RECIPE = """\
1. if calls_since < 3: return False (both kinds of extraction wait for 3 tool calls).
2. if at_last is None (no extraction yet): return context >= 10_000.
3. Otherwise return context - at_last >= 5_000: the growth since the last extraction counts,
   not the size. (After a compaction SessionMemory sets at_last to the smaller size, so growth
   counts from there.)"""
_DUE_FIRST = "due(9_999, None, 3) should be False: the first extraction waits for 10,000 tokens."

# (context, at_last, calls_since, expected, why)
_DUE_CASES: list[tuple[int, int | None, int, bool, str]] = [
    (9_999, None, 3, False, "the first extraction waits for 10,000 tokens"),
    (10_000, None, 3, True, "10,000 tokens and 3 tool calls: the first extraction is due"),
    (10_000, None, 2, False, "the first extraction also waits for 3 tool calls"),
    (80_000, None, 0, False, "no tool calls since the last extraction: nothing new to record"),
    (14_999, 10_000, 3, False, "4,999 tokens of growth is not 5,000"),
    (15_000, 10_000, 3, True, "5,000 tokens of growth and 3 tool calls: due"),
    (15_000, 10_000, 2, False, "a later extraction also waits for 3 tool calls"),
    (12_000, 11_000, 9, False, "after the first, it is growth that counts, not the size"),
    (9_000, 20_000, 9, False, "the context shrank (a compaction): no growth"),
    (40_000, 20_000, 12, True, "20,000 tokens of growth, 12 calls: due"),
    (
        8_000,
        3_000,
        4,
        True,
        "a compaction left 3,000 tokens and SessionMemory counts growth from there: 5,000 of "
        "growth is due, though the context is under 10,000",
    ),
]


class _Learners(ExtractionSchedule):
    """The package's schedule with the learner's rule in place of its own."""

    rule: Any = None

    def due(self, context: int, at_last: int | None, calls_since: int) -> bool:
        answer = self.rule(context, at_last, calls_since)
        if not isinstance(answer, bool):
            raise NotYet(f"due(...) returned {answer!r}; return True or False.")
        return answer


@functools.cache
def _package_extractions() -> list[tuple[int, int]]:
    """The package's own schedule in the small session: what the learner's must match."""
    return _extractions(ExtractionSchedule())


def _extractions(schedule: ExtractionSchedule) -> list[tuple[int, int]]:
    """(reply, context tokens) of each extraction in a small scripted session."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        make_project(root)
        clock = FakeClock()
        model = ScriptedModel(coding_script(24, write_lines=200), clock=clock)
        model.answer_when(is_extraction_request, scripted_extraction)
        memory = SessionMemory(root / ".harness" / "MEMORY.md", schedule=schedule)
        agent = Agent(
            model,
            tools=builtin_tools(),
            system="You are a careful coding agent.",
            workspace=root,
            clock=clock,
            permissions=Permissions(mode="accept_edits"),
            plugins=[memory],
        )
        for _ in agent.run("Check that every module rounds amounts to cents the same way."):
            pass
        return [(e.reply, e.context_tokens) for e in memory.extractions]


@exercise("due", _DUE_HINT, first=_DUE_FIRST, number=1)
def check_due(due: Callable[[int, int | None, int], Any]) -> str:
    why = "due calls ExtractionSchedule.due; write the rule yourself."
    expected = _package_extractions()
    with forbid(ExtractionSchedule, "due", why):
        for context, at_last, calls, answer, reason in _DUE_CASES:
            got = due(context, at_last, calls)
            if not isinstance(got, bool):
                raise NotYet(f"due({context}, {at_last}, {calls}) returned {got!r}, not a bool.")
            if got != answer:
                raise NotYet(
                    f"due({context:_}, {at_last if at_last is None else f'{at_last:_}'}, "
                    f"{calls}) is {got}, should be {answer}: {reason}."
                )
        found = _extractions(_Learners(rule=due))
    if found != expected:
        raise NotYet(
            f"in a 24-turn session your rule extracted after replies {[r for r, _ in found]}; "
            f"SessionMemory's extracts after {[r for r, _ in expected]}."
        )
    return (
        f"{len(_DUE_CASES)} edge cases right, and in a 24-turn session your rule extracts "
        f"after the same replies as SessionMemory's: {[r for r, _ in found]}."
    )


# -- exercise 2: where tier 2 cuts --------------------------------------------------------------

_CUT_HINT = (
    "count what you keep from the end backwards, each message as tokens.estimate_message counts "
    "it (its overhead included), and stop as soon as both minimums hold, not one message "
    "before or after; then think about what a tool result needs in front of it."
)
_CUT_FIRST = (
    "cut_point([user 'Hello.', assistant 'Hi.'], 10_000, 5) should be 0: everything is recent, "
    "so everything is kept."
)
_CUT_RECIPE = """\
1. start = len(messages) and kept = 0: nothing kept yet, 0 tokens.
2. While start > 0 and (kept < min_tokens or len(messages) - start < min_messages):
   start -= 1, then kept += tokens.estimate_message(messages[start]).
3. Then, while start > 0 and messages[start] is a user message with tool results
   (messages[start]["role"] == "user" and m.tool_results(messages[start])): start -= 1, so the
   reply whose calls they answer is kept too.
4. Return start."""


def conversation(rng: random.Random, rounds: int) -> list[m.MessageDict]:
    """A valid conversation: prompts, replies with 0-3 tool calls, their results."""
    out: list[m.MessageDict] = [m.user("Make every module round amounts to cents.")]
    ids = 0
    for _ in range(rounds):
        words = " ".join(["rounding"] * rng.randint(5, 400))
        calls = rng.choice([0, 1, 1, 1, 2, 3])
        uses = []
        for _ in range(calls):
            ids += 1
            uses.append(m.tool_use(f"toolu_{ids:04d}", "read_file", {"path": f"app/{ids}.py"}))
        out.append(m.assistant([m.text(words), *uses]))
        if uses:
            results = [
                m.tool_result(str(u["id"]), " ".join(["Decimal"] * rng.choice([3, 50, 900, 2_500])))
                for u in uses
            ]
            out.append(m.user(results))
        else:
            out.append(m.user(rng.choice(["Go on.", "Actually, use ROUND_HALF_UP.", "Thanks."])))
    if out[-1]["role"] == "user" and not m.tool_results(out[-1]):
        out.append(m.assistant("Done."))
    return out


def _on_the_edge(rng: random.Random) -> list[tuple[list[m.MessageDict], int, int]]:
    """Cases whose ``min_tokens`` is exactly what the last k messages hold, and one more.

    Each message counts as ``tokens.estimate_message`` counts it (its overhead included), so a
    count that leaves out a message's overhead, or starts from anything but 0, or stops one
    message early or late, keeps a different number of messages here.
    """
    cases: list[tuple[list[m.MessageDict], int, int]] = []
    while len(cases) < 16:
        messages = conversation(rng, rng.randint(3, 20))
        sizes = [tokens.estimate_message(msg) for msg in messages]
        ends = [
            k
            for k in range(2, len(messages))
            if not m.tool_results(messages[len(messages) - k])  # not moved back: a clean edge
        ]
        if not ends:
            continue
        k = rng.choice(ends)
        held = sum(sizes[len(messages) - k :])
        cases.append((messages, held, 1))  # exactly enough: keep k messages
        cases.append((messages, held + 1, 1))  # one token short: keep one more
    return cases


def _cases() -> list[tuple[list[m.MessageDict], int, int]]:
    rng = random.Random(7)
    cases: list[tuple[list[m.MessageDict], int, int]] = [
        ([m.user("Hello."), m.assistant("Hi.")], 10_000, 5),  # everything is recent
    ]
    for _ in range(60):
        messages = conversation(rng, rng.randint(1, 30))
        cases.append((messages, rng.choice([0, 500, 2_000, 10_000]), rng.choice([1, 2, 5, 8])))
    return cases + _on_the_edge(random.Random(11))


@functools.cache
def _cuts() -> tuple[list[tuple[list[m.MessageDict], int, int]], list[int]]:
    """The generated cases and where ``keep_from`` cuts each: made once, they never change."""
    cases = _cases()
    expected = [
        keep_from(msgs, len(msgs), min_tokens=t, min_messages=k, max_tokens=10**12)
        for msgs, t, k in cases
    ]
    return cases, expected


@exercise("cut_point", _CUT_HINT, first=_CUT_FIRST, number=2)
def check_cut_point(cut_point: Callable[[list[m.MessageDict], int, int], Any]) -> str:
    why = "cut_point calls keep_from; write the walk back yourself."
    if refers_to(cut_point, keep_from):
        raise NotYet(why)
    cases, expected = _cuts()
    with forbid(session_memory, "keep_from", why):
        for (messages, min_tokens, min_messages), want in zip(cases, expected, strict=True):
            copy = deepcopy(messages)  # the cases are made once: the learner gets a copy
            got = cut_point(copy, min_tokens, min_messages)
            if copy != messages:
                raise NotYet("cut_point changed the messages it was given; only read them.")
            if not isinstance(got, int) or isinstance(got, bool) or not 0 <= got < len(messages):
                raise NotYet(
                    f"cut_point returned {got!r} for {len(messages)} messages; return an index "
                    f"from 0 to {len(messages) - 1}."
                )
            kept = messages[got:]
            size = sum(tokens.estimate_message(msg) for msg in kept)
            where = (
                f"in a conversation of {len(messages)} messages, with min_tokens={min_tokens:,} "
                f"and min_messages={min_messages}, you keep from {got}"
            )
            if got > 0 and (size < min_tokens or len(kept) < min_messages):
                raise NotYet(
                    f"{where}: {len(kept)} messages, {size:,} tokens, fewer than asked for."
                )
            after = memory_message("(the session memory)", kept[0])
            rest = kept[1:] if kept[0]["role"] == "user" else kept
            problems = m.validate(after + rest) if got > 0 else []
            if problems:
                raise NotYet(
                    f"{where}: after the memory that is not a valid conversation "
                    f"({problems[0].kind}): the first kept message answers tool calls that "
                    "were cut."
                )
            if got != want:
                held = sum(tokens.estimate_message(msg) for msg in messages[want:])
                raise NotYet(
                    f"{where} ({size:,} tokens by tokens.estimate_message); keep from {want} "
                    f"({held:,} tokens): the cut nearest the end that holds enough tokens and "
                    "messages, moved back only to keep tool calls with their results."
                )
    return (
        f"{len(cases)} generated conversations: your cut keeps enough tokens and messages, "
        "never separates a tool result from its call, and is the nearest to the end."
    )


hint = hints(__name__, {1: _DUE_RECIPE, 2: _CUT_RECIPE})

__all__ = ["check_cut_point", "check_due", "conversation", "hint"]
