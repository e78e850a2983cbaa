"""The model boundary: the one protocol everything above it talks to.

A :class:`Model`'s ``create`` mirrors ``anthropic.Anthropic().messages.create`` and returns an
``anthropic.types.Message``. Two implementations follow it: the live
:class:`~harness.model.live.AnthropicModel` and the offline
:class:`~harness.model.scripted.ScriptedModel`; ``harness.model.default.default_model`` picks
one. This module imports neither, so code that only needs the protocol stays light.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from anthropic.types import Message

from harness.model.models import DEFAULT_MODEL
from harness.tokens import TokenCounter

__all__ = ["DEFAULT_MODEL", "Model", "is_live", "model_name"]


@runtime_checkable
class Model(TokenCounter, Protocol):
    """What the harness needs from a model: the Messages API's ``create`` and (from
    :class:`~harness.tokens.TokenCounter`) ``count_tokens``."""

    def create(
        self,
        *,
        model: str,
        max_tokens: int,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **extra: Any,
    ) -> Message: ...


def is_live(env: Mapping[str, str] | None = None) -> bool:
    """True when an API key is set, so ``default_model`` would go live."""
    return bool((os.environ if env is None else env).get("ANTHROPIC_API_KEY", "").strip())


def model_name(env: Mapping[str, str] | None = None) -> str:
    """The model id to ask for: ``HARNESS_MODEL`` if set, else :data:`DEFAULT_MODEL`."""
    return (os.environ if env is None else env).get("HARNESS_MODEL", "").strip() or DEFAULT_MODEL
