"""Ask a past step: fork a recorded session at one entry and question it (a "step ask", as a
post-mortem of a workflow runner's resume proposed)."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.events import Event
from harness.loop import BaseAgent, Rewrite
from harness.resume import SessionNotFound, Sessions, final_text
from harness.transcript import Transcript, load, repair

# -- asking a past step --------------------------------------------------------------------


@dataclass(frozen=True)
class PastStepForked(Event):
    """A recorded session was forked at one of its entries (to ask it something)."""

    source: str
    at: str
    messages: int

    def __str__(self) -> str:
        return f"⑂ forked session {self.source[:8]} at {self.at[:8]}: {self.messages} messages"


@dataclass
class PastStep:
    """A fork of a recorded session at one entry, answering questions in a new session."""

    agent: BaseAgent
    source: str
    """The session asked (never written to)."""
    at: str
    """The entry the fork starts from."""
    transcript: Transcript
    """The new session's writer (its file holds the past conversation and the questions)."""
    answers: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    @property
    def session_id(self) -> str:
        return self.transcript.session_id

    def ask(self, question: str) -> str:
        """Ask a (follow-up) question; returns the text of the reply."""
        self.events.extend(self.agent.run(question))
        self.transcript.flush(durable=self.transcript.fsync)
        answer = final_text(self.agent.messages)
        self.answers.append(answer)
        return answer


def ask_past_step(
    agent: BaseAgent,
    sessions: Sessions,
    session_id: str,
    at: str,
    question: str,
    *,
    fsync: bool = True,
) -> PastStep:
    """Fork session ``session_id`` at entry ``at`` into ``agent`` and ask it ``question``.

    ``agent`` is a fresh agent set up as the step's was (model, system prompt, tools: the
    transcript does not hold them), with an empty conversation. The conversation up to
    ``at`` is loaded and repaired (calls with no recorded result are answered as
    interrupted), written to a new session of ``sessions``, and continued there. The
    original file is only read. Ask follow-ups with :meth:`PastStep.ask`.
    """
    if agent.messages:
        raise ValueError("ask_past_step needs a fresh agent, with an empty conversation")
    path = sessions.path(session_id)
    if not path.exists():
        raise SessionNotFound(f"no transcript for session {session_id}")
    session = load(path, at=at)
    fixed = repair(session.messages, unresolved="answer")
    if not fixed.messages:
        raise SessionNotFound(f"session {session_id} holds no conversation at {at}")
    agent.plugins = [p for p in agent.plugins if not isinstance(p, Transcript)]
    forked = agent.apply(
        Rewrite(fixed.messages, PastStepForked(session_id, at, len(fixed.messages)))
    )
    writer = sessions.new(fsync=fsync)
    writer.write_messages(agent.messages)  # the new session starts with the past conversation
    agent.plugins.append(writer)
    past = PastStep(agent, session_id, at, writer, events=[forked])
    past.ask(question)
    return past
