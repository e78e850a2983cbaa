"""The command line, live: ``python -m harness`` with a key, against a local Messages API.

The program runs as a person runs it, in a process of its own, with ``ANTHROPIC_API_KEY``
set and ``ANTHROPIC_BASE_URL`` pointing at ``tests/local_api.py`` on loopback: the live
model (the SDK's client, streaming) answers instead of the offline demo model. The model
behind the server is the stand-in of ``tests/live_chapters.py``, which for these prompts
behaves as the demo model does (``list files`` calls ``glob``, ``read X`` calls
``read_file``). A one-shot run with a tool call, then ``--continue`` in a new process (the
same one-shot run for both tests: a start-up of the program takes seconds).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness import messages as m
from harness.transcript import load
from tests.live_chapters import KEY, stand_in
from tests.local_api import LocalMessagesAPI

TIMEOUT = 120  # seconds: a start-up takes 1-4 s on a loaded 2-core machine


@pytest.fixture(scope="module")
def server() -> Iterator[LocalMessagesAPI]:
    with LocalMessagesAPI(stand_in(), api_key=KEY) as api:
        yield api


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("live") / "shop"
    ws.mkdir()
    (ws / "README.md").write_text("# The shop\n\nTODO: set the prices\n", encoding="utf-8")
    (ws.parent / "home").mkdir()
    return ws


@dataclass(frozen=True)
class Run:
    """A finished run: its result record and the turns the server had been sent by then."""

    result: dict[str, Any]
    sent: list[dict[str, Any]]


@pytest.fixture(scope="module")
def one_shot(workspace: Path, server: LocalMessagesAPI) -> Run:
    """``-p "list files"`` in the fresh workspace: the run both tests need (a start-up of the
    program takes seconds, so once). What it sent is kept, whatever runs after it."""
    result = harness(workspace, server, "-p", "list files")
    return Run(result, sent(server))


def harness(workspace: Path, server: LocalMessagesAPI, *argv: str) -> dict[str, Any]:
    """Run ``python -m harness -p ... --output-format json`` live; its result record."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(workspace.parent / "home"),
        "PYTHONIOENCODING": "utf-8",
        "ANTHROPIC_API_KEY": KEY,
        "ANTHROPIC_BASE_URL": server.url,
    }
    done = subprocess.run(
        [sys.executable, "-m", "harness", *argv, "--output-format", "json"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert server.failures == []
    record: dict[str, Any] = json.loads(done.stdout)
    return record


def sent(server: LocalMessagesAPI) -> list[dict[str, Any]]:
    return [r.body for r in server.received if r.path == "/v1/messages"]


def test_a_one_shot_run_goes_live_calls_a_tool_and_reports_it(one_shot: Run) -> None:
    result = one_shot.result

    assert result["is_error"] is False and result["num_turns"] == 2
    assert "glob returned" in result["result"] and "README.md" in result["result"]
    first, second = one_shot.sent
    assert first["stream"] is True and {t["name"] for t in first["tools"]} >= {"glob", "bash"}
    (answered,) = m.tool_results(second["messages"][-1])
    assert "README.md" in str(answered["content"])


def test_continue_sends_the_earlier_conversation_and_keeps_one_transcript(
    workspace: Path, server: LocalMessagesAPI, one_shot: Run
) -> None:
    earlier = len(one_shot.sent)

    result = harness(workspace, server, "--continue", "-p", "read README.md")

    assert result["is_error"] is False and "TODO: set the prices" in result["result"]
    resumed = sent(server)[earlier]["messages"]
    assert m.text_of(resumed[0]) == "list files"  # the first run's conversation, resent
    assert m.text_of(resumed[-1]) == "read README.md"
    assert m.validate(resumed) == []
    (transcript,) = (workspace / ".harness" / "projects").glob("*/*.jsonl")
    assert transcript.stem == result["session_id"]
    prompts = [m.text_of(msg) for msg in load(transcript).messages if not m.tool_results(msg)]
    assert [p for p in prompts if p in ("list files", "read README.md")] == [
        "list files",
        "read README.md",
    ]
