"""Chapter 15's scenes for background shells: a test suite that blocks the conversation, the
same suite in the background, a real process or two, and a harness killed with ``kill -9``.

Not imported by ``harness.notebook``: chapter 15 imports it by its own name.

:func:`tests_scene` plays one conversation twice on a :class:`~harness.clock.FakeClock`: the
person asks for the test suite and, meanwhile, what ``app/tax.py`` does; the suite is a
stand-in (:class:`~harness.background.ScriptedCommand`) that takes two minutes of the clock.
In the foreground the clock sleeps through it, and the question waits; in the background the
call returns at once, the conversation goes on, and the next request after the suite ended
carries its ``<task-notification>``. The model is the scripted one behind
:class:`~harness.model.latency.TimedModel`, so each reply takes as long as a real one would,
and every time shown is the same on every run. :func:`real_shells` and :func:`killed_harness`
run real processes (``sleep``, ``echo``) briefly, for what a stand-in cannot show.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.agent import Agent
from harness.background import (
    BackgroundShells,
    BackgroundWork,
    Processes,
    Scripted,
    ScriptedCommand,
    ShellFinished,
    ShellsNotified,
    ShellStarted,
    ShellStopped,
    counted_ids,
)
from harness.cli.background import shell_rows
from harness.clock import FakeClock
from harness.events import AssistantReplied, Event, ToolFinished, ToolStarted
from harness.model import ScriptedModel, Step, ToolCall, reply, tool_call
from harness.model.latency import TimedModel
from harness.model.scripted import Request
from harness.notebook.sessions import make_project
from harness.notebook.views import Rendered, table
from harness.prompt import PromptCaching
from harness.tools import Permissions, builtin_tools

SUITE = ScriptedCommand(
    seconds=120.0,
    output=[
        (1.5, "collected 412 items\n\n"),
        (60.0, "tests/test_billing.py ........................................\n"),
        (
            119.0,
            "FAILED tests/test_tax.py::test_rounding - assert Decimal('1.24') == Decimal('1.25')\n",
        ),
        (120.0, "1 failed, 411 passed in 120.0s\n"),
    ],
    exit_code=1,
)
"""The project's test suite, as a stand-in: two minutes on the clock, one test failing."""

ASK = "Run the test suite, and while it runs, tell me what app/tax.py does."
THEN = "And app/billing.py?"
LATER = "What does app/reports.py do?"
TAX = "app/tax.py has 20 tax steps; each applies RATE_0 (10%) and rounds to cents."
BILLING = "app/billing.py has 20 billing steps at RATE_1 (20%), each rounded to cents."


def _bash(command: str, **more: object) -> ToolCall:
    return tool_call("bash", command=command, **more)


def _read(path: str) -> ToolCall:
    return tool_call("read_file", path=path)


def foreground_script() -> list[Step]:
    """The model, as a harness without background shells makes it work: the suite first."""
    return [
        reply("Running the test suite first.", tool_calls=[_bash("pytest")]),
        reply("Now app/tax.py.", tool_calls=[_read("app/tax.py")]),
        reply(f"The suite: 1 failed (test_rounding), 411 passed. {TAX}"),
        reply(tool_calls=[_read("app/billing.py")]),
        reply(BILLING),
    ]


def background_script() -> list[Step]:
    """The same work with the suite in the background, then a question two minutes later."""
    started = _bash("pytest", run_in_background=True, description="Run the test suite")
    return [
        reply("Starting the suite in the background.", tool_calls=[started]),
        reply(tool_calls=[_read("app/tax.py")]),
        reply(f"The suite is running. {TAX}"),
        reply(tool_calls=[_read("app/billing.py")]),
        reply(BILLING),
        reply(
            "The suite has finished; reading its output.",
            tool_calls=[tool_call("task_output", task_id="b1", block=False)],
        ),
        reply(tool_calls=[_read("app/reports.py")]),
        reply(
            "First, the suite: 1 failed, 411 passed: test_rounding expects 1.25 where "
            "tax_step rounds to 1.24. As for app/reports.py: 20 report steps at RATE_4 (50%)."
        ),
    ]


@dataclass(frozen=True)
class Moment:
    """One line of a timeline: when, who, what."""

    at: float
    who: str
    what: str


@dataclass
class Scene:
    """A conversation played on the clock: its timeline, agent, model and shells."""

    moments: list[Moment] = field(default_factory=list)
    agent: Agent | None = None
    model: ScriptedModel | None = None
    work: BackgroundWork | None = None
    clock: FakeClock = field(default_factory=FakeClock)
    answers: list[float] = field(default_factory=list)
    """When each prompt's last answer came, in seconds from the start."""
    start: float = 0.0
    """The clock when the scene began."""

    def __post_init__(self) -> None:
        self.start = self.clock.now()

    def requests(self) -> list[Request]:
        return list(self.model.requests) if self.model is not None else []


def _short(text: str, width: int = 76) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _said(event: Event) -> tuple[str, str] | None:
    """Who did what, for a timeline (or ``None`` for an event it leaves out)."""
    if isinstance(event, ToolStarted):
        return "tool", _short(str(event).strip())
    if isinstance(event, ToolFinished):
        mark = "✗" if event.is_error else "✓"
        lines = [line for line in event.content.splitlines() if line.strip()] or [""]
        shown = lines[0]
        if event.name == "bash" and not event.content.startswith("Command running"):
            shown = lines[-1]  # a command's last line is its verdict
        elif event.name == "task_output":
            status = next((line for line in lines if line.startswith("<status>")), "")
            output = [line for line in lines if not line.startswith("<")]
            shown = f"{status} … {output[-1] if output else ''}"
        return "tool", _short(f"{mark} {event.name} → {shown}")
    if isinstance(event, AssistantReplied):
        texts = " ".join(b.text for b in event.message.content if b.type == "text").strip()
        return ("model", _short(texts)) if texts else None
    if isinstance(event, ShellStarted | ShellFinished | ShellStopped | ShellsNotified):
        return "harness", _short(str(event))
    return None


def _play(scene: Scene, prompt: str, events: Iterable[Event]) -> None:
    start = scene.start
    scene.moments.append(Moment(scene.clock.now() - start, "you", prompt))
    for event in events:
        said = _said(event)
        if said is not None:
            scene.moments.append(Moment(scene.clock.now() - start, *said))
    scene.answers.append(scene.clock.now() - start)


def tests_scene(root: Path, *, background: bool, back_at: float = 150.0) -> Scene:
    """The test-suite conversation in ``root`` (made here): in the foreground, two prompts
    one after the other; in the background, a third prompt ``back_at`` seconds in (2:30)."""
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "app").exists():
        make_project(root)
    scene = Scene()
    shells = BackgroundShells(
        root.parent / f".logs-{'bg' if background else 'fg'}",
        clock=scene.clock,
        spawner=Scripted({"pytest": SUITE}),
        ids=counted_ids(),
    )
    scene.work = BackgroundWork(shells)
    scripted = ScriptedModel(
        background_script() if background else foreground_script(), clock=scene.clock
    )
    scene.model = scripted
    others = [t for t in builtin_tools() if t.name != "bash"]
    scene.agent = Agent(
        TimedModel(scripted, scene.clock),
        tools=[*scene.work.tools(), *others],
        plugins=[PromptCaching(), scene.work],
        clock=scene.clock,
        workspace=root,
        permissions=Permissions(mode="bypass"),
    )
    _play(scene, ASK, scene.agent.run(ASK))
    scene.clock.sleep(20.0)  # the person reads the answer and types the next question
    _play(scene, THEN, scene.agent.run(THEN))
    if background:
        scene.clock.sleep(max(back_at - (scene.clock.now() - scene.start), 0.0))
        _play(scene, LATER, scene.agent.run(LATER))
    return scene


def clock_time(seconds: float) -> str:
    """``2:03.5``: minutes and seconds on the clock."""
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}:{rest:04.1f}"


def timeline(scene: Scene, *, title: str = "") -> Rendered:
    """The scene's conversation, a line per step, with the clock's time."""
    rows = [(clock_time(m.at), m.who, m.what) for m in scene.moments]
    return table(["time", "who", "what"], rows, title=title)


def compare(foreground: Scene, background: Scene) -> Rendered:
    """When each of the person's questions was answered, blocking and not."""
    both = (foreground, background)
    rows = [
        ("the tests, and what app/tax.py does", *(clock_time(s.answers[0]) for s in both)),
        ("app/billing.py (asked 20 s after)", *(clock_time(s.answers[1]) for s in both)),
    ]
    return table(["answered at", "blocking bash", "in the background"], rows)


def notification_request(scene: Scene) -> str:
    """The text the model was sent with its ``<task-notification>``, paths as ``<logs>``."""
    for request in scene.requests():
        for block in request.last_message.get("content", []):
            text = block.get("text", "") if isinstance(block, dict) else ""
            if "<task-notification>" in text:
                shown = text
                if scene.work is not None:
                    shown = shown.replace(str(scene.work.shells.folder), "<logs>")
                return shown
    return ""


def shells_table(shells: BackgroundShells | BackgroundWork) -> Rendered:
    """The session's shells as ``/bashes`` lists them."""
    work = shells if isinstance(shells, BackgroundWork) else BackgroundWork(shells)
    return table(["id", "status", "runtime", "exit code", "command"], shell_rows(work))


# -- real processes ------------------------------------------------------------------------------


def until(check: Callable[[], bool], seconds: float = 20.0) -> bool:
    """Whether ``check`` comes true within ``seconds`` (polled; the bound only ends a wait
    that would otherwise be endless, it never decides an outcome on a quick machine)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def alive(pid: int | None) -> bool:
    """Whether a process ``pid`` exists (a zombie counts as gone)."""
    if pid is None:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return state != "Z"


def group_members(group: int) -> list[int]:
    """The processes of process group ``group`` (Linux's /proc; empty elsewhere)."""
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(entry.name))
    return found


HARNESS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from harness.background import BackgroundShells
    space = Path(sys.argv[1])
    shells = BackgroundShells(space / ".logs-killed")
    info = shells.start("sleep 600 & sleep 600; wait", cwd=space, workspace=space)
    print(info.pid, flush=True)
    sys.stdin.read()  # until it is killed
    """
)
"""A harness in a process of its own: it starts one background shell (two ``sleep`` commands in
one group), says the shell's process id, and waits to be killed."""


@dataclass(frozen=True)
class Killed:
    """What was left after a harness was killed with ``SIGKILL``."""

    running: bool
    gone: bool

    def __str__(self) -> str:
        before = "running" if self.running else "NOT running"
        after = "none is left" if self.gone else "some are still running"
        return (
            f"before: the shell's processes (sh and two sleeps) {before}\n"
            f"kill -9 of the harness's process\n"
            f"after: {after}"
        )


def killed_harness(space: Path) -> Killed:
    """Start a harness that starts a background shell, ``kill -9`` the harness, and look for
    the shell's processes."""
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, str(space)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert harness.stdout is not None
        group = int(harness.stdout.readline())
        running = until(lambda: len(group_members(group)) >= 3)  # sh and its two sleeps
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait()
        return Killed(running, until(lambda: group_members(group) == []))
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()


def real_shells(space: Path) -> Iterator[str]:
    """A real command in the background, read and listed; a second one stopped. Each line
    is what happened, and nothing that depends on how fast the machine is."""
    with BackgroundShells(space / ".logs-real", spawner=Processes(), ids=counted_ids()) as shells:
        steps = "for n in 1 2 3; do echo \"test $n ok\"; sleep 0.2; done; echo '3 passed'"
        first = shells.start(steps, cwd=space, workspace=space, description="three quick tests")
        yield f"started {first.task_id}: {first.status}"
        done = shells.wait(first.task_id, timeout=30.0)
        yield f"waited: {done.task_id} {done.status}, exit code {done.exit_code}"
        yield "read:\n" + textwrap.indent(shells.read_new(first.task_id).output.rstrip(), "  ")
        again = shells.read_new(first.task_id).output
        yield f"read again: {again!r} (nothing new)"
        server = shells.start("sleep 600", cwd=space, workspace=space, description="a server")
        yield f"started {server.task_id}: {server.status}, process alive: {alive(server.pid)}"
        stopped = shells.stop(server.task_id)
        yield (
            f"stopped {stopped.task_id}: {stopped.status}, process alive: "
            f"{not until(lambda: not alive(server.pid))}"
        )
        yield str(shells_table(shells))


__all__ = [
    "ASK",
    "HARNESS",
    "LATER",
    "SUITE",
    "THEN",
    "Killed",
    "Moment",
    "Scene",
    "alive",
    "background_script",
    "clock_time",
    "compare",
    "foreground_script",
    "group_members",
    "killed_harness",
    "notification_request",
    "real_shells",
    "shells_table",
    "tests_scene",
    "timeline",
    "until",
]
