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
* tool ids are unique.

(The live API merges consecutive user messages instead of refusing them, but a harness that
relies on that loses track of which results answer which calls; strict alternation is the
invariant we keep.)
"""

from __future__ import annotations

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
    sometimes sends ``"\n\n"`` before a call) is dropped: the API refuses it when sent back.
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
]


@dataclass(frozen=True)
class Problem:
    """One way a conversation breaks the API's rules."""

    kind: ProblemKind
    index: int
    """Index of the offending message in the conversation."""
    detail: str
    tool_use_id: str | None = None

    def __str__(self) -> str:
        where = f"messages[{self.index}]"
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
        return problems
    for block in content:
        kind = block.get("type")
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
