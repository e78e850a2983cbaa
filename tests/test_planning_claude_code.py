"""The todo list reads back from Claude Code's own transcripts (its ``TodoWrite`` calls).

Uses the real transcripts in ``../shared/cc_transcripts/`` when that folder is there (a
learner's clone does not have it: the tests skip and say so), and small fixtures written in
Claude Code's format otherwise.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import messages as m
from harness.planning import TodoList, list_in
from harness.transcript import load

REAL_FOLDER = Path(__file__).resolve().parents[2] / "shared" / "cc_transcripts"
VIEWER = "d-kimuson__claude-code-viewer__"


def _real(prefix: str) -> list[Path]:
    if not REAL_FOLDER.is_dir():
        pytest.skip(f"no real Claude Code transcripts at {REAL_FOLDER}")
    return sorted(REAL_FOLDER.glob(f"{prefix}*.jsonl"))


def todo_write(tool_use_id: str, todos: list[dict[str, str]]) -> m.MessageDict:
    return {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": tool_use_id, "name": "TodoWrite", "input": {"todos": todos}}
        ],
    }


def test_a_claude_code_sessions_last_todowrite_is_its_list() -> None:
    session = load(_real(VIEWER + "1af7fc5e")[0])
    found = list_in(session.messages)
    assert found is not None
    assert found.render() == "- [x] Create CLAUDE.md with essential information"


def test_a_todowrite_with_two_items_in_progress_is_passed_over_for_the_one_before() -> None:
    # Claude Code accepted two items in progress in this session; the course does not.
    messages = load(_real(VIEWER + "5c0375b4")[0]).messages
    writes = [
        (i, u["input"]["todos"])
        for i, msg in enumerate(messages)
        if msg["role"] == "assistant"
        for u in m.tool_uses(msg)
        if u["name"] == "TodoWrite"
    ]
    two = next(
        k for k, (_, w) in enumerate(writes) if sum(t["status"] == "in_progress" for t in w) == 2
    )
    where, _ = writes[two]
    found = list_in(messages[: where + 2])  # up to that call's result
    assert found == TodoList.of(writes[two - 1][1])


def test_claude_codes_todowrite_input_reads_as_ours() -> None:
    item = {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"}
    conversation = [
        m.user("go"),
        todo_write("toolu_1", [item]),
        m.user([m.tool_result("toolu_1", "Todos have been modified successfully.")]),
    ]
    assert list_in(conversation) == TodoList.of([item])
