"""harness: the program around a language model, built one mechanism per chapter.

Importing it needs no API key and has no side effects; the model is chosen when you call
``harness.model.default_model()``.
"""

from harness.agent import Agent
from harness.clock import Clock, FakeClock, RealClock
from harness.loop import AgentConfig, BaseAgent, Plugin, PromptCheck, Rewrite, RunInProgress
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
    "Agent",
    "AgentConfig",
    "AnthropicModel",
    "BaseAgent",
    "Clock",
    "ContextBudget",
    "FakeClock",
    "Model",
    "Plugin",
    "PromptCheck",
    "RealClock",
    "Rewrite",
    "RunInProgress",
    "ScriptedModel",
    "default_model",
    "faults",
    "reply",
    "tool_call",
]
