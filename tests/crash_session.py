"""The scripted session that ``tests/test_crash_resume.py`` kills and resumes.

A session of ``STEPS`` steps: at each step the scripted model calls the ``mark`` tool once
to three times in one reply (parallel calls). The model's reply is a function of the
request: it asks for the first step whose calls have no real result in the conversation
yet, so a resumed process picks up exactly where the conversation on disk stopped. The
tool appends its ``tool_use`` id to a ledger file (append, flush, fsync) in the middle of
its work, so the ledger says which calls really ran.

``drive(...)`` runs or resumes the session to its end (used by the child and by the test).
Run as a script, ``python tests/crash_session.py serve`` is a fork server: it imports the
harness once, then forks one child per ``run`` command, so each kill costs milliseconds
instead of an interpreter start. Its protocol, one line each way:

* ``run <workspace> <seed> <id_prefix> <sleepy 0|1>`` → ``pid <pid>``: a child drives the
  session (exit 0 when it finished, 3 after an error written to ``<workspace>/error.txt``);
* ``wait <pid>`` → ``status <n>``: ``-9`` for a child killed by SIGKILL, else its exit code;
* ``quit``.

With a trace file, the child appends a marker at each point the kill could fall between
(``trace.txt``); the last marker before the kill tells where it landed.
"""

from __future__ import annotations

import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anthropic.types import Message
from pydantic import BaseModel

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.loop import BaseAgent, Plugin, Rewrite
from harness.model import ScriptedModel, reply, tool_call
from harness.model.scripted import Reply, Request
from harness.resume import Sessions, continue_run, resume
from harness.tools import ToolContext, tool

STEPS = 12
PROMPT = f"Do the {STEPS} steps, one at a time."
FINAL = f"all {STEPS} steps done"
LEDGER = "ledger.txt"
TRACE = "trace.txt"


class MarkInput(BaseModel):
    step: int
    part: int


def plan(seed: int) -> list[int]:
    """How many parallel calls each step makes (1 to 3), the same in every process."""
    rng = random.Random(seed)
    return [rng.choice([1, 1, 2, 3]) for _ in range(STEPS)]


def done_parts(messages: list[dict[str, Any]]) -> set[tuple[int, int]]:
    """The (step, part) pairs that have a real (not interrupted, not error) result."""
    calls: dict[str, tuple[int, int]] = {}
    done: set[tuple[int, int]] = set()
    for message in messages:
        if message["role"] == "assistant":
            for use in m.tool_uses(message):
                if use.get("name") == "mark":
                    calls[use["id"]] = (int(use["input"]["step"]), int(use["input"]["part"]))
        else:
            for result in m.tool_results(message):
                if not result.get("is_error") and result["tool_use_id"] in calls:
                    done.add(calls[result["tool_use_id"]])
    return done


def planner(seed: int) -> Any:
    parts = plan(seed)

    def respond(request: Request) -> Reply:
        done = done_parts(request.messages)
        for step, count in enumerate(parts, start=1):
            missing = [p for p in range(1, count + 1) if (step, p) not in done]
            if missing:
                calls = [tool_call("mark", step=step, part=p) for p in missing]
                return reply(f"step {step}", tool_calls=calls)
        return reply(FINAL)

    return respond


class Trace:
    """Markers appended to a file, unbuffered (a SIGKILL loses none that were written)."""

    def __init__(self, path: Path | None) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND) if path else None

    def mark(self, text: str) -> None:
        if self.fd is not None:
            os.write(self.fd, f"{os.getpid()} {text}\n".encode())


def mark_tool(ledger: Path, trace: Trace, sleepy: bool, durable: bool) -> Any:
    rng = random.Random()

    def nap() -> None:
        if sleepy:
            time.sleep(rng.uniform(0, 0.0015))

    @tool(MarkInput, read_only=True)  # read-only so one reply's calls run in parallel
    def mark(args: MarkInput, context: ToolContext) -> str:
        """Do one part of a step (and write it in the ledger)."""
        trace.mark(f"tool-start {context.tool_use_id}")
        nap()
        fd = os.open(ledger, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            os.write(fd, f"{context.tool_use_id} {args.step} {args.part}\n".encode())
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        trace.mark(f"ledger {context.tool_use_id}")
        nap()
        return f"step {args.step} part {args.part} done by {context.tool_use_id}"

    return mark


@dataclass
class Tracer(Plugin):
    """Runs after the transcript at each point: says what is on disk by now (and, when
    sleepy, waits a moment there, so that kills also land between the writes)."""

    trace: Trace
    sleepy: bool = False

    def _at(self, marker: str) -> None:
        self.trace.mark(marker)
        if self.sleepy:
            time.sleep(random.uniform(0, 0.0015))

    def before_request(self, agent: BaseAgent) -> Rewrite | None:
        self._at("request-fsynced")
        return None

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        self._at("reply-written")

    def after_tools(self, agent: BaseAgent, results: list[m.Block]) -> None:
        self._at("results-written")


@dataclass
class Binder(Plugin):
    """Points ``latest`` at a new session once its prompt is on disk (the flush gate)."""

    sessions: Sessions
    session_id: str
    bound: bool = False

    def before_request(self, agent: BaseAgent) -> Rewrite | None:
        if not self.bound:
            self.sessions.bind("latest", self.session_id)
            self.bound = True
        return None


@dataclass
class Driven:
    agent: Agent
    session_id: str
    resumed: list[dict[str, Any]] | None
    """The conversation right after resume (None for a new session)."""


def drive(
    workspace: Path,
    seed: int,
    prefix: str,
    *,
    sleepy: bool = False,
    trace_file: bool = False,
    durable: bool = True,
) -> Driven:
    """Run the session in ``workspace`` to its end: resume the latest one, or start one.

    ``durable``: fsync the transcript and the ledger (the children do; a process nobody
    kills has no need to, and fsync is slow on a busy disk).
    """
    trace = Trace(workspace / TRACE if trace_file else None)
    trace.mark("start")
    clock = FakeClock()
    sessions = Sessions.for_workspace(workspace, clock=clock)
    model = ScriptedModel(clock=clock, id_prefix=prefix)
    model.answer_when(lambda request: True, planner(seed))
    tools = [mark_tool(workspace / LEDGER, trace, sleepy, durable)]
    agent = Agent(model, tools=tools, workspace=workspace, clock=clock, max_turns=4 * STEPS)
    if sessions.latest() is None:
        transcript = sessions.new(fsync=durable)
        agent.plugins += [
            transcript,
            Tracer(trace, sleepy),
            Binder(sessions, transcript.session_id),
        ]
        list(agent.run(PROMPT))
        transcript.close()
        trace.mark("done")
        return Driven(agent, transcript.session_id, None)
    resumed = resume(agent, sessions, fsync=durable)
    snapshot = [dict(message) for message in agent.messages]
    trace.mark("resumed")
    agent.plugins.append(Tracer(trace, sleepy))
    list(continue_run(agent, resumed))
    resumed.transcript.close()
    trace.mark("done")
    return Driven(agent, resumed.transcript.session_id, snapshot)


def serve() -> None:
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            return
        if words[0] == "run":
            workspace, seed, prefix, sleepy = Path(words[1]), int(words[2]), words[3], words[4]
            pid = os.fork()
            if pid == 0:  # the child
                code = 0
                try:
                    drive(workspace, seed, prefix, sleepy=sleepy == "1", trace_file=True)
                except BaseException as error:  # report, never fall back into the server loop
                    (workspace / "error.txt").write_text(f"{type(error).__name__}: {error}")
                    code = 3
                os._exit(code)
            print(f"pid {pid}", flush=True)
        elif words[0] == "wait":
            _, status = os.waitpid(int(words[1]), 0)
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            print(f"status {code}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve()
    else:  # one session in this process: <workspace> <seed> <id_prefix>
        drive(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sleepy=True, trace_file=True)
