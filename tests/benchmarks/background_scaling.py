"""How chapter 15's background reads and traces grow with their input (prints figures).

Run: ``uv run python tests/benchmarks/background_scaling.py``. Each figure is the best of
three runs, on this machine, at that moment: compare the rows with each other, not with
another machine. What is measured, each at 1x, 10x and 100x:

* one ``read_new`` of a log whose new output is 160 KB, 1.6 MB and 16 MB (the log's cap):
  it should grow ten times a row (it decodes every new byte once, and keeps the last 32,000
  characters);
* one ``read_new`` of the last 4 KB written to a log of 160 KB, 1.6 MB and 16 MB (the
  median of 21 such reads): it should not grow at all (a read starts where the last one
  stopped, never at the top of the file);
* the tracing plugin's own time per span, in sessions of 10, 100 and 1,000 turns (a model
  call and a tool call each): it should not grow (the plugin keeps no list that grows
  with the session).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import Agent, FakeClock, ScriptedModel, reply, tool_call
from harness.background import BackgroundShells, Scripted, ScriptedCommand, counted_ids
from harness.background.shells import LOG_CAP_BYTES
from harness.loop import BaseAgent, ModelRequest, ToolProgress
from harness.tools.builtins import builtin_tools
from harness.tracing import Tracing, in_memory

LINE = "test_module.py::test_case PASSED                                        [ 42%]\n"
SIZES = [LOG_CAP_BYTES // 100, LOG_CAP_BYTES // 10, LOG_CAP_BYTES]
TURNS = [10, 100, 1_000]


def best_of(work: Callable[[], float], runs: int = 3) -> float:
    return min(work() for _ in range(runs))


def shells_with_log(size: int) -> tuple[BackgroundShells, str, Path]:
    """A manager with one shell, and that shell's log filled to ``size`` bytes by hand."""
    folder = Path(tempfile.mkdtemp())
    spawner = Scripted({"pytest": ScriptedCommand(seconds=3600)})
    shells = BackgroundShells(
        folder / "logs", clock=FakeClock(), spawner=spawner, ids=counted_ids()
    )
    info = shells.start("pytest", cwd=folder, workspace=folder)
    with info.log.open("ab") as file:
        file.write((LINE * (size // len(LINE) + 1)).encode()[:size])
    return shells, info.task_id, info.log


def one_read(size: int) -> float:
    shells, task_id, _ = shells_with_log(size)
    start = time.perf_counter()
    shells.read_new(task_id)
    took = time.perf_counter() - start
    shells.close()
    return took


def tail_read(size: int, rounds: int = 21) -> float:
    """The median of ``rounds`` reads of 4 KB each, at the end of a log of ``size`` bytes."""
    shells, task_id, log = shells_with_log(size - 4096 * rounds)
    shells.read_new(task_id)  # the model has read everything so far
    times = []
    for _ in range(rounds):
        with log.open("ab") as file:
            file.write((LINE * 80).encode()[:4096])
        start = time.perf_counter()
        shells.read_new(task_id)
        times.append(time.perf_counter() - start)
    shells.close()
    return sorted(times)[rounds // 2]


class Forgetful(ScriptedModel):
    """The scripted model without its copy of every request (a deep copy each: at 1,000
    turns, two million message dicts, whose weight would slow everything measured here)."""

    def create(self, **request: Any) -> Any:
        out = super().create(**request)
        self.requests.clear()
        return out


class TimedTracing(Tracing):
    """Tracing that adds up the time spent in its own code (not in the calls it wraps)."""

    spent = 0.0

    def call_model(self, agent: BaseAgent, request: ModelRequest, call: Any) -> Any:
        inner = 0.0

        def timed(r: ModelRequest) -> Any:
            nonlocal inner
            start = time.perf_counter()
            try:
                return call(r)
            finally:
                inner += time.perf_counter() - start

        start = time.perf_counter()
        out = super().call_model(agent, request, timed)
        self.spent += time.perf_counter() - start - inner
        return out

    def on_tool_progress(self, agent: BaseAgent, progress: ToolProgress) -> None:
        start = time.perf_counter()
        super().on_tool_progress(agent, progress)
        self.spent += time.perf_counter() - start

    def after_tools(self, agent: BaseAgent, results: list[Any]) -> None:
        start = time.perf_counter()
        super().after_tools(agent, results)
        self.spent += time.perf_counter() - start

    def _see(self, agent: BaseAgent, event: Any) -> None:
        start = time.perf_counter()
        super()._see(agent, event)
        self.spent += time.perf_counter() - start


def per_span(turns: int) -> tuple[float, int]:
    folder = Path(tempfile.mkdtemp())
    (folder / "a.txt").write_text("hello\n")
    clock = FakeClock()
    steps = [reply(tool_calls=[tool_call("read_file", path="a.txt")]) for _ in range(turns)]
    model = Forgetful([*steps, reply("done")], clock=clock)
    agent = Agent(model, tools=builtin_tools(), workspace=folder, clock=clock)
    agent.config.max_turns = turns + 5
    provider, exporter = in_memory()
    tracing = TimedTracing(provider, capture_content=False)
    tracing.attach(agent)
    list(tracing.run(agent, "Read a.txt again and again."))
    spans = len(exporter.get_finished_spans())
    return tracing.spent / spans, spans


def main() -> None:
    print("read_new: one read of all the new output (kept: the last 32,000 characters)")
    previous = None
    for size in SIZES:
        seconds = best_of(lambda size=size: one_read(size))  # type: ignore[misc]
        growth = f"{seconds / previous:5.1f}x" if previous else "     -"
        print(f"  {size:>12,} bytes new   {seconds * 1000:9.2f} ms  {growth}")
        previous = seconds
    print("read_new: the last 4 KB of a log of this size (the rest read before)")
    previous = None
    for size in SIZES:
        seconds = best_of(lambda size=size: tail_read(size))  # type: ignore[misc]
        growth = f"{seconds / previous:5.1f}x" if previous else "     -"
        print(f"  {size:>12,} bytes log   {seconds * 1e6:9.1f} µs  {growth}")
        previous = seconds
    print("tracing: the plugin's own time per span (a run of N turns, a read each)")
    previous = None
    for turns in TURNS:
        results = [per_span(turns) for _ in range(3)]
        seconds, spans = min(results)
        growth = f"{seconds / previous:5.1f}x" if previous else "     -"
        print(f"  {turns:>6,} turns {spans:>6,} spans   {seconds * 1e6:7.1f} µs/span  {growth}")
        previous = seconds


if __name__ == "__main__":
    main()
