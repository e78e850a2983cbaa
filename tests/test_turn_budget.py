"""One turn's tool results share a budget (chapter 06): past it the largest are stored.

Five parallel reads that each fit on their own can together overflow a small window; the
tool runner holds one turn's results to ``turn_budget(window)`` tokens by storing the largest
(the model gets a preview and an ``@tool-results/`` path to read the rest).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from harness import Agent, AgentConfig, FakeClock, tokens
from harness import messages as m
from harness.events import Event, TurnEnded
from harness.model import ScriptedModel, reply, tool_call
from harness.model.scripted import Reply, Request
from harness.tools import ToolContext, ToolError, builtin_tools, tool
from harness.tools.builtins import read_file
from harness.tools.dispatch import TURN_RESULTS_TOKENS, turn_budget
from harness.tools.storage import STORED_PREFIX

WINDOW = 40_000  # a small window: the turn's budget is a quarter of it, 10K tokens
LINE = "the quick brown fox jumps over the lazy dog again and again"
SIZES = {"a.txt": 360, "b.txt": 300, "c.txt": 180, "d.txt": 90, "e.txt": 30}  # lines


def write_files(root: Path, sizes: dict[str, int]) -> None:
    for name, lines in sizes.items():
        (root / name).write_text("".join(f"{name} {i}: {LINE}\n" for i in range(lines)))


def agent_for(root: Path, script: list[Any], *, window: int = WINDOW, tools: Any = None) -> Agent:
    model = ScriptedModel(script, context_window=window)
    return Agent(
        model,
        tools=builtin_tools() if tools is None else tools,
        workspace=root,
        clock=FakeClock(),
        config=AgentConfig(model="claude-sonnet-4-6"),
    )


def read_all(names: list[str]) -> Any:
    return reply(tool_calls=[tool_call("read_file", path=name) for name in names])


def results_of(agent: Agent) -> list[m.Block]:
    return [b for msg in agent.messages for b in m.tool_results(msg)]


def content(block: m.Block) -> str:
    value = block["content"]
    assert isinstance(value, str)
    return value


def run(agent: Agent, prompt: str = "Read them all.") -> list[Event]:
    return list(agent.run(prompt))


def test_five_parallel_reads_stay_within_the_turn_budget(tmp_path: Path) -> None:
    write_files(tmp_path, SIZES)
    agent = agent_for(tmp_path, [read_all(list(SIZES)), reply("Read.")])
    events = run(agent)
    assert isinstance(events[-1], TurnEnded)  # the next request fit the window
    results = results_of(agent)
    assert len(results) == 5
    assert sum(tokens.estimate_text(content(r)) for r in results) <= turn_budget(WINDOW)


def test_the_largest_results_are_stored_and_the_rest_kept_whole(tmp_path: Path) -> None:
    write_files(tmp_path, SIZES)
    agent = agent_for(tmp_path, [read_all(list(SIZES)), reply("Read.")])
    run(agent)
    stored = [STORED_PREFIX in content(r) for r in results_of(agent)]
    # Without storing, the five come to ~16K tokens: the two largest go, and that is enough.
    assert stored == [True, True, False, False, False]
    for result, name in zip(results_of(agent)[2:], list(SIZES)[2:], strict=True):
        assert f"{name} {SIZES[name] - 1}: {LINE}" in content(result)


def test_a_stored_result_shows_a_preview_and_its_path(tmp_path: Path) -> None:
    write_files(tmp_path, SIZES)
    agent = agent_for(tmp_path, [read_all(list(SIZES)), reply("Read.")])
    run(agent)
    first = content(results_of(agent)[0])
    assert first.startswith("<persisted-output>")
    assert re.search(r"@tool-results/\S+\.txt", first)
    assert f"a.txt 0: {LINE}" in first  # the preview starts at the start
    assert f"a.txt {SIZES['a.txt'] - 1}: {LINE}" not in first  # and is only a preview


def test_the_full_text_of_a_stored_result_is_readable_back(tmp_path: Path) -> None:
    write_files(tmp_path, SIZES)

    def read_back(request: Request) -> Reply:
        # The model reads the stored result by the path the preview gives, a window at a time.
        results = [b for b in m.tool_results(request.last_message)]
        found = re.search(r"@tool-results/\S+\.txt", content(results[0]))
        assert found is not None
        return reply(tool_calls=[tool_call("read_file", path=found.group(), offset=356, limit=10)])

    agent = agent_for(tmp_path, [read_all(list(SIZES)), read_back, reply("Read.")])
    run(agent)
    first = results_of(agent)[0]
    full = agent.tools.storage.read(str(first["tool_use_id"]))
    assert full.count("\n") >= SIZES["a.txt"] - 1
    assert f"a.txt 0: {LINE}" in full and f"a.txt {SIZES['a.txt'] - 1}: {LINE}" in full
    last = content(results_of(agent)[-1])
    assert (
        f"a.txt {SIZES['a.txt'] - 1}: {LINE}" in last and "a.txt 300:" not in last
    )  # a window of it


def test_the_five_reads_on_a_small_window_no_longer_overflow_the_next_request(
    tmp_path: Path,
) -> None:
    # The case: five reads of ~6K tokens each, 30K together, on a 20K window.
    write_files(tmp_path, {f"f{i}.txt": 360 for i in range(5)})
    agent = agent_for(
        tmp_path, [read_all([f"f{i}.txt" for i in range(5)]), reply("Read.")], window=20_000
    )
    events = run(agent)  # no BadRequestError escapes
    assert isinstance(events[-1], TurnEnded)
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert model.requests[-1].input_tokens <= 20_000


def test_a_single_small_result_is_never_stored_because_of_the_budget(tmp_path: Path) -> None:
    write_files(tmp_path, {"small.txt": 30})
    agent = agent_for(tmp_path, [read_all(["small.txt"]), reply("Read.")])
    run(agent)
    (result,) = results_of(agent)
    assert STORED_PREFIX not in content(result)
    assert f"small.txt 29: {LINE}" in content(result)


def test_a_short_result_is_kept_when_its_preview_would_be_longer(tmp_path: Path) -> None:
    # A 1,600-token window gives a 400-token budget; the ~440-token result is over it, but a
    # preview of it would be longer than the result itself, so the result stays as it is.
    write_files(tmp_path, {"small.txt": 22})
    script = [read_all(["small.txt"]), reply("Read.")]
    agent = agent_for(tmp_path, script, window=1_600, tools=[read_file])
    assert agent.tools.turn_budget == 400
    run(agent)
    (result,) = results_of(agent)
    assert tokens.estimate_text(content(result)) > 400
    assert STORED_PREFIX not in content(result)
    assert f"small.txt 21: {LINE}" in content(result)


class FailInput(BaseModel):
    size: int


@tool(FailInput, read_only=True)
def fail_loudly(args: FailInput, context: ToolContext) -> str:
    """Fail with a long message."""
    raise ToolError("E" * args.size)


def test_error_results_are_never_stored(tmp_path: Path) -> None:
    calls = [tool_call("fail_loudly", size=20_000) for _ in range(3)]  # ~5K tokens each
    agent = agent_for(tmp_path, [reply(tool_calls=calls), reply("Oh.")], tools=[fail_loudly])
    run(agent)
    results = results_of(agent)
    assert [r.get("is_error") for r in results] == [True] * 3
    assert not any(STORED_PREFIX in content(r) for r in results)
    assert sum(tokens.estimate_text(content(r)) for r in results) > turn_budget(WINDOW)


def test_a_200k_window_gives_a_50k_budget(tmp_path: Path) -> None:
    assert turn_budget(200_000) == 50_000 == TURN_RESULTS_TOKENS
    assert turn_budget(1_000_000) == 50_000  # never more than Claude Code's per-message limit
    assert turn_budget(40_000) == 10_000
    assert agent_for(tmp_path, [], window=200_000).tools.turn_budget == 50_000


def test_the_agent_takes_the_budget_from_its_configured_window(tmp_path: Path) -> None:
    agent = Agent(
        ScriptedModel([], context_window=200_000),
        workspace=tmp_path,
        clock=FakeClock(),
        config=AgentConfig(model="claude-sonnet-4-6", context_window=60_000),
    )
    assert agent.context_window == 60_000
    assert agent.tools.turn_budget == 15_000
