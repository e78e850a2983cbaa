"""What a command hook's exit code and output mean: Claude Code's protocol, read strictly.

As Claude Code's hooks reference (https://code.claude.com/docs/en/hooks, checked 2026-11-27
through the copy at github.com/thevibeworks/claude-code-docs, commit 3f1ef7c2 of 2026-08-22,
``content/en/docs/claude-code/hooks.md``: "Exit code output", "JSON output", "Decision control")
describes it, stdout is read first and the exit code second:

* **stdout** (leading whitespace ignored) that starts with ``{`` and parses is the hook's
  JSON answer; anything else, including ``{`` that does not parse, a JSON array or a quoted
  string, is *plain text*. JSON is read on every exit code, not only on 0.
* **exit 0**: success. A JSON answer that passes validation takes effect; one that fails it
  is a non-blocking error carrying the validation message. Plain text is context for
  ``UserPromptSubmit`` and ``SessionStart`` (:data:`CONTEXT_EVENTS`), otherwise only logged.
* **exit 2**: a *blocking error*, "the one outcome JSON can't override": it blocks even if
  the JSON says ``allow``. Its message is the reason of the JSON's own blocking decision
  (``permissionDecision: "deny"`` with ``permissionDecisionReason``, or ``decision:
  "block"`` with ``reason``) when it gives one, stderr otherwise; JSON that fails validation
  still blocks, with stderr (the page: so since v2.1.214). The other JSON fields are still
  read. On events that cannot block (:data:`CANNOT_BLOCK`: ``SessionStart``, ``SessionEnd``)
  exit 2 is a non-blocking error: stderr shown to the user only.
* **any other code** (a signal too): with a JSON answer that passes validation, "the JSON
  alone decides the outcome" and the hook is not an error; with JSON that fails validation,
  the same non-blocking error as on exit 0; with plain text or nothing, a non-blocking error
  ``Failed with non-blocking status code: <first line of stderr>`` (a script that cannot
  start, exit 127, lands here too).
* **a timeout**: the hook "renders no decision": its output is discarded, and for
  PreToolUse the call goes on through the normal permission flow. We report it as a
  non-blocking error (the transcript notice the page describes for UserPromptSubmit).

JSON fields (all optional): ``continue`` (false: stop after the hooks, ``stopReason`` says
why; it wins over any decision), ``suppressOutput`` (read; "has no effect" in Claude Code,
nor here), ``systemMessage`` (a warning for the user), ``decision`` (``"block"``;
``"approve"`` and ``"block"`` are PreToolUse's deprecated spellings of allow and deny) with
``reason``, and ``hookSpecificOutput`` with ``hookEventName`` (must be the event's) and, per
event, ``permissionDecision`` (``allow``/``deny``/``ask``/``defer``),
``permissionDecisionReason``, ``updatedInput``, ``additionalContext``, ``updatedToolOutput``.
Unknown fields are ignored.

Here nothing a hook prints can raise. Where we are stricter than the page: JSON output the
runner had to cut (past its 256 KiB cap) is a non-blocking error rather than plain text (a
cut JSON answer is not the hook's answer, and as plain text it would reach the model), and a
command that could not be started at all (no shell) is a non-blocking error that says why.
Validation messages and the wrong-event check follow openclaude ``src/utils/hooks.ts``
(``validateHookJson``, ``processHookJSONOutput``: "Hook returned incorrect event name").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from harness.settings.command import HookRun

Status = Literal["success", "blocking", "non_blocking_error"]
"""Claude Code's outcomes of one hook (``HookResult.outcome``), less ``cancelled``."""

PermissionDecision = Literal["allow", "deny", "ask", "defer"]
"""PreToolUse's ``permissionDecision``. Several hooks: deny > defer > ask > allow."""

CONTEXT_EVENTS = frozenset({"UserPromptSubmit", "SessionStart"})
"""Events whose plain stdout on exit 0 is added to the model's context (the page, "Exit code
0"; it also names ``UserPromptExpansion``, an event this harness does not run)."""

PLAIN_TEXT_EVENTS = CONTEXT_EVENTS | {"PreCompact"}
"""Events whose plain stdout on exit 0 is kept: context, or for PreCompact extra summary
instructions (observed: openclaude ``executePreCompactHooks`` joins successful outputs)."""

CANNOT_BLOCK = frozenset({"SessionStart", "SessionEnd"})
"""Events (of those we run) where exit 2 only shows stderr to the user (the page, "Exit code
2 behavior per event"). PostToolUse cannot block either, but its exit 2 stderr goes to the
model, so it keeps the blocking status and :mod:`harness.settings.hooks` routes it."""

NON_BLOCKING = "Failed with non-blocking status code:"
"""Claude Code's words for a non-zero code without a valid JSON answer (the page, "Other
exit codes"; openclaude ``executeHooks``)."""

MAX_JSON_CHARS = 1_000_000
"""Our cap on stdout parsed as JSON (the runner keeps 256 KiB anyway)."""


def first_line(stderr: str) -> str:
    """The first line of stderr with text, stripped; ``No stderr output`` if none."""
    return stderr.strip().partition("\n")[0].strip() or "No stderr output"


@dataclass(frozen=True)
class HookAnswer:
    """One hook's answer, read: its status and every field it set."""

    status: Status
    problem: str = ""
    """For a non-blocking error: what went wrong (exit code and stderr, timeout, bad JSON);
    for exit 2 with JSON that failed validation: the validation message (the block stands)."""
    blocking_error: str = ""
    """Exit 2: the JSON's blocking reason, else stderr (or ``No stderr output``)."""
    plain_text: str = ""
    """Exit 0 and not JSON, for :data:`PLAIN_TEXT_EVENTS`: stdout as it was."""
    continue_: bool = True
    stop_reason: str = ""
    suppress_output: bool = False
    """Read, and without effect, as in Claude Code."""
    system_message: str = ""
    decision: Literal["approve", "block"] | None = None
    reason: str = ""
    permission_decision: PermissionDecision | None = None
    permission_reason: str = ""
    updated_input: dict[str, Any] | None = None
    additional_context: str = ""
    updated_tool_output: Any = None
    """PostToolUse's ``updatedToolOutput`` as given (None: not given)."""

    @property
    def blocks(self) -> bool:
        """Exit 2, or ``decision: "block"``, or ``permissionDecision: "deny"``."""
        return (
            self.status == "blocking"
            or self.decision == "block"
            or self.permission_decision == "deny"
        )

    @property
    def json_block_reason(self) -> str:
        """The reason the JSON's own blocking decision gives, or ``""``."""
        if self.permission_decision == "deny" and self.permission_reason:
            return self.permission_reason
        if self.decision == "block":
            return self.reason
        return ""

    @property
    def block_reason(self) -> str:
        """Why it blocks, as Claude Code words it for the model (or the user)."""
        if self.status == "blocking":
            return self.blocking_error
        return self.json_block_reason or self.reason or "Blocked by hook"

    @property
    def context(self) -> str:
        """What goes into the model's context: ``additionalContext``, and for the events
        that take it, plain stdout (one hook prints one or the other)."""
        return self.additional_context or self.plain_text


def _parse(run: HookRun) -> tuple[dict[str, Any] | None, str]:
    """The JSON object on stdout, or None for plain text; and a problem that makes the
    output unusable as either (JSON cut by the runner's cap)."""
    text = run.stdout.strip()
    if not text.startswith("{"):
        return None, ""
    if run.stdout_dropped:
        return None, (
            f"its JSON output was cut at {len(run.stdout):,} bytes "
            f"({run.stdout_dropped:,} more dropped)"
        )
    try:
        data = json.loads(text[:MAX_JSON_CHARS])
    except (ValueError, RecursionError):
        return None, ""  # "If it isn't valid JSON, Claude Code treats it as plain text."
    return (data if isinstance(data, dict) else None), ""


def interpret(event: str, run: HookRun, timeout: float | None = None) -> HookAnswer:
    """Read one hook's run as Claude Code would for ``event``. Never raises."""
    if run.error:
        return HookAnswer("non_blocking_error", problem=f"failed to run: {run.error}")
    if run.timed_out or run.exit_code is None:
        limit = f" after {timeout:g} s" if timeout is not None else ""
        return HookAnswer(
            "non_blocking_error", problem=f"timed out{limit}: killed, its output discarded"
        )
    data, cut = _parse(run)
    answer = read_json(event, data) if data is not None else None
    valid = answer is not None and answer.status == "success"
    if run.exit_code == 2:
        stderr = run.stderr.strip() or "No stderr output"
        if event in CANNOT_BLOCK:
            base = answer if answer is not None and valid else HookAnswer("success")
            return replace(base, status="non_blocking_error", problem=f"exit 2: {stderr}")
        if answer is not None and valid:
            return replace(
                answer, status="blocking", blocking_error=answer.json_block_reason or stderr
            )
        problem = answer.problem if answer is not None else cut
        return HookAnswer("blocking", blocking_error=stderr, problem=problem)
    if answer is not None:
        return answer  # valid: the JSON alone decides; invalid: a non-blocking error
    if cut:
        return HookAnswer("non_blocking_error", problem=cut)
    if run.exit_code == 0:
        text = run.stdout.strip()
        return HookAnswer("success", plain_text=text if event in PLAIN_TEXT_EVENTS else "")
    how = f"exit {run.exit_code}" if run.exit_code > 0 else f"killed by signal {-run.exit_code}"
    problem = f"{NON_BLOCKING} {first_line(run.stderr)} ({how})"
    return HookAnswer("non_blocking_error", problem=problem)


def _check(
    data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], problems: list[str]
) -> Any:
    if key not in data or data[key] is None:
        return None
    value = data[key]
    bad_bool = isinstance(value, bool) and kind is not bool
    if not isinstance(value, kind) or bad_bool:
        want = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        problems.append(f"{key}: expected {_json_type(want)}, got {_json_type_of(value)}")
        return None
    return value


def _json_type(python: str) -> str:
    return {"str": "string", "bool": "boolean", "dict": "object"}.get(python, python)


def _json_type_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {"str": "string", "dict": "object", "list": "array"}.get(
        type(value).__name__, type(value).__name__
    )


_PERMISSIONS = ("allow", "deny", "ask", "defer")


def read_json(event: str, data: Mapping[str, Any]) -> HookAnswer:
    """The fields of a hook's JSON answer, checked; any problem -> a non-blocking error."""
    problems: list[str] = []
    cont = _check(data, "continue", bool, problems)
    stop_reason = _check(data, "stopReason", str, problems) or ""
    suppress = _check(data, "suppressOutput", bool, problems)
    system_message = _check(data, "systemMessage", str, problems) or ""
    decision = _check(data, "decision", str, problems)
    reason = _check(data, "reason", str, problems) or ""
    if decision is not None and decision not in ("approve", "block"):
        problems.append(f'decision: expected "approve" or "block", got {decision!r}')
        decision = None
    specific = _check(data, "hookSpecificOutput", dict, problems) or {}
    permission: Any = None
    permission_reason = ""
    updated: dict[str, Any] | None = None
    context = ""
    if specific:
        name = specific.get("hookEventName")
        if name != event:
            problems.append(f"hookSpecificOutput.hookEventName: expected {event!r}, got {name!r}")
        inner: list[str] = []
        permission = _check(specific, "permissionDecision", str, inner)
        permission_reason = _check(specific, "permissionDecisionReason", str, inner) or ""
        updated = _check(specific, "updatedInput", dict, inner)
        context = _check(specific, "additionalContext", str, inner) or ""
        if permission is not None and permission not in _PERMISSIONS:
            inner.append(
                'permissionDecision: expected "allow", "deny", "ask" or "defer", '
                f"got {permission!r}"
            )
            permission = None
        problems += [f"hookSpecificOutput.{p}" for p in inner]
    if problems:
        return HookAnswer(
            "non_blocking_error", problem="invalid JSON output: " + "; ".join(problems)
        )
    if decision == "approve" and event == "PreToolUse" and permission is None:
        permission = "allow"  # the deprecated spelling (the reference still documents it)
    if decision == "block" and event == "PreToolUse" and permission is None:
        permission, permission_reason = "deny", permission_reason or reason
    return HookAnswer(
        "success",
        continue_=cont is not False,
        stop_reason=stop_reason,
        suppress_output=suppress is True,
        system_message=system_message,
        decision=decision,
        reason=reason,
        permission_decision=permission,
        permission_reason=permission_reason,
        updated_input=updated,
        additional_context=context,
        updated_tool_output=specific.get("updatedToolOutput"),
    )


__all__ = [
    "CANNOT_BLOCK",
    "CONTEXT_EVENTS",
    "NON_BLOCKING",
    "PLAIN_TEXT_EVENTS",
    "HookAnswer",
    "PermissionDecision",
    "Status",
    "first_line",
    "interpret",
    "read_json",
]
