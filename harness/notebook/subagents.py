"""Chapter 10's broken versions and views: delegation that floods the parent, and a fork
that rebuilds its prompt and misses the cache. Each is labelled as broken: the chapter
shows them failing before the package's own mechanism."""

from __future__ import annotations

from harness import messages as m
from harness.agent import Agent
from harness.events import Event
from harness.loop import BaseAgent
from harness.subagents import DEFAULT_SUBAGENT_TURNS, Fork, fork, fresh


def raw_report(child: BaseAgent, start: int = 0) -> str:
    """BROKEN ON PURPOSE (the flood): everything the child saw and said after ``start``,
    tool results included, as one text; what a delegation tool returns when it hands the
    child's whole conversation back to the parent."""
    parts: list[str] = []
    for message in child.messages[start:]:
        for block in m.blocks(message):
            if block.get("type") == "text":
                parts.append(str(block["text"]))
            elif block.get("type") == "tool_use":
                parts.append(f"[{block.get('name')} {block.get('input')}]")
            elif block.get("type") == "tool_result":
                content = block.get("content")
                parts.append(content if isinstance(content, str) else str(content))
    return "\n".join(parts)


def naive_delegate(parent: BaseAgent, task: str, *, max_turns: int = DEFAULT_SUBAGENT_TURNS) -> str:
    """BROKEN ON PURPOSE: run a fresh child on ``task`` and return :func:`raw_report`."""
    child: Agent = fresh(parent, max_turns=max_turns, system="You are a helper agent.")
    events: list[Event] = list(child.run(task))
    del events
    return raw_report(child)


def naive_fork(
    parent: BaseAgent, directive: str, *, max_turns: int = DEFAULT_SUBAGENT_TURNS
) -> Fork:
    """BROKEN ON PURPOSE: a fork that rebuilds its system prompt (naming its task and the
    time it started) instead of reusing the parent's bytes. Everything from the system
    prompt on differs from the parent's request and from every sibling's, so the cache
    misses it all (Claude Code keeps the parent's rendered system prompt for this reason)."""
    child = fork(parent, directive, max_turns=max_turns)
    system = (
        parent.system
        if isinstance(parent.system, str)
        else m.text_of({"role": "user", "content": list(parent.system or [])})
    )
    child.agent.system = (
        f"{system}\n\nYou are a forked helper. Your task: {directive}\n"
        f"Started at {parent.clock.now():.3f}."
    )
    return child
