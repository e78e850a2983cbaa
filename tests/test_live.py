"""Against the real API: skipped (with the reason) unless ANTHROPIC_API_KEY is set.

ANTHROPIC_API_KEY=sk-ant-... uv run pytest tests/test_live.py -m live
"""

from __future__ import annotations

import anthropic
import pytest
from anthropic.types import Message

from harness import tokens
from harness.messages import user, validate
from harness.model import AnthropicModel, model_name

pytestmark = pytest.mark.live


@pytest.fixture
def live_model(api_key: str) -> AnthropicModel:
    # The rig keeps the key out of os.environ, so hand it to the client explicitly.
    return AnthropicModel(anthropic.Anthropic(api_key=api_key, max_retries=0))


def test_a_real_create_call_returns_a_message_with_usage(live_model: AnthropicModel) -> None:
    messages = [user("Reply with the single word: ready")]
    message = live_model.create(model=model_name(), max_tokens=32, messages=messages)
    assert isinstance(message, Message)
    assert message.role == "assistant"
    assert message.stop_reason in ("end_turn", "max_tokens")
    assert message.usage.input_tokens > 0
    assert message.usage.output_tokens > 0


def test_a_real_count_tokens_call_counts_the_prompt(live_model: AnthropicModel) -> None:
    messages = [user("How many tokens is this sentence, roughly?")]
    assert validate(messages) == []
    counted = live_model.count_tokens(model=model_name(), messages=messages)
    estimate = tokens.estimate_request(messages)
    assert counted > 0
    # The offline estimate is meant to be in the right ballpark, not exact.
    assert estimate / 3 <= counted <= estimate * 3
