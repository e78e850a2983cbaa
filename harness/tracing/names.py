"""The names a trace uses: OpenTelemetry's GenAI semantic conventions, and the harness's own.

The GenAI conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/) are still marked
*Development*: the names come from ``opentelemetry-semantic-conventions``' incubating module,
so they follow the package rather than a copy typed in here. Where the conventions name
nothing (a request's cost, the harness's turn, what a side request is for) the attribute is
``harness.*``: an instrumentation may add its own names, under its own prefix.
"""

from __future__ import annotations

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes

OPERATION = gen_ai.GEN_AI_OPERATION_NAME
PROVIDER = gen_ai.GEN_AI_PROVIDER_NAME
ANTHROPIC = gen_ai.GenAiProviderNameValues.ANTHROPIC.value
CHAT = gen_ai.GenAiOperationNameValues.CHAT.value
EXECUTE_TOOL = gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
INVOKE_AGENT = gen_ai.GenAiOperationNameValues.INVOKE_AGENT.value

AGENT_NAME = gen_ai.GEN_AI_AGENT_NAME
CONVERSATION_ID = gen_ai.GEN_AI_CONVERSATION_ID
REQUEST_MODEL = gen_ai.GEN_AI_REQUEST_MODEL
REQUEST_MAX_TOKENS = gen_ai.GEN_AI_REQUEST_MAX_TOKENS
RESPONSE_MODEL = gen_ai.GEN_AI_RESPONSE_MODEL
RESPONSE_ID = gen_ai.GEN_AI_RESPONSE_ID
FINISH_REASONS = gen_ai.GEN_AI_RESPONSE_FINISH_REASONS
INPUT_TOKENS = gen_ai.GEN_AI_USAGE_INPUT_TOKENS
"""For Anthropic, the whole prompt: the conventions' Anthropic page asks for the API's
``input_tokens`` plus the cache reads and writes, which the API counts apart."""
OUTPUT_TOKENS = gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS
CACHE_READ_TOKENS = gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS
CACHE_WRITE_TOKENS = gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
TOOL_NAME = gen_ai.GEN_AI_TOOL_NAME
TOOL_CALL_ID = gen_ai.GEN_AI_TOOL_CALL_ID
ERROR_TYPE = error_attributes.ERROR_TYPE

# Content: only when content capture is on (the conventions make all four opt-in).
INPUT_MESSAGES = gen_ai.GEN_AI_INPUT_MESSAGES
OUTPUT_MESSAGES = gen_ai.GEN_AI_OUTPUT_MESSAGES
TOOL_ARGUMENTS = gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS
TOOL_RESULT = gen_ai.GEN_AI_TOOL_CALL_RESULT

# The harness's own. The conventions have no cost attribute (cost is the provider's price
# list times the usage, which they leave to the backend): ours is computed as the session's
# CostMeter computes it (harness.pricing.cost_of), so a span and the bill agree.
COST_USD = "harness.cost.usd"
PURPOSE = "harness.request.purpose"
"""``turn`` for the loop's own requests; else the side request's name (``compaction``...)."""
ATTEMPT = "harness.attempt"
"""Which attempt at this request a ``chat`` span is (1 is the first): chapter 06 retries."""
TURN = "harness.turn"
STOP_REASON = "harness.stop_reason"

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The switch OpenTelemetry's own GenAI instrumentations read (``true`` turns content on);
Claude Code's equivalent switches are ``OTEL_LOG_USER_PROMPTS`` and
``OTEL_LOG_TOOL_CONTENT`` (https://code.claude.com/docs/en/monitoring-usage)."""
TRACE_ENV = "HARNESS_TRACE"
"""The harness's one switch: unset or ``0``, no trace; ``1``, traces to the standard OTLP
endpoint variables; a URL, traces to that endpoint."""

CONTENT_MAX = 61_440
"""Characters kept of one content attribute: Claude Code's default content limit, 60 KB,
sized for backends that cap attribute values at 64 KB (its monitoring page)."""
