"""What the command line reports: how a run ended, what fills the context, what it cost.

Plain data, no terminal: the command line prints it, chapter 11 plots it, tests assert on it.

* :func:`ending` reads a run's events: the final text, how it ended and the exit code that
  says so (:class:`Exit`).
* :func:`context_parts` splits what the next request would send into its parts (``/context``).
* :func:`cost_rows` is ``/cost``: calls, the four kinds of tokens and dollars, per model.
* :func:`event_record` and :func:`result_record` are ``--output-format stream-json`` and
  ``json``: one JSON object per event, and the run's result in Claude Code's shape.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness import messages as m
from harness import tokens
from harness.events import (
    AssistantReplied,
    AwaitingApproval,
    Event,
    MaxTurnsReached,
    PromptRefused,
    TurnEnded,
)
from harness.loop import BaseAgent
from harness.pricing import CostMeter
from harness.recovery import GaveUp
from harness.tokens import ContextBudget


class Exit(enum.IntEnum):
    """The command line's exit codes: each says how the run (or the program) ended."""

    DONE = 0
    """The model finished its answer (or the interactive session was left with /exit)."""
    FAILED = 1
    """A model call could not be made to work (recovery gave up), or the prompt was refused
    (or the program met an error it did not expect: a bug, said in one line)."""
    USAGE = 2
    """Bad flags, nothing to resume (or a session that is not a transcript), a standard input
    that is closed or unreadable where one is needed, or a sessions folder transcripts cannot
    be written to: said in one line, before any model call."""
    MAX_TURNS = 3
    """The run used up ``--max-turns`` before the model finished."""
    AWAITING_APPROVAL = 4
    """A call waits for a person's decision (chapter 09): resume it later."""
    INTERRUPTED = 130
    """Stopped with Ctrl-C (128 + SIGINT, as shells report it)."""


@dataclass(frozen=True)
class Ending:
    """How one run ended."""

    exit: Exit
    subtype: str
    """Claude Code's word for it: ``success``, ``error_max_turns``, ``error_during_execution``."""
    reason: str
    text: str
    """The model's final words (the last reply's text)."""
    turns: int


def ending(events: Sequence[Event], *, interrupted: bool = False) -> Ending:
    """Read how a run ended from its events (the last one says it)."""
    replies = [e for e in events if isinstance(e, AssistantReplied)]
    text = "\n".join(
        b.text for b in (replies[-1].message.content if replies else []) if b.type == "text"
    ).strip()
    turns = len(replies)
    last = events[-1] if events else None
    if interrupted:
        return Ending(Exit.INTERRUPTED, "error_during_execution", "interrupted", text, turns)
    if isinstance(last, TurnEnded):
        return Ending(Exit.DONE, "success", str(last.stop_reason), text, turns)
    if isinstance(last, MaxTurnsReached):
        return Ending(Exit.MAX_TURNS, "error_max_turns", str(last), text, turns)
    if isinstance(last, AwaitingApproval):
        return Ending(Exit.AWAITING_APPROVAL, "awaiting_approval", str(last), text, turns)
    if isinstance(last, (GaveUp, PromptRefused)):
        return Ending(Exit.FAILED, "error_during_execution", str(last), text, turns)
    reason = str(last) if last is not None else "the run yielded nothing"
    return Ending(Exit.FAILED, "error_during_execution", reason, text, turns)


# -- /context ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    name: str
    tokens: int


def context_parts(agent: BaseAgent, budget: ContextBudget | None = None) -> list[Part]:
    """What the next request would hold, by part, in tokens (by the harness's estimate), and
    the room left: before the auto-compact threshold, and the buffer kept above it."""
    request = agent.request()
    system = tokens.estimate_system(request.system)
    tools = tokens.estimate_tools(request.tools)
    kinds = {"your messages": 0, "model's replies": 0, "tool calls": 0, "tool results": 0}
    for message in request.messages:
        for block in m.blocks(message):
            size = tokens.estimate_block(block)
            if block.get("type") == "tool_result":
                kinds["tool results"] += size
            elif block.get("type") == "tool_use":
                kinds["tool calls"] += size
            elif message["role"] == "user":
                kinds["your messages"] += size
            else:
                kinds["model's replies"] += size
    parts = [Part("system prompt", system), Part("tool definitions", tools)]
    parts += [Part(name, size) for name, size in kinds.items()]
    used = sum(p.tokens for p in parts)
    budget = budget or ContextBudget(window=agent.context_window)
    free = max(0, budget.auto_compact_threshold - used)
    parts.append(Part("free before auto-compact", free))
    parts.append(
        Part(
            "kept free (buffer and reply)",
            max(0, budget.window - max(used, budget.auto_compact_threshold)),
        )
    )
    return parts


# -- /cost -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CostRow:
    model: str
    calls: int
    input: int
    cache_write: int
    cache_read: int
    output: int
    usd: float | None
    """``None`` when the price table does not know the model."""


def cost_rows(meter: CostMeter) -> list[CostRow]:
    """Usage and cost per model, in the order the models were first used."""
    rows: dict[str, CostRow] = {}
    for call in meter.calls:
        u, was = call.usage, rows.get(call.model)
        usd = None if call.cost is None else call.cost.total
        if was is not None:
            usd = None if usd is None or was.usd is None else was.usd + usd
        rows[call.model] = CostRow(
            call.model,
            (was.calls if was else 0) + 1,
            (was.input if was else 0) + u.input_tokens,
            (was.cache_write if was else 0) + (u.cache_creation_input_tokens or 0),
            (was.cache_read if was else 0) + (u.cache_read_input_tokens or 0),
            (was.output if was else 0) + u.output_tokens,
            usd,
        )
    return list(rows.values())


# -- JSON output -------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A JSON-ready copy of an event field (SDK objects as their API JSON)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def event_record(event: Event, session_id: str) -> dict[str, Any]:
    """One line of ``stream-json``: a reply as Claude Code's ``assistant`` message, any other
    event under its class name, with its fields and its one-line text."""
    if isinstance(event, AssistantReplied):
        return {
            "type": "assistant",
            "message": _plain(event.message),
            "session_id": session_id,
        }
    fields = _plain(event) if dataclasses.is_dataclass(event) else {}
    return {
        "type": "event",
        "event": type(event).__name__,
        "text": str(event),
        **fields,
        "session_id": session_id,
    }


def result_record(
    end: Ending, meter: CostMeter, session_id: str, duration_ms: int
) -> dict[str, Any]:
    """The run's result, as Claude Code's ``--output-format json`` gives it."""
    calls = meter.calls
    return {
        "type": "result",
        "subtype": end.subtype,
        "is_error": end.exit != Exit.DONE,
        "exit_code": int(end.exit),
        "result": end.text,
        "reason": end.reason,
        "session_id": session_id,
        "num_turns": end.turns,
        "duration_ms": duration_ms,
        "total_cost_usd": round(meter.total.total, 6),
        "usage": {
            "input_tokens": sum(c.usage.input_tokens for c in calls),
            "cache_creation_input_tokens": sum(
                c.usage.cache_creation_input_tokens or 0 for c in calls
            ),
            "cache_read_input_tokens": sum(c.usage.cache_read_input_tokens or 0 for c in calls),
            "output_tokens": sum(c.usage.output_tokens for c in calls),
        },
    }


def json_line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))
