"""Token estimates, the API counter hook, and Claude Code's auto-compact arithmetic."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from harness import tokens
from harness.messages import assistant, text, tool_result, tool_use, user
from harness.tokens import ContextBudget

ascii_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=400)
non_ascii_text = st.text(alphabet=st.characters(min_codepoint=128), max_size=200)

READ_FILE = {
    "name": "read_file",
    "description": "Read a file from the workspace.",
    "input_schema": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
}
RUN_SHELL = {
    "name": "run_shell",
    "description": "Run a shell command in the workspace and return its output.",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
}


# --- estimate_text ----------------------------------------------------------------------


def test_empty_text_is_zero_tokens() -> None:
    assert tokens.estimate_text("") == 0


@pytest.mark.parametrize(
    ("sample", "expected"),
    [("a", 1), ("abcd", 1), ("abcde", 2), ("abcdefgh", 2), ("abcdefghi", 3)],
)
def test_ascii_text_is_four_characters_a_token_rounded_up(sample: str, expected: int) -> None:
    assert tokens.estimate_text(sample) == expected


def test_each_non_ascii_character_is_one_token() -> None:
    assert tokens.estimate_text("日本語") == 3
    assert tokens.estimate_text("é") == 1
    assert tokens.estimate_text("🙂🙂") == 2


def test_mixed_text_adds_the_ascii_and_non_ascii_parts() -> None:
    # 5 ASCII characters -> ceil(5/4) = 2 tokens, plus 2 Chinese characters -> 2 tokens.
    assert tokens.estimate_text("hello你好") == 4


@given(ascii_text)
def test_ascii_estimate_is_length_over_four_rounded_up(sample: str) -> None:
    assert tokens.estimate_text(sample) == math.ceil(len(sample) / 4)


@given(non_ascii_text)
def test_non_ascii_estimate_is_one_token_per_character(sample: str) -> None:
    assert tokens.estimate_text(sample) == len(sample)


@given(st.text(max_size=300), st.text(max_size=300))
def test_appending_text_never_lowers_the_estimate(head: str, tail: str) -> None:
    assert tokens.estimate_text(head + tail) >= tokens.estimate_text(head)


def test_estimate_is_the_same_in_another_process_with_another_hash_seed() -> None:
    # Stored notebook outputs show token counts: they must not depend on dict or set order.
    request = {
        "messages": [
            user("Résumé of 日本語 work"),
            assistant([tool_use("toolu_1", "edit", {"b": [1, 2], "a": {"z": 1, "y": "é"}})]),
            user([tool_result("toolu_1", "done")]),
        ],
        "system": "Be brief.",
        "tools": [READ_FILE, RUN_SHELL],
    }
    # Load tokens.py on its own: importing the whole package (and the SDK) takes seconds.
    code = (
        "import importlib.util, json, sys; "
        f"spec = importlib.util.spec_from_file_location('tokens', {tokens.__file__!r}); "
        "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod); "
        "r = json.loads(sys.stdin.read()); "
        "print(mod.estimate_request(r['messages'], system=r['system'], tools=r['tools']))"
    )
    counts = set()
    for seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
        )
        counts.add(int(done.stdout))
    here = tokens.estimate_request(
        request["messages"], system="Be brief.", tools=[READ_FILE, RUN_SHELL]
    )
    assert counts == {here}


def test_block_estimate_does_not_depend_on_key_order() -> None:
    one = tool_use("toolu_1", "edit", {"path": "a.py", "old": "x", "new": "y"})
    other = tool_use("toolu_1", "edit", {"new": "y", "old": "x", "path": "a.py"})
    assert tokens.estimate_block(one) == tokens.estimate_block(other)


# --- blocks, messages, system, tools --------------------------------------------------------


def test_text_block_costs_its_text_plus_block_overhead() -> None:
    assert tokens.estimate_block(text("abcdefgh")) == tokens.BLOCK_OVERHEAD + 2


def test_tool_use_estimate_grows_with_its_input() -> None:
    small = tool_use("toolu_1", "write_file", {"path": "a.py", "content": "x"})
    large = tool_use("toolu_1", "write_file", {"path": "a.py", "content": "x" * 4000})
    assert tokens.estimate_block(large) - tokens.estimate_block(small) == pytest.approx(1000, abs=1)


def test_tool_use_estimate_grows_with_its_name() -> None:
    short = tool_use("toolu_1", "ls", {})
    long = tool_use("toolu_1", "list_directory_recursively", {})
    assert tokens.estimate_block(long) > tokens.estimate_block(short)


def test_tool_result_estimate_grows_with_its_content() -> None:
    small = tool_result("toolu_1", "ok")
    large = tool_result("toolu_1", "line\n" * 800)
    assert tokens.estimate_block(large) - tokens.estimate_block(small) == 1000 - 1


def test_tool_result_with_block_content_counts_the_blocks() -> None:
    as_blocks = tool_result("toolu_1", [text("abcdefgh")])
    assert tokens.estimate_block(as_blocks) == 2 * tokens.BLOCK_OVERHEAD + 2


def test_image_block_is_a_fixed_screenshot_sized_estimate() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}
    assert tokens.estimate_block(image) == tokens.BLOCK_OVERHEAD + 1_600


def test_message_costs_its_content_plus_message_overhead() -> None:
    message = user([text("abcd"), text("efgh")])
    expected = tokens.MESSAGE_OVERHEAD + 2 * (tokens.BLOCK_OVERHEAD + 1)
    assert tokens.estimate_message(message) == expected


def test_string_content_counts_the_same_as_one_text_block() -> None:
    # The API treats "content": "abcd" as [{"type": "text", "text": "abcd"}].
    assert tokens.estimate_message(user("abcd")) == tokens.estimate_message(user([text("abcd")]))


def test_string_system_prompt_counts_the_same_as_one_text_block() -> None:
    assert tokens.estimate_system("Be brief.") == tokens.estimate_system([text("Be brief.")])


def test_no_system_prompt_costs_nothing() -> None:
    assert tokens.estimate_system(None) == 0


def test_system_estimate_grows_with_its_text() -> None:
    assert tokens.estimate_system("x" * 400) - tokens.estimate_system("x" * 40) == 90


def test_system_as_blocks_counts_each_block() -> None:
    system = [text("a" * 40), text("b" * 40)]
    assert tokens.estimate_system(system) == 2 * (tokens.BLOCK_OVERHEAD + 10)


def test_no_tools_cost_nothing() -> None:
    assert tokens.estimate_tools(None) == 0
    assert tokens.estimate_tools([]) == 0


def test_one_tool_costs_the_tool_use_system_prompt_plus_its_definition() -> None:
    definition = (
        tokens.TOOL_DEFINITION_OVERHEAD
        + tokens.estimate_text(str(READ_FILE["name"]))
        + tokens.estimate_text(str(READ_FILE["description"]))
        + tokens.estimate_text(tokens._json(READ_FILE["input_schema"]))
    )
    assert tokens.estimate_tools([READ_FILE]) == 346 + definition


def test_the_tool_use_system_prompt_is_added_exactly_once() -> None:
    both = tokens.estimate_tools([READ_FILE, RUN_SHELL])
    each = tokens.estimate_tools([READ_FILE]) + tokens.estimate_tools([RUN_SHELL])
    assert each - both == tokens.TOOL_USE_SYSTEM_PROMPT == 346


def test_tool_estimate_grows_with_its_description() -> None:
    longer = {**READ_FILE, "description": READ_FILE["description"] + " " + "detail " * 50}
    assert tokens.estimate_tools([longer]) > tokens.estimate_tools([READ_FILE])


def test_request_estimate_is_the_sum_of_tools_system_and_messages() -> None:
    messages = [
        user("Read a.py please"),
        assistant([text("Reading it."), tool_use("toolu_1", "read_file", {"path": "a.py"})]),
        user([tool_result("toolu_1", "print('hi')")]),
    ]
    system = "You are a careful coding agent."
    expected = (
        tokens.estimate_tools([READ_FILE])
        + tokens.estimate_system(system)
        + sum(tokens.estimate_message(m) for m in messages)
    )
    assert tokens.estimate_request(messages, system=system, tools=[READ_FILE]) == expected


def test_request_estimate_without_system_or_tools_is_just_the_messages() -> None:
    messages = [user("hello there")]
    assert tokens.estimate_request(messages) == tokens.estimate_message(messages[0])


# --- count_tokens -----------------------------------------------------------------------


class FakeCounter:
    """Counts every request as 1234 tokens and remembers what it was asked."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def count_tokens(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        self.calls.append({"model": model, "messages": messages, "system": system, "tools": tools})
        return 1234


def test_count_tokens_without_a_counter_is_the_offline_estimate() -> None:
    messages = [user("What is in this repository?")]
    expected = tokens.estimate_request(messages, system="Be brief.", tools=[READ_FILE])
    assert tokens.count_tokens(messages, system="Be brief.", tools=[READ_FILE]) == expected


def test_count_tokens_with_a_counter_asks_the_counter() -> None:
    counter = FakeCounter()
    messages = [user("hi")]
    counted = tokens.count_tokens(
        messages, system="sys", tools=[READ_FILE], counter=counter, model="claude-sonnet-4-5"
    )
    assert counted == 1234
    assert counter.calls == [
        {"model": "claude-sonnet-4-5", "messages": messages, "system": "sys", "tools": [READ_FILE]}
    ]


# --- ContextBudget ----------------------------------------------------------------------


def test_budget_with_32k_output_reserves_only_20k_for_the_reply() -> None:
    budget = ContextBudget(window=200_000, max_output=32_000)
    # The output reserve is capped at 20K: 200K - 20K.
    assert budget.effective_window == 180_000


def test_budget_with_32k_output_compacts_at_167k() -> None:
    # Claude Code's observed threshold: 180K effective window - 13K buffer.
    assert ContextBudget(window=200_000, max_output=32_000).auto_compact_threshold == 167_000


def test_budget_with_8k_output_reserves_8k_for_the_reply() -> None:
    assert ContextBudget(window=200_000, max_output=8_000).effective_window == 192_000


def test_budget_with_8k_output_compacts_at_179k() -> None:
    assert ContextBudget(window=200_000, max_output=8_000).auto_compact_threshold == 179_000


def test_default_budget_is_a_200k_window_with_32k_output() -> None:
    assert ContextBudget() == ContextBudget(window=200_000, max_output=32_000)


def test_should_compact_exactly_at_the_threshold() -> None:
    budget = ContextBudget()
    assert budget.should_compact(budget.auto_compact_threshold)


def test_should_compact_over_the_threshold() -> None:
    budget = ContextBudget()
    assert budget.should_compact(budget.auto_compact_threshold + 1)


def test_should_not_compact_one_token_below_the_threshold() -> None:
    budget = ContextBudget()
    assert not budget.should_compact(budget.auto_compact_threshold - 1)


def test_remaining_before_compact_counts_down_to_the_threshold() -> None:
    budget = ContextBudget()
    assert budget.remaining_before_compact(160_000) == 7_000
    assert budget.remaining_before_compact(170_000) == -3_000


def test_used_is_the_share_of_the_effective_window() -> None:
    assert ContextBudget().used(90_000) == 0.5


def test_a_larger_buffer_compacts_earlier() -> None:
    assert ContextBudget(buffer=30_000).auto_compact_threshold == 150_000


def test_budget_refuses_a_zero_window() -> None:
    with pytest.raises(ValidationError):
        ContextBudget(window=0)


def test_budget_is_immutable() -> None:
    budget = ContextBudget()
    with pytest.raises(ValidationError):
        budget.window = 1_000_000  # type: ignore[misc]


def test_budget_serialises_its_derived_numbers() -> None:
    dumped = ContextBudget().model_dump()
    assert dumped["effective_window"] == 180_000
    assert dumped["auto_compact_threshold"] == 167_000


@given(
    window=st.integers(min_value=50_000, max_value=2_000_000),
    max_output=st.integers(min_value=1, max_value=128_000),
)
def test_threshold_is_window_minus_capped_reserve_minus_13k(window: int, max_output: int) -> None:
    budget = ContextBudget(window=window, max_output=max_output)
    assert budget.auto_compact_threshold == window - min(max_output, 20_000) - 13_000


def test_count_tokens_with_a_counter_needs_the_model_id() -> None:
    class Counter:
        def count_tokens(self, **kwargs: object) -> int:
            return 1

    with pytest.raises(ValueError, match="model id"):
        tokens.count_tokens([{"role": "user", "content": "hi"}], counter=Counter())  # type: ignore[arg-type]
