"""The models the course knows: each one's context window, maximum output and status, sourced.

The course's default model is :data:`DEFAULT_MODEL`, defined here and nowhere else; the scripted
model and the live one both use it (``harness.model.base.model_name`` reads ``HARNESS_MODEL``
first). Windows and output limits are data, like prices (``harness.pricing``) and cache minimums
(``harness.model.cache.minimums``): they differ by model and change when models do. Every
number below was read on the page its row names, on :data:`MODELS_AS_OF`; a number no public
page gave us is ``None``, and its row says so.

>>> facts_of(DEFAULT_MODEL).context_window
1000000
>>> context_window_of("claude-haiku-4-5-20251001")
200000
"""

from __future__ import annotations

import re
from collections.abc import Container
from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict

MODELS_AS_OF = date(2026, 11, 26)

DEFAULT_MODEL = "claude-sonnet-5-5"
"""The course's model: the current Sonnet on :data:`MODELS_AS_OF` (see its row below)."""

Status = Literal["current", "legacy", "deprecated", "retired"]
"""The docs' lifecycle: current (the newest of its family), legacy (still served, no more
updates), deprecated (a retirement date is set), retired (requests fail).
https://platform.claude.com/docs/en/about-claude/model-deprecations"""

NOT_FOUND = "no public address found"

_DEPRECATIONS = "https://platform.claude.com/docs/en/about-claude/model-deprecations"
_SKILL_CATALOG = (
    "https://github.com/anthropics/skills/blob/main/skills/claude-api/shared/models.md"
    " (Anthropic's own model catalog, as of 2026-07)"
)


def _page(slug: str) -> str:
    return f"https://platform.claude.com/docs/en/models/{slug}/overview"


class ModelFacts(BaseModel):
    """What the docs say of one model id, and where."""

    model_config = ConfigDict(frozen=True)

    id: str
    context_window: int | None
    """Input plus output tokens one request may hold; ``None``: no public address found."""
    max_output: int | None
    """The largest ``max_tokens`` a request may ask for; ``None``: no public address found."""
    status: Status
    source: str
    """Where the numbers and the status are documented (or :data:`NOT_FOUND`, said of which)."""


def _facts(
    id: str, window: int | None, max_output: int | None, status: Status, source: str
) -> ModelFacts:
    return ModelFacts(
        id=id, context_window=window, max_output=max_output, status=status, source=source
    )


_M = 1_000_000
_K = 1_000

# Model id (without its date suffix) -> facts. Every id of harness.pricing.PRICES and of
# harness.model.cache.minimums.MINIMUM_CACHEABLE_TOKENS has a row (a test checks it).
MODELS: dict[str, ModelFacts] = {
    row.id: row
    for row in (
        _facts("claude-sonnet-5-5", _M, 128 * _K, "current", _page("sonnet-5-5")),
        _facts("claude-haiku-5-5", _M, 128 * _K, "current", _page("haiku-5-5")),
        _facts("claude-sonnet-5", _M, 128 * _K, "legacy", _page("sonnet-5")),
        _facts("claude-sonnet-4-6", _M, 128 * _K, "legacy", _page("sonnet-4-6")),
        # Deprecated: retires on 2026-11-30, says its page.
        _facts("claude-sonnet-4-5", 200 * _K, 64 * _K, "deprecated", _page("sonnet-4-5")),
        _facts("claude-opus-5", _M, 128 * _K, "legacy", _page("opus-5")),
        _facts("claude-opus-4-8", _M, 128 * _K, "legacy", _page("opus-4-8")),
        # Its own page was not in the copies we could search; the numbers are Amazon Bedrock's
        # model card, and the models overview no longer lists it among the current models.
        _facts(
            "claude-opus-4-7",
            _M,
            128 * _K,
            "legacy",
            "https://docs.aws.amazon.com/bedrock/latest/userguide/"
            "model-card-anthropic-claude-opus-4-7.md; status: "
            "https://platform.claude.com/docs/en/about-claude/models/overview",
        ),
        _facts("claude-opus-4-6", _M, 128 * _K, "legacy", _page("opus-4-6")),
        _facts("claude-opus-4-5", 200 * _K, 64 * _K, "legacy", _page("opus-4-5")),
        _facts("claude-haiku-4-5", 200 * _K, 64 * _K, "legacy", _page("haiku-4-5")),
        _facts("claude-fable-5", _M, 128 * _K, "legacy", _page("fable-5")),
        # "Shares Claude Fable 5's specifications and pricing" (the Fable 5 page).
        _facts("claude-mythos-5", _M, 128 * _K, "legacy", _page("fable-5")),
        _facts(
            "claude-mythos-preview",
            None,
            None,
            "legacy",
            f"{NOT_FOUND} for its window and output; succeeded by Claude Mythos 5: "
            + _page("fable-5"),
        ),
        # Retired on the Claude API: the course keeps them for old transcripts and prices.
        _facts("claude-opus-4-1", None, None, "retired", f"{_DEPRECATIONS}; limits: {NOT_FOUND}"),
        _facts("claude-opus-4", None, None, "retired", f"{_DEPRECATIONS}; limits: {NOT_FOUND}"),
        _facts("claude-sonnet-4", None, None, "retired", f"{_DEPRECATIONS}; limits: {NOT_FOUND}"),
        _facts(
            "claude-3-7-sonnet", None, None, "retired", f"{_SKILL_CATALOG}; limits: {NOT_FOUND}"
        ),
        _facts("claude-3-5-haiku", None, None, "retired", f"{_SKILL_CATALOG}; limits: {NOT_FOUND}"),
        # The catalog gives its retirement date, 2026-04-19.
        _facts("claude-3-haiku", None, None, "retired", f"{_SKILL_CATALOG}; limits: {NOT_FOUND}"),
    )
}

UNKNOWN_MODEL_WINDOW = 200_000
"""The window assumed for a model the table does not know (or gives none for): the smallest
window in the table, so a harness that compacts by it never overfills a real model's window.
Our choice, not a fact."""


def model_key(model: str, known: Container[str]) -> str:
    """The key a table of models (``known``) files ``model`` under: the id without a date or
    ``-latest`` suffix, and without the ``-0`` of an alias such as ``claude-opus-4-0`` when the
    table knows the shorter id. This table and the cache minimums' both look ids up by it.

    >>> model_key("claude-opus-4-5-20251101", MODELS)
    'claude-opus-4-5'
    """
    name = re.sub(r"-(\d{8}|latest)$", "", model)
    return name[:-2] if name not in known and name.endswith("-0") else name


def _name(model: str) -> str:
    return model_key(model, MODELS)


def facts_of(model: str) -> ModelFacts:
    """The row of ``model`` (a dated id, a ``-latest`` or ``-0`` alias finds its model's).

    Raises ``KeyError``, naming the known ids, for a model the table does not know.
    """
    row = MODELS.get(_name(model))
    if row is None:
        raise KeyError(f"no facts known for model {model!r}; known: {', '.join(sorted(MODELS))}")
    return row


def context_window_of(model: str) -> int:
    """The context window of ``model``; :data:`UNKNOWN_MODEL_WINDOW` when the table has none."""
    row = MODELS.get(_name(model))
    window = row.context_window if row is not None else None
    return window if window is not None else UNKNOWN_MODEL_WINDOW


def max_output_of(model: str) -> int | None:
    """The largest ``max_tokens`` of ``model``, or ``None`` when no public address gave it."""
    row = MODELS.get(_name(model))
    return row.max_output if row is not None else None


DEFAULT_CONTEXT_WINDOW = context_window_of(DEFAULT_MODEL)
"""The default model's window (1M): the scripted model's default, offline as live."""

DEFAULT_MAX_OUTPUT = max_output_of(DEFAULT_MODEL) or 64_000
"""The default model's maximum output (128K): the scripted model refuses more, as the API does."""
