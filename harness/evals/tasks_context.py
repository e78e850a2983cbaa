"""Tasks about the context: exploring in a child, and a session the prompt cache is for.

* :data:`EXPLORE`: which of 16 services has the smallest timeout? Raise it. With a subagent,
  the 16 files are read in the child's context and the parent gets one line back; without,
  the parent reads them all and carries them (or a compaction of them) to the end.
* :data:`RENAME`: rename a function across 12 files of about 1K tokens, reading each first:
  25 turns over the same 3K-token prefix, the case prompt caching is for; and results that
  are no use once the file is edited, the case microcompact is for.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path

from harness import messages as m
from harness.evals.policy import calls, first_words, last_match, new_results, tool_names
from harness.evals.trial import EvalTask, file_text
from harness.model.scripted import Reply, Request, ToolCall

# -- exploring in a child --------------------------------------------------------------------

SERVICES = 16
PARALLEL = 4
ROUTES = 140
"""Lines of routes per service file (our choice: about 2K tokens a file, 32K for all 16)."""
"""Files read in one reply (read-only calls run in parallel, as the system prompt invites)."""
EXPLORE_WINDOW = 60_000
"""Our choice: the 16 files fit in a child's context, and nearly fill the parent's."""
CHILD_TASK = "Read every file services/svc_01.toml to services/svc_16.toml"
_SMALLEST_SO_FAR = re.compile(r"Smallest so far after svc_(\d+)\.toml: svc_(\d+)\.toml \((\d+) s\)")
_FOUND = re.compile(r"The smallest timeout_seconds is in services/svc_(\d+)\.toml \((\d+) s\)")


def _timeout(k: int) -> int:
    return random.Random(100 + k).randint(5, 90)


def _service(k: int) -> str:
    rng = random.Random(k)
    lines = [
        f"# Service {k}",
        "[service]",
        f'name = "svc-{k:02d}"',
        f"timeout_seconds = {_timeout(k)}",
    ]
    for n in range(ROUTES):
        lines.append(f'route_{n} = "/api/v{rng.randint(1, 3)}/{rng.choice(["a", "b", "c"])}/{n}"')
    return "\n".join(lines) + "\n"


def _setup_explore(workspace: Path) -> None:
    (workspace / "services").mkdir()
    for k in range(1, SERVICES + 1):
        (workspace / "services" / f"svc_{k:02d}.toml").write_text(_service(k))


def _survey(request: Request) -> Reply | int:
    """Read the services one by one, keeping a note of the smallest; the winner's number
    once all are read."""
    note = last_match(request.messages, _SMALLEST_SO_FAR)
    done, best, least = (int(note[1]), int(note[2]), int(note[3])) if note else (0, 0, 10**9)
    said = []
    for call in new_results(request):
        found = re.search(r"svc_(\d+)\.toml$", str(call.input.get("path", "")))
        timeout = re.search(r"timeout_seconds = (\d+)", call.result or "")
        if call.name == "read_file" and found and timeout and int(found[1]) == done + 1:
            done = done + 1
            if int(timeout[1]) < least:
                best, least = done, int(timeout[1])
            said.append(
                f"Smallest so far after svc_{done:02d}.toml: svc_{best:02d}.toml ({least} s)."
            )
    if done >= SERVICES:
        return best * 1000 + least
    reads = tuple(
        ToolCall("read_file", {"path": f"services/svc_{k:02d}.toml"})
        for k in range(done + 1, min(done + PARALLEL, SERVICES) + 1)
    )
    return Reply(text=" ".join(said) or "Reading the next services.", tool_calls=reads)


def _explore_policy(request: Request) -> Reply:
    if first_words(request).startswith(CHILD_TASK):  # a subagent's conversation
        survey = _survey(request)
        if isinstance(survey, Reply):
            return survey
        best, least = divmod(survey, 1000)
        return Reply(
            text=f"The smallest timeout_seconds is in services/svc_{best:02d}.toml ({least} s)."
        )
    done = calls(request.messages)
    if any(c.name == "edit_file" and c.succeeded for c in done):
        return Reply(text="Raised the smallest timeout to 30 seconds.")
    found = last_match(
        [{"role": "user", "content": c.result or ""} for c in done if c.name == "subagent"], _FOUND
    )
    if found is not None:
        best, least = int(found[1]), int(found[2])
    elif "subagent" in tool_names(request) and not any(c.name == "subagent" for c in done):
        prompt = f"{CHILD_TASK} and tell me which has the smallest timeout_seconds."
        task = ToolCall("subagent", {"description": "find the smallest timeout", "prompt": prompt})
        return Reply(text="I'll have a subagent read the services.", tool_calls=(task,))
    else:
        survey = _survey(request)
        if isinstance(survey, Reply):
            return survey
        best, least = divmod(survey, 1000)
    edit = ToolCall(
        "edit_file",
        {
            "path": f"services/svc_{best:02d}.toml",
            "old_string": f"timeout_seconds = {least}\n",
            "new_string": "timeout_seconds = 30\n",
        },
    )
    return Reply(
        text=f"svc_{best:02d} has the smallest timeout ({least} s): raising it.", tool_calls=(edit,)
    )


def _check_explore(workspace: Path, _conversation: Sequence[m.MessageDict]) -> str | None:
    least = min(range(1, SERVICES + 1), key=_timeout)
    for k in range(1, SERVICES + 1):
        text = file_text(workspace, f"services/svc_{k:02d}.toml")
        want = 30 if k == least else _timeout(k)
        if f"timeout_seconds = {want}\n" not in text:
            return f"svc_{k:02d}.toml should have timeout_seconds = {want}"
    return None


EXPLORE = EvalTask(
    name="explore in a child",
    description=f"Find the smallest of {SERVICES} services' timeouts and raise it to 30.",
    prompt=(
        "Which service in services/ has the smallest timeout_seconds? Raise it to 30 in that "
        "service's file."
    ),
    setup=_setup_explore,
    policy=_explore_policy,
    check=_check_explore,
    needs=("no subagents",),
    window=EXPLORE_WINDOW,
)

# -- a session the prompt cache is for -------------------------------------------------------

HANDLERS = 12
FUNCTIONS = 30
"""Functions per handler file, each calling ``fetch_user`` (our choice: about 1K tokens a
file, so that old results are worth clearing in the window below)."""
RENAME_WINDOW = 50_000
"""Our choice, the long task's window: the twelve files fit in it, but without microcompact
every later turn carries them all (and session memory starts extracting)."""


def _setup_rename(workspace: Path) -> None:
    (workspace / "app").mkdir()
    for k in range(1, HANDLERS + 1):
        body = [f'"""Handler {k}."""', "from app.users import fetch_user", ""]
        body += [
            f"def handle_{k}_{n}(request):\n    return fetch_user(request.user_id)\n"
            for n in range(FUNCTIONS)
        ]
        (workspace / "app" / f"handler_{k:02d}.py").write_text("\n".join(body))


def _rename_policy(request: Request) -> Reply:
    done = calls(request.messages)
    edited = {str(c.input.get("path")) for c in done if c.name == "edit_file" and c.succeeded}
    read = {str(c.input.get("path")) for c in done if c.name == "read_file" and c.succeeded}
    for k in range(1, HANDLERS + 1):
        path = f"app/handler_{k:02d}.py"
        if path in edited:
            continue
        if path not in read:
            return Reply(
                text=f"Reading {path}.", tool_calls=(ToolCall("read_file", {"path": path}),)
            )
        edit = {
            "path": path,
            "old_string": "fetch_user",
            "new_string": "load_user",
            "replace_all": True,
        }
        return Reply(text=f"Renaming in {path}.", tool_calls=(ToolCall("edit_file", edit),))
    return Reply(text=f"Renamed fetch_user to load_user in all {HANDLERS} handlers.")


def _check_rename(workspace: Path, _conversation: Sequence[m.MessageDict]) -> str | None:
    for k in range(1, HANDLERS + 1):
        text = file_text(workspace, f"app/handler_{k:02d}.py")
        if "fetch_user" in text or "load_user" not in text:
            return f"handler_{k:02d}.py does not call load_user instead of fetch_user"
    return None


RENAME = EvalTask(
    name="many turns on one prefix",
    description=f"Rename a function across {HANDLERS} files, reading each first.",
    prompt=f"Rename fetch_user to load_user in app/handler_01.py to app/handler_{HANDLERS}.py.",
    setup=_setup_rename,
    policy=_rename_policy,
    check=_check_rename,
    needs=("no cache breakpoints", "no microcompact"),
    window=RENAME_WINDOW,
)

__all__ = ["EXPLORE", "RENAME"]
