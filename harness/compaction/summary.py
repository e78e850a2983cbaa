"""Tier 3: full compaction. Replace the conversation with a summary the model writes.

What it does, in order (Claude Code's design, numbers as observed in the CLI):

1. Ask for the summary *in the same conversation*: the request is the conversation as it
   stands plus one final instruction, with the same system prompt and tools. Its prefix is
   what the previous request cached, so the summary request reads it from cache instead of
   paying for ~100K tokens again. (A fresh "summarise this transcript" prompt would not.)
2. The model writes an ``<analysis>`` first (room to think), then the ``<summary>``. The
   analysis is dropped; only the summary is kept.
3. If the summary request is itself too long (the conversation already overflowed), drop
   the oldest API rounds and try again, at most 3 times, then fail with a clear error.
4. Build the new conversation: the summary (marked as a compact summary), the files read
   most recently, re-read from disk (at most 5, about 5K tokens each, 50K in all), and any
   pinned fact (``harness.compaction.pinned``) the summary lost.

:func:`summarise` does all this and leaves the agent's conversation as it was: the new one
is in its report, ready for ``agent.apply``. :func:`compact` (what ``/compact`` runs) does
both. The summary request goes through ``agent.call``, like every model call, so whatever
wraps the agent's calls (cache breakpoints, retries) covers it too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anthropic

from harness import messages as m
from harness import tokens
from harness.compaction.events import Compacted
from harness.compaction.pinned import PinnedFacts, put_back_detail
from harness.compaction.reinject import recently_read_files, reinject_files
from harness.events import HookReported, describe_failure
from harness.loop import BaseAgent, ModelRequest, Rewrite
from harness.model import faults
from harness.tools.base import ToolContext
from harness.tools.workspace import Workspace

SUMMARY_MAX_TOKENS = 20_000  # Claude Code's cap on a summary's length
MAX_PTL_RETRIES = 3

COMPACT_MARKER = "Your task is to create a detailed summary of the conversation so far"
COMPACT_INSTRUCTION = f"""{COMPACT_MARKER}, so that the work can continue in a new context \
without losing anything that matters. Do not call any tools: answer with text only.

First, inside <analysis> tags, go through the conversation in order and note what was \
asked, what was done, what was decided and why, and what failed.

Then write the summary inside <summary> tags, with these sections:
1. Primary request and intent: everything the user asked for, in their words where it matters.
2. Rules and constraints: instructions the user or the project gave that still apply.
3. Files and code: the files read or changed, and what matters about each.
4. Errors and fixes: what went wrong and how it was fixed (and what did not work).
5. Decisions: what was settled, so it is not reopened.
6. Pending tasks: what is still to do.
7. Current work: exactly what was being done just before this summary.
8. Next step: the next step, if it follows directly from the current work."""

SUMMARY_PREAMBLE = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)
CONTINUE = (
    "Continue the conversation from where it left off without asking the user any further "
    "questions. Continue with the last task that you were asked to work on."
)
REREAD = "(read again after compaction)"
"""How a file put back after compaction is labelled, after its path."""
PTL_RETRY_MARKER = "[Earlier messages were dropped so that this compaction request fits.]"


class CompactionError(RuntimeError):
    """Full compaction could not produce a summary (too long after retries, API error, no text)."""


# -- hooks and the report -----------------------------------------------------------------------


PreCompactHook = Callable[[str], str | None]
"""Gets the trigger (``manual``, ``auto``, ...); may return extra summary instructions."""
PostCompactHook = Callable[["CompactionReport"], None]
"""Gets the report, once the new conversation is ready (``report.messages``)."""


@dataclass
class CompactionHooks:
    """Your code around every full compaction, as Claude Code's PreCompact hook.

    A hook that raises is reported as an event and otherwise ignored.
    """

    pre_compact: list[PreCompactHook] = field(default_factory=list)
    post_compact: list[PostCompactHook] = field(default_factory=list)


@dataclass(frozen=True)
class CompactionCheck:
    """What a :class:`CompactionPoint` says before a compaction: stop it, or add instructions."""

    block: bool = False
    reason: str = ""
    instructions: str = ""
    """Added to the summary instruction (Claude Code: a PreCompact hook's output)."""


class CompactionPoint:
    """A plugin that wants a say before every full compaction, automatic or asked for.

    :func:`summarise` (which both ``AutoCompact`` and ``/compact``'s :func:`compact` use)
    calls :meth:`before_compaction` on each of the agent's plugins that is one, with the
    trigger (``"auto"`` or ``"manual"``) and the user's instructions. Chapter 13's hooks from
    settings run Claude Code's PreCompact hooks here; a block stops the compaction with a
    :class:`CompactionError` (since Claude Code 2.1.105 a PreCompact hook may block it).
    """

    def before_compaction(
        self, agent: BaseAgent, trigger: str, instructions: str
    ) -> CompactionCheck | None:
        return None


@dataclass(frozen=True)
class CompactionReport:
    trigger: str
    tokens_before: int
    tokens_after: int
    messages_summarised: int
    """How many messages the summary replaced (all of them: the new context is fresh)."""
    rounds_dropped: int
    """Oldest API rounds dropped to make the summary request fit (the PTL retry)."""
    attempts: int
    summary: str
    reinjected_files: tuple[str, ...]
    pinned_reinjected: tuple[str, ...]
    """Pinned facts the summary lost and that were put back."""
    summary_request_cache_read: int
    """Prompt tokens of the summary request that were read from cache."""
    messages: list[m.MessageDict] = field(default_factory=list, repr=False)
    """The new conversation (not yet the agent's: ``agent.apply(report.rewrite(...))``)."""

    @property
    def detail(self) -> str:
        """What happened, in a few words, for the event that reports it."""
        out = f"summarised {self.messages_summarised} messages"
        if self.reinjected_files:
            out += f"; re-read {len(self.reinjected_files)} files"
        if self.pinned_reinjected:
            out += f"; {put_back_detail(len(self.pinned_reinjected))}"
        return out

    def rewrite(self, trigger: str) -> Rewrite:
        """The new conversation as a :class:`~harness.loop.Rewrite`, reported for ``trigger``."""
        event = Compacted("summary", trigger, self.tokens_before, self.tokens_after, self.detail)
        return Rewrite(list(self.messages), event)


# -- the pieces ---------------------------------------------------------------------------------


def summary_messages(
    conversation: Sequence[m.MessageDict], instruction: str
) -> list[m.MessageDict]:
    """The conversation plus the compaction instruction at the end (alternation kept)."""
    out = list(conversation)
    if out and out[-1]["role"] == "user":
        out[-1] = {"role": "user", "content": [*m.blocks(out[-1]), m.text(instruction)]}
    else:
        out.append(m.user(instruction))
    return out


class _HasMessages(Protocol):
    @property
    def messages(self) -> Sequence[Mapping[str, Any]]: ...


def is_compaction_request(request: _HasMessages) -> bool:
    """True for a request (sent or received) whose last message carries the instruction."""
    last = request.messages[-1] if request.messages else {}
    return last.get("role") == "user" and COMPACT_MARKER in m.text_of(last)


def extract_summary(text: str) -> str:
    """The ``<summary>`` part of the reply; the ``<analysis>`` is dropped."""
    found = re.search(r"<summary>(.*?)(?:</summary>|\Z)", text, re.DOTALL)
    if found:
        return found.group(1).strip()
    return re.sub(r"<analysis>.*?(?:</analysis>|\Z)", "", text, flags=re.DOTALL).strip()


def _too_long_by(error: anthropic.BadRequestError) -> int | None:
    """How many tokens over the limit a prompt-too-long error says, or None if it is not one."""
    sizes = faults.prompt_too_long_sizes(error)
    return sizes[0] - sizes[1] if sizes else None


def drop_oldest_rounds(
    conversation: Sequence[m.MessageDict], tokens_to_free: int
) -> tuple[list[m.MessageDict], int]:
    """Drop whole API rounds from the front until ``tokens_to_free`` are gone (one at least).

    Whole rounds, so no ``tool_use`` loses its ``tool_result``; a marker user message goes
    first if what is left starts with the assistant. Returns the rest and the rounds dropped.
    The marker left by an earlier retry is not a round: it is set aside, so each retry drops
    real rounds (and counts only those) instead of dropping the marker and putting it back.
    """
    if conversation and conversation[0] == m.user(PTL_RETRY_MARKER):
        conversation = conversation[1:]
    rounds = m.api_rounds(list(conversation))
    dropped, freed = 0, 0
    while len(rounds) > 1 and (dropped == 0 or freed < tokens_to_free):
        freed += sum(tokens.estimate_message(msg) for msg in rounds.pop(0))
        dropped += 1
    rest = [msg for round_ in rounds for msg in round_]
    if rest and rest[0]["role"] != "user":
        rest.insert(0, m.user(PTL_RETRY_MARKER))
    return rest, dropped


# -- full compaction ----------------------------------------------------------------------------


def summarise(
    agent: BaseAgent,
    *,
    pinned: PinnedFacts | None = None,
    trigger: str = "manual",
    instructions: str = "",
    hooks: CompactionHooks | None = None,
    summary_max_tokens: int = SUMMARY_MAX_TOKENS,
) -> CompactionReport:
    """Ask for a summary and build the new conversation; raise :class:`CompactionError`.

    The agent's conversation is not touched: the new one is ``report.messages``. The request
    goes through ``agent.call``, so it carries cache breakpoints when the agent's requests do
    (and reads the prefix they cached). ``summary_max_tokens`` is the summary's output
    budget (Claude Code: 20K); lower it for a model whose output limit is smaller, or the
    API refuses the request.
    """
    hooks = hooks or CompactionHooks()
    base = agent.request()
    before = tokens.estimate_request(base.messages, system=base.system, tools=base.tools)
    extra = [s for hook in hooks.pre_compact if (s := _run_hook(agent, hook, trigger))]
    extra += _at_compaction_points(agent, trigger, instructions)
    instruction = "\n\n".join(part for part in (COMPACT_INSTRUCTION, instructions, *extra) if part)
    conversation, dropped, attempts = list(agent.messages), 0, 0
    while True:
        attempts += 1
        request = ModelRequest(
            model=base.model,
            max_tokens=summary_max_tokens,
            messages=summary_messages(conversation, instruction),
            system=base.system,
            tools=base.tools,
            purpose="compaction",
        )
        try:
            reply = agent.call(request)  # billed by the agent's meter, like every call
            break
        except anthropic.BadRequestError as error:
            over = _too_long_by(error)
            if over is None:
                raise CompactionError(
                    f"the summary request was refused: {error.message}"
                ) from error
            if attempts > MAX_PTL_RETRIES:
                raise CompactionError(
                    f"the summary request was still too long after {MAX_PTL_RETRIES} retries "
                    f"dropping {dropped} of the oldest rounds"
                ) from error
            # Room for the prompt and for the summary: a prompt that only just fits leaves
            # the reply no space, and a summary cut inside its <analysis> is no summary.
            conversation, n = drop_oldest_rounds(conversation, over + summary_max_tokens)
            if n == 0:  # one round left: the same request would be refused again
                earlier = f", after dropping {dropped} of the oldest rounds" if dropped else ""
                raise CompactionError(
                    f"the summary request is too long even with only the last round left{earlier}"
                ) from error
            dropped += n
        except anthropic.APIError as error:
            raise CompactionError(f"the summary request failed: {error}") from error
    if reply.stop_reason in ("max_tokens", "model_context_window_exceeded"):
        raise CompactionError(
            f"the summary was cut off ({reply.stop_reason}); a partial summary would lose work"
        )
    summary = extract_summary("".join(b.text for b in reply.content if b.type == "text"))
    if not summary:
        raise CompactionError("the model returned no summary text")

    new_blocks = [m.text(SUMMARY_PREAMBLE + summary)]
    context = ToolContext(workspace=Workspace(agent.workspace), clock=agent.clock)
    files = reinject_files(recently_read_files(agent.messages), context)
    new_blocks += [m.text(f"Contents of {path} {REREAD}:\n{text}") for path, text in files]
    kept = (pinned or PinnedFacts()).put_back([m.user(new_blocks)], system=base.system)
    new = kept.messages
    if trigger != "manual":
        new = [m.user([*m.blocks(new[0]), m.text(CONTINUE)])]
    report = CompactionReport(
        trigger=trigger,
        tokens_before=before,
        tokens_after=tokens.estimate_request(new, system=base.system, tools=base.tools),
        messages_summarised=len(agent.messages),
        rounds_dropped=dropped,
        attempts=attempts,
        summary=summary,
        reinjected_files=tuple(path for path, _ in files),
        pinned_reinjected=tuple(f.text for f in kept.facts),
        summary_request_cache_read=reply.usage.cache_read_input_tokens or 0,
        messages=new,
    )
    for hook in hooks.post_compact:
        _run_hook(agent, hook, report)
    return report


def compact(
    agent: BaseAgent,
    *,
    pinned: PinnedFacts | None = None,
    trigger: str = "manual",
    instructions: str = "",
    hooks: CompactionHooks | None = None,
    summary_max_tokens: int = SUMMARY_MAX_TOKENS,
) -> CompactionReport:
    """:func:`summarise` the conversation, then put the summary in its place (``/compact``).

    On failure (a :class:`CompactionError`) the conversation is left exactly as it was.
    """
    report = summarise(
        agent,
        pinned=pinned,
        trigger=trigger,
        instructions=instructions,
        hooks=hooks,
        summary_max_tokens=summary_max_tokens,
    )
    agent.apply(report.rewrite(trigger))
    return report


def _at_compaction_points(agent: BaseAgent, trigger: str, instructions: str) -> list[str]:
    """Ask every :class:`CompactionPoint` plugin; raise :class:`CompactionError` on a block."""
    added: list[str] = []
    for plugin in agent.plugins:
        if not isinstance(plugin, CompactionPoint):
            continue
        try:
            check = plugin.before_compaction(agent, trigger, instructions)
        except Exception as error:  # a broken plugin is reported, never fatal
            agent.emit(
                HookReported(
                    "PreCompact", "", "failed", describe_failure(plugin.before_compaction, error)
                )
            )
            continue
        if check is None:
            continue
        if check.block:
            raise CompactionError(f"a PreCompact hook blocked it: {check.reason or 'no reason'}")
        if check.instructions:
            added.append(check.instructions)
    return added


def _run_hook(agent: BaseAgent, hook: Callable[[Any], Any], argument: object) -> str | None:
    """Run a compaction hook; a failure is reported as an event and otherwise ignored."""
    try:
        result = hook(argument)
    except Exception as error:
        agent.emit(
            HookReported(
                "PreCompact" if isinstance(argument, str) else "PostCompact",
                "",
                "failed",
                describe_failure(hook, error),
            )
        )
        return None
    return result if isinstance(result, str) else None
