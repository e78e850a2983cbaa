"""The model boundary: one protocol, two implementations, and how the course picks one.

Everything above this line talks to a :class:`Model`, whose ``create`` mirrors
``anthropic.Anthropic().messages.create`` and returns an ``anthropic.types.Message``. Offline
it is a :class:`~harness.model.scripted.ScriptedModel`; with ``ANTHROPIC_API_KEY`` set,
:func:`default_model` gives an :class:`~harness.model.live.AnthropicModel` and the same code
runs against the real API.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from anthropic.types import Message

from harness.clock import Clock
from harness.model.live import AnthropicModel
from harness.model.scripted import ScriptedModel, Step
from harness.tokens import TokenCounter

DEFAULT_MODEL = "claude-sonnet-4-6"


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
    """True when an API key is set, so :func:`default_model` would go live."""
    return bool((os.environ if env is None else env).get("ANTHROPIC_API_KEY", "").strip())


def model_name(env: Mapping[str, str] | None = None) -> str:
    """The model id to ask for: ``HARNESS_MODEL`` if set, else :data:`DEFAULT_MODEL`."""
    return (os.environ if env is None else env).get("HARNESS_MODEL", "").strip() or DEFAULT_MODEL


@functools.cache
def _announce(line: str) -> None:
    # Cached: each mode is announced once per process, not on every call.
    print(line)


def default_model(
    script: Iterable[Step] = (),
    *,
    env: Mapping[str, str] | None = None,
    clock: Clock | None = None,
    context_window: int = 200_000,
) -> Model:
    """Live if ``ANTHROPIC_API_KEY`` is set, otherwise a :class:`ScriptedModel` of ``script``.

    Notebooks pass the script their cells were written against; with a key set the script
    is ignored and the real model answers (so outputs will differ from the stored ones).
    """
    if is_live(env):
        source = os.environ if env is None else env
        base_url = source.get("ANTHROPIC_BASE_URL", "").strip() or None
        where = f" at {base_url}" if base_url else ""
        _announce(f"Live mode: the Anthropic API{where} answers (model {model_name(env)}).")
        # The key and base URL come from `env` (the client alone would read os.environ only).
        return AnthropicModel(api_key=source["ANTHROPIC_API_KEY"].strip(), base_url=base_url)
    _announce("Offline mode: a scripted model answers (set ANTHROPIC_API_KEY to go live).")
    return ScriptedModel(script, clock=clock, context_window=context_window)
