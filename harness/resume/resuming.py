"""Resuming a session: load it from its transcript, repair it, and keep writing the same file.

:func:`resume` loads a session, repairs it, puts it in the agent and keeps writing the
same file. Tools that finished have their results in the conversation (or in the tool
journal beside it), so they never run again; a call a crash cut off in the middle is
answered that it may have run, one that never started as interrupted. :func:`continue_run`
goes on from a session that ended on tool results.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from harness import messages as m
from harness.events import Event
from harness.loop import MAY_HAVE_RUN, BaseAgent, Rewrite
from harness.resume.sessions import SessionNotFound, Sessions
from harness.transcript import (
    Change,
    Finding,
    Session,
    Transcript,
    UnresolvedPolicy,
    load,
    repair,
)

CONTINUE_PROMPT = "Continue from where you left off."
"""Sent when a resumed conversation ends on tool results (Claude Code adds a similar
continuation message when a resumed session needs one)."""


@dataclass(frozen=True)
class Resumed(Event):
    session_id: str
    messages: int
    changes: tuple[Change, ...]
    findings: tuple[Finding, ...]

    def __str__(self) -> str:
        fixed = f", {len(self.changes)} repair(s)" if self.changes else ""
        skipped = f", {len(self.findings)} finding(s)" if self.findings else ""
        return f"↺ resumed {self.session_id[:8]}: {self.messages} messages{fixed}{skipped}"


# -- resume --------------------------------------------------------------------------------


@dataclass
class Resume:
    """What :func:`resume` did: the session, its repair, and the writer now attached."""

    session: Session
    changes: list[Change]
    transcript: Transcript
    event: Resumed

    needs_continue: bool
    """The conversation ends on a user message (tool results, say) the model has not
    answered yet: :func:`continue_run` sends :data:`CONTINUE_PROMPT`."""


def resume(
    agent: BaseAgent,
    sessions: Sessions,
    session_id: str | None = None,
    *,
    unresolved: UnresolvedPolicy = "answer",
    fsync: bool = True,
) -> Resume:
    """Load a session (``session_id``, or the latest) into ``agent`` and keep recording it.

    The conversation is repaired first (see :func:`harness.transcript.repair`). If the
    repair only added answers at the end (calls a crash cut off), they are appended to the
    file; if it changed anything earlier, a boundary and the repaired conversation are
    written, so the file and the conversation agree from here on. The writer is added to
    ``agent.plugins`` (replacing any other :class:`Transcript`). Raises
    :class:`SessionNotFound` if there is nothing to resume.
    """
    session_id = session_id or sessions.latest()
    if session_id is None:
        raise SessionNotFound("no session to resume in this folder")
    path = sessions.path(session_id)
    if not path.exists():
        raise SessionNotFound(f"no transcript for session {session_id}")
    transcript = Transcript(
        path=path,
        session_id=session_id,
        cwd=str(sessions.cwd),
        clock=sessions.clock,
        ids=sessions.ids,
        fsync=fsync,
    )
    return resume_with(agent, transcript, unresolved=unresolved)


def resume_with(
    agent: BaseAgent, transcript: Transcript, *, unresolved: UnresolvedPolicy = "answer"
) -> Resume:
    """Load the file ``transcript`` writes to into ``agent``, and attach ``transcript`` to
    keep writing it (what :func:`resume` does once it has found the file; a subagent's
    sidechain is resumed this way too, chapter 10)."""
    path = transcript.path
    if not path.exists():
        raise SessionNotFound(f"no transcript at {path.name}")
    session = load(path)
    fixed = repair(session.messages, unresolved=unresolved, answers=journaled_answers(session))
    if not fixed.messages:
        raise SessionNotFound(f"{path.name} holds no conversation to resume")
    raw, new = session.messages, fixed.messages
    # Unchanged, or only answers added at the end (calls a crash cut off): what the file
    # holds stays as it is, and the answers are appended after it.
    appended = new[: len(raw)] == raw
    event = Resumed(transcript.session_id, len(new), tuple(fixed.changes), tuple(session.findings))
    agent.plugins = [p for p in agent.plugins if not isinstance(p, Transcript)]
    agent.apply(Rewrite(new, event))  # before the writer joins: this is not a compaction
    if appended:  # append the answers, if any, after what is on disk
        transcript.adopt(agent.messages[: len(raw)], session.leaf)  # the agent's own objects
        transcript.sync(agent.messages)
    else:  # changed earlier on: the repaired conversation goes under a boundary
        transcript.parent = session.leaf
        transcript.write_messages(agent.messages, boundary="resume")
    transcript.flush(durable=transcript.fsync)
    agent.plugins.append(transcript)
    agent.emit(event)
    ends_on_user = agent.messages[-1]["role"] == "user"
    return Resume(session, fixed.changes, transcript, event, ends_on_user)


def journaled_answers(session: Session) -> dict[str, m.Block]:
    """Answers for calls a crash cut off, from the tool journal: the result the runner
    recorded, or, for a call that started with no result recorded, that it may have run
    (never "interrupted": its side effects may have happened). A call with neither never
    started, and :func:`~harness.transcript.repair` answers it as interrupted."""
    answers = {
        use_id: m.tool_result(use_id, MAY_HAVE_RUN, is_error=True)
        for use_id in session.tools_started
    }
    return answers | session.tool_journal


class Resumable(Protocol):
    """What :func:`continue_run` needs to know of a resume (this module's, or chapter 09's
    resume of an approved call)."""

    @property
    def needs_continue(self) -> bool: ...


def continue_run(agent: BaseAgent, resumed: Resumable) -> Iterator[Event]:
    """Go on from a resumed session that ended on tool results (nothing to do otherwise)."""
    if resumed.needs_continue:
        yield from agent.run(CONTINUE_PROMPT)
