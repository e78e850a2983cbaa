"""Chapter 08: transcripts and resume."""

from __future__ import annotations

from harness import messages as m
from harness.loop import INTERRUPTED
from harness.transcript import Entry


def latest_leaf_path(entries: list[Entry]) -> list[str]:
    """Exercise 1: the uuids from a root (or the compact boundary) to the newest message."""
    by_uuid: dict[str | None, Entry] = {e.uuid: e for e in entries if e.uuid}
    messages = [
        e for e in entries if e.type in ("user", "assistant") and e.uuid and not e.is_sidechain
    ]
    if not messages:
        return []
    path: list[str] = []
    current: Entry | None = messages[-1]
    while current is not None and current.uuid is not None and current.uuid not in path:
        path.append(current.uuid)
        current = by_uuid.get(current.parent_uuid)  # None at a root, or a lost parent
    return path[::-1]


def answer_unresolved(messages: list[m.MessageDict]) -> list[m.MessageDict]:
    """Exercise 2: answer, as interrupted, the tool calls the last reply made."""
    last = messages[-1] if messages else None
    if last is None or last["role"] != "assistant" or not m.tool_uses(last):
        return list(messages)
    answers = [m.tool_result(u["id"], INTERRUPTED, is_error=True) for u in m.tool_uses(last)]
    return [*messages, m.user(answers)]
