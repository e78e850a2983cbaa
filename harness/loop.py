"""The agent loop: call the model, run the tools it asks for, repeat until it stops.

This is the whole of it, and it stays this small for the rest of the course. Later
mechanisms do not rewrite it; they plug in at its named points:

* ``before_request``: make the conversation fit (compaction, chapters 04-05, 07);
* ``call_model``: wraps the API call (error recovery, chapter 06);
* ``after_reply``: remember and record (session memory, chapter 07; transcripts, chapter 08);
* around each tool: validation, permissions, hooks, parallel reads (``ToolRunner``, chapter 02).

A :class:`Plugin` implements any of the first three; the tool point is the ``ToolRunner``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anthropic.types import Message
from pydantic import BaseModel, Field

from harness import messages as m
from harness import tokens
from harness.clock import Clock, RealClock
from harness.events import (
    AssistantReplied,
    Event,
    HookReported,
    MaxTurnsReached,
    ModelCalled,
    TurnEnded,
)
from harness.model.base import Model, model_name
from harness.pricing import CostMeter
from harness.tools.base import Tool, ToolContext, ToolRegistry
from harness.tools.dispatch import ToolRunner
from harness.tools.hooks import Hooks, describe_failure
from harness.tools.permissions import Approver, Permissions, deny_all
from harness.tools.storage import ResultStorage
from harness.tools.workspace import Workspace

# Claude Code's wording for a tool call cut short, so the conversation stays valid.
INTERRUPTED = "[Request interrupted by user for tool use]"


class AgentConfig(BaseModel):
    """Settings of one agent."""

    model: str = Field(default_factory=model_name)
    """The model id sent with every request: ``HARNESS_MODEL`` if set, else the default."""
    max_tokens: int = Field(8_000, gt=0)
    """Output tokens per reply. Claude Code's default is 8K, raised to 64K only on demand."""
    max_turns: int = Field(50, gt=0)
    """Model calls per run before the run stops with ``MaxTurnsReached``."""


@dataclass(frozen=True)
class ModelRequest:
    """One request, exactly as it will be sent (``model.create(**request.kwargs())``)."""

    model: str
    max_tokens: int
    messages: list[m.MessageDict]
    system: str | list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        out["messages"] = self.messages
        if self.system is not None:
            out["system"] = self.system
        if self.tools:
            out["tools"] = self.tools
        return {**out, **self.extra}


class Plugin:
    """A mechanism that plugs into the loop. Every point is a no-op until overridden."""

    def before_request(self, agent: Agent) -> None:
        """Runs before each request is built; may rewrite ``agent.messages``."""

    def call_model(
        self, agent: Agent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        """Wraps the model call; ``call(request)`` is the next layer in (finally the model)."""
        return call(request)

    def after_reply(self, agent: Agent, reply: Message) -> None:
        """Runs once the reply has joined the conversation."""


class RunInProgress(RuntimeError):
    """A second run was started on an agent whose first run has not finished."""


class Agent:
    """A model, its tools, a system prompt, and the conversation so far."""

    def __init__(
        self,
        model: Model,
        *,
        tools: Iterable[Tool[Any]] | ToolRegistry = (),
        system: str | list[dict[str, Any]] | None = None,
        workspace: Workspace | str | Path | None = None,
        clock: Clock | None = None,
        config: AgentConfig | None = None,
        permissions: Permissions | None = None,
        approver: Approver = deny_all,
        hooks: Hooks | None = None,
        storage: ResultStorage | None = None,
        plugins: Iterable[Plugin] = (),
        **settings: Any,
    ) -> None:
        if config is not None and settings:
            raise TypeError(
                f"pass settings in config= or as keywords, not both: {sorted(settings)}"
            )
        self.model = model
        self.config = config or AgentConfig(**settings)
        self.system = system
        self.clock: Clock = clock or RealClock()
        self.messages: list[m.MessageDict] = []
        self.plugins = list(plugins)
        space = (
            workspace if isinstance(workspace, Workspace) else Workspace(workspace or Path.cwd())
        )
        self.tools = ToolRunner(
            registry=tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools),
            context=ToolContext(workspace=space, clock=self.clock),
            permissions=permissions or Permissions(workspace=space),
            approver=approver,
            hooks=hooks or Hooks(),
            storage=storage,
        )
        self.meter = CostMeter()
        """Usage and cost of every model call this agent made."""
        self._events: list[Event] = []
        self._running = threading.Lock()

    # -- the loop --------------------------------------------------------------------------

    def run(self, prompt: str) -> Iterator[Event]:
        """Answer ``prompt``: call the model and run its tools until it stops. Yields events."""
        with self._one_run_at_a_time():
            self._add_prompt(prompt)
            for turn in range(1, self.config.max_turns + 1):
                self._at_each_plugin("before_request")  # compaction plugs in here
                yield from self._drain()
                request = self.request()
                yield ModelCalled(turn, len(request.messages), self._estimate(request))
                reply = self._call_model(request)  # error recovery wraps this
                yield from self._drain()
                self.messages.append(m.from_reply(reply))
                yield AssistantReplied(turn, reply)
                self._at_each_plugin("after_reply", reply)  # memory, transcripts
                yield from self._drain()
                # from_reply kept tool calls only if the model stopped to make them.
                if not (calls := m.tool_uses(self.messages[-1])):
                    if (reason := (yield from self._stop_hooks(reply))) is None:
                        yield TurnEnded(turn, reply.stop_reason)
                        return
                    self.messages.append(m.user(reason))
                    continue
                results = yield from self.tools.run(calls)  # permissions, hooks, threads
                self.messages.append(m.user(results))
            yield MaxTurnsReached(self.config.max_turns)

    # -- the named points --------------------------------------------------------------------

    def request(self) -> ModelRequest:
        """The next request: config, system prompt, tool definitions, the conversation."""
        definitions = self.tools.registry.definitions()
        return ModelRequest(
            model=self.config.model,
            max_tokens=self.config.max_tokens,
            messages=self.messages,
            system=self.system,
            tools=definitions or None,
        )

    def _call_model(self, request: ModelRequest) -> Message:
        def innermost(r: ModelRequest) -> Message:
            reply = self.model.create(**r.kwargs())
            self.meter.record(r.model, reply.usage)  # every call is billed, kept or not
            return reply

        call: Callable[[ModelRequest], Message] = innermost
        for plugin in reversed(self.plugins):  # the first plugin is the outermost layer
            call = _layer(plugin, self, call)
        return call(request)

    def _at_each_plugin(self, point: str, *args: Any) -> None:
        for plugin in self.plugins:
            getattr(plugin, point)(self, *args)

    def _stop_hooks(self, reply: Message) -> Generator[Event, None, str | None]:
        for hook in self.tools.hooks.stop:
            try:
                reason = hook(reply)
            except Exception as error:
                yield HookReported("Stop", "", "failed", describe_failure(hook, error))
                continue
            if reason:
                yield HookReported("Stop", "", "continued", reason)
                return reason
        return None

    # -- helpers -----------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """For plugins: an event to yield at the next point of the loop."""
        self._events.append(event)

    def _drain(self) -> Iterator[Event]:
        while self._events:
            yield self._events.pop(0)

    def _estimate(self, request: ModelRequest) -> int:
        return tokens.estimate_request(request.messages, system=request.system, tools=request.tools)

    def _add_prompt(self, prompt: str) -> None:
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "user":
            # The previous run ended on tool results (max_turns, an error): the API wants
            # alternating roles, so the new prompt joins that message instead of following it.
            last["content"] = [*m.blocks(last), m.text(prompt)]
        else:
            self.messages.append(m.user(prompt))

    def _one_run_at_a_time(self) -> _RunGuard:
        return _RunGuard(self)

    def answer_interrupted_calls(self) -> None:
        """If the conversation ends on unanswered tool calls, answer them as interrupted."""
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "assistant" and m.tool_uses(last):
            # Calls that ran keep their real results; only those that never ran are interrupted.
            done = self.tools.finished
            results = [
                done.get(u["id"]) or m.tool_result(u["id"], INTERRUPTED, is_error=True)
                for u in m.tool_uses(last)
            ]
            self.messages.append(m.user(results))


def _layer(
    plugin: Plugin, agent: Agent, inner: Callable[[ModelRequest], Message]
) -> Callable[[ModelRequest], Message]:
    return lambda request: plugin.call_model(agent, request, inner)


class _RunGuard:
    """Claude Code's query guard: one run at a time per session, and a valid ending always."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def __enter__(self) -> None:
        if not self.agent._running.acquire(blocking=False):
            raise RunInProgress(
                "this agent is already running; finish (or close) the current run before "
                "starting another (one run at a time per conversation)"
            )

    def __exit__(self, *exc: object) -> None:
        try:
            # A run stopped between a reply and its results (an exception, or the caller
            # stopped iterating) must not leave a tool_use without its tool_result.
            self.agent.answer_interrupted_calls()
        finally:
            self.agent._running.release()
