"""Which model answers: the live API when a key is set, the scripted model otherwise."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping

from harness.clock import Clock
from harness.model.base import Model, is_live, model_name
from harness.model.live import AnthropicModel
from harness.model.scripted import ScriptedModel, Step


@functools.cache
def _announce(line: str) -> None:
    # Cached: each mode is announced once per process, not on every call.
    print(line)


def default_model(
    script: Iterable[Step] = (),
    *,
    env: Mapping[str, str] | None = None,
    clock: Clock | None = None,
    context_window: int | None = None,
) -> Model:
    """Live if ``ANTHROPIC_API_KEY`` is set, otherwise a :class:`ScriptedModel` of ``script``.

    Notebooks pass the script their cells were written against; with a key set the script
    is ignored and the real model answers (so outputs will differ from the stored ones).
    ``context_window`` holds the scripted model to a window of your choosing; ``None`` holds
    each request to its model's own, as the API does.
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
