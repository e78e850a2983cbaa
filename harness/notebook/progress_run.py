"""One session of chapter 12's twelve-step task that may be killed: the progress file across
processes.

    python -m harness.notebook.progress_run WORKSPACE [--die-at N]

Each run is a fresh process with an empty conversation, as a new session is. It builds an
agent whose :class:`~harness.planning.Planning` keeps a progress file in ``WORKSPACE``
(``claude-progress.md``), reads it first (:meth:`~harness.planning.Planning.start`) and puts
its briefing in front of the prompt. A scripted policy plays the model: it can only know what
its context shows, so it takes the steps done from the checklist there (the briefing's, or
the list it has written since), writes its list, then does one ``migrate`` a reply, updating
the list in the same reply. ``migrate`` appends the module to ``WORKSPACE/calls.log``; with
``--die-at N`` its N-th call in this process kills the process with SIGKILL *before* it does
anything (no cleanup runs, as when a machine is switched off). The kill is at a fixed call
count, so the runs are the same every time.

Exit status: 0 when the task is done (or the process was killed, which the parent sees as
``-SIGKILL``); 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.model import ScriptedModel
from harness.model.scripted import Reply, Request, ToolCall
from harness.notebook.planning import (
    TASK,
    MigrateInput,
    migrated_in,
    migration_item,
    migration_list,
    module_names,
)
from harness.planning import PROGRESS_FILE, Planning, ProgressFile, TodoList, list_in
from harness.planning.todos import parse_checklist
from harness.planning.tool import TODO_TOOL
from harness.tools.base import Tool, ToolContext
from harness.tools.permissions import Permissions

CALLS_LOG = "calls.log"
"""One line per ``migrate`` call that did its work, in ``WORKSPACE``."""


def migrate_tool(workspace: Path, die_at: int | None) -> Tool[MigrateInput]:
    """``migrate``: append the module to ``calls.log``; its ``die_at``-th call in this process
    kills the process first."""
    calls = 0

    def migrate(args: MigrateInput, context: ToolContext) -> str:
        nonlocal calls
        calls += 1
        if die_at is not None and calls == die_at:
            os.kill(os.getpid(), signal.SIGKILL)  # before any of the step's work
        with (workspace / CALLS_LOG).open("a", encoding="utf-8") as log:
            log.write(f"{args.module}\n")
            log.flush()
            os.fsync(log.fileno())
        return f"migrated {args.module}: tests pass"

    return Tool("migrate", "Migrate one module to the new API.", MigrateInput, migrate)


def checklist_in(conversation: Sequence[m.MessageDict]) -> TodoList:
    """The list the context shows: the latest the model wrote, else the briefing's."""
    written = list_in(conversation)
    if written is not None:
        return written
    first = m.text_of(conversation[0]) if conversation else ""
    return parse_checklist(first)


def policy(request: Request) -> Reply:
    """The model: its list, then one ``migrate`` a reply with the list updated beside it."""
    conversation = request.messages
    names = module_names()
    todo = checklist_in(conversation)
    # A step marked [~] was being worked on when a session stopped: not done until checked
    # off. (Here a kill comes before the step's work, so doing it again is right.)
    done = {i.content.removeprefix("Migrate ") for i in todo.items if i.status == "completed"}
    done |= set(migrated_in(conversation))
    left = [n for n in names if n not in done]
    status = {n: "completed" if n in done else "pending" for n in names}
    if left:
        status[left[0]] = "in_progress"
    todos = migration_list([migration_item(n, status[n]) for n in names])
    wrote = list_in(conversation) is not None
    if not left:
        if wrote and list_in(conversation) == TodoList.of(todos["todos"]):
            return Reply("All twelve modules are migrated.")
        return Reply("The last one is done.", (ToolCall(TODO_TOOL, todos),))
    calls = (ToolCall(TODO_TOOL, todos), ToolCall("migrate", {"module": left[0]}))
    return Reply(f"Migrating {left[0]}.", calls)


def session(workspace: Path, die_at: int | None) -> Agent:
    """The agent of one session on ``workspace``, its progress file read (not yet run)."""
    clock = FakeClock()
    progress = ProgressFile(workspace / PROGRESS_FILE, task="Migrate twelve modules", clock=clock)
    planning = Planning(progress=progress)
    model = ScriptedModel(clock=clock)
    model.answer_when(lambda r: True, policy)
    return Agent(
        model,
        tools=[migrate_tool(workspace, die_at), *planning.tools()],
        workspace=workspace,
        clock=clock,
        plugins=[planning],
        permissions=Permissions.from_rules(allow=["migrate"]),
        max_turns=40,
    )


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.notebook.progress_run")
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--die-at", type=int, default=None, help="kill at this migrate call")
    args = parser.parse_args(list(argv))
    workspace: Path = args.workspace
    if not workspace.is_dir():
        parser.error(f"{workspace} is not a folder")
    agent = session(workspace, args.die_at)
    planning = next(p for p in agent.plugins if isinstance(p, Planning))
    briefing = planning.start()
    prompt = TASK.format(names=", ".join(module_names()))
    for event in agent.run(f"{briefing}\n\n{prompt}" if briefing else prompt):
        if type(event).__name__ == "PlanningProblem":
            print(event, file=sys.stderr)
    print(planning.todos.current.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
