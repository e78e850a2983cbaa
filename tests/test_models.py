"""The model table: the course's default model, each model's window and output, and sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agent import Agent
from harness.loop import AgentConfig
from harness.model import DEFAULT_MODEL, ScriptedModel, default_model, faults
from harness.model import base as model_base
from harness.model.cache.minimums import MINIMUM_CACHEABLE_TOKENS
from harness.model.models import (
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_OUTPUT,
    MODELS,
    MODELS_AS_OF,
    NOT_FOUND,
    UNKNOWN_MODEL_WINDOW,
    context_window_of,
    facts_of,
    max_output_of,
)
from harness.model.scripted import reply
from harness.pricing import PRICES


def test_the_default_model_is_the_current_sonnet_defined_once() -> None:
    assert DEFAULT_MODEL == "claude-sonnet-5-5"
    assert model_base.DEFAULT_MODEL is DEFAULT_MODEL  # re-exported, not redefined
    row = facts_of(DEFAULT_MODEL)
    assert row.status == "current"
    assert (row.context_window, row.max_output) == (1_000_000, 128_000)
    assert DEFAULT_CONTEXT_WINDOW == 1_000_000 and DEFAULT_MAX_OUTPUT == 128_000
    assert MODELS_AS_OF.isoformat() == "2026-11-26"


def test_every_model_the_course_prices_or_caches_has_a_row() -> None:
    known = set(PRICES) | set(MINIMUM_CACHEABLE_TOKENS)
    assert known == set(MODELS)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_number_has_an_address_and_every_gap_says_none_was_found(model: str) -> None:
    facts = facts_of(model)
    assert facts.source
    if facts.context_window is None or facts.max_output is None:
        assert NOT_FOUND in facts.source
    else:
        assert facts.source.startswith("https://")
        assert facts.max_output < facts.context_window


@pytest.mark.parametrize(
    ("model", "window", "status"),
    [
        ("claude-sonnet-4-6", 1_000_000, "legacy"),  # not 200K: the issue this table fixed
        ("claude-sonnet-4-5-20250929", 200_000, "deprecated"),
        ("claude-haiku-4-5-20251001", 200_000, "legacy"),
        ("claude-opus-4-5-20251101", 200_000, "legacy"),
        ("claude-opus-4-8", 1_000_000, "legacy"),
        ("claude-haiku-5-5", 1_000_000, "current"),
        ("claude-sonnet-4-0", UNKNOWN_MODEL_WINDOW, "retired"),
        ("claude-3-5-haiku-latest", UNKNOWN_MODEL_WINDOW, "retired"),
    ],
)
def test_dated_ids_and_aliases_find_their_row(model: str, window: int, status: str) -> None:
    assert context_window_of(model) == window
    assert facts_of(model).status == status


def test_an_unknown_model_gets_the_smallest_window_and_no_facts() -> None:
    assert context_window_of("gpt-9") == UNKNOWN_MODEL_WINDOW
    assert (
        min(r.context_window for r in MODELS.values() if r.context_window is not None)
        == UNKNOWN_MODEL_WINDOW
    )
    assert max_output_of("gpt-9") is None
    with pytest.raises(KeyError, match="claude-sonnet-5-5"):
        facts_of("gpt-9")


def test_offline_the_scripted_model_has_the_default_models_window_and_output() -> None:
    model = default_model(env={})
    assert isinstance(model, ScriptedModel)
    assert model.window_for(DEFAULT_MODEL) == DEFAULT_CONTEXT_WINDOW
    assert model.output_for(DEFAULT_MODEL) == DEFAULT_MAX_OUTPUT
    ok = ScriptedModel([reply("fine")])
    ok.create(model=DEFAULT_MODEL, max_tokens=128_000, messages=[{"role": "user", "content": "x"}])
    with pytest.raises(type(faults.invalid_request("x")), match="128000"):
        ScriptedModel([reply("never")]).create(
            model=DEFAULT_MODEL, max_tokens=128_001, messages=[{"role": "user", "content": "x"}]
        )


def test_an_agent_on_a_model_without_a_window_reads_the_table(tmp_path: Path) -> None:
    class Live:  # what the live model looks like to the agent: no context_window attribute
        def create(self, **kwargs: object) -> object:
            raise AssertionError("not called")

        def count_tokens(self, **kwargs: object) -> int:
            return 0

    agent = Agent(Live(), workspace=tmp_path)  # type: ignore[arg-type]
    assert agent.context_window == DEFAULT_CONTEXT_WINDOW
    haiku = Agent(Live(), workspace=tmp_path, config=AgentConfig(model="claude-haiku-4-5"))  # type: ignore[arg-type]
    assert haiku.context_window == 200_000


def test_offline_each_request_is_held_to_its_own_models_window_as_on_the_api() -> None:
    # 300K tokens of prompt: inside Sonnet 5.5's 1M window, over Haiku 4.5's 200K.
    big = [{"role": "user", "content": "word " * 300_000}]
    model = ScriptedModel([reply("read it"), reply("never")])
    model.create(model=DEFAULT_MODEL, max_tokens=100, messages=big)
    with pytest.raises(type(faults.prompt_too_long(1, 1)), match="200000"):
        model.create(model="claude-haiku-4-5", max_tokens=100, messages=big)
    with pytest.raises(type(faults.invalid_request("x")), match="64000"):
        model.create(
            model="claude-haiku-4-5", max_tokens=64_001, messages=[big[0] | {"content": "x"}]
        )


def test_a_window_given_to_the_scripted_model_holds_for_every_model() -> None:
    model = ScriptedModel([reply("never")], context_window=1_000)
    assert model.window_for("claude-sonnet-5-5") == model.window_for("claude-haiku-4-5") == 1_000
