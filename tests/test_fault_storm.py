"""The fault storm: a thousand short sessions under random failures, and what must always hold.

Each session is seeded (``random.Random(seed)``): a script of 2-6 turns with tiny tools and
replies that are sometimes cut at ``max_tokens``, a random :class:`RecoveryPolicy`, and a
fault function that fails a random share of the requests with any failure the API has
(429 with and without Retry-After in its three forms, 529, 5xx, 408/409, dropped connections,
timeouts, 400-422, prompt-too-long, and ``x-should-retry`` either way). Whatever happens:

* ``Agent.run`` never raises, and ends with ``TurnEnded``, ``MaxTurnsReached`` or ``GaveUp``;
* after every event the conversation is one the API accepts (only the calls of the reply just
  received may wait for their results, while they run);
* every wait is at least what the failed response asked for, and a backoff stays within the
  policy's bounds;
* the run gives up exactly where the policy says, and nowhere else;
* no tool call of a cut reply ever runs.

Then the small-window sessions of issue 11: five parallel reads on a small window, with
auto-compact on, must end with an event, never an exception. (That one turn of reads never
overflows the window on its own is marked as an expected failure, for now.)
"""

from __future__ import annotations

import email.utils
import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anthropic
import pytest
from anthropic.types import Message

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.auto import AutoCompact
from harness.compaction.summary import is_compaction_request
from harness.events import (
    AssistantReplied,
    Event,
    MaxTurnsReached,
    ModelCalled,
    PermissionDecided,
    ToolFinished,
    ToolStarted,
    TurnEnded,
)
from harness.loop import AgentConfig, BaseAgent, ModelRequest, Plugin
from harness.model import DEFAULT_MODEL, ScriptedModel, Step, faults, reply, tool_call
from harness.model.scripted import Request
from harness.model.scripted_summary import scripted_summary
from harness.recovery import (
    Continued,
    Escalated,
    FellBack,
    GaveUp,
    PromptTooLong,
    Recovery,
    RecoveryPolicy,
    Retrying,
)
from harness.tokens import AUTO_COMPACT_BUFFER, ContextBudget
from harness.tools import builtin_tools
from tests.small_tools import count, echo

MODEL = DEFAULT_MODEL  # the course's model
FALLBACK = "claude-haiku-4-5"
CUT_AT = 256  # the sessions' max_tokens: small, so a cut reply stays cheap to build
ESCALATED = 1_024  # the policy's escalate_to, when it escalates
SESSIONS = 1_000
BLOCK = 50
ENDINGS = (TurnEnded, MaxTurnsReached, GaveUp)
TOOL_EVENTS = (AssistantReplied, ToolStarted, PermissionDecided, ToolFinished)


def words(tokens: int) -> str:
    """Text of about ``tokens`` tokens (four characters a token)."""
    return "word " * (tokens * 4 // 5)


# -- the faults ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """A failure the storm raised, and what the policy must make of it."""

    error: anthropic.APIError
    kind: str
    """As ``recovery.classify`` should name it."""
    retryable: bool
    not_before: float | None = None
    """The clock time the response said to wait for (Retry-After), if it said one."""


def _rate_limited(rng: random.Random, now: float) -> Fault:
    form = rng.choice(("none", "seconds", "ms", "date", "both"))
    if form == "none":
        return Fault(faults.rate_limited(None), "rate_limited", True)
    if form == "seconds":
        seconds = rng.choice((0, 1, 2.5, 7, 30, 90, 700))
        return Fault(faults.rate_limited(seconds), "rate_limited", True, now + seconds)
    if form == "ms":
        ms = rng.choice((0, 250, 1_500, 12_000))
        error = faults.rate_limited(None, headers={"retry-after-ms": str(ms)})
        return Fault(error, "rate_limited", True, now + ms / 1000)
    if form == "date":
        date = email.utils.formatdate(now + rng.choice((0, 3, 20, 45, 700)), usegmt=True)
        parsed = email.utils.parsedate_tz(date)
        assert parsed is not None
        return Fault(faults.rate_limited(date), "rate_limited", True, email.utils.mktime_tz(parsed))
    # Both, as the API sends them: the precise one in ms, and whole seconds rounded up. The
    # SDK (and this policy) take the ms one, which is the floor then.
    ms = rng.choice((400, 2_300, 9_100))
    error = faults.rate_limited(-(-ms // 1000), headers={"retry-after-ms": str(ms)})
    return Fault(error, "rate_limited", True, now + ms / 1000)


def _overloaded(rng: random.Random, now: float) -> Fault:
    form = rng.choice(("plain", "plain", "plain", "retry-after", "no-retry"))
    if form == "retry-after":  # short, so it never crosses max_wait (which fallback outranks)
        return Fault(faults.overloaded(headers={"retry-after": "2"}), "overloaded", True, now + 2)
    if form == "no-retry":
        error = faults.overloaded(headers={"x-should-retry": "false"})
        return Fault(error, "overloaded", False)
    return Fault(faults.overloaded(), "overloaded", True)


def _status(status: int, kind: str, retryable: bool) -> Callable[[random.Random, float], Fault]:
    return lambda rng, now: Fault(faults.status_error(status), kind, retryable)


def _invalid_request(rng: random.Random, now: float) -> Fault:
    return Fault(faults.invalid_request("messages.0: bad field"), "bad_request", False)


def _bad_request_retry_anyway(rng: random.Random, now: float) -> Fault:
    error = faults.status_error(400, "flaky", headers={"x-should-retry": "true"})
    return Fault(error, "bad_request", True)


FAULTS: list[tuple[int, Callable[[random.Random, float], Fault]]] = [
    (12, _rate_limited),
    (12, _overloaded),
    (3, _status(500, "server", True)),
    (2, _status(503, "server", True)),
    (2, _status(504, "server", True)),
    (2, _status(408, "timeout", True)),
    (2, _status(409, "conflict", True)),
    (4, lambda rng, now: Fault(faults.connection_error(), "connection", True)),
    (3, lambda rng, now: Fault(faults.timeout(), "timeout", True)),
    (1, _invalid_request),
    (1, _bad_request_retry_anyway),
    (1, lambda rng, now: Fault(faults.authentication_error(), "authentication", False)),
    (1, _status(403, "permission", False)),
    (1, _status(404, "not_found", False)),
    (1, _status(413, "too_large", False)),
    (1, _status(422, "unprocessable", False)),
    (5, lambda rng, now: Fault(faults.prompt_too_long(210_000, 200_000), "prompt_too_long", False)),
]


def random_fault(rng: random.Random, now: float) -> Fault:
    weights = [w for w, _ in FAULTS]
    make = rng.choices([f for _, f in FAULTS], weights)[0]
    return make(rng, now)


# -- what the model saw, and what the harness did ------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One request the model received, and the fault it answered with (if any)."""

    purpose: str  # "turn" or "compaction"
    model: str
    max_tokens: int
    key: str
    """The conversation sent: equal keys, model and max_tokens make the same call again."""
    turn: int
    at: float
    fault: Fault | None


class StormClock(FakeClock):
    """A fake clock that notes, for each wait, the call that failed just before it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Call] = []
        self.waits: list[tuple[float, float, Call | None]] = []
        """(seconds, clock when the wait began, the call that failed)."""

    def sleep(self, seconds: float) -> None:
        self.waits.append((seconds, self.now(), self.calls[-1] if self.calls else None))
        super().sleep(seconds)


class Replies(Plugin):
    """The innermost layer: every reply the model sent, kept or thrown away."""

    def __init__(self) -> None:
        self.replies: list[Message] = []

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        reply = call(request)
        self.replies.append(reply)
        return reply


# -- one session ---------------------------------------------------------------------------------


def random_policy(rng: random.Random) -> RecoveryPolicy:
    if rng.random() < 0.2:
        fallback = rng.choice((None, FALLBACK))
        return RecoveryPolicy.sdk_default().model_copy(update={"fallback_model": fallback})
    return RecoveryPolicy(
        max_attempts=rng.choice((1, 2, 3, 10, 10)),
        fallback_model=rng.choice((None, FALLBACK)),
        fallback_after=rng.choice((1, 2, 3, 3)),
        max_wait=rng.choice((20.0, 60.0, 600.0)),
        escalate_to=rng.choice((None, ESCALATED, ESCALATED)),
        max_continuations=rng.choice((0, 1, 3)),
        reactive_compact=rng.random() < 0.85,
        seed=rng.randrange(1_000),
    )


def random_script(rng: random.Random) -> list[Step]:
    """2-6 turns: tool turns (some of them cut at max_tokens), then a last reply."""
    script: list[Step] = []
    for _ in range(rng.randint(1, 5)):
        shape = rng.choice(("tools", "tools", "cut", "cut-long", "cut-bare"))
        small = [
            tool_call("echo", text=f"note {rng.randrange(100)}")
            if rng.random() < 0.5
            else tool_call("count", n=rng.randint(1, 5))
            for _ in range(rng.randint(1, 3))
        ]
        if shape == "tools":
            script.append(reply("Checking.", tool_calls=small))
        elif shape == "cut":  # the last call does not fit in CUT_AT, fits after escalation
            script.append(
                reply("Two calls.", tool_calls=[*small, tool_call("echo", text=words(500))])
            )
        elif shape == "cut-long":  # does not fit even after escalation
            script.append(reply("Long.", tool_calls=[*small, tool_call("echo", text=words(1_500))]))
        else:  # a reply that is only a call too big for CUT_AT: cut, it leaves nothing
            script.append(reply(tool_calls=[tool_call("echo", text=words(500))]))
    last = rng.choice(("short", "short", "cut", "cut-long"))
    size = {"short": 0, "cut": 500, "cut-long": 1_500}[last]
    script.append(reply(words(size) if size else "All done."))
    # Continuations take steps beyond the planned ones: they answer, and the run ends.
    script.extend(reply("Done.") for _ in range(8))
    return script


@dataclass
class Session:
    seed: int
    policy: RecoveryPolicy
    agent: Agent
    clock: StormClock
    replies: Replies
    events: list[Event]


def run_storm_session(seed: int, workspace: Path) -> Session:
    rng = random.Random(seed)
    policy = random_policy(rng)
    share = rng.uniform(0.05, 0.45)  # of requests that fail
    clock = StormClock()
    turn = [0]

    def fault_for(request: Request) -> anthropic.APIError | None:
        fault = random_fault(rng, clock.now()) if rng.random() < share else None
        purpose = "compaction" if is_compaction_request(request) else "turn"
        key = json.dumps(request.messages, sort_keys=True, default=str)
        clock.calls.append(
            Call(purpose, request.model, request.max_tokens, key, turn[0], clock.now(), fault)
        )
        return fault.error if fault is not None else None

    model = ScriptedModel(random_script(rng), clock=clock, faults=fault_for)
    model.answer_when(is_compaction_request, scripted_summary)
    replies = Replies()
    agent = Agent(
        model,
        tools=[echo, count],
        workspace=workspace,
        clock=clock,
        plugins=[Recovery(policy), replies],
        config=AgentConfig(model=MODEL, max_tokens=CUT_AT, max_turns=rng.randint(3, 8)),
    )
    events: list[Event] = []
    try:
        for event in agent.run("Check the notes."):
            events.append(event)
            if isinstance(event, ModelCalled):
                turn[0] = event.turn
            problems = m.validate(agent.messages)
            assert problems == [] or (
                isinstance(event, TOOL_EVENTS) and awaiting_results(agent.messages, problems)
            ), f"seed {seed}: after {event!r} the conversation is invalid: {problems}"
    except AssertionError:
        raise
    except Exception as error:
        raise AssertionError(f"seed {seed}: Agent.run raised {error!r}; {events}") from error
    return Session(seed, policy, agent, clock, replies, events)


def awaiting_results(messages: list[m.MessageDict], problems: list[m.Problem]) -> bool:
    """The only allowed gap: the last reply's calls, whose results are on their way."""
    last = len(messages) - 1
    return messages[last]["role"] == "assistant" and all(
        p.kind == "tool_use_unanswered" and p.index == last for p in problems
    )


# -- what the policy says ------------------------------------------------------------------------


def fatal(calls: list[Call], i: int, policy: RecoveryPolicy) -> str | None:
    """Why the policy must give up at call ``i``, or None if it must not (or may: a compaction
    request too long, which the compaction handles by dropping old rounds or failing)."""
    call, fault = calls[i], calls[i].fault
    if fault is None:
        return None
    if fault.kind == "prompt_too_long":
        if call.purpose != "turn":
            return None
        if not policy.reactive_compact:
            return "reactive compaction is off"
        earlier = [
            c
            for c in calls[:i]
            if c.purpose == "turn"
            and c.turn == call.turn
            and c.fault is not None
            and c.fault.kind == "prompt_too_long"
        ]
        return "still too long after a reactive compaction" if earlier else None
    if not fault.retryable:
        return "not retryable"
    fell_back = (
        fault.kind == "overloaded" and i + 1 < len(calls) and calls[i + 1].model != call.model
    )
    if fell_back:
        return None
    if attempt_number(calls, i) >= policy.max_attempts:
        return used_up(policy.max_attempts)
    if fault.not_before is not None and fault.not_before - call.at > policy.max_wait:
        return "the API asked to wait"
    return None


def attempt_number(calls: list[Call], i: int) -> int:
    """1 + how many times the same request was sent just before call ``i``."""
    same = (calls[i].purpose, calls[i].model, calls[i].max_tokens, calls[i].key)
    n = 1
    while i - n >= 0:
        c = calls[i - n]
        if (c.purpose, c.model, c.max_tokens, c.key) != same:
            break
        n += 1
    return n


def check_session(s: Session) -> Counter[str]:
    """Every property of one finished session; returns what happened, for coverage."""
    seed, policy, events, calls = s.seed, s.policy, s.events, s.clock.calls
    where = f"seed {seed} ({policy!r})"
    assert isinstance(events[-1], ENDINGS), f"{where}: the run ended with {events[-1]!r}"
    assert not any(isinstance(e, ENDINGS) for e in events[:-1]), f"{where}: {events}"
    assert m.validate(s.agent.messages) == [], where

    # Waits: one per Retrying event, never shorter than the response asked, backoff in bounds.
    retries = [e for e in events if isinstance(e, Retrying)]
    assert [r.delay for r in retries] == [w for w, _, _ in s.clock.waits], where
    for retry, (seconds, began, failed) in zip(retries, s.clock.waits, strict=True):
        assert failed is not None and failed.fault is not None, f"{where}: a wait after success"
        assert failed.fault.retryable, f"{where}: waited after a non-retryable {failed.fault}"
        if failed.fault.not_before is not None:
            assert retry.source == "retry-after", where
            assert began + seconds >= failed.fault.not_before - 1e-6, (
                f"{where}: waited {seconds} s at {began}, the API said not before "
                f"{failed.fault.not_before}"
            )
        else:
            assert retry.source == "backoff", where
            base = min(policy.base_delay * 2 ** (retry.attempt - 1), policy.max_delay)
            low, high = (
                (base, base * (1 + policy.jitter))
                if policy.jitter_mode == "add"
                else (base * (1 - policy.jitter), base)
            )
            assert low - 1e-9 <= seconds <= high + 1e-9, f"{where}: backoff {seconds} for {retry}"

    # Give-ups: exactly where the policy says.
    reasons = {i: r for i in range(len(calls)) if (r := fatal(calls, i, policy)) is not None}
    ending = events[-1]
    if reasons:
        assert list(reasons) == [len(calls) - 1], (
            f"{where}: the run went on after a call the policy cannot recover: {reasons}"
        )
    if isinstance(ending, GaveUp):
        last = calls[-1]
        assert last.fault is not None, f"{where}: gave up after a call that worked: {ending}"
        if last.purpose == "compaction":
            assert ending.kind == "prompt_too_long", where
            assert ending.reason.startswith("the reactive compaction failed"), f"{where}: {ending}"
        else:
            expected = reasons.get(len(calls) - 1)
            assert expected is not None, f"{where}: gave up where the policy goes on: {ending}"
            assert ending.reason.startswith(expected), f"{where}: {ending} (expected {expected})"
            assert ending.kind == last.fault.kind, f"{where}: {ending} after {last.fault}"
        if ending.reason == used_up(policy.max_attempts):
            assert attempt_number(calls, len(calls) - 1) == policy.max_attempts, where
    else:
        assert not reasons, f"{where}: should have given up at {reasons}, ended {ending!r}"

    # Fallback: only as configured, after enough 529s in a row.
    fell = [e for e in events if isinstance(e, FellBack)]
    assert len(fell) <= 1, where
    if fell:
        assert policy.fallback_model == fell[0].to_model, where
        assert fell[0].overloaded >= policy.fallback_after, where

    # No call of a cut reply ever runs.
    withheld = {
        block.id
        for r in s.replies.replies
        if r.stop_reason != "tool_use"
        for block in r.content
        if block.type == "tool_use"
    }
    ran = {e.tool_use_id for e in events if isinstance(e, ToolStarted)}
    answered = {str(b.get("tool_use_id")) for msg in s.agent.messages for b in m.tool_results(msg)}
    leaked = withheld & (ran | answered)
    assert not leaked, f"{where}: calls of a cut reply ran or were answered: {leaked}"

    seen: Counter[str] = Counter(type(e).__name__ for e in events)
    seen["withheld calls"] += len(withheld)
    seen["waits for retry-after"] += sum(1 for r in retries if r.source == "retry-after")
    seen["sessions"] += 1
    return seen


@pytest.mark.parametrize("block", range(SESSIONS // BLOCK))
def test_fault_storm_never_crashes_and_gives_up_only_where_the_policy_says(
    block: int, tmp_path: Path
) -> None:
    seen: Counter[str] = Counter()
    for seed in range(block * BLOCK, (block + 1) * BLOCK):
        seen += check_session(run_storm_session(seed, tmp_path))
    # Not vacuous: every block of 50 sees each mechanism at work.
    for what in ("Retrying", "waits for retry-after", "GaveUp", "TurnEnded", "Escalated"):
        assert seen[what] > 0, f"block {block} never saw {what}: {seen}"
    assert seen["withheld calls"] > 0, seen


def test_the_storm_covers_every_transition(tmp_path: Path) -> None:
    """The first 200 sessions, together, show every event of recovery and every ending."""
    seen: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for seed in range(200):
        session = run_storm_session(seed, tmp_path)
        seen += check_session(session)
        kinds.update(c.fault.kind for c in session.clock.calls if c.fault is not None)
    for event in (Retrying, FellBack, Escalated, Continued, PromptTooLong, GaveUp):
        assert seen[event.__name__] > 0, f"never saw {event.__name__}: {seen}"
    for ending in ENDINGS:
        assert seen[ending.__name__] > 0, f"no run ended with {ending.__name__}: {seen}"
    assert set(kinds) >= {
        "rate_limited",
        "overloaded",
        "server",
        "timeout",
        "conflict",
        "connection",
        "bad_request",
        "authentication",
        "permission",
        "not_found",
        "too_large",
        "unprocessable",
        "prompt_too_long",
    }, kinds


def used_up(attempts: int) -> str:
    """GaveUp's reason when every attempt failed."""
    return f"{attempts} attempt{'s' if attempts > 1 else ''} failed"


# -- the small window (issue 11) -----------------------------------------------------------------

SMALL_WINDOW_SESSIONS = 30


def run_small_window_session(
    seed: int, root: Path, *, recovery: bool = True
) -> tuple[list[Event], Agent]:
    """Five parallel reads of random-sized files on an 8K-40K window, auto-compact on.

    With ``recovery=False`` it is the harness before chapter 06: no Recovery plugin and no
    budget for one turn's results.
    """
    rng = random.Random(seed)
    window = rng.randrange(8_000, 40_001, 1_000)
    max_output = 4_000 if window >= 20_000 else 2_000
    root.mkdir()
    for i in range(5):
        size = rng.randint(window // 40, window // 4)  # tokens, at ~70 characters a line
        lines = [f"line {j}: " + "x" * 60 for j in range(size * 4 // 70)]
        (root / f"part{i}.txt").write_text("\n".join(lines) + "\n")
    clock = FakeClock()
    reads = [tool_call("read_file", path=f"part{i}.txt") for i in range(5)]
    script = [reply("Reading the five parts.", tool_calls=reads), reply("They agree.")]
    model = ScriptedModel(script, context_window=window, clock=clock)
    model.answer_when(is_compaction_request, scripted_summary)
    # Below 15K the default 13K buffer leaves no room (ContextBudget refuses it): keep 1K.
    buffer = min(AUTO_COMPACT_BUFFER, window - max_output - 1_000)
    auto = AutoCompact(ContextBudget(window=window, max_output=max_output, buffer=buffer))
    agent = Agent(
        model,
        tools=builtin_tools(),
        workspace=root,
        clock=clock,
        plugins=[Recovery(), auto] if recovery else [auto],
        config=AgentConfig(model=MODEL, max_tokens=max_output),
    )
    if not recovery:
        agent.tools.turn_budget = 10**9
    events: list[Event] = []
    for event in agent.run("Check that the five parts agree."):
        events.append(event)
        problems = m.validate(agent.messages)
        assert problems == [] or (
            isinstance(event, TOOL_EVENTS) and awaiting_results(agent.messages, problems)
        ), f"seed {seed}: after {event!r}: {problems}"
    return events, agent


def test_small_window_sessions_end_with_an_event_never_an_exception(tmp_path: Path) -> None:
    for seed in range(SMALL_WINDOW_SESSIONS):
        events, agent = run_small_window_session(seed, tmp_path / str(seed))
        assert isinstance(events[-1], ENDINGS), f"seed {seed}: ended with {events[-1]!r}"
        assert m.validate(agent.messages) == [], f"seed {seed}"


def test_without_recovery_and_the_turn_budget_small_window_sessions_raise(
    tmp_path: Path,
) -> None:
    """The hazard is real: before chapter 06 (no Recovery, no turn budget), 9 of these 30
    sessions raised BadRequestError (prompt too long) out of Agent.run when this was written
    (the issue counted 7 of its own 30). With both, none raises (the test above)."""
    raised = 0
    for seed in range(SMALL_WINDOW_SESSIONS):
        try:
            run_small_window_session(seed, tmp_path / str(seed), recovery=False)
        except anthropic.BadRequestError as error:
            assert "prompt is too long" in str(error)
            raised += 1
    assert raised > 0


# Measured when this was written. With read_file's results outside the turn's budget (it opts
# out of storage), 9 of the 30 sessions overflowed and gave up. With them counted (a change to
# dispatch.py in progress), one still does: seed 20, a 17K window, where auto-compact's
# threshold is 0, its summary re-injects the five files just read (5,874 -> 19,552 tokens, over
# the window), and the reactive compaction cannot shrink that. Strict: remove the mark once the
# harness holds.
@pytest.mark.xfail(
    strict=True,
    reason="a small window still overflows after one turn of reads (see the comment above)",
)
def test_one_turn_of_parallel_reads_never_overflows_a_small_window(tmp_path: Path) -> None:
    for seed in range(SMALL_WINDOW_SESSIONS):
        events, _ = run_small_window_session(seed, tmp_path / str(seed))
        assert not any(isinstance(e, (PromptTooLong, GaveUp)) for e in events), f"seed {seed}"
