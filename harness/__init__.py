"""harness: the program around a language model, built one mechanism per chapter.

Importing it needs no API key and has no side effects; the model is chosen when you call
``harness.model.default_model()``.

The names below are loaded when first used (PEP 562), not when the package is imported: a
program that runs one module of the package (``python -m harness.mcp.servers.course``, an MCP
server of chapter 14) does not pay for the SDK and the loop it never uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {
    "Agent": "harness.agent",
    "AgentConfig": "harness.loop",
    "AnthropicModel": "harness.model",
    "BaseAgent": "harness.loop",
    "Clock": "harness.clock",
    "ContextBudget": "harness.tokens",
    "FakeClock": "harness.clock",
    "Model": "harness.model",
    "Plugin": "harness.loop",
    "PromptCheck": "harness.loop",
    "RealClock": "harness.clock",
    "Rewrite": "harness.loop",
    "RunInProgress": "harness.loop",
    "ScriptedModel": "harness.model",
    "default_model": "harness.model",
    "faults": "harness.model",
    "reply": "harness.model",
    "tool_call": "harness.model",
}

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
