"""Run a chapter as a learner with a key would, against :mod:`local_api` instead of the API.

:func:`run_chapter` executes a chapter notebook top to bottom in a fresh kernel whose
environment has ``ANTHROPIC_API_KEY`` set and ``ANTHROPIC_BASE_URL`` pointing at a
:class:`~local_api.LocalMessagesAPI` on loopback, so every cell that goes live (the chapter's
optional live cell, and any cell that calls ``default_model()``) talks to it through the SDK.

:func:`stand_in` is the model behind the server: it plays what a real model would do with
each live cell's prompt (the tool calls the chapter's text says to expect, then an answer),
chapter 05's summary for a compaction request, chapter 07's extraction for a memory request,
and the command line's demo model for anything else (calling only the tools the request
offers). Each conversation's reply is chosen by how many replies it already holds since its
latest prompt, so it does not matter which cell, agent or fork sends it, or in what order.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from harness import messages as m
from harness.cli.demo import demo_reply
from harness.compaction.summary import is_compaction_request
from harness.model import ScriptedModel
from harness.model.scripted import Reply, Request, Step, reply, said, tool_call
from harness.model.scripted_memory import is_extraction_request, scripted_extraction
from harness.model.scripted_summary import scripted_summary
from harness.notebook.extensions_runs import NOTES
from tests.local_api import LocalMessagesAPI

CHAPTERS = Path(__file__).resolve().parent.parent / "chapters"
KEY = "local-test-key-not-real"


def replies_since_prompt(request: Request) -> int:
    """How many assistant replies follow the conversation's latest prompt: a user message with
    text and no tool results (the text beside a tool result is a note to the model, such as
    who approved the call, not a new task)."""
    count = 0
    for message in reversed(request.messages):
        if message.get("role") == "assistant":
            count += 1
        elif not m.tool_results(message) and any(
            b.get("type") == "text" for b in m.blocks(message)
        ):
            return count
    return count


def conversation(*steps: Reply) -> Callable[[Request], Step]:
    """Reply ``steps[k]`` to a request that holds ``k`` replies since its prompt (the last
    step again if there are more)."""

    def respond(request: Request) -> Step:
        return steps[min(replies_since_prompt(request), len(steps) - 1)]

    return respond


LONG_ANSWER = "\n".join(
    f"{n}. Country {n}: a large country, {21 - n} million square kilometres of land and water, "
    "with mountains, rivers, cities and a long history of its own."
    for n in range(1, 21)
)
"""Chapter 06's answer: longer than its 300-token ``max_tokens``, shorter than 2,000."""

GREET = 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n'
TEST_GREET = (
    "from greet import greet\n\n\n"
    'def test_greet() -> None:\n    assert greet("Ada") == "Hello, Ada!"\n'
)
GREET_STEPS = ("Write greet.py", "Write test_greet.py", "Write README.md")


def greet_todos(done: int) -> list[dict[str, str]]:
    """Chapter 12's list with ``done`` steps completed and the next one in progress."""
    return [
        {
            "content": step,
            "status": "completed" if i < done else "in_progress" if i == done else "pending",
            "activeForm": step.replace("Write", "Writing"),
        }
        for i, step in enumerate(GREET_STEPS)
    ]


# What a real model would do with each live cell's prompt, as the chapters describe it. The
# first match wins, so a follow-up prompt (which its conversation holds after the first one)
# and a fork's question (whose conversation holds its parent's prompt) come before the prompt
# they follow.
CONVERSATIONS: list[tuple[str, Callable[[Request], Step]]] = [
    (  # 00: one question, one answer
        "what does an agent harness do?",
        conversation(
            reply(
                "An agent harness runs the loop around a model: it sends the conversation, "
                "runs the tools the model asks for and feeds their results back."
            )
        ),
    ),
    (  # 01: the release question over the two project tools
        "before the release",
        conversation(
            reply("Let me look.", tool_calls=[tool_call("list_files")]),
            reply(
                tool_calls=[
                    tool_call("read_file", path="todo.md"),
                    tool_call("read_file", path="notes.txt"),
                ]
            ),
            reply("Fix the login bug and write the release notes; the release is on Friday."),
        ),
    ),
    (  # 02: a glob, three reads at once, a wc -l that plan mode denies, the counts
        "How many lines does each file",
        conversation(
            reply(tool_calls=[tool_call("glob", pattern="*")]),
            reply(
                tool_calls=[
                    tool_call("read_file", path="app.py"),
                    tool_call("read_file", path="test_app.py"),
                    tool_call("read_file", path="notes.txt"),
                ]
            ),
            reply(tool_calls=[tool_call("bash", command="wc -l app.py test_app.py notes.txt")]),
            reply("app.py: 7 lines, test_app.py: 5 lines, notes.txt: 1 line."),
        ),
    ),
    (  # 06: an answer longer than max_tokens, so Recovery escalates
        "twenty largest countries",
        conversation(reply(LONG_ANSWER)),
    ),
    (  # 08: the resumed agent's follow-up first (its conversation holds the first prompt too)
        "What is twice the value",
        conversation(reply("Twice 3 is 6.")),
    ),
    (
        "What is PRICE in prices.py",
        conversation(
            reply(tool_calls=[tool_call("read_file", path="prices.py")]),
            reply("PRICE is 3."),
        ),
    ),
    (  # 09: a refund (allowed) and a transfer (asks a person)
        "Refund order 7",
        conversation(
            reply(
                "Refunding order 7, then paying Bob.",
                tool_calls=[
                    tool_call("refund", order="order-7", amount=20),
                    tool_call("transfer", to="bob", amount=100),
                ],
            ),
            reply("Done: order 7 refunded and Bob paid."),
        ),
    ),
    (  # 10: the forks' questions first (each fork's conversation holds the parent's prompt)
        "which rate does app/tax.py use",
        conversation(reply("app/tax.py uses VAT_RATE, 0.2.")),
    ),
    (
        "which rate does app/billing.py use",
        conversation(reply("app/billing.py uses FEE_RATE, 0.03.")),
    ),
    (
        "Read app/tax.py and app/billing.py",
        conversation(
            reply(
                tool_calls=[
                    tool_call("read_file", path="app/tax.py"),
                    tool_call("read_file", path="app/billing.py"),
                ]
            ),
            reply("app/tax.py adds tax; app/billing.py bills customers."),
        ),
    ),
    (  # 11: a read, a write (accept_edits lets it through), a last word
        "Read app/tax.py, then write NOTES.md",
        conversation(
            reply(tool_calls=[tool_call("read_file", path="app/tax.py")]),
            reply(
                tool_calls=[
                    tool_call(
                        "write_file", path="NOTES.md", content="app/tax.py rounds to cents.\n"
                    )
                ]
            ),
            reply("Done: NOTES.md says how app/tax.py rounds."),
        ),
    ),
    (  # 12: a list first, then each file with the list updated beside it, then all done
        "write greet.py",
        conversation(
            reply("A list first.", tool_calls=[tool_call("todo_write", todos=greet_todos(0))]),
            reply(tool_calls=[tool_call("write_file", path="greet.py", content=GREET)]),
            reply(
                tool_calls=[
                    tool_call("todo_write", todos=greet_todos(1)),
                    tool_call("write_file", path="test_greet.py", content=TEST_GREET),
                ]
            ),
            reply(
                tool_calls=[
                    tool_call("todo_write", todos=greet_todos(2)),
                    tool_call(
                        "write_file", path="README.md", content="Run: pytest test_greet.py\n"
                    ),
                ]
            ),
            reply(tool_calls=[tool_call("todo_write", todos=greet_todos(3))]),
            reply("Done: greet.py, test_greet.py and README.md are written."),
        ),
    ),
    (  # 13: the skill first, the changelog, the notes, rm -rf (the guard blocks it), then rm
        "Write the release notes for 1.4.0",
        conversation(
            reply(tool_calls=[tool_call("Skill", skill="release-notes")]),
            reply(tool_calls=[tool_call("read_file", path="CHANGELOG.md")]),
            reply(tool_calls=[tool_call("write_file", path="RELEASE_NOTES.md", content=NOTES)]),
            reply(tool_calls=[tool_call("bash", command="rm -rf build")]),
            reply(tool_calls=[tool_call("bash", command="rm build/old.log")]),
            reply("RELEASE_NOTES.md is written and build/ is empty."),
        ),
    ),
    (  # 14: the deferred tool loaded by name, then called, then the answer
        "Who is working on ticket T-103",
        conversation(
            reply(
                "Loading the tracker's tool.",
                tool_calls=[tool_call("ToolSearch", query="select:mcp__course__lookup_ticket")],
            ),
            reply(tool_calls=[tool_call("mcp__course__lookup_ticket", ticket_id="T-103")]),
            reply("chen is on T-103: search is slow for queries with a leading wildcard."),
        ),
    ),
    (  # 15: a real command started in the background, waited for, then the answer
        "in the background, wait for it to finish",
        conversation(
            reply(
                "Starting it in the background.",
                tool_calls=[
                    tool_call(
                        "bash",
                        command="sleep 3; echo 'all 3 checks passed'",
                        description="the checks",
                        run_in_background=True,
                    )
                ],
            ),
            reply(tool_calls=[tool_call("task_output", task_id="b1", block=True, timeout=30)]),
            reply("It printed: all 3 checks passed."),
        ),
    ),
]


def stand_in(*, summaries: bool = True) -> ScriptedModel:
    """The model behind the local server (see the module's docstring). ``summaries=False``
    answers a compaction request with a tool call and no text, as a model that reaches for
    its tools instead of summarising does (the request offers them, for the cache's sake)."""
    model = ScriptedModel(id_prefix="live")
    if summaries:
        model.answer_when(is_compaction_request, scripted_summary)
    else:
        model.answer_when(
            is_compaction_request,
            lambda _: reply(tool_calls=[tool_call("read_file", path="app/tax.py")]),
        )
    model.answer_when(is_extraction_request, scripted_extraction)
    for text, respond in CONVERSATIONS:
        model.answer_when(said(text), respond)
    model.answer_when(lambda _request: True, offered_tools_only)
    return model


def offered_tools_only(request: Request) -> Reply:
    """The demo model's reply, but never a call of a tool the request does not offer (a real
    model can only call what it is given; the demo model assumes the command line's tools)."""
    answer = demo_reply(request)
    offered = {str(t.get("name")) for t in request.tools or []}
    if all(call.name in offered for call in answer.tool_calls):
        return answer
    return reply(answer.text or "I have no tool for that.")


@dataclass
class Executed:
    """A chapter after a live run: its cells with their outputs."""

    notebook: nbformat.NotebookNode
    talked: list[str] = field(default_factory=list)
    """The ids of the cells that sent the server a request, in order."""
    again: dict[str, nbformat.NotebookNode] = field(default_factory=dict)
    """The live cell run again after the whole chapter, once per change of the server (see
    :func:`run_chapter`), by the change's name."""

    def errors(self) -> list[str]:
        """Every error output and every write to stderr, with its cell (a live cell run again
        is named by its change)."""
        found = []
        cells = [(f"cell {i}", cell) for i, cell in enumerate(self.notebook.cells)]
        cells += [(f"live cell again, {name}", cell) for name, cell in self.again.items()]
        for where, cell in cells:
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    found.append(f"{where} ({cell.get('id')}): {output.ename}: {output.evalue}")
                elif output.output_type == "stream" and output.name == "stderr":
                    found.append(f"{where} ({cell.get('id')}) wrote to stderr: {output.text}")
        return found

    def text_of(self, cell_id: str) -> str:
        """All the text a cell showed: its prints and the plain form of its displays."""
        return shown(next(c for c in self.notebook.cells if c.get("id") == cell_id))

    def live_cells(self) -> list[str]:
        """The ids of the cells that ask ``live_cell(...)`` whether to run."""
        return [
            str(c.get("id"))
            for c in self.notebook.cells
            if c.cell_type == "code" and "if live_cell(" in c.source
        ]


def shown(cell: nbformat.NotebookNode) -> str:
    """All the text a cell showed: its prints and the plain form of its displays."""
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif "data" in output:
            parts.append(str(output.data.get("text/plain", "")))
    return "".join(parts)


def chapter_path(number: str) -> Path:
    (path,) = CHAPTERS.glob(f"{number}_*.ipynb")
    return path


Change = Callable[[LocalMessagesAPI], None]
"""A change of the server between runs of a live cell: a gateway without an endpoint, another
model behind it."""


def run_chapter(
    number: str,
    server: LocalMessagesAPI,
    env: Mapping[str, str] | None = None,
    then: Mapping[str, Change] | None = None,
) -> Executed:
    """Execute chapter ``number`` with a key and ``server``'s address in its kernel's
    environment (the server must be running).

    Every cell runs, whatever the earlier ones did (``allow_errors``), so one run reports every
    failing cell. Then, in the same kernel, for each change in ``then``: the change is made to
    the server and the live cell runs again (a failure of the server, told in the live cell,
    without running the whole chapter once more). The notebook file itself is not changed.
    """
    notebook = nbformat.read(chapter_path(number), as_version=4)
    environment = {
        **(os.environ if env is None else env),
        "ANTHROPIC_API_KEY": KEY,
        "ANTHROPIC_BASE_URL": server.url,
    }
    environment.pop("HARNESS_MODEL", None)
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        allow_errors=True,
        record_timing=False,
        resources={"metadata": {"path": str(CHAPTERS)}},
    )
    executed = Executed(notebook)
    with client.setup_kernel(env=environment):
        for index, cell in enumerate(notebook.cells):
            before = len(server.received)
            client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
            if len(server.received) > before:
                executed.talked.append(str(cell.get("id")))
        for name, change in (then or {}).items():
            change(server)
            (live,) = executed.live_cells()
            index = next(i for i, c in enumerate(notebook.cells) if c.get("id") == live)
            first = notebook.cells[index]
            again = copy.deepcopy(first)
            client.execute_cell(again, index, execution_count=client.code_cells_executed + 1)
            notebook.cells[index] = first  # nbclient puts the cell it ran in the notebook
            executed.again[name] = again
    return executed


# What each live cell must show: its mechanism at work, as the chapter says to expect.
EVIDENCE: dict[str, list[str]] = {
    "00": [r"An agent harness runs the loop", r"cost: \$0\.\d+"],
    "01": [r"✓ read_file → - fix the login bug", r"done after 3 model call\(s\)"],
    "02": [r"✓ read_file → 1 def total", r"🔒 bash: deny \(plan mode", r"app\.py: 7 lines"],
    "03": [r"request 1 wrote: [1-9]\d*", r"request 2 read: +[1-9]\d*"],
    "04": [r"call 72: estimated [\d,]+, counted [\d,]+", r"after microcompact: estimated"],
    "05": [r"Primary request and intent", r"put back: \['Amounts are Decimal"],
    "06": [r"reply cut at 300 output tokens: discarded, asking again with 2,000", r"out [3-9]\d\d"],
    "07": [r"# Session memory", r"ROUND_HALF_UP", r"fork call 1"],
    "08": [r"✓ read_file → 1 PRICE = 3", r"↺ resumed \w+: 4 messages", r"Twice 3 is 6"],
    "09": [r"⏸ awaiting approval", r"ledger: \['refund order-7 20', 'transfer bob 100'\]"],
    "10": [r"[1-9][\d,]* of [\d,]+ prompt tokens read from the cache\n(.|\n)*read from the cache"],
    "11": [r"✓ write_file → Wrote 1 line to NOTES\.md", r"NOTES\.md: app/tax\.py rounds"],
    "12": [r"⚙ todo_write", r"- \[x\] ", r"(\d+)/\1 done \(\d+ writes\)", r"files: \[.*\.py"],
    "13": [
        r"⚙ Skill",
        r"PreToolUse bash: blocking error",
        r"✓ bash →",
        r"files: \[.*'RELEASE_NOTES\.md'",
        r"build/: \[\]",
    ],
    "14": [
        r"⚙ ToolSearch",
        r"mcp__course__lookup_ticket: allow \(allow rule",
        r"✓ mcp__course__lookup_ticket →\s+T-103 \[open\] assigned to chen",
        r"cost: \$0\.\d+",
    ],
    "15": [
        r"⚙ bash",
        r"✓ bash →\s+Command running in background",
        r"✓ task_output →",
        r"all 3 checks passed",
        r"cost: \$0\.\d+",
    ],
}


def live_run(
    number: str, server: LocalMessagesAPI, then: Mapping[str, Change] | None = None
) -> Executed:
    """Run chapter ``number`` live against ``server``, and its live cell again after each
    change in ``then`` (:func:`run_chapter`).

    Fails (AssertionError) on any error output or stderr in any cell, on a request the model
    behind the server could not answer, and on a live cell that did not go live. With changes,
    also on a cell other than the live cell that sent the server a request: a change of the
    server could reach that cell too, which only a run of the whole chapter after the change
    would show.
    """
    with server:
        executed = run_chapter(number, server, then=then)
    errors = executed.errors()
    if errors:
        raise AssertionError(f"chapter {number} live:\n" + "\n".join(errors))
    if server.failures:
        raise AssertionError(f"the stand-in model could not answer: {server.failures}")
    (cell,) = executed.live_cells()
    runs = {"": executed.text_of(cell), **{f" ({n})": shown(c) for n, c in executed.again.items()}}
    for name, output in runs.items():
        if not output.startswith("Live: "):
            raise AssertionError(f"chapter {number}'s live cell{name} did not go live:\n{output}")
    others = [talker for talker in executed.talked if talker != cell]
    if then and others:
        raise AssertionError(
            f"chapter {number}: cells {others} talk to the server too, so a change of the server "
            "needs a run of the whole chapter, not of its live cell alone"
        )
    return executed


def check_evidence(number: str, server: LocalMessagesAPI, executed: Executed) -> None:
    """Chapter ``number``'s live cell shows :data:`EVIDENCE`, and every turn it sent
    ``server`` was streamed."""
    (cell,) = executed.live_cells()
    output = executed.text_of(cell)
    for pattern in EVIDENCE[number]:
        if not re.search(pattern, output):
            raise AssertionError(f"chapter {number}: no {pattern!r} in\n{output}")
    if not server.received:
        raise AssertionError(f"chapter {number} sent nothing to the server")
    turns = [r for r in server.received if r.path == "/v1/messages"]
    if not all(r.body.get("stream") is True for r in turns):  # the live model always streams
        raise AssertionError(f"chapter {number} sent a request without streaming")


def check_live_chapter(number: str) -> None:
    """Chapter ``number`` runs live with no error, and its live cell shows :data:`EVIDENCE`."""
    server = LocalMessagesAPI(stand_in())
    check_evidence(number, server, live_run(number, server))
