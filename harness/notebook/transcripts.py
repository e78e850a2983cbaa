"""What chapter 08 uses to show transcripts and resume: the workflow step, a broken runner,
a crash inside a tool, a broken index, and the chain drawn as a graph.

* The workflow step, modelled on a post-mortem of a workflow runner's resume (a runner that
  resumed a step's session only once the step was validated, so a failed format check threw
  away all of the step's finished work): a developer step that works for many turns and must
  end its answer with YAML frontmatter between two ``---`` lines. :func:`developer_script` is its
  scripted model (chapter 04's coding session, then an answer with no frontmatter);
  :func:`frontmatter_problem` is the workflow's check; :func:`answers_corrections` makes a
  scripted model answer :func:`harness.resume.correction_prompt` with the right format.
* :func:`naive_run_step`, **the broken runner**: it looks up the step's session only if the
  workflow recorded the step as validated. A step whose output failed the check has no such
  record, so its finished session is never found and the whole step runs again. Compare
  :func:`harness.resume.run_step`, which looks the session up every time.
* :class:`Crash` and :func:`ledger_tool`: a tool that records each execution, and can copy
  the transcript at a chosen moment inside a tool: what the disk would hold if the process
  died then, deterministic, with no process killed.
* :func:`naive_bind`, **the broken index**: it writes the pointer with no flush gate.
* :func:`show_entries`: a transcript's lines, one short row each; :func:`plot_chain`: its
  entries as a graph (``parentUuid`` edges, branches, the compact boundary, sidechains).

Not imported by ``harness.notebook``: chapter 08 imports it by its own name.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from pydantic import BaseModel

from harness import messages as m
from harness.atomic import write_atomic
from harness.events import Event
from harness.loop import BaseAgent
from harness.model import Step, reply
from harness.model.scripted import Reply, Request, ScriptedModel
from harness.notebook.sessions import coding_script
from harness.resume import INDEX, Check, Sessions, final_text
from harness.tools import ToolContext, tool
from harness.tools.base import Tool
from harness.transcript import BadLine, Entry, Session, Transcript

# -- the workflow step -------------------------------------------------------------------------

STEP_PROMPT = (
    "Check that every module rounds amounts to cents the same way, fix what does not, and "
    "write the helper modules we need. End with the step's report."
)
FORMAT_INSTRUCTION = (
    "Start your answer with YAML frontmatter between two lines of three dashes (---), with "
    "the keys status (done or blocked), files (how many you changed) and summary (one line)."
)
REPORT = (
    "status: done\nfiles: 9\nsummary: every module rounds to cents with quantize; "
    "helper modules written"
)


def developer_script(turns: int, *, write_lines: int = 400, formatted: bool = False) -> list[Step]:
    """The step's replies: ``turns`` turns of chapter 04's coding session; the last reply is
    the report, with frontmatter only if ``formatted`` (a model that forgot the format)."""
    script = coding_script(turns, write_lines=write_lines)
    if formatted:
        script[-1] = reply(f"---\n{REPORT}\n---\nAll modules round to cents consistently.")
    else:
        script[-1] = reply(f"Done. {REPORT.replace(chr(10), '; ')}.")
    return script


def frontmatter_problem(text: str) -> str | None:
    """The workflow's check: ``None`` if ``text`` opens with frontmatter holding ``status``,
    ``files`` and ``summary``; otherwise what is wrong."""
    lines = text.strip().splitlines()
    if not lines or lines[0].strip() != "---":
        return "the answer does not start with a line of three dashes (---)"
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        return "the frontmatter is never closed by a second line of ---"
    keys = {line.split(":", 1)[0].strip() for line in lines[1:end] if ":" in line}
    missing = [k for k in ("status", "files", "summary") if k not in keys]
    return f"the frontmatter lacks {', '.join(missing)}" if missing else None


def is_correction_request(request: Request) -> bool:
    """The request that ends with :func:`harness.resume.correction_prompt`."""
    last = request.last_message
    return last.get("role") == "user" and "output format was wrong" in m.text_of(last)


def corrected_report(request: Request) -> Reply:
    """What the model answers to a correction: the report again, formatted this time."""
    return Reply(text=f"---\n{REPORT}\n---\nThe work from before is unchanged.")


def answers_corrections(model: ScriptedModel) -> ScriptedModel:
    """Make ``model`` answer a format correction with the formatted report."""
    model.answer_when(is_correction_request, corrected_report)
    return model


def naive_run_step(
    step: str,
    prompt: str,
    check: Check,
    *,
    agent: BaseAgent,
    sessions: Sessions,
    validated: set[str],
) -> tuple[str, bool, list[Event]]:
    """THE BROKEN RUNNER (the bug of a workflow runner's post-mortem; do not copy it).

    It resumes the step's session only if ``validated`` (the workflow's record of steps whose
    output passed the check) holds the step. A step that did all its work and then failed
    the check was never recorded, so its session is never looked up, and the step runs from
    scratch with the full prompt, in a new session. Returns (session id, output ok, events).
    """
    from harness.resume import resume  # the right call, behind the wrong guard

    session_id = sessions.lookup(step) if step in validated else None
    if session_id is not None:
        resume(agent, sessions, session_id)
    else:
        transcript = sessions.new()
        agent.plugins = [p for p in agent.plugins if not isinstance(p, Transcript)]
        agent.plugins.append(transcript)
        session_id = transcript.session_id
    events = list(agent.run(prompt))
    sessions.bind(step, session_id)
    ok = check(final_text(agent.messages)) is None
    if ok:
        validated.add(step)
    return session_id, ok, events


# -- a crash inside a tool ----------------------------------------------------------------------


class StepInput(BaseModel):
    name: str


@dataclass
class Crash:
    """Copy ``source`` to ``copy`` while the tool call ``at`` (1-based) runs: the bytes a
    crash at that moment would leave on disk."""

    source: Path | None = None
    copy: Path | None = None
    at: int = 0
    done: bool = False

    def maybe(self, call: int) -> None:
        if call == self.at and not self.done and self.source is not None and self.copy:
            self.copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.source, self.copy)
            self.done = True


@dataclass
class Ledger:
    """Every execution of the ``run_step`` tool, in order (what a real side effect would
    leave behind: a migration applied, an email sent)."""

    runs: list[str] = field(default_factory=list)
    crash: Crash = field(default_factory=Crash)

    def count(self, name: str) -> int:
        return self.runs.count(name)


def ledger_tool(ledger: Ledger) -> Tool[StepInput]:
    """A tool, ``do_step(name)``, that records each execution in ``ledger`` (and lets
    ``ledger.crash`` copy the transcript while it runs)."""

    @tool(StepInput, name="do_step")
    def do_step(args: StepInput, context: ToolContext) -> str:
        """Carry out one step of the release (migrate, build, deploy) and report it."""
        ledger.runs.append(args.name)
        ledger.crash.maybe(len(ledger.runs))
        return f"{args.name}: done"

    return do_step


# -- the broken index --------------------------------------------------------------------------


def naive_bind(sessions: Sessions, name: str, session_id: str) -> None:
    """THE BROKEN INDEX: point ``name`` (and ``latest``) at ``session_id`` at once, whether or
    not its transcript is on disk yet. A crash before the transcript is flushed leaves a
    pointer to nothing. (The fix, a flush gate before a session binding is persisted, is the
    one a reviewed pull request in an agent gateway made.)"""
    index = sessions.index()
    index[name] = session_id
    index["latest"] = session_id
    write_atomic(sessions.folder / INDEX, json.dumps(index, indent=1, sort_keys=True) + "\n")


# -- showing a transcript -----------------------------------------------------------------------


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(entry: Entry) -> str:
    """One entry in a few words: its prompt, reply text and tool calls, or its results."""
    if entry.is_boundary:
        meta = (entry.model_extra or {}).get("compactMetadata", {})
        return f"compact boundary ({meta.get('trigger', '?')})"
    if entry.type == "tool-progress":  # the tool journal, beside the chain
        extra = entry.model_extra or {}
        ids = extra.get("toolUseIds")
        short = ", ".join(str(i)[-4:] for i in ids) if isinstance(ids, list) else "?"
        return f"{'started' if extra.get('state') == 'started' else 'results'} {short}"
    parts: list[str] = []
    for block in entry.blocks():
        kind = block.get("type")
        if kind == "text":
            parts.append(repr(_short(str(block.get("text", "")), 34)))
        elif kind == "tool_use":
            parts.append(f"{block.get('name')}({_short(json.dumps(block.get('input')), 24)})")
        elif kind == "tool_result":
            parts.append(f"result {str(block.get('tool_use_id'))[-4:]}")
    return (", ".join(parts) or entry.type) + (" [summary]" if entry.is_compact_summary else "")


def show_entries(entries: Iterable[Entry | BadLine], *, width: int = 92) -> None:
    """Print each line of a transcript as one short row: line, type, uuid and parent (the
    first 8 characters), and what it holds."""
    print(f"{'line':>4}  {'type':<9} {'uuid':<8}  {'parent':<8}  holds")
    for entry in entries:
        if isinstance(entry, BadLine):
            print(f"{entry.line:>4}  {'(bad)':<9} {entry.error[: width - 16]}")
            continue
        uuid = (entry.uuid or "-")[:8]
        parent = (entry.parent_uuid or "null")[:8]
        side = " (sidechain)" if entry.is_sidechain else ""
        kind = "journal" if entry.type == "tool-progress" else entry.type
        if entry.uuid is None:
            parent = "-"  # no place in the chain
        row = f"{entry.line:>4}  {kind:<9} {uuid:<8}  {parent:<8}  {describe(entry)}{side}"
        print(row if len(row) <= width else row[: width - 1] + "…")


def pretty_entry(line: str, *, limit: int = 60) -> str:
    """One JSONL line as indented JSON, every string cut to ``limit`` characters."""

    def cut(value: Any) -> Any:
        if isinstance(value, str):
            return value if len(value) <= limit else value[: limit - 1] + "…"
        if isinstance(value, list):
            return [cut(v) for v in value]
        if isinstance(value, dict):
            return {k: cut(v) for k, v in value.items()}
        return value

    return json.dumps(cut(json.loads(line)), indent=1, ensure_ascii=False)


# -- the chain as a graph -----------------------------------------------------------------------

_COLOURS = {"user": "#4a74b4", "assistant": "#d08a1e", "system": "#777777"}


def _lanes(entries: Sequence[Entry], spine: set[str]) -> dict[str, int]:
    """Lane 0 for the spine (the followed path and what it logically continues); each other
    branch gets a lane of its own, in the order its first entry appears."""
    lanes: dict[str, int] = {}
    children: dict[str, int] = {}
    next_lane = 1
    for entry in entries:
        assert entry.uuid is not None
        if entry.uuid in spine:
            lanes[entry.uuid] = 0
            continue
        parent = entry.parent_uuid
        if parent in lanes and parent not in spine and children.get(parent, 0) == 0:
            lanes[entry.uuid] = lanes[parent]
        else:
            lanes[entry.uuid] = next_lane
            next_lane += 1
        if parent is not None:
            children[parent] = children.get(parent, 0) + 1
    return lanes


def plot_chain(
    session: Session, *, sidechains: Mapping[str, Session] | None = None, title: str = ""
) -> Figure:
    """A transcript as a graph: each entry a dot at its line, ``parentUuid`` as edges.

    The path the loader follows (from the newest message back to a root or the compact
    boundary) is drawn thick; the boundary's ``logicalParentUuid`` dashed, so you see where
    the chain was cut on purpose; other branches (a rewind) in lanes above; the sidechain
    files (subagents) in lanes below, apart, numbered by their own lines.
    """
    entries = [e for e in session.entries if isinstance(e, Entry) and e.uuid and not e.is_sidechain]
    by_uuid = {str(e.uuid): e for e in entries}
    followed = {str(e.uuid) for e in session.chain}
    spine = set(followed)
    first = session.chain[0] if session.chain else None
    while first is not None and first.logical_parent_uuid in by_uuid:  # across boundaries
        current: Entry | None = by_uuid[first.logical_parent_uuid]
        while current is not None and str(current.uuid) not in spine:
            spine.add(str(current.uuid))
            current = by_uuid.get(current.parent_uuid) if current.parent_uuid else None
            if current is not None and current.parent_uuid is None:
                spine.add(str(current.uuid))
                first = current
                break
        else:
            break
    lanes = _lanes(entries, spine)
    side = dict(sidechains or {})
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.55 * (max(lanes.values(), default=0) + len(side))))
    xy = {str(e.uuid): (e.line, lanes[str(e.uuid)]) for e in entries}
    for e in entries:
        x, y = xy[str(e.uuid)]
        on_path = str(e.uuid) in followed
        if e.parent_uuid in xy:
            px, py = xy[e.parent_uuid]
            ax.plot(
                [px, x],
                [py, y],
                color="#222222" if on_path else "#bbbbbb",
                lw=2.4 if on_path else 1.0,
                zorder=1,
            )
        if e.is_boundary and e.logical_parent_uuid in xy:
            px, py = xy[e.logical_parent_uuid]
            ax.plot([px, x], [py, y], color="#777777", ls="--", lw=1.2, zorder=1)
        colour = _COLOURS.get(e.type, "#aaaaaa")
        marker = "s" if e.is_boundary else "D" if e.is_compact_summary else "o"
        ax.scatter(
            [x],
            [y],
            s=70 if on_path else 40,
            color=colour,
            marker=marker,
            zorder=2,
            alpha=1.0 if on_path or str(e.uuid) in spine else 0.45,
            edgecolors="black" if on_path else "none",
            linewidths=0.8,
        )
        prompt = (e.message or {}).get("content")
        if e.type == "user" and isinstance(prompt, str):
            ax.annotate(
                _short(prompt, 18),
                (x, y),
                textcoords="offset points",
                xytext=(0, 8),
                ha="center",
                fontsize=7.5,
            )
        if e.is_boundary:
            ax.annotate(
                "compact\nboundary",
                (x, y),
                textcoords="offset points",
                xytext=(0, -22),
                ha="center",
                fontsize=7.5,
                color="#555555",
            )
    lane = -1
    for name, sub in side.items():
        subs = [e for e in sub.entries if isinstance(e, Entry) and e.uuid]
        sub_xy = {e.uuid: (e.line, lane) for e in subs}
        for e in subs:
            x, y = sub_xy[e.uuid]
            if e.parent_uuid in sub_xy:
                px, py = sub_xy[e.parent_uuid]
                ax.plot([px, x], [py, y], color="#6a4c93", lw=1.2, zorder=1)
            ax.scatter([x], [y], s=40, color=_COLOURS.get(e.type, "#aaaaaa"), zorder=2)
        ax.annotate(
            f"sidechain file: {name}",
            (0.5, lane),
            textcoords="offset points",
            xytext=(0, 9),
            fontsize=7.5,
            color="#6a4c93",
        )
        lane -= 1
    ax.set_yticks([])
    ax.set_xlabel("line of the file (a sidechain file: its own lines)")
    ax.spines[["top", "right", "left"]].set_visible(False)
    top = max(lanes.values(), default=0)
    ax.set_ylim(lane + 0.5, top + 0.7)
    legend = [
        Line2D([], [], color=_COLOURS["user"], marker="o", ls="", label="user entry"),
        Line2D([], [], color=_COLOURS["assistant"], marker="o", ls="", label="assistant entry"),
        Line2D([], [], color=_COLOURS["system"], marker="s", ls="", label="compact boundary"),
        Line2D([], [], color=_COLOURS["user"], marker="D", ls="", label="summary"),
        Line2D([], [], color="#222222", lw=2.4, label="followed path (what resume loads)"),
        Line2D([], [], color="#bbbbbb", lw=1.0, label="parentUuid"),
        Line2D([], [], color="#777777", ls="--", lw=1.2, label="logicalParentUuid"),
    ]
    ax.legend(
        handles=legend,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.28),
        ncol=4,
        frameon=False,
        fontsize=8,
    )
    if title:
        ax.set_title(title, fontsize=10, loc="left")
    fig.tight_layout()
    plt.close(fig)  # the notebook shows it once, as the cell's value
    return fig


def plot_costs(rows: Sequence[tuple[str, int, float, float]]) -> Figure:
    """Side by side, one bar per row (label, model calls, seconds on the clock, dollars)."""
    labels = [r[0] for r in rows]
    colours = ["#999999", "#c0504d", "#3c8c5a", "#4a74b4"]
    fig, axes = plt.subplots(1, 3, figsize=(10, 0.6 + 0.55 * len(rows)))

    def duration(seconds: float) -> str:
        return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min"

    panels: list[tuple[str, int, Callable[[float], str]]] = [
        ("model calls", 1, lambda v: f"{v:.0f}"),
        ("time waited", 2, duration),
        ("cost", 3, lambda v: f"${v:.2f}"),
    ]
    for n, (ax, (name, k, fmt)) in enumerate(zip(axes, panels, strict=True)):
        values = [float(r[k]) for r in rows]
        bars = ax.barh(labels, values, color=[colours[i % len(colours)] for i in range(len(rows))])
        for bar, value in zip(bars, values, strict=True):
            ax.text(
                bar.get_width(),
                bar.get_y() + bar.get_height() / 2,
                " " + fmt(value),
                va="center",
                fontsize=8.5,
            )
        ax.set_title(name, fontsize=10, loc="left")
        ax.set_xticks([])
        ax.spines[["top", "right", "bottom"]].set_visible(False)
        ax.invert_yaxis()
        if n:
            ax.set_yticks([])
        ax.set_xlim(0, (max(values) or 1) * 1.35)
    fig.tight_layout()
    plt.close(fig)
    return fig


__all__ = [
    "FORMAT_INSTRUCTION",
    "REPORT",
    "STEP_PROMPT",
    "Crash",
    "Ledger",
    "answers_corrections",
    "corrected_report",
    "describe",
    "developer_script",
    "frontmatter_problem",
    "is_correction_request",
    "ledger_tool",
    "naive_bind",
    "naive_run_step",
    "plot_chain",
    "plot_costs",
    "pretty_entry",
    "show_entries",
]
