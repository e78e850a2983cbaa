"""Error recovery (chapter 06): one test per rule of ``harness.recovery``.

Every run goes through a real ``Agent`` on a ``ScriptedModel`` that raises the SDK's own
exceptions (``harness.model.faults``), on a ``FakeClock``: a 32-second backoff takes no time,
and ``clock.sleeps`` says exactly how long the harness waited.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic.types import Message, TextBlock, ToolUseBlock, Usage
from pydantic import BaseModel

from harness import Agent, AgentConfig, FakeClock
from harness import messages as m
from harness.compaction.events import Compacted
from harness.compaction.summary import CompactionError, compact, is_compaction_request
from harness.events import Event, ToolFinished, TurnEnded
from harness.loop import ModelRequest, StopRun
from harness.model import ScriptedModel, faults, reply, tool_call
from harness.model.scripted import Fault, FaultSchedule, Request, Step
from harness.model.scripted_summary import scripted_summary
from harness.pricing import cost_of
from harness.recovery import (
    CONTINUATION_PROMPT,
    Attempt,
    Continued,
    Escalated,
    FellBack,
    GaveUp,
    PromptTooLong,
    Recovery,
    RecoveryPolicy,
    Retrying,
    StoppedContinuing,
    classify,
    is_prompt_too_long,
    retry_after,
)
from harness.tools import ToolContext, tool
from tests.small_tools import count

SONNET = "claude-sonnet-4-6"
HAIKU = "claude-haiku-4-5"
START = 1_767_225_600.0  # where a FakeClock starts: 2026-01-01T00:00:00Z


# -- helpers ----------------------------------------------------------------------------------


class Session:
    """An agent with Recovery on a scripted model, and everything a test looks at."""

    def __init__(
        self,
        tmp_path: Path,
        script: Iterable[Step] = (reply("fine now"),),
        *,
        policy: RecoveryPolicy | None = None,
        schedule: FaultSchedule = (),
        tools: Sequence[Any] = (),
        window: int = 200_000,
        max_tokens: int = 8_000,
    ) -> None:
        self.clock = FakeClock()
        self.model = ScriptedModel(script, clock=self.clock, faults=schedule, context_window=window)
        self.model.answer_when(is_compaction_request, scripted_summary)
        self.recovery = Recovery(policy)
        self.agent = Agent(
            self.model,
            tools=list(tools),
            workspace=tmp_path,
            clock=self.clock,
            plugins=[self.recovery],
            config=AgentConfig(model=SONNET, max_tokens=max_tokens),
        )
        self.events: list[Event] = []

    def run(self, prompt: str = "Do the task.") -> list[Event]:
        """Run to the end, checking the conversation after every event (as test_loop does:
        only the calls of the last reply may be unanswered, while its tools run)."""
        for event in self.agent.run(prompt):
            self.events.append(event)
            messages = self.agent.messages
            pending = len(messages) - 1
            problems = [
                p
                for p in m.validate(messages)
                if not (p.kind == "tool_use_unanswered" and p.index == pending)
            ]
            assert problems == [], f"invalid after {event}"
        assert m.validate(self.agent.messages) == []
        return self.events

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def last(self) -> Event:
        return self.events[-1]


def backoff_base(attempt: int, cap: float = 32.0) -> float:
    return min(0.5 * 2.0 ** (attempt - 1), cap)


class RecordInput(BaseModel):
    text: str


def recording_tool(calls: list[str]) -> Any:
    """A tool with a side effect: each call is written down. (Marked read-only so that it
    runs without an approver: what it changes is only this test's list.)"""

    @tool(RecordInput, read_only=True)
    def record(args: RecordInput, context: ToolContext) -> str:
        """Write the text down."""
        calls.append(args.text)
        return "recorded"

    return record


# -- backoff ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_backoff_doubles_from_half_a_second_to_32_s_plus_up_to_a_quarter(seed: int) -> None:
    policy = RecoveryPolicy(seed=seed)
    rng = random.Random(seed)
    for attempt in range(1, 11):
        wait = policy.backoff(attempt, rng)
        base = backoff_base(attempt)
        assert base <= wait <= base * 1.25, (attempt, wait)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_the_waits_on_the_clock_follow_the_backoff_for_each_failed_attempt(
    tmp_path: Path, seed: int
) -> None:
    session = Session(
        tmp_path, policy=RecoveryPolicy(seed=seed), schedule=[faults.server_error()] * 9
    )
    session.run()
    assert len(session.clock.sleeps) == 9
    for attempt, wait in enumerate(session.clock.sleeps, start=1):
        base = backoff_base(attempt)
        assert base <= wait <= base * 1.25, (attempt, wait)
    assert any(wait > backoff_base(n) for n, wait in enumerate(session.clock.sleeps, start=1))
    assert isinstance(session.last, TurnEnded)
    assert session.clock.now() == pytest.approx(START + sum(session.clock.sleeps))


def test_the_sdk_preset_subtracts_jitter_and_caps_at_8_s() -> None:
    policy = RecoveryPolicy.sdk_default()
    for seed in range(5):
        rng = random.Random(seed)
        for attempt in range(1, 11):
            wait = policy.backoff(attempt, rng)
            base = backoff_base(attempt, cap=8.0)
            assert base * 0.75 <= wait <= base, (attempt, wait)
    assert policy.max_attempts == 3


def test_the_sdk_preset_gives_up_after_three_attempts(tmp_path: Path) -> None:
    session = Session(
        tmp_path, policy=RecoveryPolicy.sdk_default(), schedule=[faults.overloaded()] * 3
    )
    session.run()
    assert len(session.model.requests) == 3
    assert len(session.clock.sleeps) == 2
    assert isinstance(session.last, GaveUp) and "3 attempts" in session.last.reason


def test_the_same_seed_gives_the_same_waits(tmp_path: Path) -> None:
    def waits(seed: int, where: Path) -> list[float]:
        where.mkdir()
        session = Session(
            where, policy=RecoveryPolicy(seed=seed), schedule=[faults.overloaded()] * 6
        )
        session.run()
        return session.clock.sleeps

    assert waits(7, tmp_path / "a") == waits(7, tmp_path / "b")
    assert waits(7, tmp_path / "c") != waits(8, tmp_path / "d")


# -- Retry-After -------------------------------------------------------------------------------


def test_retry_after_wins_over_backoff(tmp_path: Path) -> None:
    session = Session(tmp_path, schedule=[faults.rate_limited(7)])
    session.run()
    assert session.clock.sleeps == [7.0]
    (retrying,) = session.of(Retrying)
    assert retrying.source == "retry-after" and retrying.delay == 7.0


def test_retry_after_ms_wins_over_retry_after(tmp_path: Path) -> None:
    session = Session(
        tmp_path, schedule=[faults.rate_limited(30, headers={"retry-after-ms": "1500"})]
    )
    session.run()
    assert session.clock.sleeps == [1.5]


def test_retry_after_as_an_http_date_is_measured_on_the_agents_clock(tmp_path: Path) -> None:
    # The fake clock reads 2026-01-01T00:00:00Z; the machine's clock says something else.
    session = Session(tmp_path, schedule=[faults.rate_limited("Thu, 01 Jan 2026 00:00:42 GMT")])
    session.run()
    assert session.clock.sleeps == [42.0]
    assert isinstance(session.last, TurnEnded)


def test_a_retry_after_on_a_529_is_honoured_too(tmp_path: Path) -> None:
    session = Session(tmp_path, schedule=[faults.overloaded(headers={"retry-after": "12"})])
    session.run()
    assert session.clock.sleeps == [12.0]


def test_a_retry_after_longer_than_max_wait_gives_up_without_a_shorter_wait(
    tmp_path: Path,
) -> None:
    session = Session(tmp_path, schedule=[faults.rate_limited(3_600)])
    session.run()
    assert session.clock.sleeps == []  # never a shorter wait than the API asked for
    assert len(session.model.requests) == 1
    assert isinstance(session.last, GaveUp)
    assert "3,600" in session.last.reason and "max_wait" in session.last.reason


def test_a_retry_after_up_to_max_wait_is_waited_in_full(tmp_path: Path) -> None:
    session = Session(
        tmp_path, policy=RecoveryPolicy(max_wait=100), schedule=[faults.rate_limited(100)]
    )
    session.run()
    assert session.clock.sleeps == [100.0]


def test_the_naive_preset_ignores_retry_after(tmp_path: Path) -> None:
    session = Session(
        tmp_path, policy=RecoveryPolicy.naive(wait=1.0), schedule=[faults.rate_limited(30)]
    )
    session.run()
    assert session.clock.sleeps == [1.0]
    (retrying,) = session.of(Retrying)
    assert retrying.source == "backoff"


def test_a_garbage_retry_after_falls_back_to_backoff(tmp_path: Path) -> None:
    session = Session(tmp_path, schedule=[faults.rate_limited("soon, probably")])
    session.run()
    assert 0.5 <= session.clock.sleeps[0] <= 0.625
    assert session.of(Retrying)[0].source == "backoff"


# -- x-should-retry ---------------------------------------------------------------------------


def test_x_should_retry_false_on_a_529_ends_the_run_at_once(tmp_path: Path) -> None:
    session = Session(tmp_path, schedule=[faults.overloaded(headers={"x-should-retry": "false"})])
    session.run()
    assert len(session.model.requests) == 1
    assert session.clock.sleeps == []
    assert isinstance(session.last, GaveUp) and "x-should-retry: false" in session.last.cause


def test_x_should_retry_true_on_a_400_is_retried(tmp_path: Path) -> None:
    bad = faults.status_error(400, "try again", headers={"x-should-retry": "true"})
    session = Session(tmp_path, schedule=[bad])
    session.run()
    assert len(session.model.requests) == 2
    assert len(session.clock.sleeps) == 1
    assert isinstance(session.last, TurnEnded)


# -- what is retried and what is not ----------------------------------------------------------

RETRYABLE: list[tuple[str, Callable[[], anthropic.APIError]]] = [
    ("429", lambda: faults.rate_limited(None)),
    ("529", faults.overloaded),
    ("500", faults.server_error),
    ("503", lambda: faults.status_error(503)),
    ("504", lambda: faults.status_error(504)),
    ("408", lambda: faults.status_error(408)),
    ("409", lambda: faults.status_error(409)),
    ("connection", faults.connection_error),
    ("timeout", faults.timeout),
]


@pytest.mark.parametrize("make", [f for _, f in RETRYABLE], ids=[n for n, _ in RETRYABLE])
def test_a_passing_failure_is_retried_and_the_run_then_succeeds(
    tmp_path: Path, make: Callable[[], anthropic.APIError]
) -> None:
    session = Session(tmp_path, schedule=[make(), make()])
    session.run()
    assert len(session.model.requests) == 3
    assert len(session.of(Retrying)) == 2 and len(session.clock.sleeps) == 2
    assert isinstance(session.last, TurnEnded)
    assert m.text_of(session.agent.messages[-1]) == "fine now"


NOT_RETRYABLE: list[tuple[str, Callable[[], anthropic.APIError], str]] = [
    ("400", lambda: faults.invalid_request("messages.0.content: bad"), "malformed"),
    ("401", faults.authentication_error, "ANTHROPIC_API_KEY"),
    ("403", lambda: faults.status_error(403), "permission"),
    ("404", lambda: faults.status_error(404), "model id"),
    ("413", lambda: faults.status_error(413), "32 MB"),
    ("422", lambda: faults.status_error(422), "could not process"),
]


@pytest.mark.parametrize(
    ("make", "advice"),
    [(f, a) for _, f, a in NOT_RETRYABLE],
    ids=[n for n, _, _ in NOT_RETRYABLE],
)
def test_a_mistake_in_the_request_ends_the_run_at_once_saying_what_to_fix(
    tmp_path: Path, make: Callable[[], anthropic.APIError], advice: str
) -> None:
    session = Session(tmp_path, schedule=[make()])
    events = session.run()  # never raises
    assert len(session.model.requests) == 1
    assert session.clock.sleeps == []
    assert isinstance(session.last, GaveUp)
    assert advice in session.last.advice
    assert session.last.reason == "not retryable"
    assert not any(isinstance(e, TurnEnded) for e in events)
    assert m.validate(session.agent.messages) == []


def test_a_mistake_in_the_request_of_a_later_turn_leaves_a_valid_conversation(
    tmp_path: Path,
) -> None:
    script = [reply(tool_calls=[tool_call("count", n=3)])]
    schedule: list[Fault] = [None, faults.authentication_error()]
    session = Session(tmp_path, script, tools=[count], schedule=schedule)
    session.run()
    assert isinstance(session.last, GaveUp)
    assert m.validate(session.agent.messages) == []
    assert session.agent.messages[-1]["role"] == "user"  # the tool result is kept


def test_ten_failures_in_a_row_make_ten_attempts_then_give_up(tmp_path: Path) -> None:
    session = Session(tmp_path, schedule=[faults.server_error()] * 12)
    session.run()
    assert len(session.model.requests) == 10
    assert len(session.clock.sleeps) == 9
    assert isinstance(session.last, GaveUp)
    assert "10 attempts" in str(session.last)
    assert [a.outcome for a in session.recovery.attempts] == ["server"] * 10


# -- fallback model ---------------------------------------------------------------------------


def test_the_third_consecutive_529_switches_to_the_fallback_model(tmp_path: Path) -> None:
    session = Session(
        tmp_path,
        policy=RecoveryPolicy(fallback_model=HAIKU),
        schedule=[faults.overloaded()] * 3,
    )
    session.run()
    assert [r.model for r in session.model.requests] == [SONNET, SONNET, SONNET, HAIKU]
    (fell,) = session.of(FellBack)
    assert (fell.from_model, fell.to_model, fell.overloaded) == (SONNET, HAIKU, 3)
    assert len(session.clock.sleeps) == 2  # the switch itself does not wait
    assert isinstance(session.last, TurnEnded)


def test_a_429_between_529s_resets_the_count(tmp_path: Path) -> None:
    schedule = [faults.overloaded()] * 2 + [faults.rate_limited(1)] + [faults.overloaded()] * 2
    session = Session(tmp_path, policy=RecoveryPolicy(fallback_model=HAIKU), schedule=schedule)
    session.run()
    assert session.of(FellBack) == []
    assert {r.model for r in session.model.requests} == {SONNET}
    assert isinstance(session.last, TurnEnded)


def test_without_a_fallback_model_529s_are_retried_on_the_same_model(tmp_path: Path) -> None:
    session = Session(tmp_path, schedule=[faults.overloaded()] * 5)
    session.run()
    assert session.of(FellBack) == []
    assert [r.model for r in session.model.requests] == [SONNET] * 6
    assert len(session.clock.sleeps) == 5
    assert isinstance(session.last, TurnEnded)


def test_the_meter_prices_each_call_at_the_model_that_served_it(tmp_path: Path) -> None:
    session = Session(
        tmp_path,
        [reply("before"), reply("after")],
        policy=RecoveryPolicy(fallback_model=HAIKU),
    )
    session.run("first")
    session.model.schedule(*[faults.overloaded()] * 3)
    session.run("second")
    calls = session.agent.meter.calls
    assert [c.model for c in calls] == [SONNET, HAIKU]
    assert calls[1].cost == cost_of(calls[1].usage, HAIKU)
    assert calls[1].cost != cost_of(calls[1].usage, SONNET)


def test_the_fallback_persists_for_later_calls(tmp_path: Path) -> None:
    script = [reply(tool_calls=[tool_call("count", n=2)]), reply("done"), reply("again")]
    session = Session(
        tmp_path,
        script,
        tools=[count],
        policy=RecoveryPolicy(fallback_model=HAIKU),
        schedule=[faults.overloaded()] * 3,
    )
    session.run()
    session.run("once more")
    assert [r.model for r in session.model.requests][3:] == [HAIKU] * 3
    assert {c.model for c in session.agent.meter.calls} == {HAIKU}


def test_after_the_fallback_the_attempts_count_again_from_one(tmp_path: Path) -> None:
    session = Session(
        tmp_path,
        policy=RecoveryPolicy(fallback_model=HAIKU, max_attempts=4),
        schedule=[faults.overloaded()] * 3 + [faults.server_error()] * 3,
    )
    session.run()
    assert isinstance(session.last, TurnEnded)
    assert [r.model for r in session.model.requests] == [SONNET] * 3 + [HAIKU] * 4


# -- max_tokens escalation ------------------------------------------------------------------

LONG = "x " * 20_000  # about 10K output tokens: over 8K, under 64K


def test_a_reply_cut_at_8k_is_discarded_and_the_same_request_sent_with_64k(
    tmp_path: Path,
) -> None:
    session = Session(tmp_path, [reply(LONG)])
    session.run()
    first, second = session.model.requests
    assert (first.max_tokens, second.max_tokens) == (8_000, 64_000)
    assert first.messages == second.messages and first.model == second.model
    (escalated,) = session.of(Escalated)
    assert (escalated.cut_at, escalated.to) == (8_000, 64_000)
    assistant = [msg for msg in session.agent.messages if msg["role"] == "assistant"]
    assert len(assistant) == 1 and m.text_of(assistant[0]) == LONG  # the cut one is gone
    billed = [c.usage.output_tokens for c in session.agent.meter.calls]
    assert len(billed) == 2 and billed[0] == 8_000  # the discarded reply is billed
    assert isinstance(session.last, TurnEnded) and session.last.stop_reason == "end_turn"


def test_escalation_happens_once_per_turn_and_again_in_the_next_turn(tmp_path: Path) -> None:
    script = [reply(LONG, tool_calls=[tool_call("count", n=2)]), reply(LONG)]
    session = Session(tmp_path, script, tools=[count])
    session.run()
    assert [r.max_tokens for r in session.model.requests] == [8_000, 64_000, 8_000, 64_000]
    assert len(session.of(Escalated)) == 2
    assert isinstance(session.last, TurnEnded)


def test_without_escalation_a_cut_reply_ends_the_turn(tmp_path: Path) -> None:
    session = Session(
        tmp_path, [reply(LONG)], policy=RecoveryPolicy(escalate_to=None, max_continuations=0)
    )
    session.run()
    assert [r.max_tokens for r in session.model.requests] == [8_000]
    assert isinstance(session.last, TurnEnded) and session.last.stop_reason == "max_tokens"


def test_a_tool_call_cut_at_8k_runs_once_whole_after_escalation(tmp_path: Path) -> None:
    calls: list[str] = []
    whole = "y " * 20_000
    script = [reply(tool_calls=[tool_call("record", text=whole)]), reply("done")]
    session = Session(tmp_path, script, tools=[recording_tool(calls)])
    session.run()
    assert calls == [whole]
    assert [r.max_tokens for r in session.model.requests][:2] == [8_000, 64_000]


class CutToolCallModel:
    """A model whose every reply is cut at max_tokens in the middle of a tool call, with
    the incomplete input the live API can send."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def create(self, **params: Any) -> Message:
        self.requests.append(params)
        n = len(self.requests)
        return Message(
            id=f"msg_{n:04d}",
            type="message",
            role="assistant",
            model=params["model"],
            content=[
                TextBlock(type="text", text="Writing the file now."),
                ToolUseBlock(type="tool_use", id=f"toolu_{n:04d}", name="record", input={}),
            ],
            stop_reason="max_tokens",
            stop_sequence=None,
            usage=Usage(input_tokens=10, output_tokens=params["max_tokens"]),
        )

    def count_tokens(self, **params: Any) -> int:
        return 10


def test_a_tool_call_cut_by_max_tokens_never_runs(tmp_path: Path) -> None:
    calls: list[str] = []
    model = CutToolCallModel()
    agent = Agent(
        model,
        tools=[recording_tool(calls)],
        workspace=tmp_path,
        clock=FakeClock(),
        plugins=[Recovery()],
        config=AgentConfig(model=SONNET),
    )
    events = list(agent.run("Write it."))
    assert calls == []
    assert not any(isinstance(e, ToolFinished) for e in events)
    assert m.validate(agent.messages) == []
    assert not any(m.tool_uses(msg) for msg in agent.messages)
    assert isinstance(events[-1], TurnEnded) and events[-1].stop_reason == "max_tokens"
    # escalated once, then three continuations
    assert [r["max_tokens"] for r in model.requests] == [8_000] + [64_000] * 4


# -- continuation ----------------------------------------------------------------------------

HUGE = "y " * 200_000  # about 100K output tokens: cut even at 64K


def test_a_reply_cut_at_64k_is_kept_and_continued_at_most_three_times(tmp_path: Path) -> None:
    session = Session(tmp_path, [reply(HUGE)] * 4 + [reply("never")], window=1_000_000)
    session.run()
    requests = session.model.requests
    assert [r.max_tokens for r in requests] == [8_000, 64_000, 64_000, 64_000, 64_000]
    for request in requests[2:]:
        assert m.text_of(request.last_message) == CONTINUATION_PROMPT
    assert [e.continuation for e in session.of(Continued)] == [1, 2, 3]
    (stopped,) = session.of(StoppedContinuing)
    assert "3 continuations" in stopped.reason
    assert isinstance(session.last, TurnEnded) and session.last.stop_reason == "max_tokens"
    kept = [msg for msg in session.agent.messages if msg["role"] == "assistant"]
    assert len(kept) == 4  # every cut reply after the escalation is kept
    assert session.model.remaining == 1


def test_a_continuation_that_finishes_ends_the_turn(tmp_path: Path) -> None:
    session = Session(tmp_path, [reply(HUGE), reply("the end.")], window=1_000_000)
    session.run()
    assert len(session.of(Continued)) == 1 and session.of(StoppedContinuing) == []
    assert isinstance(session.last, TurnEnded) and session.last.stop_reason == "end_turn"


def test_continuations_count_again_from_one_in_the_next_run(tmp_path: Path) -> None:
    script = [reply(HUGE), reply("done."), reply(HUGE), reply("done again.")]
    session = Session(tmp_path, script, window=1_000_000)
    session.run()
    session.run("more")
    assert [e.continuation for e in session.of(Continued)] == [1, 1]


def test_continuations_stop_early_when_they_add_little(tmp_path: Path) -> None:
    # Continuations get 400 output tokens each: under 500, so three in a row are enough.
    policy = RecoveryPolicy(escalate_to=400, max_continuations=10)
    session = Session(tmp_path, [reply("z " * 5_000)] * 12, policy=policy, max_tokens=100)
    session.run()
    assert len(session.of(Continued)) == 3
    (stopped,) = session.of(StoppedContinuing)
    assert "diminishing returns" in stopped.reason
    assert [r.max_tokens for r in session.model.requests] == [100, 400, 400, 400, 400]


def test_continuations_that_add_enough_go_on_to_the_limit(tmp_path: Path) -> None:
    policy = RecoveryPolicy(escalate_to=600, max_continuations=10)
    session = Session(tmp_path, [reply("z " * 5_000)] * 12, policy=policy, max_tokens=100)
    session.run()
    assert len(session.of(Continued)) == 10
    (stopped,) = session.of(StoppedContinuing)
    assert "10 continuations" in stopped.reason


# -- reactive compaction --------------------------------------------------------------------


def counting_session(tmp_path: Path, **kwargs: Any) -> Session:
    """Six turns of ~4.7K-token tool results on a 20K window: turn 6 is too long for real."""
    script = [reply(tool_calls=[tool_call("count", n=4_000)])] * 6 + [reply("done")]
    return Session(tmp_path, script, tools=[count], window=20_000, **kwargs)


def test_prompt_too_long_compacts_once_and_sends_the_request_again(tmp_path: Path) -> None:
    session = counting_session(tmp_path)
    session.run()
    (too_long,) = session.of(PromptTooLong)
    assert too_long.maximum == 20_000 and too_long.tokens > 20_000
    (compacted,) = session.of(Compacted)
    assert compacted.trigger == "reactive"
    assert isinstance(session.last, TurnEnded) and session.last.stop_reason == "end_turn"
    turns = [r for r in session.model.requests if not is_compaction_request(r)]
    refused = next(r for r in turns if r.input_tokens > 20_000)
    resent = turns[turns.index(refused) + 1]
    assert resent.input_tokens < 20_000
    assert m.text_of(resent.messages[0]).startswith("This session is being continued")


def test_a_too_long_compaction_request_drops_rounds_instead_of_compacting_itself(
    tmp_path: Path,
) -> None:
    session = counting_session(tmp_path)
    session.run()
    summaries = [r for r in session.model.requests if is_compaction_request(r)]
    assert len(summaries) == 2  # refused as too long, then sent with the oldest rounds dropped
    assert summaries[0].input_tokens > 20_000 >= summaries[1].input_tokens
    assert len(session.of(PromptTooLong)) == 1 and len(session.of(Compacted)) == 1


def test_a_side_request_that_is_too_long_raises_the_api_error_to_its_sender(
    tmp_path: Path,
) -> None:
    session = Session(tmp_path, window=1_000)
    request = ModelRequest(
        model=SONNET,
        max_tokens=100,
        messages=[m.user("word " * 2_000)],
        purpose="compaction",
    )
    with pytest.raises(anthropic.BadRequestError) as raised:
        session.agent.call(request)
    assert is_prompt_too_long(raised.value)
    assert len(session.model.requests) == 1  # nothing compacted, nothing sent again
    assert not any(isinstance(e, PromptTooLong | Compacted) for e in session.agent._drain())


def always_too_long_for_turns(request: Request) -> Fault:
    return None if is_compaction_request(request) else faults.prompt_too_long(250_000, 200_000)


def test_a_second_prompt_too_long_in_the_same_turn_gives_up(tmp_path: Path) -> None:
    session = Session(tmp_path, schedule=always_too_long_for_turns)
    session.run()
    assert len(session.of(PromptTooLong)) == 1 and len(session.of(Compacted)) == 1
    assert isinstance(session.last, GaveUp)
    assert session.last.kind == "prompt_too_long"
    assert "still too long after a reactive compaction" in session.last.reason
    turns = [r for r in session.model.requests if not is_compaction_request(r)]
    assert len(turns) == 2


def test_with_reactive_compaction_off_prompt_too_long_gives_up(tmp_path: Path) -> None:
    session = Session(
        tmp_path,
        policy=RecoveryPolicy(reactive_compact=False),
        schedule=always_too_long_for_turns,
    )
    session.run()
    assert session.of(Compacted) == [] and session.of(PromptTooLong) == []
    assert isinstance(session.last, GaveUp) and "reactive compaction is off" in session.last.reason
    assert len(session.model.requests) == 1


def test_a_failed_reactive_compaction_gives_up_with_its_reason(tmp_path: Path) -> None:
    def refuse_summaries(request: Request) -> Fault:
        if is_compaction_request(request):
            return faults.invalid_request("messages.0: something odd")
        return faults.prompt_too_long(250_000, 200_000)

    session = Session(tmp_path, schedule=refuse_summaries)
    session.run()
    assert isinstance(session.last, GaveUp)
    assert "reactive compaction failed" in session.last.reason
    assert m.validate(session.agent.messages) == []


# -- side requests ----------------------------------------------------------------------------


def conversation_to_compact(tmp_path: Path, schedule: FaultSchedule = ()) -> Session:
    session = Session(tmp_path, [reply("Hello!")], policy=RecoveryPolicy(max_attempts=3))
    session.run("Say hello.")
    if isinstance(schedule, list):
        session.model.schedule(*schedule)
    return session


def test_a_manual_compaction_is_retried_through_recovery(tmp_path: Path) -> None:
    session = conversation_to_compact(tmp_path, [faults.overloaded()])
    report = compact(session.agent)
    assert report.trigger == "manual"
    outcomes = [(a.purpose, a.outcome) for a in session.recovery.attempts[1:]]
    assert outcomes == [("compaction", "overloaded"), ("compaction", "ok")]
    assert len(session.clock.sleeps) == 1
    retrying = [e for e in session.agent._drain() if isinstance(e, Retrying)]
    assert [e.purpose for e in retrying] == ["compaction"]
    assert "(compaction request)" in str(retrying[0])


def test_a_manual_compaction_whose_retries_run_out_raises_compaction_error(
    tmp_path: Path,
) -> None:
    session = conversation_to_compact(tmp_path, [faults.overloaded()] * 3)
    before = list(session.agent.messages)
    with pytest.raises(CompactionError) as raised:
        compact(session.agent)
    assert not isinstance(raised.value, StopRun)
    assert isinstance(raised.value.__cause__, anthropic.OverloadedError)
    assert session.agent.messages == before
    assert len(session.model.requests) == 1 + 3


# -- events -----------------------------------------------------------------------------------

EVENTS: list[Event] = [
    Retrying(2, 10, 1.23, "backoff", "529 overloaded_error", SONNET, "turn", START),
    Retrying(1, 10, 7.0, "retry-after", "429 rate_limit_error", SONNET, "compaction", START),
    FellBack(SONNET, HAIKU, 3),
    Escalated(8_000, 64_000),
    Continued(1, 3, 64_000),
    StoppedContinuing("3 continuations used"),
    PromptTooLong(250_000, 200_000),
    GaveUp("authentication", "401 authentication_error", "not retryable", "Set the key."),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_every_recovery_event_prints_on_one_line(event: Event) -> None:
    text = str(event)
    assert text and "\n" not in text
    assert not text.startswith(type(event).__name__ + "(")  # a sentence, not a repr


def test_retrying_carries_attempt_delay_cause_and_source(tmp_path: Path) -> None:
    session = Session(tmp_path, schedule=[faults.overloaded(), faults.rate_limited(7)])
    session.run()
    first, second = session.of(Retrying)
    assert (first.attempt, first.source, first.cause) == (1, "backoff", "529 overloaded_error")
    assert 0.5 <= first.delay <= 0.625
    assert (second.attempt, second.source, second.delay) == (2, "retry-after", 7.0)
    assert second.cause == "429 rate_limit_error"
    assert second.at == pytest.approx(START + first.delay)
    assert "attempt 2 of 10" in str(second) and "7.00 s" in str(second)


def test_the_attempts_timeline_records_each_attempt_and_its_wait(tmp_path: Path) -> None:
    session = Session(tmp_path, schedule=[faults.rate_limited(7)])
    session.run()
    assert session.recovery.attempts == [
        Attempt(START, SONNET, "turn", "rate_limited", 7.0),
        Attempt(START + 7.0, SONNET, "turn", "ok"),
    ]


def test_gave_up_says_the_cause_the_reason_and_the_fix(tmp_path: Path) -> None:
    session = Session(tmp_path, schedule=[faults.authentication_error()])
    session.run()
    text = str(session.last)
    assert "401" in text and "not retryable" in text and "ANTHROPIC_API_KEY" in text


# -- classify and retry_after ----------------------------------------------------------------

CLASSIFIED: list[tuple[int, str, bool]] = [
    (400, "bad_request", False),
    (401, "authentication", False),
    (403, "permission", False),
    (404, "not_found", False),
    (408, "timeout", True),
    (409, "conflict", True),
    (413, "too_large", False),
    (422, "unprocessable", False),
    (429, "rate_limited", True),
    (500, "server", True),
    (502, "server", True),
    (503, "server", True),
    (504, "server", True),
    (529, "overloaded", True),
    (418, "unknown", False),
]


@pytest.mark.parametrize(("status", "kind", "retryable"), CLASSIFIED)
def test_classify_reads_the_status_code(status: int, kind: str, retryable: bool) -> None:
    failure = classify(faults.status_error(status))
    assert (failure.kind, failure.retryable) == (kind, retryable)
    assert failure.cause.startswith(str(status))
    assert failure.advice


def test_classify_reads_network_failures_and_prompt_too_long() -> None:
    assert classify(faults.connection_error()).kind == "connection"
    assert classify(faults.timeout()).kind == "timeout"  # a subclass of the connection error
    too_long = classify(faults.prompt_too_long(250_000, 200_000))
    assert (too_long.kind, too_long.retryable) == ("prompt_too_long", False)
    assert classify(faults.invalid_request("prompt is long, sorry")).kind == "bad_request"


@pytest.mark.parametrize("status", [400, 401, 429, 500, 529])
def test_x_should_retry_overrides_the_status_code(status: int) -> None:
    yes = classify(faults.status_error(status, headers={"x-should-retry": "true"}))
    no = classify(faults.status_error(status, headers={"x-should-retry": "false"}))
    assert yes.retryable and not no.retryable


def test_x_should_retry_never_makes_prompt_too_long_retryable() -> None:
    error = faults.status_error(
        400, "prompt is too long: 5 tokens > 4 maximum", headers={"x-should-retry": "true"}
    )
    assert classify(error).kind == "prompt_too_long" and not classify(error).retryable


RETRY_AFTER: list[tuple[dict[str, str], float | None]] = [
    ({}, None),
    ({"retry-after": "7"}, 7.0),
    ({"retry-after": "2.5"}, 2.5),
    ({"retry-after-ms": "1500"}, 1.5),
    ({"retry-after-ms": "1500", "retry-after": "30"}, 1.5),
    ({"retry-after": "Thu, 01 Jan 2026 00:01:00 GMT"}, 60.0),
    ({"retry-after": "Wed, 31 Dec 2025 23:59:00 GMT"}, 0.0),  # in the past: go now
    ({"retry-after": "-5"}, 0.0),
    ({"retry-after": "soon"}, None),
    ({"retry-after": ""}, None),
    ({"retry-after": "nan"}, None),
    ({"retry-after": "inf"}, None),
    ({"retry-after": "1e400"}, None),
    ({"retry-after": "Mon, 99 Foo 2026 00:00:00 GMT"}, None),
    ({"retry-after": "Thu, 01 Jan 99999 00:00:00 GMT"}, None),  # a year no clock can hold
    ({"retry-after-ms": "abc", "retry-after": "3"}, 3.0),
]


@pytest.mark.parametrize(("headers", "seconds"), RETRY_AFTER, ids=lambda v: repr(v)[:40])
def test_retry_after_reads_every_header_form_and_ignores_garbage(
    headers: dict[str, str], seconds: float | None
) -> None:
    error = faults.status_error(429, headers=headers)
    assert retry_after(error, START) == seconds


def test_retry_after_is_none_for_a_failure_without_a_response() -> None:
    assert retry_after(faults.connection_error(), START) is None


def test_a_retry_after_too_big_to_be_a_date_never_crashes_a_run(tmp_path: Path) -> None:
    session = Session(tmp_path, schedule=[faults.rate_limited("Thu, 01 Jan 99999 00:00:00 GMT")])
    session.run()
    assert isinstance(session.last, TurnEnded)


# -- the policy -----------------------------------------------------------------------------


def test_the_default_policy_is_claude_codes() -> None:
    policy = RecoveryPolicy()
    assert (policy.max_attempts, policy.base_delay, policy.max_delay) == (10, 0.5, 32.0)
    assert (policy.jitter, policy.jitter_mode, policy.fallback_after) == (0.25, "add", 3)
    assert (policy.escalate_to, policy.max_continuations) == (64_000, 3)
    assert (policy.diminishing_after, policy.diminishing_tokens) == (3, 500)


def test_a_policy_refuses_unknown_settings() -> None:
    with pytest.raises(ValueError):
        RecoveryPolicy(max_attempt=3)  # type: ignore[call-arg]
