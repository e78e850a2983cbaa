"""What error recovery buys: one 30-turn coding session under one fault schedule, five ways.

    uv run python tests/benchmarks/recovery_benchmark.py

The session is the course's standard one (``harness.notebook.sessions``: reads, searches,
edits and shell commands on a small project), with 20 s of model and tool time before each
request, on a fake clock. The same faults hit it in every setting:

* turn 3: the connection drops once;
* turn 6: a 429 with Retry-After 10-30 s, and the API keeps to it: every request sent before
  that time is refused again, with the seconds still to go;
* turn 12: the reply is a 12K-token answer, cut at the default 8K output;
* turn 16: the API is overloaded for 10-60 s: every request to the main model in that time
  gets a 529 (the fallback model has room);
* turn 20: the request is refused as too long (prompt-too-long, once);
* turn 24: the connection drops twice in a row;
* turn 27: a 503, then a timeout.

Each of 20 seeds moves every fault by 0-1 turns and draws the two durations; the retry
jitter differs by seed too. The settings:

* no recovery: the first error ends the run (an exception, caught here);
* the SDK's own retries (``RecoveryPolicy.sdk_default()``: 3 attempts, Retry-After honoured,
  nothing else);
* a naive loop (``RecoveryPolicy.naive()``: 5 attempts 1 s apart, Retry-After ignored);
* this policy (``Recovery()``), without and with a fallback model.

For each it prints the runs that finished all 30 turns, and per run: model calls (refused
ones included), seconds waited on the fake clock, tokens and dollars wasted (billed for
replies thrown away, and everything a run that died had billed), and turns finished.
Figures only: nothing here is timed for real.
"""

from __future__ import annotations

import random
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import anthropic
from anthropic.types import Message

from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.summary import is_compaction_request
from harness.events import AssistantReplied, Event, TurnEnded
from harness.loop import AgentConfig, BaseAgent, ModelRequest, Plugin
from harness.model import DEFAULT_MODEL, ScriptedModel, Step, faults, reply
from harness.model.scripted import Reply, Request
from harness.model.scripted_summary import scripted_summary
from harness.notebook.sessions import ThinkingTime, coding_script, make_project
from harness.pricing import prompt_tokens
from harness.prompt import PromptCaching, SystemPrompt, default_sections
from harness.recovery import GaveUp, Recovery, RecoveryPolicy
from harness.tools import builtin_tools

TURNS = 30
SEEDS = 20
MODEL = DEFAULT_MODEL  # the course's model
FALLBACK = "claude-haiku-4-5"
PROMPT = "Check that every module rounds amounts to cents the same way."
THINKING = 20.0  # seconds of model and tool time before each request


# -- the fault schedule --------------------------------------------------------------------------


class FaultSchedule:
    """The API's side of the benchmark: a function of each request, as ``ScriptedModel`` takes.

    Two kinds of faults. Windows of time, as a real API has them: rate-limited until T (a
    request that comes back early, ignoring Retry-After, is refused again with the time left),
    overloaded until T (on the main model only). And one-off faults on given turns, raised on
    that turn's first requests. A turn is the script step a request would use, so retries and
    a re-sent cut request count as the same turn; summary requests only meet the windows.
    """

    def __init__(self, seed: int, clock: FakeClock) -> None:
        rng = random.Random(seed)
        self.clock = clock
        self.model: ScriptedModel | None = None
        at = {name: turn + rng.randint(0, 1) for name, turn in BASE_TURNS.items()}
        self.cut_turn = at["cut"]
        self.rate_limit = (at["rate_limit"], rng.choice((10, 15, 20, 25, 30)))
        self.overload = (at["overload"], rng.uniform(10, 60))
        self.one_off: dict[int, list[anthropic.APIError]] = {
            at["drop"]: [faults.connection_error()],
            at["too_long"]: [faults.prompt_too_long(203_411, 200_000)],
            at["drops"]: [faults.connection_error(), faults.connection_error()],
            at["flaky"]: [faults.status_error(503), faults.timeout()],
        }
        self.limited_until = self.overloaded_until = 0.0

    def turn(self) -> int:
        assert self.model is not None
        return len(self.model.script) - self.model.remaining + 1

    def __call__(self, request: Request) -> anthropic.APIError | None:
        now, turn = self.clock.now(), self.turn()
        side = is_compaction_request(request)
        if not side and turn == self.rate_limit[0] and not self.limited_until:
            self.limited_until = now + self.rate_limit[1]
        if not side and turn == self.overload[0] and not self.overloaded_until:
            self.overloaded_until = now + self.overload[1]
        if now < self.limited_until:
            return faults.rate_limited(max(1, round(self.limited_until - now)))
        if now < self.overloaded_until and request.model == MODEL:
            return faults.overloaded()
        pending = self.one_off.get(turn, []) if not side else []
        return pending.pop(0) if pending else None


BASE_TURNS = {
    "drop": 3,
    "rate_limit": 6,
    "cut": 12,
    "overload": 16,
    "too_long": 20,
    "drops": 24,
    "flaky": 27,
}


def session_script(cut_turn: int) -> list[Step]:
    """The standard session, with turn ``cut_turn``'s reply a 12K-token answer before its call."""
    script = coding_script(TURNS)
    step = script[cut_turn - 1]
    assert isinstance(step, Reply)
    long_answer = "Here is what I found so far. " + "The rounding agrees. " * 2_400
    script[cut_turn - 1] = reply(long_answer, tool_calls=step.tool_calls)
    return script


# -- one run -------------------------------------------------------------------------------------


class Replies(Plugin):
    """The innermost layer: every reply the model sent, with the purpose of its request."""

    def __init__(self) -> None:
        self.replies: list[tuple[str, Message]] = []

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        answer = call(request)
        self.replies.append((request.purpose, answer))
        return answer


@dataclass
class Outcome:
    completed: bool
    calls: int
    waited: float
    wasted_tokens: int
    wasted_dollars: float
    turns: int
    ending: str
    extra: dict[str, int] = field(default_factory=dict)


def run(seed: int, policy: RecoveryPolicy | None) -> Outcome:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root)
        clock = FakeClock()
        schedule = FaultSchedule(seed, clock)
        model = ScriptedModel(session_script(schedule.cut_turn), clock=clock, faults=schedule)
        schedule.model = model
        model.answer_when(is_compaction_request, scripted_summary)
        replies = Replies()
        plugins: list[Plugin] = []
        if policy is not None:  # first: the outermost layer, so a retry goes through the rest
            plugins.append(Recovery(policy.model_copy(update={"seed": seed})))
        plugins += [ThinkingTime(THINKING), PromptCaching(), replies]
        tools = builtin_tools()
        agent = Agent(
            model,
            tools=tools,
            system=SystemPrompt(tuple(default_sections(t.name for t in tools))).render(),
            workspace=root,
            clock=clock,
            plugins=plugins,
            config=AgentConfig(model=MODEL, max_tokens=8_000, max_turns=TURNS + 10),
            approver=lambda request: True,
        )
        events: list[Event] = []
        try:
            events.extend(
                agent.run("Check that every module rounds amounts to cents the same way.")
            )
            last = events[-1]
            ending = str(last) if isinstance(last, GaveUp) else type(last).__name__
            if isinstance(last, TurnEnded):
                ending = f"TurnEnded ({last.stop_reason})"
        except anthropic.APIError as error:
            ending = f"raised {type(error).__name__}"
        kept = {e.message.id for e in events if isinstance(e, AssistantReplied)}
        finished = sum(
            1
            for e in events
            if isinstance(e, AssistantReplied) and e.message.stop_reason in ("tool_use", "end_turn")
        )
        completed = ending == "TurnEnded (end_turn)" and finished == TURNS
        meter = agent.meter.calls  # in call order, as replies.replies (metered innermost)
        if completed:  # only the replies it threw away (a cut reply it asked for again)
            thrown = [
                i
                for i, (purpose, answer) in enumerate(replies.replies)
                if purpose == "turn" and answer.id not in kept
            ]
        else:  # a run that died wasted everything it was billed for
            thrown = list(range(len(meter)))
        tokens = sum(prompt_tokens(meter[i].usage) + meter[i].usage.output_tokens for i in thrown)
        costs = [meter[i].cost for i in thrown]
        dollars = sum(cost.total for cost in costs if cost is not None)
        return Outcome(
            completed,
            len(model.requests),
            sum(clock.sleeps),
            tokens,
            dollars,
            finished,
            ending,
        )


SETTINGS: list[tuple[str, RecoveryPolicy | None]] = [
    ("no recovery", None),
    ("SDK default (2 retries)", RecoveryPolicy.sdk_default()),
    ("naive (5 tries, 1 s)", RecoveryPolicy.naive()),
    ("this policy, no fallback", RecoveryPolicy()),
    ("this policy + fallback", RecoveryPolicy(fallback_model=FALLBACK)),
]


def main() -> None:
    print(
        f"{TURNS}-turn coding session on {MODEL}, {SEEDS} seeds of one fault schedule "
        f"(fallback: {FALLBACK})\n"
    )
    print("per run: mean over the seeds; waited is fake-clock time spent in retry waits\n")
    header = f"{'setting':<25}{'completed':>10}{'calls':>8}{'waited':>10}"
    print(header + f"{'tokens wasted':>15}{'$ wasted':>10}{'turns':>8}  how runs ended")
    for label, policy in SETTINGS:
        outcomes = [run(seed, policy) for seed in range(SEEDS)]
        n = len(outcomes)
        endings: dict[str, int] = {}
        for o in outcomes:
            short = o.ending.split(".")[0][:60]
            endings[short] = endings.get(short, 0) + 1
        how = "; ".join(f"{k} ×{v}" for k, v in sorted(endings.items(), key=lambda kv: -kv[1]))
        print(
            f"{label:<25}{sum(o.completed for o in outcomes):>7}/{n:<2}"
            f"{sum(o.calls for o in outcomes) / n:>8.1f}"
            f"{sum(o.waited for o in outcomes) / n:>9.1f}s"
            f"{sum(o.wasted_tokens for o in outcomes) / n:>15,.0f}"
            f"{'$' + format(sum(o.wasted_dollars for o in outcomes) / n, '.3f'):>10}"
            f"{sum(o.turns for o in outcomes) / n:>8.1f}  {how}"
        )


if __name__ == "__main__":
    main()
