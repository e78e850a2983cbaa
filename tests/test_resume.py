"""Resume and its pointers: finding a session, picking it up where it stopped, the flush
gate, and the format retry of a workflow step (the fix a post-mortem of a workflow runner's
resume asked for).

Every session here is scripted and on the fake clock; transcripts live under ``tmp_path``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.loop import INTERRUPTED
from harness.model import ScriptedModel, reply, tool_call
from harness.resume import (
    CONTINUE_PROMPT,
    INDEX,
    NotFlushed,
    SessionNotFound,
    Sessions,
    continue_run,
    correction_prompt,
    is_flushed,
    resume,
    run_step,
)
from harness.tools import ToolContext, tool
from harness.transcript import Transcript, load, seeded_ids


class NoteInput(BaseModel):
    text: str


class Counter:
    """A tool that counts how many times it really ran."""

    def __init__(self) -> None:
        self.runs: list[str] = []

        @tool(NoteInput, read_only=True)
        def note(args: NoteInput, context: ToolContext) -> str:
            """Write a note down."""
            self.runs.append(args.text)
            return f"noted {args.text}"

        self.tool = note


def make_sessions(tmp_path: Path, seed: int = 8) -> Sessions:
    return Sessions.for_workspace(tmp_path, clock=FakeClock(), ids=seeded_ids(seed))


def make_agent(
    tmp_path: Path, steps: list[object], counter: Counter | None = None, prefix: str = ""
) -> tuple[Agent, ScriptedModel]:
    clock = FakeClock()
    model = ScriptedModel(steps, clock=clock, id_prefix=prefix)  # type: ignore[arg-type]
    tools = [counter.tool] if counter is not None else []
    return Agent(model, tools=tools, workspace=tmp_path, clock=clock), model


def recorded_session(
    tmp_path: Path, sessions: Sessions, steps: list[object], prompt: str = "take notes"
) -> tuple[str, Agent, Counter]:
    """Run a scripted session with a transcript, bind it as ``latest``, return its id."""
    counter = Counter()
    agent, _ = make_agent(tmp_path, steps, counter)
    transcript = sessions.new()
    agent.plugins.append(transcript)
    list(agent.run(prompt))
    transcript.close()
    sessions.bind("latest", transcript.session_id)
    return transcript.session_id, agent, counter


def write_conversation(sessions: Sessions, conversation: list[m.MessageDict]) -> Transcript:
    """Write a conversation as the writer would have before a crash (no run, no repair)."""
    transcript = sessions.new()
    transcript.sync(conversation)
    transcript.close()
    return transcript


# -- finding the session ------------------------------------------------------------------


def test_resume_by_id_loads_that_session_not_the_latest(tmp_path: Path) -> None:
    sessions = make_sessions(tmp_path)
    first, first_agent, _ = recorded_session(tmp_path, sessions, [reply("first answer")], "one")
    second, second_agent, _ = recorded_session(tmp_path, sessions, [reply("second answer")], "two")
    assert sessions.latest() == second

    agent, _ = make_agent(tmp_path, [], prefix="r")
    resumed = resume(agent, sessions, first)

    assert resumed.transcript.session_id == first
    assert agent.messages == first_agent.messages
    assert agent.messages != second_agent.messages


def test_resume_without_an_id_takes_the_latest_bound_session(tmp_path: Path) -> None:
    sessions = make_sessions(tmp_path)
    recorded_session(tmp_path, sessions, [reply("first answer")], "one")
    second, second_agent, _ = recorded_session(tmp_path, sessions, [reply("second answer")], "two")

    path = sessions.path(second)
    before = path.read_bytes()
    agent, _ = make_agent(tmp_path, [], prefix="r")
    resumed = resume(agent, sessions)

    assert resumed.transcript.session_id == second
    assert agent.messages == second_agent.messages
    assert resumed.changes == []
    assert path.read_bytes() == before  # nothing to repair: nothing written


@pytest.mark.parametrize("bad", ["no-such-session", "../x", "a/b", "..", ""])
def test_resume_of_an_unknown_or_malformed_id_raises_session_not_found(
    tmp_path: Path, bad: str
) -> None:
    sessions = make_sessions(tmp_path)
    recorded_session(tmp_path, sessions, [reply("an answer")])
    agent, _ = make_agent(tmp_path, [])
    if bad == "":
        # An empty id means "the latest", which exists here: it is not an error.
        assert resume(agent, sessions, bad).transcript.session_id == sessions.latest()
        return
    with pytest.raises(SessionNotFound):
        resume(agent, sessions, bad)
    assert agent.messages == []


def test_resume_in_an_empty_folder_raises_session_not_found(tmp_path: Path) -> None:
    sessions = make_sessions(tmp_path)
    agent, _ = make_agent(tmp_path, [])
    with pytest.raises(SessionNotFound):
        resume(agent, sessions)
    assert not sessions.folder.exists() or not any(sessions.folder.iterdir())


# -- picking up where it stopped ----------------------------------------------------------


def test_a_finished_tool_never_runs_again_after_resume(tmp_path: Path) -> None:
    sessions = make_sessions(tmp_path)
    counter = Counter()
    agent, _ = make_agent(
        tmp_path,
        [
            reply("noting", tool_calls=[tool_call("note", text="a"), tool_call("note", text="b")]),
            KeyboardInterrupt(),  # the process is stopped while it waits for the model
        ],
        counter,
    )
    transcript = sessions.new()
    agent.plugins.append(transcript)
    with pytest.raises(KeyboardInterrupt):
        list(agent.run("note a and b"))
    transcript.close()
    sessions.bind("latest", transcript.session_id)
    assert counter.runs == ["a", "b"]

    # A new process: same tool, a model that would call it again only if asked to.
    agent2, model2 = make_agent(tmp_path, [reply("both noted")], counter, prefix="r")
    resumed = resume(agent2, sessions)
    assert resumed.needs_continue  # the conversation ends on the two results
    list(continue_run(agent2, resumed))

    assert counter.runs == ["a", "b"]  # nothing ran twice
    assert len(model2.requests) == 1
    results = m.tool_results(model2.requests[0].messages[2])
    assert [r["content"] for r in results] == ["noted a", "noted b"]
    assert load(transcript.path).messages == agent2.messages


def test_an_unanswered_tool_use_is_answered_as_interrupted_on_disk_too(tmp_path: Path) -> None:
    sessions = make_sessions(tmp_path)
    call = m.tool_use("toolu_cut", "note", {"text": "a"})
    written = write_conversation(
        sessions, [m.user("note a"), m.assistant([m.text("noting"), call])]
    )
    sessions.bind("latest", written.session_id)
    counter = Counter()

    agent, _ = make_agent(tmp_path, [], counter, prefix="r")
    resumed = resume(agent, sessions)

    assert [c.kind for c in resumed.changes] == ["tool_use answered"]
    answer = m.tool_results(agent.messages[-1])
    assert answer == [m.tool_result("toolu_cut", INTERRUPTED, is_error=True)]
    assert counter.runs == []  # answered, not run
    on_disk = load(written.path)
    assert on_disk.messages == agent.messages
    assert on_disk.boundary is None  # only appended: nothing earlier changed
    assert m.validate(on_disk.messages) == []


def test_a_repair_that_changes_earlier_messages_writes_a_resume_boundary(
    tmp_path: Path,
) -> None:
    sessions = make_sessions(tmp_path)
    thinking_only = m.assistant([{"type": "thinking", "thinking": "hmm", "signature": "s"}])
    written = write_conversation(
        sessions,
        [m.user("first"), thinking_only, m.user("second"), m.assistant("an answer")],
    )
    lines_before = written.path.read_text().count("\n")

    agent, _ = make_agent(tmp_path, [], prefix="r")
    resumed = resume(agent, sessions, written.session_id)

    assert {c.kind for c in resumed.changes} >= {"message dropped", "merged"}
    assert [msg["role"] for msg in agent.messages] == ["user", "assistant"]
    entries = [json.loads(line) for line in written.path.read_text().splitlines()]
    boundary = entries[lines_before]
    assert boundary["subtype"] == "compact_boundary"
    assert boundary["compactMetadata"]["trigger"] == "resume"
    assert boundary["parentUuid"] is None
    on_disk = load(written.path)
    assert on_disk.boundary is not None
    assert on_disk.messages == agent.messages


def test_continue_run_sends_the_continue_prompt_when_the_conversation_ends_on_results(
    tmp_path: Path,
) -> None:
    sessions = make_sessions(tmp_path)
    call = m.tool_use("toolu_1", "note", {"text": "a"})
    written = write_conversation(
        sessions,
        [m.user("note a"), m.assistant([call]), m.user([m.tool_result("toolu_1", "noted a")])],
    )
    agent, model = make_agent(tmp_path, [reply("done")], Counter(), prefix="r")

    resumed = resume(agent, sessions, written.session_id)
    assert resumed.needs_continue
    list(continue_run(agent, resumed))

    assert len(model.requests) == 1
    last = model.requests[0].messages[-1]
    assert m.tool_results(last)[0]["tool_use_id"] == "toolu_1"
    assert m.blocks(last)[-1] == m.text(CONTINUE_PROMPT)
    assert load(written.path).messages == agent.messages


def test_continue_run_sends_nothing_when_the_model_had_the_last_word(tmp_path: Path) -> None:
    sessions = make_sessions(tmp_path)
    session_id, _, _ = recorded_session(tmp_path, sessions, [reply("all done")])
    agent, model = make_agent(tmp_path, [reply("should not be asked")], prefix="r")

    resumed = resume(agent, sessions, session_id)
    assert not resumed.needs_continue
    events = list(continue_run(agent, resumed))

    assert events == []
    assert model.requests == []
    assert m.text_of(agent.messages[-1]) == "all done"


# -- the flush gate -----------------------------------------------------------------------


def index_bytes(sessions: Sessions) -> bytes | None:
    path = sessions.folder / INDEX
    return path.read_bytes() if path.exists() else None


def entry_line(**fields: object) -> str:
    return json.dumps(fields) + "\n"


@pytest.mark.parametrize(
    "content",
    [
        None,  # no file at all
        "",
        '{"parentUuid": null, "type": "user", "uuid": "u1", "message": {"role": "us',
        entry_line(type="summary", summary="a title", leafUuid="u1")
        + entry_line(type="system", uuid="s1", subtype="informational", content="hello"),
        # A complete message line, but the newline never made it: still torn.
        entry_line(type="user", uuid="u1", message={"role": "user", "content": "hi"})[:-1],
    ],
    ids=["missing", "empty", "torn-only", "no-message-entries", "no-final-newline"],
)
def test_bind_refuses_a_session_with_no_complete_message_on_disk(
    tmp_path: Path, content: str | None
) -> None:
    sessions = make_sessions(tmp_path)
    kept, _, _ = recorded_session(tmp_path, sessions, [reply("an answer")])
    before = index_bytes(sessions)
    path = sessions.path("not-flushed")
    if content is not None:
        path.write_text(content)

    assert not is_flushed(path)
    with pytest.raises(NotFlushed):
        sessions.bind("step-1", "not-flushed")

    assert index_bytes(sessions) == before  # nothing written
    assert sessions.lookup("step-1") is None
    assert sessions.latest() == kept


def test_bind_after_a_real_flush_points_the_name_and_latest_at_the_session(
    tmp_path: Path,
) -> None:
    sessions = make_sessions(tmp_path)
    transcript = sessions.new()
    with pytest.raises(NotFlushed):  # not a byte written yet
        sessions.bind("step-1", transcript.session_id)
    transcript.sync([m.user("hello")])
    transcript.flush(durable=True)

    sessions.bind("step-1", transcript.session_id)

    assert sessions.lookup("step-1") == transcript.session_id
    assert sessions.latest() == transcript.session_id
    assert json.loads((sessions.folder / INDEX).read_text()) == {
        "latest": transcript.session_id,
        "step-1": transcript.session_id,
    }


def test_lookup_ignores_an_index_entry_whose_transcript_is_gone(tmp_path: Path) -> None:
    sessions = make_sessions(tmp_path)
    session_id, _, _ = recorded_session(tmp_path, sessions, [reply("an answer")])
    sessions.bind("step-1", session_id)
    sessions.path(session_id).unlink()

    assert sessions.index()["step-1"] == session_id  # the pointer is still there
    assert sessions.lookup("step-1") is None
    assert sessions.latest() is None
    agent, _ = make_agent(tmp_path, [])
    with pytest.raises(SessionNotFound):
        resume(agent, sessions)


@pytest.mark.parametrize("corrupt", ["{not json", "[1, 2]", '{"latest": 7}', ""])
def test_a_corrupt_index_is_treated_as_empty(tmp_path: Path, corrupt: str) -> None:
    sessions = make_sessions(tmp_path)
    session_id, _, _ = recorded_session(tmp_path, sessions, [reply("an answer")])
    (sessions.folder / INDEX).write_text(corrupt)

    assert sessions.index() == {}
    assert sessions.latest() is None

    sessions.bind("step-1", session_id)  # and it is replaced by a good one
    assert sessions.latest() == session_id


# -- the format retry --------------------------------------------------------------------

INSTRUCTION = "Start your reply with RESULT: and nothing before it."
PROMPT = "Review the whole repository and report what you found. " * 20


def check(text: str) -> str | None:
    return None if text.startswith("RESULT:") else "it did not start with RESULT:"


def test_run_step_binds_a_step_whose_first_output_passes(tmp_path: Path) -> None:
    sessions = make_sessions(tmp_path)
    agent, model = make_agent(tmp_path, [reply("RESULT: all good")])

    run = run_step("review", PROMPT, check, agent=agent, sessions=sessions, instruction=INSTRUCTION)

    assert run.ok and not run.resumed
    assert run.output == "RESULT: all good"
    assert run.attempts == [PROMPT]
    assert len(model.requests) == 1
    assert sessions.lookup("review") == run.session_id
    assert load(sessions.path(run.session_id)).messages == agent.messages


def test_a_bad_format_is_corrected_in_the_same_session_with_a_short_prompt(
    tmp_path: Path,
) -> None:
    sessions = make_sessions(tmp_path)
    agent, model = make_agent(tmp_path, [reply("Here is what I found"), reply("RESULT: fixed")])

    run = run_step("review", PROMPT, check, agent=agent, sessions=sessions, instruction=INSTRUCTION)

    correction = correction_prompt("it did not start with RESULT:", INSTRUCTION)
    assert run.ok and run.output == "RESULT: fixed"
    assert run.attempts == [PROMPT, correction]
    assert run.problems == ["it did not start with RESULT:"]
    assert len(model.requests) == 2
    second = model.requests[1].messages
    assert len(second) == 3  # the same conversation: the step, its reply, the correction
    assert second[0] == model.requests[0].messages[0]
    assert m.text_of(second[1]) == "Here is what I found"
    assert second[-1] == m.user(correction)
    assert len(correction) < len(PROMPT) / 2
    assert sessions.ids_on_disk() == [run.session_id]  # one session, not a new one


def test_a_step_whose_output_failed_before_a_crash_resumes_with_only_the_correction(
    tmp_path: Path,
) -> None:
    # The first process: the step runs, its output fails the check, and the process ends
    # (the crash of the workflow runner's post-mortem) before any retry.
    sessions = make_sessions(tmp_path)
    agent, model = make_agent(tmp_path, [reply("Here is what I found")])
    first = run_step(
        "review",
        PROMPT,
        check,
        agent=agent,
        sessions=sessions,
        instruction=INSTRUCTION,
        retries=0,
    )
    assert not first.ok and len(model.requests) == 1

    # A new process: fresh Sessions, agent and model. The workflow calls the step again
    # with the full prompt, as it would after any restart.
    sessions2 = make_sessions(tmp_path, seed=9)
    agent2, model2 = make_agent(tmp_path, [reply("RESULT: fixed")], prefix="r")
    second = run_step(
        "review", PROMPT, check, agent=agent2, sessions=sessions2, instruction=INSTRUCTION
    )

    assert second.ok and second.resumed
    assert second.session_id == first.session_id
    assert len(model2.requests) == 1  # one short turn, not the step again
    sent = model2.requests[0].messages
    correction = correction_prompt("it did not start with RESULT:", INSTRUCTION)
    assert sent[-1] == m.user(correction)
    assert second.attempts == [correction]
    assert sum(1 for msg in sent if m.text_of(msg) == PROMPT) == 1  # the old turn, not resent
    assert load(sessions2.path(second.session_id)).messages == agent2.messages


def test_a_step_already_done_returns_without_a_model_call(tmp_path: Path) -> None:
    sessions = make_sessions(tmp_path)
    agent, _ = make_agent(tmp_path, [reply("RESULT: all good")])
    first = run_step(
        "review", PROMPT, check, agent=agent, sessions=sessions, instruction=INSTRUCTION
    )

    agent2, model2 = make_agent(tmp_path, [reply("should not be asked")], prefix="r")
    again = run_step(
        "review", PROMPT, check, agent=agent2, sessions=sessions, instruction=INSTRUCTION
    )

    assert again.ok and again.resumed
    assert again.output == "RESULT: all good"
    assert again.session_id == first.session_id
    assert again.attempts == []
    assert model2.requests == []


def test_run_step_gives_up_after_its_retries_with_ok_false(tmp_path: Path) -> None:
    sessions = make_sessions(tmp_path)
    agent, model = make_agent(tmp_path, [reply(f"wrong format {i}") for i in range(10)])

    run = run_step(
        "review",
        PROMPT,
        check,
        agent=agent,
        sessions=sessions,
        instruction=INSTRUCTION,
        retries=2,
    )

    assert not run.ok
    assert len(model.requests) == 3  # the step, then two corrections
    assert len(run.attempts) == 3 and run.attempts[0] == PROMPT
    assert len(run.problems) == 3
    assert run.output == "wrong format 2"
    assert sessions.lookup("review") == run.session_id  # bound: the next call resumes it
