"""A task that waits on a slow command: the test suite runs while the docs are updated.

The project's test suite takes two minutes (a stand-in on the fake clock: ``pytest -q``
"takes" 120 s and prints its summary). The person asks for the docs to be brought up to date
and for the tests to be run, and for a report of both. With background shells the model
starts the suite with ``run_in_background``, reads and edits the eight doc pages while it
runs, and reads its result when it is done (announced by a ``<task-notification>``, or
waited for with ``task_output``). Without them ``bash`` blocks: the session stands still
for two minutes before the docs are touched. Both finish; the ablation's wall time says
what the background was worth.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from harness import messages as m
from harness.background import ScriptedCommand
from harness.evals.policy import calls, new_results, texts
from harness.evals.trial import EvalTask, file_text
from harness.model.scripted import Reply, Request, ToolCall

SUITE = "pytest -q"
SUITE_SECONDS = 120.0
"""Our choice: the chapter's two-minute test suite (within chapter 02's 2-minute timeout)."""
SUMMARY = "214 passed, 3 skipped in 119.62s"
PAGES = 8
_PASSED = re.compile(r"(\d+ passed(?:, \d+ \w+)* in [\d.]+s)")
_ID = re.compile(r"(?:Command running in background with ID: |The suite runs as |<task-id>)(\w+)")


def _setup(workspace: Path) -> None:
    (workspace / "docs").mkdir()
    for k in range(1, PAGES + 1):
        (workspace / "docs" / f"page_{k}.md").write_text(
            f"# Page {k}\n\nInstall with `pip install tool==1.4`, then run `tool serve`.\n\n"
            + "".join(f"- option {n}: see `tool help {n}`\n" for n in range(40))
        )
    (workspace / "tests").mkdir()
    (workspace / "tests" / "test_tool.py").write_text("def test_serve():\n    assert True\n")


def _suite_result(request: Request) -> str | None:
    """The suite's summary line, from its output or from the model's note of it."""
    sources = [*(c.result or "" for c in calls(request.messages)), *texts(request.messages)]
    for text in sources:
        if found := _PASSED.search(text):
            return found[1]
    return None


def _shell_id(request: Request) -> str | None:
    """The suite's background shell, from the result that started it, the model's own note
    of it, or a notification."""
    sources = [*texts(request.messages), *(c.result or "" for c in calls(request.messages))]
    for text in sources:
        if found := _ID.search(text):
            return found[1]
    return None


def _just_started(request: Request) -> bool:
    return any(
        c.name == "bash" and c.result and "Command running in background" in c.result
        for c in new_results(request)
    )


def _policy(request: Request) -> Reply:
    done = calls(request.messages)
    if any(c.name == "write_file" and c.succeeded for c in done):
        return Reply(text=f"Docs updated on {PAGES} pages; tests: {SUMMARY}.")
    runs = [c for c in done if c.name == "bash" and c.input.get("command") == SUITE]
    if not any(c.succeeded for c in runs) and len(runs) < 2:
        schema = next((t for t in request.tools or [] if t.get("name") == "bash"), {})
        fields = schema.get("input_schema", {}).get("properties", {})
        suite: dict[str, object] = {"command": SUITE}
        if "description" in fields:
            suite["description"] = "run the test suite"
        if "run_in_background" in fields:
            suite["run_in_background"] = True
            text = "Starting the test suite in the background; meanwhile, the docs."
        else:
            text = "Running the test suite first."
        return Reply(text=text, tool_calls=(ToolCall("bash", suite),))
    started = _shell_id(request)
    # Said once in the model's own words: a cleared result takes the id with it.
    note = f"The suite runs as {started}. " if started and _just_started(request) else ""
    if (result := _suite_result(request)) and any(
        c.name in ("bash", "task_output") for c in new_results(request)
    ):
        note += f"Tests: {result}. "
    edited = {str(c.input.get("path")) for c in done if c.name == "edit_file" and c.succeeded}
    read = {str(c.input.get("path")) for c in done if c.name == "read_file" and c.succeeded}
    for k in range(1, PAGES + 1):
        path = f"docs/page_{k}.md"
        if path not in read:
            look = ToolCall("read_file", {"path": path})
            return Reply(text=f"{note}Reading {path}.", tool_calls=(look,))
        if path not in edited:
            edit = {"path": path, "old_string": "tool==1.4", "new_string": "tool==2.0"}
            return Reply(text=f"{note}Updating {path}.", tool_calls=(ToolCall("edit_file", edit),))
    if result is None:
        notified = any("<task-notification>" in t for t in texts(request.messages))
        if started is None:
            return Reply(text="The test suite did not run; I cannot report on it.")
        wait = {"task_id": started, "block": True, "timeout": 600}
        text = (
            "The suite has finished; reading its output." if notified else "Waiting for the suite."
        )
        return Reply(text=text, tool_calls=(ToolCall("task_output", wait),))
    report = f"# Report\n\n- docs: {PAGES} pages now say tool==2.0\n- tests: {result}\n"
    write = ToolCall("write_file", {"path": "REPORT.md", "content": report})
    return Reply(text="Writing the report.", tool_calls=(write,))


def _check(workspace: Path, _conversation: Sequence[m.MessageDict]) -> str | None:
    for k in range(1, PAGES + 1):
        if "tool==2.0" not in file_text(workspace, f"docs/page_{k}.md"):
            return f"docs/page_{k}.md does not say tool==2.0"
    report = file_text(workspace, "REPORT.md")
    if not report:
        return "REPORT.md was not written"
    if _PASSED.search(report) is None:  # the stand-in's line offline, pytest's own live
        return "REPORT.md does not give the test suite's result"
    return None


TESTS_IN_BACKGROUND = EvalTask(
    name="tests in the background",
    description=f"A 2-minute test suite while {PAGES} doc pages are updated, then a report.",
    prompt=(
        f"Run the test suite ({SUITE}) and, while it runs, update docs/page_1.md to "
        f"docs/page_{PAGES}.md from tool==1.4 to tool==2.0. Then write REPORT.md with both."
    ),
    setup=_setup,
    policy=_policy,
    check=_check,
    needs=("no background shells",),
    permission_mode="bypass",
    commands={SUITE: ScriptedCommand(seconds=SUITE_SECONDS, output=f"{'.' * 60}\n{SUMMARY}\n")},
)

__all__ = ["SUITE", "SUMMARY", "TESTS_IN_BACKGROUND"]
