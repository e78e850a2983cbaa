"""A branch's entries as API messages: replies merged, side-branch results put back,
replacements applied.

Claude Code 2.x writes a reply one entry per content block, and parallel tool results as
side branches off the chain; :func:`_conversation` makes one message per turn again, tool
results first, as the API wants them, and applies each ``content-replacement`` (a
microcompaction, an approved call's result). A tool block whose id is not a string, or a
message entry with nothing to send, is skipped and reported (fsck reports them the same way).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from harness import messages as m
from harness.transcript.entries import ENTRY_TYPES_WITH_MESSAGES, Entry, Finding


def _conversation(
    chain: Sequence[Entry],
    main: Sequence[Entry],
    replacements: Mapping[str, Mapping[str, Any]],
    findings: list[Finding],
) -> list[m.MessageDict]:
    """The API messages of ``chain``: replies merged by message id, side-branch results
    found by tool_use id, microcompactions applied."""
    usable: dict[int, list[m.Block]] = {}  # by id(entry): each bad block reported once

    def blocks_of(entry: Entry) -> list[m.Block]:
        if id(entry) not in usable:
            usable[id(entry)] = _usable_blocks(entry, findings)
        return usable[id(entry)]

    blocks_of_reply: dict[str, list[m.Block]] = {}
    seen_blocks: dict[str, set[str]] = {}
    results: dict[str, m.Block] = {}
    for entry in main:
        if entry.type == "assistant" and entry.message_id is not None:
            # One reply may be written twice (whole, then block by block: Claude Code 2.0
            # does this after a retry): keep each block once.
            seen = seen_blocks.setdefault(entry.message_id, set())
            for block in blocks_of(entry):
                key = _block_key(block)
                if key not in seen:
                    seen.add(key)
                    blocks_of_reply.setdefault(entry.message_id, []).append(block)
        elif entry.type == "user":
            for block in blocks_of(entry):
                if block.get("type") == "tool_result":
                    results.setdefault(block["tool_use_id"], block)
    out: list[m.MessageDict] = []
    replies_done: set[str] = set()
    on_chain: set[str] = set()
    for entry in chain:
        if entry.type not in ENTRY_TYPES_WITH_MESSAGES or entry.message is None:
            continue
        text = entry.message.get("content")
        if entry.type == "user" and isinstance(text, str) and text:
            out.append({"role": "user", "content": text})  # a prompt typed as text stays so
            continue
        reply_id = entry.message_id if entry.type == "assistant" else None
        if reply_id is not None and reply_id in replies_done:
            continue
        content = blocks_of(entry) if reply_id is None else blocks_of_reply.get(reply_id, [])
        if not content:
            findings.append(Finding(entry.line, "empty message", _emptiness(entry), entry.uuid))
            continue
        if reply_id is not None:
            replies_done.add(reply_id)
        elif entry.type == "user":
            on_chain.update(b["tool_use_id"] for b in content if b.get("type") == "tool_result")
        out.append({"role": entry.type, "content": list(content)})
    # Parallel results that hang off the chain as side branches (Claude Code 2.1): put each
    # one in the user message after its tool_use, where the API wants it.
    spread: list[m.MessageDict] = []
    for i, message in enumerate(out):
        spread.append(message)
        if message["role"] != "assistant":
            continue
        missing = [
            results[u["id"]]
            for u in m.tool_uses(message)
            if u["id"] not in on_chain and u["id"] in results
        ]
        if not missing:
            continue
        on_chain.update(block["tool_use_id"] for block in missing)
        following = out[i + 1] if i + 1 < len(out) else None
        if following is not None and following["role"] == "user":
            following["content"] = [*missing, *m.blocks(following)]  # appended next round
        else:
            spread.append({"role": "user", "content": missing})
    out = _merge_same_role(spread)
    if replacements:
        for message in out:
            if message["role"] == "user" and isinstance(message["content"], list):
                message["content"] = [
                    _replaced(b, replacements[b["tool_use_id"]])
                    if b.get("type") == "tool_result" and b.get("tool_use_id") in replacements
                    else b
                    for b in message["content"]
                ]
    return out


def _replaced(block: m.Block, item: Mapping[str, Any]) -> m.Block:
    """A tool result with a ``content-replacement`` applied: its content, and whether it is
    an error when the entry says (an approved call's result replaces a placeholder)."""
    out = {**block, "content": item.get("content")}
    if isinstance(item.get("isError"), bool):
        if item["isError"]:
            out["is_error"] = True
        else:
            out.pop("is_error", None)
    return out


def _block_key(block: m.Block) -> str:
    if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
        return f"tool_use:{block['id']}"
    return json.dumps(block, sort_keys=True, default=str)


def _usable_blocks(entry: Entry, findings: list[Finding]) -> list[m.Block]:
    """The entry's blocks, less any tool call or result whose id is not a string: the API's
    ids are strings, and a list or an object cannot even be looked up. Each is reported."""
    out: list[m.Block] = []
    for block in entry.blocks():
        kind = block.get("type")
        name = "id" if kind == "tool_use" else "tool_use_id" if kind == "tool_result" else None
        if name is not None and not isinstance(block.get(name), str):
            got = type(block.get(name)).__name__ if name in block else "missing"
            findings.append(
                Finding(
                    entry.line, "bad block", f"a {kind} whose {name} is {got}: skipped", entry.uuid
                )
            )
            continue
        out.append(block)
    return out


def _emptiness(entry: Entry) -> str:
    """Why a message entry gives no message (for its finding)."""
    content = (entry.message or {}).get("content")
    shown = repr(content)[:60] if "content" in (entry.message or {}) else "no content field"
    return f"nothing in it can be sent ({shown}): skipped"


def _merge_same_role(conversation: list[m.MessageDict]) -> list[m.MessageDict]:
    """Consecutive messages of one role as one (tool results first), as the API view has
    them: a prompt typed after tool results is its own entry, but joins their message.
    Each run is joined once, so a long run costs its length, not its length squared."""
    out: list[m.MessageDict] = []
    run: list[m.MessageDict] = []
    for message in conversation:
        if run and run[-1]["role"] != message["role"]:
            out.append(run[0] if len(run) == 1 else _joined(*run))
            run = []
        run.append(message)
    if run:
        out.append(run[0] if len(run) == 1 else _joined(*run))
    return out


def _joined(*messages: m.MessageDict) -> m.MessageDict:
    """Messages of one role as one; in a user message, tool results go first (the API
    refuses a tool_result after other content), each part in its order."""
    merged = [b for message in messages for b in m.blocks(message)]
    if messages[0]["role"] == "user":
        merged = [b for b in merged if b.get("type") == "tool_result"] + [
            b for b in merged if b.get("type") != "tool_result"
        ]
    return {"role": messages[0]["role"], "content": merged}
