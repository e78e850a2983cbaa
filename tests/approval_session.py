"""The paused session that ``tests/test_approval_race.py``, ``tests/test_approval_crash.py``
and ``tests/benchmarks/approval_benchmark.py`` resume.

A scripted model asks, in one reply, to ``look`` at the balance, to ``transfer`` 100 to bob
and to ``look`` again. ``look`` is read-only and runs at once; ``transfer`` needs a
person's approval, so the :class:`~harness.approvals.ApprovalGate` writes it to the store
and the run stops (the second ``look`` waits behind it). :func:`pause` runs that far and
returns where everything is: the workspace, the session, the store's file and the approval
id. A later resumer (:func:`resumer`) is a fresh agent in the same workspace, with its own
store object, its own scripted model (a distinct ``id_prefix``) whose one reply is
:data:`FINAL`.

Both tools append one line to a ledger file opened with ``O_APPEND`` (``transfer`` to
:data:`LEDGER`, ``look`` to :data:`LOOKS`), so the files say how often each really ran;
``transfer`` sleeps a little first (``nap``, real time) so that a race has a real window
while it runs. ``after_write`` is called right after its ledger line is written (the crash
test stops a child there).

The processes that race or crash are forked from the test process (``fork`` start method):
the harness and ``anthropic`` are imported already, so a child costs milliseconds.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from harness import messages as m
from harness.agent import Agent
from harness.approvals import (
    ApprovalConflict,
    ApprovalGate,
    ApprovalResume,
    ApprovalStore,
    continue_run,
    resume,
)
from harness.clock import Clock, FakeClock
from harness.events import AwaitingApproval, Event
from harness.model import ScriptedModel, reply, tool_call
from harness.resume import Sessions
from harness.tools import ToolContext, tool
from harness.transcript import load

PROMPT = "Look at the balance, pay bob 100, then look again."
FINAL = "Paid bob 100."
SENT = "sent 100 to bob"
LEDGER = "ledger.txt"
LOOKS = "looks.txt"
STORE = "approvals.db"
NAP = 0.02
"""Seconds ``transfer`` takes (really sleeps): the window a racing resumer can fall in."""

Outcome = Literal["applied", "recorded", "conflict"]


class Pay(BaseModel):
    to: str
    amount: int


class Look(BaseModel):
    what: str


def append_line(path: Path, line: str) -> None:
    """One ``write`` on an ``O_APPEND`` descriptor: lines from many processes never mix."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def tools(
    workspace: Path, *, nap: float = NAP, after_write: Callable[[], None] | None = None
) -> list[Any]:
    @tool(Pay)
    def transfer(args: Pay, context: ToolContext) -> str:
        """Send money (one line in the ledger)."""
        time.sleep(nap)
        append_line(workspace / LEDGER, f"{context.tool_use_id} {args.to} {args.amount}")
        if after_write is not None:
            after_write()
        return f"sent {args.amount} to {args.to}"

    @tool(Look, read_only=True)
    def look(args: Look, context: ToolContext) -> str:
        """Look at something (one line in the looks file)."""
        append_line(workspace / LOOKS, f"{context.tool_use_id} {args.what}")
        return f"looked at {args.what}"

    return [transfer, look]


@dataclass(frozen=True)
class Paused:
    workspace: Path
    session_id: str
    approval_id: str
    event: AwaitingApproval

    @property
    def store_path(self) -> Path:
        return self.workspace / STORE

    @property
    def ledger(self) -> list[str]:
        return lines(self.workspace / LEDGER)

    @property
    def looks(self) -> list[str]:
        return [line.split(maxsplit=1)[1] for line in lines(self.workspace / LOOKS)]

    def transcript(self) -> list[m.MessageDict]:
        """The conversation the session's transcript loads to."""
        sessions = Sessions.for_workspace(self.workspace)
        return load(sessions.path(self.session_id)).messages


_approval_ids = itertools.count(1)


def pause(workspace: Path, *, store: ApprovalStore | None = None) -> Paused:
    """Run the session until the transfer waits for its approval (the run stops there)."""
    clock = FakeClock()
    sessions = Sessions.for_workspace(workspace, clock=clock)
    calls = [
        tool_call("look", what="balance"),
        tool_call("transfer", to="bob", amount=100),
        tool_call("look", what="balance after"),
    ]
    model = ScriptedModel([reply("On it.", tool_calls=calls), reply(FINAL)], clock=clock)
    agent = Agent(model, tools=tools(workspace), workspace=workspace, clock=clock)
    transcript = sessions.new(fsync=False)
    agent.plugins.append(transcript)
    store = store or ApprovalStore(workspace / STORE)
    ApprovalGate(store, ids=lambda: f"apr_{next(_approval_ids):04d}").attach(agent)
    events = list(agent.run(PROMPT))
    transcript.close()
    stop = events[-1]
    assert isinstance(stop, AwaitingApproval), f"the run did not stop for approval: {stop}"
    return Paused(workspace, transcript.session_id, stop.approval_id, stop)


@dataclass
class Resumer:
    """A fresh agent (as in a new process) that resumes the paused session."""

    agent: Agent
    sessions: Sessions
    store: ApprovalStore

    def resume(self, paused: Paused, decision: str | None = "approve") -> ApprovalResume:
        chosen: Any = decision
        return resume(self.agent, self.sessions, self.store, paused.approval_id, chosen)

    def finish_run(self, resumed: ApprovalResume) -> list[Event]:
        return list(continue_run(self.agent, resumed))


def resumer(
    paused: Paused,
    prefix: str,
    *,
    store_clock: Clock | None = None,
    lease: float | None = None,
    after_write: Callable[[], None] | None = None,
    nap: float = NAP,
) -> Resumer:
    """A fresh agent for ``paused``: its own model (ids prefixed ``prefix``), own store."""
    clock = FakeClock()
    sessions = Sessions.for_workspace(paused.workspace, clock=clock)
    model = ScriptedModel([reply(FINAL)], clock=clock, id_prefix=prefix)
    agent = Agent(
        model,
        tools=tools(paused.workspace, nap=nap, after_write=after_write),
        workspace=paused.workspace,
        clock=clock,
    )
    options: dict[str, Any] = {} if lease is None else {"lease": lease}
    store = ApprovalStore(paused.store_path, clock=store_clock, busy_timeout=60.0, **options)
    ApprovalGate(store).attach(agent)
    return Resumer(agent, sessions, store)


def outcome_of(resumed: ApprovalResume) -> Outcome:
    """Which of the three things a racing resumer may see it saw (anything else fails)."""
    if resumed.applied_now and resumed.ran:
        return "applied"
    if not resumed.applied_now and not resumed.ran:
        return "recorded"
    raise AssertionError(f"neither applied nor recorded: {resumed}")


def try_resume(who: Resumer, paused: Paused) -> tuple[Outcome, ApprovalResume | None]:
    try:
        resumed = who.resume(paused)
    except ApprovalConflict:
        return "conflict", None
    return outcome_of(resumed), resumed


def fork_context() -> Any:
    """``fork``: the child starts with everything imported (no 3 s ``anthropic`` import)."""
    return multiprocessing.get_context("fork")


def result_for(messages: list[m.MessageDict], tool_use_id: str) -> m.Block:
    """The one result the conversation holds for ``tool_use_id``."""
    found = [
        r
        for message in messages
        if message["role"] == "user"
        for r in m.tool_results(message)
        if r["tool_use_id"] == tool_use_id
    ]
    assert len(found) == 1, f"{len(found)} results for {tool_use_id}"
    return found[0]
