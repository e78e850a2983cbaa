"""Validation: whether a conversation keeps the API's rules, and exactly how it breaks them.

Invariant 1 of the course: a conversation sent to the model is always API-valid. The API's
rules, which ``validate`` checks and names precisely, plus one of the harness's own (the
first):

* it starts with a ``user`` message, and roles alternate user / assistant (the harness's
  rule, below);
* every ``tool_use`` in an assistant message is answered by a ``tool_result`` with the same id
  in the very next (user) message, and those results come before any other block there;
* no ``tool_result`` without its ``tool_use`` in the message just before;
* no empty content, and no text block that is empty or only whitespace;
* tool ids are unique;
* every block is of a type the API knows (:data:`CONTENT_BLOCK_TYPES`), a ``tool_use`` input is
  a JSON object, and a ``tool_result`` holds a string or a list of content blocks;
* all text can be encoded as UTF-8: no lone surrogates (``"\\udc80"``, which is what
  ``os.fsdecode`` makes of a file name's undecodable bytes).

Alternation is not an API rule: the API combines consecutive ``user`` or ``assistant``
messages into a single turn instead of refusing them (the ``messages`` parameter's
documentation in the SDK, ``anthropic.types.MessageCreateParams``). The harness keeps roles
alternating as its own invariant: each reply is checked against the one message after it
(its results, first), and neighbours of one role are merged by the harness itself, results
first (``harness.transcript.repair``), never left to the API, whose merge could put a prompt
in front of the results. The scripted model refuses only what the API refuses, so it accepts
two messages of one role in a row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.messages.builders import _is_blank_text, as_block, tool_results, tool_uses
from harness.messages.rules import (
    CONTENT_BLOCK_TYPES,
    bad_unicode,
    is_utf8,
    tool_result_content_problem,
)

ProblemKind = Literal[
    "empty_conversation",
    "bad_block",
    "bad_role",
    "first_not_user",
    "roles_not_alternating",
    "empty_content",
    "empty_text",
    "tool_use_in_user",
    "tool_result_in_assistant",
    "tool_use_unanswered",
    "tool_result_orphan",
    "tool_result_after_text",
    "duplicate_tool_id",
    "unknown_block_type",
    "bad_tool_input",
    "bad_tool_result_content",
    "invalid_unicode",
]


@dataclass(frozen=True)
class Problem:
    """One way a conversation breaks the API's rules (or the harness's alternation)."""

    kind: ProblemKind
    index: int
    """Index of the offending message in the conversation."""
    detail: str
    tool_use_id: str | None = None
    block: int | None = None
    """Index of the offending block in the message's content, when one block is at fault."""

    def __str__(self) -> str:
        where = f"messages[{self.index}]"
        if self.block is not None:
            where += f".content[{self.block}]"
        tool = f" ({self.tool_use_id})" if self.tool_use_id else ""
        return f"{where}{tool}: {self.detail}"


def _check_message(i: int, message: Mapping[str, Any], *, last: bool = False) -> list[Problem]:
    role = message.get("role")
    if role not in ("user", "assistant"):
        return [Problem("bad_role", i, f"role must be 'user' or 'assistant', not {role!r}")]
    content = message.get("content")
    if content is None or content == "" or content == []:
        if role == "assistant" and last:
            return []  # the API allows an empty final assistant message (a prefill to continue)
        return [Problem("empty_content", i, f"{role} message has empty content")]
    if not isinstance(content, str):
        try:
            content = [as_block(b) for b in content]
        except TypeError as error:
            return [Problem("bad_block", i, str(error))]
    problems: list[Problem] = []
    if isinstance(content, str):
        if not content.strip():
            problems.append(Problem("empty_text", i, "text content is only whitespace"))
        if not is_utf8(content):
            problems.append(Problem("invalid_unicode", i, _UNICODE_DETAIL.format(where="content")))
        return problems
    for j, block in enumerate(content):
        kind = block.get("type")
        problems.extend(_check_block(i, j, block))
        if kind not in CONTENT_BLOCK_TYPES:
            continue
        if _is_blank_text(block):
            problems.append(Problem("empty_text", i, "a text block is empty or only whitespace"))
        elif kind == "tool_use" and role == "user":
            problems.append(
                Problem("tool_use_in_user", i, "tool_use block in a user message", block.get("id"))
            )
        elif kind == "tool_result" and role == "assistant":
            problems.append(
                Problem(
                    "tool_result_in_assistant",
                    i,
                    "tool_result block in an assistant message",
                    block.get("tool_use_id"),
                )
            )
    if role == "user":
        seen_other = False
        for block in content:
            if block.get("type") != "tool_result":
                seen_other = True
            elif seen_other:
                problems.append(
                    Problem(
                        "tool_result_after_text",
                        i,
                        "tool_result blocks must come before any other block in the message",
                        block.get("tool_use_id"),
                    )
                )
    return problems


_UNICODE_DETAIL = (
    "{where} holds text that is not valid Unicode (a lone surrogate, such as os.fsdecode "
    "makes of undecodable bytes): it cannot be encoded as UTF-8, so it cannot be sent"
)


def _check_block(i: int, j: int, block: Mapping[str, Any]) -> list[Problem]:
    """The problems of block ``j`` of message ``i`` on its own: its type, its shape, its text."""
    kind = block.get("type")
    tool_id = block.get("id") if kind == "tool_use" else block.get("tool_use_id")
    tool_id = tool_id if isinstance(tool_id, str) else None
    if kind not in CONTENT_BLOCK_TYPES:
        what = "a content block has no type" if kind is None else f"unknown block type {kind!r}"
        known = ", ".join(CONTENT_BLOCK_TYPES)
        return [Problem("unknown_block_type", i, f"{what} (the API knows: {known})", block=j)]
    problems: list[Problem] = []
    if kind == "tool_use" and not isinstance(block.get("input"), dict):
        got = "no input" if "input" not in block else type(block["input"]).__name__
        problems.append(
            Problem(
                "bad_tool_input",
                i,
                f"tool_use input must be a JSON object (a dict), not {got}",
                tool_id,
                block=j,
            )
        )
    if kind == "tool_result" and "content" in block:
        wrong = tool_result_content_problem(block["content"])
        if wrong is not None:
            problems.append(Problem("bad_tool_result_content", i, wrong, tool_id, block=j))
    where = bad_unicode(dict(block), "")
    if where is not None:
        problems.append(
            Problem("invalid_unicode", i, _UNICODE_DETAIL.format(where=where), tool_id, block=j)
        )
    return problems


def validate(messages: Sequence[Mapping[str, Any]]) -> list[Problem]:
    """Every way ``messages`` breaks the API's conversation rules or the harness's alternation
    (``roles_not_alternating``); ``[]`` means valid."""
    if not messages:
        return [Problem("empty_conversation", 0, "a request needs at least one message")]
    problems: list[Problem] = []
    if messages[0].get("role") != "user":
        problems.append(Problem("first_not_user", 0, "the first message must be from the user"))
    seen_ids: set[str] = set()
    for i, message in enumerate(messages):
        problems.extend(_check_message(i, message, last=i == len(messages) - 1))
        if any(p.kind == "bad_block" for p in problems):
            return problems  # the pairing checks below would only repeat it
        if i > 0 and message.get("role") == messages[i - 1].get("role"):
            problems.append(
                Problem(
                    "roles_not_alternating",
                    i,
                    f"two {message.get('role')} messages in a row (messages {i - 1} and {i})",
                )
            )
        if message.get("role") == "assistant":
            for use in tool_uses(message):
                use_id = str(use.get("id"))
                if use_id in seen_ids:
                    problems.append(
                        Problem("duplicate_tool_id", i, "tool_use id used twice", use_id)
                    )
                seen_ids.add(use_id)
        problems.extend(_check_pairing(messages, i))
    return problems


def _check_pairing(messages: Sequence[Mapping[str, Any]], i: int) -> list[Problem]:
    """tool_use in message i answered in i+1; tool_result in message i asked in i-1."""
    message = messages[i]
    problems: list[Problem] = []
    if message.get("role") == "assistant":
        following = messages[i + 1] if i + 1 < len(messages) else None
        answered = (
            {str(r.get("tool_use_id")) for r in tool_results(following)}
            if following is not None and following.get("role") == "user"
            else set()
        )
        for use in tool_uses(message):
            if str(use.get("id")) not in answered:
                where = (
                    "the conversation ends here"
                    if following is None
                    else f"messages[{i + 1}] does not answer it"
                )
                problems.append(
                    Problem(
                        "tool_use_unanswered",
                        i,
                        f"tool_use has no tool_result with its id in the next message ({where})",
                        str(use.get("id")),
                    )
                )
    elif message.get("role") == "user":
        previous = messages[i - 1] if i > 0 else None
        asked = (
            {str(u.get("id")) for u in tool_uses(previous)}
            if previous is not None and previous.get("role") == "assistant"
            else set()
        )
        answered_here: set[str] = set()
        for result in tool_results(message):
            result_id = str(result.get("tool_use_id"))
            if result_id in answered_here:
                problems.append(
                    Problem("duplicate_tool_id", i, "two tool_results for one tool_use", result_id)
                )
            answered_here.add(result_id)
            if result_id not in asked:
                problems.append(
                    Problem(
                        "tool_result_orphan",
                        i,
                        "tool_result has no tool_use with its id in the previous message",
                        result_id,
                    )
                )
    return problems


class InvalidConversation(ValueError):
    """Raised by :func:`ensure_valid`; carries the list of problems."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        listing = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"conversation is not API-valid ({len(problems)} problem(s)):\n{listing}")


def ensure_valid(messages: Sequence[Mapping[str, Any]]) -> None:
    """Raise :class:`InvalidConversation` listing every problem, or return quietly."""
    problems = validate(messages)
    if problems:
        raise InvalidConversation(problems)
