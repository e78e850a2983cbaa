"""Chapter 11: the capstone."""

from __future__ import annotations

from anthropic.types import Message

from harness.events import AwaitingApproval, Event, MaxTurnsReached, TurnEnded
from harness.loop import BaseAgent, Plugin


def exit_code(events: list[Event], interrupted: bool = False) -> int:
    """Exercise 1: the command line's exit code for a run with these events."""
    if interrupted:
        return 130  # 128 + SIGINT, as shells report Ctrl-C
    last = events[-1] if events else None
    if isinstance(last, TurnEnded):
        return 0  # the model finished its answer
    if isinstance(last, MaxTurnsReached):
        return 3
    if isinstance(last, AwaitingApproval):
        return 4  # resume it once a person has decided
    return 1  # recovery gave up, the prompt was refused, or the run said nothing


class ToolTally(Plugin):
    """Exercise 2: how many times the model called each tool, across runs."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        for block in reply.content:
            if block.type == "tool_use":
                self.counts[block.name] = self.counts.get(block.name, 0) + 1
