"""Session memory against hostile files and folders (issue 29).

* a loop of supersedes (f1 ↔ f2, f1 → f2 → f3 → f1) or a supersede of a fact that is not
  there loses no fact: the loop's newest fact stands (:func:`harness.memory.live_facts`);
* ``fit_budgets`` drops exactly the facts the old, quadratic version dropped (the old one is
  copied here as the reference), now in n log n time (``tests/benchmarks/memory_benchmark.py``);
* a ``session-memory`` folder (or ``MEMORY.md``) that is a link out of the session is neither
  read nor written (:class:`MemoryPathError`, a ``MemoryNotUpdated`` event);
* a writer killed with SIGKILL in the middle of ``write_atomic`` leaves a temporary file, which
  the next write of that target removes (and no other: a live writer's, another target's);
* a file broken by hand (a bad line, bytes that are not UTF-8, an edit made while the fork
  ran) is reported with its file and line and never written over.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import harness.atomic
from harness import messages as m
from harness import tokens
from harness.agent import Agent
from harness.clock import FakeClock
from harness.events import Event, TurnEnded
from harness.loop import AgentConfig
from harness.memory import (
    EXTRACTION_MARKER,
    HAND_EDIT,
    SECTIONS,
    TRIM_ORDER,
    ExtractionSchedule,
    Fact,
    MemoryFormatError,
    MemoryNotUpdated,
    MemoryPathError,
    MemoryUpdated,
    SessionMemory,
    SessionMemoryError,
    Trimmed,
    fact_line,
    fit_budgets,
    live_facts,
    parse,
    render,
    stale_temporaries,
    write_atomic,
)
from harness.model import Request, ScriptedModel, Step, reply, tool_call
from harness.model.scripted_memory import is_extraction_request, scripted_extraction
from harness.notebook.sessions import make_project
from harness.tools import builtin_tools

PROPERTY = settings(max_examples=60, deadline=None)
REPO = Path(__file__).resolve().parent.parent
NOON = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
EVERY_REPLY = ExtractionSchedule(first_tokens=1, every_tokens=1, tool_calls=1)
POSIX = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs POSIX processes and links")


def fact(n: int, text: str = "", section: str = "Task", supersedes: int | None = None) -> Fact:
    return Fact(
        section=section,
        text=text or f"fact {n}",
        id=f"f{n}",
        supersedes=f"f{supersedes}" if supersedes else None,
    )


def in_section_order(facts: Sequence[Fact]) -> list[Fact]:
    return sorted(facts, key=lambda f: SECTIONS.index(f.section))


# --- a small session with session memory -------------------------------------------------------


def session(
    root: Path,
    *,
    memory_path: Path | None = None,
    memory_root: Path | None = None,
    responder: Callable[[Request], Step] = scripted_extraction,
) -> tuple[Agent, ScriptedModel, SessionMemory]:
    """A scripted agent that reads two files; its memory extracts after every reply."""
    root.mkdir(parents=True, exist_ok=True)
    make_project(root, functions=3)
    clock = FakeClock()
    script = [
        reply("Reading.", tool_calls=[tool_call("read_file", path="app/billing.py")]),
        reply("Reading.", tool_calls=[tool_call("read_file", path="app/tax.py")]),
        reply("Done."),
    ]
    model = ScriptedModel(script, clock=clock)
    model.answer_when(is_extraction_request, responder)
    memory = SessionMemory(
        memory_path or root / ".harness" / "MEMORY.md", root=memory_root, schedule=EVERY_REPLY
    )
    agent = Agent(
        model,
        tools=builtin_tools(),
        workspace=root,
        clock=clock,
        plugins=[memory],
        config=AgentConfig(max_turns=20),
        approver=lambda request: True,
    )
    return agent, model, memory


def run(agent: Agent, prompt: str = "Read billing and tax.") -> list[Event]:
    events = list(agent.run(prompt))
    assert isinstance(events[-1], TurnEnded), events[-1]
    return events


def of_type(events: list[Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def forks(model: ScriptedModel) -> int:
    return sum(
        EXTRACTION_MARKER in m.text_of(r.last_message)
        for r in model.requests
        if is_extraction_request(r)
    )


# --- 1. supersedes: loops and missing facts lose nothing ---------------------------------------


def reaches_a_live_fact(facts: Sequence[Fact], live: Sequence[Fact]) -> set[str]:
    """The ids of facts that stand or are superseded, directly or along a chain, by one that
    does (computed from the links alone, not the way ``live_facts`` does it)."""
    present = {f.id for f in facts}
    reached: set[str] = {f.id for f in live if f.id}
    grew = True
    while grew:
        grew = False
        for f in facts:
            target = f.supersedes
            if f.id in reached and target in present and target and target not in reached:
                reached.add(target)
                grew = True
    return reached


def test_two_facts_superseding_each_other_keep_the_newer() -> None:
    older, newer = fact(1, "rate is 5 %", supersedes=2), fact(2, "rate is 7 %", supersedes=1)
    assert live_facts([older, newer]) == [newer]
    assert live_facts([newer, older]) == [newer]


def test_a_longer_loop_of_supersedes_keeps_its_newest_fact() -> None:
    loop = [fact(1, supersedes=2), fact(2, supersedes=3), fact(3, supersedes=1)]
    other = fact(4, "not in the loop")
    assert live_facts([*loop, other]) == [loop[2], other]


def test_a_loop_hanging_off_a_chain_keeps_the_loops_newest_and_drops_the_tail() -> None:
    # f5 → f6 → f5 is a loop; f7 supersedes f5, from outside it; f1 is superseded by f6.
    made = [fact(1), fact(5, supersedes=6), fact(6, supersedes=5), fact(7, supersedes=5)]
    made.append(fact(8, supersedes=1))
    kept = live_facts(made)
    assert [f.id for f in kept] == ["f6", "f7", "f8"]
    assert reaches_a_live_fact(made, kept) == {f.id for f in made}


def test_a_supersede_of_a_fact_that_is_not_there_drops_nothing() -> None:
    made = [fact(1), fact(2, supersedes=99), fact(3, supersedes=1)]
    assert live_facts(made) == made[1:]


def test_a_cycle_of_supersedes_keeps_every_fact_in_the_file_written_next(tmp_path: Path) -> None:
    path = tmp_path / ".harness" / "MEMORY.md"
    loop = [fact(1, "use cents", supersedes=3), fact(2, "use Decimal", supersedes=1)]
    loop.append(fact(3, "round half up", supersedes=2))
    write_atomic(path, render([*loop, fact(4, "billing is app/billing.py", "Learnings")]))
    agent, _, memory = session(tmp_path, memory_path=path)

    assert [f.id for f in memory.load()] == ["f3", "f4"]
    events = run(agent)

    assert of_type(events, MemoryUpdated) and not of_type(events, MemoryNotUpdated)
    on_file = parse(path.read_text(encoding="utf-8"))
    assert {"f3", "f4"} <= {f.id for f in on_file}
    assert next(f for f in on_file if f.id == "f3").text == "round half up"


# Facts with unique ids and links anywhere: to each other (loops of any length, chains,
# several facts superseding one), to ids that are not there, or none.
@st.composite
def linked_facts(draw: st.DrawFn) -> list[Fact]:
    numbers = draw(st.lists(st.integers(1, 40), unique=True, max_size=14))
    links: dict[int, int | None] = {}
    for n in numbers:
        others = [t for t in [*numbers, 41, 99] if t != n]  # never itself (Fact refuses it)
        links[n] = draw(st.none() | st.sampled_from(others))
    if len(numbers) >= 2 and draw(st.booleans()):  # and often a loop, of 2 or more
        loop = draw(st.permutations(numbers))[: draw(st.integers(2, len(numbers)))]
        links.update(zip(loop, [*loop[1:], loop[0]], strict=True))
    return [fact(n, f"fact {n}", draw(st.sampled_from(SECTIONS)), links[n]) for n in numbers]


@PROPERTY
@given(linked_facts(), st.randoms(use_true_random=False))
def test_no_fact_vanishes_whatever_the_supersedes(made: list[Fact], rng: random.Random) -> None:
    kept = live_facts(made)

    assert reaches_a_live_fact(made, kept) == {f.id for f in made}
    assert kept == [f for f in made if f in kept]  # in their order
    if made:
        assert kept  # something always stands
    assert live_facts(kept) == kept  # what stands supersedes nothing that stands
    shuffled = rng.sample(made, len(made))
    assert set(live_facts(shuffled)) == set(kept)  # the order of the file does not matter
    assert parse(render(kept)) == in_section_order(kept)


@PROPERTY
@given(linked_facts())
def test_the_memory_read_from_a_file_and_written_back_keeps_what_stands(
    made: list[Fact],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "MEMORY.md"
        path.write_text(render(made), encoding="utf-8")
        memory = SessionMemory(path)

        loaded = memory.load()
        write_atomic(path, memory.text())  # what the next extraction starts from

        assert loaded == in_section_order(live_facts(in_section_order(made)))
        assert parse(path.read_text(encoding="utf-8")) == loaded
        assert reaches_a_live_fact(made, loaded) == {f.id for f in made}


# --- 2. fit_budgets: the same facts dropped as before, in n log n time -------------------------


def reference_section_tokens(facts: Sequence[Fact], section: str) -> int:
    """``section_tokens`` as it was before issue 29."""
    lines = [
        f"## {section}",
        *(fact_line(f, provenance=False) for f in facts if f.section == section),
    ]
    return tokens.estimate_text("\n".join(lines))


def reference_fit_budgets(
    facts: Sequence[Fact], *, per_section: int, total: int
) -> tuple[list[Fact], list[Trimmed]]:
    """``fit_budgets`` as it was before issue 29 (quadratic): the rule the new one keeps."""
    kept = list(facts)
    trimmed: list[Trimmed] = []

    def drop_oldest(section: str, budget: str) -> None:
        oldest = min((f for f in kept if f.section == section), key=lambda f: f.number)
        kept.remove(oldest)
        trimmed.append(Trimmed(oldest, budget))

    for name in SECTIONS:
        while reference_section_tokens(kept, name) > per_section and any(
            f.section == name for f in kept
        ):
            drop_oldest(name, "section")
    while sum(reference_section_tokens(kept, name) for name in SECTIONS) > total and kept:
        drop_oldest(next(s for s in TRIM_ORDER if any(f.section == s for f in kept)), "total")
    return kept, trimmed


# Sizes from a few tokens to a hundred, ASCII and not (the estimate counts them differently),
# ids repeated or missing (several facts with the same number: the first in the list is the
# oldest), identical facts, budgets down to less than the headings alone.
budget_texts = st.sampled_from(["x", "ab cd", "é", "日本語", "🙂", "a-b"]) | st.text(
    st.characters(blacklist_categories=["Cs", "Cc", "Zl", "Zp"]), min_size=1, max_size=8
)


@st.composite
def budget_facts(draw: st.DrawFn) -> list[Fact]:
    made: list[Fact] = []
    for _ in range(draw(st.integers(0, 60))):
        piece = draw(budget_texts)
        text = " ".join((piece * draw(st.integers(1, 40))).split())
        if not text or "<!--" in text or "-->" in text:
            text = "a fact"
        number = draw(st.none() | st.integers(1, 30))
        made.append(
            Fact(
                section=draw(st.sampled_from(SECTIONS)),
                text=text,
                id=f"f{number}" if number else None,
            )
        )
    if draw(st.booleans()) and made:
        made.append(draw(st.sampled_from(made)))  # the same fact twice
    return made


@PROPERTY
@given(budget_facts(), st.integers(0, 400), st.integers(0, 1_500))
def test_fit_budgets_drops_the_same_facts_in_the_same_order_as_before(
    made: list[Fact], per_section: int, total: int
) -> None:
    assert fit_budgets(made, per_section=per_section, total=total) == reference_fit_budgets(
        made, per_section=per_section, total=total
    )


def test_fit_budgets_on_a_few_hundred_facts_matches_the_old_rule() -> None:
    rng = random.Random(29)
    made = [
        Fact(
            section=rng.choice(SECTIONS),
            text=f"step {n} " + "word " * rng.randint(1, 30),
            id=f"f{rng.randint(1, 500)}",
        )
        for n in range(400)
    ]
    for per_section, total in [(2_000, 12_000), (300, 1_000), (50, 5_000), (5_000, 700)]:
        new = fit_budgets(made, per_section=per_section, total=total)
        assert new == reference_fit_budgets(made, per_section=per_section, total=total)


def test_fit_budgets_takes_any_sequence_and_leaves_it_alone() -> None:
    made = tuple(fact(n, "word " * 50, "Worklog") for n in range(1, 30))
    kept, trimmed = fit_budgets(made, per_section=200, total=12_000)
    assert len(made) == 29 and kept == list(made[-len(kept) :])
    assert [t.fact for t in trimmed] == list(made[: len(trimmed)])


# --- 3. a memory folder linked out of the session ----------------------------------------------


def linked_layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``sessions/abc/session-memory`` is a link to ``outside``; returns (sessions, the memory
    file's path, outside)."""
    sessions = tmp_path / "sessions"
    outside = tmp_path / "outside"
    outside.mkdir()
    (sessions / "abc").mkdir(parents=True)
    (sessions / "abc" / "session-memory").symlink_to(outside, target_is_directory=True)
    return sessions, sessions / "abc" / "session-memory" / "MEMORY.md", outside


@POSIX
def test_a_memory_folder_linked_out_of_the_session_is_not_written(tmp_path: Path) -> None:
    sessions, path, outside = linked_layout(tmp_path)
    agent, model, memory = session(tmp_path / "work", memory_path=path, memory_root=sessions)

    events = run(agent)

    failed = of_type(events, MemoryNotUpdated)
    assert failed and not of_type(events, MemoryUpdated)
    assert all("outside" in e.reason and str(path) in e.reason for e in failed)
    assert list(outside.iterdir()) == []  # not the file, not a temporary file
    assert forks(model) == 0  # refused before any fork was paid for
    assert memory.facts == []


@POSIX
def test_a_memory_folder_linked_out_is_not_read_either(tmp_path: Path) -> None:
    sessions, path, outside = linked_layout(tmp_path)
    (outside / "MEMORY.md").write_text(render([fact(1, "someone else's notes")]))
    memory = SessionMemory(path, root=sessions)

    with pytest.raises(MemoryPathError, match="outside") as caught:
        memory.load()
    assert isinstance(caught.value, SessionMemoryError) and caught.value.path == path
    assert memory.facts == []


@POSIX
def test_a_link_made_while_the_fork_runs_is_not_written_through(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    folder = sessions / "abc" / "session-memory"
    outside = tmp_path / "outside"
    outside.mkdir()

    def relink_then_answer(request: Request) -> Step:
        if EXTRACTION_MARKER in m.text_of(request.last_message) and not folder.is_symlink():
            folder.mkdir(parents=True, exist_ok=True)
            folder.rmdir()
            folder.symlink_to(outside, target_is_directory=True)
        return scripted_extraction(request)

    agent, _, _ = session(
        tmp_path / "work",
        memory_path=folder / "MEMORY.md",
        memory_root=sessions,
        responder=relink_then_answer,
    )
    events = run(agent)

    assert of_type(events, MemoryNotUpdated) and not of_type(events, MemoryUpdated)
    assert list(outside.iterdir()) == []


def test_a_memory_inside_its_root_through_an_inner_link_is_used(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    (sessions / "real").mkdir(parents=True)
    (sessions / "abc").symlink_to(sessions / "real", target_is_directory=True)
    agent, _, memory = session(
        tmp_path / "work", memory_path=sessions / "abc" / "MEMORY.md", memory_root=sessions
    )
    events = run(agent)
    assert of_type(events, MemoryUpdated) and not of_type(events, MemoryNotUpdated)
    assert parse((sessions / "real" / "MEMORY.md").read_text()) == memory.facts


# Where the link is (the session folder, its session-memory folder, the file itself), where
# it points (inside the sessions folder, outside, nowhere yet), and whether the memory file
# is there: the memory is read exactly when its real path is inside the root.
@POSIX
@PROPERTY
@given(
    st.sampled_from(["abc", "abc/session-memory", "abc/session-memory/MEMORY.md"]),
    st.sampled_from(["inside", "outside", "dangling-inside", "dangling-outside"]),
    st.booleans(),
)
def test_the_memory_is_read_only_from_inside_its_root(link: str, to: str, exists: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder).resolve()
        sessions = base / "sessions"
        place = (sessions if to.endswith("inside") else base / "elsewhere") / "target"
        is_file = link.endswith(".md")
        if not to.startswith("dangling"):
            if is_file:
                place.parent.mkdir(parents=True, exist_ok=True)
            else:
                place.mkdir(parents=True)
        linked = sessions / link
        linked.parent.mkdir(parents=True, exist_ok=True)
        linked.symlink_to(place, target_is_directory=not is_file)
        path = sessions / "abc" / "session-memory" / "MEMORY.md"
        real = path.resolve()
        if exists and real.parent.is_dir():
            real.write_text(render([fact(1, "a fact")]))
        memory = SessionMemory(path, root=sessions)

        if to.endswith("inside"):
            expected = [fact(1, "a fact")] if exists and real.exists() else []
            assert memory.load() == expected
        else:
            with pytest.raises(MemoryPathError):
                memory.load()
            assert memory.facts == []


def test_a_memory_without_a_root_is_read_wherever_it_is(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    write_atomic(path, render([fact(1)]))
    assert SessionMemory(path).load() == [fact(1)]


# --- 4. temporary files of killed writers ------------------------------------------------------


def temporaries(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}."))


# The writer: imports harness.memory once (the slow part), then for each line it is sent,
# "block <target>" or "loop <target>", forks a process that writes the target with
# write_atomic and says so on stdout: its pid first, then, for "block", "inside" once it has
# stopped in the middle of the write (the temporary file whole, the move not made) to wait to
# be killed; for "loop", "wrote" after each large version it writes, forever. When that
# process has ended (and is reaped), the writer prints how: the signal that killed it.
WRITER = """
import os, sys, time
import harness.atomic
from pathlib import Path
from harness.memory import write_atomic
versions = [f"version {v}\\n" * 100_000 for v in range(3)]
print("ready", flush=True)
for command in sys.stdin:
    mode, target = command.split()
    pid = os.fork()
    if pid == 0:
        print(os.getpid(), flush=True)
        if mode == "block":
            def stop(source, destination):
                print("inside", flush=True)
                time.sleep(3600)
            harness.atomic.os.replace = stop
            write_atomic(Path(target), "the killed write\\n" * 100_000)
        n = 0
        while True:
            write_atomic(Path(target), versions[n % 3])
            print("wrote", flush=True)
            n += 1
    _, status = os.waitpid(pid, 0)
    print(os.WTERMSIG(status) if os.WIFSIGNALED(status) else -1, flush=True)
"""
VERSIONS = [f"version {v}\n" * 100_000 for v in range(3)]


class Writer:
    """The writer process, shared by the tests of this module (one import of the harness)."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        assert self.read() == "ready"

    def read(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def start(self, mode: str, target: Path) -> int:
        """Start a write of ``target``; the pid of the process writing it."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"{mode} {target}\n")
        self.process.stdin.flush()
        return int(self.read())

    def kill(self, pid: int) -> None:
        """SIGKILL the writing process, wait until it is gone (and reaped)."""
        os.kill(pid, signal.SIGKILL)
        while (line := self.read()) in ("wrote", "inside"):
            pass
        assert int(line) == signal.SIGKILL


@pytest.fixture(scope="module")
def writer() -> Iterator[Writer]:
    if not hasattr(os, "fork"):
        pytest.skip("needs fork and SIGKILL (POSIX)")
    made = Writer()
    yield made
    made.process.kill()
    made.process.wait(timeout=30)


def test_a_writer_killed_inside_the_write_leaves_a_temporary_the_next_write_removes(
    tmp_path: Path, writer: Writer
) -> None:
    target = tmp_path / "session-memory" / "MEMORY.md"
    write_atomic(target, "the old memory\n")
    pid = writer.start("block", target)
    assert writer.read() == "inside"
    writer.kill(pid)

    [left] = temporaries(target)
    assert left.startswith(f".MEMORY.md.{pid}-") and left.endswith(".tmp")
    assert target.read_text() == "the old memory\n"  # the killed write changed nothing

    write_atomic(target, "the next memory\n")

    assert temporaries(target) == []
    assert target.read_text() == "the next memory\n"


def test_whatever_the_moment_of_the_kill_the_next_write_leaves_one_whole_file(
    tmp_path: Path, writer: Writer
) -> None:
    target = tmp_path / "MEMORY.md"
    previous: list[str] = []  # what the test itself wrote last
    for round_, writes in enumerate([0, 0, 1, 2, 3]):
        pid = writer.start("loop", target)
        for _ in range(writes):
            assert writer.read() == "wrote"
        writer.kill(pid)  # at some moment of some write, or between two, or before the first

        assert not target.exists() or target.read_text() in [*VERSIONS, *previous[-1:]]
        previous.append(f"after kill {round_}\n")
        write_atomic(target, f"after kill {round_}\n")

        assert temporaries(target) == []
        assert target.read_text() == f"after kill {round_}\n"
        assert [p.name for p in tmp_path.iterdir()] == ["MEMORY.md"]


@POSIX
def test_a_live_writers_temporary_and_other_targets_are_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "sessions.json"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    dead = int(gone.stdout)
    live = os.getppid()  # the process that started the tests: running
    names = {
        f".sessions.json.{live}-abc123.tmp": True,  # a live writer's: kept
        f".sessions.json.{dead}-abc123.tmp": False,  # a dead writer's: removed
        f".sessions.json.{os.getpid()}-zz9_x.tmp": False,  # this process's, left over
        f".MEMORY.md.{dead}-abc123.tmp": True,  # another target's
        ".sessions.json.k2j4h5x_.tmp": True,  # no process id (the old naming)
        f".sessions.json.{dead}-abc.tmp.bak": True,  # not a temporary file of ours
        f"sessions.json.{dead}-abc123.tmp": True,  # not hidden: not ours either
    }
    for name in names:
        (tmp_path / name).write_text("partial")

    write_atomic(target, "{}")

    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["sessions.json", *(name for name, kept in names.items() if kept)]
    )


def test_a_write_in_progress_on_another_thread_keeps_its_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "MEMORY.md"
    inside, release = threading.Event(), threading.Event()
    real_fsync = os.fsync
    slow: list[threading.Thread] = []

    def fsync(descriptor: int) -> None:
        if threading.current_thread() in slow:
            inside.set()
            release.wait(timeout=60)
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    other = threading.Thread(target=write_atomic, args=(target, "the other thread's\n"))
    slow.append(other)
    other.start()
    assert inside.wait(timeout=60)
    [theirs] = temporaries(target)

    write_atomic(target, "this thread's\n")

    assert temporaries(target) == [theirs]  # still being written: not stale
    release.set()
    other.join(timeout=60)
    assert target.read_text() == "the other thread's\n"  # it moved its file over ours
    assert temporaries(target) == []


# Any mix of names in the folder, with process ids of running and ended processes (as a
# stand-in says): only this target's temporary files of ended processes (and this one's) go.
pids = st.integers(1, 99_999)
kinds = st.sampled_from(["ours", "other target", "old naming", "not hidden", "suffix"])


@PROPERTY
@given(st.lists(st.tuples(kinds, pids, st.from_regex(r"[a-z0-9_]{1,8}", fullmatch=True))),
       st.sets(pids))  # fmt: skip
def test_only_this_targets_temporaries_of_ended_writers_are_removed(
    entries: list[tuple[str, int, str]], running: set[int]
) -> None:
    forms = {
        "ours": ".MEMORY.md.{pid}-{tag}.tmp",
        "other target": ".MEMORY.md.bak.{pid}-{tag}.tmp",
        "old naming": ".MEMORY.md.{tag}.tmp",
        "not hidden": "MEMORY.md.{pid}-{tag}.tmp",
        "suffix": ".MEMORY.md.{pid}-{tag}.tmp.1",
    }
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "MEMORY.md"
        expected = {"MEMORY.md"}
        for kind, pid, tag in entries:
            name = forms[kind].format(pid=pid, tag=tag)
            (Path(folder) / name).write_text("partial")
            ended = pid not in running or pid == os.getpid()
            if not (kind == "ours" and ended):
                expected.add(name)
        with mock.patch.object(harness.atomic, "_running", lambda pid: pid in running):
            assert {p.name for p in stale_temporaries(target)} == {
                n for n in os.listdir(folder) if n not in expected
            }
            write_atomic(target, "whole\n")
        assert set(os.listdir(folder)) == expected
        assert target.read_text() == "whole\n"


# --- 5. files broken by hand are reported and never written over -------------------------------


def good_file() -> str:
    return render(
        [
            Fact(section="Task", text="Fix rounding.", id="f1", source="user", turn=1, at=NOON),
            Fact(section="Learnings", text="Amounts are Decimal.", id="f2", source=HAND_EDIT),
        ]
    )


def test_bytes_that_are_not_utf8_are_an_error_naming_the_file_line_and_column(
    tmp_path: Path,
) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_bytes(good_file().encode().replace(b"Amounts", b"Am\xe9ounts"))
    line = good_file().splitlines().index("## Learnings") + 2
    memory = SessionMemory(path)

    with pytest.raises(MemoryFormatError) as caught:
        memory.load()

    assert caught.value.line == line and caught.value.path == path
    assert "byte 0xe9 at column 5 is not UTF-8" in caught.value.problem
    assert isinstance(caught.value, SessionMemoryError)


def test_a_file_that_cannot_be_read_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.mkdir()  # a folder where the file should be
    with pytest.raises(MemoryPathError, match="cannot be read"):
        SessionMemory(path).load()


def test_a_file_broken_by_hand_is_reported_with_its_path_and_line_and_kept(
    tmp_path: Path,
) -> None:
    path = tmp_path / ".harness" / "MEMORY.md"
    broken = good_file().encode().replace(b"## Learnings\n", b"## Learnings\n\xff\xfe oops\n")
    path.parent.mkdir(parents=True)
    path.write_bytes(broken)
    agent, model, _ = session(tmp_path)

    events = run(agent)

    failed = of_type(events, MemoryNotUpdated)
    line = good_file().splitlines().index("## Learnings") + 2
    assert failed and all(f".harness/MEMORY.md line {line}:" in e.reason for e in failed)
    assert all("fix the file by hand" in e.reason for e in failed)
    assert path.read_bytes() == broken
    assert forks(model) == 0


def test_a_hand_edit_made_while_the_fork_runs_is_not_written_over(tmp_path: Path) -> None:
    path = tmp_path / ".harness" / "MEMORY.md"
    edited = good_file().replace("## Worklog\n", "## Worklog\n- Typed while it ran.\n")

    def edit_then_answer(request: Request) -> Step:
        if EXTRACTION_MARKER in m.text_of(request.last_message) and path.read_text() != edited:
            path.write_text(edited)  # during the first fork only
        return scripted_extraction(request)

    path.parent.mkdir(parents=True)
    path.write_text(good_file())
    agent, _, memory = session(tmp_path, responder=edit_then_answer)
    events = run(agent)

    [failed] = of_type(events, MemoryNotUpdated)
    assert "was changed while the memory was being updated" in failed.reason
    assert memory.extractions[0].ok is False  # the first fork's memory was not written...
    assert memory.extractions[1].ok is True  # ...the next one read the edit, and kept it
    assert "- Typed while it ran." in path.read_text()
    assert any(f.text == "Typed while it ran." for f in parse(path.read_text()))


# A good file with one line a person broke, anywhere in it: the error names that line, and an
# extraction leaves the file byte for byte.
broken_lines = st.sampled_from(
    [
        b"Someone typed a paragraph here.",
        b"## Notes",
        b"- a fact <!-- f7 colour=red -->",
        b"- a fact <!-- at=yesterday -->",
        b"- a fact <!-- f1 -->",  # f1 is already on an earlier line: always after it here
        b"- caf\xe9 in Latin-1",
        b"\xff\xfe\x00",
        b"-",
    ]
)


@settings(max_examples=30, deadline=None)
@given(broken_lines, st.integers(0, 100))
def test_a_line_broken_anywhere_is_named_and_the_file_is_never_written_over(
    bad: bytes, where: int
) -> None:
    lines = good_file().encode().split(b"\n")
    first_fact = next(n for n, x in enumerate(lines) if x.startswith(b"- Fix rounding."))
    low = first_fact + 1 if b"f1" in bad else 0
    at = low + where % (len(lines) - low)
    broken = b"\n".join([*lines[:at], bad, *lines[at:]])
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path = root / ".harness" / "MEMORY.md"
        path.parent.mkdir(parents=True)
        path.write_bytes(broken)

        with pytest.raises(MemoryFormatError) as caught:
            SessionMemory(path).load()
        assert caught.value.line == at + 1 and caught.value.path == path

        agent, model, _ = session(root)
        events = run(agent)
        assert of_type(events, MemoryNotUpdated) and not of_type(events, MemoryUpdated)
        assert path.read_bytes() == broken
        assert forks(model) == 0
