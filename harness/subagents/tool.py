"""The subagent tool: the model asks for a child; the child's capsule is the result.

Children do not nest. Claude Code does not give its Agent tool (formerly Task) to the
subagents it starts, so a subagent cannot start another; its forks may not fork again. We
do the same, and hold to it however the tools are combined: a child gets none of the
parent's tools that start children (a fresh child does not see them; a fork keeps their
definitions, for the cache, and each call is denied), and a :class:`Subagent` attached to a
child refuses to run. Either way the model reads a tool error and its run goes on. The cap
is :data:`~harness.subagents.children.MAX_DEPTH` (1); the course has no use for deeper trees,
and a cycle of two subagent tools would otherwise recurse until the process fell over.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from harness import messages as m
from harness import tokens
from harness.agent import Agent
from harness.events import Event, MaxTurnsReached, ToolStarted
from harness.fork import NoForkTools, run_fork
from harness.loop import BaseAgent, Plugin
from harness.resume import SessionNotFound, resume_with
from harness.subagents.capsule import (
    DEFAULT_SUMMARY_TOKENS,
    ResultCapsule,
    SubagentFinished,
    TokenBudget,
    cap_summary,
    changes,
    outcome,
)
from harness.subagents.children import (
    DEFAULT_SUBAGENT_TURNS,
    MAX_DEPTH,
    depth,
    fork,
    fresh,
    sidechain_path,
)
from harness.tools.base import Tool, ToolContext, ToolError, ToolInput
from harness.tools.dispatch import ToolRunner
from harness.transcript import Transcript

SUBAGENT_SYSTEM = (
    "You are a subagent: another agent handed you the task in the first message and will "
    "read only your final reply. Work on the task with your tools. Then reply with a short "
    "report: what you found (with file paths), what you changed, and anything left undone. "
    "Do not paste whole files; the other agent can read them itself."
)
"""A fresh subagent's system prompt (our words)."""

WRAP_UP = (
    "You have reached your turn limit and may not call any more tools. Reply now with a "
    "short report of what you found and did so far, and what is left to do."
)
"""Sent, as a one-call fork of the child, when a child runs out of turns mid-work."""

_AGENT_ID = "a[0-9a-f]{8}"
MIN_SUMMARY_TOKENS = 50  # our choice: room for a sentence and the note saying it was cut

NESTED = (
    "Not run: a subagent cannot start subagents or forks of its own (children are at most "
    "{cap} level deep). Do the work with your own tools, or say in your report what is left "
    "and let the agent that started you delegate it."
)
"""The tool error a child's model reads if it tries to start a child anyway."""


# -- the tool --------------------------------------------------------------------------------


class SubagentInput(ToolInput):
    """What the model sends to start a child."""

    description: str = Field(min_length=1, max_length=120)
    """A few words saying what the child does (shown in events and in its capsule)."""
    prompt: str = Field(min_length=1)
    """The task, complete: a fresh subagent sees nothing else. For a fork, the directive."""
    resume: str | None = Field(None, pattern=f"^{_AGENT_ID}$")
    """The id of an earlier subagent to continue, with ``prompt`` as its next message."""


SUBAGENT_DESCRIPTION = (
    "Hand a self-contained task to a subagent with its own fresh context and a subset of "
    "your tools. It returns a short report, not everything it read, so use it for searches "
    "and investigations that would fill your context. Write the prompt so that it stands on "
    "its own. Several calls in one reply run in parallel. To continue an earlier subagent, "
    "pass its agent id as resume."
)
FORK_DESCRIPTION = (
    "Fork yourself: a copy of you, with this whole conversation, works on the directive in "
    "prompt and returns a short report. Several calls in one reply run in parallel and "
    "share the cached conversation, so forks are cheap. Forks cannot fork again."
)


@dataclass(eq=False)
class Subagent(Plugin):
    """The tool that starts child agents, and the plugin that reports on them.

    ``attach(parent)`` adds the tool to the parent's tools and this plugin to its plugins.
    ``tools``: the names of the parent's tools a child may use (default: all but this one).
    ``fork=True`` makes each child a :func:`fork` of the parent; otherwise a fresh agent with
    ``system`` and only those tools. The tool counts as read-only for the parent's
    permissions and batching, as Claude Code's Agent tool does: it asks nothing itself, and
    each of the child's calls is checked by the parent's permissions when the child makes
    it. So several calls in one reply run in parallel, in threads.
    """

    name: str = "subagent"
    tools: Sequence[str] | None = None
    fork: bool = False
    system: str | list[dict[str, Any]] | None = SUBAGENT_SYSTEM
    model: str | None = None
    """The model id the child asks for (a cheaper one, say); default: the parent's."""
    max_turns: int = DEFAULT_SUBAGENT_TURNS
    token_budget: int | None = None
    summary_tokens: int = DEFAULT_SUMMARY_TOKENS
    wrap_up: bool = True
    """A child that runs out of turns is asked once more, without tools, for its report."""
    plugins: Callable[[], Iterable[Plugin]] = tuple
    """Makes the extra plugins of each child (compaction, say; never for a fork)."""
    description: str = ""
    parent: BaseAgent | None = None
    capsules: dict[str, ResultCapsule] = field(default_factory=dict)
    """Every capsule, by the tool_use id (or run number) that started its child."""
    _runs: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        budget = self.token_budget
        if budget is not None and (type(budget) is not int or budget < 1):
            raise ValueError(
                f"a subagent's token budget is a whole number of tokens above 0, or None for "
                f"no budget, not {budget!r}"
            )
        if self.max_turns < 1:
            raise ValueError(f"a subagent needs at least one turn, not {self.max_turns}")
        if self.summary_tokens < MIN_SUMMARY_TOKENS:
            raise ValueError(
                f"the summary cap must be at least {MIN_SUMMARY_TOKENS} tokens, not "
                f"{self.summary_tokens}"
            )
        text = self.description or (FORK_DESCRIPTION if self.fork else SUBAGENT_DESCRIPTION)
        self.tool: Tool[SubagentInput] = Tool(
            self.name, text, SubagentInput, self._call, read_only=True
        )

    def attach(self, parent: BaseAgent) -> Subagent:
        """Give ``parent`` the tool (its definition joins the parent's tools) and this plugin."""
        runner = parent.tools
        if not isinstance(runner, ToolRunner):
            raise TypeError("a subagent tool needs an agent with a tool runner (harness.Agent)")
        existing = runner.registry.get(self.tool.name)
        if existing is None:
            runner.registry.add(self.tool)
        elif existing is not self.tool:
            raise ValueError(f"the agent already has a tool named {self.tool.name!r}")
        if self not in parent.plugins:
            parent.plugins.append(self)
        self.parent = parent
        return self

    # -- running a child ---------------------------------------------------------------------

    def run(
        self, prompt: str, *, description: str = "", key: str = "", resume: str | None = None
    ) -> ResultCapsule:
        """Run one child on ``prompt`` and return its capsule (the tool calls this).

        ``key`` names the run (the tool_use id); the child's agent id is derived from it and
        the parent's session, so a stored notebook gets the same ids every time.
        """
        parent = self._parent()
        if depth(parent) >= MAX_DEPTH:  # attached to a child: it may start none
            raise ToolError(NESTED.format(cap=MAX_DEPTH))
        if not key:
            with self._lock:
                self._runs += 1
                key = f"run-{self._runs}"
        if resume is not None and not re.fullmatch(_AGENT_ID, resume):
            raise ToolError(f"{resume!r} is not a subagent id (a and 8 hex digits)")
        writer = _transcript_of(parent)
        agent_id = resume or _agent_id(writer.session_id if writer else "", key)
        sidechain = _sidechain(writer, agent_id) if writer is not None else None
        started = parent.clock.now()
        if self.fork:
            if resume is not None:
                raise ToolError("a fork cannot be resumed; start a new fork")
            child_fork = fork(
                parent,
                prompt,
                allowed=self.tools,
                max_turns=self.max_turns,
                plugins=self._budget() + ([sidechain] if sidechain else []),
                refuse=_starters(parent, self.tool.name),
            )
            child, start, events = child_fork.agent, child_fork.start, child_fork.run()
        else:
            child = self._fresh(parent)
            if resume is not None:
                if sidechain is None or not sidechain.path.exists():
                    raise ToolError(f"no subagent {resume} in this session to resume")
                try:
                    resume_with(child, sidechain)
                except SessionNotFound as error:
                    raise ToolError(f"subagent {resume} cannot be resumed: {error}") from error
            elif sidechain is not None:
                child.plugins.append(sidechain)
            start = len(child.messages)
            events = child.run(prompt)
        try:
            capsule = self._collect(
                child,
                start,
                events,
                description or _first_line(prompt),
                agent_id,
                started,
                sidechain,
            )
        finally:
            if sidechain is not None:
                sidechain.close()
        with self._lock:
            self.capsules[key] = capsule
        return capsule

    def resume(self, agent_id: str, prompt: str, *, description: str = "") -> ResultCapsule:
        """Continue an earlier fresh subagent from its sidechain, with ``prompt``."""
        return self.run(prompt, description=description, key=f"resume-{agent_id}", resume=agent_id)

    def _call(self, args: SubagentInput, context: ToolContext) -> str:
        capsule = self.run(
            args.prompt, description=args.description, key=context.tool_use_id, resume=args.resume
        )
        return capsule.render()

    def _parent(self) -> BaseAgent:
        if self.parent is None:
            raise ToolError("this subagent tool is not attached to an agent (call attach)")
        return self.parent

    def _budget(self) -> list[Plugin]:
        return [TokenBudget(self.token_budget)] if self.token_budget is not None else []

    def _fresh(self, parent: BaseAgent) -> Agent:
        return fresh(
            parent,
            tools=self.tools,
            exclude=_starters(parent, self.tool.name),
            system=self.system,
            model=self.model,
            max_turns=self.max_turns,
            plugins=[*self.plugins(), *self._budget()],
        )

    def _collect(
        self,
        child: BaseAgent,
        start: int,
        events: Iterator[Event],
        task: str,
        agent_id: str,
        started: float,
        sidechain: Transcript | None,
    ) -> ResultCapsule:
        seen: list[Event] = []
        try:
            for event in events:
                seen.append(event)
            status, reason = outcome(seen)
        except Exception as error:  # an API error past the retries, a bug: keep its work
            status, reason = "failed", f"it failed: {_error_text(error)}"
        own = child.messages[start:]
        texts = [m.text_of(x) for x in own if x["role"] == "assistant" and m.text_of(x).strip()]
        report = texts[-1] if status == "complete" and texts else "\n\n".join(texts)
        if self.wrap_up and seen and isinstance(seen[-1], MaxTurnsReached):
            report = _wrap_up(child, sidechain) or report
        full = tokens.estimate_text(report)
        kept_in = sidechain.path.name if sidechain is not None else None
        summary, cut = cap_summary(report, self.summary_tokens, kept_in)
        calls = child.meter.calls
        priced = all(c.cost is not None for c in calls)
        return ResultCapsule(
            agent_id=agent_id,
            task=task,
            kind="fork" if self.fork else "subagent",
            status=status,
            reason=reason,
            summary=summary,
            summary_tokens=full,
            cut=cut,
            changed=changes(seen, child),
            turns=len(calls),
            tool_calls=sum(1 for e in seen if isinstance(e, ToolStarted)),
            input_tokens=sum(c.usage.input_tokens for c in calls),
            cache_write_tokens=sum(c.usage.cache_creation_input_tokens or 0 for c in calls),
            cache_read_tokens=sum(c.usage.cache_read_input_tokens or 0 for c in calls),
            output_tokens=sum(c.usage.output_tokens for c in calls),
            cost_usd=child.meter.total.total if priced else None,
            seconds=round(child.clock.now() - started, 3),
            transcript=str(sidechain.path) if sidechain is not None else None,
        )

    # -- the plugin: report each turn's capsules, in call order -------------------------------

    def after_tools(self, agent: BaseAgent, results: list[m.Block]) -> None:
        for block in results:
            capsule = self.capsules.get(str(block.get("tool_use_id")))
            if capsule is not None:
                agent.emit(SubagentFinished(capsule))


def _starters(parent: BaseAgent, own: str) -> list[str]:
    """The names of the parent's tools that start children (this one and any other
    :class:`Subagent`): a child gets none of them, or two such tools would call each other
    through their children without end."""
    names = [own]
    runner = parent.tools
    if isinstance(runner, ToolRunner):
        for name in runner.registry.names():
            tool = runner.registry.get(name)
            owner = getattr(tool.function, "__self__", None) if tool is not None else None
            if isinstance(owner, Subagent) and name != own:
                names.append(name)
    return names


def _agent_id(session: str, key: str) -> str:
    return "a" + hashlib.sha256(f"{session}:{key}".encode()).hexdigest()[:8]


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "(no task)"
    return line if len(line) <= 60 else line[:59] + "…"


def _transcript_of(agent: BaseAgent) -> Transcript | None:
    return next((p for p in agent.plugins if isinstance(p, Transcript)), None)


def _sidechain(writer: Transcript, agent_id: str) -> Transcript:
    return Transcript(
        path=sidechain_path(writer.path, agent_id),
        session_id=writer.session_id,
        cwd=writer.cwd,
        clock=writer.clock,
        ids=writer.ids,
        fsync=writer.fsync,
        sidechain=True,
        agent_id=agent_id,
    )


def _wrap_up(child: BaseAgent, sidechain: Transcript | None) -> str | None:
    """One more call for a child out of turns: the tools are not run, the report is asked
    for. It is a fork of the child (chapter 07's ``run_fork``, billed to the child); a reply
    without tool calls joins the child's conversation and its sidechain, so the report is
    kept. None if it failed (a budget stop, an API error) or said nothing."""
    try:
        wrapped = run_fork(child, WRAP_UP, tools=NoForkTools(), purpose="wrap-up", max_turns=1)
    except Exception:  # keep what the child wrote so far
        return None
    if not wrapped.text.strip() or len(wrapped.messages) != 2:
        return None
    asked, answer = wrapped.messages
    if m.tool_uses(answer):  # it asked for tools anyway: its text is kept, not the calls
        answer = m.assistant([b for b in m.blocks(answer) if b.get("type") != "tool_use"])
    last = child.messages[-1]
    last["content"] = asked["content"]  # the child's own message: the directive joins it
    child.messages.append(answer)
    if sidechain is not None:
        sidechain.sync(child.messages, reply=wrapped.replies[-1])
    return wrapped.text


def _error_text(error: Exception) -> str:
    """An error in one short line: an API error's own message (not its whole body)."""
    body = getattr(error, "body", None)
    detail = body.get("error") if isinstance(body, dict) else None
    message = detail.get("message") if isinstance(detail, dict) else None
    status = getattr(error, "status_code", None)
    text = f"{status} {message}" if message and status else str(error)
    flat = " ".join(f"{type(error).__name__}: {text}".split())
    return flat if len(flat) <= 200 else flat[:199] + "…"
