"""The command line against what a person (or a script) can get wrong, in-process and as a
real program: every mistake is one line on stderr and an exit code, never a traceback.

* a closed standard input (``harness <&-``), or ``-p -`` reading an empty or unreadable one;
* a resumed session whose ``MEMORY.md`` was broken by hand: reported with its file and line,
  the session goes on without memory, and the file is left as the person wrote it;
* ``--sessions`` at a regular file or a folder that cannot be written: exit 2 before any
  model call, rather than a run whose transcript silently goes nowhere;
* ``--resume`` of a transcript outside the sessions folder (or a link in the folder to one):
  copied into a new session, and the original never changes;
* a "session" that is a folder or a named pipe: skipped by the picker and by ``--continue``,
  a one-line error for ``--resume``, and never opened (a pipe would wait forever);
* generated argument lists, real flags and junk mixed: always an exit code, never an exception.

Each test runs in a fresh workspace that is the current folder, with ``HOME`` in a tmp folder
and no key (the offline demo model answers). Nothing here waits on a clock.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness.cli import describe, main, unwritable
from harness.cli.assemble import Options, assemble, sessions_for
from harness.cli.demo import demo_model
from harness.cli.report import Exit
from harness.clock import FakeClock
from harness.memory import MemoryFormatError, parse
from harness.model import ScriptedModel
from harness.resume import Sessions
from harness.transcript import NotATranscript, load

assembly = importlib.import_module("harness.cli.assemble")
CODES = {int(e) for e in Exit}
FAST = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
HAS_FIFO = hasattr(os, "mkfifo")


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, Any]:
        record: dict[str, Any] = json.loads(self.out)
        return record


from test_cli import workspace  # noqa: E402  the command line tests' own project folder

__all__ = ["workspace"]  # a fixture, used by name


Cli = Callable[..., Run]


@pytest.fixture
def cli(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Cli:
    """``cli(*argv, stdin="")``: run the command line once; ``stdin=None`` is a closed one."""

    def run(*argv: str, stdin: str | io.TextIOBase | None = "") -> Run:
        source = io.StringIO(stdin) if isinstance(stdin, str) else stdin
        monkeypatch.setattr(sys, "stdin", source)
        capsys.readouterr()
        code = main(list(argv))
        got = capsys.readouterr()
        return Run(code, got.out, got.err)

    return run


class Calls:
    """The demo models the command line made, and how many requests they got in all."""

    def __init__(self) -> None:
        self.models: list[ScriptedModel] = []

    def __len__(self) -> int:
        return sum(len(model.requests) for model in self.models)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Every model call the command line makes: the tests that say "before any model call"
    check there is none."""
    made = Calls()

    def counting(options: Options, clock: Any) -> ScriptedModel:
        model = demo_model(clock=clock, context_window=options.window)
        made.models.append(model)
        return model

    monkeypatch.setattr(assembly, "model_for", counting)
    return made


def one_line(err: str) -> str:
    """The single line a usage error prints (and that it is one line, with no traceback)."""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("harness: "), err
    return lines[0]


def transcripts(workspace: Path) -> list[Path]:
    return sorted((workspace / ".harness" / "projects").glob("*/*.jsonl"))


def folder_of(workspace: Path) -> Path:
    clock = FakeClock()
    return sessions_for(Options(workspace=workspace), clock=clock).folder


def first_session(cli: Cli, workspace: Path, prompt: str = "list files") -> Path:
    run = cli("-p", prompt, "--output-format", "json")
    assert run.code == 0, run.err
    (path,) = transcripts(workspace)
    return path


# --- 1. a closed or empty standard input ----------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ((), "the standard input is closed"),
        (("-p", "-"), "-p - reads the prompt from the standard input, which is closed"),
        (("--resume",), "--resume without an id asks which session"),
    ],
)
def test_a_closed_stdin_where_input_is_needed_is_one_line_and_exit_2(
    cli: Cli, workspace: Path, calls: Calls, argv: tuple[str, ...], says: str
) -> None:
    first_session(cli, workspace)  # something the picker could list
    calls.models.clear()
    run = cli(*argv, stdin=None)
    assert run.code == Exit.USAGE
    assert says in one_line(run.err)
    assert len(calls) == 0


def test_a_one_shot_prompt_needs_no_stdin_and_runs_with_it_closed(cli: Cli) -> None:
    run = cli("-p", "list files", "--output-format", "json", stdin=None)
    assert run.code == 0 and run.json()["result"].startswith("glob returned")


@FAST
@given(blank=st.text(alphabet=" \t\r\n\f\v", max_size=20))
def test_dash_p_with_nothing_but_whitespace_on_stdin_is_a_usage_error_before_any_call(
    cli: Cli, workspace: Path, calls: Calls, blank: str
) -> None:
    calls.models.clear()
    run = cli("-p", "-", stdin=blank)
    assert run.code == Exit.USAGE
    assert "found no prompt on the standard input" in one_line(run.err)
    assert len(calls) == 0 and transcripts(workspace) == []


class Unreadable(io.StringIO):
    """A standard input whose reads fail, as a terminal that went away does."""

    def read(self, size: int | None = -1, /) -> str:
        raise OSError(5, "Input/output error")

    def readline(self, size: int | None = -1, /) -> str:
        raise OSError(5, "Input/output error")


@pytest.mark.parametrize("argv", [(), ("-p", "-")])
def test_a_stdin_that_fails_to_read_is_one_line_and_exit_2(cli: Cli, argv: tuple[str, ...]) -> None:
    run = cli(*argv, stdin=Unreadable())
    assert run.code == Exit.USAGE
    assert "the standard input cannot be read: Input/output error" in one_line(run.err)


def test_a_stdin_that_is_not_utf8_is_named_and_exit_2(cli: Cli) -> None:
    strict = io.TextIOWrapper(io.BytesIO(b"list \xff files\n"), "utf-8", errors="strict")
    run = cli("-p", "-", stdin=strict)
    assert run.code == Exit.USAGE
    assert "the standard input is not utf-8 text" in one_line(run.err)


def harness_process(
    workspace: Path, *argv: str, closed_stdin: bool
) -> subprocess.CompletedProcess[str]:
    """``python -m harness *argv`` as a shell starts it, its standard input closed or not."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(workspace.parent / "home"),
        "PYTHONIOENCODING": "utf-8",
        "LANG": "C.UTF-8",
    }
    quoted = " ".join(["'" + a.replace("'", "'\\''") + "'" for a in argv])
    command = f"exec '{sys.executable}' -m harness {quoted}" + (" <&-" if closed_stdin else "")
    return subprocess.run(
        ["sh", "-c", command],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_the_real_program_with_its_stdin_closed_says_so_in_one_line_and_exits_2(
    workspace: Path,
) -> None:
    # In-process, a closed stdin is ``sys.stdin = None``; here the shell closes the descriptor.
    done = harness_process(workspace, closed_stdin=True)
    assert done.returncode == Exit.USAGE, done.stderr
    assert "the standard input is closed" in one_line(done.stderr)
    assert done.stdout == ""


# --- 2. a memory file broken by hand ---------------------------------------------------------

VALID_MEMORY = [
    "# Session memory",
    "",
    "## Current state",
    "- the prices are not set yet",
    "## Learnings",
    "- README.md names the TODO",
]
JUNK_LINE = st.text(
    alphabet=st.characters(
        codec="utf-8", exclude_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    ),
    min_size=1,
    max_size=40,
).filter(lambda s: s.strip() and not s.lstrip().startswith(("-", "#", "<!--")))


def memory_file(transcript: Path) -> Path:
    return transcript.with_suffix("") / "session-memory" / "MEMORY.md"


def test_continue_with_a_broken_memory_file_names_file_and_line_and_goes_on_without_it(
    cli: Cli, workspace: Path
) -> None:
    path = first_session(cli, workspace)
    memory = memory_file(path)
    memory.parent.mkdir(parents=True)
    broken = "\n".join([*VALID_MEMORY[:4], "this line is no fact", *VALID_MEMORY[4:]]) + "\n"
    memory.write_text(broken, encoding="utf-8")

    run = cli("--continue", "-p", "search TODO", "--output-format", "json")

    assert run.code == 0, run.err
    assert run.json()["result"].startswith("grep returned")
    line = one_line(run.err)
    assert f"{memory} line 5:" in line and "is not a fact" in line
    assert "session memory is off for this session" in line
    assert memory.read_text(encoding="utf-8") == broken  # as the person left it
    assert m.validate(load(path).messages) == []


def test_the_memory_command_of_such_a_session_shows_the_problem_and_that_memory_is_off(
    cli: Cli, workspace: Path
) -> None:
    path = first_session(cli, workspace)
    memory = memory_file(path)
    memory.parent.mkdir(parents=True)
    memory.write_text("## Nope\n- a fact\n", encoding="utf-8")
    run = cli("--continue", stdin="/memory\n/exit\n")
    assert run.code == 0
    assert "unknown section 'Nope'" in one_line(run.err)
    assert "⚠ MEMORY.md line 1: unknown section 'Nope'" in run.out
    assert "session memory is off for this session" in run.out
    assert memory.read_text(encoding="utf-8") == "## Nope\n- a fact\n"


@FAST
@given(at=st.integers(min_value=0, max_value=len(VALID_MEMORY)), junk=JUNK_LINE)
def test_a_resumed_session_never_uses_nor_rewrites_a_memory_file_broken_anywhere(
    workspace: Path, at: int, junk: str
) -> None:
    lines = [*VALID_MEMORY]
    lines.insert(at, junk)
    text = "\n".join(lines) + "\n"
    with pytest.raises(MemoryFormatError):
        parse(text)
    clock = FakeClock()
    options = Options(workspace=workspace, home=workspace.parent / "home")
    sessions = sessions_for(options, clock=clock)
    first = assemble(options, clock=clock, sessions=sessions, fsync=False)
    list(first.agent.run("list files"))
    memory = memory_file(first.transcript.path)
    memory.parent.mkdir(parents=True, exist_ok=True)
    memory.write_bytes(text.encode("utf-8"))

    again = assemble(options, clock=clock, sessions=sessions, session=first.session_id, fsync=False)

    assert isinstance(again.memory_error, MemoryFormatError)
    assert again.memory_error.line == at + 1
    assert again.memory not in again.agent.plugins and again.auto.session_memory is None
    again.memory.extract(again.agent)  # even asked outright, it leaves the file alone
    list(again.agent.run("search TODO"))
    assert memory.read_bytes() == text.encode("utf-8")


# --- 3. a sessions folder that cannot take a transcript -------------------------------------


@pytest.mark.parametrize("where", ["afile", "afile/sub/dir"])
def test_sessions_at_or_under_a_regular_file_exits_2_before_any_model_call(
    cli: Cli, workspace: Path, calls: Calls, where: str
) -> None:
    (workspace / "afile").write_text("not a folder\n", encoding="utf-8")
    run = cli("--sessions", where, "-p", "list files")
    assert run.code == Exit.USAGE
    assert f"{workspace / 'afile'} is a file, not a folder" in one_line(run.err)
    assert len(calls) == 0
    assert (workspace / "afile").read_text(encoding="utf-8") == "not a folder\n"


@pytest.mark.skipif(AS_ROOT, reason="root may write in a read-only folder")
def test_a_read_only_sessions_folder_exits_2_before_any_model_call(
    cli: Cli, workspace: Path, calls: Calls
) -> None:
    locked = workspace / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        run = cli("--sessions", "locked", "-p", "list files")
    finally:
        locked.chmod(0o700)
    assert run.code == Exit.USAGE
    assert f"{locked} is not writable" in one_line(run.err)
    assert len(calls) == 0 and list(locked.iterdir()) == []


PART = st.sampled_from(["folder", "file", "missing"])


@FAST
@given(parts=st.lists(PART, min_size=1, max_size=4))
def test_unwritable_says_none_exactly_when_a_transcript_can_be_written_there(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str]
) -> None:
    base = tmp_path_factory.mktemp("layout")
    place = base
    for n, part in enumerate(parts):
        place = place / f"p{n}"
        if part == "folder":
            place.mkdir()
        elif part == "file":
            place.write_text("x", encoding="utf-8")
            break
        else:
            break
    folder = base.joinpath(*(f"p{n}" for n in range(len(parts))), "projects", "here")
    said = unwritable(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "probe.jsonl").write_text("{}\n", encoding="utf-8")
        writable = True
    except OSError:
        writable = False
    assert (said is None) == writable, said


# --- 4. a transcript outside the sessions folder ---------------------------------------------


def test_resume_of_a_transcript_outside_the_folder_copies_it_and_never_changes_it(
    cli: Cli, workspace: Path, tmp_path: Path
) -> None:
    made = first_session(cli, workspace)
    outside = tmp_path / "elsewhere" / made.name
    outside.parent.mkdir()
    shutil.move(made, outside)
    before = outside.read_bytes()

    run = cli("--resume", str(outside), "-p", "search TODO", "--output-format", "json")

    assert run.code == 0, run.err
    new_id = run.json()["session_id"]
    assert new_id != outside.stem
    assert one_line(run.err) == (
        f"harness: copied {outside} into new session {new_id}; the original is not changed"
    )
    assert outside.read_bytes() == before
    (copy,) = transcripts(workspace)
    assert copy.name == f"{new_id}.jsonl" and not copy.is_symlink()
    assert copy.read_bytes().startswith(before)  # the copy, then this run
    conversation = load(copy).messages
    assert m.validate(conversation) == []
    assert m.text_of(conversation[0]) == "list files"
    assert m.text_of(conversation[-1]).startswith("grep returned")


@pytest.mark.parametrize("how", [("--resume", "ID"), ("--continue",)])
def test_a_session_file_that_links_out_of_the_folder_is_copied_and_the_target_kept(
    cli: Cli, workspace: Path, tmp_path: Path, how: tuple[str, ...]
) -> None:
    made = first_session(cli, workspace)
    target = tmp_path / "someone-elses.jsonl"
    shutil.move(made, target)
    made.symlink_to(target)
    before = target.read_bytes()

    argv = [made.stem if a == "ID" else a for a in how]
    run = cli(*argv, "-p", "search TODO", "--output-format", "json")

    assert run.code == 0, run.err
    new_id = run.json()["session_id"]
    assert f"copied {made} into new session {new_id}" in one_line(run.err)
    assert target.read_bytes() == before and made.is_symlink()
    copy = made.parent / f"{new_id}.jsonl"
    assert copy.is_file() and not copy.is_symlink()
    assert m.text_of(load(copy).messages[-1]).startswith("grep returned")


def test_a_transcript_given_by_its_path_inside_the_folder_is_resumed_in_place(
    cli: Cli, workspace: Path
) -> None:
    made = first_session(cli, workspace)
    run = cli("--resume", str(made), "-p", "search TODO", "--output-format", "json")
    assert run.code == 0 and run.err == ""
    assert run.json()["session_id"] == made.stem and transcripts(workspace) == [made]


@FAST
@given(data=st.binary(max_size=5_000))
def test_import_file_copies_any_bytes_into_a_new_regular_file_of_the_folder(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    base = tmp_path_factory.mktemp("import")
    source = base / "theirs.jsonl"
    source.write_bytes(data)
    sessions = Sessions.for_workspace(base / "ws", clock=FakeClock())
    first = sessions.import_file(source)
    second = sessions.import_file(source)
    assert first != second
    for session_id in (first, second):
        copy = sessions.path(session_id)
        assert copy.parent == sessions.folder
        assert stat.S_ISREG(copy.lstat().st_mode) and copy.read_bytes() == data
    assert source.read_bytes() == data


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_import_file_refuses_what_is_not_a_regular_file_and_leaves_nothing(
    tmp_path: Path, kind: str
) -> None:
    if kind == "fifo" and not HAS_FIFO:
        pytest.skip("no named pipes here")
    odd = tmp_path / "odd.jsonl"
    odd.mkdir() if kind == "folder" else os.mkfifo(odd)
    sessions = Sessions.for_workspace(tmp_path / "ws", clock=FakeClock())
    with pytest.raises(NotATranscript):
        sessions.import_file(odd)  # a pipe with no writer: must not wait for one
    assert not sessions.folder.exists() or list(sessions.folder.iterdir()) == []


# --- 5. a "session" that is a folder or a named pipe -------------------------------------------


def odd_sessions(folder: Path) -> dict[str, Path]:
    """A folder, a named pipe and a dangling link, each called ``<id>.jsonl``."""
    folder.mkdir(parents=True, exist_ok=True)
    odd = {"adir": folder / "adir.jsonl", "dangling": folder / "dangling.jsonl"}
    odd["adir"].mkdir()
    odd["dangling"].symlink_to(folder / "gone-away.jsonl")
    if HAS_FIFO:
        odd["apipe"] = folder / "apipe.jsonl"
        os.mkfifo(odd["apipe"])
    return odd


@pytest.mark.parametrize("name", ["adir", "apipe"])
def test_resume_of_a_folder_or_a_pipe_is_one_line_and_exit_2(
    cli: Cli, workspace: Path, calls: Calls, name: str
) -> None:
    odd = odd_sessions(folder_of(workspace))
    if name not in odd:
        pytest.skip("no named pipes here")
    run = cli("--resume", name, "-p", "hi")
    assert run.code == Exit.USAGE
    kind = "a folder" if name == "adir" else "a named pipe"
    assert f"{odd[name]} is {kind}, not a transcript" in one_line(run.err)
    assert len(calls) == 0


def test_continue_skips_folders_pipes_and_dangling_links_for_the_newest_real_session(
    cli: Cli, workspace: Path
) -> None:
    made = first_session(cli, workspace)
    odd_sessions(made.parent)  # newer than the real session
    (made.parent / "sessions.json").unlink(missing_ok=True)  # no pointer: the newest file
    run = cli("--continue", "-p", "search TODO", "--output-format", "json")
    assert run.code == 0, run.err
    assert run.json()["session_id"] == made.stem


def test_continue_with_only_a_folder_and_a_pipe_says_there_is_nothing_to_continue(
    cli: Cli, workspace: Path
) -> None:
    odd_sessions(folder_of(workspace))
    run = cli("--continue", "-p", "hi")
    assert run.code == Exit.USAGE
    assert "no earlier session in this folder" in one_line(run.err)


def test_continue_whose_pointer_leads_to_a_pipe_is_one_line_and_exit_2(
    cli: Cli, workspace: Path
) -> None:
    if not HAS_FIFO:
        pytest.skip("no named pipes here")
    made = first_session(cli, workspace)
    made.unlink()
    os.mkfifo(made)  # the session the index points at is now a pipe
    run = cli("--continue", "-p", "hi")
    assert run.code == Exit.USAGE
    assert "is a named pipe, not a transcript" in one_line(run.err)


def test_the_picker_lists_only_real_sessions_and_describe_never_opens_a_pipe(
    cli: Cli, workspace: Path
) -> None:
    made = first_session(cli, workspace)
    odd = odd_sessions(made.parent)
    run = cli("--resume", stdin="1\n/exit\n")
    assert run.code == 0, run.err
    listed = [line for line in run.out.splitlines() if re.match(r"\s*\d+\. ", line)]
    assert len(listed) == 1 and made.stem[:8] in listed[0]
    sessions = sessions_for(Options(workspace=workspace), clock=FakeClock())
    for name in odd:
        line = describe(sessions, name)
        assert name[:8] in line and ("not a transcript" in line or "unreadable" in line)


# --- any argument list ----------------------------------------------------------------------

# Junk without whitespace cannot reach the demo model's bash, sleep or write routes, and
# without "flaky" it never waits out a retry; not starting with "/" or "~", it names no
# folder outside the test's (``--sessions /x`` would write there): quick and harmless.
JUNK = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Zs", "Cc", "Zl", "Zp"]),
    max_size=12,
).filter(
    lambda s: "flaky" not in s.lower() and ".." not in s and not s.startswith(("/", "~", "\\"))
)
PLACES = ["", ".", "afile", "afile/x", "fresh", "~nosuchuser/s", "..", "adir", "apipe"]
SESSIONS = ["adir", "apipe", "dangling", "adir.jsonl", "x.jsonl", "..", "", "-"]


def flag(name: str, *values: str) -> st.SearchStrategy[list[str]]:
    """``name`` with one of ``values`` (or junk) after it."""
    return st.tuples(st.just(name), st.one_of(st.sampled_from(values), JUNK)).map(list)


# Real flags with values that mostly make sense, some that do not, and junk anywhere. No mode
# that lets a call write (bypassPermissions, acceptEdits): a run asks, and nobody says yes.
PIECE = st.one_of(
    flag("-p", "list files", "search TODO", "help", "-", "", "read README.md"),
    flag("--permission-mode", "default", "plan", "nope"),
    flag("--max-turns", "1", "3", "0", "-1", "99999999999999999999", "x"),
    flag("--output-format", "text", "json", "stream-json", "yaml"),
    flag("--sessions", *PLACES),
    flag("--resume", *SESSIONS),
    flag("--model", "claude-sonnet-4-6", ""),
    st.sampled_from(["-c", "--continue", "-r", "--resume", "--verbose", "--", "-h"]).map(
        lambda f: [f]
    ),
    JUNK.map(lambda j: [j]),
)
STDIN = st.one_of(
    st.none(), st.sampled_from(["", "\n", "1\n", "²\n", "list files\n/exit\n", "x\n2\n"])
)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(pieces=st.lists(PIECE, max_size=4), stdin=STDIN)
def test_any_argument_list_ends_in_a_documented_exit_code_and_never_raises(
    cli: Cli, workspace: Path, pieces: list[list[str]], stdin: str | None
) -> None:
    argv = [arg for piece in pieces for arg in piece]
    (workspace / "afile").write_text("x", encoding="utf-8")
    odd = folder_of(workspace)
    if not odd.exists():
        odd_sessions(odd)
    run = cli(*argv, stdin=stdin)
    event(f"exit {run.code}")
    assert run.code in CODES, (argv, run.code)
    assert "Traceback" not in run.err
    if run.code == Exit.USAGE and "usage:" not in run.err:
        one_line(run.err)
