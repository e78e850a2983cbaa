"""A workflow step with an output check, that finds its own session to correct it.

:func:`run_step` is a workflow step with an output check. When the check fails, it
resumes the step's session and sends a short correction, instead of running the whole
step again (a post-mortem of a workflow runner's resume tells of a failed format check that
threw away the step's finished work; its fix: look for the step's session first, and send a
short "fix your format" prompt).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from harness import messages as m
from harness.events import Event
from harness.loop import BaseAgent
from harness.resume.resuming import resume
from harness.resume.sessions import Sessions
from harness.transcript import Transcript

# -- the format retry ------------------------------------------------------------------------

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
    (in the workflow runner's post-mortem, the bug was a lookup skipped because the step had
    no validated record). A
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
