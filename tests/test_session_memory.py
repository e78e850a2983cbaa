"""Session memory over whole sessions: when it extracts, what it records, how it fails.

The sessions are scripted; the memory fork is answered by ``scripted_extraction``, which
builds its edits from the request (so every fact here was computed from the conversation).
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import harness.compaction.auto
import harness.compaction.microcompact
import harness.fork
import harness.memory.plugin
from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.auto import AutoCompact
from harness.compaction.events import Compacted
from harness.compaction.summary import is_compaction_request
from harness.events import AssistantReplied, Event, TurnEnded
from harness.fork import ForkResult
from harness.loop import AgentConfig, BaseAgent, Plugin, Rewrite
from harness.memory import (
    EXTRACTION_MARKER,
    SECTIONS,
    ExtractionSchedule,
    Fact,
    MemoryNotUpdated,
    MemoryUpdated,
    SessionMemory,
    parse,
)
from harness.model import Reply, Request, ScriptedModel, Step, ToolCall, faults, reply, tool_call
from harness.model.scripted_memory import is_extraction_request, scripted_extraction
from harness.model.scripted_summary import scripted_summary
from harness.notebook.sessions import coding_script, make_project
from harness.pricing import prompt_tokens
from harness.prompt import PromptCaching
from harness.tokens import ContextBudget
from harness.tools import builtin_tools

EVERY_REPLY = ExtractionSchedule(first_tokens=1, every_tokens=1, tool_calls=1)
"""Extract after every reply that called a tool: small sessions exercise every path."""

Responder = Callable[[Request], Step]


# --- the schedule ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("context", "at_last", "calls", "due"),
    [
        (10_000, None, 3, True),  # first: 10K tokens and 3 tool calls
        (9_999, None, 3, False),
        (10_000, None, 2, False),
        (90_000, None, 2, False),
        (9_999, None, 30, False),
        (15_000, 10_000, 3, True),  # then: 5K more and 3 calls
        (14_999, 10_000, 3, False),
        (15_000, 10_000, 2, False),
        (60_000, 10_000, 0, False),
        (10_001, 10_000, 99, False),
    ],
)
def test_extraction_is_due_at_the_observed_thresholds(
    context: int, at_last: int | None, calls: int, due: bool
) -> None:
    assert ExtractionSchedule().due(context, at_last, calls) is due


def test_a_schedule_can_be_given_other_numbers_but_not_nonsense() -> None:
    tokens_only = ExtractionSchedule(first_tokens=100, every_tokens=50, tool_calls=0)
    assert tokens_only.due(100, None, 0) and not tokens_only.due(99, None, 0)
    assert tokens_only.due(150, 100, 0) and not tokens_only.due(149, 100, 0)
    for bad in ({"first_tokens": 0}, {"every_tokens": -1}, {"tool_calls": -1}):
        with pytest.raises(ValidationError):
            ExtractionSchedule(**bad)


# --- helpers -----------------------------------------------------------------------------------


def forks_by_turn(*first_turns: Responder) -> Responder:
    """Answer each memory fork's first request with the next responder (the last one repeats);
    a fork's later requests (after its edits were answered) get ``scripted_extraction``."""
    queue = list(first_turns)

    def respond(request: Request) -> Step:
        if EXTRACTION_MARKER not in m.text_of(request.last_message):
            return scripted_extraction(request)
        step = queue.pop(0) if len(queue) > 1 else queue[0]
        return step(request)

    return respond


def session(
    root: Path,
    script: Sequence[Step],
    *,
    schedule: ExtractionSchedule | None = EVERY_REPLY,
    responder: Responder = scripted_extraction,
    plugins: Sequence[Plugin] = (),
    tools: Any = None,
    functions: int = 5,
) -> tuple[Agent, ScriptedModel, SessionMemory]:
    """A scripted coding agent with session memory in ``root/.harness/MEMORY.md``."""
    if not (root / "app").exists():
        make_project(root, functions=functions)
    clock = FakeClock()
    model = ScriptedModel(script, clock=clock)
    model.answer_when(is_extraction_request, responder)
    model.answer_when(is_compaction_request, scripted_summary)
    memory = SessionMemory(root / ".harness" / "MEMORY.md", schedule=schedule)
    agent = Agent(
        model,
        tools=builtin_tools() if tools is None else tools,
        workspace=root,
        clock=clock,
        plugins=[memory, *plugins],
        config=AgentConfig(max_turns=200),
        approver=lambda request: True,
    )
    return agent, model, memory


def run(agent: BaseAgent, prompt: str) -> list[Event]:
    events = list(agent.run(prompt))
    assert isinstance(events[-1], TurnEnded), events[-1]
    return events


def of_type(events: list[Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def reads(*paths: str) -> list[Step]:
    return [reply(f"Reading {p}.", tool_calls=[tool_call("read_file", path=p)]) for p in paths]


def fork_requests(model: ScriptedModel) -> list[Request]:
    return [r for r in model.requests if is_extraction_request(r)]


def in_section(memory: SessionMemory, section: str) -> list[Fact]:
    return [f for f in memory.facts if f.section == section]


# --- when it extracts --------------------------------------------------------------------------


def test_extractions_happen_exactly_where_the_schedule_says(tmp_path: Path) -> None:
    agent, _, memory = session(tmp_path, coding_script(48), schedule=None, functions=20)
    events = run(agent, "Check that every module rounds amounts to cents the same way.")

    # Each reply's context (as its usage says) and tool calls, replayed against the rule.
    replies = [e.message for e in of_type(events, AssistantReplied)]
    expected: list[int] = []
    at_last: int | None = None
    since = 0
    for n, message in enumerate(replies, start=1):
        context = prompt_tokens(message.usage) + message.usage.output_tokens
        since += sum(b.type == "tool_use" for b in message.content)
        first = at_last is None and context >= 10_000
        later = at_last is not None and context - at_last >= 5_000
        if since >= 3 and (first or later):
            expected.append(n)
            at_last, since = context, 0

    done = memory.extractions
    assert [e.reply for e in done] == expected
    assert len(done) >= 3 and all(e.ok for e in done)
    contexts = [e.context_tokens for e in done]
    assert contexts[0] >= 10_000
    assert all(b - a >= 5_000 for a, b in itertools.pairwise(contexts))
    # The first was not due a reply earlier: below 10K then.
    before = replies[expected[0] - 2].usage
    assert prompt_tokens(before) + before.output_tokens < 10_000
    assert len(of_type(events, MemoryUpdated)) == len(done)


def test_no_extraction_without_three_tool_calls_whatever_the_context(tmp_path: Path) -> None:
    talk = "All amounts are rounded with quantize to two places. " * 300  # ~4K tokens
    script = [reply(talk) for _ in range(4)] + reads("app/billing.py", "app/tax.py", "README.md")
    agent, _, memory = session(tmp_path, [*script, reply("Done.")], schedule=None)

    for n in range(4):
        run(agent, f"Explain rounding, part {n + 1}.")
    assert memory.extractions == []  # far past 10K tokens, but no tool call yet

    run(agent, "Now read the modules.")
    assert [e.reply for e in memory.extractions] == [7]  # the third tool call


# --- what it records ---------------------------------------------------------------------------


def test_a_correction_the_user_made_early_is_in_errors_and_corrections(tmp_path: Path) -> None:
    script = [
        *reads("app/billing.py", "app/tax.py"),
        reply("Rounding half even everywhere."),
        *reads("app/currency.py", "app/invoices.py"),
        reply("Switched to half up."),
        *reads("app/reports.py", "app/exports.py", "app/auth.py"),
        reply("Checked the rest."),
    ]
    schedule = ExtractionSchedule(first_tokens=1, every_tokens=1, tool_calls=3)
    agent, _, memory = session(tmp_path, script, schedule=schedule)

    run(agent, "Make billing round amounts to cents.")
    run(agent, "Actually, round half up instead of half even.")
    run(agent, "Check the other modules too.")

    assert len(memory.extractions) >= 2
    corrections = in_section(memory, "Errors and corrections")
    said = [f for f in corrections if "round half up instead of half even" in f.text]
    assert len(said) == 1 and said[0].source == "user"
    on_file = parse(memory.path.read_text())
    assert said[0] in on_file


def test_a_failed_tool_call_is_recorded_with_its_id_and_turn(tmp_path: Path) -> None:
    script = [
        *reads("app/billing.py", "app/missing.py", "app/tax.py"),
        reply("app/missing.py does not exist; the others round alike."),
    ]
    schedule = ExtractionSchedule(first_tokens=1, every_tokens=1, tool_calls=3)
    agent, _, memory = session(tmp_path, script, schedule=schedule)

    run(agent, "Read the billing modules.")

    failed = next(r for x in agent.messages for r in m.tool_results(x) if r.get("is_error"))
    errors = [f for f in in_section(memory, "Errors and corrections") if "missing.py" in f.text]
    assert len(errors) == 1
    assert errors[0].source == failed["tool_use_id"]
    assert errors[0].turn == 2  # the second reply made the call
    assert memory.extractions[0].reply == 3


def test_a_newer_fact_supersedes_the_old_one_which_is_gone(tmp_path: Path) -> None:
    script = [
        *reads("app/billing.py"),
        reply(
            "Editing billing.",
            tool_calls=[
                tool_call(
                    "edit_file",
                    path="app/billing.py",
                    old_string='"""The billing module."""',
                    new_string='"""The billing module (checked)."""',
                )
            ],
        ),
        reply("Done."),
    ]
    agent, _, memory = session(tmp_path, script)

    run(agent, "Check billing.")

    first, second = memory.extractions[:2]
    [state] = in_section(memory, "Current state")
    [billing] = [f for f in in_section(memory, "Files and functions") if "billing" in f.text]
    assert billing.text == "app/billing.py: read, edited"
    old_billing = next(f for f in first.added if f.text == "app/billing.py: read")
    assert billing.supersedes == old_billing.id
    assert old_billing in second.superseded
    assert old_billing.id not in {f.id for f in memory.facts}
    assert old_billing.id not in {f.id for f in parse(memory.path.read_text())}
    assert state.supersedes is not None
    assert state.supersedes in {f.id for f in second.superseded}
    assert "Editing billing." in state.text


def test_a_hand_edit_is_seen_by_the_next_extraction(tmp_path: Path) -> None:
    script = [*reads("app/billing.py", "app/tax.py"), reply("Done.")]
    agent, model, memory = session(tmp_path, script)
    run(agent, "Read billing.")
    path = memory.path
    path.write_text(path.read_text().replace("## Learnings\n", "## Learnings\n- Use cents.\n"))

    model.extend([*reads("app/currency.py"), reply("Done.")])
    run(agent, "Read currency.")

    quoted = m.text_of(fork_requests(model)[-2].last_message)  # the last fork's first request
    assert "- Use cents." in quoted
    [hand] = [f for f in memory.facts if f.text == "Use cents."]
    assert hand.source == "hand-edit" and hand.id is not None
    assert hand in parse(path.read_text())


# --- how it fails ------------------------------------------------------------------------------


def two_extractions(
    tmp_path: Path, second: Responder, **options: Any
) -> tuple[Agent, ScriptedModel, SessionMemory, str, list[Event]]:
    """A session whose first extraction works and whose second fork is answered by ``second``.

    Returns the agent, model, memory, the file's text after the first, and the second run's
    events.
    """
    script = [*reads("app/billing.py"), reply("Done."), *reads("app/tax.py"), reply("Done.")]
    agent, model, memory = session(
        tmp_path, script, responder=forks_by_turn(scripted_extraction, second), **options
    )
    run(agent, "Read billing.")
    assert [e.ok for e in memory.extractions] == [True]
    return agent, model, memory, memory.path.read_text(), run(agent, "Read tax.")


def assert_kept(memory: SessionMemory, text: str, events: list[Event], reason: str) -> None:
    [failed] = of_type(events, MemoryNotUpdated)
    assert reason in failed.reason and "the previous memory is kept" in str(failed)
    assert memory.extractions[-1].ok is False and reason in memory.extractions[-1].reason
    assert memory.path.read_text() == text
    assert memory.facts == parse(text)
    assert not of_type(events, MemoryUpdated)
    assert [p.name for p in memory.path.parent.iterdir()] == ["MEMORY.md"]


@pytest.mark.parametrize(
    "error",
    [faults.invalid_request("x"), faults.overloaded(), faults.server_error()],
    ids=["400", "529", "500"],
)
def test_an_api_error_in_the_fork_keeps_the_memory_and_the_file(
    tmp_path: Path, error: Exception
) -> None:
    _, _, memory, text, events = two_extractions(tmp_path, lambda request: error)
    assert_kept(memory, text, events, "the extraction request failed")
    assert memory.extractions[-1].usage.calls == 0


def test_a_file_broken_by_hand_is_left_as_it_is_and_said(tmp_path: Path) -> None:
    script = [*reads("app/billing.py"), reply("Done."), *reads("app/tax.py"), reply("Done.")]
    agent, model, memory = session(tmp_path, script)
    run(agent, "Read billing.")
    facts = list(memory.facts)
    broken = memory.path.read_text() + "\nSomeone typed a paragraph here.\n"
    memory.path.write_text(broken)
    forks = len(fork_requests(model))

    events = run(agent, "Read tax.")

    [failed] = of_type(events, MemoryNotUpdated)
    line = broken.splitlines().index("Someone typed a paragraph here.") + 1
    assert f"MEMORY.md line {line}" in failed.reason and "fix the file by hand" in failed.reason
    assert memory.path.read_text() == broken  # never overwritten
    assert memory.facts == facts
    assert len(fork_requests(model)) == forks  # no fork was started


def refused_edits(request: Request) -> Reply:
    return reply(
        "Updating.",
        tool_calls=[
            tool_call("edit_file", path="app/billing.py", old_string="RATE_0", new_string="HACKED"),
            tool_call(
                "edit_file", path=".harness/MEMORY.md", old_string="## Task", new_string="## Todo"
            ),
            tool_call("write_file", path=".harness/MEMORY.md", content="not a memory file"),
        ],
    )


def test_a_fork_whose_every_edit_is_refused_keeps_the_memory(tmp_path: Path) -> None:
    _, _, memory, text, events = two_extractions(tmp_path, refused_edits)
    assert_kept(memory, text, events, "all 3 of the fork's edits were refused")
    assert memory.extractions[-1].usage.calls == 2  # it was told why, and gave up
    assert "HACKED" not in (tmp_path / "app" / "billing.py").read_text()


def test_a_failed_write_keeps_the_memory_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [*reads("app/billing.py"), reply("Done."), *reads("app/tax.py"), reply("Done.")]
    agent, _, memory = session(tmp_path, script)
    run(agent, "Read billing.")
    text = memory.path.read_text()

    def disk_full(path: Path, text: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(harness.memory.plugin, "write_atomic", disk_full)
    events = run(agent, "Read tax.")

    assert_kept(memory, text, events, "could not write .harness/MEMORY.md")
    assert "No space left" in memory.extractions[-1].reason


def test_an_agent_without_edit_file_says_so_and_starts_no_fork(tmp_path: Path) -> None:
    tools = [t for t in builtin_tools() if t.name != "edit_file"]
    agent, model, memory = session(
        tmp_path, [*reads("app/billing.py"), reply("Done.")], tools=tools
    )
    events = run(agent, "Read billing.")

    [failed] = of_type(events, MemoryNotUpdated)
    assert "no edit_file tool" in failed.reason
    assert fork_requests(model) == []
    assert not memory.path.exists() and memory.facts == []


# --- it stays out of the parent's way ----------------------------------------------------------


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[ForkResult]]:
    """Every memory fork's result, as the memory's ``run_fork`` returns it."""
    seen: list[ForkResult] = []
    real = harness.fork.run_fork

    def recording(*args: Any, **kwargs: Any) -> ForkResult:
        result = real(*args, **kwargs)
        seen.append(result)
        return result

    monkeypatch.setattr(harness.memory.plugin, "run_fork", recording)
    yield seen


class CountingAutoCompact(AutoCompact):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls = 0

    def before_request(self, agent: BaseAgent) -> Rewrite | None:
        self.calls += 1
        return super().before_request(agent)


def test_the_forks_tool_calls_never_reach_the_parent_or_microcompact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[ForkResult]
) -> None:
    seen_by_microcompact: set[str] = set()
    real = harness.compaction.microcompact.microcompact

    def spy(messages: Sequence[m.MessageDict], **kwargs: Any) -> Any:
        seen_by_microcompact.update(u["id"] for x in messages for u in m.tool_uses(x))
        seen_by_microcompact.update(r["tool_use_id"] for x in messages for r in m.tool_results(x))
        return real(messages, **kwargs)

    monkeypatch.setattr(harness.compaction.auto, "microcompact", spy)
    auto = AutoCompact(ContextBudget(window=30_000, max_output=4_000))
    agent, _, _ = session(tmp_path, coding_script(30), plugins=[auto], functions=10)

    events = run(agent, "Check the rounding.")

    fork_ids = {u["id"] for f in forks for x in f.messages for u in m.tool_uses(x)}
    parent_ids = {u["id"] for x in agent.messages for u in m.tool_uses(x)}
    answered = {r["tool_use_id"] for x in agent.messages for r in m.tool_results(x)}
    assert len(forks) >= 10 and len(fork_ids) >= 10
    assert of_type(events, Compacted)  # microcompact did run
    assert seen_by_microcompact and not seen_by_microcompact & fork_ids
    assert not parent_ids & fork_ids and not answered & fork_ids
    assert answered == parent_ids
    assert not set(agent.tools.finished) & fork_ids


def test_an_extraction_never_sets_off_an_auto_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A window so small that every fork's prompt is over the threshold.
    auto = CountingAutoCompact(ContextBudget(window=22_000, max_output=2_000))
    agent, model, memory = session(tmp_path, coding_script(24), plugins=[auto], functions=10)
    counts: list[tuple[int, int]] = []
    forks: list[ForkResult] = []
    real = harness.fork.run_fork

    def counted(*args: Any, **kwargs: Any) -> ForkResult:
        before = auto.calls
        result = real(*args, **kwargs)
        counts.append((before, auto.calls))
        forks.append(result)
        return result

    monkeypatch.setattr(harness.memory.plugin, "run_fork", counted)
    events = run(agent, "Check the rounding.")

    assert len(counts) >= 5 and all(a == b for a, b in counts)
    over = [f for f in forks if prompt_tokens(f.replies[0].usage) >= auto.threshold]
    assert over  # these would have compacted, had a fork been able to
    assert len(of_type(events, Compacted)) >= 1  # the parent itself did compact
    # A fork's requests follow each other: no compaction request between them.
    kinds = ["fork" if is_extraction_request(r) else "other" for r in model.requests]
    starts = [
        i
        for i, r in enumerate(model.requests)
        if is_extraction_request(r) and EXTRACTION_MARKER in m.text_of(r.last_message)
    ]
    for f, start in zip(forks, starts, strict=True):
        assert kinds[start : start + f.calls] == ["fork"] * f.calls
    assert memory.extractions and all(e.ok for e in memory.extractions)


def test_memory_works_with_prompt_caching_and_reads_the_parent_from_cache(
    tmp_path: Path,
) -> None:
    agent, _, memory = session(tmp_path, coding_script(12), plugins=[PromptCaching()], functions=10)
    run(agent, "Check the rounding.")
    usage = memory.extractions[-1].usage
    assert usage.calls == 2
    assert usage.cache_read_tokens > 0.9 * usage.prompt_tokens / usage.calls


# --- garbage from the fork ---------------------------------------------------------------------

MEMORY = ".harness/MEMORY.md"
snippets = st.sampled_from(
    ["## Task\n", "## Worklog\n", "## Learnings", "# Session memory\n", "\n", "-", "", "<!--"]
)
garbage_text = (
    st.text(max_size=30)
    | snippets
    | st.sampled_from(
        ["## Notes\n", "- fact <!-- f1 colour=red -->\n", "- x <!-- f2 at=now -->\n", "plain words"]
    )
)
arguments = st.fixed_dictionaries(
    {},
    optional={
        "path": st.sampled_from([MEMORY, f"./{MEMORY}", "MEMORY.md", "app/billing.py", ""])
        | st.integers(),
        "old_string": snippets | garbage_text | st.none(),
        "new_string": garbage_text | st.integers(),
        "content": garbage_text,
        "replace_all": st.booleans(),
    },
)
any_calls = st.builds(
    ToolCall,
    st.sampled_from(["edit_file", "write_file", "read_file", "bash", "nonsense"]),
    arguments,
)
# Lines that look like facts, with comments right and wrong (self-superseding, unknown ids,
# duplicate ids, huge turns, bad keys), so that many edits are accepted.
fact_lines = st.builds(
    lambda text, meta: f"- {text}{meta}\n",
    st.text(max_size=20),
    st.sampled_from(
        [
            "",
            " <!-- from=user -->",
            " <!-- f1 supersedes=f1 -->",
            " <!-- f2 -->",
            " <!-- from=toolu_0001 supersedes=f9 -->",
            " <!-- at=2026-01-01T00:00:00Z -->",
            " <!-- turn=999999 -->",
            " <!-- colour=red -->",
        ]
    ),
)
section_edits = st.builds(
    lambda section, lines: ToolCall(
        "edit_file",
        {
            "path": MEMORY,
            "old_string": f"## {section}\n",
            "new_string": f"## {section}\n" + "".join(lines),
        },
    ),
    st.sampled_from(SECTIONS),
    st.lists(fact_lines, max_size=3),
)
rewrites = st.builds(
    lambda lines: ToolCall("write_file", {"path": MEMORY, "content": "## Task\n" + "".join(lines)}),
    st.lists(fact_lines, max_size=4),
)
calls = any_calls | section_edits | rewrites
replies = st.builds(
    Reply, text=st.none() | st.text(max_size=20), tool_calls=st.lists(calls, max_size=3).map(tuple)
).filter(lambda r: r.text is not None or r.tool_calls)


@settings(max_examples=25, deadline=None)
@given(st.lists(replies, min_size=1, max_size=6))
def test_garbage_from_the_fork_never_stops_the_run_and_the_file_stays_readable(
    answers: list[Reply],
) -> None:
    queue = iter(answers)

    def garbage(request: Request) -> Step:
        return next(queue, reply("Done."))

    script = [*reads("app/billing.py", "app/tax.py"), reply("Done.")]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        agent, _, memory = session(root, script, responder=garbage)
        run(agent, "Read two modules.")  # raises nothing, ends normally

        assert len(memory.extractions) == 2
        if memory.path.exists():
            on_file = parse(memory.path.read_text(encoding="utf-8"))
            assert on_file == memory.facts
        else:
            assert memory.facts == []
        assert all(e.ok or e.reason for e in memory.extractions)
        assert m.validate(agent.messages) == []
