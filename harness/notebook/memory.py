"""What chapter 07 uses to show session memory: the rounding session, a latency layer, plots.

* The session: a user asks for rounding to cents, corrects the agent early ("use
  ROUND_HALF_UP"), then lets it work for a long stretch, then asks which rounding mode to use.
  :func:`rounding_answer` is the scripted model's answer to that question, computed from the
  request: it says ROUND_HALF_UP only if those words are somewhere in what it was sent (system
  prompt or messages), and banker's rounding (Python's default) otherwise. So whether the
  agent remembers is decided by what compaction left in its context, never typed in.
* :class:`ModelLatency`: a ``call_model`` layer that moves a ``FakeClock`` on by a made-up
  latency per model call (0.5 s plus the output at 50 tokens a second, our choice), and
  records each call's purpose and seconds, so a summary that writes a lot costs time and a
  compaction without a model call costs none.
* :func:`plot_context`: the context's size over the session, with extractions and
  compactions marked.

Not imported by ``harness.notebook`` (chapter 03): chapter 07 imports it by its own name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
from anthropic.types import Message, Usage
from matplotlib.figure import Figure

from harness import messages as m
from harness import pricing
from harness.compaction.summary import COMPACT_MARKER
from harness.loop import BaseAgent, ModelRequest, Plugin
from harness.memory import EXTRACTION_MARKER
from harness.model import Step, reply, tool_call
from harness.model.scripted import Reply, Request
from harness.notebook.sessions import coding_script

FIRST_PROMPT = "Make every module round amounts to cents."
CORRECTION = (
    "Actually, use ROUND_HALF_UP, not banker's rounding: the invoices must match the old system."
)
WORK_PROMPT = "Good. Now carry on: check each module and write the helper modules we need."
QUESTION = "Which rounding mode should the invoice totals use?"
REMEMBERED = "ROUND_HALF_UP"


def first_script() -> list[Step]:
    """The first run: look at how the modules round, then report."""
    return [
        reply(
            "Let me see how billing rounds.",
            tool_calls=[tool_call("read_file", path="app/billing.py")],
        ),
        reply(
            "And every other place that rounds.",
            tool_calls=[
                tool_call("grep", pattern=r"quantize\(", output_mode="content", head_limit=20)
            ],
        ),
        reply(
            "Every module already rounds to cents with quantize(Decimal('0.01')), which uses "
            "the decimal context's default: half-even, banker's rounding."
        ),
    ]


def correction_script() -> list[Step]:
    """The second run: the user's correction, acknowledged."""
    return [reply("Understood: half-up from now on, so that the totals match the old system.")]


def work_script(turns: int, write_lines: int = 800) -> list[Step]:
    """The long stretch of work: chapter 04's coding session (``coding_script``)."""
    return coding_script(turns, write_lines=write_lines)


def _said(request: Request) -> str:
    system = request.system
    if isinstance(system, list):
        system = " ".join(str(b.get("text", "")) for b in system)
    return "\n".join([system or "", *(m.text_of(msg) for msg in request.messages)])


def asks_rounding_mode(request: Request) -> bool:
    """True for the loop's request that ends with the user's question (not a fork's or a
    summary request, whose last message is their own instruction)."""
    last = m.text_of(request.last_message) if request.last_message else ""
    return (
        request.last_message.get("role") == "user"
        and QUESTION in last
        and EXTRACTION_MARKER not in last
        and COMPACT_MARKER not in last
    )


def rounding_answer(request: Request) -> Reply:
    """The model's answer to :data:`QUESTION`, from what its context holds."""
    if REMEMBERED in _said(request):
        return Reply(
            text="ROUND_HALF_UP: you asked for it early on, so that the invoices match the old "
            "system. I'll pass rounding=ROUND_HALF_UP to every quantize."
        )
    return Reply(
        text="ROUND_HALF_EVEN, banker's rounding: it is what every module uses now (the decimal "
        "default), and it has no bias over many invoices."
    )


def remembers(answer: str) -> bool:
    """Whether an answer to :data:`QUESTION` is the one the user asked for."""
    return answer.startswith(REMEMBERED)


# -- latency ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timed:
    """One model call: what it was for, the seconds it took on the fake clock, its cost."""

    purpose: str
    seconds: float
    usage: Usage
    cost: float
    """In dollars, at the price of the model that answered (0 for a model not priced)."""


class ModelLatency(Plugin):
    """Moves the agent's fake clock on by each model call's latency (our choice of model:
    ``base`` seconds, plus the reply's output at ``tokens_per_second``), and records it."""

    def __init__(self, base: float = 0.5, tokens_per_second: float = 50.0) -> None:
        self.base = base
        self.tokens_per_second = tokens_per_second
        self.calls: list[Timed] = []

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        answer = call(request)
        seconds = self.base + answer.usage.output_tokens / self.tokens_per_second
        advance = getattr(agent.clock, "advance", None)
        if advance is not None:
            advance(seconds)
        try:
            cost = pricing.cost_of(answer.usage, answer.model or request.model).total
        except KeyError:
            cost = 0.0
        self.calls.append(Timed(request.purpose, seconds, answer.usage, cost))
        return answer

    def seconds(self, purpose: str | None = None) -> float:
        """Seconds spent in calls for ``purpose`` (``turn``, ``memory``, ``compaction``), or
        in all of them."""
        return sum(c.seconds for c in self.calls if purpose is None or c.purpose == purpose)

    def count(self, purpose: str | None = None) -> int:
        """Model calls for ``purpose``, or all of them."""
        return sum(1 for c in self.calls if purpose is None or c.purpose == purpose)

    def cost(self, purpose: str | None = None) -> float:
        """Dollars spent on calls for ``purpose``, or on all of them."""
        return sum(c.cost for c in self.calls if purpose is None or c.purpose == purpose)


# -- plots --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mark:
    """A moment of the session to mark on :func:`plot_context`: after loop request ``at``."""

    at: int
    kind: str
    """``extraction``, ``microcompact``, ``session_memory`` or ``summary``."""


_STYLE = {
    "extraction": ("#3c8c5a", ":", "memory extraction"),
    "microcompact": ("#d08a1e", ":", "microcompact (tier 1)"),
    "session_memory": ("#6a4c93", "-", "session-memory compaction (tier 2)"),
    "summary": ("#c0504d", "-", "summary (tier 3)"),
}


def plot_context(
    sizes: Sequence[int],
    marks: Sequence[Mark],
    *,
    threshold: int,
    title: str = "",
    more: Sequence[tuple[str, Sequence[int], Sequence[Mark]]] = (),
) -> Figure:
    """Prompt tokens of each loop request, with the session's extractions and compactions.

    ``sizes[i]`` is the prompt of loop request ``i + 1``; a mark at ``at`` is drawn between
    request ``at`` and the next (an extraction, which follows reply ``at``, a little before a
    compaction, which comes before the next request). ``more``: other sessions, one panel each,
    below.
    """
    panels = [(title, sizes, marks), *more]
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(9, 2.9 * len(panels)), sharex=True, squeeze=False
    )
    seen: set[str] = set()
    for ax, (label, values, moments) in zip(axes[:, 0], panels, strict=True):
        xs = range(1, len(values) + 1)
        ax.plot(xs, values, color="#4a74b4", marker="o", markersize=2.5, lw=1.2)
        for mark in moments:
            colour, style, name = _STYLE[mark.kind]
            after = 0.3 if mark.kind == "extraction" else 0.6  # after the reply, before the next
            ax.axvline(
                mark.at + after,
                color=colour,
                ls=style,
                lw=1.3 if style == "-" else 1.0,
                label=None if name in seen else name,
            )
            seen.add(name)
        ax.axhline(threshold, color="#c0504d", ls="--", lw=1)
        ax.text(1, threshold + 600, f"auto-compact threshold {threshold:,}", fontsize=8.5)
        ax.set(ylabel="prompt tokens", ylim=(0, threshold * 1.15))
        ax.yaxis.set_major_formatter(lambda value, _: f"{value / 1000:.0f}K")
        ax.set_title(label, fontsize=10, loc="left")
        ax.spines[["top", "right"]].set_visible(False)
    axes[-1, 0].set_xlabel("request of the loop (forks and summary requests not counted)")
    fig.legend(loc="upper center", ncol=2, frameon=False, fontsize=8.5, bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 0.93 if len(panels) > 1 else 0.88))
    plt.close(fig)  # the notebook shows it once, as the cell's value
    return fig


__all__ = [
    "CORRECTION",
    "FIRST_PROMPT",
    "QUESTION",
    "REMEMBERED",
    "WORK_PROMPT",
    "Mark",
    "ModelLatency",
    "Timed",
    "asks_rounding_mode",
    "correction_script",
    "first_script",
    "plot_context",
    "remembers",
    "rounding_answer",
    "work_script",
]
