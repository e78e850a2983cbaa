"""What the scripted model answers to a compaction request, so compaction runs offline.

A responder for ``ScriptedModel.answer_when``: ``model.answer_when(is_compaction_request,
scripted_summary)`` makes the model answer every request that ends with the compaction
instruction with a summary built from that request. It lives next to the scripted model (it
is part of the test double), and the compaction code never imports it.
"""

from __future__ import annotations

import re

from harness import messages as m
from harness.compaction.summary import COMPACT_MARKER, PTL_RETRY_MARKER, SUMMARY_PREAMBLE
from harness.model.scripted import Reply, Request


def _earlier_request(text: str) -> str:
    """A user message that is itself a summary stands for the request it summarised."""
    if not text.startswith(SUMMARY_PREAMBLE):
        return text
    found = re.search(r"^1\. Primary request and intent: (.*)$", text, re.MULTILINE)
    return found.group(1) if found else text


def scripted_summary(request: Request) -> Reply:
    """What the scripted model answers to a compaction request: a summary built from it.

    Deterministic and honest about what it is: it lists the user's requests, the files
    touched and the last thing said, which is what a real summary leads with. It does not
    copy rules over unless the user's messages state them, so pinned facts can go missing,
    as they do with real summaries.
    """
    conversation = request.messages
    asks = [
        m.text_of(msg).split(COMPACT_MARKER)[0].strip()
        for msg in conversation
        if msg["role"] == "user" and m.text_of(msg).strip()
    ]
    asks = [_earlier_request(a) for a in asks if a and a != PTL_RETRY_MARKER]
    calls = [u for msg in conversation if msg["role"] == "assistant" for u in m.tool_uses(msg)]
    files = sorted({str(u["input"].get("path")) for u in calls if u["input"].get("path")})
    said = [m.text_of(msg) for msg in conversation if msg["role"] == "assistant" and m.text_of(msg)]
    counts: dict[str, int] = {}
    for u in calls:
        counts[str(u["name"])] = counts.get(str(u["name"]), 0) + 1
    tally = ", ".join(f"{name} ×{n}" for name, n in sorted(counts.items())) or "none"
    request_line = asks[0][:300] if asks else "(no request found)"
    summary = "\n".join(
        [
            "<analysis>",
            f"{len(conversation)} messages, {len(calls)} tool calls.",
            "</analysis>",
            "<summary>",
            f"1. Primary request and intent: {request_line}",
            f"3. Files and code: {', '.join(files) or 'none'}",
            f"6. Pending tasks: continue the request above ({len(asks)} user message(s) in all).",
            f"7. Current work: {said[-1][:300] if said else 'just started'}",
            f"Tool calls so far: {tally}.",
            "</summary>",
        ]
    )
    return Reply(text=summary)
