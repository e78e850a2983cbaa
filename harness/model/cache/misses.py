"""Why a request missed, in the API's words: the ``cache_miss_reason`` of its diagnostics.

The API keeps a :class:`Fingerprint` of a request that asks for diagnostics, and
:func:`diagnose` compares the next request against it, naming the first place they diverge
with the SDK's own classes (``model_changed``, ``tools_changed``, ``system_changed``,
``messages_changed``, ``unavailable``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from anthropic.types import (
    CacheMissMessagesChanged,
    CacheMissModelChanged,
    CacheMissReason,
    CacheMissSystemChanged,
    CacheMissToolsChanged,
    CacheMissUnavailable,
)

from harness.model.cache.prefix import PrefixBlock, prefix_blocks


@dataclass(frozen=True)
class Fingerprint:
    """What the API keeps of a request to diagnose the next one: its model, the digests of
    its prefix blocks (with their sizes), and its other prompt-affecting parameters."""

    model: str
    blocks: tuple[PrefixBlock, ...]
    others: str = ""
    """``tool_choice``, ``thinking`` and ``output_config``, serialised: when only these
    differ the API answers ``unavailable``."""


PROMPT_AFFECTING = ("tool_choice", "thinking", "output_config")


def fingerprint(
    model: str,
    tools: Sequence[Mapping[str, Any]] | None,
    system: str | Sequence[Mapping[str, Any]] | None,
    messages: Sequence[Mapping[str, Any]],
    extra: Mapping[str, Any] | None = None,
) -> Fingerprint:
    others = {k: v for k, v in (extra or {}).items() if k in PROMPT_AFFECTING}
    return Fingerprint(
        model,
        tuple(prefix_blocks(tools, system, messages)),
        json.dumps(others, sort_keys=True, default=str),
    )


_SECTIONS = ("tools", "system", "messages")


def _section(block: PrefixBlock) -> str:
    return block.where.split("[")[0]


def diagnose(previous: Fingerprint | None, current: Fingerprint) -> CacheMissReason | None:
    """What the API's cache diagnostics say of ``current`` against ``previous``.

    The API compares the two requests' structure, whether or not the cache hit, and names the
    first place they diverge: ``model_changed``, ``tools_changed``, ``system_changed`` or
    ``messages_changed`` (an earlier message differs, rather than new ones appended), each
    with ``cache_missed_input_tokens``; ``unavailable`` when only other prompt-affecting
    parameters differ; ``None`` (the API's ``diagnostics: null``) when nothing diverged, as
    after an expired entry. ``previous_message_not_found`` is the caller's to say (the API
    keeps fingerprints only of requests that asked for diagnostics).

    ``cache_missed_input_tokens`` is approximate in the API; ours is the previous request's
    tokens from the first difference on, what a matching prefix would have let this one read.
    """
    if previous is None:
        return None
    old, new = previous.blocks, current.blocks
    if previous.model != current.model:
        missed = sum(b.tokens for b in old)
        return CacheMissModelChanged(type="model_changed", cache_missed_input_tokens=missed)
    first = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a.digest != b.digest),
        min(len(old), len(new)),
    )
    if first >= len(old):  # the same, or only new blocks appended
        if previous.others != current.others:
            return CacheMissUnavailable(type="unavailable")
        return None
    sections = [_section(old[first])] + ([_section(new[first])] if first < len(new) else [])
    where = min(sections, key=_SECTIONS.index)
    missed = sum(b.tokens for b in old[first:])
    if where == "tools":
        return CacheMissToolsChanged(type="tools_changed", cache_missed_input_tokens=missed)
    if where == "system":
        return CacheMissSystemChanged(type="system_changed", cache_missed_input_tokens=missed)
    return CacheMissMessagesChanged(type="messages_changed", cache_missed_input_tokens=missed)
