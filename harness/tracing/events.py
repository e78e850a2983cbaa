"""The harness's own events as span events: the class name and the numbers, no content.

A retry, a compaction, a fallback, a microcompact, a permission decision: each is an event
class of its chapter (``Retrying``, ``Compacted``, ``FellBack``...). On a span it keeps its
class name and the fields that are numbers (tokens before and after, the attempt, the
delay), plus, for the events listed in :data:`SAFE_TEXT`, the fields that name a *kind* of
thing and never carry what a person or a tool wrote. Free text (a reason, a hook's detail)
stays out: it can quote the prompt or a file.
"""

from __future__ import annotations

import dataclasses

from opentelemetry.util.types import AttributeValue

from harness.events import AssistantReplied, Event, ModelCalled, ToolFinished, ToolStarted

AS_SPANS: tuple[type[Event], ...] = (ModelCalled, AssistantReplied, ToolStarted, ToolFinished)
"""Events the trace shows as spans (or span attributes) rather than as span events."""

SAFE_TEXT: dict[str, frozenset[str]] = {
    "Compacted": frozenset({"tier", "trigger"}),
    "CompactionFailed": frozenset({"tier"}),
    "Retrying": frozenset({"source", "model", "purpose"}),
    "FellBack": frozenset({"from_model", "to_model"}),
    "GaveUp": frozenset({"kind"}),
    "PermissionDecided": frozenset({"decision"}),
    "HookReported": frozenset({"hook", "outcome"}),
    "TurnEnded": frozenset({"stop_reason"}),
    "TodosReminded": frozenset({"kind"}),
    "ShellsNotified": frozenset({"kind"}),
}
"""By event class: the text fields that only ever hold a name from a short list (a
compaction's tier, a retry's source, a model id, ``allow`` or ``deny``), never content. By
class, not by field name: ``ApprovalApplied.outcome`` is the tool's result, and its
``decision`` says who decided; an event not listed keeps its numbers only."""


def event_attributes(event: Event) -> dict[str, AttributeValue]:
    """The attributes of ``event``'s span event: its numbers and its :data:`SAFE_TEXT`."""
    out: dict[str, AttributeValue] = {}
    if not dataclasses.is_dataclass(event):
        return out
    safe = SAFE_TEXT.get(type(event).__name__, frozenset())
    for field in dataclasses.fields(event):
        value = getattr(event, field.name)
        number = isinstance(value, bool | int | float)
        if number or (isinstance(value, str) and field.name in safe):
            out[field.name] = value
    return out
