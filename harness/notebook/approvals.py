"""Approving tool calls from a notebook with buttons (chapter 02)."""

from __future__ import annotations

import html
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets  # type: ignore[import-untyped]  # ships no type information

from harness.agent import Agent
from harness.notebook.views import _MUTED, _short
from harness.tools.permissions import Approval, ApprovalRequest

# --- approvals in the notebook (chapter 02) ------------------------------------------------
#
# Jupyter runs a cell on the kernel's main thread, and handles a widget event (a click) on that
# same thread, only when no cell is running. A cell that waits for a click would wait forever.
# So the agent runs in a background thread (`run_in_background`); the approver, called from
# that thread, shows its buttons and blocks on a `threading.Event`; the click, handled by the
# idle kernel, sets it. ipywidgets ships no type information, so widgets are typed `Any` here.

_LINE = (
    "font-family: var(--jp-code-font-family, monospace); font-size: 12.5px; line-height: 1.45;"
    " white-space: pre-wrap; margin: 0"
)


def _line(text: str, *, colour: str | None = None) -> Any:
    style = _LINE + (f"; color: {colour}" if colour else "")
    return widgets.HTML(f'<div style="{style}">{html.escape(text)}</div>')


def _append(panel: Any, child: Any) -> None:
    panel.children = (*panel.children, child)


@dataclass
class PromptCard:
    """One call shown for a decision: what it is, the buttons, a note box and a status line.

    Chapter 02's :class:`WidgetApprover` and chapter 09's inbox both show a call this way:
    the exact tool and input, why it asks, and room for a note that goes to the model.
    """

    box: Any
    approve: Any
    deny: Any
    note: Any
    status: Any
    text: str = ""
    """The status line as plain text (what a test or a ``repr`` reads)."""

    def say(self, text: str, *, colour: str | None = None, muted: bool = False) -> None:
        """Replace the status line."""
        style = _LINE + (f"; color: {colour}" if colour else "") + (f"; {_MUTED}" if muted else "")
        self.text = text
        self.status.value = f'<div style="{style}">{html.escape(text)}</div>'

    def settled(self, mark: str, reason: str, *, colour: str | None = None) -> None:
        """The call is answered: the buttons go grey, the status says how and why."""
        self.approve.disabled = self.deny.disabled = self.note.disabled = True
        self.text = f"{mark}: {reason}"
        style = _LINE + (f"; color: {colour}" if colour else "")
        self.status.value = (
            f'<div style="{style}"><b>{html.escape(mark)}</b>: {html.escape(reason)}</div>'
        )


def prompt_card(
    tool: str,
    input: Mapping[str, Any],
    reason: str,
    *,
    waiting: str,
    details: Sequence[str] = (),
    deny_label: str = "Deny",
) -> PromptCard:
    """Build the widgets that show one call and ask for a decision (no click wired yet).

    ``details`` are extra muted lines under the reason (the inbox adds the session and the
    time left); ``waiting`` is the status line until an answer comes.
    """
    approve = widgets.Button(description="Approve", button_style="success", icon="check")
    deny = widgets.Button(description=deny_label, button_style="danger", icon="times")
    note = widgets.Text(
        placeholder="optional: a note for the model (why, or what to do instead)",
        layout=widgets.Layout(width="420px"),
    )
    arguments = _short(json.dumps(dict(input), ensure_ascii=False, indent=1), 600)
    extra = "".join(f'\n<span style="{_MUTED}">{html.escape(line)}</span>' for line in details)
    header = widgets.HTML(
        f'<div style="{_LINE}"><b>🔒 {html.escape(tool)}</b> asks to run with '
        f"{html.escape(arguments)}\n"
        f'<span style="{_MUTED}">why you are asked: {html.escape(reason)}</span>{extra}</div>'
    )
    status = widgets.HTML(f'<div style="{_LINE}; {_MUTED}">{html.escape(waiting)}</div>')
    box = widgets.VBox(
        [header, widgets.HBox([approve, deny, note]), status],
        layout=widgets.Layout(border="1px solid rgba(128,128,128,0.45)", padding="4px 8px"),
    )
    return PromptCard(box, approve, deny, note, status, waiting)


class WidgetApprover:
    """An approver that asks you in the notebook, with Approve and Deny buttons.

    Give it to an agent (``Agent(..., approver=WidgetApprover())``) and start the run with
    :func:`run_in_background`, so the cell returns and the kernel is free to handle your
    click. Each ``ask`` adds a prompt to :attr:`panel` with the exact call (tool, input, and
    why it asks) and waits. Text typed in the box goes to the model with the answer (Claude
    Code passes a refusal's feedback on the same way). No answer within ``timeout`` seconds
    is a refusal, so a forgotten prompt never holds a run forever. :meth:`answer` answers
    from code instead: from a later cell, or a test.
    """

    def __init__(self, *, timeout: float = 300.0, panel: Any = None) -> None:
        self.timeout = timeout
        self.panel: Any = panel if panel is not None else widgets.VBox()
        """Where prompts appear (an ipywidgets box); ``run_in_background`` adds events to it."""
        self._waiting: list[tuple[ApprovalRequest, threading.Event, list[Approval], Any]] = []
        self._lock = threading.Lock()

    @property
    def waiting(self) -> list[ApprovalRequest]:
        """The calls waiting for an answer now, oldest first."""
        with self._lock:
            return [request for request, *_ in self._waiting]

    def __call__(self, request: ApprovalRequest) -> Approval:
        answered = threading.Event()
        answers: list[Approval] = []
        card = prompt_card(
            request.tool,
            request.input,
            request.reason,
            waiting=f"waiting for you (refused after {self.timeout:g} s without an answer)",
        )
        entry = (request, answered, answers, card.note)
        card.approve.on_click(lambda _: self._settle(entry, True))
        card.deny.on_click(lambda _: self._settle(entry, False))
        with self._lock:
            self._waiting.append(entry)
        _append(self.panel, card.box)
        answered.wait(self.timeout)
        with self._lock:
            if not answers:  # timed out; a click that comes later changes nothing
                answers.append(Approval(False, f"no answer within {self.timeout:g} s"))
                answered.set()
            if entry in self._waiting:
                self._waiting.remove(entry)
        approval = answers[0]
        card.settled("✓ approved" if approval.approved else "✗ refused", approval.reason)
        return approval

    def answer(self, approved: bool, note: str = "") -> ApprovalRequest:
        """Answer the oldest waiting call, as a click would; returns the call answered."""
        with self._lock:
            if not self._waiting:
                raise LookupError("no call is waiting for an answer")
            entry = self._waiting[0]
        entry[3].value = note
        self._settle(entry, approved)
        return entry[0]

    def _settle(
        self,
        entry: tuple[ApprovalRequest, threading.Event, list[Approval], Any],
        approved: bool,
    ) -> None:
        _, answered, answers, note = entry
        with self._lock:
            if answered.is_set():  # already answered, or timed out: the first answer stands
                return
            verdict = "approved in the notebook" if approved else "refused in the notebook"
            text = str(note.value).strip()
            answers.append(Approval(approved, f"{verdict}: {text}" if text else verdict))
            if entry in self._waiting:
                self._waiting.remove(entry)
            answered.set()


def run_in_background(
    agent: Agent, prompt: str, *, panel: Any = None
) -> tuple[Any, threading.Thread]:
    """Start ``agent.run(prompt)`` in a background thread; show its events as they come.

    Returns ``(panel, thread)`` at once. Make the panel the last expression of the cell to see
    it; ``thread.join()`` waits for the run to end. Each event becomes one line of the panel; if
    the agent's approver is a :class:`WidgetApprover`, its prompts appear in the same panel,
    in order. Everything is added to the panel from the run's thread, so lines never race.
    """
    approver = agent.tools.approver
    if panel is None:
        panel = approver.panel if isinstance(approver, WidgetApprover) else widgets.VBox()

    def work() -> None:
        try:
            for event in agent.run(prompt):
                _append(panel, _line(str(event)))
        except Exception as error:  # shown in the panel: a background thread has no traceback
            message = f"the run failed: {type(error).__name__}: {error}"
            _append(panel, _line(message, colour="#c0392b"))

    # A daemon thread: a run still waiting for an answer never keeps the kernel from exiting.
    thread = threading.Thread(target=work, name="agent-run", daemon=True)
    thread.start()
    return panel, thread
