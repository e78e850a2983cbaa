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
   pinned fact the summary lost.

Pinned facts answer the most common complaint about compaction ("it forgot the rules"):
rules from CLAUDE.md, constraints the user stated, open tasks. After every compaction each
one is looked for in the new context; a missing one is put back, and the report says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic

from harness import messages as m
from harness import tokens
from harness.events import HookReported
from harness.loop import Agent, ModelRequest
from harness.model.scripted import Reply, Request
from harness.prompt import PromptCaching, with_breakpoints
from harness.tools.base import ToolContext, ToolError
from harness.tools.builtins import read_file
from harness.tools.hooks import describe_failure

SUMMARY_MAX_TOKENS = 20_000  # Claude Code's cap on a summary's length
MAX_PTL_RETRIES = 3
REINJECT_MAX_FILES = 5
REINJECT_TOKENS_PER_FILE = 5_000
# Claude Code's observed numbers: at most 5 files, ~5K tokens each, ~50K in all. With these
# caps the per-file one binds first (5 x 5K = 25K); the total matters if it is raised.
REINJECT_TOKEN_BUDGET = 50_000

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
PTL_RETRY_MARKER = "[Earlier messages were dropped so that this compaction request fits.]"


class CompactionError(RuntimeError):
    """Full compaction could not produce a summary (too long after retries, API error, no text)."""


# -- pinned facts -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PinnedFact:
    text: str
    source: str
    """Where it came from: ``CLAUDE.md``, ``user``, ``task``..."""


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


@dataclass
class PinnedFacts:
    """Facts that must survive every compaction."""

    facts: list[PinnedFact] = field(default_factory=list)

    def add(self, text: str, source: str = "user") -> None:
        self.facts.append(PinnedFact(text.strip(), source))

    def missing_from(
        self,
        conversation: Sequence[m.MessageDict],
        *,
        system: str | Sequence[Mapping[str, Any]] | None = None,
    ) -> list[PinnedFact]:
        """Facts whose text does not appear in the conversation (case and spacing ignored).

        A literal check, on purpose: a summary that paraphrases a rule ("use British English"
        for "always write colour, not color") has lost its exact wording, and the fact goes back.
        The system prompt counts as context too (CLAUDE.md rules live there, chapter 03), so a
        rule it already carries is not repeated.
        """
        parts = [
            str(b.get("text", b.get("content", ""))) for msg in conversation for b in m.blocks(msg)
        ]
        if isinstance(system, str):
            parts.append(system)
        elif system:
            parts += [str(block.get("text", "")) for block in system]
        haystack = _normalise("\n".join(parts))
        return [f for f in self.facts if _normalise(f.text) not in haystack]


# -- the report -----------------------------------------------------------------------------------


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


def is_compaction_request(request: Request | ModelRequest) -> bool:
    """True for a request whose last message carries the compaction instruction."""
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
    found = re.search(r"prompt is too long: (\d+) tokens > (\d+) maximum", str(error.message))
    return int(found.group(1)) - int(found.group(2)) if found else None


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


# -- full compaction ----------------------------------------------------------------------------


def compact(
    agent: Agent,
    *,
    pinned: PinnedFacts | None = None,
    trigger: str = "manual",
    instructions: str = "",
    cache: bool | None = None,
    summary_max_tokens: int = SUMMARY_MAX_TOKENS,
) -> CompactionReport:
    """Replace ``agent.messages`` with a summary; raises :class:`CompactionError` on failure.

    On failure the conversation is left exactly as it was. The summary request carries cache
    breakpoints when the agent's requests do (``cache=None``: it has a ``PromptCaching``
    plugin), to read the prefix they cached; an agent that never caches would only pay the
    1.25x write for nothing. ``summary_max_tokens`` is the
    summary's output budget (Claude Code: 20K); lower it for a model whose output limit is
    smaller, or the API refuses the request.
    """
    base = agent.request()
    caching = any(isinstance(p, PromptCaching) for p in agent.plugins) if cache is None else cache
    before = tokens.estimate_request(base.messages, system=base.system, tools=base.tools)
    extra = [s for hook in agent.tools.hooks.pre_compact if (s := _run_hook(agent, hook, trigger))]
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
        )
        request = with_breakpoints(request) if caching else request
        try:
            reply = agent.model.create(**request.kwargs())
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
                raise CompactionError(
                    f"the summary request is too long even with only the last round left "
                    f"(after dropping {dropped} of the oldest rounds)"
                ) from error
            dropped += n
        except anthropic.APIError as error:
            raise CompactionError(f"the summary request failed: {error}") from error
    agent.meter.record(base.model, reply.usage)  # a compaction is a model call: it is billed
    if reply.stop_reason in ("max_tokens", "model_context_window_exceeded"):
        raise CompactionError(
            f"the summary was cut off ({reply.stop_reason}); a partial summary would lose work"
        )
    summary = extract_summary("".join(b.text for b in reply.content if b.type == "text"))
    if not summary:
        raise CompactionError("the model returned no summary text")

    new_blocks = [m.text(SUMMARY_PREAMBLE + summary)]
    files = reinject_files(recently_read_files(agent.messages), agent.tools.context)
    new_blocks += [
        m.text(f"Contents of {path} (read again after compaction):\n{text}") for path, text in files
    ]
    lost = (pinned or PinnedFacts()).missing_from([m.user(new_blocks)], system=base.system)
    if lost:
        listing = "\n".join(f"- {f.text} (from {f.source})" for f in lost)
        new_blocks.append(m.text(f"Pinned facts (kept across every compaction):\n{listing}"))
    if trigger != "manual":
        new_blocks.append(m.text(CONTINUE))
    old_count = len(agent.messages)
    agent.messages[:] = [m.user(new_blocks)]
    after = tokens.estimate_request(agent.messages, system=base.system, tools=base.tools)
    report = CompactionReport(
        trigger=trigger,
        tokens_before=before,
        tokens_after=after,
        messages_summarised=old_count,
        rounds_dropped=dropped,
        attempts=attempts,
        summary=summary,
        reinjected_files=tuple(path for path, _ in files),
        pinned_reinjected=tuple(f.text for f in lost),
        summary_request_cache_read=reply.usage.cache_read_input_tokens or 0,
    )
    for hook in agent.tools.hooks.post_compact:
        _run_hook(agent, hook, report)
    return report


def _run_hook(agent: Agent, hook: Callable[[Any], Any], argument: object) -> str | None:
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


# -- offline: the scripted model's summariser ---------------------------------------------------


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
