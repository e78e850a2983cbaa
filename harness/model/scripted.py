"""ScriptedModel: an offline model that speaks the real SDK's types.

It is what lets every chapter run with no API key, deterministically, in milliseconds. It
is built to be *faithful* rather than convenient: whatever the live API would refuse or
truncate, it refuses or truncates the same way, with the SDK's own classes.

* A script is a list of steps. A step is a :class:`Reply` (made with :func:`reply`), an
  exception to raise (see ``harness.model.faults``), or a function of the :class:`Request`
  returning either (for replies that depend on what was sent, e.g. a summary).
* ``usage`` is computed, never typed in: input tokens by ``harness.tokens`` (the same
  estimator the harness uses to plan), output tokens from the reply. The prompt is split
  between cache reads, cache writes and plain input by a prompt-cache simulator
  (``harness.model.cache``, chapter 03); with no ``cache_control`` in a request, as in
  chapters 00-02, the cache fields are present and zero. A top-level ``cache_control``
  (``create(..., cache_control={"type": "ephemeral"})``) is automatic caching, simulated as
  the API documents it.
* A request with ``diagnostics={"previous_message_id": ...}`` gets the API's cache
  diagnostics back in ``Message.diagnostics``: why its prefix diverged from that earlier
  response's request (``harness.model.cache.diagnose``), ``previous_message_not_found`` if
  that request did not ask for diagnostics, and ``None`` when nothing diverged.
* It checks each request as the API does: the body must be sendable (no lone surrogates in
  any text), ``max_tokens`` a whole number from 1 up to the model's output limit, system
  blocks non-blank text, tools well named (``^[a-zA-Z0-9_-]{1,128}$``, unique) and with an
  object ``input_schema``, the conversation valid (``harness.messages.validate``), the prompt
  within the context window (``prompt is too long: N tokens > M maximum``); each refusal is a
  400 ``BadRequestError`` worded as the API words it (or as close as we could find, and
  said so where the wording is our guess).
* A reply longer than ``max_tokens`` is cut, with ``stop_reason="max_tokens"``; one that runs
  into the end of the context window gets ``model_context_window_exceeded``.
* Faults can be scheduled apart from the script (``faults=[...]``, or a function of the
  request): each call first takes the next scheduled fault, and raises it if there is one,
  without using a script step, as a retried request gets the answer the first one would have.
  (A fault can also be a script step, which uses the step up.)
* The same request, sent again after a reply was cut at ``max_tokens`` (only ``max_tokens``
  and the model may differ), gets the same step again, as a model regenerates the same answer:
  a harness that re-sends a cut request with more room gets the whole reply.
* ``stream(...)`` is ``client.messages.stream(...)``: a context manager whose
  ``get_final_message()`` returns what ``create`` would (live mode streams, chapter 06).
* Ids are counters (``msg_0001``, ``toolu_0001``), so stored notebook outputs never change.
* ``.requests`` keeps every request received, for display and for assertions.
* It answers one request at a time: calls from several threads (parallel subagents,
  chapter 10) wait their turn, so its counters, its script and its cache stay consistent.
  Which thread goes first is up to the threads; :meth:`ScriptedModel.script_when` gives
  each conversation a script of its own, so the answers do not depend on that order.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from anthropic.types import (
    CacheCreation,
    CacheMissPreviousMessageNotFound,
    Diagnostics,
    Message,
    StopReason,
    TextBlock,
    ToolUseBlock,
    Usage,
)

from harness import tokens
from harness.clock import Clock, FakeClock
from harness.messages import (
    CONTENT_BLOCK_TYPES,
    TOOL_NAME_PATTERN,
    Problem,
    as_block,
    is_valid_tool_name,
    normalize,
    validate,
)
from harness.model import faults
from harness.model.cache import (
    CacheResult,
    Fingerprint,
    PromptCache,
    check_breakpoints,
    diagnose,
    fingerprint,
)


@dataclass(frozen=True)
class ToolCall:
    """A tool call the scripted model will make: a tool name and its input."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """What the scripted model says on one step."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: StopReason | None = None
    """Forced stop reason; by default ``tool_use`` if there are tool calls, else ``end_turn``."""


def tool_call(name: str, input: Mapping[str, Any] | None = None, /, **kwargs: Any) -> ToolCall:
    """``tool_call("read_file", path="a.py")`` or ``tool_call("read_file", {"path": "a.py"})``."""
    return ToolCall(name, {**(input or {}), **kwargs})


def reply(
    text: str | None = None,
    *,
    tool_calls: Iterable[ToolCall | tuple[str, Mapping[str, Any]]] = (),
    stop_reason: StopReason | None = None,
) -> Reply:
    """A scripted reply: some text, some tool calls, or both."""
    calls = tuple(c if isinstance(c, ToolCall) else ToolCall(c[0], dict(c[1])) for c in tool_calls)
    if text is None and not calls:
        raise ValueError("a reply needs text, tool calls, or both")
    return Reply(text=text, tool_calls=calls, stop_reason=stop_reason)


@dataclass(frozen=True)
class Request:
    """One request as the scripted model received it (a deep copy: later edits don't leak)."""

    model: str
    max_tokens: int
    messages: list[dict[str, Any]]
    system: str | list[dict[str, Any]] | None
    tools: list[dict[str, Any]] | None
    extra: dict[str, Any]
    input_tokens: int
    """The prompt's size by ``harness.tokens`` (what ``usage`` will report, all parts together);
    0 for a request refused as malformed (a bad field, tool or conversation): never counted."""
    cache: CacheResult | None = None
    """How the prompt cache split this prompt (set once the request got a reply)."""

    @property
    def last_message(self) -> dict[str, Any]:
        return self.messages[-1] if self.messages else {}


Step = Reply | BaseException | Callable[[Request], "Reply | BaseException"]

Fault = BaseException | None
"""A scheduled fault: an exception the call raises, or ``None`` for a call that goes through."""
FaultSchedule = Iterable[Fault] | Callable[[Request], Fault]


class ScriptedStream:
    """What ``ScriptedModel.stream(...)`` returns: the SDK's ``MessageStream``, offline.

    As with the SDK, an error the API answers with is raised when the stream opens (on
    ``with``), and ``get_final_message()`` is the whole reply. ``text_stream`` yields its text
    in pieces, as the SDK's does while the reply arrives.
    """

    def __init__(self, open_: Callable[[], Message]) -> None:
        self._open = open_
        self._message: Message | None = None

    def __enter__(self) -> ScriptedStream:
        self._message = self._open()
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def get_final_message(self) -> Message:
        if self._message is None:
            raise RuntimeError("use the stream in a `with` block, as the SDK's")
        return self._message

    @property
    def text_stream(self) -> Iterator[str]:
        for block in self.get_final_message().content:
            if block.type == "text":
                for start in range(0, len(block.text), 16):
                    yield block.text[start : start + 16]


class ScriptExhausted(RuntimeError):
    """The model was called more times than its script has steps."""


def _preview(request: Request, width: int = 300) -> str:
    last = request.last_message
    content = last.get("content", "")
    body = content if isinstance(content, str) else repr(content)
    if len(body) > width:
        body = body[:width] + "…"
    return f"{len(request.messages)} messages; last ({last.get('role')}): {body}"


def said(text: str) -> Callable[[Request], bool]:
    """Matches a request in which a user message holds a text block containing ``text``
    (a task, a directive). Tool inputs do not count: a parent's call that hands out the
    task holds it too."""

    def matches(request: Request) -> bool:
        for message in request.messages:
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                if text in content:
                    return True
                continue
            for block in content or []:
                if block.get("type") == "text" and text in str(block.get("text", "")):
                    return True
        return False

    return matches


# The API's own wording for the conversation errors the scripted model refuses. Sources:
# the API's error bodies as quoted in public issue threads (e.g. anthropics/claude-code#6696
# for tool_use.input); where no quote was found, the wording is our guess in the style of the
# API's other validation errors (pydantic's), and the entry says so.
_API_WORDING: dict[str, str] = {
    "tool_use_unanswered": "messages.{index}: `tool_use` ids were found without `tool_result` "
    "blocks immediately after: {tool_use_id}. Each `tool_use` block must have a corresponding "
    "`tool_result` block in the next message.",
    "tool_result_orphan": "messages.{index}.content: unexpected `tool_use_id` found in "
    "`tool_result` blocks: {tool_use_id}. Each `tool_result` block must have a corresponding "
    "`tool_use` block in the previous message.",
    "empty_content": "messages.{index}: all messages must have non-empty content except for "
    "the optional final assistant message",
    "empty_text": "messages: text content blocks must contain non-whitespace text",
    "first_not_user": 'messages: first message must use the "user" role',
    # Quoted in anthropics/claude-code#6696 and anthropic-sdk-typescript#648.
    "bad_tool_input": "messages.{index}.content.{block}.tool_use.input: Input should be a "
    "valid dictionary",
    # Our guess: pydantic's wording for a tagged union whose tag is unknown.
    "unknown_block_type": "messages.{index}.content.{block}: Input tag {tag} found using "
    "'type' does not match any of the expected tags: {expected}",
    # Our guess, in the same style.
    "bad_tool_result_content": "messages.{index}.content.{block}.tool_result.content: Input "
    "should be a valid string or a list of content blocks",
    # Quoted in anthropics/claude-code#3277 and many others (with a position); the scripted
    # model reports this one before looking at the rest of the request (_json_error).
    "invalid_unicode": "The request body is not valid JSON: no low surrogate in string",
}


def _api_message(problem: Problem, messages: Sequence[Mapping[str, Any]]) -> str:
    template = _API_WORDING.get(problem.kind)
    if template is None:
        return f"messages.{problem.index}: {problem.detail}"
    tag = "None"
    if problem.kind == "unknown_block_type" and problem.block is not None:
        kind = messages[problem.index]["content"][problem.block].get("type")
        if kind is None:  # no tag at all: pydantic says so differently (our guess too)
            return (
                f"messages.{problem.index}.content.{problem.block}: Unable to extract tag "
                "using discriminator 'type'"
            )
        tag = repr(kind)
    return template.format(
        index=problem.index,
        block=problem.block,
        tool_use_id=problem.tool_use_id,
        tag=tag,
        expected=", ".join(repr(t) for t in CONTENT_BLOCK_TYPES),
    )


def _json_error(request: Request) -> str | None:
    """The API's answer to a body holding a lone surrogate, or ``None`` if it has none.

    The installed SDK (anthropic 2.12) encodes the body as UTF-8 and fails before sending
    (``UnicodeEncodeError: ... surrogates not allowed``); clients that escape non-ASCII
    (``JSON.stringify``, older SDKs) send ``"\\ud800"`` and the API refuses the body. We answer
    the way the API does. Its parser's words for a high surrogate with no low one are quoted
    in many issues ("no low surrogate in string: line 1 column N (char N-1)"); for a lone low
    surrogate (what ``os.fsdecode`` makes) we use the same parser family's "invalid high
    surrogate in string" (our guess). The position is in our own serialisation of the body,
    not byte-for-byte the SDK's.
    """
    body = {
        "max_tokens": request.max_tokens,
        "messages": request.messages,
        "model": request.model,
        **({"system": request.system} if request.system is not None else {}),
        **({"tools": request.tools} if request.tools is not None else {}),
        **request.extra,
    }
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        at = error.start  # the first character UTF-8 cannot encode: a surrogate
    else:
        return None
    high = ord(text[at]) <= 0xDBFF  # D800-DBFF opens a pair; DC00-DFFF may only close one
    what = "no low surrogate in string" if high else "invalid high surrogate in string"
    return f"The request body is not valid JSON: {what}: line 1 column {at + 1} (char {at})"


def _max_tokens_error(max_tokens: object) -> str | None:
    # The API's validation wording as pydantic gives it (our guess: no quote found). A bool
    # is refused too, as JSON true is not an integer. The API may coerce "100" or 100.0
    # (pydantic's lax mode); we refuse any non-int, as the SDK's own type says ``int``.
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        return "max_tokens: Input should be a valid integer"
    if max_tokens < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    return None


def _system_error(system: str | list[dict[str, Any]] | None) -> str | None:
    """A system prompt given as blocks must be text blocks with some non-blank text.

    The wording mirrors the API's for message text blocks ("messages: text content blocks
    must be non-empty" / "... must contain non-whitespace text", quoted in many issues) with
    ``system`` for ``messages``: our guess. A plain string system prompt is not checked.
    """
    if not isinstance(system, list):
        return None
    for i, block in enumerate(system):
        if block.get("type") != "text":
            return f"system.{i}.type: Input should be 'text'"  # our guess (pydantic's wording)
        text = block.get("text")
        if not isinstance(text, str) or not text:
            return "system: text content blocks must be non-empty"
        if not text.strip():
            return "system: text content blocks must contain non-whitespace text"
    return None


def _tools_error(tools: list[dict[str, Any]] | None) -> str | None:
    """Custom tools (no ``type``, or ``"custom"``) need a valid name and an object schema.

    Server and Anthropic-schema tools (``web_search_20250305``, ``bash_20250124``, ...) have
    fixed names and no ``input_schema``; only their names' uniqueness is checked. Wording:
    the name pattern, "Field required" and "Tool names must be unique." are quoted in public
    issues (e.g. modelcontextprotocol#1345, su-kaka/gcli2api#392, Kilo-Org/kilocode#12238,
    microsoft/vscode#276110); "Input should be 'object'" and "Input should be a valid
    dictionary" for a schema are our guesses in the same style.
    """
    names: list[str] = []
    for i, tool in enumerate(tools or []):
        if tool.get("type") not in (None, "custom"):
            if isinstance(tool.get("name"), str):
                names.append(tool["name"])
            continue
        where = f"tools.{i}.custom"
        if "name" not in tool:
            return f"{where}.name: Field required"
        if not is_valid_tool_name(tool["name"]):
            return f"{where}.name: String should match pattern '{TOOL_NAME_PATTERN}'"
        names.append(tool["name"])
        if "input_schema" not in tool:
            return f"{where}.input_schema: Field required"
        schema = tool["input_schema"]
        if not isinstance(schema, dict):
            return f"{where}.input_schema: Input should be a valid dictionary"
        if "type" not in schema:
            return f"{where}.input_schema.type: Field required"
        if schema["type"] != "object":
            return f"{where}.input_schema.type: Input should be 'object'"
    if len(names) != len(set(names)):
        return "tools: Tool names must be unique."
    return None


class ScriptedModel:
    """A deterministic stand-in for ``anthropic.Anthropic().messages``.

    >>> model = ScriptedModel([reply("Hello!")])
    >>> model.create(model="claude-sonnet-4-6", max_tokens=100,
    ...              messages=[{"role": "user", "content": "Hi"}]).content[0].text
    'Hello!'
    """

    def __init__(
        self,
        script: Iterable[Step] = (),
        *,
        context_window: int = 200_000,
        max_output: int = 64_000,
        clock: Clock | None = None,
        id_prefix: str = "",
        cache: PromptCache | None = None,
        faults: FaultSchedule = (),
    ) -> None:
        self.script: list[Step] = list(script)
        self.faults: list[Fault] | Callable[[Request], Fault] = (
            faults if callable(faults) else list(faults)
        )
        """Faults to raise before the script is consulted: a list, one per call, or a function
        of each request (see :meth:`schedule`)."""
        self.context_window = context_window
        self.max_output = max_output
        self.clock: Clock = clock or FakeClock()
        self.cache = cache or PromptCache(clock=self.clock)
        """The prompt cache this model's requests go through (on the same clock)."""
        self.id_prefix = id_prefix
        self.requests: list[Request] = []
        self.responders: list[tuple[Callable[[Request], bool], Callable[[Request], Step]]] = []
        """Answer matching requests without using a script step (see :meth:`answer_when`)."""
        self._position = 0
        self._ids = {"msg": 0, "toolu": 0}
        self._fingerprints: dict[str, Fingerprint] = {}
        self._cut: tuple[str, Step] | None = None
        """The last request whose reply was cut at max_tokens (as a key), and its step."""
        self._lock = threading.RLock()
        """Kept by response id, for requests that asked for diagnostics (as the API does)."""

    # -- the script ------------------------------------------------------------------------

    def answer_when(
        self, matches: Callable[[Request], bool], respond: Callable[[Request], Step]
    ) -> None:
        """Answer every request that ``matches`` with ``respond(request)``, off the script.

        For requests whose timing the script cannot know, such as a compaction request that
        the harness sends whenever the context fills up: the model answers it (with a
        summary built from what was sent) and the script goes on where it was.
        """
        self.responders.append((matches, respond))

    def script_when(self, matches: Callable[[Request], bool], steps: Iterable[Step]) -> None:
        """Answer every request that ``matches`` from ``steps``, in order, off the main script.

        One conversation's own script: when several agents share this model and run at once
        (parallel subagents), the order their requests arrive in is not fixed, but each
        still gets its own replies in its own order. Match on what only that conversation
        holds, such as its task (:func:`said`).
        """
        queue = list(steps)
        used = 0

        def respond(request: Request) -> Step:
            nonlocal used
            if used >= len(queue):
                raise ScriptExhausted(
                    f"a conversation's own script has {len(queue)} step(s) and all were used. "
                    f"Last request: {_preview(request)}"
                )
            used += 1
            return queue[used - 1]

        self.answer_when(matches, respond)

    def schedule(self, *faults: Fault) -> None:
        """Raise these on the next calls, one per call, before the script is consulted.

        ``model.schedule(faults.overloaded(), faults.overloaded(), None, faults.timeout())``:
        two 529s, a call that goes through, a timeout. Retried requests do not use up script
        steps, so the script stays the conversation you meant.
        """
        if callable(self.faults):
            raise TypeError("this model's faults come from a function; it cannot also queue them")
        self.faults.extend(faults)

    def _next_fault(self, request: Request) -> Fault:
        if callable(self.faults):
            return self.faults(request)
        return self.faults.pop(0) if self.faults else None

    def extend(self, steps: Iterable[Step]) -> None:
        """Add more steps at the end of the script."""
        self.script.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self.script) - self._position

    def _next_step(self, request: Request) -> Step:
        if self._position >= len(self.script):
            raise ScriptExhausted(
                f"the script has {len(self.script)} step(s) and all were used; request "
                f"#{len(self.requests)} has no reply. Last request: {_preview(request)}"
            )
        step = self.script[self._position]
        self._position += 1
        return step

    def _new_id(self, kind: Literal["msg", "toolu"]) -> str:
        self._ids[kind] += 1
        return f"{kind}_{self.id_prefix}{self._ids[kind]:04d}"

    # -- the Messages API ------------------------------------------------------------------

    def count_tokens(
        self,
        *,
        model: str = "",
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        """Input tokens of a request, as :meth:`create` would bill them."""
        return tokens.estimate_request(messages, system=system, tools=tools)

    def create(
        self,
        *,
        model: str,
        max_tokens: int,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **extra: Any,
    ) -> Message:
        with self._lock:  # one request at a time (see the module's docstring)
            return self._create(model, max_tokens, messages, system, tools, extra)

    def _create(
        self,
        model: str,
        max_tokens: int,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None,
        tools: Sequence[Mapping[str, Any]] | None,
        extra: dict[str, Any],
    ) -> Message:
        request = Request(
            model=model,
            max_tokens=max_tokens,
            messages=copy.deepcopy(normalize(messages)),
            system=copy.deepcopy(
                system if isinstance(system, str) or system is None else [dict(b) for b in system]
            ),
            tools=copy.deepcopy([dict(t) for t in tools]) if tools is not None else None,
            extra=copy.deepcopy(extra),
            input_tokens=0,
        )
        self.requests.append(request)
        self._check(request)
        # Counted once the request is known to be well formed (the estimate reads every block).
        request = replace(
            request, input_tokens=self.count_tokens(messages=messages, system=system, tools=tools)
        )
        self.requests[-1] = request
        check_breakpoints(
            request.tools, request.system, request.messages, request.extra.get("cache_control")
        )
        if (fault := self._next_fault(request)) is not None:
            raise fault
        if request.input_tokens > self.context_window:
            raise faults.prompt_too_long(request.input_tokens, self.context_window)
        key = _regeneration_key(request)
        if self._cut is not None and self._cut[0] == key:  # the same request after a cut
            step = self._cut[1]
        else:
            responder = next(
                (respond for matches, respond in self.responders if matches(request)), None
            )
            step = responder(request) if responder is not None else self._next_step(request)
        self._cut = None
        original = step
        if callable(step) and not isinstance(step, (Reply, BaseException)):
            step = step(request)
        if isinstance(step, BaseException):
            raise step
        message = self._message(request, step)
        if message.stop_reason == "max_tokens":
            self._cut = (key, original)
        return message

    def stream(self, **params: Any) -> ScriptedStream:
        """``client.messages.stream(...)``: the same replies as :meth:`create`, as a stream."""
        return ScriptedStream(lambda: self.create(**params))

    def _check(self, request: Request) -> None:
        """Refuse a malformed request as the API does, with its status code and wording.

        In the API's order as far as it shows: a body it cannot parse first, then the
        request's fields, then the conversation. (Its cache breakpoints and its size are
        checked once it is counted, in :meth:`create`.)
        """
        for error in (
            _json_error(request),
            _max_tokens_error(request.max_tokens),
            _system_error(request.system),
            _tools_error(request.tools),
        ):
            if error is not None:
                raise faults.invalid_request(error)
        if request.max_tokens > self.max_output:
            raise faults.invalid_request(
                f"max_tokens: {request.max_tokens} > {self.max_output}, which is the maximum "
                f"allowed number of output tokens for {request.model}"
            )
        # The API merges consecutive same-role messages into one turn instead of refusing
        # them; the harness keeps roles alternating as its own rule (messages.validate), but
        # the scripted model refuses only what the API refuses.
        problems = [p for p in validate(request.messages) if p.kind != "roles_not_alternating"]
        if problems:
            raise faults.invalid_request(_api_message(problems[0], request.messages))

    def _message(self, request: Request, step: Reply) -> Message:
        # A stop sequence ends generation where it appears, before any token limit that lies
        # further on is reached, so it is applied to the scripted reply first.
        step, stop_sequence = _apply_stop_sequences(step, request.extra.get("stop_sequences") or [])
        room = self.context_window - request.input_tokens
        budget = min(request.max_tokens, room)
        content, cut = _fit(step, budget, self._new_id)
        stop_reason: StopReason
        if cut:
            stop_sequence = None
            stop_reason = (
                "max_tokens" if request.max_tokens <= room else ("model_context_window_exceeded")
            )
        elif stop_sequence is not None:
            stop_reason = "stop_sequence"
        else:
            stop_reason = step.stop_reason or ("tool_use" if step.tool_calls else "end_turn")
        # A cut reply used its whole budget, whatever part of it could be kept (a tool call
        # cut in the middle is dropped here, but its tokens were generated and are billed).
        output_tokens = (
            budget if cut else sum(tokens.estimate_block(as_block(block)) for block in content)
        )
        usage = self._usage(request, output_tokens)
        message_id = self._new_id("msg")
        # Diagnostics appear only in a reply to a request that asked for them, as from the API.
        asked = "diagnostics" in request.extra
        extra = {"diagnostics": self._diagnostics(request, message_id)} if asked else {}
        return Message(
            id=message_id,
            type="message",
            role="assistant",
            model=request.model,
            content=list(content),
            stop_reason=stop_reason,
            stop_sequence=stop_sequence,
            usage=usage,
            **extra,
        )

    def _diagnostics(self, request: Request, message_id: str) -> Diagnostics | None:
        """The API's cache diagnostics, for a request that asked for them (else ``None``)."""
        asked = request.extra.get("diagnostics")
        if not isinstance(asked, Mapping):
            return None
        current = fingerprint(
            request.model, request.tools, request.system, request.messages, request.extra
        )
        self._fingerprints[message_id] = current
        previous_id = asked.get("previous_message_id")
        if previous_id is None:  # the first turn: opted in, nothing to compare with
            return None
        previous = self._fingerprints.get(previous_id)
        if previous is None:
            return Diagnostics(
                cache_miss_reason=CacheMissPreviousMessageNotFound(
                    type="previous_message_not_found"
                )
            )
        reason = diagnose(previous, current)
        return Diagnostics(cache_miss_reason=reason) if reason is not None else None

    def _usage(self, request: Request, output_tokens: int) -> Usage:
        """Usage as the API reports it: the prompt split by the cache simulator (chapter 03)."""
        split = self.cache.process(
            model=request.model,
            tools=request.tools,
            system=request.system,
            messages=request.messages,
            automatic=request.extra.get("cache_control"),
        )
        for i in range(len(self.requests) - 1, -1, -1):  # by identity: equal requests may repeat
            if self.requests[i] is request:
                self.requests[i] = replace(request, cache=split)
                break
        return Usage(
            input_tokens=split.uncached,
            output_tokens=output_tokens,
            cache_creation_input_tokens=split.written,
            cache_read_input_tokens=split.read,
            cache_creation=CacheCreation(
                ephemeral_5m_input_tokens=split.written_5m,
                ephemeral_1h_input_tokens=split.written_1h,
            ),
            service_tier="standard",
        )


def _regeneration_key(request: Request) -> str:
    """What makes two requests "the same" for a regenerated reply: all but the model and
    ``max_tokens`` (the fields a harness changes when it re-sends a cut request)."""
    body = {
        "messages": request.messages,
        "system": request.system,
        "tools": request.tools,
        "extra": request.extra,
    }
    return json.dumps(body, sort_keys=True, default=str, ensure_ascii=False)


Content = list[TextBlock | ToolUseBlock]


def _fit(
    step: Reply, budget: int, new_id: Callable[[Literal["msg", "toolu"]], str]
) -> tuple[Content, bool]:
    """The reply's blocks that fit in ``budget`` output tokens, and whether any were cut.

    Text is cut mid-way, as a real truncated reply is. A tool call that does not fit whole is
    dropped. (The live API may instead return it incomplete; either way a harness must not
    run the calls of a truncated reply.)
    """
    content: Content = []
    left = budget
    if step.text is not None:
        cost = tokens.BLOCK_OVERHEAD + tokens.estimate_text(step.text)
        if cost <= left:
            content.append(TextBlock(type="text", text=step.text))
            left -= cost
        else:
            partial = tokens.truncate_text(step.text, left - tokens.BLOCK_OVERHEAD)
            if partial:
                content.append(TextBlock(type="text", text=partial))
            return content, True
    for call in step.tool_calls:
        cost = tokens.estimate_block({"type": "tool_use", "name": call.name, "input": call.input})
        if cost > left:
            return content, True
        content.append(
            ToolUseBlock(
                type="tool_use", id=new_id("toolu"), name=call.name, input=dict(call.input)
            )
        )
        left -= cost
    return content, False


def _apply_stop_sequences(step: Reply, stop_sequences: Sequence[str]) -> tuple[Reply, str | None]:
    """Cut the reply's text at the earliest stop sequence; generation ends there, so the
    tool calls that would have followed the text are never made."""
    if step.text is None:
        return step, None
    hits = [(step.text.find(s), s) for s in stop_sequences if s and s in step.text]
    if not hits:
        return step, None
    position, sequence = min(hits)
    return Reply(text=step.text[:position] or None), sequence
