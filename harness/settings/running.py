"""Running the hooks of one event: choose them, ask the trust gate, run them at once.

:class:`EventRunner` is the part of :class:`~harness.settings.hooks.SettingsHooks` that
knows nothing of the harness's hook points: given an event, its fields and what the matchers
select, it picks the configured hooks that match, runs an identical command once
(:func:`~harness.settings.schema.unique_commands`, as Claude Code does), skips those the
trust gate refuses (reported once each), sends each the event's JSON as Claude Code builds it
(``session_id``, ``transcript_path``, ``cwd``, ``permission_mode``, ``hook_event_name`` and
the event's own fields; https://code.claude.com/docs/en/hooks, "Common input fields"), runs
them all at the same time (Claude Code: "Run all hooks in parallel and wait for all to
complete", openclaude ``src/utils/hooks.ts`` ``executeHooks``), reads each answer
(:func:`~harness.settings.protocol.interpret`) and reports each as a
:class:`~harness.events.HookReported` event. Nothing here raises: a runner or a trust gate
that breaks is a hook that did not run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.events import Event, HookReported
from harness.settings.combine import Ran, describe, short
from harness.settings.command import HookCall, HookRun, Runner, run_command
from harness.settings.protocol import interpret
from harness.settings.schema import ConfiguredHook, unique_commands

MAX_PARALLEL_HOOKS = 32
"""Hooks of one event run at once, at most (our choice; Claude Code sets no limit)."""

CLAUDE_MODES = {"accept_edits": "acceptEdits", "bypass": "bypassPermissions"}
"""Our permission modes under Claude Code's names (``default`` and ``plan`` are the same)."""


class EventRunner:
    """Runs the configured hooks of one event at a time (see the module docstring)."""

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
    ) -> None:
        self.hooks = tuple(hooks)
        self.workspace = Path(workspace).resolve()
        self.session_id = session_id
        self.transcript_path = str(transcript_path)
        self.allows = allows
        self.runner = runner
        self.permission_mode = permission_mode
        """Ours (``accept_edits``) or Claude Code's (``acceptEdits``); sent as Claude Code's."""
        self._untrusted: set[ConfiguredHook] = set()

    def run_event(
        self, event: str, fields: dict[str, Any], match: Sequence[str] | None, name: str = ""
    ) -> tuple[list[Ran], list[Event]]:
        """Run every hook of ``event`` whose matcher selects one of ``match`` (None: all),
        at once; return what each answered, in settings order, and their events."""
        events: list[Event] = []
        matched = [
            hook
            for hook in self.hooks
            if hook.event == event
            and (match is None or any(hook.matches(value) for value in match))
        ]
        chosen = [hook for hook in unique_commands(matched) if self._trusted(hook, name, events)]
        if not chosen:
            return [], events
        payload = self._payload(event, fields)
        workers = min(MAX_PARALLEL_HOOKS, len(chosen))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            ran = list(pool.map(lambda hook: self._run_one(hook, payload), chosen))
        for one in ran:
            outcome, detail = describe(one)
            events.append(HookReported(event, name, outcome, detail))
        return ran, events

    def _trusted(self, hook: ConfiguredHook, name: str, events: list[Event]) -> bool:
        try:
            allowed = bool(self.allows(hook))
            why = "the folder is not trusted"
        except Exception as error:  # a broken gate refuses: never run what was not allowed
            allowed, why = False, f"the trust check failed ({type(error).__name__}: {error})"
        if not allowed and hook not in self._untrusted:
            self._untrusted.add(hook)
            detail = f"[{short(hook.command, 80)}] from {hook.source} not run: {why}"
            events.append(HookReported(hook.event, name, "skipped", detail))
        return allowed

    def _payload(self, event: str, fields: dict[str, Any]) -> str:
        base = {
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": str(self.workspace),
            "permission_mode": CLAUDE_MODES.get(self.permission_mode, self.permission_mode),
            "hook_event_name": event,
        }
        return json.dumps({**base, **fields}, ensure_ascii=False, default=str)

    def _run_one(self, hook: ConfiguredHook, payload: str) -> Ran:
        call = HookCall(
            hook.command,
            payload,
            self.workspace,
            hook.timeout,
            {"CLAUDE_PROJECT_DIR": str(self.workspace)},
        )
        try:
            run = self.runner(call)
        except Exception as error:  # a runner that breaks is a hook that failed to run
            run = HookRun(None, error=f"{type(error).__name__}: {error}")
        return Ran(hook, run, interpret(hook.event, run, hook.timeout))


__all__ = ["CLAUDE_MODES", "MAX_PARALLEL_HOOKS", "EventRunner"]
