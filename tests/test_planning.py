"""Chapter 12's planning package, rule by rule: the todo list and its validation, the
``todo_write`` tool in a real run, reminders (cadence, place in the request, the prompt cache),
plan mode through the approver (at once, and deferred to chapter 09's store), and the
progress file, hostile ones included.

Everything is scripted and on a :class:`FakeClock`; files live in ``tmp_path``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from harness import messages as m
from harness.agent import Agent
from harness.approvals import ApprovalGate, ApprovalStore, Decision, continue_run, resume
from harness.clock import FakeClock
from harness.compaction.summary import compact, is_compaction_request
from harness.events import AwaitingApproval, Event, PermissionDecided, ToolFinished, TurnEnded
from harness.loop import Plugin
from harness.model import ScriptedModel, Step, reply, tool_call
from harness.model.scripted_summary import scripted_summary
from harness.planning import (
    EXIT_PLAN_TOOL,
    MAX_TODOS,
    REMINDER_TURNS,
    RESULT_TEXT,
    TODO_TOOL,
    Planning,
    PlanningProblem,
    Progress,
    ProgressFile,
    ProgressFileError,
    ReminderClock,
    TodoItem,
    TodoList,
    Todos,
    TodosReminded,
    TodoWriteInput,
    parse_checklist,
    parse_progress,
    plan_steps,
)
from harness.planning.progress import MAX_PROGRESS_BYTES
from harness.prompt import PromptCaching
from harness.resume import Sessions
from harness.tools import ToolContext, builtin_tools, tool
from harness.tools.permissions import Approval, ApprovalRequest, Permissions
from harness.transcript import seeded_ids

REMINDER_TAG = "<system-reminder>"


def item(content: str, status: str = "pending", active: str | None = None) -> dict[str, str]:
    return {"content": content, "status": status, "activeForm": active or f"Doing {content}"}


def todos_input(*statuses: str) -> dict[str, Any]:
    """A ``todo_write`` input with one item per status: ``Step 1``, ``Step 2``..."""
    return {"todos": [item(f"Step {i}", s) for i, s in enumerate(statuses, 1)]}


def error_text(error: pytest.ExceptionInfo[ValidationError]) -> str:
    return str(error.value)


# -- the list -----------------------------------------------------------------------------------


def test_a_valid_list_keeps_its_order_and_knows_what_is_open_and_current() -> None:
    todo_list = TodoList.of(todos_input("completed", "in_progress", "pending")["todos"])
    assert [i.content for i in todo_list.items] == ["Step 1", "Step 2", "Step 3"]
    assert [i.content for i in todo_list.open] == ["Step 2", "Step 3"]
    assert todo_list.current is not None and todo_list.current.content == "Step 2"
    assert todo_list.summary() == "1/3 done · now: Doing Step 2"
    assert TodoList().summary() == "no todos"


def test_two_items_in_progress_are_refused_naming_both() -> None:
    with pytest.raises(ValidationError) as caught:
        TodoWriteInput.model_validate(todos_input("in_progress", "in_progress"))
    text = error_text(caught)
    assert "2 items are in_progress" in text
    assert "Step 1; Step 2" in text
    assert "mark exactly one in_progress" in text


@pytest.mark.parametrize("blank", ["", "   ", "\n\t "])
def test_blank_content_is_refused(blank: str) -> None:
    with pytest.raises(ValidationError) as caught:
        TodoWriteInput.model_validate({"todos": [item(blank, active="Doing it")]})
    text = error_text(caught)
    assert "content" in text
    assert "empty" in text or "at least 1 character" in text


def test_content_on_several_lines_becomes_one_line() -> None:
    parsed = TodoItem.model_validate(item("Run\n  the   tests", active="Running\tthe tests"))
    assert (parsed.content, parsed.activeForm) == ("Run the tests", "Running the tests")


def test_an_extra_field_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError) as caught:
        TodoWriteInput.model_validate({"todos": [{**item("A"), "priority": "high"}]})
    assert "priority" in error_text(caught)
    assert "Extra inputs are not permitted" in error_text(caught)
    with pytest.raises(ValidationError, match="id"):
        TodoWriteInput.model_validate({**todos_input("pending"), "id": 3})


def test_an_unknown_status_is_refused_listing_the_known_ones() -> None:
    with pytest.raises(ValidationError) as caught:
        TodoWriteInput.model_validate({"todos": [item("A", "done")]})
    assert "'pending', 'in_progress' or 'completed'" in error_text(caught)


def test_more_than_the_maximum_number_of_items_is_refused() -> None:
    TodoWriteInput.model_validate(todos_input(*["pending"] * MAX_TODOS))
    with pytest.raises(ValidationError) as caught:
        TodoWriteInput.model_validate(todos_input(*["pending"] * (MAX_TODOS + 1)))
    assert f"at most {MAX_TODOS} items" in error_text(caught)


def test_the_checklist_marks_each_status() -> None:
    todo_list = TodoList.of(todos_input("completed", "in_progress", "pending")["todos"])
    assert todo_list.render() == "- [x] Step 1\n- [~] Step 2\n- [ ] Step 3"


def test_render_then_parse_gives_back_content_and_status() -> None:
    todo_list = TodoList.of(
        todos_input("completed", "completed", "in_progress", "pending")["todos"]
    )
    back = parse_checklist(todo_list.render())
    assert [(i.content, i.status) for i in back.items] == [
        (i.content, i.status) for i in todo_list.items
    ]
    assert all(i.activeForm == i.content for i in back.items)  # not in the checklist


def test_a_checklist_inside_other_text_reads_back_and_junk_is_skipped() -> None:
    text = "Notes first.\n- [x] Done\n- not an item\n- [?] odd mark\n  - [ ] Indented\n- [X] Upper"
    back = parse_checklist(text)
    assert [(i.content, i.status) for i in back.items] == [
        ("Done", "completed"),
        ("Indented", "pending"),
        ("Upper", "completed"),
    ]
    assert parse_checklist("nothing here").items == ()


def test_a_second_item_in_progress_in_a_checklist_is_read_as_pending() -> None:
    back = parse_checklist("- [~] A\n- [~] B")
    assert [i.status for i in back.items] == ["in_progress", "pending"]


def test_a_failing_listener_is_kept_as_a_problem_and_the_write_stands() -> None:
    todos = Todos()

    def broken(todo_list: TodoList) -> None:
        raise OSError("disk full")

    todos.listeners.append(broken)
    written = todos.write(TodoList.of([item("A")]).items)
    assert todos.current == written and todos.writes == 1
    assert todos.problems == ["OSError: disk full"]


# -- the tool, in a real run --------------------------------------------------------------------


def run_agent(
    steps: Sequence[Step],
    planning: Planning,
    *,
    plugins: Sequence[Plugin] | None = None,
    tools: Sequence[Any] = (),
    system: str | None = None,
    workspace: Path | None = None,
    permissions: Permissions | None = None,
    approver: Any = None,
) -> tuple[Agent, ScriptedModel, list[Event]]:
    clock = FakeClock()
    model = ScriptedModel(list(steps), clock=clock)
    model.answer_when(is_compaction_request, scripted_summary)
    kwargs: dict[str, Any] = {}
    if approver is not None:
        kwargs["approver"] = approver
    agent = Agent(
        model,
        tools=[*planning.tools(), *tools],
        plugins=list(plugins) if plugins is not None else [planning],
        clock=clock,
        system=system,
        workspace=workspace,
        permissions=permissions,
        max_turns=len(steps) + 1,
        **kwargs,
    )
    events = list(agent.run("Work through the task."))
    return agent, model, events


def writes(*inputs: dict[str, Any]) -> list[Step]:
    return [reply(tool_calls=[tool_call(TODO_TOOL, i)]) for i in inputs]


def results(agent: Agent) -> list[m.Block]:
    return [b for msg in agent.messages for b in m.tool_results(msg)]


def result_text(block: m.Block) -> str:
    content = block.get("content")
    return content if isinstance(content, str) else str(content)


def test_a_valid_write_is_answered_with_claude_codes_words_and_becomes_the_list() -> None:
    planning = Planning()
    agent, _, _ = run_agent(
        [*writes(todos_input("in_progress", "pending")), reply("On it.")], planning
    )
    (answer,) = results(agent)
    assert result_text(answer) == RESULT_TEXT and not answer.get("is_error")
    assert planning.todos.current.render() == "- [~] Step 1\n- [ ] Step 2"
    assert planning.todos.writes == 1


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (todos_input("in_progress", "in_progress"), "2 items are in_progress"),
        ({"todos": [item(" ")]}, "content"),
        ({"todos": [{**item("A"), "owner": "me"}]}, "owner"),
        (todos_input(*["pending"] * (MAX_TODOS + 1)), f"at most {MAX_TODOS} items"),
        ({"todos": "all of them"}, "valid list"),
        ({}, "todos"),
    ],
)
def test_a_bad_write_is_an_error_result_the_old_list_stays_and_the_run_goes_on(
    bad: dict[str, Any], says: str
) -> None:
    planning = Planning()
    first = todos_input("in_progress", "pending")
    later = todos_input("completed", "in_progress")
    agent, model, _ = run_agent(
        [*writes(first, bad), reply("Let me fix that.")], planning, plugins=[planning]
    )
    good, refused = results(agent)
    assert not good.get("is_error")
    assert refused.get("is_error") is True
    assert says in result_text(refused)
    assert "Fix the input and call the tool again" in result_text(refused)
    assert planning.todos.current == TodoList.of(first["todos"])  # the old list stays
    assert planning.todos.writes == 1
    assert len(model.requests) == 3  # the model heard of the error and answered
    assert m.validate(agent.messages) == []
    # ...and a good write after the error is taken.
    planning2 = Planning()
    run_agent([*writes(first, bad, later), reply("Done.")], planning2)
    assert planning2.todos.current == TodoList.of(later["todos"])


def test_the_todo_tool_runs_in_plan_mode_as_a_read_only_tool() -> None:
    permissions = Permissions(mode="plan")
    planning = Planning(permissions=permissions)
    agent, _, _ = run_agent(
        [*writes(todos_input("in_progress")), reply("Planned.")],
        planning,
        permissions=permissions,
    )
    assert not results(agent)[0].get("is_error")
    assert planning.todos.writes == 1


# -- reminders: the cadence ---------------------------------------------------------------------


def test_a_reminder_is_due_after_ten_turns_without_a_write_and_ten_since_the_last() -> None:
    assert REMINDER_TURNS == 10
    open_list = TodoList.of(todos_input("in_progress", "pending")["todos"])
    clock = ReminderClock()
    clock.turns, clock.last_write = 9, 0
    assert not clock.due(open_list)
    clock.turns = 10
    assert clock.due(open_list)
    clock.last_reminder = 10  # reminded at turn 10
    clock.turns = 19
    assert not clock.due(open_list)
    clock.turns = 20
    assert clock.due(open_list)
    clock.last_write = 15  # written since: ten turns from the write
    assert not clock.due(open_list)
    clock.turns = 25
    assert clock.due(open_list)


def test_no_reminder_is_due_without_open_items() -> None:
    clock = ReminderClock(turns=50)
    assert not clock.due(TodoList())
    assert not clock.due(TodoList.of(todos_input("completed", "completed")["todos"]))


LOOK_BODY = "all fine here. " * 150


class Look(BaseModel):
    what: str


@tool(Look, read_only=True)
def look(args: Look, context: ToolContext) -> str:
    """Look at something."""
    return f"{args.what}: {LOOK_BODY}"


def looks(n: int, start: int = 0) -> list[Step]:
    return [
        reply(f"Looking at x{i}.", tool_calls=[tool_call("look", what=f"x{i}")])
        for i in range(start, start + n)
    ]


def reminded_requests(model: ScriptedModel) -> list[int]:
    """1-based numbers of the requests whose last message carries a reminder."""
    return [
        n
        for n, r in enumerate(model.requests, 1)
        if any(REMINDER_TAG in str(b.get("text", "")) for b in m.blocks(r.last_message))
    ]


def test_with_claude_codes_cadence_the_reminder_goes_with_the_eleventh_request_after_a_write() -> (
    None
):
    planning = Planning()
    steps = [*writes(todos_input("in_progress", "pending")), *looks(22), reply("Done.")]
    _, model, events = run_agent(steps, planning, tools=[look])
    # The write is the model's turn 1; ten more turns later, request 12 carries the reminder,
    # and ten turns after that, request 22.
    assert reminded_requests(model) == [12, 22]
    assert planning.reminded == [12, 22]
    reminded = [e for e in events if isinstance(e, TodosReminded)]
    assert [(e.kind, e.open_items) for e in reminded] == [("todos", 2), ("todos", 2)]
    assert "- [~] Step 1\n- [ ] Step 2" in m.blocks(model.requests[11].last_message)[-1]["text"]


def test_a_write_restarts_the_count() -> None:
    planning = Planning(reminder_turns=3)
    steps = [
        *writes(todos_input("in_progress", "pending")),
        *looks(2),
        *writes(todos_input("completed", "in_progress")),  # turn 4: before a reminder was due
        *looks(4),
        reply("Done."),
    ]
    _, model, _ = run_agent(steps, planning, tools=[look])
    assert reminded_requests(model) == [8]


def test_no_reminder_without_a_list_or_once_everything_is_done() -> None:
    planning = Planning(reminder_turns=2)
    _, model, _ = run_agent([*looks(6), reply("Done.")], planning, tools=[look])
    assert reminded_requests(model) == []
    planning = Planning(reminder_turns=2)
    steps = [*writes(todos_input("completed", "completed")), *looks(6), reply("Done.")]
    _, model, _ = run_agent(steps, planning, tools=[look])
    assert reminded_requests(model) == []


def test_reminders_off_sends_none() -> None:
    planning = Planning(reminder_turns=None)
    steps = [*writes(todos_input("in_progress")), *looks(25), reply("Done.")]
    _, model, events = run_agent(steps, planning, tools=[look])
    assert reminded_requests(model) == []
    assert not [e for e in events if isinstance(e, TodosReminded)]


# -- reminders: where they go -------------------------------------------------------------------

SYSTEM = "You are a careful coding agent. Read before you change anything. " * 150


def cached_run(
    order: str, reminder_turns: int | None, *, automatic: bool = False
) -> tuple[Agent, ScriptedModel, list[Event], Planning]:
    """The same scripted session, with caching and planning in ``order`` (moving breakpoints,
    or ``automatic`` caching's one top-level ``cache_control``)."""
    planning = Planning(reminder_turns=reminder_turns)
    caching = PromptCaching(automatic=automatic)
    plugins: list[Plugin] = [caching, planning] if order == "caching first" else [planning, caching]
    steps = [*writes(todos_input("in_progress", "pending")), *looks(8), reply("Done.")]
    agent, model, events = run_agent(steps, planning, plugins=plugins, tools=[look], system=SYSTEM)
    return agent, model, events, planning


def test_the_reminder_is_the_last_block_of_the_sent_request_after_the_breakpoint() -> None:
    agent, model, _, planning = cached_run("caching first", 3)
    assert planning.reminded == [5, 8]
    for n in planning.reminded:
        sent = model.requests[n - 1].last_message
        assert sent["role"] == "user"
        *before, last = m.blocks(sent)
        assert last["type"] == "text" and last["text"].startswith(REMINDER_TAG)
        assert "cache_control" not in last
        assert before[-1].get("cache_control") is not None  # the moving breakpoint
        assert before[-1]["type"] == "tool_result"
    # Nothing of it is kept: not in the conversation, not in a later request.
    assert REMINDER_TAG not in str(agent.messages)
    assert all(REMINDER_TAG not in str(r.messages[:-1]) for r in model.requests)


CACHING = pytest.mark.parametrize("automatic", [False, True], ids=["breakpoints", "automatic"])


@CACHING
def test_reminders_after_the_breakpoint_read_the_same_cache_as_no_reminders(
    automatic: bool,
) -> None:
    _, without, _, _ = cached_run("caching first", None, automatic=automatic)
    _, with_them, _, planning = cached_run("caching first", 3, automatic=automatic)
    assert planning.reminded  # the comparison is about something
    reads_without = [r.cache.read for r in without.requests if r.cache is not None]
    reads_with = [r.cache.read for r in with_them.requests if r.cache is not None]
    assert len(reads_without) == len(reads_with) == 10
    assert reads_with[0] == reads_without[0] == 0
    assert reads_with[1:] == reads_without[1:]
    assert all(read > 0 for read in reads_with[1:])


@CACHING
def test_reminders_before_the_breakpoint_cost_a_write_the_next_request_cannot_read(
    automatic: bool,
) -> None:
    _, without, _, _ = cached_run("caching first", None, automatic=automatic)
    _, before, _, planning = cached_run("planning first", 3, automatic=automatic)
    assert planning.reminded == [5, 8]
    reads_without = [r.cache.read for r in without.requests if r.cache is not None]
    reads_before = [r.cache.read for r in before.requests if r.cache is not None]
    writes_without = [r.cache.written for r in without.requests if r.cache is not None]
    writes_before = [r.cache.written for r in before.requests if r.cache is not None]
    # The request after each reminder misses what the one before it cached, and writes again.
    after_reminder = [n + 1 for n in planning.reminded]  # requests 6 and 9
    for n in range(1, len(reads_without) + 1):
        if n in after_reminder:
            assert reads_before[n - 1] < reads_without[n - 1]
            assert writes_before[n - 1] > writes_without[n - 1]
        else:
            assert reads_before[n - 1] == reads_without[n - 1]
    assert sum(writes_before) > sum(writes_without)


def test_side_requests_such_as_a_compaction_summary_carry_no_reminder() -> None:
    planning = Planning(reminder_turns=2)
    steps = [*writes(todos_input("in_progress", "pending")), *looks(3), reply("Done.")]
    agent, model, _ = run_agent(steps, planning, tools=[look])
    assert planning.clock.due(planning.todos.current)  # the next turn would carry one
    before = len(planning.reminded)
    compact(agent, pinned=planning.pinned)
    summary_request = model.requests[-1]
    assert is_compaction_request(summary_request)
    assert REMINDER_TAG not in str(summary_request.messages)
    assert len(planning.reminded) == before


# -- plan mode -----------------------------------------------------------------------------------

PLAN = (
    "## Plan\n1. Read the module\n2. **Change** the parser\n   - detail, not a step\n3. Run tests"
)


def plan_mode_run(
    tmp_path: Path, steps: Sequence[Step], approver: Any
) -> tuple[Agent, ScriptedModel, list[Event], Planning, Permissions]:
    permissions = Permissions(mode="plan")
    planning = Planning(permissions=permissions)
    agent, model, events = run_agent(
        steps,
        planning,
        tools=builtin_tools(),
        workspace=tmp_path,
        permissions=permissions,
        approver=approver,
    )
    return agent, model, events, planning, permissions


def test_plan_steps_are_the_top_level_list_items() -> None:
    assert plan_steps(PLAN) == ["Read the module", "Change the parser", "Run tests"]
    assert plan_steps("Just   do it.") == ["Just do it."]
    assert plan_steps("- [ ] one\n* two\n+ three\n4) four") == ["one", "two", "three", "four"]


def test_in_plan_mode_writes_and_commands_are_denied(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> Approval:
        asked.append(request)
        return Approval(True, "yes")

    steps = [
        reply(
            tool_calls=[
                tool_call("write_file", path="a.py", content="x = 1\n"),
                tool_call("bash", command="touch b.py"),
                tool_call("read_file", path="c.txt"),
            ]
        ),
        reply("I will plan first."),
    ]
    (tmp_path / "c.txt").write_text("hello\n")
    agent, model, events, planning, _ = plan_mode_run(tmp_path, steps, approver)
    denied = {
        e.name: e.reason
        for e in events
        if isinstance(e, PermissionDecided) and e.decision == "deny"
    }
    assert set(denied) == {"write_file", "bash"}
    assert all("plan mode" in reason for reason in denied.values())
    assert not (tmp_path / "a.py").exists() and not (tmp_path / "b.py").exists()
    assert asked == []  # denied outright, nobody asked
    write, bash, read = results(agent)
    assert write.get("is_error") and bash.get("is_error") and not read.get("is_error")
    # The first request in plan mode says so (then every PLAN_REMINDER_TURNS turns).
    said = ["Plan mode is on" in str(m.blocks(r.last_message)[-1]) for r in model.requests]
    assert said == [True, False]
    assert planning.plan_mode is not None and planning.plan_mode.active


def test_an_approved_plan_ends_plan_mode_and_becomes_the_todo_list(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> Approval:
        asked.append(request)
        return Approval(True, "looks good")

    steps = [
        reply(tool_calls=[tool_call(EXIT_PLAN_TOOL, plan=PLAN)]),
        reply(tool_calls=[tool_call("write_file", path="a.py", content="x = 1\n")]),
        reply("Done."),
    ]
    agent, _, _, planning, permissions = plan_mode_run(tmp_path, steps, approver)
    # The plan went to the approver; then, in the default mode, the write asks as usual.
    assert [a.tool for a in asked] == [EXIT_PLAN_TOOL, "write_file"]
    assert permissions.mode == "default"
    assert planning.plan_mode is not None and not planning.plan_mode.active
    assert EXIT_PLAN_TOOL not in [str(r) for r in permissions.ask]
    todo_list = planning.todos.current
    assert [(i.content, i.status) for i in todo_list.items] == [
        ("Read the module", "in_progress"),
        ("Change the parser", "pending"),
        ("Run tests", "pending"),
    ]
    exit_result = results(agent)[0]
    assert not exit_result.get("is_error")
    assert "approved your plan" in result_text(exit_result)
    assert todo_list.render() in result_text(exit_result)
    assert (tmp_path / "a.py").read_text() == "x = 1\n"  # the write now runs
    assert planning.plan_mode.plans == [PLAN]


def test_a_rejected_plan_tells_the_model_why_and_plan_mode_stays(tmp_path: Path) -> None:
    def approver(request: ApprovalRequest) -> Approval:
        return Approval(False, "split step 2 into smaller steps")

    steps = [reply(tool_calls=[tool_call(EXIT_PLAN_TOOL, plan=PLAN)]), reply("I'll revise it.")]
    agent, model, _, planning, permissions = plan_mode_run(tmp_path, steps, approver)
    refused = results(agent)[0]
    assert refused.get("is_error") is True
    assert "split step 2 into smaller steps" in result_text(refused)
    assert "split step 2" in str(model.requests[1].messages)  # the model got the reason
    assert permissions.mode == "plan"
    assert planning.plan_mode is not None and planning.plan_mode.active
    assert EXIT_PLAN_TOOL in [str(r) for r in permissions.ask]
    assert planning.todos.current.items == ()


@dataclass
class PlanModeProcesses:
    """Processes of one plan-mode session in ``folder``, each a fresh agent in plan mode whose
    approver is chapter 09's store (so an ``exit_plan_mode`` call waits there)."""

    folder: Path
    seed: int
    clock: FakeClock = field(default_factory=FakeClock)

    def __post_init__(self) -> None:
        self.store = ApprovalStore(self.folder / "approvals.db", clock=self.clock)
        self.seeds = itertools.count(self.seed)

    def sessions(self) -> Sessions:
        return Sessions.for_workspace(
            self.folder, clock=self.clock, ids=seeded_ids(next(self.seeds))
        )

    def process(self, steps: list[Step], prefix: str) -> tuple[Agent, ScriptedModel, Planning]:
        permissions = Permissions(mode="plan")  # the session was in plan mode
        planning = Planning(permissions=permissions)
        model = ScriptedModel(steps, clock=self.clock, id_prefix=prefix)
        agent = Agent(
            model,
            tools=[*planning.tools(), *builtin_tools()],
            plugins=[planning],
            workspace=self.folder,
            clock=self.clock,
            permissions=permissions,
        )
        counter = itertools.count(1)
        ApprovalGate(self.store, ids=lambda: f"apr_{prefix}{next(counter)}").attach(agent)
        return agent, model, planning

    def plan_waits(self) -> tuple[Agent, Planning, AwaitingApproval]:
        """The first process: the model presents its plan, which waits; the run stops."""
        agent, _, planning = self.process(
            [reply(tool_calls=[tool_call(EXIT_PLAN_TOOL, plan=PLAN)])], "a"
        )
        transcript = self.sessions().new(fsync=False)
        agent.plugins.append(transcript)
        stop = list(agent.run("Plan the parser change."))[-1]
        transcript.close()
        assert isinstance(stop, AwaitingApproval) and stop.name == EXIT_PLAN_TOOL
        return agent, planning, stop


def test_a_deferred_plan_approved_later_ends_plan_mode_in_the_resumed_agent(
    tmp_path: Path,
) -> None:
    run = PlanModeProcesses(tmp_path, seed=100)
    _, planning, stop = run.plan_waits()
    assert planning.plan_mode is not None and planning.plan_mode.active
    assert planning.todos.current.items == ()

    # Hours later, another process: approved, the resumed agent leaves plan mode.
    run.clock.advance(3 * 3600)
    agent2, model2, planning2 = run.process([reply("Starting on step 1.")], "b")
    resumed = resume(
        agent2, run.sessions(), run.store, stop.approval_id, Decision(approve=True, by="alice")
    )
    after = list(continue_run(agent2, resumed))
    assert resumed.ran and resumed.record.state == "applied"
    assert planning2.plan_mode is not None and not planning2.plan_mode.active
    assert agent2.tools.permissions.mode == "default"
    assert [(i.content, i.status) for i in planning2.todos.current.items] == [
        ("Read the module", "in_progress"),
        ("Change the parser", "pending"),
        ("Run tests", "pending"),
    ]
    assert any(isinstance(e, ToolFinished) for e in resumed.events)
    assert m.validate(agent2.messages) == []
    assert len(model2.requests) == 1  # the run went on
    assert "Plan mode is on" not in str(model2.requests[0].messages[-1])
    assert isinstance(after[-1], TurnEnded)


def test_a_deferred_plan_rejected_later_keeps_plan_mode_with_the_reason(tmp_path: Path) -> None:
    run = PlanModeProcesses(tmp_path, seed=200)
    _, _, stop = run.plan_waits()
    agent2, model2, planning2 = run.process([reply("I'll revise the plan.")], "b")
    decision = Decision(approve=False, by="bob", note="test the parser first")
    resumed = resume(agent2, run.sessions(), run.store, stop.approval_id, decision)
    list(continue_run(agent2, resumed))
    assert not resumed.ran
    assert "test the parser first" in result_text(resumed.outcome)
    assert planning2.plan_mode is not None and planning2.plan_mode.active
    assert planning2.todos.current.items == ()
    assert "test the parser first" in str(model2.requests[0].messages)


# -- the progress file ---------------------------------------------------------------------------


def progress_file(tmp_path: Path, name: str = "claude-progress.md") -> ProgressFile:
    return ProgressFile(tmp_path / name, task="Migrate the modules", clock=FakeClock())


def test_a_written_progress_file_reads_back(tmp_path: Path) -> None:
    todo_list = TodoList.of(todos_input("completed", "in_progress", "pending")["todos"])
    progress_file(tmp_path).write(todo_list)
    text = (tmp_path / "claude-progress.md").read_text()
    assert "Task: Migrate the modules" in text and todo_list.render() in text
    found = ProgressFile(tmp_path / "claude-progress.md").read()
    assert found is not None
    assert found.task == "Migrate the modules"
    assert [(i.content, i.status) for i in found.todos.items] == [
        (i.content, i.status) for i in todo_list.items
    ]
    assert "1 of 3 steps done" in found.briefing("claude-progress.md")


def test_notes_round_trip_through_the_file(tmp_path: Path) -> None:
    text = Progress("T", TodoList.of([item("A")]), notes="Remember the flag.").render()
    assert parse_progress(text).notes == "Remember the flag."


def test_a_missing_progress_file_is_none(tmp_path: Path) -> None:
    assert progress_file(tmp_path).read() is None


def hostile(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / "claude-progress.md"
    if kind == "not UTF-8":
        path.write_bytes(b"# Progress\n- [ ] caf\xe9\n\xff\xfe")
    elif kind == "too big":
        path.write_text("- [ ] step\n" + "x" * MAX_PROGRESS_BYTES)
    elif kind == "no checklist":
        path.write_text("# Progress\n\nJust some prose, no steps.\n")
    elif kind == "a directory":
        path.mkdir()
    return path


HOSTILE = {
    "not UTF-8": "not UTF-8",
    "too big": "256,000 bytes",
    "no checklist": "no checklist",
    "a directory": "cannot be read",
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_progress_file_is_a_progress_file_error_saying_why(
    tmp_path: Path, kind: str
) -> None:
    hostile(tmp_path, kind)
    with pytest.raises(ProgressFileError, match=HOSTILE[kind]):
        progress_file(tmp_path).read()


def test_an_unreadable_progress_file_is_a_progress_file_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "claude-progress.md"
    path.write_text("- [ ] step\n")
    real_open = Path.open

    def refuse(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(ProgressFileError, match="cannot be read \\(Permission denied\\)"):
        progress_file(tmp_path).read()


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads a file whatever its mode"
)
def test_a_progress_file_without_read_permission_is_a_progress_file_error(tmp_path: Path) -> None:
    path = tmp_path / "claude-progress.md"
    path.write_text("- [ ] step\n")
    path.chmod(0o000)
    try:
        with pytest.raises(ProgressFileError, match="cannot be read"):
            progress_file(tmp_path).read()
    finally:
        path.chmod(0o644)


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_start_reports_a_hostile_progress_file_on_the_next_run_and_goes_on(
    tmp_path: Path, kind: str
) -> None:
    hostile(tmp_path, kind)
    planning = Planning(progress=progress_file(tmp_path))
    assert planning.start() == ""
    assert planning.todos.current.items == ()
    _, model, events = run_agent([reply("Starting fresh.")], planning)
    problems = [e for e in events if isinstance(e, PlanningProblem)]
    assert len(problems) == 1
    assert HOSTILE[kind] in problems[0].reason
    assert "claude-progress.md was not used" in problems[0].reason
    assert len(model.requests) == 1


def test_start_reads_the_list_and_the_briefing_from_the_progress_file(tmp_path: Path) -> None:
    todo_list = TodoList.of(todos_input("completed", "in_progress", "pending")["todos"])
    progress_file(tmp_path).write(todo_list)
    planning = Planning(progress=ProgressFile(tmp_path / "claude-progress.md", clock=FakeClock()))
    briefing = planning.start()
    assert briefing.startswith(REMINDER_TAG)
    assert "do not redo a step marked [x]" in briefing
    assert planning.todos.current.render() == todo_list.render()
    assert planning.todos.writes == 0  # restored, not written by the model


def test_every_write_keeps_the_progress_file_current(tmp_path: Path) -> None:
    planning = Planning(progress=progress_file(tmp_path))
    last = todos_input("completed", "in_progress")
    run_agent([*writes(todos_input("in_progress", "pending"), last), reply("Ok.")], planning)
    found = progress_file(tmp_path).read()
    assert found is not None
    assert found.todos.render() == TodoList.of(last["todos"]).render()


def test_a_progress_file_that_cannot_be_written_is_reported_and_the_write_stands(
    tmp_path: Path,
) -> None:
    hostile(tmp_path, "a directory")
    planning = Planning(progress=progress_file(tmp_path))
    first = todos_input("in_progress", "pending")
    agent, _, events = run_agent([*writes(first), reply("Ok.")], planning)
    assert not results(agent)[0].get("is_error")
    assert planning.todos.current == TodoList.of(first["todos"])
    assert [e for e in events if isinstance(e, PlanningProblem)]


def test_a_checklist_line_in_the_notes_is_not_a_step_and_never_multiplies(tmp_path: Path) -> None:
    path = tmp_path / "claude-progress.md"
    path.write_text(
        "# Progress\n\nTask: ship it\n\n## Steps\n- [x] Build\n- [ ] Release\n\n"
        "## Notes\n- [ ] ask Sam about the tag\n"
    )
    for _ in range(3):  # three sessions, each starting from the file
        planning = Planning(progress=ProgressFile(path, clock=FakeClock()))
        planning.start()
        assert [i.content for i in planning.todos.current.items] == ["Build", "Release"]


def test_parse_checklist_never_raises_even_on_a_lone_surrogate() -> None:
    back = parse_checklist("- [x] fine\n- [ ] broken \ud800 text")
    assert back.items[0].content == "fine"


def test_under_automatic_caching_the_breakpoint_is_made_explicit_before_the_reminder() -> None:
    _, model, _, planning = cached_run("caching first", 3, automatic=True)
    for n in planning.reminded:
        sent = model.requests[n - 1]
        *before, last = m.blocks(sent.last_message)
        assert last["text"].startswith(REMINDER_TAG) and "cache_control" not in last
        assert before[-1].get("cache_control") is not None
        assert "cache_control" not in sent.extra  # the top-level one would land on the reminder
    plain = [r for n, r in enumerate(model.requests, 1) if n not in planning.reminded]
    assert all("cache_control" in r.extra for r in plain)
