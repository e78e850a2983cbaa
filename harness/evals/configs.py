"""Configurations: the full harness, and the harness with exactly one mechanism left out.

The full harness is what the command line runs, :func:`harness.cli.assemble.assemble`. A
configuration names the tools to leave out of the assembly (``assemble(..., leave_out=...)``:
they are then neither offered nor named on the system prompt's tool line, so the model is
never told of a tool it cannot call), and is applied *after* assembling, by taking one thing
out of that very agent (a plugin, a setting), so that each configuration differs from the
full harness in that one place only, and the assembly is never copied: a change to
``assemble`` is a change to every configuration.

What each leaves out:

* **no cache breakpoints**: chapter 03's :class:`~harness.prompt.PromptCaching` and the system
  prompt's own breakpoint (requests go without ``cache_control``: every prompt is read at the
  full input price);
* **no microcompact**: chapter 04's tier 1 (old tool results stay until a compaction);
* **no tier 2**: chapter 07's session-memory compaction (auto-compact goes straight to a
  summary, a model call); session memory itself is still extracted;
* **no auto-compact**: chapter 05's :class:`~harness.compaction.auto.AutoCompact` (only
  error recovery's reactive compaction is left, after a prompt-too-long refusal or a reply
  cut at the window's end);
* **no recovery**: chapter 06's :class:`~harness.recovery.Recovery` (an API error ends the
  run);
* **no subagents**: chapter 10's ``subagent`` and ``fork`` tools;
* **no transcript**: chapter 08's :class:`~harness.transcript.Transcript` (nothing is on disk,
  so nothing can be resumed: neither after a crash nor after an approval);
* **no background shells**: chapter 15's background work (``bash`` is chapter 02's again: it
  blocks until the command ends or times out; ``task_output`` and ``task_stop`` go).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.background import BackgroundWork
from harness.cli.assemble import Harness
from harness.compaction.microcompact import Microcompact
from harness.loop import Plugin
from harness.tools.base import Tool, ToolContext
from harness.tools.dispatch import ToolRunner
from harness.tools.shell import BashInput
from harness.tools.shell import bash as chapter02_bash
from harness.transcript import Transcript


@dataclass(frozen=True)
class Configuration:
    """A way to run the harness: assembled without the tools in ``leave_out``, then ``apply``
    takes the rest of one mechanism out of the assembled harness."""

    name: str
    removes: str
    """What is left out, in a few words (``""`` for the full harness)."""
    apply: Callable[[Harness], None]
    leave_out: tuple[str, ...] = ()
    """Tools the assembly goes without (``assemble(..., leave_out=...)``)."""

    def __str__(self) -> str:
        return self.name


def _nothing(_harness: Harness) -> None:
    """The full harness: as assembled."""


def _without_plugins(harness: Harness, kind: type[Plugin]) -> None:
    harness.agent.plugins[:] = [p for p in harness.agent.plugins if not isinstance(p, kind)]


def _no_cache(harness: Harness) -> None:
    harness.agent.plugins.remove(harness.caching)
    system = harness.agent.system
    if isinstance(system, list):  # the prompt's own breakpoint, at its static sections' end
        harness.agent.system = [
            {k: v for k, v in block.items() if k != "cache_control"} for block in system
        ]


def _no_microcompact(harness: Harness) -> None:
    _without_plugins(harness, Microcompact)


def _no_tier2(harness: Harness) -> None:
    harness.auto.session_memory = None


def _no_auto_compact(harness: Harness) -> None:
    harness.agent.plugins.remove(harness.auto)


def _no_recovery(harness: Harness) -> None:
    harness.agent.plugins.remove(harness.recovery)


def _no_transcript(harness: Harness) -> None:
    _without_plugins(harness, Transcript)


def _no_background(harness: Harness) -> None:
    work = harness.background
    if work is None:
        return
    _without_plugins(harness, BackgroundWork)  # task_output and task_stop: left out
    runner = harness.agent.tools
    if not isinstance(runner, ToolRunner):  # assemble always builds a ToolRunner
        raise TypeError("the assembled agent has no tool runner")
    # Chapter 02's bash in its place: the same input, no run_in_background; it still runs
    # through the session's spawner, so a stand-in command stays a stand-in.
    shells = work.shells

    def foreground(args: BashInput, context: ToolContext) -> str:
        return shells.foreground(args, context)

    blocking = Tool("bash", chapter02_bash.description, BashInput, foreground)
    # The registry has no replacement (its order is part of the prompt): rebuild it in order.
    tools = [
        blocking if n == "bash" else t
        for n in runner.registry.names()
        if (t := runner.registry.get(n)) is not None
    ]
    runner.registry = type(runner.registry)(tools)


FULL = Configuration("full", "", _nothing)
NO_CACHE = Configuration("no cache breakpoints", "prompt caching (ch03)", _no_cache)
NO_MICROCOMPACT = Configuration("no microcompact", "tier 1 (ch04)", _no_microcompact)
NO_TIER2 = Configuration("no tier 2", "session-memory compaction (ch07)", _no_tier2)
NO_AUTO_COMPACT = Configuration("no auto-compact", "auto-compact (ch05)", _no_auto_compact)
NO_RECOVERY = Configuration("no recovery", "error recovery (ch06)", _no_recovery)
NO_SUBAGENTS = Configuration(
    "no subagents", "subagents and forks (ch10)", _nothing, leave_out=("subagent", "fork")
)
NO_TRANSCRIPT = Configuration("no transcript", "transcript and resume (ch08)", _no_transcript)
NO_BACKGROUND = Configuration(
    "no background shells",
    "background work (ch15)",
    _no_background,
    leave_out=("task_output", "task_stop"),
)

CONFIGURATIONS: tuple[Configuration, ...] = (
    FULL,
    NO_CACHE,
    NO_MICROCOMPACT,
    NO_TIER2,
    NO_AUTO_COMPACT,
    NO_RECOVERY,
    NO_SUBAGENTS,
    NO_TRANSCRIPT,
    NO_BACKGROUND,
)
"""The full harness first, then one configuration per mechanism left out."""


def configuration(name: str) -> Configuration:
    """The configuration called ``name`` (raises :class:`KeyError` naming the known ones)."""
    for config in CONFIGURATIONS:
        if config.name == name:
            return config
    known = ", ".join(c.name for c in CONFIGURATIONS)
    raise KeyError(f"no configuration called {name!r}; the configurations are: {known}")


__all__ = [
    "CONFIGURATIONS",
    "FULL",
    "NO_AUTO_COMPACT",
    "NO_BACKGROUND",
    "NO_CACHE",
    "NO_MICROCOMPACT",
    "NO_RECOVERY",
    "NO_SUBAGENTS",
    "NO_TIER2",
    "NO_TRANSCRIPT",
    "Configuration",
    "configuration",
]
