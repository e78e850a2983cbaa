"""The cost meter: every model call of a run, billed from its usage, and what caching saves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Usage
from pydantic import BaseModel

from harness.agent import Agent
from harness.clock import FakeClock
from harness.loop import AgentConfig
from harness.model import ScriptedModel, reply, tool_call
from harness.pricing import Cost, CostMeter, cost_of
from harness.prompt import (
    PromptCaching,
    Section,
    SystemPrompt,
    default_sections,
    environment_section,
)
from harness.tools import ToolContext, tool


class EchoInput(BaseModel):
    text: str


@tool(EchoInput, read_only=True)
def echo(args: EchoInput, context: ToolContext) -> str:
    """Say the text back."""
    return args.text


def session_script(turns: int) -> list[Any]:
    """``turns`` model calls: a tool call each, then a final answer."""
    calls = [
        reply(f"Step {i}.", tool_calls=[tool_call("echo", text=f"result {i} " * 40)])
        for i in range(turns - 1)
    ]
    return [*calls, reply("All done.")]


def big_system_prompt() -> SystemPrompt:
    """Static sections well over the 1,024-token minimum, then a dynamic one."""
    manual = Section("manual", "Project manual. " + "Follow the house style closely. " * 200)
    return SystemPrompt(
        (
            *default_sections(["echo"]),
            manual,
            environment_section(FakeClock(), workspace_name="demo"),
        )
    )


def run_session(tmp_path: Path, *, cached: bool, turns: int = 10, **kwargs: Any) -> Agent:
    model = ScriptedModel(session_script(turns))
    agent = Agent(
        model,
        tools=[echo],
        system=big_system_prompt().render(cache=cached),
        workspace=tmp_path,
        clock=FakeClock(),
        plugins=[PromptCaching()] if cached else [],
        **kwargs,
    )
    list(agent.run("echo ten things"))
    return agent


def test_the_meter_records_every_model_call(tmp_path: Path) -> None:
    agent = run_session(tmp_path, cached=True, turns=4)
    assert isinstance(agent.model, ScriptedModel)
    assert len(agent.meter.calls) == len(agent.model.requests) == 4
    assert all(c.model == agent.config.model for c in agent.meter.calls)


def test_the_total_is_the_sum_of_each_calls_cost(tmp_path: Path) -> None:
    agent = run_session(tmp_path, cached=True, turns=4)
    costs = [cost_of(c.usage, c.model) for c in agent.meter.calls]
    assert [c.cost for c in agent.meter.calls] == costs
    total = agent.meter.total
    assert total.total == pytest.approx(sum(c.total for c in costs))
    assert total.cache_read == pytest.approx(sum(c.cache_read for c in costs))
    assert total.cache_write == pytest.approx(sum(c.cache_write for c in costs))
    assert agent.meter.unpriced == 0


def test_prompt_tokens_count_input_writes_and_reads(tmp_path: Path) -> None:
    agent = run_session(tmp_path, cached=True, turns=4)
    usages = [c.usage for c in agent.meter.calls]
    expected = sum(
        u.input_tokens + (u.cache_creation_input_tokens or 0) + (u.cache_read_input_tokens or 0)
        for u in usages
    )
    assert agent.meter.prompt_tokens == expected
    assert isinstance(agent.model, ScriptedModel)
    assert expected == sum(r.input_tokens for r in agent.model.requests)


def test_cache_read_share_is_reads_over_all_prompt_tokens(tmp_path: Path) -> None:
    agent = run_session(tmp_path, cached=True, turns=4)
    reads = sum(c.usage.cache_read_input_tokens or 0 for c in agent.meter.calls)
    assert agent.meter.cache_read_tokens == reads
    assert agent.meter.cache_read_share == pytest.approx(reads / agent.meter.prompt_tokens)
    assert 0 < agent.meter.cache_read_share < 1


def test_an_empty_meter_has_nothing_to_share() -> None:
    meter = CostMeter()
    assert meter.cache_read_share == 0.0
    assert meter.total == Cost()
    assert meter.unpriced == 0


def test_an_unknown_model_is_recorded_unpriced_and_the_run_goes_on(tmp_path: Path) -> None:
    model = ScriptedModel(session_script(3))
    agent = Agent(
        model,
        tools=[echo],
        workspace=tmp_path,
        clock=FakeClock(),
        config=AgentConfig(model="claude-unknown-9"),
    )
    events = list(agent.run("go"))
    assert events  # the run finished
    assert len(agent.meter.calls) == 3
    assert all(c.cost is None for c in agent.meter.calls)
    assert agent.meter.unpriced == 3
    assert agent.meter.total == Cost()
    assert agent.meter.prompt_tokens == sum(r.input_tokens for r in model.requests)


def test_priced_and_unpriced_calls_are_kept_apart() -> None:
    meter = CostMeter()
    usage = Usage(input_tokens=1_000_000, output_tokens=0)
    meter.record("claude-sonnet-4-5", usage)
    meter.record("claude-unknown-9", usage)
    assert meter.unpriced == 1
    assert meter.total.total == pytest.approx(3.00)
    assert meter.prompt_tokens == 2_000_000


def test_a_cached_run_costs_less_than_the_same_run_without_breakpoints(tmp_path: Path) -> None:
    cached = run_session(tmp_path, cached=True)
    plain = run_session(tmp_path, cached=False)
    assert len(cached.meter.calls) == len(plain.meter.calls) == 10
    # Same conversation, same prompt sizes: only the billing differs.
    assert cached.meter.prompt_tokens == plain.meter.prompt_tokens
    assert plain.meter.cache_read_tokens == 0
    assert cached.meter.cache_read_share > 0.7
    assert cached.meter.total.total < plain.meter.total.total
    assert cached.meter.total.output == pytest.approx(plain.meter.total.output)


def test_the_first_cached_call_costs_more_than_an_uncached_one(tmp_path: Path) -> None:
    # Writes cost 1.25x: caching pays for itself only from the second request on.
    cached = run_session(tmp_path, cached=True)
    plain = run_session(tmp_path, cached=False)
    first_cached, first_plain = cached.meter.calls[0].cost, plain.meter.calls[0].cost
    assert first_cached is not None and first_plain is not None
    assert first_cached.total > first_plain.total
