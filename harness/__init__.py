"""harness: the program around a language model, built one mechanism per chapter.

Importing it needs no API key and has no side effects; the model is chosen when you call
``harness.model.default_model()``.
"""

from harness.clock import Clock, FakeClock, RealClock
from harness.model import (
    AnthropicModel,
    Model,
    ScriptedModel,
    default_model,
    faults,
    reply,
    tool_call,
)
from harness.tokens import ContextBudget

__all__ = [
    "AnthropicModel",
    "Clock",
    "ContextBudget",
    "FakeClock",
    "Model",
    "RealClock",
    "ScriptedModel",
    "default_model",
    "faults",
    "reply",
    "tool_call",
]
