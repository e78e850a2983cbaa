"""The course's map of the package: which chapter builds each module, and what each adds.

:data:`CHAPTER` is the one list of every module with the chapter that builds it. The
architecture test reads it (no module may import one from a later chapter), and so does the
course's website, which shows on each chapter's page what that chapter adds to the package:
:func:`chapter_modules`, and for each module :func:`facts` (its size, its summary line, the
loop points its plugins use and the tools it defines), read from the code itself.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
from dataclasses import dataclass, field
from pathlib import Path

from harness.loop import Plugin
from harness.tools.base import Tool

OPTIONAL: dict[str, str] = {"harness.evals.inspect_tasks": "inspect_ai"}
"""Modules that import a package of an optional dependency group, and that package: chapter
15's Inspect tasks need Inspect (the ``evals`` group, about 80 packages, which a plain
``uv run`` does not install). Every other module imports with the default install."""

CHAPTER: dict[str, int] = {
    # 00: the model boundary, and what it needs.
    "harness.clock": 0,
    "harness.messages": 0,
    "harness.messages.builders": 0,
    "harness.messages.rules": 0,
    "harness.messages.validation": 0,
    "harness.messages.rounds": 0,
    "harness.tokens": 0,
    "harness.pricing": 0,
    "harness.model": 0,
    "harness.model.base": 0,
    "harness.model.models": 0,
    "harness.model.live": 0,
    "harness.model.faults": 0,
    # The cache simulator is taught in chapter 03, but it is part of the scripted model:
    # from the first request, the model answers cache fields the way the API does.
    "harness.model.cache": 0,
    "harness.model.cache.prefix": 0,
    "harness.model.cache.minimums": 0,
    "harness.model.cache.breakpoints": 0,
    "harness.model.cache.misses": 0,
    "harness.model.cache.simulator": 0,
    "harness.model.scripted": 0,
    "harness.model.scripted.script": 0,
    "harness.model.scripted.rules": 0,
    "harness.model.scripted.replies": 0,
    "harness.model.scripted.streaming": 0,
    "harness.model.scripted.model": 0,
    "harness.model.default": 0,
    "harness.notebook.views": 0,
    # The exercise checks: one module per chapter, each at its chapter.
    "harness.exercises": 0,
    "harness.exercises.ch00": 0,
    "harness.exercises.ch01": 1,
    "harness.exercises.ch02": 2,
    "harness.exercises.ch03": 3,
    "harness.exercises.ch04": 4,
    "harness.exercises.ch05": 5,
    "harness.exercises.ch06": 6,
    # 01: the loop.
    "harness.events": 1,
    "harness.points": 1,
    "harness.loop": 1,
    # 02: tools, and the agent that builds their runner.
    "harness.tools": 2,
    "harness.tools.workspace": 2,
    "harness.tools.base": 2,
    "harness.tools.shell": 2,
    "harness.tools.sandbox": 2,
    "harness.tools.files": 2,
    "harness.tools.search": 2,
    "harness.tools.builtins": 2,
    "harness.tools.permissions": 2,
    "harness.tools.hooks": 2,
    "harness.tools.owned": 2,
    "harness.tools.storage": 2,
    "harness.tools.outputs": 2,
    "harness.tools.dispatch": 2,
    "harness.agent": 2,
    "harness.notebook.approvals": 2,
    # 03: the system prompt and the prompt cache.
    "harness.prompt": 3,
    "harness.notebook.cache": 3,
    "harness.notebook.turns": 3,
    "harness.notebook": 3,
    # 04: the context budget and microcompact.
    "harness.compaction": 4,
    "harness.compaction.events": 4,
    "harness.compaction.context": 4,
    "harness.compaction.microcompact": 4,
    "harness.notebook.sessions": 4,
    # 05: full compaction and auto-compact.
    "harness.compaction.pinned": 5,
    "harness.compaction.reinject": 5,
    "harness.compaction.summary": 5,
    "harness.compaction.auto": 5,
    "harness.model.scripted_summary": 5,
    "harness.notebook.long_context": 5,
    # 06: error recovery.
    "harness.recovery": 6,
    "harness.recovery.policy": 6,
    "harness.recovery.failures": 6,
    "harness.recovery.events": 6,
    "harness.recovery.plugin": 6,
    "harness.notebook.recovery": 6,
    # 07: session memory, its fork, and tier 2.
    "harness.fork": 7,
    "harness.memory": 7,
    "harness.memory.facts": 7,
    "harness.memory.fileformat": 7,
    "harness.memory.budgets": 7,
    "harness.memory.editor": 7,
    "harness.memory.extraction": 7,
    "harness.memory.plugin": 7,
    "harness.atomic": 7,
    "harness.compaction.session_memory": 7,
    "harness.model.scripted_memory": 7,
    "harness.notebook.memory": 7,
    "harness.exercises.ch07": 7,
    "harness.transcript": 8,
    "harness.transcript.entries": 8,
    "harness.transcript.reading": 8,
    "harness.transcript.chain": 8,
    "harness.transcript.conversation": 8,
    "harness.transcript.loading": 8,
    "harness.transcript.checking": 8,
    "harness.transcript.repairing": 8,
    "harness.transcript.writer": 8,
    "harness.resume": 8,
    "harness.resume.sessions": 8,
    "harness.resume.resuming": 8,
    "harness.resume.steps": 8,
    "harness.notebook.transcripts": 8,
    "harness.exercises.ch08": 8,
    "harness.approvals": 9,
    "harness.approvals.errors": 9,
    "harness.approvals.snapshot": 9,
    "harness.approvals.rows": 9,
    "harness.approvals.store": 9,
    "harness.approvals.gate": 9,
    "harness.approvals.resuming": 9,
    "harness.approvals.terminal": 9,
    "harness.notebook.inbox": 9,
    "harness.exercises.ch09": 9,
    # 10: subagents and forks.
    "harness.subagents": 10,
    "harness.subagents.capsule": 10,
    "harness.subagents.children": 10,
    "harness.subagents.tool": 10,
    "harness.subagents.proof": 10,
    "harness.subagents.past": 10,
    "harness.notebook.subagents": 10,
    "harness.exercises.ch10": 10,
    # chapter 11: the command line
    "harness.cli.report": 11,
    "harness.cli.terminal": 11,
    "harness.notebook.capstone": 11,
    "harness.exercises.ch11": 11,
    "harness.course": 11,
    # 12: planning.
    "harness.planning": 12,
    "harness.planning.todos": 12,
    "harness.planning.tool": 12,
    "harness.planning.reminders": 12,
    "harness.planning.plan_mode": 12,
    "harness.planning.progress": 12,
    "harness.planning.plugin": 12,
    "harness.notebook.planning": 12,
    "harness.exercises.ch12": 12,
    "harness.exercises.ch12_sessions": 12,
    "harness.notebook.planning_views": 12,
    "harness.notebook.progress_run": 12,
    # 13: skills, slash commands and hooks as configuration, in Claude Code's formats.
    "harness.skills": 13,
    "harness.skills.frontmatter": 13,
    "harness.skills.arguments": 13,
    "harness.skills.discovery": 13,
    "harness.skills.render": 13,
    "harness.skills.listing": 13,
    "harness.skills.injection": 13,
    "harness.skills.session": 13,
    "harness.skills.tool": 13,
    "harness.skills.commands": 13,
    "harness.settings": 13,
    "harness.settings.schema": 13,
    "harness.settings.files": 13,
    "harness.settings.trust": 13,
    "harness.settings.claude_names": 13,
    "harness.settings.command": 13,
    "harness.settings.protocol": 13,
    "harness.settings.running": 13,
    "harness.settings.combine": 13,
    "harness.settings.hooks": 13,
    "harness.settings.session": 13,
    "harness.notebook.extensions": 13,
    "harness.notebook.extensions_runs": 13,
    "harness.notebook.extensions_views": 13,
    "harness.exercises.ch13": 13,
    "harness.exercises.ch13_cases": 13,
    "harness.notebook.extensions_hooks": 13,
    # 14: MCP servers' tools, over stdio with the official SDK, and tool search.
    "harness.mcp": 14,
    "harness.mcp.names": 14,
    "harness.mcp.config": 14,
    "harness.mcp.schema": 14,
    "harness.mcp.results": 14,
    "harness.mcp.connection": 14,
    "harness.mcp.tools": 14,
    "harness.mcp.search": 14,
    "harness.mcp.session": 14,
    "harness.mcp.servers": 14,
    "harness.mcp.servers.course": 14,
    "harness.mcp.servers.many": 14,
    "harness.mcp.servers.hostile": 14,
    "harness.notebook.mcp": 14,
    "harness.notebook.mcp_views": 14,
    "harness.exercises.ch14": 14,
    "harness.exercises.ch14_cases": 14,
    "harness.exercises.ch14_search": 14,
    # The command line is built in 11; a module wiring in a later mechanism is its chapter's.
    "harness.cli.todos": 12,
    "harness.cli.extensions": 13,
    "harness.cli.sessions": 11,
    "harness.cli.demo": 14,
    "harness.cli.mcp": 14,
    # 15: background work, traces and evals.
    "harness.model.latency": 15,
    "harness.background": 15,
    "harness.background.keeper": 15,
    "harness.background.logs": 15,
    "harness.background.processes": 15,
    "harness.background.scripted": 15,
    "harness.background.shells": 15,
    "harness.background.tools": 15,
    "harness.background.plugin": 15,
    "harness.cli.background": 15,
    "harness.tracing": 15,
    "harness.tracing.names": 15,
    "harness.tracing.settings": 15,
    "harness.tracing.providers": 15,
    "harness.tracing.content": 15,
    "harness.tracing.events": 15,
    "harness.tracing.plugin": 15,
    "harness.cli.tracing": 15,
    "harness.notebook.tracing": 15,
    "harness.notebook.waterfall": 15,
    "harness.evals": 15,
    "harness.evals.configs": 15,
    "harness.evals.policy": 15,
    "harness.evals.trial": 15,
    "harness.evals.tasks": 15,
    "harness.evals.tasks_long": 15,
    "harness.evals.tasks_context": 15,
    "harness.evals.tasks_failures": 15,
    "harness.evals.tasks_background": 15,
    "harness.evals.tasks_memory": 15,
    "harness.evals.runner": 15,
    "harness.evals.table": 15,
    "harness.evals.inspect_tasks": 15,
    "harness.notebook.ablation": 15,
    "harness.exercises.ch15": 15,
    "harness.exercises.ch15_logs": 15,
    "harness.exercises.ch15_spans": 15,
    "harness.notebook.background": 15,
    "harness.notebook.traced_views": 15,
    # The command line gains background shells (and a trace flag): it moves to 15.
    "harness.cli": 15,
    "harness.cli.program": 15,
    "harness.cli.assemble": 15,
    "harness.cli.commands": 15,
    "harness.__main__": 15,
}


# Where a plugin can plug in: the methods of the loop's Plugin, in the order a turn meets them.
POINTS: tuple[str, ...] = (
    "before_prompt",
    "before_request",
    "call_model",
    "after_reply",
    "on_tool_progress",
    "after_tools",
    "on_rewrite",
    "on_stop",
)


def chapter_modules(chapter: int) -> list[str]:
    """The modules a chapter builds, sorted by name."""
    return sorted(name for name, number in CHAPTER.items() if number == chapter)


@dataclass(frozen=True)
class ModuleFacts:
    """What one module adds, read from its code."""

    name: str
    chapter: int
    path: str
    """The file, relative to the project: ``harness/loop.py``."""
    lines: int
    """Lines of code: not blank, not a comment (docstrings count: they are the reference)."""
    summary: str
    """The first sentence of the module's docstring."""
    plugins: dict[str, list[str]] = field(default_factory=dict)
    """Each plugin class the module defines, and the loop points it overrides."""
    tools: list[str] = field(default_factory=list)
    """The names of the tools the module defines at its top level."""
    defines_points: bool = False
    """Whether the module defines the loop's points themselves (the ``Plugin`` base class)."""

    @property
    def points(self) -> list[str]:
        """The loop points the module defines or its plugins use, in the order a turn meets
        them."""
        used = {p for points in self.plugins.values() for p in points}
        return [p for p in POINTS if self.defines_points or p in used]

    """The names of the tools the module defines at its top level."""


def source_path(name: str) -> Path:
    """The file of a module of the package (``harness.tools`` is ``harness/tools/__init__.py``)."""
    root = Path(__file__).resolve().parent.parent
    base = root.joinpath(*name.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def code_lines(text: str) -> int:
    """Lines that are neither blank nor only a comment."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def first_sentence(doc: str | None) -> str:
    """The docstring's first paragraph, cut after its first sentence."""
    paragraph = " ".join((doc or "").strip().split("\n\n")[0].split())
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[: end + 1]


def plug_points(cls: type[Plugin]) -> list[str]:
    """The loop points a plugin class overrides (its own or inherited from a base below
    :class:`~harness.loop.Plugin`), in the order a turn meets them."""
    return [point for point in POINTS if getattr(cls, point) is not getattr(Plugin, point)]


def importable(name: str) -> bool:
    """Whether module ``name`` imports with what is installed: every module does with the
    default install, except those of :data:`OPTIONAL` whose package is missing."""
    needed = OPTIONAL.get(name)
    return needed is None or importlib.util.find_spec(needed) is not None


def facts(name: str) -> ModuleFacts:
    """What module ``name`` adds. It imports the module (the package's imports have no side
    effects) and reads its source file; a module of :data:`OPTIONAL` whose package is not
    installed is read from its source alone (it defines no plugin and no tool)."""
    path = source_path(name)
    plugins: dict[str, list[str]] = {}
    tools: list[str] = []
    if importable(name):
        module = importlib.import_module(name)
        doc = module.__doc__
        plugins = {
            cls.__name__: plug_points(cls)
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, Plugin) and cls is not Plugin and cls.__module__ == name
        }
        tools = sorted(
            value.name
            for attribute, value in vars(module).items()
            if isinstance(value, Tool)
            and not attribute.startswith("_")
            and getattr(value.function, "__module__", name) == name  # defined here, not imported
        )
    else:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    root = Path(__file__).resolve().parent.parent
    return ModuleFacts(
        name=name,
        chapter=CHAPTER[name],
        path=path.relative_to(root).as_posix(),
        lines=code_lines(path.read_text(encoding="utf-8")),
        summary=first_sentence(doc),
        plugins=plugins,
        tools=tools,
        defines_points=Plugin.__module__ == name,
    )
