"""The result capsule: what a child agent hands back, and how its run is read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from anthropic.types import Message
from pydantic import BaseModel, ConfigDict, Field

from harness import tokens
from harness.events import Event, MaxTurnsReached, ToolFinished, ToolStarted, TurnEnded
from harness.loop import BaseAgent, ModelRequest, Plugin, StopRun
from harness.pricing import CostMeter
from harness.tools.base import ToolRegistry
from harness.tools.dispatch import ToolRunner
from harness.tools.permissions import SUBJECT_FIELDS

DEFAULT_SUMMARY_TOKENS = 1_500  # our choice: a report, not a transcript (about 6,000 characters)


Status = Literal["complete", "partial", "failed"]


# -- the capsule ---------------------------------------------------------------------------


class ResultCapsule(BaseModel):
    """What a child agent hands back: all the parent needs, and a pointer to the rest."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent_id: str
    """The child's id (its transcript is ``agent-<id>.jsonl``; resume it by this id)."""
    task: str
    """The short description the parent gave."""
    kind: Literal["subagent", "fork"]
    status: Status
    reason: str
    """Why it stopped, in words (``finished``, ``its turn limit (6) was reached``, ...)."""
    summary: str
    """Its report, cut to the summary cap."""
    summary_tokens: int
    """Tokens of the whole report, before the cap."""
    cut: bool = False
    """Whether the report was cut (the whole of it is in the transcript)."""
    changed: list[str] = Field(default_factory=list)
    """Each call of a tool that changes things and succeeded, as ``tool subject``."""
    turns: int = 0
    """Model calls it made (a wrap-up call included)."""
    tool_calls: int = 0
    input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """``None`` if a model it used has no price in the table."""
    seconds: float = 0.0
    transcript: str | None = None
    """The sidechain file's path, or ``None`` if the parent keeps no transcript."""

    @property
    def tokens(self) -> int:
        """Every token it processed: prompts (cached or not) and output."""
        return (
            self.input_tokens
            + self.cache_write_tokens
            + self.cache_read_tokens
            + self.output_tokens
        )

    @property
    def cache_read_share(self) -> float:
        """Share of its prompt tokens read from the cache."""
        prompt = self.input_tokens + self.cache_write_tokens + self.cache_read_tokens
        return self.cache_read_tokens / prompt if prompt else 0.0

    def render(self) -> str:
        """The capsule as the parent's model reads it (the tool result)."""
        head = f"{self.kind.capitalize()} {self.agent_id} ({self.task}): {self.status}"
        if self.status != "complete":
            head += f", {self.reason}"
        lines = [head + ".", "", self.summary or "(no report)"]
        if self.changed:
            lines += ["", "Changed: " + "; ".join(self.changed)]
        cost = f", ${self.cost_usd:.4f}" if self.cost_usd is not None else ""
        where = f"; transcript agent-{self.agent_id}.jsonl" if self.transcript else ""
        lines += [
            "",
            f"[{self.turns} model calls, {self.tool_calls} tool calls, {self.tokens:,} tokens"
            f"{cost}{where}]",
        ]
        return "\n".join(lines)


# -- the token budget ----------------------------------------------------------------------


@dataclass(frozen=True)
class BudgetSpent(Event):
    """A child's token budget ran out: before a request that would pass it
    (``next_request``: its estimate), or in a reply cut to fit it (``next_request`` 0)."""

    spent: int
    budget: int
    next_request: int

    def __str__(self) -> str:
        why = (
            f"the next request (~{self.next_request:,}) would pass it"
            if self.next_request
            else "the last reply was cut to fit it"
        )
        return f"■ token budget: {self.spent:,} of {self.budget:,} spent; {why}"


def tokens_spent(meter: CostMeter) -> int:
    """Every token of every call on ``meter``: prompts (cached or not) and output."""
    return sum(c.prompt_tokens + c.usage.output_tokens for c in meter.calls)


class TokenBudget(Plugin):
    """Ends the run, at ``call_model``, before a request that would pass ``budget`` tokens.

    Counted as the capsule counts them: every prompt token (cache reads too) and every
    output token. The reply's ``max_tokens`` is lowered to what the budget has left after
    the prompt, so the budget is never passed (by the harness's own token estimate, which
    is what the scripted model bills; the live API's count differs a little).
    """

    def __init__(self, budget: int) -> None:
        if budget < 1:
            raise ValueError(f"a token budget must be positive, not {budget}")
        self.budget = budget

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        spent = tokens_spent(agent.meter)
        need = tokens.estimate_request(request.messages, system=request.system, tools=request.tools)
        left = self.budget - spent - need
        if left < 1:
            raise StopRun(BudgetSpent(spent, self.budget, need))
        answer = call(replace(request, max_tokens=min(request.max_tokens, left)))
        if left < request.max_tokens and answer.stop_reason == "max_tokens":
            agent.emit(BudgetSpent(tokens_spent(agent.meter), self.budget, 0))
        return answer


@dataclass(frozen=True)
class SubagentFinished(Event):
    """A child agent handed back its capsule (reported after the parent's tool results)."""

    capsule: ResultCapsule

    def __str__(self) -> str:
        c = self.capsule
        cost = f", ${c.cost_usd:.4f}" if c.cost_usd is not None else ""
        return (
            f"⑂ {c.kind} {c.agent_id} ({c.task}): {c.status}; {c.turns} calls, "
            f"{c.tool_calls} tools, {c.tokens:,} tokens ({c.cache_read_share:.0%} from cache)"
            f"{cost}"
        )


# -- reading a child's run -----------------------------------------------------------------

_CUT = ("max_tokens", "model_context_window_exceeded", "pause_turn")


def outcome(events: Sequence[Event]) -> tuple[Status, str]:
    """Complete, partial or failed, and why, from how a child's run ended: its last event
    (and, for a reply cut at ``max_tokens``, whether the token budget cut it)."""
    last = events[-1] if events else None
    if isinstance(last, TurnEnded):
        budget = next((e for e in events if isinstance(e, BudgetSpent)), None)
        if last.stop_reason == "max_tokens" and budget is not None:
            return "partial", f"its token budget ({budget.budget:,}) ran out in its last reply"
        if last.stop_reason in _CUT:
            return "partial", f"its last reply was cut ({last.stop_reason})"
        if last.stop_reason == "refusal":
            return "failed", "the model refused"
        return "complete", "finished"
    if isinstance(last, MaxTurnsReached):
        return "partial", f"its turn limit ({last.max_turns}) was reached"
    if isinstance(last, BudgetSpent):
        return "partial", f"its token budget ({last.budget:,}) would have been passed"
    if last is None:
        return "failed", "it did not run"
    return "failed", f"it stopped: {last}"


def changes(events: Sequence[Event], child: BaseAgent) -> list[str]:
    """Each successful call of a tool that is not read-only, as ``tool subject``."""
    runner = child.tools
    registry = runner.registry if isinstance(runner, ToolRunner) else ToolRegistry()
    started = {e.tool_use_id: e for e in events if isinstance(e, ToolStarted)}
    out: list[str] = []
    for event in events:
        if not isinstance(event, ToolFinished) or event.is_error:
            continue
        tool = registry.get(event.name)
        if tool is None or tool.read_only:
            continue
        call = started.get(event.tool_use_id)
        key = SUBJECT_FIELDS.get(event.name)
        subject = str(call.input.get(key, "")) if call is not None and key else ""
        out.append(f"{event.name} {subject}".strip())
    return out


def cap_summary(text: str, limit: int, kept_in: str | None) -> tuple[str, bool]:
    """``text`` within ``limit`` tokens: its head, and a note of what was cut and where the
    whole of it is kept (``kept_in``, a transcript's name; None: nowhere). Returns the text
    and whether it was cut."""
    size = tokens.estimate_text(text)
    if size <= limit:
        return text, False
    where = f"The whole report is in {kept_in}." if kept_in else "The rest was not kept."
    note = f"\n[… report cut: {size:,} tokens, capped at {limit:,}. {where}]"
    room = limit - tokens.estimate_text(note)
    if room < 1:  # a cap smaller than the note: the head alone
        return tokens.truncate_text(text, limit), True
    return tokens.truncate_text(text, room).rstrip() + note, True
