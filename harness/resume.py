"""Resume: pick a session up from its transcript, and the pointers that find it.

* :class:`Sessions` is one workspace's folder of transcripts, laid out as Claude Code lays
  out ``~/.claude/projects/<folder>/<session-id>.jsonl``, with a small index that maps names
  (``latest``, a workflow step) to session ids.
* The **flush gate**: :meth:`Sessions.bind` refuses to point a name at a session whose
  transcript does not hold a complete message on disk. A pointer written first and a crash
  before the transcript would leave a name that leads nowhere, and the next start would
  begin again with no memory (seed 002).
* :func:`resume` loads a session, repairs it, puts it in the agent and keeps writing the
  same file. Tools that finished have their results in the conversation (or in the tool
  journal beside it), so they never run again; a call a crash cut off in the middle is
  answered that it may have run, one that never started as interrupted.
* :func:`run_step` is a workflow step with an output check. When the check fails, it
  resumes the step's session and sends a short correction, instead of running the whole
  step again (seed 000: 21 minutes of redone work became a 16-second reply).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harness import messages as m
from harness.atomic import write_atomic
from harness.clock import Clock, RealClock
from harness.events import Event
from harness.loop import MAY_HAVE_RUN, BaseAgent, Rewrite
from harness.transcript import (
    Change,
    Entry,
    Finding,
    NotATranscript,
    Session,
    Transcript,
    UnresolvedPolicy,
    load,
    parse_line,
    project_folder,
    random_ids,
    repair,
)

CONTINUE_PROMPT = "Continue from where you left off."
"""Sent when a resumed conversation ends on tool results (Claude Code adds a similar
continuation message when a resumed session needs one)."""

INDEX = "sessions.json"


class SessionNotFound(LookupError):
    """No session has that id (or no session was ever bound as the latest)."""


class NotFlushed(RuntimeError):
    """The flush gate refused to point a name at a session not yet safely on disk."""


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


def is_flushed(path: Path) -> bool:
    """Whether ``path`` holds at least one complete message entry, ended by a newline.

    Reads from the end, a chunk at a time, so it costs the same on a 1 GB file. A path that
    is not a regular file (a folder, a named pipe, whose open would wait) is never opened.
    """
    if not path.is_file():
        return False
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            end = size
            tail = b""
            while end > 0:
                start = max(0, end - 65_536)
                handle.seek(start)
                tail = handle.read(end - start) + tail
                lines = tail.split(b"\n")
                complete = lines[1:-1] if start > 0 else lines[:-1]
                for line in reversed(complete):
                    entry = parse_line(line, 0)
                    if isinstance(entry, Entry) and entry.type in ("user", "assistant"):
                        return True
                tail = lines[0] if start > 0 else b""
                end = start
    except OSError:
        return False
    return False


@dataclass
class Sessions:
    """The transcripts of one workspace: ``root/projects/<folder>/<session-id>.jsonl``.

    ``root`` is Claude Code's ``~/.claude``; the course keeps it inside the workspace
    (``.harness``) so that a notebook leaves nothing behind in your home folder.
    """

    root: Path
    cwd: Path
    clock: Clock = field(default_factory=RealClock)
    ids: Callable[[], str] = random_ids

    @classmethod
    def for_workspace(
        cls,
        workspace: str | Path,
        *,
        clock: Clock | None = None,
        ids: Callable[[], str] = random_ids,
    ) -> Sessions:
        """The sessions of ``workspace``, kept in its ``.harness`` folder."""
        workspace = Path(workspace).resolve()
        return cls(workspace / ".harness", workspace, clock or RealClock(), ids)

    @property
    def folder(self) -> Path:
        return self.root / "projects" / project_folder(self.cwd)

    def path(self, session_id: str) -> Path:
        if not session_id or "/" in session_id or "\\" in session_id or session_id in (".", ".."):
            raise SessionNotFound(f"{session_id!r} is not a session id")
        return self.folder / f"{session_id}.jsonl"

    def new(self, *, fsync: bool = True) -> Transcript:
        """A writer for a new session (the file appears with its first entry)."""
        session_id = self.ids()
        return Transcript(
            path=self.path(session_id),
            session_id=session_id,
            cwd=str(self.cwd),
            clock=self.clock,
            ids=self.ids,
            fsync=fsync,
        )

    def import_file(self, path: str | Path) -> str:
        """Copy the transcript at ``path`` into a new session of this folder; its id.

        Resuming a file outside the folder (or a link to one) would append the new run to
        it, a file that is not this folder's to change. The copy is a new regular file here,
        byte for byte the original, so the loader sees the same entries; the original is
        only read. Raises :class:`~harness.transcript.NotATranscript` (an ``OSError``) if
        ``path`` is not a regular file, checked on the open file (a named pipe is opened
        without waiting for a writer), and ``OSError`` if it cannot be read or copied (no
        copy is left behind then).
        """
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        handle = os.open(path, flags)
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            os.close(handle)
            raise NotATranscript(f"{path} is not a regular file, so it is no transcript")
        with open(handle, "rb") as source:
            self.folder.mkdir(parents=True, exist_ok=True)
            for _ in range(100):  # a new id, never an existing file (the ids are random)
                session_id = self.ids()
                target = self.path(session_id)
                try:
                    copy = open(target, "xb")  # noqa: SIM115 (closed below, removed on failure)
                except FileExistsError:
                    continue
                break
            else:
                raise FileExistsError(f"no free session id in {self.folder}")
            try:
                with copy:
                    while chunk := source.read(1 << 20):
                        copy.write(chunk)
                    copy.flush()
                    os.fsync(copy.fileno())
            except BaseException:
                target.unlink(missing_ok=True)
                raise
        return session_id

    def ids_on_disk(self) -> list[str]:
        """Every session in the folder, oldest first (by the file's last change)."""
        if not self.folder.is_dir():
            return []
        found = [p for p in self.folder.glob("*.jsonl") if p.is_file()]  # no pipe, no folder
        files = sorted(found, key=lambda p: (p.stat().st_mtime, p.name))
        return [p.stem for p in files]

    # -- the index and its gate --------------------------------------------------------------

    def index(self) -> dict[str, str]:
        """Names to session ids. A missing or unreadable index is an empty one."""
        try:
            data = json.loads((self.folder / INDEX).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return (
            {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}
            if isinstance(data, dict)
            else {}
        )

    def bind(self, name: str, session_id: str) -> None:
        """Point ``name`` at ``session_id`` (and ``latest`` too), through the flush gate.

        Raises :class:`NotFlushed`, and writes nothing, unless the session's transcript
        already holds a complete message on disk. The index is replaced atomically.
        """
        if not is_flushed(self.path(session_id)):
            raise NotFlushed(
                f"session {session_id} has no complete message on disk yet; a pointer to it "
                "would lead nowhere after a crash, so none is written"
            )
        index = self.index()
        index[name] = session_id
        index["latest"] = session_id
        write_atomic(self.folder / INDEX, json.dumps(index, indent=1, sort_keys=True) + "\n")

    def lookup(self, name: str) -> str | None:
        """The session ``name`` points at, if its transcript is still there."""
        session_id = self.index().get(name)
        if session_id is None or not self.path(session_id).exists():
            return None
        return session_id

    def latest(self) -> str | None:
        """The latest bound session (Claude Code's ``--continue``)."""
        return self.lookup("latest")


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


# -- the format retry (seed 000) -------------------------------------------------------------

Check = Callable[[str], str | None]
"""An output check: ``None`` if the text is acceptable, else what is wrong with it."""


def correction_prompt(problem: str, instruction: str) -> str:
    """The short prompt sent when only the output's format was wrong."""
    return (
        "Your previous run completed all of its work, but its output format was wrong: "
        f"{problem}\nYou do NOT need to redo any work; everything is already in place.\n\n"
        f"{instruction}\n\nReply with ONLY the corrected output in that format."
    )


def final_text(messages: list[m.MessageDict]) -> str:
    """The text of the last assistant message ('' if there is none)."""
    for message in reversed(messages):
        if message["role"] == "assistant":
            return m.text_of(message)
    return ""


@dataclass
class StepRun:
    """What :func:`run_step` did."""

    step: str
    session_id: str
    output: str
    ok: bool
    attempts: list[str]
    """The prompts sent, in order (the full prompt, then corrections)."""
    problems: list[str]
    """What the check said of each output it refused."""
    resumed: bool
    events: list[Event] = field(default_factory=list)


def run_step(
    step: str,
    prompt: str,
    check: Check,
    *,
    agent: BaseAgent,
    sessions: Sessions,
    instruction: str,
    retries: int = 2,
) -> StepRun:
    """Run a workflow step whose output must pass ``check``, resuming its session if it has
    one.

    The step's session is looked up every time, whatever the workflow's own records say
    (seed 000's bug was a lookup skipped because the step had no validated record). A
    session found whose last output passes is done without a model call; one whose output
    fails gets :func:`correction_prompt`, not the full prompt. A new session is bound to
    ``step`` through the flush gate once its transcript is on disk.
    """
    events: list[Event] = []
    attempts: list[str] = []
    problems: list[str] = []
    session_id = sessions.lookup(step)
    resumed = session_id is not None
    if session_id is not None:
        resume(agent, sessions, session_id)
        problem = check(final_text(agent.messages))
        if problem is None:
            return StepRun(step, session_id, final_text(agent.messages), True, [], [], True, events)
        problems.append(problem)
        next_prompt = correction_prompt(problem, instruction)
    else:
        transcript = sessions.new()
        agent.plugins = [p for p in agent.plugins if not isinstance(p, Transcript)] + [transcript]
        session_id = transcript.session_id
        next_prompt = prompt
    for _ in range(retries + 1):
        attempts.append(next_prompt)
        events.extend(agent.run(next_prompt))
        for plugin in agent.plugins:
            if isinstance(plugin, Transcript):
                plugin.flush(durable=plugin.fsync)
        sessions.bind(step, session_id)
        output = final_text(agent.messages)
        problem = check(output)
        if problem is None:
            return StepRun(step, session_id, output, True, attempts, problems, resumed, events)
        problems.append(problem)
        next_prompt = correction_prompt(problem, instruction)
    return StepRun(
        step, session_id, final_text(agent.messages), False, attempts, problems, resumed, events
    )
