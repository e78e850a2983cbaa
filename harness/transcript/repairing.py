"""Repairing a conversation: :func:`repair`, a pure function that makes a loaded
conversation one the API accepts, and lists each :class:`Change` it made.

Each rule is one pass over the messages (mend or drop blocks, merge same-role neighbours,
pair every tool call with a result), repeated until nothing changes; a safety net drops
what the API would still refuse. A call with no result is answered from the tool journal,
as interrupted, or dropped (:data:`UnresolvedPolicy`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness import messages as m
from harness.loop import INTERRUPTED, MAY_HAVE_RUN
from harness.transcript.conversation import _joined
from harness.transcript.entries import MAX_DEPTH, too_deep


@dataclass(frozen=True)
class Change:
    """One thing :func:`repair` changed, and where (an index into the input messages)."""

    kind: str
    index: int
    detail: str

    def __str__(self) -> str:
        return f"messages[{self.index}]: {self.kind}: {self.detail}"


@dataclass(frozen=True)
class Repair:
    messages: list[m.MessageDict]
    changes: list[Change]

    @property
    def changed(self) -> bool:
        return bool(self.changes)


RESUMED_WITHOUT_START = "[The start of this conversation was not recorded.]"


UnresolvedPolicy = Literal["answer", "drop"]


NET_ROUNDS = 4
"""How many times :func:`repair`'s safety net may drop what is still invalid and settle
again before it gives up (each round is one pass over the conversation)."""


def repair(
    messages: Sequence[Mapping[str, Any]],
    *,
    unresolved: UnresolvedPolicy = "answer",
    answers: Mapping[str, m.Block] | None = None,
) -> Repair:
    """Make ``messages`` a conversation the API accepts, and list every change.

    In order: blocks the API does not know, blank text and text that is not valid Unicode
    are dropped or mended; assistant messages left with only thinking (or nothing) are
    dropped; same-role neighbours are merged (tool results first); a tool call with no
    result is answered as interrupted (``unresolved="answer"``, which keeps what the model
    asked) or dropped (``"drop"``, Claude Code's choice); a result that answers no call in
    the message before it is dropped, as is a second result or call with the same id. A
    user message with text before its tool results is reordered, results first. A
    conversation that starts with the model gets a first user line saying the start is
    missing. The input is not changed. ``[]`` stays ``[]`` (there is nothing to resume).

    ``answers``: results known from elsewhere (the tool journal), by tool_use id. A call
    with no result whose id is there gets that ``tool_result`` block, whatever
    ``unresolved`` says: a call that ran keeps its result.

    Linear in the size of the conversation: each rule is one pass.
    """
    changes: list[Change] = []
    work: list[tuple[int, m.MessageDict]] = []
    for index, message in enumerate(messages):
        mended = _mend_message(index, message, changes)
        if mended is not None:
            work.append((index, mended))
    known = answers or {}
    work = _settle(work, changes, unresolved, known)
    if work and work[0][1]["role"] != "user":
        work.insert(0, (0, m.user([m.text(RESUMED_WITHOUT_START)])))
        changes.append(Change("start added", 0, "the conversation began with the model"))
    # A safety net for what the rules above do not foresee: drop every message the API
    # would still refuse, and settle again; a few rounds at most, so it stays linear.
    # (The property tests have not found such a case.)
    for round_ in range(NET_ROUNDS + 1):
        problems = m.validate([msg for _, msg in work]) if work else []
        if not problems:
            break
        if round_ == NET_ROUNDS:
            work = []  # nothing the API accepts could be kept
            changes.append(Change("message dropped", 0, "no valid conversation could be kept"))
            break
        why: dict[int, str] = {}
        for problem in problems:
            why.setdefault(problem.index, problem.detail)
        for k, (index, _) in enumerate(work):
            if k in why:
                changes.append(Change("message dropped", index, f"still invalid: {why[k]}"))
        work = [item for k, item in enumerate(work) if k not in why]
        work = _settle(work, changes, unresolved, known)
        if work and work[0][1]["role"] != "user":
            work.insert(0, (0, m.user([m.text(RESUMED_WITHOUT_START)])))
    return Repair([msg for _, msg in work], changes)


def _settle(
    work: list[tuple[int, m.MessageDict]],
    changes: list[Change],
    unresolved: UnresolvedPolicy,
    answers: Mapping[str, m.Block],
) -> list[tuple[int, m.MessageDict]]:
    for _ in range(4):  # each pass can only shrink what is left to fix; two usually do
        before = len(changes)
        work = _merge_neighbours(work, changes)
        work = _pair_tools(work, changes, unresolved, answers)
        work = [(i, msg) for i, msg in work if _keep(i, msg, changes)]
        if len(changes) == before:
            break
    return work


def _mend_message(
    index: int, message: Mapping[str, Any], changes: list[Change]
) -> m.MessageDict | None:
    role = message.get("role")
    if role not in ("user", "assistant"):
        shown = repr(role) if role is None or isinstance(role, str) else type(role).__name__
        changes.append(Change("message dropped", index, f"role {shown} is not user or assistant"))
        return None
    content = message.get("content")
    raw = (
        [m.text(content)]
        if isinstance(content, str)
        else content
        if isinstance(content, list)
        else []
    )
    kept: list[m.Block] = []
    for j, block in enumerate(raw):
        fixed = _mend_block(role, block)
        if fixed is None:
            what = _kind_of(block)
            if isinstance(block, Mapping) and too_deep(block):
                what += f", nested more than {MAX_DEPTH} levels deep"
            changes.append(Change("block dropped", index, f"content[{j}] ({what})"))
            continue
        if fixed != block:
            changes.append(Change("block mended", index, f"content[{j}] ({fixed.get('type')})"))
        kept.append(fixed)
    results = [b for b in kept if b.get("type") == "tool_result"] if role == "user" else []
    if any(b.get("type") != "tool_result" for b in kept[: len(results)]):
        # Text before a result: the API wants results first. Moving them keeps them.
        kept = results + [b for b in kept if b.get("type") != "tool_result"]
        changes.append(Change("reordered", index, "tool results moved before the other content"))
    if isinstance(content, str) and kept == raw:
        return {"role": role, "content": content}  # a prompt kept as plain text stays so
    return {"role": role, "content": kept}


def _kind_of(block: Any) -> str:
    """What a block is, for a change's detail (never the repr of a nested value)."""
    if not isinstance(block, Mapping):
        return type(block).__name__
    kind = block.get("type")
    if isinstance(kind, str):
        return kind
    if kind is None or isinstance(kind, (int, float)):
        return repr(kind)
    return f"a type that is a {type(kind).__name__}"


def _mend_block(role: str, given: Any) -> m.Block | None:
    block: dict[str, Any]
    if not isinstance(given, Mapping) or too_deep(given):
        return None  # (what is nested too deeply would make the checks below recurse)
    block = {str(k): v for k, v in given.items()}
    kind = block.get("type")
    if kind not in m.CONTENT_BLOCK_TYPES:
        return None
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str) or not text.strip():
            return None
        block["text"] = m.valid_text(text)
    if kind == "tool_use":
        if role != "assistant" or not isinstance(block.get("id"), str):
            return None
        if not isinstance(block.get("input"), dict) or not m.is_valid_tool_name(block.get("name")):
            return None
    if kind == "tool_result":
        if role != "user" or not isinstance(block.get("tool_use_id"), str):
            return None
        if m.tool_result_content_problem(block.get("content", "")) is not None:
            block["content"] = m.valid_text(json.dumps(block.get("content"), default=str))
        elif isinstance(block.get("content"), str):
            block["content"] = m.valid_text(block["content"])
    if m.bad_unicode(block, "") is not None:
        cleaned: Any = json.loads(m.valid_text(json.dumps(block, ensure_ascii=False)))
        block = dict(cleaned) if isinstance(cleaned, dict) else block
    if kind in ("tool_use", "server_tool_use") and role != "assistant":
        return None
    return block


def _merge_neighbours(
    work: list[tuple[int, m.MessageDict]], changes: list[Change]
) -> list[tuple[int, m.MessageDict]]:
    """Each run of same-role messages as one, joined once (linear however long the run)."""
    out: list[tuple[int, m.MessageDict]] = []
    run: list[tuple[int, m.MessageDict]] = []

    def close() -> None:
        if len(run) == 1:
            out.append(run[0])
        elif run:
            out.append((run[0][0], _joined(*(message for _, message in run))))
            for index, message in run[1:]:
                changes.append(
                    Change("merged", index, f"into the {message['role']} message before it")
                )

    for item in work:
        if run and run[-1][1]["role"] != item[1]["role"]:
            close()
            run = []
        run.append(item)
    close()
    return out


def _pair_tools(
    work: list[tuple[int, m.MessageDict]],
    changes: list[Change],
    unresolved: UnresolvedPolicy,
    answers: Mapping[str, m.Block],
) -> list[tuple[int, m.MessageDict]]:
    """Every tool call answered in the next message, every result answering a call in the
    one before: one pass, the answers made for a call carried into the user message after
    it (never inserted into the middle of a list, which would make the pass quadratic)."""
    out: list[tuple[int, m.MessageDict]] = []
    seen_uses: set[str] = set()
    carry: list[m.Block] = []  # answers made for the assistant message just before
    for k, (index, message) in enumerate(work):
        if message["role"] == "assistant":
            uses: list[m.Block] = []
            content: list[m.Block] = []
            for block in m.blocks(message):
                if block.get("type") == "tool_use":
                    if block["id"] in seen_uses:
                        changes.append(
                            Change("tool_use dropped", index, f"{block['id']} used twice")
                        )
                        continue
                    seen_uses.add(block["id"])
                    uses.append(block)
                content.append(block)
            following = work[k + 1][1] if k + 1 < len(work) else None
            answered = (
                {str(r.get("tool_use_id")) for r in m.tool_results(following)}
                if following is not None and following["role"] == "user"
                else set()
            )
            made: list[m.Block] = []
            gone: set[str] = set()
            for use in uses:
                use_id = use["id"]
                if use_id in answered:
                    continue
                journaled = _journaled(use_id, answers)
                if journaled is not None:  # it ran: its result wins over dropping it
                    made.append(journaled)
                    how = (
                        "as may have run (started, no result recorded)"
                        if journaled.get("content") == MAY_HAVE_RUN
                        else "from the tool journal"
                    )
                    changes.append(Change("tool_use answered", index, f"{use_id} {how}"))
                elif unresolved == "drop":
                    gone.add(use_id)
                    changes.append(
                        Change("tool_use dropped", index, f"{use_id} was never answered")
                    )
                else:
                    made.append(m.tool_result(use_id, INTERRUPTED, is_error=True))
                    changes.append(Change("tool_use answered", index, f"{use_id} as interrupted"))
            if gone:
                content = [
                    b for b in content if not (b.get("type") == "tool_use" and b["id"] in gone)
                ]
            if content != m.blocks(message):
                message = {"role": "assistant", "content": content}
            out.append((index, message))
            if made and following is not None and following["role"] == "user":
                carry = made
            elif made:
                out.append((index, m.user(made)))
        else:
            if carry:
                message = {"role": "user", "content": [*carry, *m.blocks(message)]}
                carry = []
            previous = out[-1][1] if out else None
            asked = (
                {str(u.get("id")) for u in m.tool_uses(previous)}
                if previous is not None and previous["role"] == "assistant"
                else set()
            )
            kept: list[m.Block] = []
            done: set[str] = set()
            for block in m.blocks(message):
                if block.get("type") == "tool_result":
                    use_id = str(block.get("tool_use_id"))
                    if use_id not in asked or use_id in done:
                        why = (
                            "answers no call in the message before"
                            if use_id not in asked
                            else "a second answer"
                        )
                        changes.append(Change("tool_result dropped", index, f"{use_id}: {why}"))
                        continue
                    done.add(use_id)
                kept.append(block)
            if kept != m.blocks(message):
                message = {"role": "user", "content": kept}
            out.append((index, message))
    return out


def _journaled(use_id: str, answers: Mapping[str, m.Block]) -> m.Block | None:
    """The result ``answers`` holds for ``use_id``, as a block the API takes (its
    ``tool_use_id`` set to the call's), or ``None`` if there is none or it is no
    ``tool_result`` block."""
    given = answers.get(use_id)
    if not isinstance(given, Mapping) or given.get("type") != "tool_result":
        return None
    return _mend_block("user", {**given, "tool_use_id": use_id})


def _keep(index: int, message: m.MessageDict, changes: list[Change]) -> bool:
    content = m.blocks(message)
    if not content:
        changes.append(Change("message dropped", index, f"an empty {message['role']} message"))
        return False
    if message["role"] == "assistant" and all(
        b.get("type") in ("thinking", "redacted_thinking") for b in content
    ):
        changes.append(Change("message dropped", index, "an assistant message with only thinking"))
        return False
    return True
