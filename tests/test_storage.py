"""Oversized tool results go to a file in the workspace; the model gets a preview and a path."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.tools.base import ToolContext
from harness.tools.builtins import read_file
from harness.tools.storage import ResultStorage, format_size, preview_of
from harness.tools.workspace import Workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


@pytest.fixture
def storage(workspace: Workspace) -> ResultStorage:
    return ResultStorage(workspace)


def big_output(lines: int = 3_000) -> str:
    return "".join(f"row {i:05d} " + "." * 40 + "\n" for i in range(1, lines + 1))


def test_small_output_comes_back_unchanged(storage: ResultStorage, workspace: Workspace) -> None:
    assert storage.spill("toolu_0001", "just a little") == "just a little"
    assert not (workspace.root / ".tool-results").exists()


def test_output_at_the_threshold_is_not_spilled(storage: ResultStorage) -> None:
    output = "x" * 50_000
    assert storage.spill("toolu_0001", output) == output


def test_large_output_is_written_in_full_inside_the_workspace(
    storage: ResultStorage, workspace: Workspace
) -> None:
    output = big_output()
    storage.spill("toolu_0001", output)
    assert (workspace.root / ".tool-results" / "toolu_0001.txt").read_text() == output


def test_spill_message_has_the_relative_path_the_size_and_how_to_read_it(
    storage: ResultStorage, workspace: Workspace
) -> None:
    message = storage.spill("toolu_0001", big_output())
    assert message.startswith("<persisted-output>\nOutput too large (149.4 KB). ")
    assert "Full output saved to: .tool-results/toolu_0001.txt\n" in message
    assert "Use read_file with offset and limit to read it." in message
    assert message.endswith("\n</persisted-output>")
    assert str(workspace.root) not in message


def test_spill_message_starts_the_preview_with_the_output(storage: ResultStorage) -> None:
    output = big_output()
    message = storage.spill("toolu_0001", output)
    preview = message.split("Preview (first 2.0 KB):\n", 1)[1]
    assert preview.startswith("row 00001 ")
    assert output.startswith(preview.split("\n...", 1)[0])


def test_preview_is_bounded(workspace: Workspace) -> None:
    storage = ResultStorage(workspace, threshold=100, preview=300)
    message = storage.spill("toolu_0001", "z" * 10_000)
    assert "z" * 300 in message
    assert "z" * 301 not in message
    assert len(message) < 600


def test_preview_is_cut_at_a_line_end_near_its_limit() -> None:
    output = "a" * 90 + "\n" + "b" * 100
    assert preview_of(output, 100) == "a" * 90


def test_preview_is_not_cut_at_a_line_end_far_from_its_limit() -> None:
    output = "a" * 10 + "\n" + "b" * 200
    assert preview_of(output, 100) == "a" * 10 + "\n" + "b" * 89


def test_custom_directory_and_threshold(workspace: Workspace) -> None:
    storage = ResultStorage(workspace, threshold=10, directory="cache/results")
    message = storage.spill("toolu_0002", "0123456789A")
    assert "Full output saved to: cache/results/toolu_0002.txt" in message
    assert storage.read("toolu_0002") == "0123456789A"


@pytest.mark.parametrize(
    "hostile", ["../escape", "a/b", "/etc/passwd", "..", "", "toolu 1", "toolu_1\n", "ü"]
)
def test_hostile_tool_use_ids_are_refused(
    hostile: str, storage: ResultStorage, workspace: Workspace
) -> None:
    with pytest.raises(ValueError, match="not a safe file name"):
        storage.spill(hostile, "x" * 60_000)
    assert not any(workspace.root.parent.glob("escape*"))


def test_directory_outside_the_workspace_is_refused(workspace: Workspace) -> None:
    storage = ResultStorage(workspace, threshold=10, directory="../elsewhere")
    with pytest.raises(PermissionError):
        storage.spill("toolu_0001", "x" * 100)


def test_spill_leaves_no_temporary_files(storage: ResultStorage, workspace: Workspace) -> None:
    storage.spill("toolu_0001", big_output())
    storage.spill("toolu_0001", big_output(2_000))
    names = [p.name for p in (workspace.root / ".tool-results").iterdir()]
    assert names == ["toolu_0001.txt"]


def test_read_gives_back_the_full_output_byte_for_byte(storage: ResultStorage) -> None:
    output = big_output().replace("\n", "\r\n")
    storage.spill("toolu_0001", output)
    assert storage.read("toolu_0001") == output


def test_stored_output_reads_back_through_read_file_with_offset_and_limit(
    storage: ResultStorage, workspace: Workspace
) -> None:
    storage.spill("toolu_0001", big_output())
    page = read_file(
        {"path": ".tool-results/toolu_0001.txt", "offset": 1500, "limit": 2},
        ToolContext(workspace=workspace),
    )
    assert isinstance(page, str)
    assert page.splitlines()[:2] == [
        "  1500\trow 01500 " + "." * 40,
        "  1501\trow 01501 " + "." * 40,
    ]


def test_format_size_reads_like_a_file_size() -> None:
    assert [format_size(n) for n in (812, 2_000, 126_464, 1_572_864)] == [
        "812 bytes",
        "2.0 KB",
        "123.5 KB",
        "1.5 MB",
    ]
