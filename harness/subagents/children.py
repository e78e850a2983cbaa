"""Making a child agent: a fresh one, or a fork of the parent's exact request.

Either way its model calls go through the parent (:class:`ThroughParent`), which is also how
a child's depth is known (:func:`depth`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from anthropic.types import Message

from harness import messages as m
from harness.agent import Agent
from harness.approvals import ApprovalGate
from harness.events import Event
from harness.fork import FORK_PLACEHOLDER
from harness.loop import AgentConfig, BaseAgent, ModelRequest, Plugin
from harness.tools.base import ToolError, ToolRegistry
from harness.tools.dispatch import ToolRunner
from harness.tools.permissions import (
    Approval,
    ApprovalRequest,
    Approver,
    Deferred,
    Permissions,
    Rule,
)
from harness.tools.storage import ResultStorage
from harness.tools.workspace import Workspace

DEFAULT_SUBAGENT_TURNS = 12  # our choice: enough to read around and check one thing

MAX_DEPTH = 1
"""How deep children go: the main agent is depth 0, its children depth 1, and a child may
start none of its own (Claude Code gives its subagents no Agent tool)."""


# -- a child's model calls: through the parent ---------------------------------------------


class ThroughParent:
    """A child's model: each request goes through ``parent.call`` with ``purpose``.

    So the parent's ``call_model`` layers (cache breakpoints, retries, fallback) shape and
    cover the child's requests exactly as they do the parent's, and the parent's meter
    counts them (the session's cost includes its children, as Claude Code's ``/cost`` does).
    The child keeps a meter of its own as well, for its capsule.
    """

    def __init__(self, parent: BaseAgent, purpose: str) -> None:
        self.parent = parent
        self.purpose = purpose

    @property
    def context_window(self) -> int:
        return self.parent.context_window

    def count_tokens(
        self,
        *,
        model: str = "",
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        return self.parent.model.count_tokens(
            model=model, messages=messages, system=system, tools=tools
        )

    def create(
        self,
        *,
        model: str,
        max_tokens: int,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **extra: Any,
    ) -> Message:
        request = ModelRequest(
            model=model,
            max_tokens=max_tokens,
            messages=cast(list[m.MessageDict], list(messages)),
            system=system if system is None or isinstance(system, str) else list(map(dict, system)),
            tools=[dict(t) for t in tools] if tools else None,
            extra=dict(extra),
            purpose=self.purpose,
        )
        return self.parent.call(request)


def depth(agent: BaseAgent) -> int:
    """How many parents above ``agent``: 0 for the main agent, 1 for its child, and so on
    (each child's model is a :class:`ThroughParent` to its parent)."""
    found = 0
    model: object = agent.model
    while isinstance(model, ThroughParent):
        found += 1
        model = model.parent.model
    return found


# -- forks ---------------------------------------------------------------------------------


@dataclass
class Fork:
    """A child forked from its parent's conversation, ready to run its directive."""

    agent: BaseAgent
    directive: str
    start: int
    """Where the child's own messages begin in ``agent.messages`` (the rest it inherited)."""

    def request(self) -> ModelRequest:
        """The first request the child will send (before the ``call_model`` layers)."""
        messages = copy.deepcopy(self.agent.messages)
        last = messages[-1]
        if last["role"] == "user":
            last["content"] = [*m.blocks(last), m.text(self.directive)]
        else:
            messages.append(m.user(self.directive))
        return replace(self.agent.request(), messages=messages, purpose="fork")

    def run(self) -> Iterator[Event]:
        yield from self.agent.run(self.directive)


def fresh(
    parent: BaseAgent,
    *,
    tools: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    system: str | list[dict[str, Any]] | None = None,
    model: str | None = None,
    max_turns: int = DEFAULT_SUBAGENT_TURNS,
    plugins: Iterable[Plugin] = (),
) -> Agent:
    """A fresh child of ``parent``: an empty conversation, ``system`` as its system prompt,
    and only the parent's tools named in ``tools`` (default: all but those in ``exclude``).

    It works in the parent's workspace under the parent's permissions and hooks; the
    parent's approver answers for it, except that it cannot wait for a decision made later.
    Its results are stored apart, and its calls go through ``parent.call`` with purpose
    ``subagent``, asking for ``model`` (default: the parent's).
    """
    runner = parent.tools
    registry = runner.registry if isinstance(runner, ToolRunner) else ToolRegistry()
    names = [n for n in registry.names() if n not in set(exclude)]
    if tools is not None:
        wanted = list(tools)
        unknown = sorted(set(wanted) - set(registry.names()))
        if unknown:
            raise ToolError(f"the parent has no tools named {', '.join(unknown)}")
        names = [n for n in names if n in wanted]
    return Agent(
        ThroughParent(parent, "subagent"),
        tools=ToolRegistry(t for n in names if (t := registry.get(n)) is not None),
        workspace=_workspace_of(parent),
        permissions=_permissions_of(parent),
        approver=_no_waiting(_approver_of(parent)),
        hooks=runner.hooks if isinstance(runner, ToolRunner) else None,
        storage=ResultStorage(),
        system=system,
        clock=parent.clock,
        config=AgentConfig(
            model=model or parent.config.model,
            max_tokens=parent.config.max_tokens,
            max_turns=max_turns,
            context_window=parent.context_window,
        ),
        plugins=plugins,
    )


def fork(
    parent: BaseAgent,
    directive: str,
    *,
    allowed: Iterable[str] | None = None,
    max_turns: int = DEFAULT_SUBAGENT_TURNS,
    plugins: Iterable[Plugin] = (),
    refuse: Iterable[str] = (),
) -> Fork:
    """A child that starts from ``parent``'s exact request, with ``directive`` added.

    Its system prompt is the parent's (the same object), its tool definitions the parent's
    (the same tools, so the same bytes), its messages a deep copy of the parent's. If the
    parent's last reply asked for tools, each call gets :data:`FORK_PLACEHOLDER` as its
    result in one user message, and the directive joins that message when the fork runs.
    ``allowed`` names the tools the child may use (default: all); the others keep their
    definitions, for the cache, and are refused by a deny rule, as are the tools named in
    ``refuse`` (a fork may not fork again). Its calls go through the parent's
    ``agent.call`` with purpose ``fork``; it never compacts.
    """
    base = parent.request()
    inherited = copy.deepcopy(base.messages)
    if inherited and inherited[-1]["role"] == "assistant" and (calls := m.tool_uses(inherited[-1])):
        inherited.append(m.user([m.tool_result(str(u["id"]), FORK_PLACEHOLDER) for u in calls]))
    start = len(inherited)
    runner = parent.tools
    registry = runner.registry if isinstance(runner, ToolRunner) else ToolRegistry()
    denied = set(refuse)
    if allowed is not None:
        denied |= set(registry.names()) - set(allowed)
    child = Agent(
        ThroughParent(parent, "fork"),
        # The same tools in a registry of its own: the same definitions, byte for byte.
        tools=ToolRegistry(t for n in registry.names() if (t := registry.get(n)) is not None),
        workspace=_workspace_of(parent),
        permissions=_with_denied(_permissions_of(parent), denied),
        approver=_no_waiting(_approver_of(parent)),
        hooks=runner.hooks if isinstance(runner, ToolRunner) else None,
        storage=ResultStorage(),
        system=base.system,
        clock=parent.clock,
        config=AgentConfig(
            model=base.model,
            max_tokens=base.max_tokens,
            max_turns=max_turns,
            context_window=parent.context_window,
        ),
        plugins=plugins,
    )
    child.messages = inherited
    return Fork(child, directive, start)


# -- helpers --------------------------------------------------------------------------------


def sidechain_path(parent: Path, agent_id: str) -> Path:
    """Where a child's transcript goes: ``<session>/subagents/agent-<id>.jsonl`` next to the
    parent's ``<session>.jsonl`` (Claude Code 2.1's layout)."""
    return parent.with_suffix("") / "subagents" / f"agent-{agent_id}.jsonl"


def _workspace_of(agent: BaseAgent) -> Workspace:
    runner = agent.tools
    return (
        runner.context.workspace if isinstance(runner, ToolRunner) else Workspace(agent.workspace)
    )


def _permissions_of(agent: BaseAgent) -> Permissions:
    runner = agent.tools
    return runner.permissions if isinstance(runner, ToolRunner) else Permissions()


def _approver_of(agent: BaseAgent) -> Approver | None:
    runner = agent.tools
    return runner.approver if isinstance(runner, ToolRunner) else None


def _with_denied(permissions: Permissions, names: Iterable[str]) -> Permissions:
    extra = [Rule.parse(n) for n in sorted(names)]
    return replace(permissions, deny=[*permissions.deny, *extra]) if extra else permissions


def _no_waiting(approver: Approver | None) -> Approver:
    """The parent's approver, except that a child cannot wait for a decision made later
    (chapter 09): its run would stop with no one to resume it. Such a call is refused."""

    refusal = Approval(
        False, "a subagent cannot wait for a later decision; ask the parent to make this call"
    )

    def ask(request: ApprovalRequest) -> Approval | Deferred | bool:
        if approver is None:
            return Approval(False, "no one was asked to approve it (no approver configured)")
        if isinstance(approver, ApprovalGate):  # it would file a call no one will resume
            return refusal
        answer = approver(request)
        return refusal if isinstance(answer, Deferred) else answer

    return ask
