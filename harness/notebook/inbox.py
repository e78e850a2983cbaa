"""What chapter 09 uses to show approvals that wait: a shop's payment tools, the two broken
versions the chapter starts from, the inbox widget over the store, and two pictures.

* :func:`payment_tools`: ``refund`` and ``transfer``, each appending a line to a ledger file
  (what a real side effect leaves behind: money moved once per line).
* **The broken versions**, for the chapter to show failing (do not copy them):
  :func:`naive_resume` runs every call of the stopped reply again, so a call that ran before
  the stop runs twice; :class:`ApprovedByName` remembers approvals by tool name, so an
  approval given for one call lets a different call of the same tool through.
* :class:`ApprovalInbox`: the store's pending calls as a panel of chapter 02's prompts
  (Approve / Reject, a note). A click records the decision in the store; it needs no
  running thread: the run stopped long ago, and :func:`harness.approvals.resume` picks it up.
* :func:`state_table` (every row, coloured by state), :func:`plot_states` (the state machine
  with the rows in it) and :func:`plot_timeline` (a pause and its resume across processes, on
  the fake clock).

Not imported by ``harness.notebook``: chapter 09 imports it by its own name.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ipywidgets as widgets  # type: ignore[import-untyped]  # ships no type information
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from pydantic import BaseModel

from harness import messages as m
from harness.approvals import (
    ApprovalError,
    ApprovalStore,
    Decision,
    Record,
)
from harness.clock import Clock
from harness.events import Event
from harness.loop import BaseAgent
from harness.notebook.approvals import _LINE, PromptCard, prompt_card
from harness.notebook.views import Rendered, _short
from harness.resume import Sessions
from harness.resume import resume as resume_session
from harness.tools import ToolContext, tool
from harness.tools.base import Tool
from harness.tools.permissions import Approval, ApprovalRequest, Deferred

# -- the shop's payment tools ---------------------------------------------------------------


class Refund(BaseModel):
    order: str
    amount: int


class Transfer(BaseModel):
    to: str
    amount: int


def payment_tools(ledger: Path) -> list[Tool[Any]]:
    """``refund(order, amount)`` and ``transfer(to, amount)``: each run appends one line to
    ``ledger``, so counting its lines counts the side effects."""

    def write(line: str) -> None:
        with ledger.open("a", encoding="utf-8") as file:
            file.write(line + "\n")

    @tool(Refund)
    def refund(args: Refund, context: ToolContext) -> str:
        """Refund an order to the customer's card."""
        write(f"refund {args.order} {args.amount}")
        return f"refunded {args.amount} for {args.order}"

    @tool(Transfer)
    def transfer(args: Transfer, context: ToolContext) -> str:
        """Send money from the shop's account to a supplier."""
        write(f"transfer {args.to} {args.amount}")
        return f"sent {args.amount} to {args.to}"

    return [refund, transfer]


def ledger_lines(ledger: Path) -> list[str]:
    """The side effects so far, one a line."""
    return ledger.read_text(encoding="utf-8").splitlines() if ledger.exists() else []


# -- the broken versions --------------------------------------------------------------------


def naive_resume(agent: BaseAgent, sessions: Sessions, session_id: str) -> list[Event]:
    """THE BROKEN RESUME (for the chapter to show; do not copy it).

    It loads the session (chapter 08) and runs every call of the reply that stopped again,
    the ones that ran before the stop too, then puts their results in place of the old ones.
    A call that ran before the stop (a refund) runs a second time.
    """
    resume_session(agent, sessions, session_id)
    calls = m.tool_uses(agent.messages[-2])  # the reply that stopped, all its calls
    run = agent.tools.run(calls)
    events: list[Event] = []
    while True:
        try:
            events.append(next(run))
        except StopIteration as done:
            agent.messages[-1] = m.user(done.value)
            return events


@dataclass
class ApprovedByName:
    """THE BROKEN APPROVALS (for the chapter to show; do not copy them).

    An approver that defers a call to a person, and remembers the answer by *tool name*:
    once ``transfer`` is approved, every later ``transfer`` runs, whatever its input.
    """

    approved: set[str] = field(default_factory=set)

    def __call__(self, request: ApprovalRequest) -> Approval | Deferred:
        if request.tool in self.approved:
            return Approval(True, f"{request.tool} was approved")
        return Deferred(request.tool, request.reason)


# -- the inbox ------------------------------------------------------------------------------

_RED = "#c0392b"
_KIND = {404: "not found", 409: "conflict", 410: "expired", 422: "invalid"}


def time_left(seconds: float) -> str:
    """``23 h 59 min left``, ``4 min left``, or ``expired``."""
    if seconds <= 0:
        return "expired"
    minutes = int(seconds // 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min left" if hours else f"{minutes} min left"


def error_line(error: ApprovalError) -> str:
    """``409 conflict: ...``: what a person is shown instead of a traceback."""
    return f"{error.status} {_KIND.get(error.status, 'error')}: {error}"


class ApprovalInbox:
    """The store's pending calls, each with Approve / Reject and a note, in one panel.

    Show it as a cell's last value. A click records the decision (``store.decide``) and
    shows the row's new state; a conflict (someone decided otherwise meanwhile) or an expired
    call is shown as a message. No thread needs to be running: the run that asked stopped,
    and a decision is all the click makes. ``on_decided(record)`` is called after a decision
    this inbox recorded, to resume the run at once if you like; what it returns is shown.
    :meth:`refresh` reads the store again; :meth:`answer` clicks from code.
    """

    def __init__(
        self,
        store: ApprovalStore,
        on_decided: Callable[[Record], object] | None = None,
        *,
        by: str = "you, in the notebook",
        session_id: str | None = None,
    ) -> None:
        self.store = store
        self.on_decided = on_decided
        self.by = by
        self.session_id = session_id
        self.panel: Any = widgets.VBox()
        self.cards: dict[str, PromptCard] = {}
        self._title: Any = widgets.HTML()
        self.refresh()

    def refresh(self) -> None:
        """List what waits now (decided and expired calls leave the list)."""
        waiting = self.store.pending(self.session_id)
        self.cards = {r.approval_id: self._card(r) for r in waiting}
        count = "1 call waits" if len(waiting) == 1 else f"{len(waiting)} calls wait"
        title = f"<b>Approval inbox</b>: {count} for a decision"
        self._title.value = f'<div style="{_LINE}">{title}</div>'
        self.panel.children = (self._title, *(card.box for card in self.cards.values()))

    def status(self, approval_id: str) -> str:
        """The status line of a call, as text."""
        return self.cards[approval_id].text

    def answer(self, approval_id: str, approve: bool, note: str = "") -> str:
        """Decide from code, as a click would (a later cell, a test); returns the status."""
        card = self.cards[approval_id]
        card.note.value = note
        (card.approve if approve else card.deny).click()
        return card.text

    def _card(self, record: Record) -> PromptCard:
        s = record.snapshot
        left = time_left(s.expires_at.timestamp() - self.store.clock.now())
        card = prompt_card(
            s.tool,
            s.input,
            s.reason,
            waiting="waiting for a decision (the run stopped; nothing runs until you decide)",
            details=[f"{s.approval_id} · session {s.session_id[:8]} · {left}"],
            deny_label="Reject",
        )
        card.approve.on_click(lambda _: self._decide(s.approval_id, True))
        card.deny.on_click(lambda _: self._decide(s.approval_id, False))
        return card

    def _decide(self, approval_id: str, approve: bool) -> None:
        card = self.cards[approval_id]
        decision = Decision(approve=approve, by=self.by, note=str(card.note.value).strip())
        try:
            record = self.store.decide(approval_id, decision)
        except ApprovalError as error:
            card.settled("✗ not recorded", error_line(error), colour=_RED)
            return
        if record.decision != decision:  # the same answer was given first, by someone else
            who = record.decision.by if record.decision else "someone"
            card.settled(f"= {record.state} already", f"by {who}; nothing changed")
            return
        note = f" (note: {decision.note})" if decision.note else ""
        card.settled(f"✓ {record.state}", f"by {decision.by}{note}; the run may resume")
        if self.on_decided is None:
            return
        try:
            said = self.on_decided(record)
        except Exception as error:  # shown, never a traceback: the decision stands
            card.say(f"decided, but resuming failed: {type(error).__name__}: {error}", colour=_RED)
            return
        if said is not None:
            card.settled(f"✓ {record.state}", f"by {decision.by}{note} → {said}")

    def __repr__(self) -> str:
        lines = [f"Approval inbox: {len(self.cards)} call(s) listed"]
        for approval_id, card in self.cards.items():
            lines.append(f"  {approval_id}: {card.text}")
        return "\n".join(lines)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = self.panel._repr_mimebundle_(**kwargs) or {}
        bundle["text/plain"] = repr(self)
        return bundle


# -- the store's rows, as a table and as a state machine --------------------------------------

STATE_COLOURS = {
    "pending": "#f3c969",
    "approved": "#8fd19e",
    "rejected": "#f19c99",
    "applying": "#9ec5ee",
    "applied": "#4f9f6a",
    "expired": "#bbbbbb",
}


def _outcome(record: Record) -> str:
    if record.outcome is None:
        return ""
    content = record.outcome.get("content")
    return _short(content if isinstance(content, str) else json.dumps(content), 44)


def state_table(store: ApprovalStore) -> Rendered:
    """Every row of the store: id, call, state (coloured), who decided, the recorded outcome."""
    headers = ["id", "call", "state", "decided by", "outcome"]
    rows = []
    for r in store.all():
        s = r.snapshot
        call = f"{s.tool} {json.dumps(s.input, ensure_ascii=False)}"
        who = r.decision.by if r.decision else ""
        rows.append([s.approval_id, call, r.state, who, _outcome(r)])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    text = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    text += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]

    def td(value: str, colour: str | None = None) -> str:
        style = f' style="background: {colour}"' if colour else ""
        return f"<td{style}>{html.escape(value)}</td>"

    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(td(c, STATE_COLOURS.get(c) if i == 2 else None) for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    page = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return Rendered("\n".join(text), page)


_PLACES = {
    "pending": (0.0, 1.0),
    "approved": (2.4, 1.6),
    "rejected": (2.4, 0.2),
    "applying": (4.8, 0.9),
    "applied": (7.0, 0.9),
    "expired": (2.4, 3.0),
}
_EDGES = [  # from, its side, to, its side, label
    ("pending", "r", "approved", "l", "decide: approve"),
    ("pending", "r", "rejected", "l", "decide: reject"),
    ("approved", "r", "applying", "l", "claim"),
    ("rejected", "r", "applying", "l", "claim"),
    ("applying", "r", "applied", "l", "finish"),
    ("pending", "t", "expired", "l", "time is up"),
    ("approved", "t", "expired", "b", "time is up"),
]
_W, _H = 1.3, 0.62


def _side(state: str, side: str) -> tuple[float, float]:
    x, y = _PLACES[state]
    dx = {"r": _W / 2, "l": -_W / 2}.get(side, 0.0)
    dy = {"t": _H / 2, "b": -_H / 2}.get(side, 0.0)
    return x + dx, y + dy


def plot_states(store: ApprovalStore, *, title: str = "") -> Figure:
    """The store's state machine, each state a box holding the ids of the rows in it."""
    found: dict[str, list[str]] = {state: [] for state in _PLACES}
    for r in store.all():
        found[r.state].append(r.approval_id)
    fig, ax = plt.subplots(figsize=(10, 3.6))
    w, h = _W, _H
    for a, a_side, b, b_side, label in _EDGES:
        start, end = _side(a, a_side), _side(b, b_side)
        arrow = FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=12,
            color="#555555",
            lw=1.1,
            shrinkA=2,
            shrinkB=2,
        )
        ax.add_patch(arrow)
        ax.annotate(
            label,
            ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2),
            ha="center",
            va="center",
            fontsize=7.5,
            color="#444444",
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.9},
        )
    for state, (x, y) in _PLACES.items():
        ids = found[state]
        box = FancyBboxPatch(
            (x - w / 2, y - h / 2),
            w,
            h,
            boxstyle="round,pad=0.03",
            fc=STATE_COLOURS[state] if ids else "white",
            ec="#333333" if ids else "#aaaaaa",
            lw=1.4 if ids else 0.8,
        )
        ax.add_patch(box)
        ax.text(x, y + 0.12, state, ha="center", va="center", fontsize=10, weight="bold")
        shown = ", ".join(ids[:2]) + (f" +{len(ids) - 2}" if len(ids) > 2 else "")
        ax.text(x, y - 0.14, shown or "—", ha="center", va="center", fontsize=7.5)
    ax.set_xlim(-0.8, 7.8)
    ax.set_ylim(-0.25, 3.45)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=10, loc="left")
    fig.tight_layout()
    plt.close(fig)  # the notebook shows it once, as the cell's value
    return fig


# -- a pause and its resume, across processes ---------------------------------------------------


@dataclass
class Timeline:
    """Moments on a clock, each in a lane (``process 1``, ``a person``, ...), for a picture."""

    clock: Clock
    marks: list[tuple[str, float, str]] = field(default_factory=list)

    def mark(self, lane: str, label: str) -> None:
        self.marks.append((lane, self.clock.now(), label))


def plot_timeline(timeline: Timeline, *, title: str = "") -> Figure:
    """Each lane a row, each mark a dot with its label; time in hours from the first mark.
    A lane's first and last marks are joined by a bar: when that process (or person) was
    there. The gap between the lanes is the wait no process has to live through."""
    lanes: list[str] = []
    for lane, _, _ in timeline.marks:
        if lane not in lanes:
            lanes.append(lane)
    start = min(t for _, t, _ in timeline.marks)
    fig, ax = plt.subplots(figsize=(10, 0.9 + 0.62 * len(lanes)))
    colours = ["#4a74b4", "#d08a1e", "#3c8c5a", "#8e5ea2", "#777777"]
    for row, lane in enumerate(lanes):
        y = len(lanes) - 1 - row
        hours = [(t - start) / 3600 for name, t, _ in timeline.marks if name == lane]
        labels = [label for name, _, label in timeline.marks if name == lane]
        colour = colours[row % len(colours)]
        ax.plot(
            [min(hours), max(hours)], [y, y], color=colour, lw=5, alpha=0.35, solid_capstyle="round"
        )
        ax.scatter(hours, [y] * len(hours), color=colour, zorder=3, s=36)
        for k, (x, label) in enumerate(zip(hours, labels, strict=True)):
            ax.annotate(
                label,
                (x, y),
                textcoords="offset points",
                xytext=(4, 7 if k % 2 == 0 else -13),
                fontsize=7.5,
            )
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(list(reversed(lanes)), fontsize=9)
    ax.set_xlabel("hours on the clock since the run started")
    ax.spines[["top", "right", "left"]].set_visible(False)
    end = max((t - start) / 3600 for _, t, _ in timeline.marks)
    ax.set_xlim(-0.05 * max(end, 1), end * 1.22 + 0.1)
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    if title:
        ax.set_title(title, fontsize=10, loc="left")
    fig.tight_layout()
    plt.close(fig)
    return fig


def outcomes(results: Sequence[object]) -> dict[str, int]:
    """Count what a crowd of resumers got back: applied it, the recorded outcome, or an error
    (by its status and kind)."""
    counts: dict[str, int] = {}
    for result in results:
        if isinstance(result, ApprovalError):
            key = error_line(result).split(":")[0]
        elif getattr(result, "applied_now", False):
            key = "applied the call"
        else:
            key = "got the recorded outcome"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


__all__ = [
    "STATE_COLOURS",
    "ApprovalInbox",
    "ApprovedByName",
    "Refund",
    "Timeline",
    "Transfer",
    "error_line",
    "ledger_lines",
    "naive_resume",
    "outcomes",
    "payment_tools",
    "plot_states",
    "plot_timeline",
    "state_table",
    "time_left",
]
