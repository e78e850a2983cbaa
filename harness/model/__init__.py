"""The model boundary (chapter 00): the ``Model`` protocol, the live and scripted models."""

from harness.model import faults
from harness.model.base import DEFAULT_MODEL, Model, is_live, model_name
from harness.model.default import default_model
from harness.model.live import AnthropicModel
from harness.model.scripted import (
    Fault,
    Reply,
    Request,
    ScriptedModel,
    ScriptedStream,
    ScriptExhausted,
    Step,
    ToolCall,
    reply,
    said,
    tool_call,
)

__all__ = [
    "DEFAULT_MODEL",
    "AnthropicModel",
    "Fault",
    "Model",
    "Reply",
    "Request",
    "ScriptExhausted",
    "ScriptedModel",
    "ScriptedStream",
    "Step",
    "ToolCall",
    "default_model",
    "faults",
    "is_live",
    "model_name",
    "reply",
    "said",
    "tool_call",
]
