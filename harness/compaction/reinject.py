"""After a full compaction: the files the model read most recently, read again from disk.

A summary says which files mattered, not what is in them, and the model would otherwise
read them all again on its next turns. Claude Code puts the most recently read files back
into the new context (observed numbers: at most 5, about 5K tokens each, 50K in all). They
are read *again*, not copied from the old conversation, so they come back as they are now,
edits included.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness import messages as m
from harness import tokens
from harness.tools.base import ToolContext, ToolError
from harness.tools.files import read_file

REINJECT_MAX_FILES = 5
REINJECT_TOKENS_PER_FILE = 5_000
# With these caps the per-file one binds first (5 x 5K = 25K); the total matters if raised.
REINJECT_TOKEN_BUDGET = 50_000


def recently_read_files(conversation: Sequence[m.MessageDict]) -> list[str]:
    """Paths the model read with ``read_file``, most recent first, each once."""
    paths: list[str] = []
    for message in reversed(conversation):
        if message.get("role") != "assistant":
            continue
        for use in reversed(m.tool_uses(message)):
            path = use.get("input", {}).get("path")
            if use.get("name") == "read_file" and isinstance(path, str) and path not in paths:
                paths.append(path)
    return paths


def reinject_files(paths: Sequence[str], context: ToolContext) -> list[tuple[str, str]]:
    """(path, text) of up to 5 files as they are now, each cut to ~5K tokens, 50K in all."""
    out: list[tuple[str, str]] = []
    budget = REINJECT_TOKEN_BUDGET
    for path in paths[:REINJECT_MAX_FILES]:
        try:
            text = str(read_file({"path": path}, context))
        except (ToolError, ValueError, OSError):
            continue  # deleted or unreadable since: nothing to put back
        limit = min(REINJECT_TOKENS_PER_FILE, budget)
        if tokens.estimate_text(text) > limit:
            text = text[: limit * 4] + "\n[... cut to fit the re-injection budget ...]"
        cost = tokens.estimate_text(text)
        if cost > budget:
            break
        budget -= cost
        out.append((path, text))
    return out
