"""Whatever a person types, the command line answers and goes on; it never crashes.

Generated lines (prompts, slash commands with odd arguments, control characters, lone
surrogates, very long lines) are piped into an interactive session in this process (the
standard input is not a terminal, so the plain reader takes them). The session must end at
the end of the input with exit code 0, and the conversation it leaves must be valid.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness.cli import main
from harness.cli.commands import COMMANDS
from harness.transcript import load

SLASH = st.sampled_from([f"/{name}" for name in COMMANDS if name != "exit"] + ["/nope", "/"])
WORDS = st.sampled_from(
    ["list files", "read a.txt", "read missing.md", "search TODO", "search (", "help"]
)
LINE = st.one_of(
    WORDS,
    st.builds(lambda c, a: f"{c} {a}", SLASH, st.text(max_size=30)),
    st.text(max_size=200),
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=60),
    st.just("\ud800 lone surrogate"),
    st.just("x" * 5_000),
)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("TODO: one\n")
    monkeypatch.chdir(project)
    return project


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(lines=st.lists(LINE, min_size=1, max_size=6))
def test_any_typed_lines_leave_a_running_session_and_a_valid_conversation(
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    lines: list[str],
) -> None:
    text = "".join(line.replace("\n", " ").replace("\r", " ") + "\n" for line in lines)
    raw = io.BytesIO(text.encode("utf-8", "surrogatepass"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(raw, "utf-8", errors="surrogateescape"))
    before = set(workspace.rglob("*.jsonl"))
    code = main(["--sessions", str(workspace / ".harness")])
    capsys.readouterr()
    assert code == 0  # the input ended: the session closed normally
    for path in set(workspace.rglob("*.jsonl")) - before:
        if "subagents" in path.parts:
            continue
        conversation = load(path).messages
        assert m.validate(conversation) == [], path.name
