"""A parent agent with a subagent tool, for ``tests/test_subagents.py`` and
``tests/test_subagent_properties.py``.

:func:`make_parent` builds the parent: a scripted model (its main script is the parent's,
each child gets its own with ``model.script_when(said(task), [...])``), the built-in file
tools plus a few small test tools, a small workspace, a ``FakeClock``, and optionally a
transcript (``fsync=False``). :func:`snapshot` takes everything a child must never change
about its parent, so a test can compare before and after.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.events import Event
from harness.loop import BaseAgent, Plugin
from harness.model import ScriptedModel
from harness.resume import Sessions
from harness.subagents import Subagent
from harness.tools import ToolContext, ToolError, tool
from harness.tools.builtins import edit_file, grep, read_file, write_file
from harness.tools.dispatch import ToolRunner
from harness.tools.permissions import Approver, Permissions, deny_all
from harness.tools.storage import ResultStorage
from harness.transcript import Transcript, seeded_ids

PARENT_SYSTEM = "You are the parent agent. Delegate searches to subagents."
BIG = 60_000
"""Characters ``dump`` returns: over the spill threshold, so the result is stored."""
WAIT = 3.0
"""Seconds a waiting tool waits before it gives up (the test then fails, never hangs)."""


class DumpInput(BaseModel):
    what: str = "log"


class SignalInput(BaseModel):
    name: str


@tool(DumpInput, read_only=True)
def dump(args: DumpInput, context: ToolContext) -> str:
    """Print a very long log (it is stored, and the model gets a preview)."""
    return f"{args.what} line\n" * (BIG // 9)


@dataclass
class Signals:
    """Named ``threading.Event`` objects that tools in different children share."""

    events: dict[str, threading.Event] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, name: str) -> threading.Event:
        with self.lock:
            return self.events.setdefault(name, threading.Event())

    def tools(self) -> list[Any]:
        signals = self

        @tool(SignalInput, read_only=True)
        def wait_for(args: SignalInput, context: ToolContext) -> str:
            """Wait until the named signal is set."""
            if not signals.get(args.name).wait(WAIT):
                raise ToolError(f"{args.name} was never set (the children did not overlap)")
            return f"{args.name} arrived"

        @tool(SignalInput, read_only=True)
        def set_signal(args: SignalInput, context: ToolContext) -> str:
            """Set the named signal."""
            signals.get(args.name).set()
            return f"{args.name} set"

        return [wait_for, set_signal]


@dataclass
class Parent:
    agent: Agent
    model: ScriptedModel
    clock: FakeClock
    workspace: Path
    writer: Transcript | None = None

    def run(self, prompt: str) -> list[Event]:
        return list(self.agent.run(prompt))

    def requests_of_parent(self) -> list[Any]:
        """The requests the parent itself sent (its system prompt), not its children's."""
        return [r for r in self.model.requests if _system_text(r.system) == PARENT_SYSTEM]


def _system_text(system: Any) -> str:
    if isinstance(system, str) or system is None:
        return system or ""
    return "".join(str(b.get("text", "")) for b in system)


def make_workspace(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.py").write_text("def retry(n):\n    return 2 ** n\n")
    (root / "b.py").write_text("print('hello')\n")
    return root


def make_parent(
    root: Path,
    *,
    steps: Iterable[Any] = (),
    extra_tools: Sequence[Any] = (),
    transcript: bool = False,
    permissions: Permissions | None = None,
    approver: Approver = deny_all,
    storage: ResultStorage | None = None,
    plugins: Sequence[Plugin] = (),
    seed: int = 10,
) -> Parent:
    """A parent agent in a fresh workspace under ``root``, with the built-in file tools."""
    space = make_workspace(root / "ws")
    clock = FakeClock()
    model = ScriptedModel(list(steps), clock=clock)
    writer = None
    if transcript:
        sessions = Sessions.for_workspace(space, clock=clock, ids=seeded_ids(seed))
        writer = sessions.new(fsync=False)
    agent = Agent(
        model,
        tools=[read_file, write_file, edit_file, grep, dump, *extra_tools],
        workspace=space,
        permissions=permissions or Permissions(mode="accept_edits"),
        approver=approver,
        storage=storage,
        system=PARENT_SYSTEM,
        clock=clock,
        plugins=[*plugins, *([writer] if writer is not None else [])],
    )
    return Parent(agent, model, clock, space, writer)


def runner_of(agent: BaseAgent) -> ToolRunner:
    runner = agent.tools
    assert isinstance(runner, ToolRunner)
    return runner


@dataclass
class Snapshot:
    """What a child must never change about its parent."""

    messages: list[m.MessageDict]
    names: list[str]
    definitions: list[dict[str, Any]]
    finished: dict[str, m.Block]
    storage: ResultStorage
    permissions: Permissions
    permissions_copy: tuple[str, list[str], list[str], list[str]]
    approver: Approver
    plugins: list[Plugin]
    system: Any
    max_turns: int


def snapshot(agent: Agent) -> Snapshot:
    runner = runner_of(agent)
    p = runner.permissions
    return Snapshot(
        messages=copy.deepcopy(agent.messages),
        names=list(runner.registry.names()),
        definitions=copy.deepcopy(runner.definitions()),
        finished=copy.deepcopy(dict(runner.finished)),
        storage=runner.storage,
        permissions=p,
        permissions_copy=(
            p.mode,
            [str(r) for r in p.allow],
            [str(r) for r in p.ask],
            [str(r) for r in p.deny],
        ),
        approver=runner.approver,
        plugins=list(agent.plugins),
        system=copy.deepcopy(agent.system),
        max_turns=agent.config.max_turns,
    )


def assert_unchanged(agent: Agent, before: Snapshot) -> None:
    after = snapshot(agent)
    assert after.messages == before.messages
    assert after.names == before.names
    assert after.definitions == before.definitions
    assert after.finished == before.finished
    assert after.storage is before.storage
    assert after.permissions is before.permissions
    assert after.permissions_copy == before.permissions_copy
    assert after.approver is before.approver
    assert after.plugins == before.plugins
    assert after.system == before.system
    assert after.max_turns == before.max_turns


def run_calls(runner: ToolRunner, calls: list[m.Block]) -> tuple[list[Event], list[m.Block]]:
    """Drive ``runner.run(calls)`` to its end: its events and the results it returns."""
    events: list[Event] = []
    gen: Generator[Event, None, list[m.Block]] = runner.run(calls)
    while True:
        try:
            events.append(next(gen))
        except StopIteration as done:
            return events, list(done.value)


def attach(parent: Parent, **kwargs: Any) -> Subagent:
    return Subagent(**kwargs).attach(parent.agent)
