"""The agent loop: call the model, run the tools it asks for, repeat until it stops.

This is the whole of it, and it stays this small. Other mechanisms do not rewrite it; they
plug in at its named points:

* ``before_prompt``: a user's prompt is about to join the conversation (a hook from the
  settings may refuse it, or add context after it: chapter 13);
* ``before_request``: make the conversation fit (compaction);
* ``call_model``: wraps every model call (cache breakpoints, error recovery);
* ``after_reply``: remember and record what was said;
* ``on_tool_progress``: calls are about to run, or have their results (from inside the tool
  runner, before the loop sees them: the transcript journals them, so a crash between a
  tool's side effect and the results' message loses nothing);
* ``after_tools``: the tool results have joined the conversation (the transcript saves them);
* ``on_rewrite``: the conversation is about to be replaced (the transcript marks a compaction);
* the tool calls: whatever runs them implements :class:`ToolCalls` (validation, permissions,
  hooks, parallel reads: the tool runner), and may stop the run too (a call that waits for
  a person's approval);
* Stop hooks: when the model is about to end its turn, they may send it back to work.

A :class:`Plugin` implements any of these, and ``on_stop``, its own stop hook. A
``call_model`` layer that cannot get a reply ends the run by raising :class:`StopRun` with an
event that says why (error recovery gives up this way); the loop yields that event and
returns, so the run ends cleanly instead of raising; the tool runner stops a run the same
way, once every call has an answer. :class:`BaseAgent` is the loop over two
protocols, ``Model`` and ``ToolCalls``; ``harness.Agent`` is the one you normally build: the
same loop, with the tool runner made for you from a list of tools.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

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
    PromptRefused,
    RewriteRefused,
    TurnEnded,
    describe_failure,
)
from harness.model.base import Model, model_name
from harness.model.models import DEFAULT_CONTEXT_WINDOW as DEFAULT_CONTEXT_WINDOW
from harness.model.models import context_window_of

# What the named points exchange, re-exported: ``from harness.loop import Rewrite`` works.
from harness.points import ModelRequest as ModelRequest
from harness.points import PromptCheck as PromptCheck
from harness.points import Rewrite as Rewrite
from harness.points import ToolProgress as ToolProgress
from harness.pricing import CostMeter

# Claude Code's wording for a tool call cut short, so the conversation stays valid.
INTERRUPTED = "[Request interrupted by user for tool use]"

# Our wording for a call that started but whose result was never recorded (the process
# stopped in between): unlike an interruption, its side effects may have happened.
MAY_HAVE_RUN = (
    "[The harness stopped while this call was running: it may have run, but its result was "
    "not recorded. Check its effects before running it again.]"
)

# DEFAULT_CONTEXT_WINDOW (imported above, and re-exported for code that imports it from the
# loop) is the default model's window, 1M. When neither the config nor the model gives a window,
# the agent takes the window of the model the config names, from the course's model table
# (harness.model.models), 200K for a model the table does not know.

StopHook = Callable[[Message], str | None]
"""Gets the final reply; returns a reason to keep going (sent to the model), or None."""


class AgentConfig(BaseModel):
    """Settings of one agent."""

    model: str = Field(default_factory=model_name)
    """The model id sent with every request: ``HARNESS_MODEL`` if set, else the default."""
    max_tokens: int = Field(8_000, gt=0)
    """Output tokens per reply. Claude Code's default is 8K, raised to 64K only on demand (in
    the analysed versions, when its output cap's feature flag is on; else the model's own)."""
    max_turns: int = Field(50, gt=0)
    """Turns per run (a model call and the tools it asked for) before ``MaxTurnsReached``."""
    context_window: int | None = Field(None, gt=0)
    """The model's context window in tokens; ``None``: the model's own ``context_window``
    attribute if it has one (the scripted model does), else the window the course's model
    table gives ``model`` (``harness.model.models``). The tool runner holds one turn's results
    to a share of it (chapter 06)."""


class Plugin:
    """A mechanism that plugs into the loop. Every point is a no-op until overridden.

    Plugins run in the order the agent was given them. At ``before_request`` each one sees
    the conversation as the plugins before it left it; at ``call_model`` the first is the
    outermost layer; at ``after_reply`` they run in order.
    """

    def before_prompt(self, agent: BaseAgent, prompt: str) -> PromptCheck | None:
        """Runs when a run starts, before ``prompt`` joins the conversation: return a
        :class:`PromptCheck` to refuse it or to add context after it, or None."""
        return None

    def before_request(self, agent: BaseAgent) -> Rewrite | None:
        """Runs before each request of the loop. To change the conversation, return a
        :class:`Rewrite`: the loop checks it, puts it in place and yields its event. (Never
        assign ``agent.messages`` here: a change nobody reports is a change nobody sees.)"""
        return None

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        """Wraps every model call; ``call(request)`` is the next layer in (finally the model)."""
        return call(request)

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        """Runs once the reply has joined the conversation."""

    def on_tool_progress(self, agent: BaseAgent, progress: ToolProgress) -> None:
        """Runs as calls start and as their results exist, from inside the tool runner (a
        runner that reports progress calls :meth:`BaseAgent.tool_progress`; ``Agent``'s
        does)."""

    def after_tools(self, agent: BaseAgent, results: list[m.Block]) -> None:
        """Runs once a reply's tool results have joined the conversation (also when a run
        stopped early and its calls were answered as interrupted)."""

    def on_rewrite(self, agent: BaseAgent, rewrite: Rewrite) -> None:
        """Runs when a checked rewrite is about to replace the conversation: ``agent.messages``
        is still the old one, ``rewrite.messages`` the new."""

    def on_stop(self, agent: BaseAgent, reply: Message) -> str | None:
        """Runs when the model is about to end its turn, after the Stop hooks: return text
        to send it back to work (say, "continue where you were cut off"), or None."""
        return None


class StopRun(Exception):
    """Raised by a ``call_model`` layer to end the run with ``event`` instead of a reply.

    The loop catches it around the model call, yields the event and returns. Only for the
    loop's own requests: a side request (a compaction's summary) raises the API's error, which
    its caller handles.
    """

    def __init__(self, event: Event) -> None:
        super().__init__(str(event))
        self.event = event


class ToolCalls(Protocol):
    """What the loop needs from whatever runs the model's tool calls."""

    def definitions(self) -> list[dict[str, Any]]:
        """The tools, as the API takes them in ``tools=[...]``."""
        ...

    def run(self, calls: Sequence[m.Block]) -> Generator[Event, None, list[m.Block]]:
        """Run one reply's calls, yielding events; return one ``tool_result`` per call (or
        raise :class:`StopRun` once :attr:`finished` holds an answer for every call)."""
        ...

    @property
    def finished(self) -> Mapping[str, m.Block]:
        """The results of the current calls recorded so far, by ``tool_use_id``."""
        ...


class NoTools:
    """The tools of an agent that has none: a call (which the API never makes) gets an error."""

    def __init__(self) -> None:
        self.finished: dict[str, m.Block] = {}

    def definitions(self) -> list[dict[str, Any]]:
        return []

    def run(self, calls: Sequence[m.Block]) -> Generator[Event, None, list[m.Block]]:
        self.finished = {
            str(c["id"]): m.tool_result(str(c["id"]), "This agent has no tools.", is_error=True)
            for c in calls
        }
        yield from ()
        return list(self.finished.values())


class RunInProgress(RuntimeError):
    """A second run was started on an agent whose first run has not finished."""


class BaseAgent:
    """A model, whatever runs its tool calls, a system prompt, and the conversation so far.

    The model object comes first, by position; the keywords after it are
    :class:`AgentConfig`'s settings, so ``BaseAgent(model, model="claude-haiku-4-5",
    max_tokens=2_000)`` names the model id its requests ask for.
    """

    def __init__(
        self,
        model: Model,
        /,
        *,
        tools: ToolCalls | None = None,
        system: str | list[dict[str, Any]] | None = None,
        workspace: str | Path | None = None,
        clock: Clock | None = None,
        config: AgentConfig | None = None,
        plugins: Iterable[Plugin] = (),
        stop_hooks: Iterable[StopHook] = (),
        **settings: Any,
    ) -> None:
        if config is not None and settings:
            raise TypeError(
                f"pass settings in config= or as keywords, not both: {sorted(settings)}"
            )
        self.model = model
        self.tools: ToolCalls = tools if tools is not None else NoTools()
        self.config = config or AgentConfig(**settings)
        self.system = system
        self.workspace = Path(workspace or Path.cwd()).resolve()
        """The folder the agent works in (tool paths start here)."""
        self.clock: Clock = clock or RealClock()
        self.messages: list[m.MessageDict] = []
        self.plugins = list(plugins)
        self.stop_hooks = list(stop_hooks)
        self.meter = CostMeter()
        """Usage and cost of every model call this agent made."""
        self._events: list[Event] = []
        self._running = threading.Lock()

    # -- the loop --------------------------------------------------------------------------

    def run(self, prompt: str) -> Iterator[Event]:
        """Answer ``prompt``: call the model and run its tools until it stops. Yields events."""
        with self._one_run_at_a_time():
            if (problem := prompt_problem(prompt)) is not None:
                yield PromptRefused(problem)  # sent, it would make every later request a 400
                return
            refused, context = yield from self._before_prompt(prompt)
            if refused is not None:
                yield PromptRefused(refused)
                return
            self._add_prompt(prompt, context)
            for turn in range(1, self.config.max_turns + 1):
                yield from self._before_request()  # compaction plugs in here
                request = self.request()
                yield ModelCalled(turn, len(request.messages), self._estimate(request))
                try:
                    reply = self.call(request)  # error recovery wraps this
                except StopRun as stop:  # a layer gave up: the run ends, and says why
                    yield from self._drain()
                    yield stop.event
                    return
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
                try:
                    results = yield from self.tools.run(calls)  # permissions, hooks, threads
                except StopRun as stop:  # a call waits for a person's decision (chapter 09)
                    self.answer_interrupted_calls()  # what ran keeps its result; on disk now
                    yield from self._drain()
                    yield stop.event
                    return
                self.messages.append(m.user(results))
                self._at_each_plugin("after_tools", results)  # transcripts
                yield from self._drain()
            yield MaxTurnsReached(self.config.max_turns)

    @property
    def context_window(self) -> int:
        """The model's context window: ``config.context_window``, else the model's own
        ``context_window`` (the scripted model's), else the table's window for
        ``config.model`` (1M for the default model; see ``harness.model.models``)."""
        window = self.config.context_window or getattr(self.model, "context_window", None)
        if isinstance(window, int) and window > 0:
            return window
        return context_window_of(self.config.model)

    # -- the named points --------------------------------------------------------------------

    def request(self) -> ModelRequest:
        """The next request: config, system prompt, tool definitions, the conversation."""
        definitions = self.tools.definitions()
        return ModelRequest(
            model=self.config.model,
            max_tokens=self.config.max_tokens,
            messages=self.messages,
            system=self.system,
            tools=definitions or None,
        )

    def call(self, request: ModelRequest) -> Message:
        """Send ``request`` through the ``call_model`` layers to the model, and meter it.

        The one path to the model: the loop's own requests and every side request (a
        compaction's summary, say) go through it, so whatever wraps the call covers them all.
        It never runs ``before_request``, so a side request cannot set off a compaction.
        """

        def innermost(r: ModelRequest) -> Message:
            reply = self.model.create(**r.kwargs())
            # Every call is billed, kept or not, at the model that served it (a fallback
            # model's reply says so in ``reply.model``).
            self.meter.record(reply.model or r.model, reply.usage)
            return reply

        call: Callable[[ModelRequest], Message] = innermost
        for plugin in reversed(self.plugins):  # the first plugin is the outermost layer
            call = _layer(plugin, self, call)
        return call(request)

    def apply(self, rewrite: Rewrite) -> Event:
        """Put a rewritten conversation in place; return the event that reports it.

        The one way anything replaces the conversation: the loop applies what a plugin's
        ``before_request`` returns, and code outside the loop (a compaction you ask for) calls
        this too. A conversation the API would refuse is not put in place: this raises
        ``messages.InvalidConversation`` and the conversation stays as it was.
        """
        m.ensure_valid(rewrite.messages)
        self._at_each_plugin("on_rewrite", rewrite)  # the transcript marks the change
        self.messages[:] = rewrite.messages
        return rewrite.event

    def _before_prompt(self, prompt: str) -> Generator[Event, None, tuple[str | None, list[str]]]:
        """Ask each plugin about the prompt: the first refusal wins; contexts add up."""
        yield from self._drain()
        context: list[str] = []
        for plugin in self.plugins:
            check = plugin.before_prompt(self, prompt)
            yield from self._drain()
            if check is None:
                continue
            if check.block:
                return check.reason or f"{type(plugin).__name__} refused it", context
            if check.context and prompt_problem(check.context) is None:
                context.append(check.context)
        return None, context

    def _before_request(self) -> Iterator[Event]:
        yield from self._drain()  # anything reported since the last run
        for plugin in self.plugins:
            rewrite = plugin.before_request(self)
            if rewrite is not None:
                try:
                    yield self.apply(rewrite)
                except m.InvalidConversation as error:
                    yield RewriteRefused(type(plugin).__name__, str(error))
            yield from self._drain()

    def _at_each_plugin(self, point: str, *args: Any) -> None:
        for plugin in self.plugins:
            getattr(plugin, point)(self, *args)

    def tool_progress(self, progress: ToolProgress) -> None:
        """For the tool runner: report calls starting or finished to every plugin."""
        self._at_each_plugin("on_tool_progress", progress)

    def _stop_hooks(self, reply: Message) -> Generator[Event, None, str | None]:
        for hook in self.stop_hooks:
            try:
                reason = hook(reply)
            except Exception as error:
                yield HookReported("Stop", "", "failed", describe_failure(hook, error))
                continue
            if not reason:  # None or "": the turn may end
                continue
            if problem := prompt_problem(reason):
                yield HookReported("Stop", "", "ignored", f"its reason was refused: {problem}")
                continue
            yield HookReported("Stop", "", "continued", reason)
            return reason
        for plugin in self.plugins:  # a plugin's own stop hook reports itself, by event
            reason = plugin.on_stop(self, reply)
            yield from self._drain()
            if reason and prompt_problem(reason) is None:
                return reason
        return None

    # -- helpers -----------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """For plugins: an event to yield at the next point of the loop (outside a run, at
        the start of the next one)."""
        self._events.append(event)

    def _drain(self) -> Iterator[Event]:
        while self._events:
            yield self._events.pop(0)

    def _estimate(self, request: ModelRequest) -> int:
        return tokens.estimate_request(request.messages, system=request.system, tools=request.tools)

    def _add_prompt(self, prompt: str, context: Sequence[str] = ()) -> None:
        added = [m.text(prompt), *(m.text(c) for c in context)]
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "user":
            # The previous run ended on tool results (max_turns, an error): the harness keeps
            # roles alternating (the API would combine two user messages into one turn), so
            # the new prompt joins that message instead of following it.
            last["content"] = [*m.blocks(last), *added]
        else:
            self.messages.append(m.user(added if context else prompt))

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
            self._at_each_plugin("after_tools", results)


def prompt_problem(text: object) -> str | None:
    """Why ``text`` cannot be sent as a user's words, or None if it can.

    The API refuses a text block that is empty or only whitespace, and JSON that is not valid
    Unicode; once such a block is in the conversation, every later request is refused too.
    So it is stopped at the edge, where a person can be told.
    """
    if not isinstance(text, str):
        return f"a prompt is text, not {type(text).__name__}"
    if not text.strip():
        return "it is empty or only whitespace, which the API refuses"
    if not m.is_utf8(text):
        return "it is not valid Unicode text (it has a lone surrogate)"
    return None


def _layer(
    plugin: Plugin, agent: BaseAgent, inner: Callable[[ModelRequest], Message]
) -> Callable[[ModelRequest], Message]:
    return lambda request: plugin.call_model(agent, request, inner)


class _RunGuard:
    """Claude Code's query guard: one run at a time per session, and a valid ending always."""

    def __init__(self, agent: BaseAgent) -> None:
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
