"""Transcripts written by an adversary: ``load``, ``fsck`` and ``repair`` on hostile files.

Each thing the adversary found (issue 29) is checked over generated inputs: message content
that holds nothing, tool ids that are lists or objects, a main entry hanging from a
subagent's, lines nested thousands deep, a lost line in the middle of a long session, paths
that are folders or pipes, long runs of one role, text before a tool result, and results
known from the tool journal. Whatever a file holds, loading reports it by line and goes on;
only what was on a damaged line is lost.
"""

from __future__ import annotations

import copy
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness.loop import INTERRUPTED
from harness.transcript import (
    MAX_DEPTH,
    NotATranscript,
    fsck,
    load,
    read_entries,
    repair,
)
from harness.transcript.conversation import _joined, _merge_same_role

SOME = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# --- a valid transcript, one message a line --------------------------------------------------


def entry(kind: str, uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "s-1",
        "type": kind,
        "uuid": uuid,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": kind, "content": content},
    }
    if "message_id" in extra:
        out["message"]["id"] = extra.pop("message_id")
    out.update(extra)
    return out


def session(rounds: list[int]) -> list[dict[str, Any]]:
    """A valid session: per round a prompt, then (for a round with calls) a reply with that
    many tool calls and their results, then an answer. Each entry hangs from the one before."""
    entries: list[dict[str, Any]] = []

    def add(kind: str, content: Any, **extra: Any) -> None:
        parent = entries[-1]["uuid"] if entries else None
        entries.append(entry(kind, f"e{len(entries) + 1}", parent, content, **extra))

    for r, calls in enumerate(rounds):
        add("user", f"Prompt {r}.")
        if calls:
            uses = [
                m.tool_use(f"toolu_{r}_{c}", "read_file", {"path": f"{c}.txt"})
                for c in range(calls)
            ]
            add("assistant", [m.text(f"Reading {calls}."), *uses], message_id=f"msg_{r}a")
            add("user", [m.tool_result(u["id"], f"what {u['id']} read") for u in uses])
        add("assistant", [m.text(f"Answer {r}.")], message_id=f"msg_{r}b")
    return entries


def lines_of(entries: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e) + "\n" for e in entries]


def save(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(lines), encoding="utf-8")
    return path


def blocks_of(entries: list[dict[str, Any]]) -> Counter[str]:
    return Counter(json.dumps(b, sort_keys=True) for e in entries for b in m.blocks(e["message"]))


def loaded_blocks(messages: list[m.MessageDict]) -> Counter[str]:
    return Counter(json.dumps(b, sort_keys=True) for msg in messages for b in m.blocks(msg))


def never_raises(path: Path) -> list[m.MessageDict]:
    """load, fsck and repair run through; what repair gives is valid. Returns it."""
    loaded = load(path)
    fsck(loaded.entries)
    fsck(read_entries(path))
    out = repair(loaded.messages).messages
    assert out == [] or m.validate(out) == []
    return out


rounds = st.lists(st.integers(0, 3), min_size=1, max_size=12)

# --- 1. content that holds nothing ----------------------------------------------------------

EMPTY_CONTENT = st.sampled_from([None, 0, 3.5, "", [], {}, [7, "x", None], True])


@SOME
@given(plan=rounds, content=EMPTY_CONTENT, data=st.data())
def test_a_message_entry_with_no_usable_content_is_skipped_with_a_finding_on_its_line(
    tmp_path: Path, plan: list[int], content: Any, data: st.DataObject
) -> None:
    entries = session(plan)
    k = data.draw(st.integers(0, len(entries) - 1))
    entries[k]["message"]["content"] = content
    loaded = load(save(tmp_path / "empty.jsonl", lines_of(entries)))
    assert (k + 1, "empty message") in [(f.line, f.kind) for f in loaded.findings]
    others = entries[:k] + entries[k + 1 :]
    assert loaded_blocks(loaded.messages) == blocks_of(others)  # the rest all loads
    assert (k + 1, "empty message") in [(f.line, f.kind) for f in fsck(loaded.entries).findings]
    assert m.validate(repair(loaded.messages).messages) == []


def test_an_assistant_reply_whose_content_is_null_loads_the_rest(tmp_path: Path) -> None:
    entries = session([0, 0])
    entries[1]["message"]["content"] = None
    loaded = load(save(tmp_path / "null.jsonl", lines_of(entries)))
    assert [m.text_of(msg) for msg in loaded.messages] == ["Prompt 0.Prompt 1.", "Answer 1."]
    assert [(f.line, f.kind) for f in loaded.findings] == [(2, "empty message")]


# --- 2. tool ids that are not strings ------------------------------------------------------

NOT_A_STRING = st.one_of(
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.integers(),
    st.none(),
    st.booleans(),
)


@SOME
@given(plan=st.lists(st.integers(1, 3), min_size=1, max_size=6), bad=NOT_A_STRING, data=st.data())
def test_a_tool_id_that_is_not_a_string_is_a_bad_block_skipped_with_a_finding(
    tmp_path: Path, plan: list[int], bad: Any, data: st.DataObject
) -> None:
    entries = session(plan)
    holders = [
        (k, j)
        for k, e in enumerate(entries)
        for j, b in enumerate(m.blocks(e["message"]))
        if b.get("type") in ("tool_use", "tool_result")
    ]
    k, j = data.draw(st.sampled_from(holders))
    block = entries[k]["message"]["content"][j]
    block["id" if block["type"] == "tool_use" else "tool_use_id"] = bad
    path = save(tmp_path / "ids.jsonl", lines_of(entries))
    loaded = load(path)
    assert (k + 1, "bad block") in [(f.line, f.kind) for f in loaded.findings]
    assert (k + 1, "bad block") in [(f.line, f.kind) for f in fsck(loaded.entries).findings]
    assert json.dumps(block, sort_keys=True) not in loaded_blocks(loaded.messages)
    never_raises(path)
    raw = repair([e["message"] for e in entries])  # repair given the blocks directly
    assert m.validate(raw.messages) == []
    assert "block dropped" in {c.kind for c in raw.changes}


# --- 3. a main entry hanging from a subagent's ----------------------------------------------


@SOME
@given(plan=rounds, data=st.data())
def test_a_main_entry_whose_parent_is_a_sidechain_entry_stays_on_the_main_chain(
    tmp_path: Path, plan: list[int], data: st.DataObject
) -> None:
    entries = session(plan)
    k = data.draw(st.integers(1, len(entries)))
    side = entry("assistant", "s1", None, [m.text("A subagent's words.")], message_id="msg_s")
    side.update(isSidechain=True, agentId="ab12")
    entries.insert(k, side)
    if k + 1 < len(entries):
        entries[k + 1]["parentUuid"] = "s1"  # the main chain now points into the sidechain
    loaded = load(save(tmp_path / "crossed.jsonl", lines_of(entries)))
    main = [e for e in entries if not e["isSidechain"]]
    assert loaded_blocks(loaded.messages) == blocks_of(main)
    assert "A subagent's words." not in json.dumps(loaded.messages)
    assert [e.uuid for e in loaded.sidechains["ab12"]] == ["s1"]
    if k + 1 < len(entries):
        assert (k + 2, "reconnected") in [(f.line, f.kind) for f in loaded.findings]
        assert (k + 2, "crossed chains") in [
            (f.line, f.kind) for f in fsck(loaded.entries).findings
        ]


# --- 4. lines nested too deeply -------------------------------------------------------------


def nested(depth: int, kind: str) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


@settings(max_examples=20, deadline=None)
@given(
    depth=st.integers(MAX_DEPTH + 1, 20_000),
    kind=st.sampled_from(["list", "dict"]),
    where=st.sampled_from(["content", "input", "extra"]),
)
def test_a_line_nested_too_deeply_is_a_bad_line_and_the_rest_loads(
    tmp_path_factory: pytest.TempPathFactory, depth: int, kind: str, where: str
) -> None:
    entries = session([1, 0])
    deep = nested(depth, kind)
    # json.dumps would recurse as deep as the value: the line is written by hand.
    text = json.dumps(deep) if depth < 500 else ("[" * depth if kind == "list" else '{"k":' * depth)
    if depth >= 500:
        text += '"bottom"' + ("]" * depth if kind == "list" else "}" * depth)
    holder = copy.deepcopy(entries[1])
    marker = '"__DEEP__"'
    if where == "content":
        holder["message"]["content"] = "__DEEP__"
    elif where == "input":
        holder["message"]["content"][1]["input"] = {"x": "__DEEP__"}
    else:
        holder["toolUseResult"] = "__DEEP__"
    lines = lines_of(entries)
    lines[1] = json.dumps(holder).replace(marker, text) + "\n"
    path = save(tmp_path_factory.mktemp("deep") / "deep.jsonl", lines)
    loaded = load(path)
    assert [(f.line, f.kind) for f in loaded.findings][:1] == [(2, "unreadable line")]
    assert "nested" in loaded.findings[0].detail
    report = fsck(read_entries(path))
    assert (2, "unreadable line") in [(f.line, f.kind) for f in report.findings]
    assert loaded_blocks(loaded.messages) == blocks_of(entries[:1] + entries[2:])
    never_raises(path)


@settings(max_examples=20, deadline=None)
@given(depth=st.integers(MAX_DEPTH + 1, 3_000), kind=st.sampled_from(["list", "dict"]))
def test_repair_drops_a_block_nested_too_deeply_instead_of_recursing(depth: int, kind: str) -> None:
    use = m.tool_use("toolu_1", "read_file", {"path": nested(depth, kind)})
    result = repair([m.user("Read it."), m.assistant([m.text("Reading."), use])])
    assert m.validate(result.messages) == []
    assert [c.kind for c in result.changes] == ["block dropped"]
    assert "nested more than" in result.changes[0].detail


# --- 5. a lost line costs what was on it ----------------------------------------------------


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=rounds, data=st.data())
def test_deleting_or_garbling_one_line_loses_at_most_the_messages_on_that_line(
    tmp_path: Path, plan: list[int], data: st.DataObject
) -> None:
    entries = session(plan)
    lines = lines_of(entries)
    k = data.draw(st.integers(0, len(lines) - 1))
    damage = data.draw(st.sampled_from(["delete", "cut", "garble"]))
    if damage == "delete":
        del lines[k]
    elif damage == "cut":
        lines[k] = lines[k][: data.draw(st.integers(0, len(lines[k]) - 2))] + "\n"
    else:
        lines[k] = data.draw(st.text(min_size=1).filter(lambda t: "\n" not in t)) + "\n"
    path = save(tmp_path / "damaged.jsonl", lines)
    loaded = load(path)
    kept = blocks_of(entries[:k] + entries[k + 1 :])
    assert kept - loaded_blocks(loaded.messages) == Counter()  # every other block is there
    never_raises(path)


def test_one_unreadable_line_in_200_messages_loses_only_that_line(tmp_path: Path) -> None:
    entries = session([0] * 100)  # 200 messages, one a line
    lines = lines_of(entries)
    lines[100] = lines[100][:40] + "\n"  # the 101st message, cut short
    loaded = load(save(tmp_path / "long.jsonl", lines))
    said = [b["text"] for msg in loaded.messages for b in m.blocks(msg)]
    assert len(said) == 199 and "Prompt 50." not in said
    assert [(f.line, f.kind) for f in loaded.findings] == [
        (101, "unreadable line"),
        (102, "reconnected"),
    ]
    assert (
        "line 100" in loaded.findings[1].detail and "line 101 bridged" in loaded.findings[1].detail
    )


@SOME
@given(plan=rounds, data=st.data())
def test_a_rewind_with_a_lost_line_before_it_still_ends_at_the_newest_leaf(
    tmp_path: Path, plan: list[int], data: st.DataObject
) -> None:
    entries = session(plan)
    # The new branch hangs from an entry that asks for no tool (a call's results would be
    # found off the branch, as parallel results are).
    fork = data.draw(
        st.sampled_from([i for i, e in enumerate(entries) if not m.tool_uses(e["message"])])
    )
    branch = [
        entry("user", "r1", entries[fork]["uuid"], "Try again."),
        entry("assistant", "r2", "r1", [m.text("Again.")], message_id="msg_r"),
    ]
    # Any line on the way to the fork but the fork itself (whose loss nothing can tell).
    lost = data.draw(st.integers(1, fork - 1)) if fork > 1 else None
    lines = lines_of(entries + branch)
    if lost is not None:
        lines[lost] = "{ torn\n"
    loaded = load(save(tmp_path / "rewind.jsonl", lines))
    assert loaded.leaf == "r2"
    assert m.text_of(loaded.messages[-1]) == "Again."
    on_branch = [e for i, e in enumerate(entries[: fork + 1]) if i != lost]
    assert loaded_blocks(loaded.messages) == blocks_of(on_branch + branch)


@SOME
@given(before=rounds, after=rounds)
def test_a_file_that_starts_over_at_a_compact_boundary_still_stops_there(
    tmp_path: Path, before: list[int], after: list[int]
) -> None:
    old = session(before)
    new = session(after)
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "b1",
        "parentUuid": None,
        "logicalParentUuid": old[-1]["uuid"],
        "isSidechain": False,
        "sessionId": "s-1",
    }
    for e in new:
        e["uuid"] = "n" + e["uuid"]
        e["parentUuid"] = "n" + e["parentUuid"] if e["parentUuid"] else "b1"
        if "id" in e["message"]:  # the replies after the boundary are new replies
            e["message"]["id"] = "n" + e["message"]["id"]
    loaded = load(save(tmp_path / "compacted.jsonl", lines_of([*old, boundary, *new])))
    assert loaded.boundary is not None and loaded.boundary.uuid == "b1"
    assert loaded_blocks(loaded.messages) == blocks_of(new)
    assert loaded.findings == []


# --- 6. paths that are not files ------------------------------------------------------------


@settings(max_examples=10, deadline=None)
@given(
    kind=st.sampled_from(["folder", "pipe"]),
    name=st.from_regex(r"[a-z0-9_-]{1,12}", fullmatch=True),
)
def test_a_path_that_is_a_folder_or_a_pipe_is_refused_before_it_is_opened(
    tmp_path_factory: pytest.TempPathFactory, kind: str, name: str
) -> None:
    path = tmp_path_factory.mktemp("paths") / f"{name}.jsonl"
    if kind == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)  # opening it to read would wait for a writer forever
    for read in (load, read_entries):
        with pytest.raises(NotATranscript, match="not a transcript") as caught:
            read(path)
        assert isinstance(caught.value, OSError)
        assert str(path) in str(caught.value)
        assert ("folder" if kind == "folder" else "pipe") in str(caught.value)


# --- 7. long runs of one role -----------------------------------------------------------------

ROLE_RUNS = st.lists(
    st.tuples(
        st.sampled_from(["user", "assistant"]),
        st.lists(st.sampled_from(["text", "tool_result", "tool_use"]), min_size=1, max_size=3),
    ),
    max_size=30,
)


@settings(max_examples=100, deadline=None)
@given(plan=ROLE_RUNS)
def test_merging_runs_of_one_role_gives_what_joining_them_pair_by_pair_gives(
    plan: list[tuple[str, list[str]]],
) -> None:
    conversation: list[m.MessageDict] = []
    for n, (role, kinds) in enumerate(plan):
        blocks = [
            m.text(f"{n}.{j}")
            if kind == "text"
            else {"type": kind, "id": f"t{n}.{j}", "tool_use_id": f"t{n}.{j}"}
            for j, kind in enumerate(kinds)
        ]
        conversation.append({"role": role, "content": blocks})
    expected: list[m.MessageDict] = []
    for message in conversation:  # the old way: one pair at a time
        if expected and expected[-1]["role"] == message["role"]:
            expected[-1] = _joined(expected[-1], message)
        else:
            expected.append(message)
    assert _merge_same_role(conversation) == expected


def test_a_long_run_of_user_entries_loads_as_one_message_in_order(tmp_path: Path) -> None:
    entries = [
        entry("user", f"u{n}", f"u{n - 1}" if n else None, f"Line {n}.") for n in range(3000)
    ]
    loaded = load(save(tmp_path / "run.jsonl", lines_of(entries)))
    assert len(loaded.messages) == 1
    assert [b["text"] for b in m.blocks(loaded.messages[0])] == [f"Line {n}." for n in range(3000)]


# --- 8. text before a tool result ----------------------------------------------------------


@SOME
@given(calls=st.integers(1, 4), data=st.data())
def test_repair_moves_tool_results_before_the_text_and_keeps_them(
    calls: int, data: st.DataObject
) -> None:
    uses = [m.tool_use(f"toolu_{c}", "read_file", {"path": f"{c}.txt"}) for c in range(calls)]
    results = [m.tool_result(u["id"], f"read {c}") for c, u in enumerate(uses)]
    texts = [m.text(f"Note {n}.") for n in range(data.draw(st.integers(1, 3)))]
    content = data.draw(st.permutations(results + texts))
    messages = [m.user("Read them."), m.assistant([m.text("Reading."), *uses]), m.user(content)]
    result = repair(messages)
    assert m.validate(result.messages) == []
    got = m.blocks(result.messages[2])
    assert got[: len(results)] == [b for b in content if b["type"] == "tool_result"]
    assert got[len(results) :] == [b for b in content if b["type"] == "text"]
    out_of_order = any(b["type"] == "text" for b in content[: len(results)])
    assert [c.kind for c in result.changes] == (["reordered"] if out_of_order else [])
    assert repair(result.messages).changes == []


def test_repair_of_text_before_a_real_result_keeps_the_result() -> None:
    use = m.tool_use("toolu_1", "read_file", {"path": "a.txt"})
    messages = [
        m.user("Read a."),
        m.assistant([use]),
        m.user([m.text("Here you go."), m.tool_result("toolu_1", "the contents")]),
    ]
    result = repair(messages)
    assert m.blocks(result.messages[2]) == [
        m.tool_result("toolu_1", "the contents"),
        m.text("Here you go."),
    ]
    assert [(c.kind, c.index) for c in result.changes] == [("reordered", 2)]
    assert INTERRUPTED not in json.dumps(result.messages)


# --- 9. results from the tool journal ------------------------------------------------------


@SOME
@given(
    calls=st.integers(1, 4),
    journaled=st.sets(st.integers(0, 3)),
    unresolved=st.sampled_from(["answer", "drop"]),
    ends=st.booleans(),
)
def test_a_call_with_no_result_takes_its_journaled_result_whatever_the_policy(
    calls: int, journaled: set[int], unresolved: Any, ends: bool
) -> None:
    uses = [m.tool_use(f"toolu_{c}", "read_file", {"path": f"{c}.txt"}) for c in range(calls)]
    messages = [m.user("Read them."), m.assistant([m.text("Reading."), *uses])]
    if not ends:
        messages.append(m.user("Are you there?"))
    answers = {
        f"toolu_{c}": m.tool_result(f"toolu_{c}", f"journaled {c}") for c in journaled if c < calls
    }
    result = repair(messages, unresolved=unresolved, answers=answers)
    assert m.validate(result.messages) == []
    got = {r["tool_use_id"]: r for msg in result.messages for r in m.tool_results(msg)}
    for use_id, block in answers.items():
        assert got[use_id] == block
        assert ("tool_use answered", 1, f"{use_id} from the tool journal") in [
            (c.kind, c.index, c.detail) for c in result.changes
        ]
    others = [u["id"] for u in uses if u["id"] not in answers]
    if unresolved == "answer":
        assert all(got[i]["content"] == INTERRUPTED for i in others)
    else:
        assert not set(others) & set(got)
        assert [u["id"] for u in m.tool_uses(result.messages[1])] == sorted(answers)
    again = repair(result.messages, unresolved=unresolved, answers=answers)
    assert again.changes == []


# --- any JSON anywhere ------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
HOSTILE = JSON | st.integers(MAX_DEPTH - 5, 2_000).map(lambda d: nested(d, "list"))


def spots(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value (keys of objects, items of arrays), as paths."""
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += spots(item, (*path, key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            out += spots(item, (*path, n))
    return out


def put(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    *head, last = path
    holder = value
    for step in head:
        holder = holder[step]
    holder[last] = new
    return value


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=rounds, value=HOSTILE, data=st.data())
def test_any_json_spliced_anywhere_in_a_transcript_never_breaks_load_fsck_or_repair(
    tmp_path: Path, plan: list[int], value: Any, data: st.DataObject
) -> None:
    entries = session(plan)
    k = data.draw(st.integers(0, len(entries) - 1))
    where = data.draw(st.sampled_from(spots(entries[k])[1:]))
    entries[k] = put(entries[k], where, value)
    lines = [*lines_of(entries[:k]), _dumps(entries[k]), *lines_of(entries[k + 1 :])]
    path = save(tmp_path / "spliced.jsonl", lines)
    out = never_raises(path)
    assert out and m.validate(out) == []
    given_ = [e.get("message") for e in entries]
    direct = repair([msg if isinstance(msg, dict) else {} for msg in given_])
    assert direct.messages == [] or m.validate(direct.messages) == []


def _dumps(value: Any) -> str:
    """One line of JSON, however deep ``value`` nests (json.dumps recurses)."""
    try:
        return json.dumps(value) + "\n"
    except RecursionError:
        return "[" * 5_000 + "]" * 5_000 + "\n"
