"""The conversation: API-shaped messages, how to build them, and how to tell they are valid.

The conversation is a plain ``list`` of ``dict`` exactly as the Messages API takes it
(``{"role": "user", "content": [...]}``). We use plain dicts rather than the SDK's
``MessageParam`` TypedDicts because the harness rewrites conversations (compaction, for one)
and dicts are what gets written to disk; ``validate`` is what keeps them honest.

Invariant 1 of the course: a conversation sent to the model is always API-valid. The API's
rules, which ``validate`` checks and names precisely:

* it starts with a ``user`` message, and roles alternate user / assistant;
* every ``tool_use`` in an assistant message is answered by a ``tool_result`` with the same id
  in the very next (user) message, and those results come before any other block there;
* no ``tool_result`` without its ``tool_use`` in the message just before;
* no empty content, and no text block that is empty or only whitespace;
* tool ids are unique;
* every block is of a type the API knows (:data:`CONTENT_BLOCK_TYPES`), a ``tool_use`` input is
  a JSON object, and a ``tool_result`` holds a string or a list of content blocks;
* all text can be encoded as UTF-8: no lone surrogates (``"\\udc80"``, which is what
  ``os.fsdecode`` makes of a file name's undecodable bytes).

(The live API merges consecutive user messages instead of refusing them, but a harness that
relies on that loses track of which results answer which calls; strict alternation is the
invariant we keep.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from anthropic.types import Message as APIMessage

MessageDict = dict[str, Any]
Block = dict[str, Any]


# --- builders -----------------------------------------------------------------------------


def text(text: str) -> Block:
    return {"type": "text", "text": text}


def user(content: str | Iterable[Block]) -> MessageDict:
    """A user message: a prompt string, or a list of blocks (tool results, text)."""
    return {"role": "user", "content": content if isinstance(content, str) else list(content)}


def assistant(content: str | Iterable[Block] | APIMessage) -> MessageDict:
    """An assistant message from text, blocks, or a model reply (an SDK ``Message``)."""
    if isinstance(content, APIMessage):
        blocks = [as_block(block) for block in content.content]
        return {"role": "assistant", "content": blocks}
    return {"role": "assistant", "content": content if isinstance(content, str) else list(content)}


# Claude Code's placeholder for a reply with nothing left in it: the API refuses empty content.
NO_CONTENT = "(no content)"


def from_reply(reply: APIMessage) -> MessageDict:
    """The assistant message to append for a model reply, safe to send back to the API.

    Tool calls are kept only when the model stopped *to* call them (``stop_reason ==
    "tool_use"``): a reply cut off by ``max_tokens`` may end in an incomplete call that
    must not run and would otherwise sit unanswered. A reply left empty becomes
    ``"(no content)"``, as in Claude Code. A text block with only whitespace (the model
    sometimes sends ``"\\n\\n"`` before a call) is dropped: the API refuses it when sent back.
    """
    message = assistant(reply)
    kept = [
        b
        for b in message["content"]
        if (b.get("type") != "tool_use" or reply.stop_reason == "tool_use")
        and not _is_blank_text(b)
    ]
    message["content"] = kept or [text(NO_CONTENT)]
    return message


def tool_use(tool_use_id: str, name: str, input: Mapping[str, Any]) -> Block:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": dict(input)}


def tool_result(tool_use_id: str, content: str | list[Block], *, is_error: bool = False) -> Block:
    """A ``tool_result`` block; ``is_error`` tells the model the call failed and why."""
    block: Block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def as_block(block: Any) -> Block:
    """A content block as a dict: SDK block objects (``reply.content[0]``) become their JSON."""
    if isinstance(block, dict):
        return block  # the same object: callers may rely on editing it in place
    if isinstance(block, Mapping):
        return dict(block)
    dump = getattr(block, "model_dump", None)
    if callable(dump):
        return dict(dump(mode="json", exclude_none=True))
    raise TypeError(f"a content block must be a dict or an SDK block, not {type(block).__name__}")


def blocks(message: Mapping[str, Any]) -> list[Block]:
    """A message's content as a list of block dicts (a string becomes one text block).

    SDK block objects are accepted as the SDK accepts them (appending ``reply.content`` as
    the SDK's examples do) and turned into their JSON form.
    """
    content = message.get("content")
    if isinstance(content, str):
        return [text(content)]
    return [as_block(b) for b in content or []]


def normalize(messages: Sequence[Mapping[str, Any]]) -> list[MessageDict]:
    """Plain-dict copies of ``messages``, as they go over the wire."""
    out: list[MessageDict] = []
    for message in messages:
        copy = dict(message)
        if not isinstance(copy.get("content"), str) and copy.get("content") is not None:
            copy["content"] = [as_block(b) for b in copy["content"]]
        out.append(copy)
    return out


def tool_uses(message: Mapping[str, Any]) -> list[Block]:
    return [b for b in blocks(message) if b.get("type") == "tool_use"]


def tool_results(message: Mapping[str, Any]) -> list[Block]:
    return [b for b in blocks(message) if b.get("type") == "tool_result"]


def text_of(message: Mapping[str, Any]) -> str:
    """All the text blocks of a message, joined."""
    return "".join(str(b.get("text", "")) for b in blocks(message) if b.get("type") == "text")


# --- what the API accepts -------------------------------------------------------------------

# The block types a message may hold: the ``type`` of each member of the SDK's
# ``anthropic.types.ContentBlockParam`` union (anthropic 2.12), in the union's order.
# tests/test_api_refusals.py checks this against the installed SDK.
CONTENT_BLOCK_TYPES: tuple[str, ...] = (
    "text",
    "image",
    "document",
    "search_result",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "tool_result",
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "tool_search_tool_result",
    "container_upload",
)

# The block types a tool_result's content list may hold (``ToolResultBlockParam.content``).
TOOL_RESULT_CONTENT_TYPES: tuple[str, ...] = (
    "text",
    "image",
    "search_result",
    "document",
    "tool_reference",
    "browser_state",
)

# A custom tool's name, as the API checks it. The API docs ("Define tools", as seen 2026-09)
# give ``^[a-zA-Z0-9_-]{1,128}$``; older docs and errors said ``{1,64}``.
TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,128}$"
_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)


def is_valid_tool_name(name: object) -> bool:
    """Whether the API accepts ``name`` as a tool's name (:data:`TOOL_NAME_PATTERN`)."""
    # fullmatch, not match: ``$`` alone also matches before a final newline.
    return isinstance(name, str) and _TOOL_NAME.fullmatch(name) is not None


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be sent: a lone surrogate (``"\\udc80"``) cannot be encoded."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so that it can be sent (a tool's
    output may carry them: ``os.fsdecode`` turns a file name's undecodable bytes into them)."""
    return text if is_utf8(text) else _SURROGATE.sub("\ufffd", text)


def bad_unicode(value: Any, where: str) -> str | None:
    """Where in ``value`` (a block, or a part of one) there is text that is not UTF-8."""
    if isinstance(value, str):
        return None if is_utf8(value) else where
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and not is_utf8(key):
                return f"{where} (a key)"
            found = bad_unicode(item, f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for n, item in enumerate(value):
            found = bad_unicode(item, f"{where}[{n}]")
            if found is not None:
                return found
    return None


# --- validation ----------------------------------------------------------------------------

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
    """One way a conversation breaks the API's rules."""

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


def _is_blank_text(block: Mapping[str, Any]) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


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


def tool_result_content_problem(content: Any) -> str | None:
    """Why a tool_result's ``content`` is refused, or ``None``: a string or a list of blocks."""
    if isinstance(content, str):
        return None
    if not isinstance(content, (list, tuple)):
        return (
            "tool_result content must be a string or a list of content blocks, "
            f"not {type(content).__name__}"
        )
    for n, item in enumerate(content):
        if not isinstance(item, Mapping) and callable(getattr(item, "model_dump", None)):
            item = as_block(item)  # an SDK block object, sent as its JSON
        kind = item.get("type") if isinstance(item, Mapping) else None
        if not isinstance(item, Mapping):
            name = type(item).__name__
            return f"tool_result content[{n}] is not a content block (it is a Python {name})"
        if kind not in TOOL_RESULT_CONTENT_TYPES:
            known = ", ".join(TOOL_RESULT_CONTENT_TYPES)
            return f"tool_result content[{n}] has type {kind!r}; a tool result holds {known}"
    return None


def validate(messages: Sequence[Mapping[str, Any]]) -> list[Problem]:
    """Every way ``messages`` breaks the API's conversation rules; ``[]`` means valid."""
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


# --- API rounds ----------------------------------------------------------------------------


def api_rounds(messages: Sequence[MessageDict]) -> list[list[MessageDict]]:
    """Split a conversation into API rounds: each assistant reply with what follows it.

    A round starts at every assistant message and runs up to the next one, so it holds the
    reply and the user message answering its tool calls (plus any new prompt the user typed
    after it). Anything before the first reply is a round of its own. This is how Claude Code
    groups messages when it must drop whole rounds (compaction's prompt-too-long retry): a
    ``tool_use`` and its ``tool_result`` always land in the same round.

    The rounds concatenated give back ``messages`` (the same dict objects, in order).
    """
    rounds: list[list[MessageDict]] = []
    for message in messages:
        if not rounds or message.get("role") == "assistant":
            rounds.append([])
        rounds[-1].append(message)
    return rounds
