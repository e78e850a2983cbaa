"""A crash in the middle of any write loses nothing that was already on disk or done.

Two kinds of write are checked here, each at every point a crash could cut it:

* **Rewrites.** A compaction, and a resume whose repair changed something before the end,
  write a ``compact_boundary`` and then the whole new conversation under it. The file is cut
  at the start and in the middle of every line of that write and loaded: until the write is
  complete, the conversation is the one from before it, whole (the boundary names its last
  entry, and the loader goes on from before a boundary whose last entry is missing). A
  resume from the cut file then ends with the repaired conversation, and the file agrees.
* **Tool calls.** The file is copied at every point of a turn (before each batch of calls
  runs, inside each tool after its side effect, after each batch, after the results
  message) as a SIGKILL there would leave it, and each copy is resumed: a call whose side
  effect happened is answered with its real result or told it *may have run*, never
  "interrupted"; a call that never started is answered as interrupted.

``tests/test_crash_resume.py`` does the same with real SIGKILLs at random moments.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.events import Compacted
from harness.compaction.summary import compact, is_compaction_request
from harness.loop import INTERRUPTED, MAY_HAVE_RUN, BaseAgent, Plugin, Rewrite, ToolProgress
from harness.model import ScriptedModel, reply, tool_call
from harness.model.scripted_summary import scripted_summary
from harness.resume import resume_with
from harness.tools import ToolContext, tool
from harness.transcript import Transcript, load, repair, seeded_ids

SESSION = "c0a5e000-0000-4000-8000-000000000001"
SETTINGS = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def writer(path: Path, seed: int = 1) -> Transcript:
    return Transcript(
        path=path, session_id=SESSION, clock=FakeClock(), ids=seeded_ids(seed), fsync=False
    )


def lines_from(data: bytes, start: int) -> list[tuple[int, int]]:
    """(start, end) of each line of ``data`` from byte ``start`` on."""
    out = []
    at = start
    while at < len(data):
        end = data.find(b"\n", at)
        end = len(data) if end == -1 else end + 1
        out.append((at, end))
        at = end
    return out


def cut_points(data: bytes, start: int, stop: int) -> Iterator[int]:
    """Every line start in ``[start, stop)`` and the middle of every line there."""
    for begin, end in lines_from(data[:stop], start):
        yield begin
        if end - begin > 2:
            yield (begin + end) // 2


def cut_copy(data: bytes, at: int, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{SESSION}.jsonl"
    path.write_bytes(data[:at])
    return path


def rewrite_span(path: Path) -> tuple[int, int]:
    """Where the file's last boundary starts, and where the last entry it names ends."""
    data = path.read_bytes()
    boundary_at, tail = -1, None
    for begin, end in lines_from(data, 0):
        entry = json.loads(data[begin:end])
        if entry.get("subtype") == "compact_boundary":
            boundary_at, tail = begin, entry["compactMetadata"].get("tailUuid")
    assert boundary_at >= 0 and tail is not None, "the test expected a boundary with a tail"
    for begin, end in lines_from(data, boundary_at):
        if json.loads(data[begin:end]).get("uuid") == tail:
            return boundary_at, end
    raise AssertionError("the boundary's last entry is not in the file")


def results_of(messages: list[m.MessageDict]) -> dict[str, m.Block]:
    return {str(r["tool_use_id"]): r for message in messages for r in m.tool_results(message)}


def uses_of(messages: list[m.MessageDict]) -> list[m.Block]:
    return [u for message in messages for u in m.tool_uses(message)]


def blank_agent(model: ScriptedModel | None = None) -> Agent:
    return Agent(model or ScriptedModel([]), clock=FakeClock())


# -- a resume that rewrites ------------------------------------------------------------------


def conversation_with_a_flaw(rounds: int, flaw: int) -> list[m.MessageDict]:
    """``rounds`` exchanges of a prompt, a tool call, its result and an answer; the answer
    of round ``flaw`` has a blank text block, which repair drops (a change before the end)."""
    out: list[m.MessageDict] = []
    for r in range(rounds):
        use = f"toolu_{r:04d}"
        out.append(m.user(f"prompt {r}"))
        call = {"type": "tool_use", "id": use, "name": "look", "input": {"n": r}}
        out.append({"role": "assistant", "content": [m.text(f"looking {r}"), call]})
        out.append(m.user([m.tool_result(use, f"result {r}")]))
        answer = [m.text(f"answer {r}")]
        if r == flaw:
            answer.append({"type": "text", "text": "  "})
        out.append({"role": "assistant", "content": answer})
    return out


@SETTINGS
@given(rounds=st.integers(1, 10), data=st.data())
def test_a_resume_cut_anywhere_in_its_rewrite_loads_the_whole_conversation_before_it(
    tmp_path_factory: Any, rounds: int, data: st.DataObject
) -> None:
    flaw = data.draw(st.integers(0, rounds - 1))
    root = tmp_path_factory.mktemp("resume")
    path = root / "first" / f"{SESSION}.jsonl"
    first = writer(path)
    first.write_messages(conversation_with_a_flaw(rounds, flaw))
    first.close()
    before = load(path).messages
    repaired = repair(before).messages
    assert repaired != before  # the repair changed something: the resume rewrites

    resumed = resume_with(blank_agent(), writer(path, seed=2))
    resumed.transcript.close()
    assert load(path).messages == repaired
    data_bytes = path.read_bytes()
    start, stop = rewrite_span(path)
    for k, at in enumerate(cut_points(data_bytes, start, stop)):
        cut = cut_copy(data_bytes, at, root / f"cut{k}")
        assert load(cut).messages == before, f"cut at byte {at} of {len(data_bytes)}"
        assert load(cut, fast=True).messages == before
        again = blank_agent()
        resume_with(again, writer(cut, seed=3 + k)).transcript.close()
        assert again.messages == repaired  # a resume from the cut file loses nothing
        assert load(cut).messages == repaired


# -- a compaction ------------------------------------------------------------------------------


def keep_the_last(agent: Agent, rounds: int) -> None:
    """A compaction that keeps the last ``rounds`` exchanges after a summary, as tier 2
    (session memory) does: the rewrite is several entries long."""
    kept = agent.messages[-(2 * rounds - 1) :]  # from an answer on: the summary comes first
    summary = m.user("Summary of the earlier conversation: prompts and replies.")
    event = Compacted("session_memory", "auto", 1_000, 400)
    agent.apply(Rewrite([summary, *copy.deepcopy(kept)], event))


@SETTINGS
@given(rounds=st.integers(2, 8), later=st.integers(0, 3), data=st.data())
def test_a_compaction_cut_anywhere_in_its_rewrite_loads_the_whole_conversation_before_it(
    tmp_path_factory: Any, rounds: int, later: int, data: st.DataObject
) -> None:
    root = tmp_path_factory.mktemp("compact")
    path = root / "live" / f"{SESSION}.jsonl"
    clock = FakeClock()
    model = ScriptedModel([reply(f"reply {i}") for i in range(rounds + later)], clock=clock)
    model.answer_when(is_compaction_request, scripted_summary)
    transcript = writer(path)
    agent = Agent(model, clock=clock, plugins=[transcript])
    for i in range(rounds):
        list(agent.run(f"prompt {i}"))
    before = load(path).messages
    assert before == agent.messages
    keep = data.draw(st.integers(0, rounds - 1), label="rounds kept")
    if keep:
        keep_the_last(agent, keep)
    else:  # tier 3: the summary alone
        compact(agent)
    compacted = copy.deepcopy(agent.messages)
    for i in range(later):  # the session goes on after the compaction
        list(agent.run(f"later prompt {i}"))
    transcript.close()
    assert load(path).messages == agent.messages

    data_bytes = path.read_bytes()
    start, stop = rewrite_span(path)
    for k, at in enumerate(cut_points(data_bytes, start, stop)):
        cut = cut_copy(data_bytes, at, root / f"cut{k}")
        assert load(cut).messages == before, f"cut at byte {at} of {len(data_bytes)}"
    assert load(cut_copy(data_bytes, stop, root / "whole")).messages == compacted


# -- tool calls a crash cut off ------------------------------------------------------------------


class Step(BaseModel):
    n: int


class Snapshots(Plugin):
    """Copies the transcript as a kill at each point of a turn would leave it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.copies: list[tuple[str, bytes, frozenset[str], frozenset[str]]] = []
        self.ledger: list[str] = []
        """The calls whose side effect happened, in order."""
        self.recorded: set[str] = set()
        """The calls whose result the transcript has journaled (it runs before this)."""

    def take(self, where: str) -> None:
        copy = (where, self.path.read_bytes(), frozenset(self.ledger), frozenset(self.recorded))
        self.copies.append(copy)

    def on_tool_progress(self, agent: BaseAgent, progress: ToolProgress) -> None:
        if progress.state == "finished":
            self.recorded.update(progress.tool_use_ids)
        self.take(f"after {progress.state} {','.join(progress.tool_use_ids)}")

    def after_tools(self, agent: BaseAgent, results: list[m.Block]) -> None:
        self.take("after the results message")


def ledger_tool(snapshots: Snapshots, read_only: bool) -> Any:
    @tool(Step, read_only=read_only)
    def step(args: Step, context: ToolContext) -> str:
        """Do one step (it leaves a mark: a side effect)."""
        snapshots.take(f"before the side effect of {context.tool_use_id}")
        snapshots.ledger.append(context.tool_use_id)
        snapshots.take(f"after the side effect of {context.tool_use_id}")
        return f"step {args.n} done"

    return step


@SETTINGS
@given(
    turns=st.lists(st.integers(1, 3), min_size=1, max_size=4),
    read_only=st.booleans(),
)
def test_a_kill_at_any_point_of_a_turn_never_answers_a_call_that_ran_as_interrupted(
    tmp_path_factory: Any, turns: list[int], read_only: bool
) -> None:
    root = tmp_path_factory.mktemp("calls")
    path = root / "live" / f"{SESSION}.jsonl"
    snapshots = Snapshots(path)
    steps = [
        reply(f"turn {t}", tool_calls=[tool_call("step", n=10 * t + k) for k in range(count)])
        for t, count in enumerate(turns)
    ]
    clock = FakeClock()
    agent = Agent(
        ScriptedModel([*steps, reply("done")], clock=clock),
        tools=[ledger_tool(snapshots, read_only)],
        clock=clock,
        plugins=[writer(path), snapshots],
    )
    list(agent.run("Do the steps."))
    real = results_of(agent.messages)

    for k, (where, data_bytes, ran, recorded) in enumerate(snapshots.copies):
        cut = cut_copy(data_bytes, len(data_bytes), root / f"kill{k}")
        on_disk = load(cut).messages
        again = blank_agent()
        resume_with(again, writer(cut, seed=5 + k)).transcript.close()
        assert again.messages[: len(on_disk)] == on_disk, where  # nothing on disk is lost
        answers = results_of(again.messages)
        for use in uses_of(again.messages):
            answer = answers[use["id"]]
            if use["id"] in recorded:  # its result was on disk: it comes back
                assert answer == real[use["id"]], where
            elif use["id"] in ran:  # its side effect happened
                assert answer == real[use["id"]] or answer["content"] == MAY_HAVE_RUN, where
            elif answer != real[use["id"]]:  # it never ran
                assert answer["content"] in (INTERRUPTED, MAY_HAVE_RUN), where


# -- a write that fails (a full disk) --------------------------------------------------------


class FailingOnce(Transcript):
    """A writer whose ``fail_at``-th line fails half-written, as on a full disk."""

    fail_at: int = -1
    lines: int = 0

    def _append(self, entry: dict[str, Any], *, chained: bool | None = None) -> None:
        self.lines += 1
        if self.lines == self.fail_at:
            if self._handle is None:
                super()._append(entry, chained=chained)  # opens the file
                return
            line = json.dumps(entry)
            self._handle.write(line[: len(line) // 2])
            self._handle.flush()
            raise OSError(28, "No space left on device")
        super()._append(entry, chained=chained)


def session_with_a_failing_write(path: Path, turns: int, fail_at: int) -> tuple[Agent, int]:
    """Two runs with a compaction between them, then a third; the ``fail_at``-th line fails.
    Returns the agent and how many lines the first two runs and the compaction wrote."""
    transcript = FailingOnce(
        path=path, session_id=SESSION, clock=FakeClock(), ids=seeded_ids(1), fsync=False
    )
    transcript.fail_at = fail_at
    snapshots = Snapshots(path)
    steps = [reply(f"turn {t}", tool_calls=[tool_call("step", n=t)]) for t in range(turns)]
    clock = FakeClock()
    agent = Agent(
        ScriptedModel([*steps, reply("done"), reply("again"), reply("last")], clock=clock),
        tools=[ledger_tool(snapshots, read_only=False)],
        clock=clock,
        plugins=[transcript],
    )
    list(agent.run("Do the steps."))
    keep_the_last(agent, 1)
    list(agent.run("Once more."))
    lines = transcript.lines
    list(agent.run("One last thing."))  # written after the failure, wherever it was
    transcript.close()
    return agent, lines


@SETTINGS
@given(turns=st.integers(1, 4), data=st.data())
def test_a_write_that_fails_half_way_is_healed_by_the_next_one(
    tmp_path_factory: Any, turns: int, data: st.DataObject
) -> None:
    root = tmp_path_factory.mktemp("full")
    _, lines = session_with_a_failing_write(root / "clean.jsonl", turns, fail_at=-1)
    fail_at = data.draw(st.integers(2, lines), label="the line that fails")
    path = root / f"{SESSION}.jsonl"
    agent, _ = session_with_a_failing_write(path, turns, fail_at)
    assert load(path).messages == agent.messages
