"""Hooks from settings files, run at the harness's own hook points.

:class:`SettingsHooks` takes the command hooks of the settings files
(:class:`~harness.settings.schema.ConfiguredHook`) and runs each at the point the harness
already has for it, never a second mechanism:

* ``PreToolUse``: chapter 02's ``Hooks`` (:meth:`SettingsHooks.install`): block, allow, ask,
  or change the input of a call (``defer`` is reported and ignored);
* ``PostToolUse``: chapter 02's ``Hooks``: feedback and context after the result, or a
  replaced result (``updatedToolOutput``);
* ``UserPromptSubmit``: the loop's ``before_prompt``: refuse a prompt, or add context;
* ``SessionStart``: the first ``before_prompt`` (``startup``, or ``resume`` when the
  conversation is not empty): its context joins the first prompt;
* ``Stop``: the loop's ``on_stop``: send the model back to work (8 times in a row at most);
* ``PreCompact``: compaction's :class:`~harness.compaction.summary.CompactionPoint` (every
  full compaction, ``auto`` or ``manual``): stop it, or add summary instructions;
* ``SessionEnd``: :meth:`SettingsHooks.end_session`, for whoever ends the session.

Every hook of an event that matches runs at the same time, in threads, as Claude Code runs
them in parallel (``executeHooks``: "Run all hooks in parallel and wait for all to
complete"); identical commands run once. Each answer is read by
:mod:`harness.settings.protocol`, and one event's answers are combined into one decision by
:mod:`harness.settings.combine` (in settings order; deny > defer > ask > allow).

Every hook that runs gives one :class:`~harness.events.HookReported` event: what it answered
(``success``, ``blocking error``, ``non-blocking error``, ``timed out``) and why. A hook that
hangs, crashes, prints garbage or floods its output is a non-blocking error; the run goes on.
A hook the trust gate refuses does not run, and is reported once.

What each event does with its hooks' answers follows Claude Code's hooks reference
(https://code.claude.com/docs/en/hooks, checked 2026-11-27 through the copy at
github.com/thevibeworks/claude-code-docs, commit 3f1ef7c2 of 2026-08-22): a SessionStart
hook's exit 2 is only shown ("Shows stderr to user only"), a UserPromptSubmit block's reason
goes to the user and never to the model, PostToolUse feedback goes next to the result, a Stop
hook sends the model back at most :data:`MAX_STOP_CONTINUATIONS` times in a row, PreCompact
and SessionEnd hooks' ``continue`` and ``systemMessage`` are discarded.

The JSON a hook reads is Claude Code's: ``session_id``, ``transcript_path``, ``cwd``,
``permission_mode``, ``hook_event_name``, and the event's own fields, with our tools under
Claude Code's names (:mod:`harness.settings.claude_names`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from anthropic.types import Message

from harness.compaction.summary import CompactionCheck, CompactionPoint
from harness.events import Event, HookReported
from harness.loop import BaseAgent, ModelRequest, Plugin, PromptCheck, StopRun
from harness.settings.claude_names import claude_name, from_claude, names_of, to_claude
from harness.settings.combine import (
    MAX_CONTEXT_CHARS,
    Ran,
    ToolDecision,
    blocks,
    cap,
    combine_pre_tool_use,
    contexts,
    post_tool_use_feedback,
    stop_feedback,
    stop_request,
)
from harness.settings.command import Runner, run_command
from harness.settings.running import CLAUDE_MODES, MAX_PARALLEL_HOOKS, EventRunner
from harness.settings.schema import ConfiguredHook
from harness.tools.hooks import (
    Hooks,
    PostToolUseResult,
    PreToolUseResult,
    ToolUse,
)

MAX_STOP_CONTINUATIONS = 8
"""Stop hooks may send the model back this many times in a row; then the turn ends anyway
(documented: "Claude Code overrides the hook and ends the turn after 8 consecutive blocks")."""


class SettingsHooks(EventRunner, Plugin, CompactionPoint):
    """Claude Code's command hooks from settings files, run at the harness's hook points.

    Give it to the agent as a plugin (``plugins=[settings_hooks]``) and install it into the
    tool runner's hooks (``settings_hooks.install(hooks)``, then ``Agent(..., hooks=hooks)``).
    ``allows`` is the trust gate (``FolderTrust.allows``); ``runner`` runs one command
    (tests pass their own); ``source`` is SessionStart's (default: ``"startup"``, or
    ``"resume"`` when the agent's conversation is not empty at the first prompt).
    """

    def __init__(
        self,
        hooks: Sequence[ConfiguredHook],
        *,
        workspace: str | Path,
        session_id: str,
        transcript_path: str | Path = "",
        allows: Callable[[ConfiguredHook], bool] = lambda hook: True,
        runner: Runner = run_command,
        permission_mode: str = "default",
        # ours ("accept_edits") or Claude Code's ("acceptEdits"); sent as Claude Code's
        source: str | None = None,
    ) -> None:
        super().__init__(
            hooks,
            workspace=workspace,
            session_id=session_id,
            transcript_path=transcript_path,
            allows=allows,
            runner=runner,
            permission_mode=permission_mode,
        )
        self.source = source
        self.started = False
        """Whether the SessionStart hooks have run."""
        self.stop_hook_active = False
        """True while the model works on because a Stop hook sent it back (Claude Code's
        ``stop_hook_active``: a Stop hook checks it so as not to block for ever)."""
        self._continuations = 0
        """Stop-hook continuations in a row (the turn ends at :data:`MAX_STOP_CONTINUATIONS`)."""
        self._stop: HookReported | None = None
        self._context: dict[str, list[str]] = {}

    def _stop_after(self, ran: list[Ran], event: str, name: str) -> str | None:
        """If a hook said ``continue: false``: remember to stop the run; its reason."""
        asked = stop_request(ran)
        if asked is None:
            return None
        reason = asked or f"a {event} hook stopped the run"
        self._stop = HookReported(event, name, "stopped the run", reason)
        return reason

    # -- PreToolUse and PostToolUse (chapter 02's Hooks) ------------------------------------

    def install(self, hooks: Hooks) -> Hooks:
        """Add the PreToolUse and PostToolUse hooks to ``hooks`` (matched here, by name)."""
        hooks.on_pre_tool_use(self.pre_tool_use)
        hooks.on_post_tool_use(self.post_tool_use)
        return hooks

    def pre_tool_use(self, use: ToolUse) -> PreToolUseResult | None:
        """Chapter 02's PreToolUse hook: run the matching settings hooks, combine them
        (:func:`~harness.settings.combine.combine_pre_tool_use`)."""
        fields = {
            "tool_name": claude_name(use.name),
            "tool_input": to_claude(use.name, use.input, self.workspace),
            "tool_use_id": use.tool_use_id,
        }
        ran, events = self.run_event("PreToolUse", fields, names_of(use.name), use.name)
        if not ran:
            return PreToolUseResult(events=tuple(events)) if events else None
        stopped = self._stop_after(ran, "PreToolUse", use.name)
        combined = combine_pre_tool_use(ran)
        if combined.contexts:  # told to the model next to the result (post_tool_use)
            self._context.setdefault(use.tool_use_id, []).extend(combined.contexts)
        denials = list(combined.denials)
        if stopped is not None:
            denials.insert(0, f"the run was stopped: {stopped}")
        if denials:
            return PreToolUseResult(
                block=True, reason=cap("\n".join(denials)), events=tuple(events)
            )
        if combined.deferred:
            events.append(
                HookReported(
                    "PreToolUse",
                    use.name,
                    "continued",
                    'a hook answered "defer", which Claude Code honours only in claude -p: '
                    "ignored, the normal permission flow decides",
                )
            )
        updated = combined.updated_input
        return PreToolUseResult(
            reason=combined.reason,
            input=None
            if updated is None
            else from_claude(use.name, updated, use.input, self.workspace),
            decision=combined.decision,
            events=tuple(events),
        )

    def post_tool_use(self, use: ToolUse, result: str, is_error: bool) -> PostToolUseResult:
        """Chapter 02's PostToolUse hook: feedback and context go after the result, and an
        ``updatedToolOutput`` of our ``tool_response`` shape replaces the result.

        Only for a call that succeeded: Claude Code runs ``PostToolUseFailure`` hooks for
        one that failed, an event this harness does not run.
        """
        additions = self._context.pop(use.tool_use_id, [])
        events: list[Event] = []
        replacement: str | None = None
        if not is_error:
            claude_input = to_claude(use.name, use.input, self.workspace)
            response: dict[str, Any] = {"output": result}
            if "file_path" in claude_input:
                response["filePath"] = claude_input["file_path"]
            fields = {
                "tool_name": claude_name(use.name),
                "tool_input": claude_input,
                "tool_response": response,
                "tool_use_id": use.tool_use_id,
            }
            ran, events = self.run_event("PostToolUse", fields, names_of(use.name), use.name)
            self._stop_after(ran, "PostToolUse", use.name)
            found, replacement = post_tool_use_feedback(ran, f"PostToolUse:{claude_name(use.name)}")
            additions += found
        text = result if replacement is None else replacement
        if not additions:
            return PostToolUseResult(None if replacement is None else text, tuple(events))
        return PostToolUseResult(cap(text + "\n\n" + "\n".join(additions)), tuple(events))

    # -- the loop's points ----------------------------------------------------------------

    def before_prompt(self, agent: BaseAgent, prompt: str) -> PromptCheck | None:
        """SessionStart (first prompt only), then UserPromptSubmit."""
        self.stop_hook_active = False
        self._continuations = 0
        self._stop = None  # a stop asked for in an earlier run ended with that run
        found: list[str] = []
        if not self.started:
            self.started = True
            source = self.source or ("resume" if agent.messages else "startup")
            ran, events = self.run_event("SessionStart", {"source": source}, [source])
            for event in events:
                agent.emit(event)
            found += contexts(ran)
            if (stopped := self._stop_after(ran, "SessionStart", "")) is not None:
                self._stop = None
                return PromptCheck(block=True, reason=stopped)
        ran, events = self.run_event("UserPromptSubmit", {"prompt": prompt}, None)
        for event in events:
            agent.emit(event)
        if (stopped := self._stop_after(ran, "UserPromptSubmit", "")) is not None:
            self._stop = None
            return PromptCheck(block=True, reason=stopped)
        if refusals := blocks(ran):
            return PromptCheck(
                block=True,
                reason="UserPromptSubmit operation blocked by hook:\n" + "\n".join(refusals),
            )
        found += contexts(ran)
        if not found:
            return None
        return PromptCheck(context=cap("\n\n".join(found)))

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        """Ends the run before the next model call if a tool hook said ``continue: false``."""
        if self._stop is not None and request.purpose == "turn":
            event, self._stop = self._stop, None
            raise StopRun(event)
        return call(request)

    def on_stop(self, agent: BaseAgent, reply: Message) -> str | None:
        """The Stop hooks: a block (exit 2, or ``decision: "block"`` with its ``reason``) or
        ``additionalContext`` sends the model back, unless a hook said ``continue: false``,
        or they did so :data:`MAX_STOP_CONTINUATIONS` times in a row already."""
        text = "\n".join(b.text for b in reply.content if b.type == "text").strip()
        fields: dict[str, Any] = {"stop_hook_active": self.stop_hook_active}
        if text:
            fields["last_assistant_message"] = text
        ran, events = self.run_event("Stop", fields, None)
        for event in events:
            agent.emit(event)
        if (stopped := self._stop_after(ran, "Stop", "")) is not None:
            self._stop = None
            agent.emit(HookReported("Stop", "", "stopped the run", stopped))
            return None
        feedback = stop_feedback(ran)
        if not feedback:
            return None
        if self._continuations >= MAX_STOP_CONTINUATIONS:
            agent.emit(
                HookReported(
                    "Stop",
                    "",
                    "stopped the run",
                    f"the Stop hooks sent the model back {MAX_STOP_CONTINUATIONS} times in "
                    "a row: the turn ends",
                )
            )
            return None
        self._continuations += 1
        self.stop_hook_active = True
        reason = cap("Stop hook feedback:\n" + "\n".join(feedback))
        agent.emit(HookReported("Stop", "", "continued", reason))
        return reason

    def before_compaction(
        self, agent: BaseAgent, trigger: str, instructions: str
    ) -> CompactionCheck | None:
        """The PreCompact hooks (matcher: ``manual`` or ``auto``): a block (exit 2 or
        ``decision: "block"``) stops the compaction; plain output adds to the summary
        instructions. ``continue`` and ``systemMessage`` are discarded, as in Claude Code."""
        fields = {"trigger": trigger, "custom_instructions": instructions or None}
        ran, events = self.run_event("PreCompact", fields, [trigger])
        for event in events:
            agent.emit(event)
        if refusals := blocks(ran):
            return CompactionCheck(block=True, reason="; ".join(refusals))
        added = [one.answer.plain_text for one in ran if one.answer.plain_text]
        return CompactionCheck(instructions=cap("\n\n".join(added))) if added else None

    def end_session(self, reason: str = "other") -> list[Event]:
        """The SessionEnd hooks (matcher: the reason, ``clear``, ``logout``,
        ``prompt_input_exit``, ``other``); returns their events (nothing can stop an end,
        and their JSON is discarded)."""
        _, events = self.run_event("SessionEnd", {"reason": reason}, [reason])
        return events


__all__ = [
    "CLAUDE_MODES",
    "MAX_CONTEXT_CHARS",
    "MAX_PARALLEL_HOOKS",
    "MAX_STOP_CONTINUATIONS",
    "EventRunner",
    "Ran",
    "SettingsHooks",
    "ToolDecision",
    "combine_pre_tool_use",
]
