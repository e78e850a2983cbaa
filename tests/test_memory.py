"""Session memory's file: facts, MEMORY.md both ways, budgets, atomic writes, the fork's editor.

The round trip is a property over generated facts (with and without an id, hand edits,
supersedes); a crash during a write is a real one: a process rewriting a large MEMORY.md in a
loop is killed with SIGKILL at several moments, and the file must still be one whole version.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from harness import messages as m
from harness.memory import (
    HAND_EDIT,
    SECTIONS,
    TRIM_ORDER,
    Fact,
    MemoryEditor,
    MemoryFormatError,
    SessionMemory,
    fit_budgets,
    parse,
    render,
    section_tokens,
    write_atomic,
)

PROPERTY = settings(max_examples=60, deadline=None)
REPO = Path(__file__).resolve().parent.parent
MEMORY_PATH = ".harness/MEMORY.md"
NOON = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def fact(section: str, text: str, n: int | None = None, **fields: Any) -> Fact:
    return Fact(section=section, text=text, id=f"f{n}" if n else None, **fields)


def in_section_order(facts: list[Fact]) -> list[Fact]:
    """The order ``render`` writes facts in: by section, file order within one."""
    return sorted(facts, key=lambda f: SECTIONS.index(f.section))


# --- facts -------------------------------------------------------------------------------------


def test_a_fact_is_one_line_whatever_whitespace_it_was_given() -> None:
    made = Fact(section="Task", text="  Fix the\nrounding\t in  billing.\r\n")
    assert made.text == "Fix the rounding in billing."
    assert "\u2028" not in Fact(section="Task", text="a\u2028b").text


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_a_fact_without_text_is_refused(text: str) -> None:
    with pytest.raises(ValidationError, match="needs some text"):
        Fact(section="Task", text=text)


@pytest.mark.parametrize("text", ["see <!-- here", "the end --> of it", "<!-- f1 -->"])
def test_a_fact_cannot_hold_the_comment_markers_its_origin_uses(text: str) -> None:
    with pytest.raises(ValidationError, match="cannot contain"):
        Fact(section="Task", text=text)


@pytest.mark.parametrize("text", ["broken \udc80 byte", "half a pair \ud83d"])
def test_a_fact_with_a_lone_surrogate_is_refused(text: str) -> None:
    with pytest.raises(ValidationError, match="lone surrogate"):
        Fact(section="Task", text=text)


def test_a_facts_time_is_kept_in_utc_to_the_second() -> None:
    paris = timezone(timedelta(hours=1))
    local = Fact(section="Task", text="x", at=datetime(2026, 1, 1, 13, 0, 0, 987_654, paris))
    assert local.at == NOON and local.at is not None and local.at.tzinfo == UTC
    naive = Fact(section="Task", text="x", at=datetime(2026, 1, 1, 12, 0, 0, 5))
    assert naive.at == NOON  # a time with no zone is taken as UTC


def test_a_time_outside_the_years_the_file_can_hold_is_refused() -> None:
    east = timezone(timedelta(hours=5))
    with pytest.raises(ValidationError, match="years 1000-9999"):
        Fact(section="Task", text="x", at=datetime(1000, 1, 1, 0, 30, tzinfo=east))


@pytest.mark.parametrize(
    "fields",
    [
        {"section": "Notes"},
        {"id": "fact1"},
        {"id": "f0"},
        {"supersedes": "3"},
        {"source": "a user"},
        {"source": ""},
        {"turn": 0},
        {"colour": "red"},
    ],
)
def test_a_fact_with_a_bad_field_is_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Fact(**{"section": "Task", "text": "x", **fields})


def test_a_fact_cannot_be_changed_once_made() -> None:
    made = Fact(section="Task", text="x")
    with pytest.raises(ValidationError):
        made.text = "y"  # type: ignore[misc]


# --- MEMORY.md both ways -----------------------------------------------------------------------

# Any Unicode text but lone surrogates, with the comment markers and line breaks generated
# often (the validator flattens or refuses them: only valid facts reach the file).
texts = st.text(
    st.characters(blacklist_categories=["Cs"])
    | st.sampled_from(["-", "<", ">", "!", "*", "#", "=", "\n", "\u2028", "\x85", " "]),
    min_size=1,
    max_size=40,
)
ids = st.integers(1, 60).map(lambda n: f"f{n}")
sources = st.sampled_from([HAND_EDIT, "user", "assistant", "toolu_0012", "toolu_01AbC.x:y@z"])
times = st.datetimes(
    min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)


@st.composite
def facts(draw: st.DrawFn) -> Fact:
    text = draw(texts)
    flat = " ".join(text.split())
    if not flat or "<!--" in flat or "-->" in flat:
        text = "a fact"
    own = draw(st.none() | ids)
    return Fact(
        section=draw(st.sampled_from(SECTIONS)),
        text=text,
        id=own,
        source=draw(sources),
        turn=draw(st.none() | st.integers(1, 10_000)),
        at=draw(st.none() | times),
        supersedes=draw(st.none() | ids.filter(lambda i: i != own)),  # never itself
    )


# A file's ids are unique (parse refuses a repeated one); lines not yet recorded have none.
fact_lists = st.lists(facts(), max_size=12, unique_by=lambda f: f.id or str(id(f)))


@PROPERTY
@given(fact_lists)
def test_parsing_the_rendered_file_gives_back_the_facts(made: list[Fact]) -> None:
    ordered = in_section_order(made)
    assert parse(render(ordered)) == ordered


@PROPERTY
@given(fact_lists)
def test_facts_out_of_section_order_come_back_in_the_files_order(made: list[Fact]) -> None:
    # render groups facts by section, so the file's order is the sections' order.
    assert parse(render(made)) == in_section_order(made)


@PROPERTY
@given(fact_lists)
def test_rendering_a_parsed_file_gives_back_the_same_text(made: list[Fact]) -> None:
    text = render(made)
    assert render(parse(text)) == text


@PROPERTY
@given(fact_lists)
def test_the_models_copy_without_origins_keeps_every_fact_and_no_comment(
    made: list[Fact],
) -> None:
    bare = render(made, provenance=False)
    assert "<!--" not in bare
    assert [(f.section, f.text) for f in parse(bare)] == [
        (f.section, f.text) for f in in_section_order(made)
    ]
    assert all(f.id is None and f.source == HAND_EDIT for f in parse(bare))


def test_the_file_lists_every_section_in_order_even_when_empty() -> None:
    text = render([fact("Worklog", "2 tool calls", 2), fact("Task", "Fix rounding.", 1)])
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == [f"## {name}" for name in SECTIONS]
    assert text.index("Fix rounding.") < text.index("2 tool calls")


def test_a_fact_line_carries_its_origin_in_a_comment() -> None:
    made = fact(
        "Errors and corrections",
        "pytest failed.",
        3,
        source="toolu_0012",
        turn=7,
        at=NOON,
        supersedes="f2",
    )
    line = (
        "- pytest failed. <!-- f3 turn=7 from=toolu_0012 at=2026-01-01T12:00:00Z supersedes=f2 -->"
    )
    assert line in render([made]).splitlines()


# --- hand edits --------------------------------------------------------------------------------


def recorded() -> list[Fact]:
    return [
        fact("Task", "Fix rounding in billing.", 1, source="user", turn=1, at=NOON),
        fact("Learnings", "Amounts are Decimal.", 2, source="toolu_0003", turn=2, at=NOON),
    ]


def test_a_line_added_by_hand_is_a_hand_edit_fact() -> None:
    text = render(recorded()).replace(
        "## Learnings\n", "## Learnings\n- Never round before summing.\n"
    )
    parsed = parse(text)
    assert parsed[1] == Fact(section="Learnings", text="Never round before summing.")
    assert parsed[1].source == HAND_EDIT and parsed[1].id is None
    assert [parsed[0], parsed[2]] == recorded()


def test_bullets_with_a_star_and_headings_in_any_case_are_read() -> None:
    text = "# Session memory\n\n##   errors AND corrections\n* Use cents.\n"
    assert parse(text) == [Fact(section="Errors and corrections", text="Use cents.")]


def test_the_memory_sees_a_line_added_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    write_atomic(path, render(recorded()))
    memory = SessionMemory(path)
    assert memory.load() == recorded()
    path.write_text(path.read_text().replace("## Worklog\n", "## Worklog\n- Ran the tests.\n"))

    facts_now = memory.load(now=NOON.timestamp())

    added = [f for f in facts_now if f.text == "Ran the tests."]
    assert len(added) == 1
    assert added[0].source == HAND_EDIT and added[0].section == "Worklog"
    assert added[0].id == "f3"  # the next free id
    assert added[0].at == NOON
    assert memory.facts == facts_now


def test_the_memory_sees_a_fact_edited_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    write_atomic(path, render(recorded()))
    memory = SessionMemory(path)
    memory.load()
    path.write_text(path.read_text().replace("Amounts are Decimal.", "Amounts are int cents."))

    edited = memory.load()

    assert [f.text for f in edited] == ["Fix rounding in billing.", "Amounts are int cents."]
    assert edited[1].id == "f2" and edited[1].source == "toolu_0003"


def test_a_broken_file_leaves_the_last_good_memory(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    write_atomic(path, render(recorded()))
    memory = SessionMemory(path)
    memory.load()
    path.write_text(path.read_text() + "\nA paragraph someone typed.\n")
    with pytest.raises(MemoryFormatError):
        memory.load()
    assert memory.facts == recorded()


# --- broken files ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("# Session memory\n\n## Notes\n- x\n", 3, "unknown section 'Notes'"),
        ("## Task\n- Fix it.\nAnd then a paragraph.\n", 3, "is not a fact"),
        ("## Task\n- Fix it. <!-- f1 colour=red -->\n", 2, "'colour=red' in the comment"),
        ("## Task\n- Fix it. <!-- f1 turn -->\n", 2, "'turn' in the comment"),
        ("## Task\n- Fix it. <!-- turn=2 turn=3 -->\n", 2, "turn= is given twice"),
        ("## Task\n\n- x <!-- at=yesterday -->\n", 3, "at=yesterday is not a time"),
        ("## Task\n- x <!-- at=2026-01-01T12:00:00 -->\n", 2, "is not a time"),
        ("# Session memory\n- Fix it.\n## Task\n", 2, "before the first '## ' section"),
        ("## Task\n- x <!-- f1 turn=0 -->\n", 2, "greater than or equal to 1"),
        ("## Task\n- x <!-- supersedes=g1 -->\n", 2, "should match pattern"),
        ("## Task\n- \n", 2, "is not a fact"),
        ("## Task\n-  <!-- f1 -->\n", 2, "needs some text"),
    ],
)
def test_a_broken_file_is_an_error_naming_its_line(text: str, line: int, problem: str) -> None:
    with pytest.raises(MemoryFormatError) as caught:
        parse(text)
    assert caught.value.line == line
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"MEMORY.md line {line}: ")


# --- budgets -----------------------------------------------------------------------------------


def sized(section: str, n: int, tokens: int) -> Fact:
    """Fact ``fn`` of about ``tokens`` tokens (4 ASCII characters a token)."""
    return fact(section, f"fact {n:03d} " + "x" * (4 * tokens - 9), n)


def test_a_section_over_its_budget_loses_its_oldest_facts() -> None:
    worklog = [sized("Worklog", n, 100) for n in (5, 1, 9, 3, 7)]
    task = [sized("Task", 2, 100)]

    kept, trimmed = fit_budgets(worklog + task, per_section=250, total=10_000)

    assert [t.fact.id for t in trimmed] == ["f1", "f3", "f5"]
    assert {t.budget for t in trimmed} == {"section"}
    assert kept == [worklog[2], worklog[4], task[0]]  # the order is kept
    assert section_tokens(kept, "Worklog") <= 250


def test_a_memory_over_its_total_is_trimmed_in_the_trim_order() -> None:
    made = [sized(section, n, 100) for n, section in enumerate(reversed(SECTIONS), start=1)]

    kept, trimmed = fit_budgets(made, per_section=1_000, total=430)

    assert [t.fact.section for t in trimmed] == list(TRIM_ORDER[: len(trimmed)])
    assert {t.budget for t in trimmed} == {"total"}
    assert sum(section_tokens(kept, s) for s in SECTIONS) <= 430
    # No more was trimmed than needed: the last fact trimmed would not have fitted.
    back = [*kept, trimmed[-1].fact]
    assert sum(section_tokens(back, s) for s in SECTIONS) > 430
    assert 0 < len(kept) < len(made)
    assert "f" in str(trimmed[0]) and "total budget" in str(trimmed[0])


def test_a_memory_within_its_budgets_is_left_whole() -> None:
    made = [sized("Task", 1, 50), sized("Learnings", 2, 50)]
    assert fit_budgets(made) == (made, [])


@st.composite
def sized_facts(draw: st.DrawFn) -> list[Fact]:
    count = draw(st.integers(0, 25))
    numbers = draw(st.permutations(range(1, count + 1)))
    return [sized(draw(st.sampled_from(SECTIONS)), n, draw(st.integers(3, 120))) for n in numbers]


@PROPERTY
@given(sized_facts(), st.integers(20, 800), st.integers(60, 3_000))
def test_every_fact_is_kept_or_reported_trimmed_oldest_first(
    made: list[Fact], per_section: int, total: int
) -> None:
    kept, trimmed = fit_budgets(made, per_section=per_section, total=total)

    gone = [t.fact for t in trimmed]
    assert len(kept) + len(gone) == len(made)
    assert set(kept) | set(gone) == set(made) and not set(kept) & set(gone)
    assert kept == [f for f in made if f in kept]  # in the input's order
    for name in SECTIONS:
        assert section_tokens(kept, name) <= per_section
        newest_gone = max((f.number for f in gone if f.section == name), default=0)
        oldest_kept = min((f.number for f in kept if f.section == name), default=10**9)
        assert newest_gone < oldest_kept  # oldest first, in every section
    assert sum(section_tokens(kept, s) for s in SECTIONS) <= total
    # A section loses a fact to the total only once the sections before it in the trim
    # order have none left.
    for t in trimmed:
        if t.budget == "total":
            earlier = TRIM_ORDER[: TRIM_ORDER.index(t.fact.section)]
            assert not any(f.section in earlier for f in kept)
    # Section trims all come before total trims.
    budgets = [t.budget for t in trimmed]
    assert budgets == sorted(budgets, key=lambda b: b == "total")


# --- atomic writes -----------------------------------------------------------------------------


def test_writing_replaces_the_content_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "MEMORY.md"
    write_atomic(path, "first\n")
    write_atomic(path, "second\n")
    assert path.read_text() == "second\n"
    assert [p.name for p in path.parent.iterdir()] == ["MEMORY.md"]


def test_writing_keeps_the_text_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    write_atomic(path, "a\r\nb\n日本語 🙂\n")
    assert path.read_bytes() == "a\r\nb\n日本語 🙂\n".encode()


def test_a_failed_replace_keeps_the_old_file_whole_and_removes_the_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "MEMORY.md"
    write_atomic(path, render(recorded()))
    seen: list[str] = []

    def failing_replace(source: str, target: object) -> None:
        seen.append(Path(source).read_text())  # the new text was written in full first
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(path, "the new memory\n")

    assert seen == ["the new memory\n"]
    assert path.read_text() == render(recorded())
    assert [p.name for p in tmp_path.iterdir()] == ["MEMORY.md"]


# The writer: imports harness.memory once (the import is the slow part), then for each path
# it is sent forks a process that rewrites that file in a loop, until the test kills it.
WRITER = """
import os, sys
from pathlib import Path
from harness.memory import write_atomic
versions = [p.read_text(encoding="utf-8") for p in sorted(Path(sys.argv[1]).glob("v*.md"))]
print("ready", flush=True)
for line in sys.stdin:
    target = Path(line.strip())
    pid = os.fork()
    if pid == 0:
        n = 0
        while True:
            write_atomic(target, versions[n % len(versions)])
            n += 1
    print(pid, flush=True)
    _, status = os.waitpid(pid, 0)
    print(os.WTERMSIG(status) if os.WIFSIGNALED(status) else -1, flush=True)
"""


@pytest.fixture
def versions(tmp_path: Path) -> list[str]:
    """Four large MEMORY.md files (about 1 MB each), written to tmp_path/v*.md."""
    out = []
    for v in range(4):
        made = [
            fact(SECTIONS[n % len(SECTIONS)], f"version {v} fact {n} " + "z" * 400, n + 1)
            for n in range(2_400)
        ]
        text = render(made)
        (tmp_path / f"v{v}.md").write_text(text, encoding="utf-8")
        out.append(text)
    return out


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    yield process
    process.kill()
    process.wait(timeout=10)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL (POSIX)")
def test_a_kill_during_the_write_leaves_a_whole_file(
    tmp_path: Path, versions: list[str], writer: subprocess.Popen[str]
) -> None:
    assert writer.stdin is not None and writer.stdout is not None
    assert writer.stdout.readline().strip() == "ready"
    for k, delay in enumerate([0.0, 0.003, 0.011, 0.027, 0.06, 0.13]):
        target = tmp_path / f"kill{k}" / "MEMORY.md"
        if k % 2:  # half the time an old version is already there
            write_atomic(target, versions[k % len(versions)])
        writer.stdin.write(f"{target}\n")
        writer.stdin.flush()
        pid = int(writer.stdout.readline())
        deadline = time.monotonic() + 10
        while (k % 2 == 0 and not target.exists()) and time.monotonic() < deadline:
            time.sleep(0.0005)
        time.sleep(delay)  # a real process, so real time: the kill lands at some moment
        os.kill(pid, signal.SIGKILL)
        assert int(writer.stdout.readline()) == signal.SIGKILL  # it was still writing

        text = target.read_text(encoding="utf-8")
        assert text in versions
        assert len(parse(text)) == 2_400


# --- the fork's editor -------------------------------------------------------------------------


def call(name: str, n: int = 1, **arguments: Any) -> m.Block:
    return m.tool_use(f"toolu_{n:04d}", name, arguments)


def editor() -> MemoryEditor:
    return MemoryEditor(MEMORY_PATH, render(recorded()))


def test_the_editor_applies_an_edit_to_the_memory_file() -> None:
    ed = editor()
    [result] = ed.run(
        [
            call(
                "edit_file",
                path=MEMORY_PATH,
                old_string="## Worklog\n",
                new_string="## Worklog\n- Ran pytest. <!-- from=toolu_0009 -->\n",
            )
        ]
    )
    assert not result.get("is_error") and result["tool_use_id"] == "toolu_0001"
    assert parse(ed.text)[-1] == Fact(section="Worklog", text="Ran pytest.", source="toolu_0009")
    assert (ed.edits, ed.refused) == (1, 0)


def test_the_editor_accepts_the_path_written_with_a_leading_dot_slash() -> None:
    ed = editor()
    [result] = ed.run(
        [
            call(
                "edit_file",
                path=f" ./{MEMORY_PATH}",
                old_string="Amounts are Decimal.",
                new_string="Amounts are Decimal, never float.",
            )
        ]
    )
    assert not result.get("is_error")
    assert "never float" in ed.text


def test_the_editor_can_rewrite_the_whole_file_with_write_file() -> None:
    ed = editor()
    new = render([fact("Task", "Only this.", 1)])
    [result] = ed.run([call("write_file", path=MEMORY_PATH, content=new)])
    assert not result.get("is_error") and ed.text == new


@pytest.mark.parametrize(
    ("name", "arguments", "reason"),
    [
        ("read_file", {"path": MEMORY_PATH}, "may only change"),
        ("bash", {"command": f"echo hi > {MEMORY_PATH}"}, "may only change"),
        ("edit_file", {"path": "app/billing.py", "old_string": "a", "new_string": "b"}, "only"),
        ("edit_file", {"path": ".harness/OTHER.md", "old_string": "a", "new_string": "b"}, "only"),
        ("write_file", {"path": "MEMORY.md", "content": "## Task\n"}, "may only change"),
        (
            "edit_file",
            {"path": MEMORY_PATH, "old_string": "nowhere", "new_string": "x"},
            "not found",
        ),
        (
            "edit_file",
            {"path": MEMORY_PATH, "old_string": "## ", "new_string": "## x"},
            "occurs 6 times",
        ),
        (
            "edit_file",
            {"path": MEMORY_PATH, "old_string": "", "new_string": "x"},
            "old_string is empty",
        ),
        ("edit_file", {"path": MEMORY_PATH, "old_string": "Task", "new_string": 3}, "needs"),
        ("write_file", {"path": MEMORY_PATH}, "needs content"),
        (
            "edit_file",
            {"path": MEMORY_PATH, "old_string": "## Task", "new_string": "## Todo"},
            "unknown section",
        ),
        (
            "edit_file",
            {"path": MEMORY_PATH, "old_string": "- Fix", "new_string": "Fix"},
            "not a fact",
        ),
        (
            "write_file",
            {"path": MEMORY_PATH, "content": "- a fact before any section\n"},
            "before the first",
        ),
        (
            "edit_file",
            {"path": MEMORY_PATH, "old_string": "Decimal.", "new_string": "\udc80"},
            "surrogate",
        ),
    ],
)
def test_the_editor_refuses_anything_but_a_valid_edit_of_the_memory_file(
    name: str, arguments: dict[str, Any], reason: str
) -> None:
    ed = editor()
    before = ed.text
    [result] = ed.run([call(name, 7, **arguments)])
    assert result["is_error"] is True and result["tool_use_id"] == "toolu_0007"
    assert result["content"].startswith("Refused: ") and reason in result["content"]
    assert ed.text == before
    assert (ed.edits, ed.refused) == (0, 1)


def test_the_editor_replaces_every_occurrence_when_asked() -> None:
    ed = editor()
    [result] = ed.run(
        [
            call(
                "edit_file",
                path=MEMORY_PATH,
                old_string="at=2026-01-01T12:00:00Z",
                new_string="at=2026-01-02T12:00:00Z",
                replace_all=True,
            )
        ]
    )
    assert not result.get("is_error")
    assert {f.at for f in parse(ed.text)} == {NOON + timedelta(days=1)}


def test_the_editor_answers_every_call_in_order_and_a_refusal_does_not_stop_the_next() -> None:
    ed = editor()
    results = ed.run(
        [
            call("edit_file", 1, path=MEMORY_PATH, old_string="missing", new_string="x"),
            {"type": "tool_use", "id": "toolu_0002", "name": "edit_file", "input": "not an object"},
            call(
                "edit_file",
                3,
                path=MEMORY_PATH,
                old_string="## Learnings\n",
                new_string="## Learnings\n- New. <!-- from=user -->\n",
            ),
        ]
    )
    assert [r["tool_use_id"] for r in results] == ["toolu_0001", "toolu_0002", "toolu_0003"]
    assert [bool(r.get("is_error")) for r in results] == [True, True, False]
    assert (ed.edits, ed.refused) == (1, 2)
    assert "New." in ed.text


def test_an_id_used_twice_is_an_error_naming_both_lines() -> None:
    text = render(
        [Fact(section="Task", text="one", id="f2"), Fact(section="Learnings", text="two", id="f3")]
    ).replace("<!-- f3 -->", "<!-- f2 -->")
    with pytest.raises(MemoryFormatError, match=r"line \d+: id f2 is already used on line \d+"):
        parse(text)


def test_a_fact_that_supersedes_itself_is_an_error() -> None:
    with pytest.raises(MemoryFormatError, match="cannot supersede itself"):
        parse("## Task\n- the task <!-- f5 supersedes=f5 -->\n")
