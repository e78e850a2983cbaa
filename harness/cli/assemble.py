"""Every chapter's mechanism on one agent: what the command line (and chapter 11) runs.

:func:`assemble` builds the agent the way Claude Code's is built, from the modules of the
course and nothing else:

* the model: live (chapter 00's ``AnthropicModel``) when ``ANTHROPIC_API_KEY`` is set, else
  the offline demo model (:mod:`harness.cli.demo`);
* the six workspace tools under a permission mode, asking ``approver`` (chapter 02), plus a
  ``subagent`` tool for fresh read-only children and a ``fork`` tool (chapter 10), and
  planning's ``todo_write`` and ``exit_plan_mode`` (chapter 12: a fork may use neither, since
  the list and the mode are its parent's);
* the system prompt in sections, CLAUDE.md files included, with cache breakpoints (chapter 03);
* the plugins, outermost first: ``extra`` (the terminal's progress display), prompt caching
  (03), planning (12: inside caching, so its reminders go after the breakpoint, and outside
  recovery, so a retried call carries the same reminder), error recovery (06), the
  transcript (08: the reply is on disk before anything else looks at it), session memory
  (07), microcompact (04), and auto-compact with session memory as tier 2 (05, 07); auto-compact
  and planning share their pinned facts, so every compaction puts the todo list back;
* what the user configured in Claude Code's files (chapter 13, :mod:`harness.cli.extensions`):
  skills (the ``Skill`` tool and their listing among the static sections of the prompt), slash
  commands, and hooks from the settings files, which run through the tool runner's hook points
  and as a plugin after recovery (a prompt a hook refuses is never sent; a Stop hook may send
  the model back to work), behind the folder-trust question ``ask_trust`` asks;
* the tools of the MCP servers (chapter 14, :mod:`harness.cli.mcp`), started once by the
  program and shared by its sessions, with the names of deferred ones in the static sections;
* background shells (chapter 15, :mod:`harness.background`): ``bash`` takes
  ``run_in_background``, ``task_output`` and ``task_stop`` join the tools, and the
  ``BackgroundWork`` plugin (after planning: its notifications go after the cache breakpoint,
  and a retried call carries the same one) tells the model when a shell finished. The shells
  belong to the session: :meth:`Harness.close` stops them, and the command line calls it
  whenever a session ends (``/clear``, ``/exit``, the end of ``-p``, an error, Ctrl-C).

One :class:`Harness` is one session: ``/clear`` builds a new one, ``--resume`` builds one
and loads a transcript into it (chapter 08). Its session memory lives beside its transcript,
in ``<session-id>/session-memory/MEMORY.md``, as its subagents' sidechains do. A resumed
session whose memory file cannot be used (broken by hand, say) goes on without session
memory, and the file is left as it is: :attr:`Harness.memory_error` says why.

With :attr:`Options.progress`, the session starts from a progress file (chapter 12): its
checklist becomes the todo list and its text the :attr:`Harness.briefing` the first prompt
is sent after; the file is rewritten whenever the list changes. A resumed session keeps the
list its conversation holds (the file's only if it holds none). A file that is there but
cannot be used is left as it is, and the session goes on without one:
:attr:`Harness.progress_error` says why.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harness.agent import Agent
from harness.background import BackgroundShells, BackgroundWork, Processes, Spawner
from harness.cli.demo import demo_model
from harness.cli.extensions import AskTrust, Extensions, load_extensions, never_trust
from harness.cli.mcp import McpServers, Offer
from harness.cli.sessions import expand, transcript_path
from harness.clock import Clock, RealClock
from harness.compaction.auto import AutoCompact
from harness.compaction.microcompact import Microcompact
from harness.compaction.pinned import PinnedFacts
from harness.compaction.session_memory import SessionMemoryCompaction
from harness.loop import AgentConfig, Plugin
from harness.memory import SessionMemory, SessionMemoryError
from harness.model import AnthropicModel, Model
from harness.model.base import is_live, model_name
from harness.model.models import context_window_of
from harness.planning import EXIT_PLAN_TOOL, TODO_TOOL, Planning, ProgressFile, list_in
from harness.prompt import (
    PromptCaching,
    Section,
    SystemPrompt,
    default_sections,
    discover_claude_md,
    environment_section,
    memory_section,
)
from harness.recovery import Recovery
from harness.resume import Resume, Sessions, resume_with
from harness.subagents import Subagent
from harness.tokens import ContextBudget
from harness.tools.builtins import builtin_tools
from harness.tools.hooks import Hooks
from harness.tools.permissions import Approver, Mode, Permissions, deny_all
from harness.tools.workspace import Workspace
from harness.transcript import Transcript, random_ids

# Claude Code's names for the permission modes, and the course's own (chapter 02).
MODES: dict[str, Mode] = {
    "default": "default",
    "acceptEdits": "accept_edits",
    "accept_edits": "accept_edits",
    "plan": "plan",
    "bypassPermissions": "bypass",
    "bypass": "bypass",
}

EXPLORER_TOOLS = ("read_file", "glob", "grep")
"""What a fresh subagent may use: reading only, like Claude Code's Explore agent."""
PLANNING_TOOLS = (TODO_TOOL, EXIT_PLAN_TOOL)
"""The session's own planning tools: a fork may not call them."""


@dataclass
class Options:
    """What the command line's flags set."""

    workspace: Path = field(default_factory=Path.cwd)
    model: str | None = None
    """The model id (``--model``); default ``HARNESS_MODEL`` or the course's default."""
    permission_mode: Mode = "default"
    max_turns: int = 50
    sessions_root: Path | None = None
    """Where transcripts go (``--sessions``): default ``<workspace>/.harness``; Claude Code's
    own are under ``~/.claude``."""
    env: Mapping[str, str] | None = None
    """Where the key is looked for (``None``: the process environment)."""
    context_window: int | None = None
    """The window the session compacts by; ``None``: the model's, from the course's model
    table (``harness.model.models``: 1M for the default model)."""
    home: Path | None = None
    """Where the user's ``~/.claude/CLAUDE.md`` is looked for (``None``: the home folder)."""
    progress: Path | None = None
    """The progress file (``--progress``), relative to the workspace; ``None``: none."""
    managed_dir: Path | None = None
    """Where the machine's managed settings are (``/etc/claude-code`` for the command line);
    ``None``: none are read."""

    @property
    def live(self) -> bool:
        return is_live(self.env)

    @property
    def model_id(self) -> str:
        """The model id requests ask for: ``--model``, else ``HARNESS_MODEL``, else the default."""
        return self.model or model_name(self.env)

    @property
    def window(self) -> int:
        """``context_window`` if set, else the window of :attr:`model_id` in the model table."""
        return self.context_window or context_window_of(self.model_id)


@dataclass
class Harness:
    """One session of the assembled agent, and handles on its mechanisms."""

    agent: Agent
    sessions: Sessions
    transcript: Transcript
    memory: SessionMemory
    auto: AutoCompact
    recovery: Recovery
    caching: PromptCaching
    subagent: Subagent
    fork: Subagent
    claude_md: list[str]
    """The CLAUDE.md files in the system prompt, as the model sees them named."""
    planning: Planning
    """The todo list, its reminders, plan mode and the progress file (chapter 12)."""
    resumed: Resume | None = None
    memory_error: SessionMemoryError | None = None
    """Why the resumed session's memory file could not be read (then session memory is off
    for this session: neither extracted nor used by auto-compact, and the file untouched)."""
    briefing: str = ""
    """What the progress file says, to send in front of the first prompt (``""``: nothing)."""
    progress_error: str | None = None
    """Why the progress file could not be used (then this session has none, and the file is
    left as it is)."""
    extensions: Extensions | None = None
    """Skills, commands, settings hooks and folder trust (chapter 13)."""
    background: BackgroundWork | None = None
    """The session's background shells and their plugin (chapter 15)."""

    def close(self) -> None:
        """End the session's own processes: every background shell is stopped. Safe to call
        twice; the transcript and memory stay on disk."""
        if self.background is not None:
            self.background.close()

    @property
    def session_id(self) -> str:
        # resume() replaces the writer: the one in the agent's plugins is the truth.
        found = [p for p in self.agent.plugins if isinstance(p, Transcript)]
        return found[-1].session_id if found else self.transcript.session_id


def sessions_for(options: Options, *, clock: Clock, ids: Iterable[str] | None = None) -> Sessions:
    """The sessions of the workspace: ``--sessions`` or ``<workspace>/.harness``."""
    workspace = options.workspace.resolve()
    root = expand(options.sessions_root).resolve() if options.sessions_root else None
    sessions = Sessions(root or workspace / ".harness", workspace, clock)
    if ids is not None:
        source = iter(ids)
        sessions.ids = lambda: next(source)
    else:
        sessions.ids = random_ids
    return sessions


def system_prompt(
    workspace: Path,
    tool_names: Iterable[str],
    clock: Clock,
    home: Path | None = None,
    extra: Iterable[Section] = (),
) -> tuple[list[dict[str, object]], list[str]]:
    """Chapter 03's prompt: the static sections (and ``extra`` ones, such as chapter 13's
    listing of skills), then the dynamic ones (environment, CLAUDE.md). Also returns the
    CLAUDE.md files it holds, by the name the model sees."""
    files = discover_claude_md(workspace, home=home)
    sections: list[Section] = [
        *default_sections(tool_names),
        *extra,
        environment_section(clock, workspace_name=workspace.name),
    ]
    if (memory := memory_section(files)) is not None:
        sections.append(memory)
    return list(SystemPrompt(tuple(sections)).render()), [f.label for f in files]


def model_for(options: Options, clock: Clock) -> Model:
    """Live with a key (the SDK reads ``ANTHROPIC_BASE_URL`` too), else the demo model."""
    if options.live:
        return AnthropicModel()
    # Ids unique to this process: a resumed session already holds the last one's.
    prefix = f"demo{secrets.token_hex(4)}"
    return demo_model(clock=clock, context_window=options.window, id_prefix=prefix)


def assemble(
    options: Options,
    *,
    approver: Approver = deny_all,
    clock: Clock | None = None,
    extra: Iterable[Plugin] = (),
    sessions: Sessions | None = None,
    session: str | Path | Literal["latest"] | None = None,
    model: Model | None = None,
    fsync: bool = True,
    ask_trust: AskTrust = never_trust,
    mcp: McpServers | None = None,
    spawner: Spawner | None = None,
    background: bool = True,
    leave_out: Collection[str] = (),
) -> Harness:
    """The agent with every mechanism, on a new session or, with ``session``, a resumed one.

    ``session`` is a session id, ``"latest"`` (the last session bound in this folder, else the
    newest file: ``--continue``), or the path of a ``.jsonl`` transcript (Claude Code's, say).
    Raises :class:`~harness.resume.SessionNotFound` when there is nothing to resume.
    ``ask_trust`` asks whether the project's own hooks may run (default: nobody to ask, so
    they do not). ``mcp``: the program's MCP servers (started by the first session).
    ``spawner``: what runs background commands (default: real processes, in chapter 02's
    sandbox; :class:`~harness.background.Scripted` stand-ins in tests and notebooks);
    ``background=False``: chapter 02's ``bash`` alone, no background shells (the session of
    chapters 11 to 14). ``leave_out``: names of tools the session goes without (an eval's
    configuration, chapter 15): they are neither offered nor named on the prompt's tool line,
    so a model is never told of a tool it cannot call (``subagent``, ``fork``: not attached).
    """
    clock = clock or RealClock()
    workspace = Workspace(options.workspace)
    sessions = sessions or sessions_for(options, clock=clock)
    model = model or model_for(options, clock)
    permissions = Permissions(mode=options.permission_mode, workspace=workspace)
    pinned = PinnedFacts()
    planning = Planning(
        pinned=pinned, permissions=permissions, progress=progress_file(options, workspace, clock)
    )
    path = transcript_path(sessions, session)
    session_id = path.stem if path is not None else sessions.ids()
    extensions = load_extensions(
        workspace,
        home=options.home if options.home is not None else Path.home(),
        permissions=permissions,
        session_id=session_id,
        transcript_path=path or sessions.path(session_id),
        ask_trust=ask_trust,
        managed_dir=options.managed_dir,
        context_window=options.window,
        resumed=path is not None,
    )
    skills = extensions.skills
    offer = mcp.offer(extensions.settings) if mcp is not None else Offer()
    workspace_tools = builtin_tools()
    work: BackgroundWork | None = None
    if background:
        work = BackgroundWork(BackgroundShells(clock=clock, spawner=spawner or Processes()))
        # Chapter 02's bash gives its place to the one that also runs in the background.
        workspace_tools = [t for t in workspace_tools if t.name != "bash"] + work.tools()
    gone = frozenset(leave_out)
    tools = [
        t
        for t in [*workspace_tools, *planning.tools(), *skills.tools(), *offer.tools]
        if t.name not in gone
    ]
    names = [n for n in [t.name for t in tools] + ["subagent", "fork"] if n not in gone]
    listing = [s for s in (skills.section, offer.section) if s is not None]
    shown = offer.listed(names)
    system, claude_md = system_prompt(workspace.root, shown, clock, options.home, listing)
    budget = ContextBudget(window=options.window)
    transcript = Transcript(
        path=path or sessions.path(session_id),
        session_id=session_id,
        cwd=str(sessions.cwd),
        clock=clock,
        ids=sessions.ids,
        fsync=fsync,
    )
    memory = SessionMemory(
        transcript.path.with_suffix("") / "session-memory" / "MEMORY.md", root=sessions.folder
    )
    auto = AutoCompact(budget, pinned=pinned, session_memory=SessionMemoryCompaction(memory))
    recovery, caching = Recovery(), PromptCaching()
    plugins: list[Plugin] = [
        *extra,
        caching,
        planning,
        *([work] if work is not None else []),
        recovery,
    ]
    plugins += [extensions.hooks, *offer.plugins]
    if path is None:
        plugins.append(transcript)  # a resumed session's writer joins once it is loaded
    plugins += [memory, Microcompact(), auto]
    agent = Agent(
        model,
        tools=tools,
        workspace=workspace,
        permissions=permissions,
        approver=approver,
        hooks=extensions.hooks.install(Hooks()),
        system=system,
        clock=clock,
        config=AgentConfig(
            model=options.model_id,
            max_turns=options.max_turns,
            context_window=options.window,
        ),
        plugins=plugins,
    )
    subagent = Subagent(name="subagent", tools=tuple(n for n in EXPLORER_TOOLS if n not in gone))
    # A fork keeps every definition (the cache's bytes) but may not write its parent's list
    # nor leave its parent's plan mode: those calls are refused by a deny rule.
    allowed = [n for n in names if n not in PLANNING_TOOLS]
    forked = Subagent(name="fork", fork=True, tools=allowed)
    for child in (subagent, forked):
        if child.name not in gone:
            child.attach(agent)
    harness = Harness(
        agent,
        sessions,
        transcript,
        memory,
        auto,
        recovery,
        caching,
        subagent,
        forked,
        claude_md,
        planning,
        extensions=extensions,
        background=work,
    )
    harness.briefing = planning.start()
    if planning.progress_error is not None:  # there, but unusable: Planning left it alone
        harness.progress_error = planning.progress_error
        planning.todos.problems.clear()  # said once, at start-up, by the command line
    if path is not None:
        harness.resumed = resume_with(agent, transcript)
        if list_in(agent.messages) is not None:  # the conversation's list, not the file's
            planning.restore(agent.messages)
            harness.briefing = ""
        agent.plugins.remove(transcript)  # back where a new session has it: before memory
        agent.plugins.insert(agent.plugins.index(memory), transcript)
        try:
            memory.load(clock.now())  # the session's memory, if it had one
        except SessionMemoryError as error:
            # A file a person broke (or a link out of the folder) is theirs to fix: the
            # session goes on without memory rather than extract over it or stop.
            harness.memory_error = error
            agent.plugins.remove(memory)
            auto.session_memory = None
    return harness


def progress_file(options: Options, workspace: Workspace, clock: Clock) -> ProgressFile | None:
    """The session's progress file (:attr:`Options.progress`, under the workspace unless
    absolute), or ``None`` without one."""
    if options.progress is None:
        return None
    return ProgressFile(workspace.root / expand(options.progress), clock=clock)


__all__ = [
    "EXPLORER_TOOLS",
    "MODES",
    "PLANNING_TOOLS",
    "Harness",
    "Options",
    "assemble",
    "expand",
    "model_for",
    "progress_file",
    "sessions_for",
    "system_prompt",
    "transcript_path",
]
