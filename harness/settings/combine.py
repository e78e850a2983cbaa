"""Several hooks' answers to one event, combined into one decision, and each one reported.

Claude Code runs every matching hook of an event in parallel and then combines their answers
(https://code.claude.com/docs/en/hooks, checked 2026-11-27 through the copy at
github.com/thevibeworks/claude-code-docs, commit 3f1ef7c2 of 2026-08-22):

* ``continue: false`` from any hook "takes precedence over any event-specific decision
  fields": :func:`stop_request`.
* PreToolUse (:func:`combine_pre_tool_use`): any block (exit 2, ``deny``, the deprecated
  ``decision: "block"``) refuses the call, every reason told to the model; otherwise
  "precedence is ``deny`` > ``defer`` > ``ask`` > ``allow``". ``defer`` is honoured by
  Claude Code only in non-interactive ``claude -p`` runs ("In interactive sessions it logs
  a warning and ignores the hook result"); this harness has no deferred-call resume, so a
  winning ``defer`` is reported and ignored: no decision, the normal permission flow (our
  reading). A deferring hook's ``updatedInput`` and ``additionalContext`` are ignored, as the
  page says. The reasons of the winning ``allow``/``ask`` go to the user (the page: "shown
  to the user but not Claude"). Of several ``updatedInput``, the last in settings order
  wins (our choice: Claude Code takes them as they finish).
* PostToolUse (:func:`post_tool_use_feedback`): exit 2's stderr and ``decision: "block"``'s
  ``reason`` go "next to the tool result", and so does ``additionalContext``;
  ``updatedToolOutput`` replaces the result when it has the shape of the ``tool_response``
  we send (``{"output": "..."}``); "a value that doesn't match the tool's output schema is
  ignored".
* Stop (:func:`stop_feedback`): a block (exit 2 or ``decision: "block"`` with ``reason``)
  and ``additionalContext`` ("non-error feedback ... the conversation continues") both send
  the model back.
* UserPromptSubmit, SessionStart: contexts (:func:`contexts`), refusals (:func:`blocks`).

Every answer is combined in settings order (our choice: Claude Code combines them as they
finish; settings order makes ours repeatable). :func:`describe` gives each hook's
:class:`~harness.events.HookReported` outcome and detail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.settings.command import HookRun
from harness.settings.protocol import HookAnswer
from harness.settings.schema import ConfiguredHook
from harness.tools.hooks import HookDecision

MAX_CONTEXT_CHARS = 10_000
"""Characters of hook context kept per event, the rest cut. Claude Code caps each output
string at 10,000 characters and saves the rest to a file (the page, "JSON output"); we cut,
and count all of one event's hooks together (our choice)."""

DISCARDS_MESSAGE = frozenset({"PreCompact", "SessionEnd"})
"""Events whose ``systemMessage`` Claude Code discards (the page, "PreCompact": "discards a
PreCompact hook's ``systemMessage`` and ``continue`` fields"; "SessionEnd": "discards their
JSON output fields, such as ``systemMessage``"): not shown in their reports either."""

_DETAIL_CHARS = 300

_RANK: dict[str, int] = {"allow": 1, "ask": 2, "defer": 3, "deny": 4}
"""The page's precedence, "deny > defer > ask > allow"."""


def short(text: str, limit: int = _DETAIL_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def cap(text: str) -> str:
    """``text`` cut at :data:`MAX_CONTEXT_CHARS`, saying so."""
    if len(text) <= MAX_CONTEXT_CHARS:
        return text
    return text[:MAX_CONTEXT_CHARS] + f"\n[hook output cut at {MAX_CONTEXT_CHARS:,} characters]"


@dataclass(frozen=True)
class Ran:
    """One hook that ran, and its answer as read by the protocol."""

    hook: ConfiguredHook
    run: HookRun
    answer: HookAnswer

    @property
    def label(self) -> str:
        """How Claude Code names a hook in its messages: ``[command]``."""
        return f"[{short(self.hook.command, 80)}]"


def describe(ran: Ran) -> tuple[str, str]:
    """The outcome and detail of one hook's :class:`HookReported` event."""
    answer, run = ran.answer, ran.run
    notes: list[str] = []
    if run.stdout_dropped or run.stderr_dropped:
        notes.append(
            f"output cut: {run.stdout_dropped:,} bytes of stdout and "
            f"{run.stderr_dropped:,} of stderr dropped"
        )
    if answer.status == "non_blocking_error":
        outcome = "timed out" if run.timed_out else "non-blocking error"
        message = answer.problem
    elif answer.status == "blocking":
        outcome, message = "blocking error", answer.blocking_error
        if answer.problem:
            notes.append(f"its JSON was not used ({answer.problem})")
    else:
        outcome = "success"
        parts = [f"{k}" for k, v in _fields(answer).items() if v]
        if answer.plain_text:
            parts.append(
                f"{len(answer.plain_text):,} characters of text: {short(answer.plain_text, 80)}"
            )
        message = ", ".join(parts) if parts else "no output"
    if answer.system_message and ran.hook.event not in DISCARDS_MESSAGE:
        notes.insert(0, f"message: {short(answer.system_message, 120)}")
    detail = "; ".join([f"{ran.label} {short(message, 160)}", *notes])
    return outcome, short(detail)


def _fields(answer: HookAnswer) -> dict[str, object]:
    return {
        "continue: false": not answer.continue_,
        f"decision: {answer.decision}": answer.decision,
        f"permissionDecision: {answer.permission_decision}": answer.permission_decision,
        "updatedInput": answer.updated_input is not None,
        "additionalContext": answer.additional_context,
        "updatedToolOutput": answer.updated_tool_output is not None,
    }


def stop_request(ran: Sequence[Ran]) -> str | None:
    """The ``stopReason`` of the first hook that said ``continue: false`` ("" if it gave
    none), or None if none did."""
    for one in ran:
        if not one.answer.continue_:
            return one.answer.stop_reason
    return None


def blocks(ran: Sequence[Ran]) -> list[str]:
    """``[command]: reason`` of every hook that blocks, in settings order."""
    return [f"{one.label}: {one.answer.block_reason}" for one in ran if one.answer.blocks]


def contexts(ran: Sequence[Ran]) -> list[str]:
    """Every hook's context (``additionalContext``, or plain stdout where it counts)."""
    return [one.answer.context for one in ran if one.answer.context]


@dataclass(frozen=True)
class ToolDecision:
    """What the PreToolUse hooks of one call decided together."""

    denials: tuple[str, ...] = ()
    """``[command]: reason`` of each hook that blocks: the call is refused."""
    decision: HookDecision | None = None
    """The winning ``allow`` or ``ask`` (None: no decision, or a ``defer`` that is ignored)."""
    reason: str = ""
    """The winning decision's reasons, for the user."""
    updated_input: dict[str, Any] | None = None
    """The last ``updatedInput``, in Claude Code's shape."""
    contexts: tuple[str, ...] = ()
    deferred: bool = False
    """A ``defer`` won, and was ignored."""


def combine_pre_tool_use(ran: Sequence[Ran]) -> ToolDecision:
    """The PreToolUse answers of one call, combined as the module docstring says."""
    denials = tuple(blocks(ran))
    best: str | None = None
    updated: dict[str, Any] | None = None
    found: list[str] = []
    for one in ran:
        answer = one.answer
        if answer.blocks:
            continue
        wanted = answer.permission_decision
        if wanted is not None and (best is None or _RANK[wanted] > _RANK[best]):
            best = wanted
        if wanted != "defer":
            if answer.updated_input is not None:
                updated = answer.updated_input
            if answer.additional_context:
                found.append(answer.additional_context)
    context_of_blockers = [one.answer.additional_context for one in ran if one.answer.blocks]
    all_contexts = tuple(found + [c for c in context_of_blockers if c])
    if denials:
        return ToolDecision(denials=denials, contexts=all_contexts)
    if best == "defer":
        return ToolDecision(contexts=all_contexts, deferred=True)
    reasons = [
        one.answer.permission_reason
        for one in ran
        if one.answer.permission_decision == best and one.answer.permission_reason
    ]
    decision: HookDecision | None = "allow" if best == "allow" else "ask" if best else None
    return ToolDecision(
        decision=decision,
        reason="; ".join(reasons),
        updated_input=updated,
        contexts=all_contexts,
    )


def post_tool_use_feedback(ran: Sequence[Ran], hook_name: str) -> tuple[list[str], str | None]:
    """What PostToolUse hooks put next to the result, and the result's replacement (the last
    usable ``updatedToolOutput``), or None."""
    additions: list[str] = []
    replacement: str | None = None
    for one in ran:
        answer = one.answer
        if answer.blocks:
            additions.append(f"{hook_name} hook feedback: {one.label}: {answer.block_reason}")
        if answer.additional_context:
            additions.append(answer.additional_context)
        output = answer.updated_tool_output
        if isinstance(output, dict) and isinstance(output.get("output"), str):
            replacement = output["output"]
    return additions, replacement


def stop_feedback(ran: Sequence[Ran]) -> list[str]:
    """Why the Stop hooks send the model back: blocks, then non-error feedback."""
    feedback = blocks(ran)
    feedback += [one.answer.additional_context for one in ran if one.answer.additional_context]
    return feedback


__all__ = [
    "DISCARDS_MESSAGE",
    "MAX_CONTEXT_CHARS",
    "Ran",
    "ToolDecision",
    "blocks",
    "cap",
    "combine_pre_tool_use",
    "contexts",
    "describe",
    "post_tool_use_feedback",
    "short",
    "stop_feedback",
    "stop_request",
]
