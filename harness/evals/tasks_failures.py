"""Tasks where something goes wrong: the API, the process, or a person who answers later.

* :data:`FAULT_STORM`: six documents to read and a table of contents to write, while the API
  answers two 529s, a 429 with ``retry-after: 20``, a stream cut short, a dropped connection
  and a 500. Only error recovery's retries get through it.
* :data:`CRASH`: eight migration steps, each an edit and a line in the changelog; the process
  dies after the fifth. A new process resumes from the transcript and does steps 6-8; without
  a transcript it can only start over, and the changelog shows the work done twice.
* :data:`APPROVAL`: release notes written only once a person approves the write, two hours
  later, from a new process (chapter 09's store and gate).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import messages as m
from harness.approvals import ApprovalGate, ApprovalStore, continue_run, resume
from harness.evals.policy import Interference, ProcessKilled, calls, new_results, texts
from harness.evals.trial import EvalTask, Trial, file_text
from harness.events import AwaitingApproval
from harness.model import faults
from harness.model.scripted import Reply, Request, ToolCall
from harness.resume import SessionNotFound
from harness.resume import continue_run as continue_session

# -- a fault storm ---------------------------------------------------------------------------

PARTS = 6
_HEADING = re.compile(r"part_(\d)\.md starts with: (.+?)\.(?: |$)")


def _part(k: int) -> str:
    titles = ["Install", "Configure", "Run", "Observe", "Upgrade", "Uninstall"]
    return f"# {titles[k - 1]}\n\n" + f"Step {k} of the guide. " * 40 + "\n"


def _setup_storm(workspace: Path) -> None:
    (workspace / "docs").mkdir()
    for k in range(1, PARTS + 1):
        (workspace / "docs" / f"part_{k}.md").write_text(_part(k))


def _storm_policy(request: Request) -> Reply:
    headings: dict[int, str] = {}
    for text in texts([msg for msg in request.messages if msg["role"] == "assistant"]):
        for noted in _HEADING.finditer(text):
            headings[int(noted[1])] = noted[2]
    said = []
    for call in new_results(request):
        if call.name == "write_file" and call.succeeded:
            return Reply(text="CONTENTS.md lists the six parts.")
        found = re.search(r"part_(\d)\.md$", str(call.input.get("path", "")))
        first = re.search(r"# (.+)", call.result or "")
        if call.name == "read_file" and found and first and call.succeeded:
            headings[int(found[1])] = first[1].strip()
            said.append(f"part_{found[1]}.md starts with: {first[1].strip()}.")
    missing = [k for k in range(1, PARTS + 1) if k not in headings]
    if missing:
        read = ToolCall("read_file", {"path": f"docs/part_{missing[0]}.md"})
        return Reply(text=" ".join(said) or "Reading the guide.", tool_calls=(read,))
    contents = "".join(f"{k}. {headings[k]}\n" for k in range(1, PARTS + 1))
    write = ToolCall("write_file", {"path": "CONTENTS.md", "content": contents})
    return Reply(text=" ".join([*said, "Writing the contents."]), tool_calls=(write,))


def _storm(process: int) -> Interference | None:
    if process:
        return None
    storm: dict[int, Callable[[], BaseException]] = {
        2: faults.overloaded,
        3: faults.overloaded,
        5: lambda: faults.rate_limited(20),
        7: faults.cut_stream,
        9: faults.connection_error,
        11: faults.server_error,
    }

    def interfere(n: int, _arguments: Mapping[str, Any]) -> BaseException | None:
        fault = storm.get(n)
        return fault() if fault is not None else None

    return interfere


def _check_storm(workspace: Path, _conversation: Sequence[m.MessageDict]) -> str | None:
    contents = file_text(workspace, "CONTENTS.md")
    if not contents:
        return "CONTENTS.md was not written"
    want = "".join(f"{k}. {_part(k).splitlines()[0][2:]}\n" for k in range(1, PARTS + 1))
    return None if contents == want else "CONTENTS.md does not list the six parts"


FAULT_STORM = EvalTask(
    name="fault storm",
    description="Read six documents through 529s, a 429, a cut stream, a dropped connection.",
    prompt=(
        f"Read docs/part_1.md to docs/part_{PARTS}.md and write CONTENTS.md: one line per "
        "part, '<n>. <its first heading>'."
    ),
    setup=_setup_storm,
    policy=_storm_policy,
    check=_check_storm,
    needs=("no recovery",),
    interference=_storm,
)

# -- a crash and a resume --------------------------------------------------------------------

STEPS = 8
KILLED_AFTER = 5
MARKER = "<!-- next -->"


def _setup_crash(workspace: Path) -> None:
    (workspace / "src").mkdir()
    for k in range(1, STEPS + 1):
        code = f"from clients import old_client\n\n\ndef job_{k}():\n"
        (workspace / "src" / f"mod_{k}.py").write_text(f"{code}    return old_client().run({k})\n")
    (workspace / "CHANGELOG.md").write_text(f"# Changelog\n\n{MARKER}\n")


def _logged(messages: Sequence[Mapping[str, Any]]) -> set[int]:
    return {
        int(found[1])
        for c in calls(messages)
        if c.name == "edit_file"
        and c.succeeded
        and (found := re.search(r"- mod_(\d+): ", str(c.input.get("new_string", ""))))
    }


def _crash_policy(request: Request) -> Reply:
    done = _logged(request.messages)
    step = next((k for k in range(1, STEPS + 1) if k not in done), None)
    if step is None:
        return Reply(text=f"All {STEPS} modules use new_client now.")
    code = {"path": f"src/mod_{step}.py", "old_string": "old_client", "new_string": "new_client"}
    log = {
        "path": "CHANGELOG.md",
        "old_string": MARKER,
        "new_string": f"- mod_{step}: old_client -> new_client\n{MARKER}",
    }
    return Reply(
        text=f"Step {step}: migrating mod_{step}.py.",
        tool_calls=(
            ToolCall("edit_file", {**code, "replace_all": True}),
            ToolCall("edit_file", log),
        ),
    )


def _kill(process: int) -> Interference | None:
    if process:
        return None

    def interfere(_n: int, arguments: Mapping[str, Any]) -> BaseException | None:
        messages = arguments["messages"]
        return ProcessKilled() if len(_logged(messages)) >= KILLED_AFTER else None

    return interfere


def _crash_drive(trial: Trial) -> None:
    first = trial.build()
    trial.run(first.agent.run(CRASH.prompt))  # killed after step 5's results are on disk
    try:
        second = trial.build(session=first.session_id)  # a new process: --resume
    except SessionNotFound:
        trial.run(trial.build().agent.run(CRASH.prompt))  # nothing to resume: start over
        return
    assert second.resumed is not None
    trial.run(continue_session(second.agent, second.resumed))


def _check_crash(workspace: Path, _conversation: Sequence[m.MessageDict]) -> str | None:
    log = file_text(workspace, "CHANGELOG.md")
    for k in range(1, STEPS + 1):
        code = file_text(workspace, f"src/mod_{k}.py")
        if "old_client" in code or "new_client" not in code:
            return f"mod_{k}.py does not use new_client instead of old_client"
        times = log.count(f"- mod_{k}: ")
        if times != 1:
            return f"mod_{k} is in the changelog {times} times: work was done twice"
    return None


CRASH = EvalTask(
    name="crash and resume",
    description=f"{STEPS} migration steps; the process dies after step {KILLED_AFTER}.",
    prompt=(
        f"Migrate src/mod_1.py to src/mod_{STEPS}.py from old_client to new_client, one "
        "module at a time, and add a line for each to CHANGELOG.md."
    ),
    setup=_setup_crash,
    policy=_crash_policy,
    check=_check_crash,
    needs=("no transcript",),
    interference=_kill,
    drive=_crash_drive,
)

# -- an approval -----------------------------------------------------------------------------

APPROVAL_WAIT = 2 * 3600.0
"""Our choice: a person answers two hours later (the 5-minute cache has long expired)."""
_CHANGES = "# Changes\n\n- faster startup\n- new config format\n- fixed the retry loop\n"
NOTES = "# Release 2.0\n\n- faster startup\n- new config format\n- fixed the retry loop\n"


def _setup_approval(workspace: Path) -> None:
    (workspace / "CHANGES.md").write_text(_CHANGES)


def _approval_policy(request: Request) -> Reply:
    done = calls(request.messages)
    writes = [c for c in done if c.name == "write_file"]
    if any(c.succeeded for c in writes):
        return Reply(text="RELEASE.md holds the notes for 2.0.")
    if writes and writes[-1].result is not None:
        return Reply(text=f"I could not write RELEASE.md: {writes[-1].result[:200]}")
    read = [c for c in done if c.name == "read_file" and c.succeeded]
    if not read:
        call = ToolCall("read_file", {"path": "CHANGES.md"})
        return Reply(text="Reading the changes.", tool_calls=(call,))
    lines = [line.split("\t", 1)[-1] for line in str(read[-1].result).splitlines()]
    items = "".join(f"{line}\n" for line in lines if line.startswith("- "))
    write = ToolCall("write_file", {"path": "RELEASE.md", "content": f"# Release 2.0\n\n{items}"})
    return Reply(text="Writing the release notes.", tool_calls=(write,))


def _approval_drive(trial: Trial) -> None:
    store = ApprovalStore(trial.root / "approvals.db", clock=trial.clock)
    ids = iter(f"apr_{n:04d}" for n in range(1, 100))
    first = trial.build()
    ApprovalGate(store, ids=lambda: next(ids)).attach(first.agent)
    events = trial.run(first.agent.run(APPROVAL.prompt))
    waiting = [e for e in events if isinstance(e, AwaitingApproval)]
    if not waiting:
        return
    trial.wait_for_person(APPROVAL_WAIT)
    second = trial.build()  # a new process, where the person's answer arrives
    ApprovalGate(store, ids=lambda: next(ids)).attach(second.agent)
    try:
        resumed = resume(second.agent, second.sessions, store, waiting[-1].approval_id, "approve")
    except Exception as error:  # what the person is told: nothing was applied
        trial.problems.append(f"the approval could not be applied: {error}"[:300])
        return
    trial.run(continue_run(second.agent, resumed))


def _check_approval(workspace: Path, _conversation: Sequence[m.MessageDict]) -> str | None:
    notes = file_text(workspace, "RELEASE.md")
    if not notes:
        return "RELEASE.md was not written"
    return None if notes == NOTES else "RELEASE.md does not hold the notes"


APPROVAL = EvalTask(
    name="approval",
    description="Release notes, written once a person approves, two hours later.",
    prompt="Write the release notes for 2.0 to RELEASE.md, from CHANGES.md.",
    setup=_setup_approval,
    policy=_approval_policy,
    check=_check_approval,
    needs=("no transcript",),
    permission_mode="default",
    drive=_approval_drive,
)

__all__ = ["APPROVAL", "CRASH", "FAULT_STORM"]
