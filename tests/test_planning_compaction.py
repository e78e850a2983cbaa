"""The todo list survives every compaction tier and a resume (chapter 12 on chapters 05, 07, 08).

After each compaction, whichever tier made it (microcompact, session memory, the summary,
auto or manual), the list the conversation holds (``list_in``) is the current one and its
checklist is in the context; a session resumed from its transcript gives the list back,
also when the transcript holds a compaction and the list is only in the put-back checklist.

Everything is scripted and on a :class:`FakeClock`; files live in ``tmp_path``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.auto import AutoCompact
from harness.compaction.events import Compacted
from harness.compaction.pinned import PinnedFacts
from harness.compaction.session_memory import MEMORY_PREAMBLE, SessionMemoryCompaction
from harness.compaction.summary import SUMMARY_PREAMBLE, compact, is_compaction_request
from harness.events import Event
from harness.memory import Fact, SessionMemory, render, write_atomic
from harness.model import ScriptedModel, Step, reply, tool_call
from harness.model.scripted_summary import scripted_summary
from harness.planning import TODO_TOOL, Planning, TodoList, list_in
from harness.resume import Sessions, resume
from harness.tokens import ContextBudget
from harness.tools import ToolContext, builtin_tools, tool
from harness.transcript import load, seeded_ids

# Claude Code's arithmetic on a small window: 30,000 - 4,000 - 13,000 = 13,000.
BUDGET = ContextBudget(window=30_000, max_output=4_000)
FILE_BODY = "".join(f"amount_{i} = round(price_{i} * rate, 2)\n" for i in range(100))


def todos(*statuses: str) -> dict[str, Any]:
    return {
        "todos": [
            {"content": f"Step {i}", "status": s, "activeForm": f"Doing step {i}"}
            for i, s in enumerate(statuses, 1)
        ]
    }


FIRST = todos("in_progress", "pending", "pending")
SECOND = todos("completed", "in_progress", "pending")


def write(todo_input: dict[str, Any]) -> Step:
    return reply("Updating my list.", tool_calls=[tool_call(TODO_TOOL, todo_input)])


class Look(BaseModel):
    what: str


@tool(Look, read_only=True)
def look(args: Look, context: ToolContext) -> str:
    """Look something up (its long answers are not a tool microcompact may clear)."""
    return f"{args.what}:\n{FILE_BODY}"


def reads(n: int, start: int = 0) -> list[Step]:
    return [
        reply(f"Reading f{i}.py.", tool_calls=[tool_call("read_file", path=f"f{i}.py")])
        for i in range(start, start + n)
    ]


def looks(n: int, start: int = 0) -> list[Step]:
    return [
        reply(f"Looking at x{i}.", tool_calls=[tool_call("look", what=f"x{i}")])
        for i in range(start, start + n)
    ]


def pairs(todo_list: TodoList | None) -> list[tuple[str, str]] | None:
    """What the checklist keeps of a list: each item's content and status, in order (an item's
    ``activeForm`` is not in it; see the strict test at the end)."""
    return None if todo_list is None else [(i.content, i.status) for i in todo_list.items]


def context_text(agent: Agent) -> str:
    """Every text the model reads in the conversation (text blocks and tool results)."""
    return "\n".join(
        str(b.get("text", b.get("content", ""))) for msg in agent.messages for b in m.blocks(msg)
    )


@dataclass
class Seen:
    """What the conversation held right after one compaction."""

    tier: str
    held: TodoList | None
    current: TodoList
    checklist_in_context: bool


@dataclass
class Session:
    agent: Agent
    model: ScriptedModel
    planning: Planning
    pinned: PinnedFacts
    events: list[Event]
    seen: list[Seen]


def session(
    tmp_path: Path,
    steps: Sequence[Step],
    *,
    keep: int = 5,
    plugins: Sequence[Any] = (),
    files: int = 0,
) -> Session:
    """A scripted session under auto-compaction, looking at the list after each compaction."""
    for n in range(files):
        (tmp_path / f"f{n}.py").write_text(f"# f{n}.py\n{FILE_BODY}")
    clock = FakeClock()
    model = ScriptedModel([*steps, reply("All done.")], clock=clock)
    model.answer_when(is_compaction_request, scripted_summary)
    pinned = PinnedFacts()
    planning = Planning(pinned=pinned)
    agent = Agent(
        model,
        tools=[*builtin_tools(), look, *planning.tools()],
        workspace=tmp_path,
        clock=clock,
        plugins=[AutoCompact(BUDGET, pinned=pinned, keep=keep), planning, *plugins],
        max_tokens=4_000,
        max_turns=len(steps) + 2,
    )
    events: list[Event] = []
    seen: list[Seen] = []
    for event in agent.run("Work through the steps."):
        events.append(event)
        if isinstance(event, Compacted):
            current = planning.todos.current
            in_context = " ".join(current.render().split()) in " ".join(context_text(agent).split())
            seen.append(Seen(event.tier, list_in(agent.messages), current, in_context))
    assert m.validate(agent.messages) == []
    return Session(agent, model, planning, pinned, events, seen)


def assert_kept(seen: Sequence[Seen], tier: str) -> None:
    assert seen, "no compaction happened: the test shows nothing"
    assert {s.tier for s in seen} == {tier}
    for s in seen:
        assert s.current.items, "the list was empty at the compaction"
        assert pairs(s.held) == pairs(s.current)
        assert s.checklist_in_context


# -- tier 1: microcompact, through auto-compact ---------------------------------------------


def test_the_list_survives_microcompact(tmp_path: Path) -> None:
    steps = [write(FIRST), *reads(6), write(SECOND), *reads(8, start=6)]
    run = session(tmp_path, steps, files=14)
    assert_kept(run.seen, "microcompact")
    assert run.seen[-1].current == TodoList.of(SECOND["todos"])
    # The model's later requests read the list too.
    last_request = run.model.requests[-1]
    assert pairs(list_in(last_request.messages)) == pairs(TodoList.of(SECOND["todos"]))


# -- tier 2: session memory ------------------------------------------------------------------


def test_the_list_survives_session_memory_compaction(tmp_path: Path) -> None:
    memory_path = tmp_path / ".harness" / "MEMORY.md"
    write_atomic(memory_path, render([Fact(section="Task", text="Work the steps.", id="f1")]))
    memory = SessionMemory(memory_path)
    # A long conversation whose list was written at its start (in the part tier 2 replaces).
    conversation: list[m.MessageDict] = [m.user("Work through the steps.")]
    use = m.tool_use("toolu_todo", TODO_TOOL, FIRST)
    conversation += [m.assistant([m.text("Planning."), use])]
    conversation += [m.user([m.tool_result("toolu_todo", "Todos have been modified.")])]
    for n in range(50):  # 50K tokens: over the 43K threshold
        call = m.tool_use(f"toolu_{n:04d}", "deploy", {"target": f"t{n}"})
        conversation.append(m.assistant([m.text(f"Deploying t{n}."), call]))
        conversation.append(m.user([m.tool_result(call["id"], f"[{n}] " + "abcd" * 1_000)]))
    conversation += [m.assistant("All deployed."), m.user("Go on.")]
    memory.covered = conversation[-3]
    model = ScriptedModel()  # no script: a model call would fail the test
    pinned = PinnedFacts()
    planning = Planning(pinned=pinned)
    budget = ContextBudget(window=60_000, max_output=4_000)
    auto = AutoCompact(budget, pinned=pinned, session_memory=SessionMemoryCompaction(memory))
    agent = Agent(model, workspace=tmp_path, clock=FakeClock(), plugins=[auto, planning])
    agent.messages = conversation
    assert planning.restore(agent.messages) == TodoList.of(FIRST["todos"])

    rewrite = auto.before_request(agent)
    assert rewrite is not None and isinstance(rewrite.event, Compacted)
    assert rewrite.event.tier == "session_memory"
    agent.apply(rewrite)

    assert str(m.blocks(agent.messages[0])[0]["text"]).startswith(MEMORY_PREAMBLE)
    assert not any(
        u["name"] == TODO_TOOL for msg in agent.messages for u in m.tool_uses(msg)
    )  # the call itself is gone with the old part...
    assert pairs(list_in(agent.messages)) == pairs(planning.todos.current)  # ...the checklist
    assert planning.todos.current.render() in context_text(agent)
    assert "put back 1 pinned fact" in rewrite.event.detail
    assert model.requests == []


# -- tier 3: the summary, through auto-compact and by hand -------------------------------------


def test_the_list_survives_an_auto_compact_summary(tmp_path: Path) -> None:
    # ``look`` results are not microcompact's to clear: only a summary brings the context down.
    steps = [write(FIRST), *looks(12), write(SECOND), *looks(12, start=12)]
    run = session(tmp_path, steps)
    assert_kept(run.seen, "summary")
    assert len(run.seen) >= 2  # one with each list
    assert {len(s.current.open) for s in run.seen} == {2, 3}
    for request in run.model.requests:
        if is_compaction_request(request):
            continue
        # Every request after a summary starts from it, and holds the list as last written.
        first = m.text_of(request.messages[0])
        if first.startswith(SUMMARY_PREAMBLE):
            held = list_in(request.messages)
            assert held is not None and held.items


def test_the_list_survives_a_manual_compact(tmp_path: Path) -> None:
    run = session(tmp_path, [write(FIRST), *looks(2), write(SECOND), *looks(1)])
    assert run.seen == []  # too short to compact on its own
    report = compact(run.agent, pinned=run.pinned)
    current = run.planning.todos.current
    assert current == TodoList.of(SECOND["todos"])  # the session's own list is untouched
    assert pairs(list_in(run.agent.messages)) == pairs(current)
    assert run.planning.todos.current.render() in context_text(run.agent)
    assert any("Step 2" in fact for fact in report.pinned_reinjected)
    assert not any(u["name"] == TODO_TOOL for msg in run.agent.messages for u in m.tool_uses(msg))


def test_a_manual_compact_with_no_list_puts_nothing_back(tmp_path: Path) -> None:
    run = session(tmp_path, looks(2))
    report = compact(run.agent, pinned=run.pinned)
    assert report.pinned_reinjected == ()
    assert list_in(run.agent.messages) is None


# -- resume (chapter 08) ---------------------------------------------------------------------


def recorded(
    tmp_path: Path, steps: Sequence[Step], *, then_compact: bool = False
) -> tuple[str, Planning, Sessions]:
    """A session written to its transcript (and compacted by hand at its end, if asked)."""
    clock = FakeClock()
    sessions = Sessions.for_workspace(tmp_path, clock=clock, ids=seeded_ids(7))
    model = ScriptedModel([*steps, reply("Paused.")], clock=clock)
    model.answer_when(is_compaction_request, scripted_summary)
    pinned = PinnedFacts()
    planning = Planning(pinned=pinned)
    agent = Agent(
        model,
        tools=[look, *planning.tools()],
        workspace=tmp_path,
        clock=clock,
        plugins=[planning],
        max_turns=len(steps) + 1,
    )
    transcript = sessions.new(fsync=False)
    agent.plugins.append(transcript)
    list(agent.run("Work through the steps."))
    if then_compact:
        compact(agent, pinned=pinned)
    transcript.close()
    return transcript.session_id, planning, sessions


def resumed_planning(tmp_path: Path, session_id: str) -> tuple[Agent, Planning, list[Event]]:
    """A fresh process: a new agent and plugin, the session loaded from its transcript."""
    clock = FakeClock()
    planning = Planning()
    model = ScriptedModel([reply("Carrying on.")], clock=clock, id_prefix="b")
    agent = Agent(model, tools=[look, *planning.tools()], workspace=tmp_path, clock=clock)
    agent.plugins.append(planning)
    sessions = Sessions.for_workspace(tmp_path, clock=clock, ids=seeded_ids(8))
    resume(agent, sessions, session_id, fsync=False)
    planning.restore(agent.messages)
    events = list(agent.run("Go on."))
    return agent, planning, events


def test_a_resumed_session_keeps_its_list(tmp_path: Path) -> None:
    session_id, before, _ = recorded(tmp_path, [write(FIRST), *looks(1), write(SECOND)])
    assert before.todos.current == TodoList.of(SECOND["todos"])
    _, after, _ = resumed_planning(tmp_path, session_id)
    assert after.todos.current == before.todos.current
    assert after.todos.writes == 0  # given back, not written


def test_a_refused_write_in_the_transcript_does_not_replace_the_list(tmp_path: Path) -> None:
    bad = todos("in_progress", "in_progress")
    session_id, before, _ = recorded(tmp_path, [write(FIRST), write(bad)])
    _, after, _ = resumed_planning(tmp_path, session_id)
    assert after.todos.current == before.todos.current == TodoList.of(FIRST["todos"])


@pytest.mark.parametrize("when", ["at the end", "then written again"])
def test_a_resumed_session_whose_transcript_holds_a_compaction_keeps_its_list(
    tmp_path: Path, when: str
) -> None:
    session_id, before, sessions = recorded(
        tmp_path, [write(FIRST), *looks(1), write(SECOND)], then_compact=True
    )
    loaded = load(sessions.path(session_id))
    assert loaded.boundary is not None  # the compaction is in the file
    assert not any(u["name"] == TODO_TOOL for msg in loaded.messages for u in m.tool_uses(msg))
    agent, after, _ = resumed_planning(tmp_path, session_id)
    assert pairs(after.todos.current) == pairs(before.todos.current)
    assert before.todos.current == TodoList.of(SECOND["todos"])
    if when == "then written again":
        third = todos("completed", "completed", "in_progress")
        model = ScriptedModel([write(third), reply("Ok.")], id_prefix="c")
        agent.model = model
        list(agent.run("Mark step 2 done."))
        assert list_in(agent.messages) == after.todos.current == TodoList.of(third["todos"])


def test_a_list_given_back_from_the_pinned_checklist_names_its_current_item_by_its_content(
    tmp_path: Path,
) -> None:
    # The checklist keeps content and status, not activeForm (parse_checklist says so): after a
    # compaction and a resume, the current item's content stands in for its activeForm.
    session_id, before, _ = recorded(
        tmp_path, [write(FIRST), *looks(1), write(SECOND)], then_compact=True
    )
    _, after, _ = resumed_planning(tmp_path, session_id)
    assert before.todos.current.summary() == "1/3 done · now: Doing step 2"
    assert after.todos.current.summary() == "1/3 done · now: Step 2"
