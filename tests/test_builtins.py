"""The builtin workspace tools: what they return, what they refuse, and what they keep out."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from harness.tools.base import Tool, ToolContext, ToolError
from harness.tools.builtins import (
    GLOB_MAX_RESULTS,
    READ_MAX_FILE_BYTES,
    builtin_tools,
    edit_file,
    glob,
    grep,
    read_file,
    write_file,
)
from harness.tools.shell import BASH_MAX_OUTPUT_CHARS, bash
from harness.tools.workspace import Workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    directory = tmp_path / "ws"
    directory.mkdir()
    return directory.resolve()


@pytest.fixture
def context(root: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("TOP SECRET\n")
    return directory


def run(t: Tool[Any], context: ToolContext, **raw: Any) -> str:
    result = t(raw, context)
    assert isinstance(result, str)
    return result


def numbered(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


# --- the set ------------------------------------------------------------------------------


def test_builtin_tools_come_in_a_fixed_order() -> None:
    names = [t.name for t in builtin_tools()]
    assert names == ["read_file", "write_file", "edit_file", "glob", "grep", "bash"]


def test_only_the_searching_tools_are_read_only() -> None:
    assert {t.name for t in builtin_tools() if t.read_only} == {"read_file", "glob", "grep"}


def test_every_input_field_has_a_description_for_the_model() -> None:
    for t in builtin_tools():
        properties = t.definition()["input_schema"]["properties"]
        for field_name, schema in properties.items():
            assert schema.get("description"), f"{t.name}.{field_name} has no description"


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("read_file", {"path": "../outside/secret.txt"}),
        ("write_file", {"path": "../outside/new.txt", "content": "x"}),
        ("edit_file", {"path": "/etc/hostname", "old_string": "a", "new_string": "b"}),
        ("glob", {"pattern": "*", "path": ".."}),
        ("grep", {"pattern": "SECRET", "path": "../outside"}),
        ("bash", {"command": "true", "cwd": ".."}),
    ],
)
def test_every_tool_refuses_a_path_outside_with_a_clear_error(
    name: str, raw: dict[str, Any], context: ToolContext, outside: Path
) -> None:
    t = {t.name: t for t in builtin_tools()}[name]
    with pytest.raises(ToolError, match="outside the workspace"):
        t(raw, context)
    assert not (outside / "new.txt").exists()


# --- read_file ----------------------------------------------------------------------------


def test_read_file_numbers_lines_like_cat_n(root: Path, context: ToolContext) -> None:
    (root / "a.txt").write_text("alpha\nbeta\n")
    assert run(read_file, context, path="a.txt") == "     1\talpha\n     2\tbeta"


def test_read_file_reads_the_window_given_by_offset_and_limit(
    root: Path, context: ToolContext
) -> None:
    (root / "a.txt").write_text(numbered(10))
    output = run(read_file, context, path="a.txt", offset=4, limit=2)
    assert output.splitlines()[:2] == ["     4\tline 4", "     5\tline 5"]


def test_read_file_says_how_to_read_on_when_lines_remain(root: Path, context: ToolContext) -> None:
    (root / "a.txt").write_text(numbered(10))
    output = run(read_file, context, path="a.txt", offset=4, limit=2)
    assert "offset=6" in output.splitlines()[-1]


def test_read_file_adds_no_note_when_the_window_reaches_the_end(
    root: Path, context: ToolContext
) -> None:
    (root / "a.txt").write_text(numbered(3))
    assert run(read_file, context, path="a.txt", offset=2).splitlines() == [
        "     2\tline 2",
        "     3\tline 3",
    ]


def test_read_file_reads_2000_lines_by_default(root: Path, context: ToolContext) -> None:
    (root / "long.txt").write_text(numbered(2500))
    lines = run(read_file, context, path="long.txt").splitlines()
    assert lines[1999] == "  2000\tline 2000"
    assert "offset=2001" in lines[-1]


def test_read_file_cuts_lines_over_2000_characters(root: Path, context: ToolContext) -> None:
    (root / "wide.txt").write_text("x" * 5000 + "\n")
    line = run(read_file, context, path="wide.txt")
    assert line.startswith("     1\t" + "x" * 2000)
    assert "x" * 2001 not in line
    assert "3000 more" in line


def test_read_file_says_when_the_offset_is_past_the_end(root: Path, context: ToolContext) -> None:
    (root / "a.txt").write_text(numbered(3))
    assert "only 3 lines" in run(read_file, context, path="a.txt", offset=10)


def test_read_file_notes_an_empty_file(root: Path, context: ToolContext) -> None:
    (root / "empty.txt").write_text("")
    assert "empty" in run(read_file, context, path="empty.txt")


def test_read_file_refuses_a_binary_file(root: Path, context: ToolContext) -> None:
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(ToolError, match=r"image\.png is a binary file"):
        read_file({"path": "image.png"}, context)


def test_read_file_refuses_a_large_file_without_a_window(root: Path, context: ToolContext) -> None:
    (root / "big.log").write_text(("y" * 99 + "\n") * (READ_MAX_FILE_BYTES // 100 + 1))
    with pytest.raises(ToolError, match="offset and limit"):
        read_file({"path": "big.log"}, context)


def test_read_file_reads_a_large_file_with_a_window(root: Path, context: ToolContext) -> None:
    (root / "big.log").write_text(numbered(40_000))
    assert run(read_file, context, path="big.log", offset=30_000, limit=1).startswith(
        " 30000\tline 30000"
    )


def test_read_file_names_a_missing_file_by_its_relative_path(context: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"file not found: docs/missing\.md"):
        read_file({"path": "docs/missing.md"}, context)


def test_read_file_refuses_a_directory(root: Path, context: ToolContext) -> None:
    (root / "src").mkdir()
    with pytest.raises(ToolError, match="src is a directory"):
        read_file({"path": "src"}, context)


def test_read_file_refuses_a_symlink_pointing_outside(
    root: Path, context: ToolContext, outside: Path
) -> None:
    (root / "innocent.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        read_file({"path": "innocent.txt"}, context)


def test_read_file_rejects_a_zero_offset_before_running(context: ToolContext) -> None:
    with pytest.raises(ValidationError):
        read_file({"path": "a.txt", "offset": 0}, context)


def test_read_file_errors_never_show_the_absolute_path(root: Path, context: ToolContext) -> None:
    with pytest.raises(ToolError) as error:
        read_file({"path": str(root / "missing.txt")}, context)
    assert str(root) not in str(error.value)


# --- write_file ---------------------------------------------------------------------------


def test_write_file_creates_missing_parent_directories(root: Path, context: ToolContext) -> None:
    output = run(write_file, context, path="src/pkg/mod.py", content="a = 1\nb = 2\n")
    assert (root / "src/pkg/mod.py").read_text() == "a = 1\nb = 2\n"
    assert output == "Wrote 2 lines to src/pkg/mod.py (new file)"


def test_write_file_says_when_it_overwrote_a_file(root: Path, context: ToolContext) -> None:
    (root / "a.txt").write_text("old\n")
    output = run(write_file, context, path="a.txt", content="new")
    assert (root / "a.txt").read_text() == "new"
    assert output == "Wrote 1 line to a.txt (overwrote it)"


def test_write_file_refuses_a_directory(root: Path, context: ToolContext) -> None:
    (root / "src").mkdir()
    with pytest.raises(ToolError, match="src is a directory"):
        write_file({"path": "src", "content": "x"}, context)


def test_write_file_does_not_write_through_a_symlinked_directory(
    root: Path, context: ToolContext, outside: Path
) -> None:
    (root / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolError, match="outside the workspace"):
        write_file({"path": "link/planted.txt", "content": "x"}, context)
    assert not (outside / "planted.txt").exists()


# --- edit_file ----------------------------------------------------------------------------


def test_edit_file_replaces_a_unique_match(root: Path, context: ToolContext) -> None:
    (root / "a.py").write_text("x = 1\ny = 2\n")
    output = run(edit_file, context, path="a.py", old_string="y = 2", new_string="y = 3")
    assert (root / "a.py").read_text() == "x = 1\ny = 3\n"
    assert output == "Edited a.py: replaced 1 occurrence"


def test_edit_file_refuses_text_that_is_not_there(root: Path, context: ToolContext) -> None:
    (root / "a.py").write_text("x = 1\n")
    with pytest.raises(ToolError, match=r"old_string not found in a\.py"):
        edit_file({"path": "a.py", "old_string": "x=1", "new_string": "x = 2"}, context)


def test_edit_file_refuses_several_matches_without_replace_all(
    root: Path, context: ToolContext
) -> None:
    (root / "a.py").write_text("n = 0\nn = 0\nn = 0\n")
    with pytest.raises(ToolError, match=r"occurs 3 times.*replace_all"):
        edit_file({"path": "a.py", "old_string": "n = 0", "new_string": "n = 1"}, context)
    assert (root / "a.py").read_text() == "n = 0\nn = 0\nn = 0\n"


def test_edit_file_replaces_every_match_with_replace_all(root: Path, context: ToolContext) -> None:
    (root / "a.py").write_text("n = 0\nn = 0\n")
    raw = {"path": "a.py", "old_string": "n = 0", "new_string": "n = 1", "replace_all": True}
    assert run(edit_file, context, **raw) == "Edited a.py: replaced 2 occurrences"
    assert (root / "a.py").read_text() == "n = 1\nn = 1\n"


def test_edit_file_refuses_identical_strings(root: Path, context: ToolContext) -> None:
    (root / "a.py").write_text("x = 1\n")
    with pytest.raises(ToolError, match="the same"):
        edit_file({"path": "a.py", "old_string": "x", "new_string": "x"}, context)


def test_edit_file_keeps_windows_line_endings(root: Path, context: ToolContext) -> None:
    (root / "a.txt").write_bytes(b"one\r\ntwo\r\n")
    run(edit_file, context, path="a.txt", old_string="one\ntwo", new_string="1\n2")
    assert (root / "a.txt").read_bytes() == b"1\r\n2\r\n"


def test_edit_file_names_a_missing_file(context: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"file not found: nope\.py"):
        edit_file({"path": "nope.py", "old_string": "a", "new_string": "b"}, context)


# --- glob ---------------------------------------------------------------------------------


def touch(path: Path, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    os.utime(path, (mtime, mtime))


def test_glob_lists_newest_first_then_by_name(root: Path, context: ToolContext) -> None:
    touch(root / "old.py", 1_000)
    touch(root / "pkg/b.py", 2_000)
    touch(root / "pkg/a.py", 2_000)
    touch(root / "notes.md", 3_000)
    assert run(glob, context, pattern="**/*.py").splitlines() == ["pkg/a.py", "pkg/b.py", "old.py"]


def test_glob_searches_under_path_and_shows_root_relative_paths(
    root: Path, context: ToolContext
) -> None:
    touch(root / "src/app.py", 1_000)
    touch(root / "tests/test_app.py", 1_000)
    assert run(glob, context, pattern="*.py", path="src") == "src/app.py"


def test_glob_lists_files_not_directories(root: Path, context: ToolContext) -> None:
    touch(root / "pkg.d/file", 1_000)
    assert run(glob, context, pattern="*") == "No files found"


def test_glob_stops_at_100_and_says_so(root: Path, context: ToolContext) -> None:
    for i in range(GLOB_MAX_RESULTS + 5):
        touch(root / f"f{i:03d}.txt", 1_000)
    lines = run(glob, context, pattern="*.txt").splitlines()
    assert len(lines) == GLOB_MAX_RESULTS + 1
    assert lines[0] == "f000.txt"
    assert "100 of 105" in lines[-1]


def test_glob_does_not_follow_a_symlink_out(
    root: Path, context: ToolContext, outside: Path
) -> None:
    touch(root / "mine.txt", 1_000)
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "secret-alias.txt").symlink_to(outside / "secret.txt")
    for pattern in ("**/*.txt", "*/*.txt", "link/*", "*"):
        assert "secret" not in run(glob, context, pattern=pattern)


def test_glob_refuses_a_pattern_that_climbs_out(context: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"'\.\.'"):
        glob({"pattern": "../*"}, context)


# --- grep ---------------------------------------------------------------------------------


@pytest.fixture
def code(root: Path) -> Path:
    (root / "src").mkdir()
    (root / "src/b.py").write_text("def beta():\n    return 'TODO'\n")
    (root / "src/a.py").write_text("# todo: tests\ndef alpha():\n    pass  # TODO\n")
    (root / "README.md").write_text("TODO: write me\n")
    return root


def test_grep_lists_matching_files_sorted_by_default(code: Path, context: ToolContext) -> None:
    assert run(grep, context, pattern="TODO").splitlines() == ["README.md", "src/a.py", "src/b.py"]


def test_grep_content_mode_shows_path_line_number_and_line(
    code: Path, context: ToolContext
) -> None:
    output = run(grep, context, pattern=r"def \w+", output_mode="content")
    assert output.splitlines() == ["src/a.py:2:def alpha():", "src/b.py:1:def beta():"]


def test_grep_count_mode_counts_matching_lines(code: Path, context: ToolContext) -> None:
    output = run(grep, context, pattern="todo", output_mode="count", case_insensitive=True)
    assert output.splitlines() == ["README.md:1", "src/a.py:2", "src/b.py:1"]


def test_grep_filters_files_with_a_glob(code: Path, context: ToolContext) -> None:
    assert run(grep, context, pattern="TODO", glob="**/*.py").splitlines() == [
        "src/a.py",
        "src/b.py",
    ]


def test_grep_searches_only_under_path(code: Path, context: ToolContext) -> None:
    assert run(grep, context, pattern="TODO", path="src/b.py") == "src/b.py"


def test_grep_stops_at_head_limit_and_says_so(code: Path, context: ToolContext) -> None:
    lines = run(grep, context, pattern="TODO", head_limit=2).splitlines()
    assert lines[:2] == ["README.md", "src/a.py"]
    assert "2 of 3" in lines[2]


def test_grep_skips_binary_files(code: Path, context: ToolContext) -> None:
    (code / "blob.bin").write_bytes(b"\x00TODO\x00")
    assert "blob.bin" not in run(grep, context, pattern="TODO")


def test_grep_names_an_invalid_regex(context: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"invalid regular expression '\(unclosed'"):
        grep({"pattern": "(unclosed"}, context)


def test_grep_says_when_nothing_matches(code: Path, context: ToolContext) -> None:
    assert run(grep, context, pattern="no such text") == "No matches found"


def test_grep_does_not_search_through_a_symlink_out(
    code: Path, context: ToolContext, outside: Path
) -> None:
    (code / "link").symlink_to(outside, target_is_directory=True)
    (code / "alias.txt").symlink_to(outside / "secret.txt")
    assert run(grep, context, pattern="SECRET") == "No matches found"


# --- bash ---------------------------------------------------------------------------------


def test_bash_returns_stdout_then_stderr(context: ToolContext) -> None:
    assert run(bash, context, command="echo out; echo err >&2") == "out\nerr"


def test_bash_reports_a_non_zero_exit_code(context: ToolContext) -> None:
    assert run(bash, context, command="echo failing; exit 3") == "failing\nexit code: 3"


def test_bash_says_when_there_is_no_output(context: ToolContext) -> None:
    assert run(bash, context, command="true") == "(no output)"


def test_bash_runs_in_the_workspace_root(root: Path, context: ToolContext) -> None:
    assert run(bash, context, command="pwd -P") == str(root)


def test_bash_runs_in_cwd_relative_to_the_root(root: Path, context: ToolContext) -> None:
    (root / "sub").mkdir()
    assert run(bash, context, command="pwd -P", cwd="sub") == str(root / "sub")


def test_bash_home_is_the_workspace(root: Path, context: ToolContext) -> None:
    assert run(bash, context, command="echo $HOME") == str(root)


def test_bash_closes_stdin(context: ToolContext) -> None:
    assert run(bash, context, command="cat; echo done") == "done"


def test_bash_kills_a_command_that_runs_past_its_timeout(context: ToolContext) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match="timed out after 1 s") as error:
        bash({"command": "echo started; sleep 5", "timeout": 1}, context)
    assert time.monotonic() - started < 4
    assert "started" in str(error.value)


def test_bash_timeout_kills_the_whole_process_group(root: Path, context: ToolContext) -> None:
    with pytest.raises(ToolError, match="timed out"):
        bash({"command": "(sleep 1; touch survivor) & sleep 5", "timeout": 0.3}, context)
    time.sleep(1.5)
    assert not (root / "survivor").exists()


def test_bash_refuses_a_timeout_over_600_seconds(context: ToolContext) -> None:
    with pytest.raises(ValidationError):
        bash({"command": "true", "timeout": 601}, context)


def test_bash_caps_output_keeping_head_and_tail(context: ToolContext) -> None:
    output = run(bash, context, command="echo START; head -c 100000 /dev/zero | tr '\\0' x; echo")
    assert len(output) <= BASH_MAX_OUTPUT_CHARS
    assert output.startswith("START\n")
    assert output.endswith("x")
    assert "characters truncated" in output


def test_no_secret_reaches_the_command_environment(
    context: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_test_secret_token")
    output = run(bash, context, command="env")
    for leaked in ("ANTHROPIC_API_KEY", "sk-ant-test-secret", "GITHUB_TOKEN", "ghp_test_secret"):
        assert leaked not in output
    assert "PATH=" in output


def test_bash_is_not_confined_by_path_checks(root: Path, context: ToolContext) -> None:
    # Said plainly in the tool's docs: confinement for bash is permissions and an OS sandbox.
    assert run(bash, context, command="cd .. && pwd -P") == str(root.parent)


def test_glob_and_grep_skip_dot_directories_unless_asked(root: Path, context: ToolContext) -> None:
    # Stored tool outputs and VCS internals are not project code (ripgrep skips them too).
    (root / ".tool-results").mkdir()
    (root / ".tool-results" / "toolu_1.txt").write_text("needle\n")
    (root / "code.txt").write_text("needle\n")
    assert run(glob, context, pattern="**/*.txt") == "code.txt"
    assert run(grep, context, pattern="needle") == "code.txt"
    assert run(glob, context, pattern=".tool-results/*.txt") == ".tool-results/toolu_1.txt"


def test_an_argument_the_tool_does_not_have_is_refused(root: Path, context: ToolContext) -> None:
    with pytest.raises(ValidationError, match="paht"):
        read_file({"path": "a.txt", "paht": "a.txt"}, context)
