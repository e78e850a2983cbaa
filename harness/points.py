"""What the loop's named points hand each other (chapter 01).

* :class:`ModelRequest`: one request, exactly as it will be sent; ``call_model`` layers get
  it and may send a changed copy.
* :class:`PromptCheck`: what ``before_prompt`` says of a prompt (refuse it, or add context).
* :class:`Rewrite`: a new conversation from ``before_request``, and the event that says why.
* :class:`ToolProgress`: calls starting, or finished with their results (``on_tool_progress``).

They live apart from :mod:`harness.loop` so the loop's file stays the loop; every name still
imports from ``harness.loop`` too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness import messages as m
from harness.events import Event


@dataclass(frozen=True)
class ModelRequest:
    """One request, exactly as it will be sent (``model.create(**request.kwargs())``)."""

    model: str
    max_tokens: int
    messages: list[m.MessageDict]
    system: str | list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    purpose: str = "turn"
    """What the request is for, never sent: ``turn`` for the loop's own requests; a side
    request names itself (``compaction``, ...), so a layer can tell them apart."""

    def kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        out["messages"] = self.messages
        if self.system is not None:
            out["system"] = self.system
        if self.tools:
            out["tools"] = self.tools
        return {**out, **self.extra}


@dataclass(frozen=True)
class PromptCheck:
    """What a plugin's ``before_prompt`` says of a prompt: refuse it, or add context to it."""

    block: bool = False
    reason: str = ""
    """Why it was refused, for the person (the model never sees a refused prompt)."""
    context: str = ""
    """Text for the model, sent as a second block of the prompt's message (Claude Code's
    ``additionalContext`` from a UserPromptSubmit hook)."""


@dataclass(frozen=True)
class Rewrite:
    """A new conversation, and the event that says what changed and why."""

    messages: list[m.MessageDict]
    event: Event


@dataclass(frozen=True)
class ToolProgress:
    """What the tool runner reports as it goes: ``started`` (these calls are about to run)
    or ``finished`` (these calls have their results), before the loop sees the results."""

    state: str
    """``started`` or ``finished``."""
    tool_use_ids: tuple[str, ...]
    results: tuple[m.Block, ...] = ()
    """The ``tool_result`` blocks, when ``finished``."""
