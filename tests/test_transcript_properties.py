"""Transcripts under damage: properties over generated sessions and generated conversations.

A session is made by running a scripted agent with a :class:`~harness.transcript.Transcript`
(a few runs, random parallel tool calls, random compactions and microcompactions); then its
file is damaged the ways a crash, a bad copy or another writer damage files: truncated at
every byte of its last line, lines dropped, lines written twice, replies split into one entry
per content block (Claude Code's layout, with parallel results as side branches) and
reordered, lines shuffled. Whatever the damage, ``load`` and ``fsck`` never raise and
``repair`` of what was loaded is a conversation the API accepts.
"""

from __future__ import annotations

import copy
import json
import random
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.events import Compacted
from harness.compaction.microcompact import clearable_count, microcompact
from harness.compaction.summary import compact, is_compaction_request
from harness.loop import Rewrite
from harness.model import ScriptedModel, reply, tool_call
from harness.model.scripted_summary import scripted_summary
from harness.tools.builtins import read_file
from harness.transcript import (
    Repair,
    Session,
    Transcript,
    fsck,
    load,
    read_entries,
    repair,
    seeded_ids,
)

FILES = ("a.txt", "b.txt", "c.txt")
NET = ("still invalid", "no valid conversation could be kept")
"""How repair's safety net words its changes (it should never be needed)."""

# --- generated sessions --------------------------------------------------------------------

Run = tuple[list[int], str]
"""One run: the number of parallel calls on each turn, then what follows it (``none``,
``compact`` or ``microcompact``)."""

runs = st.lists(
    st.tuples(
        st.lists(st.integers(1, 3), max_size=3),
        st.sampled_from(["none", "compact", "microcompact"]),
    ),
    min_size=1,
    max_size=3,
)
short_runs = st.lists(
    st.tuples(
        st.lists(st.integers(1, 3), max_size=2),
        st.sampled_from(["none", "compact", "microcompact"]),
    ),
    min_size=1,
    max_size=2,
)
"""Shorter sessions, for the test that loads the file once per byte of its last line."""


@dataclass
class Written:
    path: Path
    lines: list[str]
    """The file's lines, each with its newline."""
    messages: list[m.MessageDict]
    """What the agent held at the end."""


@contextmanager
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="transcript-props-") as name:
        yield Path(name)


def write_session(root: Path, plan: list[Run], seed: int) -> Written:
    """Run a scripted agent through ``plan`` with a transcript, and return the file."""
    ws = root / "ws"
    ws.mkdir()
    for name in FILES:
        # Not only ASCII: a cut can fall inside a character's bytes.
        (ws / name).write_text(
            "".join(f"{name}: line {i}, café ☕\n" for i in range(25)), encoding="utf-8"
        )
    clock = FakeClock()
    model = ScriptedModel(clock=clock)
    model.answer_when(is_compaction_request, scripted_summary)
    path = root / "session.jsonl"
    transcript = Transcript(
        path=path, session_id="s-1", cwd=str(ws), clock=clock, ids=seeded_ids(seed)
    )
    agent = Agent(model, tools=[read_file], workspace=ws, clock=clock, plugins=[transcript])
    for n, (turns, after) in enumerate(plan):
        model.extend(
            reply(f"Turn {k}.", tool_calls=[tool_call("read_file", path=f) for f in FILES[:calls]])
            for k, calls in enumerate(turns)
        )
        model.extend([reply(f"Run {n} done, café ☕.")])
        list(agent.run(f"Run {n}: read some files."))
        if after == "compact":
            compact(agent)
        elif after == "microcompact" and clearable_count(agent.messages, keep=1):
            result = microcompact(agent.messages, keep=1)
            agent.apply(Rewrite(result.messages, Compacted("microcompact", "count", 100, 10)))
    transcript.close()
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    written = Written(path, lines, copy.deepcopy(agent.messages))
    assert load(path).messages == written.messages  # the undamaged file round-trips
    return written


def save(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(lines), encoding="utf-8")
    return path


def substance(messages: list[m.MessageDict]) -> bool:
    """Whether a message holds something repair always keeps: words, or a tool call."""
    for message in messages:
        for block in m.blocks(message):
            if block.get("type") == "text" and str(block.get("text", "")).strip():
                return True
            if block.get("type") == "tool_use" and message["role"] == "assistant":
                return True
    return False


def by_the_rules(result: Repair) -> None:
    """Repair's named rules were enough: its last-resort net (drop whatever the API would
    still refuse) did not have to catch anything."""
    caught = [str(c) for c in result.changes if c.detail.startswith(NET)]
    assert caught == [], caught


def survives(path: Path, *, thorough: bool = True) -> Session:
    """The properties every damaged file keeps; returns the loaded session. ``thorough``
    also reads it again on the fast path and checks the lines as read afresh."""
    session = load(path)
    fsck(session.entries)
    if thorough:
        fsck(read_entries(path))
        load(path, fast=True)
    result = repair(session.messages)
    by_the_rules(result)
    out = result.messages
    if out:
        assert m.validate(out) == []
    else:
        assert not substance(session.messages), "repair threw away every message"
    return session


PROPERTY = settings(max_examples=15, deadline=None)


# --- truncation ----------------------------------------------------------------------------


@settings(max_examples=4, deadline=None)
@given(plan=short_runs, seed=st.integers(0, 2**16))
def test_a_file_cut_at_any_byte_of_its_last_line_loads_what_came_before(
    plan: list[Run], seed: int
) -> None:
    with folder() as root:
        written = write_session(root, plan, seed)
        *head, last = written.lines
        raw = last.encode("utf-8")
        # What a cut can load: the lines before the last one, or all of them. Both survive
        # (repair makes them valid), so each cut only has to load as one of the two.
        before = survives(save(root / "before.jsonl", head)).messages
        survives(written.path)
        path = save(root / "cut.jsonl", written.lines)
        start = len("".join(head).encode("utf-8"))
        with open(path, "r+b") as handle:
            # Every cut point, not a sample; longest first, so that each cut is a truncate.
            for cut in range(len(raw), -1, -1):
                handle.truncate(start + cut)
                session = load(path)
                report = fsck(session.entries)
                if cut < len(raw) - 1:  # the last entry is cut short (or gone): skipped
                    assert session.messages == before
                    if cut > 0:  # and reported, on its line
                        assert session.torn is not None
                        assert session.torn.line == len(written.lines)
                        assert report.kinds().get("torn line") == 1
                else:  # whole (perhaps without its newline)
                    assert session.torn is None and report.ok
                    assert session.messages == written.messages
        assert path.stat().st_size == start


# --- lines lost, repeated, split, shuffled ------------------------------------------------


@PROPERTY
@given(plan=runs, seed=st.integers(0, 2**16), data=st.data())
def test_dropping_lines_never_breaks_load_fsck_or_repair(
    plan: list[Run], seed: int, data: st.DataObject
) -> None:
    with folder() as root:
        written = write_session(root, plan, seed)
        n = len(written.lines)
        gone = data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=max(1, n // 2)))
        kept = [line for i, line in enumerate(written.lines) if i not in gone]
        survives(save(root / "dropped.jsonl", kept))


@PROPERTY
@given(plan=runs, seed=st.integers(0, 2**16), data=st.data())
def test_lines_written_twice_change_nothing_in_the_conversation(
    plan: list[Run], seed: int, data: st.DataObject
) -> None:
    with folder() as root:
        written = write_session(root, plan, seed)
        lines = list(written.lines)
        copied: list[dict[str, Any]] = []
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(written.lines) - 1))
            # The copy goes somewhere after the line it repeats (a write done again).
            at = data.draw(st.integers(lines.index(written.lines[i]) + 1, len(lines)))
            lines.insert(at, written.lines[i])
            copied.append(json.loads(written.lines[i]))
        session = survives(save(root / "twice.jsonl", lines))
        assert session.messages == written.messages
        with_uuid = [e for e in copied if "uuid" in e]  # a content replacement has none
        assert fsck(session.entries).kinds().get("duplicate uuid", 0) == len(with_uuid)


def split_per_block(lines: list[str], *, side_branches: bool) -> list[str]:
    """Claude Code 2.x's layout: one entry per content block of each reply, chained; with
    ``side_branches``, each result of a parallel call is its own entry under the entry that
    holds its tool_use, and what follows continues from the last result only."""
    out: list[str] = []
    holder: dict[str, str] = {}  # tool_use id -> uuid of the entry that holds it
    for line in lines:
        entry = json.loads(line)
        content = (entry.get("message") or {}).get("content")
        if not isinstance(content, list) or len(content) < 2:
            out.append(line)
            continue
        if entry["type"] == "assistant":
            parent = entry["parentUuid"]
            for j, block in enumerate(content):
                last = j == len(content) - 1
                uuid = entry["uuid"] if last else f"{entry['uuid']}-block{j}"
                piece = {
                    **entry,
                    "uuid": uuid,
                    "parentUuid": parent,
                    "message": {**entry["message"], "content": [block]},
                }
                if block.get("type") == "tool_use":
                    holder[block["id"]] = uuid
                out.append(json.dumps(piece) + "\n")
                parent = uuid
        elif side_branches and all(b.get("type") == "tool_result" for b in content):
            for j, block in enumerate(content):
                last = j == len(content) - 1
                parent = holder.get(block["tool_use_id"], entry["parentUuid"])
                piece = {
                    **entry,
                    "uuid": entry["uuid"] if last else f"{entry['uuid']}-result{j}",
                    "parentUuid": parent,
                    "sourceToolAssistantUUID": parent,
                    "message": {**entry["message"], "content": [block]},
                }
                out.append(json.dumps(piece) + "\n")
        else:
            out.append(line)
    return out


@PROPERTY
@given(plan=runs, seed=st.integers(0, 2**16), side_branches=st.booleans())
def test_replies_split_one_entry_per_block_load_as_the_same_conversation(
    plan: list[Run], seed: int, side_branches: bool
) -> None:
    with folder() as root:
        written = write_session(root, plan, seed)
        lines = split_per_block(written.lines, side_branches=side_branches)
        session = survives(save(root / "split.jsonl", lines))
        assert session.messages == written.messages
        assert session.findings == []


@PROPERTY
@given(plan=runs, seed=st.integers(0, 2**16), shuffle=st.randoms(use_true_random=False))
def test_block_entries_in_another_order_still_load_valid(
    plan: list[Run], seed: int, shuffle: random.Random
) -> None:
    with folder() as root:
        written = write_session(root, plan, seed)
        lines = split_per_block(written.lines, side_branches=shuffle.random() < 0.5)
        # Reorder the entries of each reply among themselves (where they lie in the file).
        groups: dict[str, list[int]] = {}
        for i, line in enumerate(lines):
            entry = json.loads(line)
            if entry["type"] == "assistant" and "id" in entry["message"]:
                groups.setdefault(entry["message"]["id"], []).append(i)
        reordered = list(lines)
        for places in groups.values():
            moved = [lines[i] for i in places]
            shuffle.shuffle(moved)
            for i, line in zip(places, moved, strict=True):
                reordered[i] = line
        survives(save(root / "reordered.jsonl", reordered))


@PROPERTY
@given(plan=runs, seed=st.integers(0, 2**16), data=st.data())
def test_shuffled_lines_never_break_load_fsck_or_repair(
    plan: list[Run], seed: int, data: st.DataObject
) -> None:
    with folder() as root:
        written = write_session(root, plan, seed)
        lines = list(written.lines)
        places = data.draw(
            st.lists(st.integers(0, len(lines) - 1), min_size=2, max_size=len(lines), unique=True)
        )
        moved = data.draw(st.permutations([lines[i] for i in places]))
        for i, line in zip(places, moved, strict=True):
            lines[i] = line
        survives(save(root / "shuffled.jsonl", lines))


@PROPERTY
@given(plan=runs, seed=st.integers(0, 2**16), data=st.data())
def test_every_damage_at_once_never_breaks_load_fsck_or_repair(
    plan: list[Run], seed: int, data: st.DataObject
) -> None:
    with folder() as root:
        written = write_session(root, plan, seed)
        lines = split_per_block(written.lines, side_branches=data.draw(st.booleans()))
        rng = data.draw(st.randoms(use_true_random=False))
        lines = [line for line in lines if rng.random() > 0.15]  # some lost
        for _ in range(rng.randint(0, 3)):  # some twice
            if lines:
                lines.insert(rng.randint(0, len(lines)), rng.choice(lines))
        for _ in range(rng.randint(0, 3)):  # some swapped
            if len(lines) > 1:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
        if lines:  # and the last one cut short
            last = lines[-1].encode("utf-8")
            lines[-1] = last[: rng.randint(0, len(last))].decode("utf-8", "ignore")
        survives(save(root / "damaged.jsonl", lines))


# --- repair over any list of messages ------------------------------------------------------

TOOL_IDS = st.sampled_from(["toolu_1", "toolu_2", "toolu_3"])
WORDS = st.sampled_from(["Hi.", "", "  ", "\n\t", "ok", "caf\udce9.txt", "lone \ud800 here", "é"])
TEXT = WORDS | st.text(max_size=6)

BLOCKS = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, TEXT),
    st.builds(
        lambda i, n, x: {"type": "tool_use", "id": i, "name": n, "input": x},
        TOOL_IDS,
        st.sampled_from(["read_file", "bash", "not a name!", ""]),
        st.sampled_from([{}, {"path": "a.txt"}, "not a dict", None]),
    ),
    st.builds(
        lambda i, c, e: {"type": "tool_result", "tool_use_id": i, "content": c, "is_error": e},
        TOOL_IDS,
        st.sampled_from(
            ["out", "", [{"type": "text", "text": "x"}], 42, None, [{"type": "hologram"}]]
        ),
        st.booleans(),
    ),
    st.just({"type": "thinking", "thinking": "hmm", "signature": "sig"}),
    st.just({"type": "redacted_thinking", "data": "xyz"}),
    st.builds(lambda t: {"type": t, "data": 1}, st.sampled_from(["hologram", "tool_reference"])),
    st.builds(lambda: {"text": "a block without a type"}),
    st.sampled_from(["a bare string", 7, None]),
)

MESSAGES = st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant", "user", "assistant", "system"]),
            "content": st.one_of(TEXT, st.lists(BLOCKS, max_size=4)),
        }
    ),
    max_size=8,
)


def as_blocks(messages: list[Any]) -> list[tuple[str, list[m.Block]]]:
    return [(msg["role"], m.blocks(msg)) for msg in messages]


def has_words(messages: list[dict[str, Any]]) -> bool:
    """A message of a known role with text that is not blank: repair keeps it."""
    for message in messages:
        if message["role"] not in ("user", "assistant"):
            continue
        content = message["content"]
        items = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if any(
            isinstance(b, dict) and b.get("type") == "text" and str(b.get("text")).strip()
            for b in items
        ):
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(messages=MESSAGES)
def test_repair_of_any_messages_is_valid_pure_and_idempotent(
    messages: list[dict[str, Any]],
) -> None:
    given_ = copy.deepcopy(messages)
    result = repair(messages)
    by_the_rules(result)
    assert messages == given_  # pure: the input is untouched
    if result.messages:
        assert m.validate(result.messages) == []
    else:
        assert not has_words(messages)
    again = repair(result.messages)
    assert again.changes == []
    assert as_blocks(again.messages) == as_blocks(result.messages)
    dropped = repair(messages, unresolved="drop")
    by_the_rules(dropped)
    assert dropped.messages == [] or m.validate(dropped.messages) == []
    assert "tool_use answered" not in {c.kind for c in dropped.changes}
    assert repair(dropped.messages, unresolved="drop").changes == []
