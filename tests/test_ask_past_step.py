"""Asking a past step (chapter 10; a "step ask", as a post-mortem of a workflow runner's
resume proposed): fork a recorded session at one entry and question it, without touching the
original.

A session is recorded with a few turns through ``Sessions``; an entry is picked from
``load(path).chain``. ``ask_past_step`` must send the conversation as it was at that entry
(plus, for a reply with tool calls, those calls' recorded results) followed by the question,
write the exchange to a new session file that ``load`` reads back, leave the original file's
bytes and mtime alone, and refuse unknown entries, unknown sessions and busy agents. The
loader's ``at=`` is unit-tested on a file with a rewind branch, and across a compaction.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.summary import compact, is_compaction_request
from harness.model import ScriptedModel, reply, tool_call
from harness.model.scripted_summary import scripted_summary
from harness.resume import SessionNotFound, Sessions
from harness.subagents import ask_past_step
from harness.tools.builtins import read_file
from harness.transcript import Entry, EntryNotFound, load, seeded_ids

QUESTION = "Why did you read a.py at this point?"
LATER = ("a.py looks fine.", "Now read b.py.", "B_CONTENT", "b.py looks fine.", "All done.")
"""Text written after the first reply: none of it may reach a question asked there."""


def recorded(tmp_path: Path) -> tuple[Sessions, str, Path, Agent]:
    """A three-prompt session: read a.py, read b.py, wrap up."""
    (tmp_path / "a.py").write_text("A_CONTENT\n")
    (tmp_path / "b.py").write_text("B_CONTENT\n")
    clock = FakeClock()
    sessions = Sessions.for_workspace(tmp_path, clock=clock, ids=seeded_ids(1))
    writer = sessions.new(fsync=False)
    model = ScriptedModel(
        [
            reply("Reading a.py.", tool_calls=[tool_call("read_file", path="a.py")]),
            reply("a.py looks fine."),
            reply(tool_calls=[tool_call("read_file", path="b.py")]),
            reply("b.py looks fine."),
            reply("All done."),
        ],
        clock=clock,
    )
    model.answer_when(is_compaction_request, scripted_summary)
    agent = Agent(model, tools=[read_file], workspace=tmp_path, clock=clock, plugins=[writer])
    for prompt in ("Read a.py.", "Now read b.py.", "Anything else?"):
        list(agent.run(prompt))
    writer.flush(durable=False)
    return sessions, writer.session_id, writer.path, agent


def asker(tmp_path: Path, *answers: str) -> tuple[Agent, ScriptedModel]:
    clock = FakeClock()
    model = ScriptedModel([reply(a) for a in answers], clock=clock)
    return Agent(model, tools=[read_file], workspace=tmp_path, clock=clock), model


def entry(chain: list[Entry], kind: str, text: str) -> Entry:
    """The chain entry of ``kind`` whose message holds ``text``."""
    return next(e for e in chain if e.type == kind and text in json.dumps(e.message))


def fingerprint(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), stat.st_mtime_ns, stat.st_size


def sent_text(model: ScriptedModel) -> str:
    return json.dumps(model.requests[-1].messages, ensure_ascii=False)


# --- what the model is asked --------------------------------------------------------------


def test_a_reply_with_tool_calls_is_asked_with_its_recorded_results_and_nothing_later(
    tmp_path: Path,
) -> None:
    sessions, session_id, path, _ = recorded(tmp_path)
    at = entry(load(path).chain, "assistant", "Reading a.py.")
    agent, model = asker(tmp_path, "You asked me to review it.")
    past = ask_past_step(agent, sessions, session_id, at.uuid or "", QUESTION, fsync=False)
    assert past.answers == ["You asked me to review it."]
    messages = model.requests[-1].messages
    assert [x["role"] for x in messages] == ["user", "assistant", "user"]
    assert m.text_of(messages[0]) == "Read a.py."
    [use] = m.tool_uses(messages[1])
    [result] = m.tool_results(messages[2])
    assert result["tool_use_id"] == use["id"] and "A_CONTENT" in str(result["content"])
    assert m.blocks(messages[-1])[-1] == m.text(QUESTION)  # it ends with the question
    assert not any(text in sent_text(model) for text in LATER)
    assert past.at == at.uuid and past.source == session_id


def test_a_prompt_entry_is_asked_with_the_question_joining_that_prompt(tmp_path: Path) -> None:
    sessions, session_id, path, _ = recorded(tmp_path)
    at = entry(load(path).chain, "user", "Now read b.py.")
    agent, model = asker(tmp_path, "To compare it with a.py.")
    ask_past_step(agent, sessions, session_id, at.uuid or "", QUESTION, fsync=False)
    last = model.requests[-1].messages[-1]
    assert [b.get("text") for b in m.blocks(last)] == ["Now read b.py.", QUESTION]
    sent = sent_text(model)
    assert "a.py looks fine." in sent  # what came before is there
    assert not any(text in sent for text in ("B_CONTENT", "b.py looks fine.", "All done."))


def test_a_plain_reply_is_asked_with_the_question_as_a_new_message(tmp_path: Path) -> None:
    sessions, session_id, path, _ = recorded(tmp_path)
    at = entry(load(path).chain, "assistant", "a.py looks fine.")
    agent, model = asker(tmp_path, "Nothing looked wrong.")
    ask_past_step(agent, sessions, session_id, at.uuid or "", QUESTION, fsync=False)
    messages = model.requests[-1].messages
    assert m.text_of(messages[-2]) == "a.py looks fine."
    assert messages[-1]["role"] == "user" and m.text_of(messages[-1]) == QUESTION
    assert not any(text in sent_text(model) for text in LATER[1:])


# --- the original session is only read ----------------------------------------------------


def test_asking_and_following_up_leave_the_original_file_byte_for_byte(tmp_path: Path) -> None:
    sessions, session_id, path, _ = recorded(tmp_path)
    at = entry(load(path).chain, "assistant", "Reading a.py.")
    before = fingerprint(path)
    agent, _ = asker(tmp_path, "First answer.", "Second answer.")
    past = ask_past_step(agent, sessions, session_id, at.uuid or "", QUESTION, fsync=False)
    past.ask("And then?")
    assert fingerprint(path) == before
    assert past.transcript.path != path
    assert load(path).messages[-1] == m.assistant([m.text("All done.")])


def test_the_exchange_goes_to_a_new_session_that_load_reads_back_with_follow_ups(
    tmp_path: Path,
) -> None:
    sessions, session_id, path, _ = recorded(tmp_path)
    at = entry(load(path).chain, "assistant", "Reading a.py.")
    agent, _ = asker(tmp_path, "First answer.", "Second answer.")
    past = ask_past_step(agent, sessions, session_id, at.uuid or "", QUESTION, fsync=False)
    assert past.session_id != session_id
    assert set(sessions.ids_on_disk()) == {session_id, past.session_id}
    new = past.transcript.path
    assert new == sessions.path(past.session_id)
    first = load(new)
    assert first.session_id == past.session_id and first.findings == []
    assert m.text_of(first.messages[0]) == "Read a.py."
    assert m.blocks(first.messages[-2])[-1] == m.text(QUESTION)
    assert first.messages[-1] == m.assistant([m.text("First answer.")])
    assert past.ask("And then?") == "Second answer."
    again = load(new)
    assert again.messages[: len(first.messages)] == first.messages  # appended, not rewritten
    assert again.messages[len(first.messages) :] == [
        m.user("And then?"),
        m.assistant([m.text("Second answer.")]),
    ]
    assert m.validate(again.messages) == []
    assert past.answers == ["First answer.", "Second answer."]


# --- refusals -----------------------------------------------------------------------------


def test_an_unknown_entry_raises_entry_not_found_and_writes_nothing(tmp_path: Path) -> None:
    sessions, session_id, _, _ = recorded(tmp_path)
    agent, model = asker(tmp_path, "Never said.")
    with pytest.raises(EntryNotFound):
        ask_past_step(agent, sessions, session_id, "no-such-uuid", QUESTION, fsync=False)
    assert sessions.ids_on_disk() == [session_id]
    assert model.requests == [] and agent.messages == []


def test_an_unknown_session_raises_session_not_found(tmp_path: Path) -> None:
    sessions, _, path, _ = recorded(tmp_path)
    at = load(path).chain[1].uuid or ""
    agent, model = asker(tmp_path, "Never said.")
    with pytest.raises(SessionNotFound):
        ask_past_step(
            agent, sessions, "5e551011-0000-4000-8000-00000000dead", at, QUESTION, fsync=False
        )
    assert model.requests == []


def test_an_agent_with_a_conversation_is_refused(tmp_path: Path) -> None:
    sessions, session_id, path, _ = recorded(tmp_path)
    at = load(path).chain[1].uuid or ""
    agent, model = asker(tmp_path, "Never said.")
    agent.messages.append(m.user("Something else entirely."))
    with pytest.raises(ValueError, match="fresh agent"):
        ask_past_step(agent, sessions, session_id, at, QUESTION, fsync=False)
    assert model.requests == [] and sessions.ids_on_disk() == [session_id]


# --- across a compaction, and on a rewind branch ------------------------------------------


def test_an_entry_before_a_compact_boundary_is_asked_with_the_conversation_before_it(
    tmp_path: Path,
) -> None:
    sessions, session_id, path, agent = recorded(tmp_path)
    early = entry(load(path).chain, "assistant", "Reading a.py.")
    compact(agent)
    assert isinstance(agent.model, ScriptedModel)
    agent.model.extend([reply("After the compaction.")])
    list(agent.run("One more thing."))
    agent.plugins[0].flush(durable=False)  # type: ignore[attr-defined]
    newest = load(path)
    assert newest.boundary is not None  # the default load starts after the boundary
    assert early.uuid not in {e.uuid for e in newest.chain}
    before = fingerprint(path)
    asking, model = asker(tmp_path, "Because it was the task.")
    ask_past_step(asking, sessions, session_id, early.uuid or "", QUESTION, fsync=False)
    sent = sent_text(model)
    assert "Read a.py." in sent and "A_CONTENT" in sent  # the words before the compaction
    assert "After the compaction." not in sent and "One more thing." not in sent
    assert fingerprint(path) == before


SESSION = "5e551011-0000-4000-8000-000000000001"


def line(kind: str, uuid: str, parent: str | None, text: str) -> dict[str, Any]:
    content: Any = text if kind == "user" else [m.text(text)]
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": SESSION,
        "type": kind,
        "uuid": uuid,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "version": "2.1.39",
        "message": {"role": kind, "content": content},
    }


REWOUND = [
    line("user", "u1", None, "Plan the release."),
    line("assistant", "a1", "u1", "Here is a plan."),
    line("user", "u2", "a1", "Ship it on Friday."),
    line("assistant", "a2", "u2", "Friday it is."),
    line("user", "u3", "a1", "Ship it on Monday."),  # rewound to a1 and asked again
    line("assistant", "a3", "u3", "Monday it is."),
]


def write_session(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def test_load_at_an_entry_follows_that_entrys_branch_not_the_newest(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", REWOUND)
    assert [m.text_of(x) for x in load(path).messages][-1] == "Monday it is."
    old = load(path, at="a2")
    assert [m.text_of(x) for x in old.messages] == [
        "Plan the release.",
        "Here is a plan.",
        "Ship it on Friday.",
        "Friday it is.",
    ]
    assert [e.uuid for e in old.chain] == ["u1", "a1", "u2", "a2"]
    assert old.leaf == "a2" and old.findings == []
    assert [m.text_of(x) for x in load(path, at="a1").messages] == [
        "Plan the release.",
        "Here is a plan.",
    ]
    assert [e.uuid for e in load(path, at="u3").chain] == ["u1", "a1", "u3"]
    with pytest.raises(EntryNotFound):
        load(path, at="zz")


def test_asking_at_the_other_branchs_leaf_answers_from_that_branch(tmp_path: Path) -> None:
    sessions = Sessions.for_workspace(tmp_path, clock=FakeClock(), ids=seeded_ids(7))
    path = write_session(sessions.path(SESSION), REWOUND)
    before = fingerprint(path)
    agent, model = asker(tmp_path, "You chose Friday at first.")
    ask_past_step(agent, sessions, SESSION, "a2", "Which day did we pick?", fsync=False)
    sent = sent_text(model)
    assert "Friday it is." in sent and "Monday" not in sent
    assert fingerprint(path) == before
