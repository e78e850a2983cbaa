"""One task under one configuration: the task's definition, and the trial that runs it.

An :class:`EvalTask` is what a person would hand the agent, plus how to tell it was done:

* ``setup`` writes the project into an empty workspace;
* ``prompt`` is what the person types;
* ``policy`` is the scripted model's policy (offline); live, the real model does the work;
* ``check`` looks at the *outcome*, the workspace and the conversation, never at the script:
  so the same check holds a live run to the same standard;
* ``interference`` is what happens to the session from outside, per process: API faults, the
  process dying (:mod:`harness.evals.policy`);
* ``drive`` is how a person goes through the session: one run (:func:`run_once`), or a
  crash and a resume, or an approval given hours later.

A :class:`Trial` is one run of a task under a configuration, in a folder of its own. Each
"process" of the session is a harness built by ``assemble`` with the configuration applied
(:meth:`Trial.build`), on one clock: a :class:`~harness.clock.FakeClock` offline, whose
wall time comes from :class:`~harness.model.latency.TimedModel`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

from harness import messages as m
from harness.background import Scripted, ScriptedCommand
from harness.cli.assemble import Harness, Options, assemble, sessions_for
from harness.clock import Clock, FakeClock, RealClock
from harness.evals.configs import Configuration
from harness.evals.policy import Interference, Interfering, Policy, ProcessKilled, scripted
from harness.events import Event, MaxTurnsReached, TurnEnded
from harness.model import AnthropicModel
from harness.model.base import Model
from harness.model.cache import PromptCache
from harness.model.latency import TimedModel
from harness.recovery import GaveUp
from harness.resume import Sessions
from harness.tools.permissions import Approver, Mode, deny_all

Check = Callable[[Path, Sequence[m.MessageDict]], str | None]
"""``check(workspace, conversation)``: ``None`` when the task is done, else what is wrong."""


_DONE = ("end_turn", "stop_sequence", None)
"""Stop reasons of a reply that ended because the model was done."""


def file_text(workspace: Path, relative: str) -> str:
    """What a checker reads: the text of a workspace file, or ``""`` if it is missing, not a
    regular file, or not UTF-8 text (an agent may leave anything there, live or not)."""
    path = workspace / relative
    try:
        if path.is_symlink() or not path.is_file():
            return ""
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def no_interference(_process: int) -> Interference | None:
    return None


def run_once(trial: Trial) -> None:
    """One process, one prompt: the person waits for the answer."""
    trial.run(trial.build().agent.run(trial.task.prompt))


@dataclass(frozen=True)
class EvalTask:
    """A task, how the scripted model goes about it, and how to tell it was done."""

    name: str
    description: str
    prompt: str
    setup: Callable[[Path], None]
    policy: Policy
    check: Check
    needs: tuple[str, ...] = ()
    """The configurations (by name) under which it should be lost, or clearly dearer, slower,
    or fuller (its largest context)."""
    window: int | None = None
    """The context window (``None``: the model's own)."""
    permission_mode: Mode = "accept_edits"
    max_turns: int = 80
    interference: Callable[[int], Interference | None] = no_interference
    """What befalls process ``n`` (0: the first) from outside."""
    drive: Callable[[Trial], None] = run_once
    commands: Mapping[str, ScriptedCommand] = field(default_factory=dict)
    """Stand-ins for the shell commands the task runs, offline (any other command is "not
    found"): a two-minute test suite takes two minutes of the fake clock, and no time."""


@dataclass
class Trial:
    """``task`` under ``configuration``, in ``root`` (which must be empty or absent)."""

    task: EvalTask
    configuration: Configuration
    root: Path
    live: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    """Where the key is looked for when ``live`` (the process environment by default)."""
    clock: Clock = field(default_factory=FakeClock)
    harnesses: list[Harness] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Why a run ended on an exception (an API error nobody retried, the process killed)."""
    waited: float = 0.0
    """Seconds the session spent waiting for a person (not counted as the harness's time)."""
    started: float = 0.0
    """When the trial began, on its clock."""
    _sessions: Sessions | None = None
    _cache: PromptCache | None = None
    _ids: Iterator[str] = field(default_factory=lambda: (str(uuid.UUID(int=n)) for n in count(1)))

    def __post_init__(self) -> None:
        if self.live:
            self.env = dict(os.environ) if not self.env else dict(self.env)
            if not isinstance(self.clock, RealClock):
                self.clock = RealClock()
        self._cache = PromptCache(clock=self.clock)
        self.started = self.clock.now()
        (self.root / "home").mkdir(parents=True, exist_ok=True)
        self.workspace.mkdir(parents=True, exist_ok=True)

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    def options(self) -> Options:
        return Options(
            workspace=self.workspace,
            permission_mode=self.task.permission_mode,
            max_turns=self.task.max_turns,
            sessions_root=self.root / "sessions",
            env=self.env if self.live else {},
            context_window=self.task.window,
            home=self.root / "home",
        )

    def model(self) -> Model:
        """The model of the next process: the task's policy offline (each reply taking the
        time a real one would, on the fake clock), the live model with a key."""
        process = len(self.harnesses)
        model: Model
        if self.live:
            model = AnthropicModel()
        else:
            policy = scripted(
                self.task.policy,
                clock=self.clock,
                window=self.options().window,
                id_prefix=f"p{process}x",  # a resumed process's ids must be new ones
                cache=self._cache,
            )
            model = TimedModel(policy, self.clock)
        interference = self.task.interference(process)
        return Interfering(model, interference) if interference is not None else model

    def build(self, session: str | None = None, approver: Approver = deny_all) -> Harness:
        """A new process of the session: the assembled harness under the configuration
        (``session``: resume that session; raises ``SessionNotFound`` if there is none)."""
        options = self.options()
        if self._sessions is None:
            self._sessions = sessions_for(options, clock=self.clock, ids=self._ids)
        harness = assemble(
            options,
            model=self.model(),
            clock=self.clock,
            sessions=self._sessions,
            session=session,
            approver=approver,
            fsync=False,  # a killed process is simulated in this one: the OS keeps its writes
            # Offline, no command really runs: the task's stand-ins, on the fake clock.
            spawner=None if self.live else Scripted(self.task.commands),
            leave_out=self.configuration.leave_out,
        )
        self.configuration.apply(harness)
        self.harnesses.append(harness)
        return harness

    def run(self, events: Iterable[Event]) -> list[Event]:
        """Go through a run's events. A run that ends otherwise than by the model's choice (an
        exception, a reply cut at the window's end, too many turns, recovery giving up) is
        said in :attr:`problems`."""
        seen: list[Event] = []
        try:
            for event in events:
                seen.append(event)
                if isinstance(event, TurnEnded) and event.stop_reason not in _DONE:
                    self.problems.append(f"the last reply stopped: {event.stop_reason}")
                elif isinstance(event, MaxTurnsReached | GaveUp):
                    self.problems.append(str(event))
        except ProcessKilled:
            self.problems.append("the process was killed")
        except Exception as error:  # the API's error, uncaught: the command line would stop
            self.problems.append(f"the run stopped: {type(error).__name__}: {error}"[:300])
        self.events += seen
        return seen

    def wait_for_person(self, seconds: float) -> None:
        """A person takes ``seconds`` to answer (the clock moves on; not the harness's time)."""
        if isinstance(self.clock, FakeClock):
            self.clock.advance(seconds)
            self.waited += seconds

    @property
    def conversation(self) -> list[m.MessageDict]:
        """The conversation of the last process (empty before the first)."""
        return self.harnesses[-1].agent.messages if self.harnesses else []

    def close(self) -> None:
        """End every process of the session: their background shells are stopped."""
        for harness in self.harnesses:
            harness.close()

    def meters(self) -> Iterator[Any]:
        """Every model call of every process (a subagent's are on its parent's meter)."""
        for harness in self.harnesses:
            yield from harness.agent.meter.calls


__all__ = ["Check", "EvalTask", "Trial", "file_text", "no_interference", "run_once"]
