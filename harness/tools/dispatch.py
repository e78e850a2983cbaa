"""Running the model's tool calls: validate, hook, ask, run, and always answer.

Every ``tool_use`` gets exactly one ``tool_result``, in the order of the calls, whatever
happens: an unknown tool, an input that is not a JSON object, arguments that fail validation,
a path the operating system cannot take, a denied permission, a blocked hook, or an exception
inside the tool all come back to the model as ``is_error: true`` with a message it can act
on. Nothing a tool call contains can crash the loop.

Every result is held to a size: over the storage threshold it is stored and the model gets a
preview (``harness.tools.storage``); whatever is still over ``MAX_RESULT_CHARS`` (a tool that
is never stored, an error, a hook's rewrite) is cut, head and tail kept. And every result is
text the API accepts: characters that are not valid Unicode (a file name with odd bytes) are
replaced, and an error never shows the workspace's absolute path.

The results of one turn also share a budget (:data:`TURN_RESULTS_TOKENS`, or a quarter of a
smaller window): five parallel reads of 40K-token files each fit on their own, and together
would overflow the next request. Past the budget, the largest results are stored too, largest
first, until the rest fit, so one turn can never push the request past the window on its own.

Read-only calls next to each other in one reply run in parallel threads (Claude Code
batches consecutive concurrency-safe calls the same way); any other call runs alone, in its
place in the order, so a write never races a read of the same file.

An approver may answer *later* (:class:`~harness.tools.permissions.Deferred`: a person will
decide, maybe in another process, chapter 09). Then that call does not run, nor do the calls
after it in the reply (they may depend on it); the calls before it run as usual. Each call
that did not run is answered with a placeholder saying why, so the conversation stays valid,
and the runner ends the run by raising :class:`~harness.loop.StopRun` with an
:class:`~harness.events.AwaitingApproval` event.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from harness import tokens
from harness.events import (
    AwaitingApproval,
    Event,
    HookReported,
    PermissionDecided,
    ToolFinished,
    ToolStarted,
    describe_failure,
)
from harness.loop import StopRun, ToolProgress
from harness.messages import Block, tool_result, valid_text
from harness.tools.base import Tool, ToolContext, ToolError, ToolOutput, ToolRegistry
from harness.tools.hooks import (
    HookDecision,
    Hooks,
    PostToolUseResult,
    ToolUse,
    apply_pre_hook,
    with_hook_ask,
)
from harness.tools.outputs import (
    Content,
    input_problem,
    kept_blocks,
    output_text,
)
from harness.tools.permissions import (
    Approval,
    ApprovalRequest,
    Approver,
    Deferred,
    Permissions,
    deny_all,
)
from harness.tools.storage import MAX_RESULT_CHARS, ResultStorage, cap_output

# Claude Code runs at most 10 tool calls at once (CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY).
MAX_PARALLEL = 10

# Claude Code holds the tool results of one message to 200,000 characters (observed:
# MAX_TOOL_RESULTS_PER_MESSAGE_CHARS, in third-party analyses of the 2.1 CLI); past it, the
# largest fresh results are stored. We count tokens (harness.tokens) instead of characters,
# about 50K for 200K characters of ASCII, so text at one token per character (Chinese, say)
# cannot slip through at four times the size.
TURN_RESULTS_TOKENS = 50_000


def turn_budget(window: int) -> int:
    """Tokens one turn's tool results may take: 50K, or a quarter of a smaller window (our
    choice: a 40K window that auto-compacts at 23K has 17K above it, of which 10K may go to
    results and the rest to the reply that asked for them)."""
    return max(1, min(TURN_RESULTS_TOKENS, window // 4))


def awaiting_approval_text(ticket: str) -> str:
    """The placeholder result of a call that waits for a person's decision."""
    return (
        f"Not run: this call waits for a person's approval ({ticket}). The run stopped here "
        "until it is decided."
    )


def waiting_text(ticket: str) -> str:
    """The placeholder result of a later call in the same reply: it waits too."""
    return f"Not run: this call comes after one that waits for a person's approval ({ticket})."


def tool_use_of(block: dict[str, Any]) -> tuple[ToolUse, str | None]:
    """The call a ``tool_use`` block makes, and what is wrong with its input, if anything.

    The API promises an object of valid text for ``input``; a model behind a gateway, or a
    buggy one, may send something else. A JSON string holding an object is taken for that
    object (the mistake gateways make); anything else is an error for the model. Either way
    the block is mended in place (it is the one in the conversation): its ``input`` becomes
    an object and its text valid Unicode, so the API accepts the conversation next time.
    """
    raw = block.get("input")
    problem = None
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            raw = parsed
    if not isinstance(raw, Mapping):
        problem = (
            f"The input of this call was not a JSON object but {type(raw).__name__} "
            f"{valid_text(json.dumps(raw, default=str, ensure_ascii=False))[:80]}. Call the "
            "tool again with an object of named arguments."
        )
        raw = {}
    text = json.dumps(raw, default=str, ensure_ascii=False)
    if valid_text(text) != text:
        problem = (
            "The input of this call is not valid Unicode text (it has a lone surrogate). "
            "Call the tool again with plain text."
        )
        raw = json.loads(valid_text(text))
    block["input"] = dict(raw)
    block["name"] = name = valid_text(str(block.get("name", "")))
    return ToolUse(str(block.get("id", "")), name, dict(raw)), problem


@dataclass
class _Call:
    """One tool call on its way through the runner."""

    use: ToolUse
    tool: Tool[Any] | None = None
    output: ToolOutput | None = None
    error: str | None = None
    deferred: Deferred | None = None
    """The approver will decide later: the call does not run now."""
    waiting: str | None = None
    """The ticket of an earlier call in the reply that waits for a decision: this one waits."""


@dataclass
class ToolRunner:
    """Everything around each tool call: validation, hooks, permissions, storage, threads.

    It is what the loop's ``ToolCalls`` protocol asks for: ``definitions()``, ``run(calls)``
    and ``finished``.
    """

    registry: ToolRegistry
    context: ToolContext
    permissions: Permissions = field(default_factory=Permissions)
    approver: Approver = deny_all
    hooks: Hooks = field(default_factory=Hooks)
    storage: ResultStorage = field(default_factory=ResultStorage)
    """Where oversized results go (a temporary folder of its own unless you give one)."""
    finished: dict[str, Block] = field(default_factory=dict)
    """The results of the current batch of calls, recorded as soon as they exist."""
    turn_budget: int = TURN_RESULTS_TOKENS
    """Tokens the results of one reply's calls may take together before the largest are
    stored (``Agent`` sets it from the context window with :func:`turn_budget`)."""

    progress: Callable[[ToolProgress], None] | None = None
    """Told as each batch of calls starts and as its results exist (``Agent`` passes its
    :meth:`~harness.loop.BaseAgent.tool_progress`, which tells the plugins)."""

    def definitions(self) -> list[dict[str, Any]]:
        """The registered tools, as the API takes them in ``tools=[...]``."""
        return self.registry.definitions()

    def _report(self, progress: ToolProgress) -> None:
        if self.progress is not None:
            self.progress(progress)

    def run(self, calls: Iterable[Block]) -> Generator[Event, None, list[Block]]:
        """Run one reply's tool calls; yields events, returns the ``tool_result`` blocks.

        Between the first tool starting and the last result being recorded in
        :attr:`finished` nothing is yielded, so a caller that stops iterating can never
        lose a result of a tool that already ran (and so never runs it twice). Each batch's
        results are recorded as soon as the batch is done, and reported to :attr:`progress`
        (the transcript journals them), as is each batch before it starts: a crash between
        a tool's side effect and the results' message then loses nothing, and a call that
        started without a recorded result is known to have maybe run.
        """
        self.finished = {}
        prepared: list[_Call] = []
        held: _Call | None = None  # the call that waits for a person's decision, if any
        for block in calls:
            use, problem = tool_use_of(block)
            if held is not None and held.deferred is not None:  # waits behind that call
                prepared.append(_Call(use, waiting=held.deferred.ticket))
                continue
            yield ToolStarted(use.tool_use_id, use.name, use.input)
            if problem is not None:
                prepared.append(_Call(use, error=problem))
                continue
            try:
                call = yield from self._prepare(use)
            except Exception as error:  # a check that broke on this input: answer, go on
                reason = f"{type(error).__name__}: {error}"
                call = _Call(use, error=f"The harness could not check this call ({reason}).")
            prepared.append(call)
            if call.deferred is not None:
                held = call
        events: list[Event] = []
        finals: list[tuple[Content, bool, str | None]] = []
        for batch in _batches(prepared):
            running = tuple(c.use.tool_use_id for c in batch if c.tool is not None)
            if running:
                self._report(ToolProgress("started", running))
            self._execute(batch)
            done = [self._finish(call, events) for call in batch]  # PostToolUse hooks too
            for call, (content, is_error, _) in zip(batch, done, strict=True):
                self.finished[call.use.tool_use_id] = tool_result(
                    call.use.tool_use_id, content, is_error=is_error
                )
            finals += done
            ids = tuple(c.use.tool_use_id for c in batch)
            self._report(ToolProgress("finished", ids, tuple(self.finished[i] for i in ids)))
        contents = self._hold_to_budget(prepared, finals)
        for call, content, (_, is_error, _) in zip(prepared, contents, finals, strict=True):
            self.finished[call.use.tool_use_id] = tool_result(
                call.use.tool_use_id, content, is_error=is_error
            )
            events.append(
                ToolFinished(call.use.tool_use_id, call.use.name, output_text(content), is_error)
            )
        yield from events
        if held is not None and held.deferred is not None:  # the rest waits for a person
            raise StopRun(
                AwaitingApproval(
                    held.deferred.ticket,
                    held.use.tool_use_id,
                    held.use.name,
                    held.use.input,
                    held.deferred.reason,
                    tuple(c.use.tool_use_id for c in prepared if c.waiting is not None),
                )
            )
        return [self.finished[call.use.tool_use_id] for call in prepared]

    def _prepare(self, use: ToolUse) -> Generator[Event, None, _Call]:
        tool = self.registry.get(use.name)
        if tool is None:
            known = ", ".join(self.registry.names()) or "none"
            return _Call(use, error=f"Unknown tool {use.name!r}. Available tools: {known}.")
        if (problem := input_problem(tool, use)) is not None:
            return _Call(use, error=problem)
        hook_decision: HookDecision | None = None
        hook_reason = ""
        for hook in self.hooks.pre(use.name):
            try:
                verdict = hook(use)
            except Exception as error:  # a broken hook is reported, never fatal
                yield HookReported("PreToolUse", use.name, "failed", describe_failure(hook, error))
                continue
            if verdict is None:
                continue
            yield from verdict.events
            use, blocked = yield from apply_pre_hook(use, verdict)
            if blocked is not None:
                return _Call(use, error=blocked)
            if verdict.decision == "ask" or (verdict.decision == "allow" and not hook_decision):
                hook_decision, hook_reason = verdict.decision, verdict.reason
        if (problem := input_problem(tool, use)) is not None:  # a hook rewrote it badly
            return _Call(use, error=problem)
        allowed = f": {hook_reason}" if hook_reason else ""
        decision, reason = self.permissions.decide(
            use.name,
            use.input,
            read_only=tool.read_only,
            workspace=self.context.workspace,
            pre_approved=(
                f"a PreToolUse hook allowed it{allowed}" if hook_decision == "allow" else None
            ),
        )
        decision, reason = with_hook_ask(decision, reason, hook_decision, hook_reason)
        if decision == "ask":
            try:
                answer = self.approver(
                    ApprovalRequest(use.tool_use_id, use.name, use.input, reason)
                )
            except Exception as error:  # nobody could be asked (closed stdin, a broken widget)
                answer = Approval(False, f"the approver failed ({type(error).__name__}: {error})")
            if isinstance(answer, Deferred):  # a person decides later: it does not run now
                return _Call(use, deferred=Deferred(answer.ticket, answer.reason or reason))
            approval = answer if isinstance(answer, Approval) else Approval(bool(answer))
            decision = "allow" if approval.approved else "deny"
            reason = (
                f"{reason}; {approval.reason or ('approved' if approval.approved else 'refused')}"
            )
        yield PermissionDecided(use.tool_use_id, use.name, decision, reason)
        if decision == "deny":
            return _Call(use, error=f"Permission to use {use.name} was denied: {reason}.")
        return _Call(use, tool=tool)

    def _execute(self, batch: list[_Call]) -> None:
        runnable = [c for c in batch if c.tool is not None]
        if len(runnable) > 1:
            with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(runnable))) as pool:
                list(pool.map(self._execute_one, runnable))
        else:
            for call in runnable:
                self._execute_one(call)

    def _execute_one(self, call: _Call) -> None:
        assert call.tool is not None
        context = replace(self.context, tool_use_id=call.use.tool_use_id, storage=self.storage)
        try:
            call.output = call.tool(call.use.input, context)
        except ToolError as error:
            call.error = str(error)
        except Exception as error:  # the tool's own bug: report it, keep the loop going
            call.error = f"{call.use.name} failed with {type(error).__name__}: {error}"

    def _finish(self, call: _Call, events: list[Event]) -> tuple[Content, bool, str | None]:
        """The result's content, whether it is an error, and the full text if it may still
        be stored to keep the turn within its budget (a result that was not stored already)."""
        if call.deferred is not None:  # it did not run: no hook sees it, nothing is stored
            return awaiting_approval_text(call.deferred.ticket), True, None
        if call.waiting is not None:
            return waiting_text(call.waiting), True, None
        is_error = call.error is not None
        blocks = kept_blocks(call.output) if call.error is None else None
        content = call.error if call.error is not None else output_text(call.output or "")
        if not content.strip():
            content = f"({call.use.name} completed with no output)"
        for hook in self.hooks.post(call.use.name):
            try:
                answer = hook(call.use, content, is_error)
            except Exception as error:
                events.append(
                    HookReported(
                        "PostToolUse", call.use.name, "failed", describe_failure(hook, error)
                    )
                )
                continue
            changed = answer.text if isinstance(answer, PostToolUseResult) else answer
            if isinstance(answer, PostToolUseResult):
                events.extend(answer.events)
            if changed is not None:
                events.append(HookReported("PostToolUse", call.use.name, "changed result", changed))
                content, blocks = changed, None
        if blocks is not None:  # an image, or tool references: sent as blocks, never stored
            return blocks, False, None
        content = valid_text(content)
        storable: str | None = None
        if not is_error and call.tool is not None and call.tool.spill:
            spilled = self.storage.spill(call.use.tool_use_id, content)
            storable = content if spilled == content else None
            content = spilled
        elif not is_error and call.tool is not None:
            # Never stored for its own size (read_file reads stored results back), but it
            # counts against the turn's budget like any other: five parallel reads must fit.
            storable = content
        if is_error:
            content = self._without_root(content)
        return cap_output(content, MAX_RESULT_CHARS), is_error, storable

    def _hold_to_budget(
        self, calls: list[_Call], finals: list[tuple[Content, bool, str | None]]
    ) -> list[Content]:
        """Store the largest results, largest first, until the turn's results fit its budget.

        Only results of tools that ran (never errors) and that were not stored already; the
        rest count as they are. A tool that opts out of storage for its own size (``read_file``,
        which reads stored results back) is stored here too: Claude Code exempts its Read
        instead, whose own cap is a 25K-token read, but on a small window five such reads
        would overflow it. The model is told to read a stored result with offset and limit.
        """
        contents = [content for content, _, _ in finals]
        sizes = [tokens.estimate_content(content) for content in contents]
        candidates = sorted(
            (i for i, (_, _, storable) in enumerate(finals) if storable is not None),
            key=lambda i: -sizes[i],
        )
        for i in candidates:
            if sum(sizes) <= self.turn_budget:
                break
            full = finals[i][2]
            assert full is not None
            stored = cap_output(
                self.storage.spill(calls[i].use.tool_use_id, full, force=True), MAX_RESULT_CHARS
            )
            if (size := tokens.estimate_text(stored)) < sizes[i]:  # a preview of a short
                contents[i], sizes[i] = stored, size  # result can be longer than the result
        return contents

    def _without_root(self, message: str) -> str:
        """An error message with the workspace's absolute path taken out (an exception's text
        may carry it): it says nothing the relative path does not, and it tells a reader of
        the transcript where your files live."""
        root = str(self.context.workspace.root)
        return message.replace(root + "/", "").replace(root, ".")


def _batches(calls: list[_Call]) -> list[list[_Call]]:
    """Consecutive read-only calls share a batch (run in parallel); others run alone."""
    batches: list[list[_Call]] = []
    for call in calls:
        parallel = call.tool is not None and call.tool.read_only
        if (
            parallel
            and batches
            and all(c.tool is not None and c.tool.read_only for c in batches[-1])
        ):
            batches[-1].append(call)
        else:
            batches.append([call])
    return batches
