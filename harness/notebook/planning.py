"""Chapter 12's long task: twelve steps over a small window, with and without a todo list.

A scripted *policy* plays the model: a function of each request that decides what to do from
what the request shows, as a model can only know what is in its context. It is a model of an
agent, written to show one failure honestly, not a measurement of a real model (the live cell
of chapter 12 runs the real thing):

* the task: migrate twelve modules, one ``migrate`` call each (a long log comes back, so the
  context fills and auto-compacts; chapter 05's real compaction runs);
* the summary a compaction asks for is answered by :func:`lossy_summary`: it keeps the
  user's request word for word and says truthfully what the last call did, but its list of
  steps done is lossy in the two ways summaries are: each earlier step is left out with
  probability :data:`DROP_DONE`, and the step the agent had *announced* next is listed as
  done with probability :data:`COUNT_ANNOUNCED` (seeded, so each run is reproducible);
* without a plan, the agent believes what it sees: the steps whose calls are in its context,
  and the summary's list. After a compaction it redoes a step the summary left out, and skips
  one it says is done;
* with a plan, it writes its todo list first and updates it in the same reply as each next
  call; the harness pins the list (chapter 05), so after a compaction the checklist is back
  in the context, and the agent goes by it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.auto import AutoCompact
from harness.compaction.pinned import PinnedFacts
from harness.compaction.summary import SUMMARY_PREAMBLE, is_compaction_request
from harness.events import Event, ToolFinished
from harness.loop import Plugin
from harness.model import ScriptedModel
from harness.model.scripted import Reply, Request, ToolCall
from harness.planning.plugin import Planning, list_in
from harness.planning.todos import TodoItem
from harness.planning.tool import TODO_TOOL
from harness.prompt import PromptCaching
from harness.tokens import ContextBudget
from harness.tools.base import Tool, ToolContext, ToolInput
from harness.tools.permissions import Permissions

STEPS = 12
WINDOW = 40_000
"""The small window of the long task (auto-compact at 40K − 8K − 13K = 19K)."""
MAX_OUTPUT = 8_000
LOG_LINES = 220
"""Lines of log each ``migrate`` returns (about 2.4K tokens)."""
DROP_DONE = 0.25
"""Chance that the lossy summary leaves out each earlier step done (our choice)."""
COUNT_ANNOUNCED = 0.5
"""Chance that it lists the step announced next as done (our choice)."""

TASK = "Migrate these modules to the new API, one at a time, with the migrate tool: {names}."
DONE_LINE = "Steps done: "
CURRENT_LINE = "7. Current work: "


def module_names(steps: int = STEPS) -> list[str]:
    return [f"mod_{i:02d}" for i in range(1, steps + 1)]


class MigrateInput(ToolInput):
    module: str


@dataclass
class Workspace:
    """What the ``migrate`` tool did: every call, in order (a step run twice shows here)."""

    calls: list[str] = field(default_factory=list)

    def tool(self) -> Tool[MigrateInput]:
        def migrate(args: MigrateInput, context: ToolContext) -> str:
            self.calls.append(args.module)
            log = "\n".join(
                f"[{args.module}] rewrote call site {i}: old_api.fetch -> api.get (ok)"
                for i in range(1, LOG_LINES + 1)
            )
            return f"{log}\nmigrated {args.module}: {LOG_LINES} call sites, tests pass"

        return Tool("migrate", "Migrate one module to the new API.", MigrateInput, migrate)


def lossy_summary(request: Request, seed: int) -> Reply:
    """The summary the scripted model writes for the long task (see the module's docstring)."""
    rng = random.Random(f"{seed}:{len(request.messages)}")
    conversation = request.messages  # the last holds the instruction, and the last results
    asked = _task_text(conversation)
    done = _summary_done(conversation) + migrated_in(conversation)
    last = done[-1] if done else None
    kept = [name for name in done[:-1] if rng.random() >= DROP_DONE]
    announced = _announced(conversation)
    if announced is not None and announced not in done and rng.random() < COUNT_ANNOUNCED:
        kept.append(announced)
    if last is not None:
        kept.append(last)
    unique = list(dict.fromkeys(kept))
    current = f"migrate({last}) finished: tests pass." if last else "nothing yet."
    text = (
        "<analysis>Going through the migration.</analysis>\n<summary>\n"
        f"1. Primary request and intent: {asked}\n"
        f"{DONE_LINE}{', '.join(unique) or 'none'}\n"
        f"{CURRENT_LINE}{current}\n</summary>"
    )
    return Reply(text=text)


def _task_text(conversation: Sequence[m.MessageDict]) -> str:
    for msg in conversation:
        text = m.text_of(msg)
        if msg["role"] == "user" and (found := re.search(r"Migrate these modules[^\n]*", text)):
            return found.group(0)
    return ""


def migrated_in(conversation: Sequence[m.MessageDict]) -> list[str]:
    """Modules whose ``migrate`` call and its good result are in the conversation."""
    ok = {
        str(b.get("tool_use_id"))
        for msg in conversation
        if msg["role"] == "user"
        for b in m.blocks(msg)
        if b.get("type") == "tool_result" and not b.get("is_error")
    }
    return [
        str(u["input"].get("module"))
        for msg in conversation
        if msg["role"] == "assistant"
        for u in m.tool_uses(msg)
        if u["name"] == "migrate" and u["id"] in ok
    ]


def _summary_done(conversation: Sequence[m.MessageDict]) -> list[str]:
    for msg in conversation:
        text = m.text_of(msg)
        if msg["role"] == "user" and text.startswith(SUMMARY_PREAMBLE):
            found = re.search(f"^{DONE_LINE}(.*)$", text, re.MULTILINE)
            if found and found.group(1) != "none":
                return [n.strip() for n in found.group(1).split(",") if n.strip()]
    return []


def _current_work(conversation: Sequence[m.MessageDict]) -> str | None:
    """The module the summary's "Current work" says was just finished (it is truthful)."""
    for msg in conversation:
        text = m.text_of(msg)
        if msg["role"] == "user" and text.startswith(SUMMARY_PREAMBLE):
            found = re.search(rf"^{re.escape(CURRENT_LINE)}migrate\((mod_\d+)\)", text, re.M)
            return found.group(1) if found else None
    return None


def _announced(conversation: Sequence[m.MessageDict]) -> str | None:
    for msg in reversed(conversation):
        if msg["role"] == "assistant":
            found = re.search(r"then (mod_\d+)", m.text_of(msg))
            return found.group(1) if found else None
    return None


def policy(request: Request, *, plan: bool, seed: int) -> Reply:
    """What the scripted agent does next, from what this request shows."""
    if is_compaction_request(request):
        return lossy_summary(request, seed)
    conversation = request.messages
    names = re.findall(r"mod_\d+", _task_text(conversation))
    done = set(migrated_in(conversation)) | set(_summary_done(conversation))
    todo = list_in(conversation) if plan else None
    if plan and todo is None:
        items = [
            migration_item(n, "in_progress" if i == 0 else "pending") for i, n in enumerate(names)
        ]
        return Reply(
            "I'll plan the migration first.", (ToolCall(TODO_TOOL, migration_list(items)),)
        )
    if todo is not None:  # the list, not the summary's recollection, says what is done
        done = set(migrated_in(conversation)) | {
            i.content.removeprefix("Migrate ") for i in todo.items if i.status == "completed"
        }
        if (current := _current_work(conversation)) is not None:
            done.add(current)
    left = [n for n in names if n not in done]
    if not left:
        return Reply("All the modules are migrated.")
    now = left[0]
    after = f", then {left[1]}" if len(left) > 1 else ""
    calls = [ToolCall("migrate", {"module": now})]
    if plan:
        status = {n: "completed" if n in done else "pending" for n in names}
        status[now] = "in_progress"
        todos = migration_list([migration_item(n, status[n]) for n in names])
        calls.insert(0, ToolCall(TODO_TOOL, todos))
    return Reply(f"Migrating {now}{after}.", tuple(calls))


def migration_item(name: str, status: str) -> dict[str, str]:
    """The todo item for migrating ``name`` (``Migrate mod_03``, ``Migrating mod_03``)."""
    return {"content": f"Migrate {name}", "status": status, "activeForm": f"Migrating {name}"}


def migration_list(items: list[dict[str, str]]) -> dict[str, Any]:
    """A ``todo_write`` input holding ``items`` (validated)."""
    return {"todos": [TodoItem.model_validate(i).model_dump() for i in items]}


@dataclass(frozen=True)
class TaskRun:
    """What one run of the long task did."""

    plan: bool
    seed: int
    calls: tuple[str, ...]
    """Every ``migrate`` call, in order."""
    turns: int
    compactions: int
    cost: float
    cache_read_share: float
    """Cache reads over all input tokens (reads, writes and uncached)."""
    done_by_turn: tuple[int, ...]
    """Distinct steps done after each model call of the loop."""
    events: tuple[Event, ...] = ()

    @property
    def completed(self) -> int:
        return len(set(self.calls))

    @property
    def repeated(self) -> int:
        return len(self.calls) - len(set(self.calls))

    @property
    def skipped(self) -> int:
        return STEPS - self.completed


@dataclass
class LongTask:
    """The long task, set up and not yet run: its agent, scripted model and workspace (so
    what the model was sent, the compaction requests included, can be looked at after)."""

    plan: bool
    seed: int
    agent: Agent
    model: ScriptedModel
    work: Workspace

    def run(self) -> TaskRun:
        """Run the task to its end (or the turn limit)."""
        events: list[Event] = []
        done_by_turn: list[int] = []
        seen: set[str] = set()
        for event in self.agent.run(TASK.format(names=", ".join(module_names()))):
            events.append(event)
            if isinstance(event, ToolFinished) and event.name == "migrate" and not event.is_error:
                seen.add(self.work.calls[-1])
            if type(event).__name__ == "AssistantReplied":
                done_by_turn.append(len(seen))
        done_by_turn.append(len(seen))
        return TaskRun(
            plan=self.plan,
            seed=self.seed,
            calls=tuple(self.work.calls),
            turns=sum(1 for e in events if type(e).__name__ == "AssistantReplied"),
            compactions=sum(1 for e in events if type(e).__name__ == "Compacted"),
            cost=self.agent.meter.total.total,
            cache_read_share=self.agent.meter.cache_read_share,
            done_by_turn=tuple(done_by_turn[1:]),
            events=tuple(events),
        )


def long_task(*, plan: bool, seed: int = 0, max_turns: int = 60) -> LongTask:
    """The long task's agent, with or without the todo list, under auto-compaction."""
    clock = FakeClock()
    model = ScriptedModel(context_window=WINDOW, max_output=MAX_OUTPUT, clock=clock)
    model.answer_when(lambda r: True, lambda r: policy(r, plan=plan, seed=seed))
    work = Workspace()
    pinned = PinnedFacts()
    plugins: list[Plugin] = [PromptCaching()]
    tools: list[Tool[Any]] = [work.tool()]
    if plan:
        planning = Planning(pinned=pinned)
        tools += planning.tools()
    budget = ContextBudget(window=WINDOW, max_output=MAX_OUTPUT)
    plugins.append(AutoCompact(budget, pinned=pinned, summary_max_tokens=2_000))
    if plan:
        plugins.append(planning)  # after caching: its reminders go after the breakpoint
    agent = Agent(
        model,
        tools=tools,
        clock=clock,
        plugins=plugins,
        max_tokens=MAX_OUTPUT,
        max_turns=max_turns,
        context_window=WINDOW,
        permissions=Permissions.from_rules(allow=["migrate"]),
    )
    return LongTask(plan, seed, agent, model, work)


def run_long_task(*, plan: bool, seed: int = 0, max_turns: int = 60) -> TaskRun:
    """The long task, with or without the todo list, under auto-compaction."""
    return long_task(plan=plan, seed=seed, max_turns=max_turns).run()
