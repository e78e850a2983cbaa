"""Transcripts (``harness.transcript``): the writer, the loader, fsck and repair.

The writer is driven by a scripted agent on a fake clock; the loader is checked against our
own files, against small hand-written fixtures in Claude Code's layouts (rewinds, two roots,
sidechains, one entry per content block, parallel results as side branches) and against the
real Claude Code transcripts in ``../shared/cc_transcripts/`` (skipped when that folder is
absent, as it is in a learner's clone).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.events import Compacted
from harness.compaction.microcompact import CLEARED, microcompact
from harness.compaction.summary import compact, is_compaction_request
from harness.events import Event, MaxTurnsReached, TurnEnded
from harness.loop import INTERRUPTED, Rewrite
from harness.model import ScriptedModel, reply, tool_call
from harness.model.scripted import Reply, Request
from harness.model.scripted_summary import scripted_summary
from harness.tools.builtins import read_file
from harness.transcript import (
    RESUMED_WITHOUT_START,
    VERSION,
    Entry,
    Transcript,
    TranscriptFailed,
    fsck,
    load,
    read_entries,
    repair,
    seeded_ids,
)

SESSION = "5e551011-0000-4000-8000-000000000001"
REAL_FOLDER = Path(__file__).resolve().parents[2] / "shared" / "cc_transcripts"

HEADER_FIELDS = (
    "type",
    "uuid",
    "parentUuid",
    "sessionId",
    "isSidechain",
    "timestamp",
    "cwd",
    "version",
    "message",
)


# --- a scripted agent that writes a transcript -------------------------------------------


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    for name in ("a.txt", "b.txt", "c.txt"):
        # Long enough that a microcompaction finds the results worth clearing.
        body = "".join(f"{name} line {i}: some text the model read\n" for i in range(30))
        (ws / name).write_text(body)
    return ws


def writer(path: Path, clock: FakeClock, seed: int = 1) -> Transcript:
    return Transcript(
        path=path, session_id=SESSION, cwd="/home/ana/shop", clock=clock, ids=seeded_ids(seed)
    )


def make_agent(
    tmp_path: Path,
    steps: list[Any],
    *,
    path: Path | None = None,
    **settings: Any,
) -> tuple[Agent, ScriptedModel, Transcript]:
    clock = FakeClock()
    model = ScriptedModel(steps, clock=clock)
    model.answer_when(is_compaction_request, scripted_summary)
    transcript = writer(path or tmp_path / "t" / "session.jsonl", clock)
    agent = Agent(
        model,
        tools=[read_file],
        workspace=workspace(tmp_path),
        clock=clock,
        plugins=[transcript],
        **settings,
    )
    return agent, model, transcript


def reads(*names: str, text: str = "Reading.") -> Reply:
    return reply(text, tool_calls=[tool_call("read_file", path=n) for n in names])


def on_disk(path: Path) -> list[dict[str, Any]]:
    """The file's entries as JSON, read through a handle of our own (not the writer's)."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def chain_entries(path: Path) -> list[dict[str, Any]]:
    """The entries with a place in the chain (not the tool journal beside it)."""
    return [e for e in on_disk(path) if "uuid" in e]


def message_entries(path: Path) -> list[dict[str, Any]]:
    return [e for e in on_disk(path) if e["type"] in ("user", "assistant")]


def run(agent: Agent, prompt: str) -> list[Event]:
    return list(agent.run(prompt))


def microcompact_now(agent: Agent, keep: int) -> tuple[str, ...]:
    result = microcompact(agent.messages, keep=keep)
    assert result.cleared, "the test expected results worth clearing"
    agent.apply(Rewrite(result.messages, Compacted("microcompact", "count", 1000, 400)))
    return result.cleared


# --- the writer ----------------------------------------------------------------------------


def test_each_entry_carries_the_claude_code_header_fields(tmp_path: Path) -> None:
    agent, _, transcript = make_agent(tmp_path, [reads("a.txt"), reply("Done.")])
    run(agent, "Read a.txt.")
    entries = chain_entries(transcript.path)
    assert [e["type"] for e in entries] == ["user", "assistant", "user", "assistant"]
    for entry in entries:
        assert set(HEADER_FIELDS) <= set(entry), entry
        assert entry["sessionId"] == SESSION
        assert entry["isSidechain"] is False
        assert entry["cwd"] == "/home/ana/shop"
        assert entry["version"] == VERSION
        assert entry["timestamp"].endswith("Z")
        assert entry["message"]["role"] == entry["type"]
    # The reply entries keep the API message id and stop reason, as Claude Code's do.
    assert entries[1]["message"]["id"].startswith("msg_")
    assert entries[1]["message"]["stop_reason"] == "tool_use"
    assert len({e["uuid"] for e in entries}) == len(entries)


def test_each_entry_hangs_from_the_one_written_before_it(tmp_path: Path) -> None:
    agent, model, transcript = make_agent(tmp_path, [reads("a.txt", "b.txt"), reply("Done.")])
    run(agent, "Read both.")
    model.extend([reply("Still done.")])
    run(agent, "Anything else?")
    entries = chain_entries(transcript.path)
    assert entries[0]["parentUuid"] is None
    for before, entry in pairwise(entries):
        assert entry["parentUuid"] == before["uuid"]
    assert transcript.parent == entries[-1]["uuid"]


def test_each_batch_of_calls_is_journaled_before_it_runs_and_as_its_results_exist(
    tmp_path: Path,
) -> None:
    agent, _, transcript = make_agent(tmp_path, [reads("a.txt", "b.txt"), reply("Done.")])
    run(agent, "Read both.")
    kinds = [
        (e["type"], e.get("state"), tuple(e.get("toolUseIds", ())))
        for e in on_disk(transcript.path)
    ]
    ids = tuple(u["id"] for u in m.tool_uses(agent.messages[1]))
    assert kinds == [
        ("user", None, ()),
        ("assistant", None, ()),
        ("tool-progress", "started", ids),  # before the reads ran (in parallel: one batch)
        ("tool-progress", "finished", ids),
        ("user", None, ()),
        ("assistant", None, ()),
    ]
    journaled = on_disk(transcript.path)[3]["results"]
    assert journaled == m.tool_results(agent.messages[2])  # the results, as the model got them
    session = load(transcript.path)
    assert session.tools_started == set(ids)
    assert session.tool_journal == {r["tool_use_id"]: r for r in journaled}
    assert session.messages == agent.messages  # the journal is not part of the conversation


def test_prompt_and_every_tool_result_are_on_disk_before_the_next_model_call(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t" / "session.jsonl"
    seen: list[list[dict[str, Any]]] = []
    matches: list[bool] = []

    def look(then: Reply) -> Callable[[Request], Reply]:
        def step(request: Request) -> Reply:
            seen.append(on_disk(path))  # another handle: only what reached the OS is here
            matches.append(load(path).messages == request.messages)
            return then

        return step

    steps = [look(reads("a.txt", "b.txt")), look(reads("c.txt")), look(reply("All read."))]
    agent, _, _ = make_agent(tmp_path, steps, path=path)
    run(agent, "Read the three files.")

    assert matches == [True, True, True]  # the model never saw anything the disk lacked
    assert [e["type"] for e in seen[0]] == ["user"]
    assert seen[0][0]["message"]["content"] == "Read the three files."
    results = seen[1][-1]["message"]["content"]
    assert [r["type"] for r in results] == ["tool_result", "tool_result"]
    assert "a.txt line 0" in results[0]["content"] and "b.txt line 0" in results[1]["content"]
    assert "c.txt line 0" in seen[2][-1]["message"]["content"][0]["content"]


def test_a_run_ended_by_max_turns_still_has_its_last_tool_results_on_disk(
    tmp_path: Path,
) -> None:
    agent, _, transcript = make_agent(tmp_path, [reads("a.txt", "b.txt")], max_turns=1)
    events = run(agent, "Read both.")
    assert isinstance(events[-1], MaxTurnsReached)
    last = on_disk(transcript.path)[-1]  # the writer is not closed: flushed is enough
    assert last["type"] == "user"
    ids = [b["tool_use_id"] for b in last["message"]["content"]]
    assert ids == [u["id"] for u in m.tool_uses(agent.messages[-2])]
    assert load(transcript.path).messages == agent.messages


def test_a_prompt_typed_after_tool_results_round_trips(tmp_path: Path) -> None:
    agent, model, transcript = make_agent(tmp_path, [reads("a.txt")], max_turns=1)
    run(agent, "Read a.txt.")
    model.extend([reply("It says hello.")])
    run(agent, "What does it say?")
    # The prompt joined the results' message (the API wants alternating roles) ...
    joined = agent.messages[2]
    assert [b["type"] for b in m.blocks(joined)] == ["tool_result", "text"]
    # ... and is its own entry on disk, under the results' entry, as Claude Code writes it.
    entries = message_entries(transcript.path)
    assert entries[3]["message"]["content"] == [m.text("What does it say?")]
    assert entries[3]["parentUuid"] == entries[2]["uuid"]
    loaded = load(transcript.path)
    assert loaded.messages == agent.messages
    assert m.validate(loaded.messages) == []


@pytest.mark.parametrize(("trigger", "written"), [("manual", "manual"), ("threshold", "auto")])
def test_a_compaction_writes_a_boundary_then_the_summary(
    tmp_path: Path, trigger: str, written: str
) -> None:
    agent, _, transcript = make_agent(tmp_path, [reads("a.txt"), reply("Done.")])
    run(agent, "Read a.txt.")
    before = on_disk(transcript.path)
    report = compact(agent, trigger=trigger)
    entries = on_disk(transcript.path)
    boundary, summary = entries[len(before)], entries[len(before) + 1]

    assert boundary["type"] == "system" and boundary["subtype"] == "compact_boundary"
    assert boundary["parentUuid"] is None  # the chain is cut on purpose
    assert boundary["logicalParentUuid"] == before[-1]["uuid"]
    assert boundary["compactMetadata"]["trigger"] == written
    assert boundary["compactMetadata"]["preTokens"] == report.tokens_before > 0
    assert summary["type"] == "user" and summary["isCompactSummary"] is True
    assert summary["parentUuid"] == boundary["uuid"]
    assert summary["message"]["content"] == agent.messages[0]["content"]

    loaded = load(transcript.path)
    assert loaded.boundary is not None and loaded.boundary.uuid == boundary["uuid"]
    assert loaded.chain[1].is_compact_summary
    assert loaded.messages == agent.messages


def test_a_microcompaction_writes_a_content_replacement_that_the_loader_applies(
    tmp_path: Path,
) -> None:
    steps = [reads("a.txt"), reads("b.txt"), reads("c.txt"), reply("Done.")]
    agent, _, transcript = make_agent(tmp_path, steps)
    run(agent, "Read the files one by one.")
    cleared = microcompact_now(agent, keep=1)
    assert len(cleared) == 2

    last = on_disk(transcript.path)[-1]
    assert last["type"] == "content-replacement"
    assert [r["toolUseId"] for r in last["replacements"]] == list(cleared)
    assert all(r["content"] == CLEARED for r in last["replacements"])

    loaded = load(transcript.path)
    assert loaded.messages == agent.messages
    shown = {r["tool_use_id"]: r["content"] for msg in loaded.messages for r in m.tool_results(msg)}
    assert [shown[i] for i in cleared] == [CLEARED, CLEARED]
    assert sum(content == CLEARED for content in shown.values()) == 2


def blocker_path(tmp_path: Path) -> Path:
    (tmp_path / "blocker").write_text("a file where the folder should be")
    return tmp_path / "blocker" / "session.jsonl"


def folder_path(tmp_path: Path) -> Path:
    (tmp_path / "session.jsonl").mkdir()
    return tmp_path / "session.jsonl"


@pytest.mark.parametrize("where", [blocker_path, folder_path], ids=["under-a-file", "a-folder"])
def test_an_os_error_while_writing_is_an_event_and_the_run_ends_normally(
    tmp_path: Path, where: Callable[[Path], Path]
) -> None:
    agent, _, _ = make_agent(tmp_path, [reads("a.txt"), reply("Done.")], path=where(tmp_path))
    events = run(agent, "Read a.txt.")
    failures = [e for e in events if isinstance(e, TranscriptFailed)]
    assert failures and all("Error" in e.reason for e in failures)
    assert isinstance(events[-1], TurnEnded)
    assert m.text_of(agent.messages[-1]) == "Done."
    assert m.validate(agent.messages) == []


def test_reopening_a_file_with_a_torn_last_line_starts_the_next_entry_on_a_new_line(
    tmp_path: Path,
) -> None:
    agent, _, transcript = make_agent(tmp_path, [reply("Hello.")])
    run(agent, "Hi.")
    transcript.close()
    fragment = '{"type": "assistant", "uuid": "cut-sh'
    with open(transcript.path, "a", encoding="utf-8") as handle:
        handle.write(fragment)  # a crash in the middle of a write
    first = load(transcript.path)
    assert first.torn is not None and first.torn.line == 3

    clock = FakeClock()
    again = writer(transcript.path, clock, seed=2)
    second = Agent(ScriptedModel([reply("Back.")], clock=clock, id_prefix="b"), clock=clock)
    second.messages = copy.deepcopy(first.messages)
    again.adopt(second.messages, first.leaf)  # what a resume does
    second.plugins.append(again)
    run(second, "Are you there?")
    again.close()

    lines = transcript.path.read_text(encoding="utf-8").split("\n")
    assert lines[2] == fragment  # the torn line stays, whole, on a line of its own
    after = json.loads(lines[3])
    assert after["parentUuid"] == first.leaf
    loaded = load(transcript.path)
    assert loaded.messages == second.messages
    assert [(f.line, f.kind) for f in loaded.findings] == [(3, "unreadable line")]


def test_text_that_is_not_valid_unicode_is_written_and_read_back(tmp_path: Path) -> None:
    transcript = writer(tmp_path / "s.jsonl", FakeClock())
    conversation = [
        m.user("List the folder."),
        m.assistant([m.text("One file: caf\udce9.txt")]),  # os.fsdecode of a Latin-1 name
    ]
    transcript.write_messages(conversation)
    transcript.close()
    transcript.path.read_text(encoding="utf-8")  # the file itself is valid UTF-8
    assert load(transcript.path).messages == conversation


# --- round trips ---------------------------------------------------------------------------


def test_write_then_load_gives_back_the_conversation_through_compactions_and_later_runs(
    tmp_path: Path,
) -> None:
    agent, model, transcript = make_agent(
        tmp_path, [reads("a.txt", "b.txt", "c.txt"), reads("a.txt"), reply("Read them.")]
    )
    checks: list[bool] = []

    def check() -> None:
        checks.append(load(transcript.path).messages == agent.messages)

    run(agent, "Read the files.")
    check()
    microcompact_now(agent, keep=1)
    check()
    compact(agent)
    check()
    model.extend([reads("b.txt", "c.txt"), reads("a.txt"), reply("Again.")])
    run(agent, "Read them again.")
    check()
    microcompact_now(agent, keep=1)
    check()
    compact(agent, trigger="threshold")
    check()
    model.extend([reads("c.txt"), reply("Last.")])
    run(agent, "One more.")
    check()
    assert checks == [True] * 7
    report = fsck(load(transcript.path).entries)
    assert report.ok, str(report)


def test_the_fast_path_reads_from_the_last_boundary_and_gives_the_same_conversation(
    tmp_path: Path,
) -> None:
    agent, model, transcript = make_agent(tmp_path, [reads("a.txt"), reply("One.")])
    run(agent, "First.")
    compact(agent)
    model.extend([reads("b.txt", "c.txt"), reply("Two.")])
    run(agent, "Second.")
    compact(agent)
    model.extend([reads("a.txt"), reply("Three.")])
    run(agent, "Third.")

    slow = load(transcript.path, fast=False)
    fast = load(transcript.path, fast=True)
    assert fast.messages == slow.messages == agent.messages
    assert slow.start_offset == 0
    assert fast.start_offset > 0
    raw = transcript.path.read_bytes()
    lines = raw.split(b"\n")
    first = fast.entries[0]
    assert isinstance(first, Entry) and first.is_boundary
    assert json.loads(lines[first.line - 1])["uuid"] == first.uuid  # its real line number
    assert sum(len(line) + 1 for line in lines[: first.line - 1]) == fast.start_offset
    assert fast.boundary is not None and fast.boundary.uuid == slow.boundary.uuid  # type: ignore[union-attr]
    assert len(fast.entries) < len(slow.entries)


# --- hand-written fixtures in Claude Code's layouts --------------------------------------


def entry(
    kind: str,
    uuid: str,
    parent: str | None,
    content: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """One entry as Claude Code writes it (only the fields that matter here, plus extras)."""
    out: dict[str, Any] = {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": SESSION,
        "type": kind,
        "uuid": uuid,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "version": "2.1.39",
    }
    if content is not None:
        out["message"] = {"role": kind, "content": content}
    if "message_id" in extra:
        out["message"]["id"] = extra.pop("message_id")
    out.update(extra)
    return out


def user(uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    return entry("user", uuid, parent, content, **extra)


def assistant(uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    if isinstance(content, str):
        content = [m.text(content)]
    return entry("assistant", uuid, parent, content, **extra)


def write(tmp_path: Path, entries: list[dict[str, Any] | str], name: str = "s.jsonl") -> Path:
    path = tmp_path / name
    text = "".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in entries)
    path.write_text(text, encoding="utf-8")
    return path


def texts(messages: list[m.MessageDict]) -> list[str]:
    return [m.text_of(msg) for msg in messages]


def test_a_rewind_follows_the_branch_written_last(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            user("u1", None, "Plan the release."),
            assistant("a1", "u1", "Here is a plan."),
            user("u2", "a1", "Ship it on Friday."),
            assistant("a2", "u2", "Friday it is."),
            user("u3", "a1", "Ship it on Monday."),  # rewound to a1, asked again
            assistant("a3", "u3", "Monday it is."),
        ],
    )
    loaded = load(path)
    assert texts(loaded.messages) == [
        "Plan the release.",
        "Here is a plan.",
        "Ship it on Monday.",
        "Monday it is.",
    ]
    assert loaded.leaf == "a3"
    assert [e.uuid for e in loaded.chain] == ["u1", "a1", "u3", "a3"]
    assert loaded.findings == []


def test_two_roots_resolve_to_the_conversation_written_last(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            user("u1", None, "An old question."),
            assistant("a1", "u1", "An old answer."),
            user("v1", None, "A fresh start."),
            assistant("v2", "v1", "A fresh answer."),
        ],
    )
    loaded = load(path)
    assert texts(loaded.messages) == ["A fresh start.", "A fresh answer."]
    assert loaded.findings == []


def test_a_sidechain_is_kept_apart_from_the_conversation(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            user("u1", None, "Look it up."),
            user("s1", None, "Subagent: search the docs.", isSidechain=True, agentId="ab12"),
            assistant("s2", "s1", "Found it in the docs.", isSidechain=True, agentId="ab12"),
            assistant("a1", "u1", "It is in the docs."),
        ],
    )
    loaded = load(path)
    assert texts(loaded.messages) == ["Look it up.", "It is in the docs."]
    assert [e.uuid for e in loaded.sidechains["ab12"]] == ["s1", "s2"]
    assert "Found it in the docs." not in json.dumps(loaded.messages)


def test_a_reply_written_one_entry_per_block_is_merged_by_message_id(tmp_path: Path) -> None:
    use = m.tool_use("toolu_1", "Read", {"file_path": "a.py"})
    path = write(
        tmp_path,
        [
            user("u1", None, "Read a.py."),
            assistant(
                "b1",
                "u1",
                [{"type": "thinking", "thinking": "hm", "signature": "s"}],
                message_id="msg_1",
            ),
            assistant("b2", "b1", "Reading it.", message_id="msg_1"),
            assistant("b3", "b2", [use], message_id="msg_1"),
            user("r1", "b3", [m.tool_result("toolu_1", "print('hi')")]),
            assistant("b4", "r1", "It prints hi.", message_id="msg_2"),
        ],
    )
    loaded = load(path)
    assert [msg["role"] for msg in loaded.messages] == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in m.blocks(loaded.messages[1])] == ["thinking", "text", "tool_use"]
    assert m.validate(loaded.messages) == []


def test_parallel_results_hanging_off_the_chain_give_a_valid_conversation(
    tmp_path: Path,
) -> None:
    """Claude Code 2.1: each result's parent is the entry holding its tool_use, and the next
    turn continues from the last result only."""
    uses = [m.tool_use(f"toolu_{i}", "Read", {"file_path": f"{i}.py"}) for i in (1, 2, 3)]
    path = write(
        tmp_path,
        [
            user("u1", None, "Read three files."),
            assistant("b0", "u1", "Reading all three.", message_id="msg_1"),
            assistant("b1", "b0", [uses[0]], message_id="msg_1"),
            assistant("b2", "b1", [uses[1]], message_id="msg_1"),
            assistant("b3", "b2", [uses[2]], message_id="msg_1"),
            user("r1", "b1", [m.tool_result("toolu_1", "one")], sourceToolAssistantUUID="b1"),
            user("r2", "b2", [m.tool_result("toolu_2", "two")], sourceToolAssistantUUID="b2"),
            user("r3", "b3", [m.tool_result("toolu_3", "three")], sourceToolAssistantUUID="b3"),
            assistant("b4", "r3", "Read all three.", message_id="msg_2"),
        ],
    )
    loaded = load(path)
    assert m.validate(loaded.messages) == []
    assert [msg["role"] for msg in loaded.messages] == ["user", "assistant", "user", "assistant"]
    answered = sorted(r["tool_use_id"] for r in m.tool_results(loaded.messages[2]))
    assert answered == ["toolu_1", "toolu_2", "toolu_3"]
    assert {r["tool_use_id"]: r["content"] for r in m.tool_results(loaded.messages[2])} == {
        "toolu_1": "one",
        "toolu_2": "two",
        "toolu_3": "three",
    }


def test_progress_entries_inside_the_chain_are_walked_through(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            user("u1", None, "Run the tests."),
            entry("progress", "p1", "u1", data={"type": "hook_progress"}),
            assistant(
                "a1",
                "p1",
                [m.tool_use("toolu_1", "Bash", {"command": "pytest"})],
                message_id="msg_1",
            ),
            entry("progress", "p2", "a1", data={"type": "bash_progress"}),
            user("r1", "p2", [m.tool_result("toolu_1", "3 passed")]),
            assistant("a2", "r1", "All pass.", message_id="msg_2"),
            entry("progress", "p3", "a2", data={"type": "hook_progress"}),  # a dead-end leaf
            entry("system", "y1", "p3", subtype="stop_hook_summary"),
        ],
    )
    loaded = load(path)
    assert texts(loaded.messages)[-1] == "All pass."
    assert len(loaded.messages) == 4 and m.validate(loaded.messages) == []
    assert [e.uuid for e in loaded.chain] == ["u1", "p1", "a1", "p2", "r1", "a2"]
    assert loaded.findings == []


def test_unknown_entry_types_and_fields_pass(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            {"type": "file-history-snapshot", "messageId": "x", "snapshot": {"files": []}},
            {"type": "queue-operation", "operation": "enqueue", "content": "later"},
            user("u1", None, "Hello.", gitBranch="main", slug="a-slug", futureField={"x": [1]}),
            entry("brand-new-kind", "n1", "u1", payload="whatever comes next"),
            assistant("a1", "n1", "Hi.", requestId="req_1", message_id="msg_1"),
            {"type": "summary", "summary": "Greetings", "leafUuid": "a1"},
        ],
    )
    loaded = load(path)
    assert texts(loaded.messages) == ["Hello.", "Hi."]
    assert loaded.findings == []
    first = loaded.chain[0]
    assert first.model_extra is not None and first.model_extra["futureField"] == {"x": [1]}
    assert loaded.chain[1].type == "brand-new-kind"
    assert fsck(loaded.entries).ok


def test_a_broken_chain_is_reported_and_goes_on_from_the_entry_written_before_it(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        [
            user("u1", None, "First."),
            assistant("a1", "u1", "One."),
            user("u2", "gone", "Second."),  # its parent's line was lost
            assistant("a2", "u2", "Two."),
        ],
    )
    loaded = load(path)
    assert texts(loaded.messages) == ["First.", "One.", "Second.", "Two."]
    assert [(f.line, f.kind) for f in loaded.findings] == [(3, "reconnected")]
    assert "line 2" in loaded.findings[0].detail
    assert [(f.line, f.kind) for f in fsck(loaded.entries).findings] == [(3, "broken chain")]


def test_a_cycle_is_reported_not_raised(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            user("u1", "a1", "Round and round."),
            assistant("a1", "u1", "And round."),
        ],
    )
    loaded = load(path)
    assert [(f.line, f.kind, f.uuid) for f in loaded.findings] == [(2, "cycle", "a1")]
    assert texts(loaded.messages) == ["Round and round.", "And round."]  # each entry once


def test_a_reply_written_again_on_a_later_branch_is_not_doubled(tmp_path: Path) -> None:
    use = m.tool_use("toolu_1", "Bash", {"command": "git status"})
    path = write(
        tmp_path,
        [
            user("u1", None, "Status?"),
            assistant("a1", "u1", [m.text("Checking."), use], message_id="msg_1"),
            user("r1", "a1", [m.tool_result("toolu_1", "clean")]),
            # The same reply again, per block, under the same parent (a retry or a resume).
            assistant("c1", "u1", "Checking.", message_id="msg_1"),
            assistant("c2", "c1", [use], message_id="msg_1"),
            user("r2", "c2", [m.tool_result("toolu_1", "clean")]),
        ],
    )
    loaded = load(path)
    assert [b["type"] for b in m.blocks(loaded.messages[1])] == ["text", "tool_use"]


# --- the real Claude Code transcripts -------------------------------------------------------

REAL_FILES = sorted(REAL_FOLDER.glob("*.jsonl")) if REAL_FOLDER.is_dir() else []
NO_REAL_FILES = (
    f"the real Claude Code transcripts are not here ({REAL_FOLDER}): they live next to the "
    "project, not in it, and a learner's clone does not have them"
)


def real(name_part: str) -> Path:
    if not REAL_FILES:
        pytest.skip(NO_REAL_FILES)
    found = [p for p in REAL_FILES if name_part in p.name]
    assert len(found) == 1, f"expected one real transcript named like {name_part!r}"
    return found[0]


@cache
def loaded_real(path: Path, fast: bool = False) -> Any:
    return load(path, fast=fast)


def last_message_entry(path: Path) -> Entry:
    """The file's last user or assistant entry: where the session ended."""
    entries = [e for e in read_entries(path) if isinstance(e, Entry)]
    main = [e for e in entries if e.type in ("user", "assistant") and e.message]
    if any(not e.is_sidechain for e in main):  # a subagent's own file is all sidechain
        main = [e for e in main if not e.is_sidechain]
    return main[-1]


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, id=p.name[:40]) for p in REAL_FILES]
    or [pytest.param(None, marks=pytest.mark.skip(reason=NO_REAL_FILES))],
)
def test_every_real_transcript_loads_into_a_valid_conversation_that_ends_where_it_ended(
    path: Path,
) -> None:
    loaded = loaded_real(path)
    out = repair(loaded.messages).messages
    assert out and m.validate(out) == []
    last = last_message_entry(path)
    assert loaded.leaf == last.uuid
    ending = m.blocks(out[-1])
    assert out[-1]["role"] == last.type
    wanted = [b for b in last.blocks() if not (b.get("type") == "text" and not b["text"].strip())]
    assert wanted and all(block in ending for block in wanted)
    # It ends there: the last entry's blocks close the conversation.
    assert ending[-len(wanted) :] == wanted


def test_the_real_file_with_a_compaction_starts_after_its_boundary() -> None:
    path = real("258c7280")
    loaded = loaded_real(path)
    assert loaded.boundary is not None and loaded.boundary.is_boundary
    assert loaded.chain[0] is loaded.boundary
    summary = loaded.chain[1]
    assert summary.is_compact_summary and summary.type == "user"
    assert loaded.messages[0]["content"] == summary.message["content"]  # type: ignore[index]


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, id=p.name[:40]) for p in REAL_FILES]
    or [pytest.param(None, marks=pytest.mark.skip(reason=NO_REAL_FILES))],
)
def test_the_fast_path_equals_the_full_read_on_a_real_transcript(path: Path) -> None:
    fast = loaded_real(path, fast=True)
    assert fast.messages == loaded_real(path).messages
    if loaded_real(path).boundary is not None:
        assert fast.start_offset > 0


def test_the_old_style_sidechains_of_a_real_file_stay_apart() -> None:
    path = real("5c0375b4")
    loaded = loaded_real(path)
    side = [e for chain in loaded.sidechains.values() for e in chain]
    assert side and all(e.is_sidechain for e in side)
    assert not {e.uuid for e in side} & {e.uuid for e in loaded.chain}
    shown = [b for msg in loaded.messages for b in m.blocks(msg)]
    side_blocks = [b for e in side for b in e.blocks() if b.get("type") in ("text", "tool_use")]
    assert side_blocks and not [b for b in side_blocks if b in shown]
    assert m.validate(repair(loaded.messages).messages) == []


# --- fsck ----------------------------------------------------------------------------------


def kinds_by_line(path: Path) -> list[tuple[int, str]]:
    return [(f.line, f.kind) for f in fsck(read_entries(path)).findings]


def test_fsck_reports_a_torn_last_line_with_its_number(tmp_path: Path) -> None:
    path = write(tmp_path, [user("u1", None, "Hi."), assistant("a1", "u1", "Hello.")])
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"type": "user", "uuid": "u2", "parentUuid": "a1", "mess')
    assert kinds_by_line(path) == [(3, "torn line")]


def test_fsck_reports_a_corrupt_middle_line_with_its_number(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [user("u1", None, "Hi."), '{"type": "assistant", "uuid": ', assistant("a1", "u1", "Hey.")],
    )
    assert kinds_by_line(path) == [(2, "unreadable line")]


def test_fsck_reports_a_duplicate_uuid_on_its_second_line(tmp_path: Path) -> None:
    first = user("u1", None, "Hi.")
    path = write(tmp_path, [first, assistant("a1", "u1", "Hello."), first])
    report = fsck(read_entries(path))
    assert [(f.line, f.kind, f.uuid) for f in report.findings] == [(3, "duplicate uuid", "u1")]
    assert "line 1" in report.findings[0].detail


def test_fsck_reports_a_broken_chain_with_its_number(tmp_path: Path) -> None:
    path = write(tmp_path, [user("u1", None, "Hi."), assistant("a1", "nowhere", "Hello.")])
    assert kinds_by_line(path) == [(2, "broken chain")]


def test_fsck_reports_a_bad_role_with_its_number(tmp_path: Path) -> None:
    wrong = user("u2", "a1", "I am not a user.")
    wrong["message"]["role"] = "assistant"
    path = write(tmp_path, [user("u1", None, "Hi."), assistant("a1", "u1", "Hello."), wrong])
    assert kinds_by_line(path) == [(3, "bad role")]


def test_fsck_reports_an_orphan_tool_use_with_its_number(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            user("u1", None, "Read it."),
            assistant("a1", "u1", [m.tool_use("toolu_9", "Read", {"file_path": "x"})]),
        ],
    )
    assert kinds_by_line(path) == [(2, "orphan tool_use")]


def test_fsck_reports_an_orphan_tool_result_with_its_number(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            user("u1", None, "Hi."),
            assistant("a1", "u1", "Hello."),
            user("u2", "a1", [m.tool_result("toolu_nobody", "an answer to no call")]),
        ],
    )
    assert kinds_by_line(path) == [(3, "orphan tool_result")]


def test_fsck_finds_nothing_wrong_in_a_file_we_wrote(tmp_path: Path) -> None:
    agent, model, transcript = make_agent(tmp_path, [reads("a.txt", "b.txt"), reply("Done.")])
    run(agent, "Read both.")
    microcompact_now(agent, keep=1)
    compact(agent)
    model.extend([reads("c.txt"), reply("Done again.")])
    run(agent, "And c.txt.")
    report = fsck(read_entries(transcript.path))
    assert report.ok, str(report)
    assert report.entries == len(on_disk(transcript.path))


def test_fsck_is_pure(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            user("u1", None, "Hi."),
            "not json",
            assistant("a1", "u0", [m.tool_use("toolu_1", "Read", {"file_path": "x"})]),
            user("u1", "a1", "again"),
        ],
    )
    entries = read_entries(path)
    before = list(entries)
    dumped = [e.model_dump() if isinstance(e, Entry) else e for e in entries]
    first, second = fsck(entries), fsck(entries)
    assert first == second and not first.ok
    assert entries == before
    assert [e.model_dump() if isinstance(e, Entry) else e for e in entries] == dumped


# --- repair ----------------------------------------------------------------------------------


def kinds(changes: list[Any]) -> list[str]:
    return [c.kind for c in changes]


SAFETY_NET = ("still invalid", "no valid conversation could be kept")
"""How repair words what its last-resort net caught; the named rules should leave nothing."""


def as_blocks(messages: list[Any]) -> list[tuple[str, list[m.Block]]]:
    """Messages with a string prompt written as its one text block (the same message to the
    API; repair gives every message as blocks)."""
    return [(msg["role"], m.blocks(msg)) for msg in messages]


def check_repair(messages: list[dict[str, Any]], **options: Any) -> Any:
    """Repair, and check the things every repair must give: valid, pure, idempotent."""
    given = copy.deepcopy(messages)
    result = repair(messages, **options)
    assert not [c for c in result.changes if c.detail.startswith(SAFETY_NET)]
    assert messages == given  # the input is not changed
    assert result.messages == [] or m.validate(result.messages) == []
    again = repair(result.messages, **options)
    assert again.changes == []
    assert as_blocks(again.messages) == as_blocks(result.messages)
    return result


def test_repair_answers_an_unresolved_tool_use_as_interrupted() -> None:
    use = m.tool_use("toolu_1", "read_file", {"path": "a"})
    result = check_repair([m.user("Read a."), m.assistant([m.text("Reading."), use])])
    assert result.messages[-1] == m.user([m.tool_result("toolu_1", INTERRUPTED, is_error=True)])
    assert [(c.kind, c.index) for c in result.changes] == [("tool_use answered", 1)]


def test_repair_puts_the_interrupted_answer_in_the_next_user_message() -> None:
    use = m.tool_use("toolu_1", "read_file", {"path": "a"})
    result = check_repair([m.user("Read a."), m.assistant([use]), m.user("Never mind.")])
    assert [b["type"] for b in m.blocks(result.messages[2])] == ["tool_result", "text"]
    assert kinds(result.changes) == ["tool_use answered"]


def test_repair_can_drop_an_unresolved_tool_use_instead() -> None:
    use = m.tool_use("toolu_1", "read_file", {"path": "a"})
    result = check_repair(
        [m.user("Read a."), m.assistant([m.text("Reading."), use])], unresolved="drop"
    )
    assert as_blocks(result.messages) == [
        ("user", [m.text("Read a.")]),
        ("assistant", [m.text("Reading.")]),
    ]
    assert kinds(result.changes) == ["tool_use dropped"]


def test_repair_drops_a_message_left_empty_by_dropping_its_tool_use() -> None:
    use = m.tool_use("toolu_1", "read_file", {"path": "a"})
    result = check_repair([m.user("Read a."), m.assistant([use])], unresolved="drop")
    assert as_blocks(result.messages) == [("user", [m.text("Read a.")])]
    assert kinds(result.changes) == ["tool_use dropped", "message dropped"]


def test_repair_drops_an_orphan_tool_result() -> None:
    result = check_repair(
        [
            m.user("Hi."),
            m.assistant("Hello."),
            m.user([m.tool_result("toolu_x", "stray"), m.text("Go on.")]),
        ]
    )
    assert result.messages[-1] == m.user([m.text("Go on.")])
    assert [(c.kind, c.index) for c in result.changes] == [("tool_result dropped", 2)]


def test_repair_drops_a_thinking_only_assistant_message() -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    result = check_repair(
        [m.user("Hi."), m.assistant([thinking]), m.user("Still there?"), m.assistant("Yes.")]
    )
    assert as_blocks(result.messages) == [
        ("user", [m.text("Hi."), m.text("Still there?")]),
        ("assistant", [m.text("Yes.")]),
    ]
    assert [(c.kind, c.index) for c in result.changes] == [("message dropped", 1), ("merged", 2)]
    assert "only thinking" in result.changes[0].detail


def test_repair_drops_a_whitespace_only_assistant_message() -> None:
    result = check_repair(
        [m.user("Hi."), m.assistant([m.text("  \n\t")]), m.user("Hello?"), m.assistant("Hi!")]
    )
    assert as_blocks(result.messages) == [
        ("user", [m.text("Hi."), m.text("Hello?")]),
        ("assistant", [m.text("Hi!")]),
    ]
    assert kinds(result.changes) == ["block dropped", "message dropped", "merged"]


def test_repair_merges_same_role_neighbours_with_tool_results_first() -> None:
    use = m.tool_use("toolu_1", "read_file", {"path": "a"})
    result = check_repair(
        [
            m.user("Read a."),
            m.assistant([use]),
            m.user("By the way, it is short."),
            m.user([m.tool_result("toolu_1", "short")]),
            m.assistant("It is short."),
        ]
    )
    assert [b["type"] for b in m.blocks(result.messages[2])] == ["tool_result", "text"]
    assert [(c.kind, c.index) for c in result.changes] == [("merged", 3)]


def test_repair_drops_a_second_tool_use_and_a_second_result_with_the_same_id() -> None:
    use = m.tool_use("toolu_1", "read_file", {"path": "a"})
    result = check_repair(
        [
            m.user("Read a."),
            m.assistant([use]),
            m.user([m.tool_result("toolu_1", "one"), m.tool_result("toolu_1", "again")]),
            m.assistant([m.text("Once more."), use]),
            m.user([m.tool_result("toolu_1", "two")]),
            m.assistant("Done."),
        ]
    )
    assert m.tool_results(result.messages[2]) == [m.tool_result("toolu_1", "one")]
    assert m.tool_uses(result.messages[3]) == []
    assert as_blocks(result.messages[3:]) == [
        ("assistant", [m.text("Once more."), m.text("Done.")])
    ]
    assert [(c.kind, c.index) for c in result.changes] == [
        ("tool_result dropped", 2),  # the second answer to toolu_1
        ("tool_use dropped", 3),  # toolu_1 asked again
        ("tool_result dropped", 4),  # its answer now answers nothing
        ("message dropped", 4),
        ("merged", 5),
    ]
    assert "a second answer" in result.changes[0].detail
    assert "used twice" in result.changes[1].detail


def test_repair_gives_a_conversation_that_starts_with_the_model_a_first_user_line() -> None:
    result = check_repair([m.assistant("Where were we?"), m.user("Here.")])
    assert m.blocks(result.messages[0]) == [m.text(RESUMED_WITHOUT_START)]
    assert result.messages[1] == {"role": "assistant", "content": "Where were we?"}
    assert kinds(result.changes) == ["start added"]


def test_repair_keeps_a_message_given_as_plain_text_as_plain_text() -> None:
    result = check_repair([m.user("Hi."), m.assistant("Hello."), m.user("Bye.")])
    assert result.messages == [
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Bye."},
    ]
    assert result.changes == []


def test_repair_drops_blocks_of_unknown_types() -> None:
    result = check_repair(
        [m.user([m.text("Hi."), {"type": "hologram", "data": "?"}]), m.assistant("Hello.")]
    )
    assert result.messages[0] == m.user([m.text("Hi.")])
    assert [(c.kind, c.index) for c in result.changes] == [("block dropped", 0)]
    assert "hologram" in result.changes[0].detail


def test_repair_mends_lone_surrogates() -> None:
    result = check_repair([m.user("name: caf\udce9.txt"), m.assistant("Noted \ud800.")])
    assert all(m.is_utf8(m.text_of(msg)) for msg in result.messages)
    assert kinds(result.changes) == ["block mended", "block mended"]
    assert m.text_of(result.messages[0]).startswith("name: caf")


def test_repair_drops_a_message_whose_role_is_not_user_or_assistant() -> None:
    result = check_repair([m.user("Hi."), {"role": "system", "content": "x"}, m.assistant("Yo.")])
    assert [msg["role"] for msg in result.messages] == ["user", "assistant"]
    assert kinds(result.changes) == ["message dropped"]


def test_repair_of_nothing_is_nothing() -> None:
    result = repair([])
    assert result.messages == [] and result.changes == []


def test_repair_leaves_a_valid_conversation_alone(tmp_path: Path) -> None:
    agent, _, _ = make_agent(tmp_path, [reads("a.txt", "b.txt"), reply("Done.")])
    run(agent, "Read both.")
    result = check_repair(agent.messages)
    assert as_blocks(result.messages) == as_blocks(agent.messages) and not result.changed
