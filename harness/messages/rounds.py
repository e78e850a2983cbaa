"""API rounds: a conversation split at each assistant reply, each call with its results."""

from __future__ import annotations

from collections.abc import Sequence

from harness.messages.builders import MessageDict


def api_rounds(messages: Sequence[MessageDict]) -> list[list[MessageDict]]:
    """Split a conversation into API rounds: each assistant reply with what follows it.

    A round starts at every assistant message and runs up to the next one, so it holds the
    reply and the user message answering its tool calls (plus any new prompt the user typed
    after it). Anything before the first reply is a round of its own. This is how Claude Code
    groups messages when it must drop whole rounds (compaction's prompt-too-long retry): a
    ``tool_use`` and its ``tool_result`` always land in the same round.

    The rounds concatenated give back ``messages`` (the same dict objects, in order).
    """
    rounds: list[list[MessageDict]] = []
    for message in messages:
        if not rounds or message.get("role") == "assistant":
            rounds.append([])
        rounds[-1].append(message)
    return rounds
