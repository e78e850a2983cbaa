"""Fresh subagents and their result capsules (chapter 10).

A child works in a conversation of its own and hands back a capsule: these tests check that
it cannot change its parent, that its report is capped, that it reports partial work when
it runs out of turns, budget or output, that several run in parallel and still come back
in call order, that each writes a sidechain transcript that loads and resumes, and that the
parent's approver, permissions and meter cover it. Forks are in ``tests/test_forks.py``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Message, ToolUseBlock

from harness import messages as m
from harness import tokens
from harness.approvals import ApprovalGate, ApprovalStore
from harness.events import AwaitingApproval, Event, ToolFinished, TurnEnded
from harness.loop import BaseAgent, Plugin
from harness.model import ScriptedModel, faults, reply, said, tool_call
from harness.subagents import WRAP_UP, ResultCapsule, Subagent, SubagentFinished, sidechain_path
from harness.tools import ToolError
from harness.tools.permissions import ApprovalRequest, Deferred, Permissions
from harness.tools.storage import ResultStorage
from harness.transcript import fsck, load, read_entries
from tests.subagent_session import (
    PARENT_SYSTEM,
    Parent,
    Signals,
    assert_unchanged,
    attach,
    make_parent,
    runner_of,
    snapshot,
)


class Keep(Plugin):
    """Keeps each child agent it is given to (``Subagent(plugins=...)``), to look inside."""

    def __init__(self, into: list[BaseAgent]) -> None:
        self.into = into
        self.seen = False

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        if not self.seen:
            self.seen = True
            self.into.append(agent)


def keeping(children: list[BaseAgent]) -> Any:
    return lambda: [Keep(children)]


def results_of(agent: BaseAgent) -> list[m.Block]:
    return [r for message in agent.messages for r in m.tool_results(message)]


def delegate(*tasks: tuple[str, str], **extra: Any) -> Any:
    """A parent reply that hands out each (description, prompt) to a subagent."""
    return reply(
        "Delegating.",
        tool_calls=[tool_call("subagent", description=d, prompt=p, **extra) for d, p in tasks],
    )


def capsules_in(events: list[Event]) -> list[ResultCapsule]:
    return [e.capsule for e in events if isinstance(e, SubagentFinished)]


# -- 1. isolation ---------------------------------------------------------------------------


def test_a_subagent_run_leaves_the_parents_state_as_it_was(tmp_path: Path) -> None:
    parent = make_parent(
        tmp_path, steps=[reply(tool_calls=[tool_call("read_file", path="a.py")]), reply("Read it.")]
    )
    parent.run("Look at a.py")
    sub = attach(parent, tools=["read_file", "write_file", "dump"])
    parent.model.script_when(
        said("Task one"),
        [
            reply(
                "Working.",
                tool_calls=[
                    tool_call("read_file", path="a.py"),
                    tool_call("dump", what="x"),
                    tool_call("write_file", path="notes.md", content="retry doubles"),
                ],
            ),
            reply("Report: a.py doubles the delay; wrote notes.md."),
        ],
    )
    before = snapshot(parent.agent)
    assert before.finished, "the parent's own run left results in its runner"

    capsule = sub.run("Task one: read a.py and note what retry does")

    assert capsule.status == "complete"
    assert capsule.tool_calls == 3
    assert_unchanged(parent.agent, before)


def test_a_child_cannot_change_the_parents_tools_or_settings_through_its_agent(
    tmp_path: Path,
) -> None:
    parent = make_parent(tmp_path)
    children: list[BaseAgent] = []
    sub = attach(parent, tools=["read_file"], plugins=keeping(children))
    parent.model.script_when(said("Peek"), [reply("Nothing to do.")])
    before = snapshot(parent.agent)
    sub.run("Peek at nothing")

    (child,) = children
    child_runner = runner_of(child)
    write = runner_of(parent.agent).registry.get("write_file")
    assert write is not None
    child_runner.registry.add(write)
    child.messages.append(m.user("a child's scribble"))
    child.config.max_turns = 99

    assert_unchanged(parent.agent, before)
    assert child_runner.storage is not runner_of(parent.agent).storage


class Mangler:
    """The parent's model, except that a child's tool calls come back with broken inputs:
    the first as a JSON string (the runner mends it to an object, in the child's
    conversation), the second as a list (an error for the child)."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def create(self, **kwargs: Any) -> Message:
        message = self.model.create(**kwargs)
        if not said("Mangled task")(self.model.requests[-1]):
            return message
        content: list[Any] = []
        broken: Iterator[Any] = iter(['{"path": "a.py"}', ["a.py"]])
        for block in message.content:
            if block.type == "tool_use":
                block = ToolUseBlock.model_construct(
                    type="tool_use", id=block.id, name=block.name, input=next(broken)
                )
            content.append(block)
        return message.model_copy(update={"content": content})


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_a_childs_malformed_tool_input_is_mended_in_its_own_conversation_only(
    tmp_path: Path,
) -> None:
    parent = make_parent(tmp_path, steps=[reply("Hello.")])
    parent.run("Say hello")
    parent.agent.model = Mangler(parent.model)
    children: list[BaseAgent] = []
    sub = attach(parent, tools=["read_file"], plugins=keeping(children))
    parent.model.script_when(
        said("Mangled task"),
        [
            reply(tool_calls=[tool_call("read_file", path="x"), tool_call("read_file", path="y")]),
            reply("Read a.py once; the other call was malformed."),
        ],
    )
    before = snapshot(parent.agent)

    capsule = sub.run("Mangled task: read a.py")

    assert_unchanged(parent.agent, before)
    assert capsule.status == "complete"
    (child,) = children
    uses = m.tool_uses(child.messages[1])
    assert [u["input"] for u in uses] == [{"path": "a.py"}, {}]  # mended in place
    first, second = results_of(child)
    assert not first.get("is_error") and "retry" in str(first["content"])
    assert second["is_error"] and "not a JSON object" in str(second["content"])
    assert m.validate(child.messages) == []


def test_a_childs_oversized_results_are_stored_in_its_own_storage(tmp_path: Path) -> None:
    parent_store = tmp_path / "parent-results"
    parent = make_parent(tmp_path, storage=ResultStorage(parent_store))
    children: list[BaseAgent] = []
    sub = attach(parent, tools=["dump"], plugins=keeping(children))
    parent.model.script_when(
        said("Dump it"), [reply(tool_calls=[tool_call("dump")]), reply("The log repeats.")]
    )

    sub.run("Dump it and summarise")

    (child,) = children
    (result,) = results_of(child)
    assert "@tool-results/" in str(result["content"])  # stored, a preview came back
    stored = list(runner_of(child).storage.directory.iterdir())
    assert len(stored) == 1 and stored[0].stat().st_size > 50_000
    assert not parent_store.exists() or not any(parent_store.iterdir())


def test_a_child_cannot_call_a_parent_tool_outside_its_subset(tmp_path: Path) -> None:
    parent = make_parent(tmp_path)
    children: list[BaseAgent] = []
    sub = attach(parent, tools=["read_file"], plugins=keeping(children))
    parent.model.script_when(
        said("Only read"),
        [
            reply(tool_calls=[tool_call("write_file", path="x.md", content="no")]),
            reply("I could not write."),
        ],
    )

    capsule = sub.run("Only read, then try to write x.md")

    (child,) = children
    (result,) = results_of(child)
    assert result["is_error"] and "Unknown tool 'write_file'" in str(result["content"])
    assert not (parent.workspace / "x.md").exists()
    assert capsule.changed == []
    child_request = next(r for r in parent.model.requests if said("Only read")(r))
    assert [t["name"] for t in child_request.tools or []] == ["read_file"]


def test_a_child_has_no_subagent_tool_and_cannot_start_one(tmp_path: Path) -> None:
    parent = make_parent(tmp_path)
    children: list[BaseAgent] = []
    sub = attach(parent, plugins=keeping(children))  # all the parent's tools but this one
    parent.model.script_when(
        said("Recurse"),
        [
            reply(tool_calls=[tool_call("subagent", description="deeper", prompt="Recurse")]),
            reply("No subagents for me."),
        ],
    )

    capsule = sub.run("Recurse: start a subagent")

    child_request = next(r for r in parent.model.requests if said("Recurse")(r))
    names = [t["name"] for t in child_request.tools or []]
    assert "subagent" not in names and "read_file" in names
    (result,) = results_of(children[0])
    assert result["is_error"] and "Unknown tool 'subagent'" in str(result["content"])
    assert len(sub.capsules) == 1 and capsule.status == "complete"


# -- 2. capsule caps ------------------------------------------------------------------------

LONG_REPORT = "The retry loop doubles its delay on each failure. " * 400


@pytest.mark.parametrize("transcript", [True, False])
def test_a_long_report_is_cut_to_the_cap_and_the_note_says_where_the_rest_is(
    tmp_path: Path, transcript: bool
) -> None:
    parent = make_parent(tmp_path, transcript=transcript)
    sub = attach(parent, summary_tokens=120)
    parent.model.script_when(said("Explain retry"), [reply(LONG_REPORT)])

    capsule = sub.run("Explain retry at length")

    assert capsule.status == "complete"
    assert capsule.cut is True
    assert tokens.estimate_text(capsule.summary) <= 120
    assert capsule.summary_tokens == tokens.estimate_text(LONG_REPORT)
    assert capsule.summary.startswith(LONG_REPORT[:100])
    if transcript:
        assert capsule.transcript is not None
        name = Path(capsule.transcript).name
        assert f"The whole report is in {name}" in capsule.summary
        assert m.text_of(load(capsule.transcript).messages[-1]) == LONG_REPORT
    else:
        assert capsule.transcript is None
        assert "The rest was not kept." in capsule.summary


def test_a_short_report_is_kept_whole(tmp_path: Path) -> None:
    parent = make_parent(tmp_path)
    sub = attach(parent, summary_tokens=120)
    parent.model.script_when(said("Brief"), [reply("retry doubles the delay.")])

    capsule = sub.run("Brief: what does retry do?")

    assert (capsule.summary, capsule.cut) == ("retry doubles the delay.", False)


def test_the_parent_gets_a_small_capsule_not_the_childs_conversation(tmp_path: Path) -> None:
    parent = make_parent(
        tmp_path, steps=[delegate(("read big", "Read big.txt and report")), reply("Thanks.")]
    )
    (parent.workspace / "big.txt").write_text("data row with some words in it\n" * 1500)
    sub = attach(parent, summary_tokens=200)
    parent.model.script_when(
        said("Read big.txt"),
        [reply(tool_calls=[tool_call("read_file", path="big.txt")]), reply(LONG_REPORT)],
    )

    parent.run("Find out what big.txt holds")

    first, second = (r.input_tokens for r in parent.requests_of_parent())
    child_last = [r for r in parent.model.requests if said("Read big.txt")(r)][-1]
    child_conversation = child_last.input_tokens + tokens.estimate_text(LONG_REPORT)
    assert child_conversation > 15_000
    growth = second - first
    assert growth < 200 + 150  # the cap, plus the capsule's head and footer and the call
    assert growth * 20 < child_conversation
    (capsule,) = sub.capsules.values()
    (result,) = m.tool_results(parent.agent.messages[2])
    assert result["content"] == capsule.render()


# -- 3. partial results ---------------------------------------------------------------------


def reads(text: str, n: int) -> list[Any]:
    return [
        reply(f"{text} {i}", tool_calls=[tool_call("read_file", path="a.py")])
        for i in range(1, n + 1)
    ]


def test_a_child_out_of_turns_gets_one_wrap_up_call_whose_text_is_its_report(
    tmp_path: Path,
) -> None:
    parent = make_parent(tmp_path)
    sub = attach(parent, max_turns=2)
    wrap = "Wrap-up: read a.py twice; retry doubles; nothing left."
    parent.model.script_when(said("Long task"), [*reads("reading", 2), reply(wrap)])

    capsule = sub.run("Long task: keep reading")

    assert capsule.status == "partial"
    assert "turn limit (2)" in capsule.reason
    assert capsule.summary == wrap
    assert capsule.turns == 3  # two of its own, one wrap-up
    wrap_request = [r for r in parent.model.requests if said("Long task")(r)][-1]
    assert WRAP_UP in m.text_of(wrap_request.messages[-1])


def test_without_wrap_up_a_child_out_of_turns_reports_what_it_wrote(tmp_path: Path) -> None:
    parent = make_parent(tmp_path)
    sub = attach(parent, max_turns=2, wrap_up=False)
    parent.model.script_when(said("Long task"), reads("reading", 2))

    capsule = sub.run("Long task: keep reading")

    assert capsule.status == "partial" and "turn limit (2)" in capsule.reason
    assert capsule.summary == "reading 1\n\nreading 2"
    assert capsule.turns == 2


def test_a_failed_wrap_up_keeps_what_the_child_wrote(tmp_path: Path) -> None:
    parent = make_parent(tmp_path)
    sub = attach(parent, max_turns=2)
    parent.model.script_when(
        said("Long task"), [*reads("reading", 2), faults.invalid_request("wrap-up refused")]
    )

    capsule = sub.run("Long task: keep reading")

    assert capsule.status == "partial"
    assert capsule.summary == "reading 1\n\nreading 2"


@pytest.mark.parametrize("budget", [900, 1_400, 2_600])
def test_a_child_stops_before_a_request_that_would_pass_its_token_budget(
    tmp_path: Path, budget: int
) -> None:
    parent = make_parent(tmp_path)
    sub = attach(parent, tools=["read_file"], max_turns=12, token_budget=budget)
    parent.model.script_when(said("Budget task"), reads("step", 12))

    capsule = sub.run("Budget task: read over and over")

    assert capsule.status == "partial"
    assert "token budget" in capsule.reason and f"{budget:,}" in capsule.reason
    assert capsule.tokens <= budget
    assert 1 <= capsule.turns < 12
    assert capsule.summary.startswith("step 1")


def test_a_chatty_child_never_passes_its_token_budget(tmp_path: Path) -> None:
    parent = make_parent(tmp_path)
    sub = attach(parent, tools=["read_file"], token_budget=800)
    chatty = reply("a long chatty text " * 40, tool_calls=[tool_call("read_file", path="a.py")])
    parent.model.script_when(said("Chatty"), [chatty] * 6)

    capsule = sub.run("Chatty task: read and talk")

    assert capsule.status == "partial" and "token budget" in capsule.reason
    assert capsule.tokens <= 800
    assert capsule.summary.startswith("a long chatty text")  # the cut reply is kept


def test_a_reply_cut_at_max_tokens_is_partial_and_its_text_is_the_report(tmp_path: Path) -> None:
    parent = make_parent(tmp_path)
    parent.agent.config.max_tokens = 50
    sub = attach(parent)
    words = "finding " * 200
    parent.model.script_when(said("Wordy"), [reply(words)])

    capsule = sub.run("Wordy: report everything")

    assert capsule.status == "partial"
    assert "max_tokens" in capsule.reason
    assert capsule.summary.strip()
    assert words.startswith(capsule.summary)


def test_an_api_error_fails_the_child_but_keeps_what_it_wrote(tmp_path: Path) -> None:
    parent = make_parent(
        tmp_path, steps=[delegate(("look", "Fragile task: look at a.py")), reply("Noted.")]
    )
    attach(parent)
    parent.model.script_when(
        said("Fragile task"),
        [
            reply("a.py defines retry.", tool_calls=[tool_call("read_file", path="a.py")]),
            faults.invalid_request("boom"),
        ],
    )

    events = parent.run("Delegate the look")

    (capsule,) = capsules_in(events)
    assert capsule.status == "failed"
    assert "BadRequestError" in capsule.reason
    assert "a.py defines retry." in capsule.summary
    assert isinstance(events[-1], TurnEnded)  # the parent went on
    (result,) = m.tool_results(parent.agent.messages[2])
    assert not result.get("is_error") and "failed" in str(result["content"])


def test_changed_lists_only_successful_calls_of_tools_that_change_things(
    tmp_path: Path,
) -> None:
    parent = make_parent(tmp_path)
    sub = attach(parent, tools=["read_file", "write_file", "edit_file"])
    parent.model.script_when(
        said("Edit task"),
        [
            reply(
                tool_calls=[
                    tool_call("read_file", path="a.py"),
                    tool_call("write_file", path="notes.md", content="retry doubles"),
                    tool_call("write_file", path="../outside.md", content="no"),
                    tool_call("edit_file", path="a.py", old_string="absent", new_string="x"),
                    tool_call("edit_file", path="b.py", old_string="hello", new_string="hi"),
                ]
            ),
            reply("Wrote notes.md and edited b.py."),
        ],
    )

    capsule = sub.run("Edit task: note and edit")

    assert capsule.changed == ["write_file notes.md", "edit_file b.py"]
    assert capsule.tool_calls == 5
    assert "Changed: write_file notes.md; edit_file b.py" in capsule.render()


# -- 4. parallel children, results in call order --------------------------------------------


class Stopped(Plugin):
    """Records which child ended its turn, in the order they did, and signals it."""

    def __init__(self, order: list[str], signals: Signals) -> None:
        self.order = order
        self.signals = signals

    def on_stop(self, agent: BaseAgent, reply: Message) -> str | None:
        task = m.text_of(agent.messages[0]).split(":")[0]
        self.order.append(task)
        self.signals.get(f"{task} stopped").set()
        return None


def test_subagent_calls_in_one_reply_run_in_parallel_and_come_back_in_call_order(
    tmp_path: Path,
) -> None:
    signals = Signals()
    order: list[str] = []
    parent = make_parent(
        tmp_path,
        extra_tools=signals.tools(),
        steps=[
            delegate(
                ("one", "Child one: wait for child three"),
                ("two", "Child two: read a.py"),
                ("three", "Child three: finish first"),
            ),
            reply("All three reported."),
        ],
    )
    sub = attach(parent, plugins=lambda: [Stopped(order, signals)])
    model = parent.model
    # Child one's tool waits until child three has ended its turn: it can only go on if
    # the two run at once. If they ran one after the other, it would time out (and fail).
    model.script_when(
        said("Child one"),
        [reply(tool_calls=[tool_call("wait_for", name="Child three stopped")]), reply("one done")],
    )
    model.script_when(
        said("Child two"),
        [reply(tool_calls=[tool_call("read_file", path="a.py")]), reply("two done")],
    )
    model.script_when(
        said("Child three"),
        [reply(tool_calls=[tool_call("set_signal", name="go")]), reply("three done")],
    )

    events = parent.run("Run three children")

    assert order.index("Child three") < order.index("Child one")
    results = m.tool_results(parent.agent.messages[2])
    uses = m.tool_uses(parent.agent.messages[1])
    assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses]
    assert [str(r["content"]).split("\n\n")[1] for r in results] == [
        "one done",
        "two done",
        "three done",
    ]
    assert not any(r.get("is_error") for r in results)
    finished = capsules_in(events)
    assert [c.task for c in finished] == ["one", "two", "three"]
    assert [c.agent_id for c in finished] == [sub.capsules[u["id"]].agent_id for u in uses]
    assert all(c.status == "complete" for c in finished)
    # the SubagentFinished events follow the tool results, after the last ToolFinished
    last_tool = max(i for i, e in enumerate(events) if isinstance(e, ToolFinished))
    first_capsule = min(i for i, e in enumerate(events) if isinstance(e, SubagentFinished))
    assert first_capsule > last_tool


# -- 5. sidechain transcripts ---------------------------------------------------------------


def two_children(
    tmp_path: Path, seed: int = 10, later: tuple[Any, ...] = ()
) -> tuple[Parent, Subagent, list[Event]]:
    parent = make_parent(
        tmp_path,
        transcript=True,
        seed=seed,
        steps=[
            delegate(("find", "Side one: find retry"), ("check", "Side two: check b.py")),
            reply("Both reported."),
        ],
    )
    sub = attach(parent, tools=["read_file", "write_file"])
    parent.model.script_when(
        said("Side one"),
        [
            reply(tool_calls=[tool_call("read_file", path="a.py")]),
            reply("retry is in a.py"),
            *later,  # a resumed conversation holds its task: it goes on with its own script
        ],
    )
    parent.model.script_when(
        said("Side two"),
        [
            reply(tool_calls=[tool_call("read_file", path="b.py")]),
            reply(tool_calls=[tool_call("write_file", path="notes.md", content="hello")]),
            reply("b.py prints hello; noted it"),
        ],
    )
    events = parent.run("Investigate")
    return parent, sub, events


def test_each_child_writes_a_sidechain_that_loads_as_a_valid_conversation(
    tmp_path: Path,
) -> None:
    parent, sub, _ = two_children(tmp_path)
    writer = parent.writer
    assert writer is not None
    capsules = list(sub.capsules.values())
    assert len(capsules) == 2 and len({c.agent_id for c in capsules}) == 2

    for capsule in capsules:
        assert capsule.transcript is not None
        path = Path(capsule.transcript)
        assert path == sidechain_path(writer.path, capsule.agent_id)
        assert path.parent == writer.path.with_suffix("") / "subagents"
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert lines
        for line in lines:
            assert line["isSidechain"] is True
            assert line["agentId"] == capsule.agent_id
            assert line["sessionId"] == writer.session_id
        session = load(path)
        assert m.validate(session.messages) == []
        assert session.messages[-1]["role"] == "assistant"
        assert m.text_of(session.messages[-1]) == capsule.summary
        assert session.findings == []
        report = fsck(read_entries(path))
        assert report.ok, str(report)

    main = load(writer.path)
    assert main.messages == parent.agent.messages  # no child's message in the parent's file
    assert fsck(read_entries(writer.path)).ok


def test_agent_ids_are_the_same_for_the_same_session_and_call(tmp_path: Path) -> None:
    _, first, _ = two_children(tmp_path / "one", seed=3)
    _, again, _ = two_children(tmp_path / "two", seed=3)
    _, other, _ = two_children(tmp_path / "three", seed=4)

    ids = {k: c.agent_id for k, c in first.capsules.items()}
    assert ids == {k: c.agent_id for k, c in again.capsules.items()}
    assert set(ids.values()).isdisjoint(c.agent_id for c in other.capsules.values())
    for agent_id in ids.values():
        assert len(agent_id) == 9 and agent_id[0] == "a"
        int(agent_id[1:], 16)


def test_resume_continues_a_child_from_its_sidechain(tmp_path: Path) -> None:
    parent = make_parent(tmp_path, transcript=True)
    sub = attach(parent, tools=["read_file"])
    parent.model.script_when(
        said("Resumable task"),
        [
            reply(tool_calls=[tool_call("read_file", path="a.py")]),
            reply("First report: retry doubles."),
            reply("Second report: b.py prints hello."),
        ],
    )
    first = sub.run("Resumable task: look at a.py")
    assert first.transcript is not None
    path = Path(first.transcript)
    size = len(path.read_text().splitlines())

    second = sub.resume(first.agent_id, "Now also look at b.py")

    assert second.agent_id == first.agent_id and second.status == "complete"
    assert second.summary == "Second report: b.py prints hello."
    request = parent.model.requests[-1]
    texts = [m.text_of(x) for x in request.messages]
    assert texts[0].startswith("Resumable task") and "First report: retry doubles." in texts
    assert texts[-1] == "Now also look at b.py"
    assert len(path.read_text().splitlines()) > size
    session = load(path)
    assert m.validate(session.messages) == []
    assert len(session.messages) == 6
    assert m.text_of(session.messages[-1]) == second.summary
    assert fsck(read_entries(path)).ok


def test_the_tools_resume_field_continues_a_child_and_bad_ids_are_error_results(
    tmp_path: Path,
) -> None:
    parent, sub, _ = two_children(tmp_path, later=(reply("Resumed: retry is on line 1."),))
    found = next(c for c in sub.capsules.values() if c.task == "find")
    parent.model.extend(
        [
            reply(
                tool_calls=[
                    tool_call(
                        "subagent", description="more", prompt="Go on", resume=found.agent_id
                    ),
                    tool_call("subagent", description="bad", prompt="Go on", resume="../../x"),
                    tool_call("subagent", description="gone", prompt="Go on", resume="a00000000"),
                ]
            ),
            reply("Done."),
        ]
    )

    events = parent.run("Continue the search")

    assert isinstance(events[-1], TurnEnded)
    ok, bad, gone = m.tool_results(parent.agent.messages[-2])
    assert not ok.get("is_error") and "Resumed: retry is on line 1." in str(ok["content"])
    assert found.agent_id in str(ok["content"])
    assert bad["is_error"] and "resume" in str(bad["content"])
    assert gone["is_error"] and "no subagent a00000000" in str(gone["content"])
    session = load(found.transcript or "")
    assert m.text_of(session.messages[-1]) == "Resumed: retry is on line 1."


def test_resuming_without_a_transcript_or_an_unknown_id_is_a_clear_error(tmp_path: Path) -> None:
    bare = make_parent(tmp_path / "bare")
    with pytest.raises(ToolError, match="no subagent a12345678"):
        attach(bare).resume("a12345678", "Go on")

    kept = make_parent(tmp_path / "kept", transcript=True)
    with pytest.raises(ToolError, match="no subagent a12345678"):
        attach(kept).resume("a12345678", "Go on")


def test_resume_from_code_refuses_an_id_that_is_not_an_agent_id(tmp_path: Path) -> None:
    parent = make_parent(tmp_path, transcript=True, steps=[reply("Earlier session.")])
    parent.run("Hello")
    assert parent.writer is not None
    other = parent.writer.path
    # "agent-x/../../../<session>" needs agent-x to exist for the kernel to walk it
    (other.with_suffix("") / "subagents" / "agent-x").mkdir(parents=True)
    size = other.stat().st_size
    parent.model.script_when(said("Go on"), [reply("I am someone else's session now.")])
    sub = attach(parent)
    with contextlib.suppress(ToolError):
        sub.resume(f"x/../../../{other.stem}", "Go on")
    assert other.stat().st_size == size


def test_a_cut_wrap_up_report_is_where_its_note_says(tmp_path: Path) -> None:
    parent = make_parent(tmp_path, transcript=True)
    sub = attach(parent, max_turns=1, summary_tokens=100)
    parent.model.script_when(said("Out of turns"), [*reads("reading", 1), reply(LONG_REPORT)])

    capsule = sub.run("Out of turns: read and report")

    assert capsule.cut and capsule.transcript is not None
    assert Path(capsule.transcript).name in capsule.summary
    assert LONG_REPORT in Path(capsule.transcript).read_text()


# -- 6. approvals, permissions, the meter -----------------------------------------------------


def test_a_parent_approver_that_defers_is_refused_in_the_child_and_the_child_goes_on(
    tmp_path: Path,
) -> None:
    asked: list[ApprovalRequest] = []

    def later(request: ApprovalRequest) -> Deferred:
        asked.append(request)
        return Deferred("ticket-7", "a person decides tomorrow")

    parent = make_parent(
        tmp_path,
        permissions=Permissions(mode="default"),
        approver=later,
        steps=[delegate(("write", "Needs approval: write notes.md")), reply("OK.")],
    )
    children: list[BaseAgent] = []
    sub = attach(parent, plugins=keeping(children))
    parent.model.script_when(
        said("Needs approval"),
        [
            reply(tool_calls=[tool_call("write_file", path="notes.md", content="x")]),
            reply("I was not allowed to write notes.md."),
        ],
    )

    events = parent.run("Get notes written")

    assert [r.tool for r in asked] == ["write_file"]
    assert not any(isinstance(e, AwaitingApproval) for e in events)
    assert isinstance(events[-1], TurnEnded)
    (result,) = results_of(children[0])
    assert result["is_error"]
    assert "cannot wait for a later decision" in str(result["content"])
    assert not (parent.workspace / "notes.md").exists()
    (capsule,) = sub.capsules.values()
    assert capsule.status == "complete" and capsule.changed == []
    assert capsule.summary == "I was not allowed to write notes.md."


def test_a_parents_approval_gate_files_nothing_for_a_childs_call(tmp_path: Path) -> None:
    parent = make_parent(tmp_path, transcript=True, permissions=Permissions(mode="default"))
    store = ApprovalStore(tmp_path / "approvals.db", clock=parent.clock)
    ApprovalGate(store).attach(parent.agent)
    children: list[BaseAgent] = []
    sub = attach(parent, plugins=keeping(children))
    parent.model.script_when(
        said("Gated"),
        [
            reply(tool_calls=[tool_call("write_file", path="notes.md", content="x")]),
            reply("Refused."),
        ],
    )

    capsule = sub.run("Gated: write notes.md")

    assert capsule.status == "complete"
    (result,) = results_of(children[0])
    assert result["is_error"] and "cannot wait for a later decision" in str(result["content"])
    assert store.all() == []


def test_plan_mode_on_the_parent_denies_a_childs_write(tmp_path: Path) -> None:
    parent = make_parent(tmp_path, permissions=Permissions(mode="plan"))
    children: list[BaseAgent] = []
    sub = attach(parent, plugins=keeping(children))
    parent.model.script_when(
        said("Plan"),
        [
            reply(
                tool_calls=[
                    tool_call("read_file", path="a.py"),
                    tool_call("write_file", path="notes.md", content="x"),
                ]
            ),
            reply("Read only."),
        ],
    )

    capsule = sub.run("Plan: read a.py and write notes.md")

    read, write = results_of(children[0])
    assert not read.get("is_error")
    assert write["is_error"] and "plan mode" in str(write["content"])
    assert not (parent.workspace / "notes.md").exists()
    assert capsule.changed == []


def test_the_parents_meter_counts_its_childrens_calls_and_a_capsule_only_its_own(
    tmp_path: Path,
) -> None:
    parent, sub, _ = two_children(tmp_path)
    capsules = list(sub.capsules.values())

    requests = parent.model.requests
    own = parent.requests_of_parent()
    assert len(own) == 2
    assert len(parent.agent.meter.calls) == len(requests)
    # Capsules arrive in finishing order, which is the threads' business: pair each with its
    # task by the description the parent gave it, not by position.
    tasks = {"find": "Side one", "check": "Side two"}
    assert sorted(c.task for c in capsules) == sorted(tasks)
    for capsule in capsules:
        theirs = [r for r in requests if said(tasks[capsule.task])(r)]
        assert capsule.turns == len(theirs)
        prompts = capsule.input_tokens + capsule.cache_write_tokens + capsule.cache_read_tokens
        assert prompts == sum(r.input_tokens for r in theirs)
    total = sum(c.prompt_tokens + c.usage.output_tokens for c in parent.agent.meter.calls)
    assert total > sum(c.tokens for c in capsules)  # the parent's own calls on top
    assert all(c.cost_usd is not None and c.cost_usd > 0 for c in capsules)


def test_a_child_asks_for_the_model_it_is_given(tmp_path: Path) -> None:
    parent = make_parent(tmp_path)
    sub = attach(parent, model="claude-haiku-4-5")
    parent.model.script_when(said("Cheap"), [reply("Done cheaply.")])

    sub.run("Cheap task")

    request = next(r for r in parent.model.requests if said("Cheap")(r))
    assert request.model == "claude-haiku-4-5"
    assert request.system != PARENT_SYSTEM
