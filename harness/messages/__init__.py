"""The conversation: API-shaped messages, how to build them, and how to tell they are valid.

The conversation is a plain ``list`` of ``dict`` exactly as the Messages API takes it
(``{"role": "user", "content": [...]}``). We use plain dicts rather than the SDK's
``MessageParam`` TypedDicts because the harness rewrites conversations (compaction, for one)
and dicts are what gets written to disk; ``validate`` is what keeps them honest.

Invariant 1 of the course: a conversation sent to the model is always API-valid.
``validate`` checks the API's rules and one of the harness's own, that roles alternate
(``validation`` lists them), and names each break precisely.

The pieces:

* ``builders``: user and assistant messages, content blocks, and reading them back;
* ``rules``: what the API accepts (block types, tool names, text it can encode);
* ``validation``: :func:`validate` and :func:`ensure_valid`, and the :class:`Problem` they find;
* ``rounds``: :func:`api_rounds`, a conversation cut into API rounds.
"""

from __future__ import annotations

from harness.messages.builders import (
    NO_CONTENT,
    Block,
    MessageDict,
    as_block,
    assistant,
    blocks,
    fresh,
    from_reply,
    normalize,
    text,
    text_of,
    tool_result,
    tool_results,
    tool_use,
    tool_uses,
    user,
)
from harness.messages.rounds import api_rounds
from harness.messages.rules import (
    CONTENT_BLOCK_TYPES,
    TOOL_NAME_PATTERN,
    TOOL_RESULT_CONTENT_TYPES,
    bad_unicode,
    is_utf8,
    is_valid_tool_name,
    tool_result_content_problem,
    valid_text,
)
from harness.messages.validation import (
    InvalidConversation,
    Problem,
    ProblemKind,
    ensure_valid,
    validate,
)

__all__ = [
    "CONTENT_BLOCK_TYPES",
    "NO_CONTENT",
    "TOOL_NAME_PATTERN",
    "TOOL_RESULT_CONTENT_TYPES",
    "Block",
    "InvalidConversation",
    "MessageDict",
    "Problem",
    "ProblemKind",
    "api_rounds",
    "as_block",
    "assistant",
    "bad_unicode",
    "blocks",
    "ensure_valid",
    "fresh",
    "from_reply",
    "is_utf8",
    "is_valid_tool_name",
    "normalize",
    "text",
    "text_of",
    "tool_result",
    "tool_result_content_problem",
    "tool_results",
    "tool_use",
    "tool_uses",
    "user",
    "valid_text",
    "validate",
]
