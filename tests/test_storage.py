"""Oversized tool results go to a folder of the harness's own; the model gets a preview and a
path it reads back by. Nothing a model does to that folder redirects a write, and nothing a
tool call contains makes storing raise."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.tools.base import ToolContext
from harness.tools.builtins import grep, read_file
from harness.tools.storage import (
    MAX_RESULT_CHARS,
    STORED_PREFIX,
    ResultStorage,
    StoredResultError,
    format_size,
    preview_of,
    stored_name,
)
from harness.tools.workspace import Workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    return Workspace(root)


@pytest.fixture
def storage(tmp_path: Path) -> ResultStorage:
    return ResultStorage(tmp_path / "results")


def big_output(lines: int = 3_000) -> str:
    return "".join(f"row {i:05d} " + "." * 40 + "\n" for i in range(1, lines + 1))


def test_small_output_comes_back_unchanged(storage: ResultStorage, tmp_path: Path) -> None:
    assert storage.spill("toolu_0001", "just a little") == "just a little"
    assert not (tmp_path / "results").exists()


def test_output_at_the_threshold_is_not_spilled(storage: ResultStorage) -> None:
    output = "x" * 50_000
    assert storage.spill("toolu_0001", output) == output


def test_large_output_is_written_in_full_in_the_storage_folder(
    storage: ResultStorage, tmp_path: Path
) -> None:
    output = big_output()
    storage.spill("toolu_0001", output)
    assert (tmp_path / "results" / "toolu_0001.txt").read_text() == output


def test_without_a_folder_a_temporary_one_is_made_on_the_first_spill_only() -> None:
    storage = ResultStorage()
    storage.spill("toolu_0001", "small")
    assert storage._directory is None  # nothing made for a result that was not stored
    storage.spill("toolu_0001", big_output())
    assert storage.directory.name.startswith("harness-tool-results-")
    assert storage.read("toolu_0001") == big_output()


def test_a_temporary_folder_goes_with_its_storage_and_a_named_one_stays(tmp_path: Path) -> None:
    made = ResultStorage()
    made.spill("toolu_0001", big_output())
    folder = made.directory
    named = ResultStorage(tmp_path / "kept")
    named.spill("toolu_0001", big_output())

    made.close()
    named.close()

    assert not folder.exists()
    assert named.read("toolu_0001") == big_output()
    dropped = ResultStorage()
    dropped.spill("toolu_0001", big_output())
    folder = dropped.directory
    del dropped
    gc.collect()
    assert not folder.exists()


def test_spill_message_has_the_path_to_read_by_the_size_and_how_to_read_it(
    storage: ResultStorage, tmp_path: Path
) -> None:
    message = storage.spill("toolu_0001", big_output())
    assert message.startswith("<persisted-output>\nOutput too large (149.4 KB). ")
    assert "Full output saved to: @tool-results/toolu_0001.txt\n" in message
    assert "Use read_file with offset and limit to read it, or grep to search it." in message
    assert message.endswith("\n</persisted-output>")
    assert str(tmp_path) not in message


def test_spill_message_starts_the_preview_with_the_output(storage: ResultStorage) -> None:
    output = big_output()
    message = storage.spill("toolu_0001", output)
    preview = message.split("Preview (first 2.0 KB):\n", 1)[1]
    assert preview.startswith("row 00001 ")
    assert output.startswith(preview.split("\n...", 1)[0])


def test_preview_is_bounded(tmp_path: Path) -> None:
    storage = ResultStorage(tmp_path, threshold=100, preview=300)
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


@given(st.text(max_size=300))
def test_any_tool_use_id_becomes_a_plain_file_name_inside_the_folder(tool_use_id: str) -> None:
    name = stored_name(tool_use_id)
    assert "/" not in name and name not in (".", "..") and name.endswith(".txt")
    assert len(name.encode()) <= 255


@settings(max_examples=40, deadline=None)
@given(tool_use_id=st.text(max_size=200))
def test_spilling_under_any_tool_use_id_stores_the_output_and_writes_nowhere_else(
    tmp_path_factory: pytest.TempPathFactory, tool_use_id: str
) -> None:
    base = tmp_path_factory.mktemp("spill")
    storage = ResultStorage(base / "results", threshold=10)
    message = storage.spill(tool_use_id, "0123456789AB")
    assert f"{STORED_PREFIX}{stored_name(tool_use_id)}" in message
    assert storage.read(tool_use_id) == "0123456789AB"
    assert sorted(p.name for p in base.iterdir()) == ["results"]


def test_a_folder_replaced_by_a_symlink_is_never_written_through(
    storage: ResultStorage, tmp_path: Path
) -> None:
    storage.spill("toolu_0001", big_output())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder = storage.directory
    folder.rename(tmp_path / "moved")
    folder.symlink_to(elsewhere, target_is_directory=True)  # what `ln -s /tmp ...` would do

    message = storage.spill("toolu_0002", big_output())

    assert list(elsewhere.iterdir()) == []
    assert message.startswith("[The full output could not be stored (")
    assert len(message) <= MAX_RESULT_CHARS
    with pytest.raises(StoredResultError, match="replaced"):
        storage.path_of("@tool-results/toolu_0001.txt")


def test_a_stored_file_replaced_by_a_link_is_not_read(
    storage: ResultStorage, tmp_path: Path
) -> None:
    storage.spill("toolu_0001", big_output())
    secret = tmp_path / "secret.txt"
    secret.write_text("password=hunter2\n")
    stored = storage.directory / "toolu_0001.txt"
    stored.unlink()
    os.link(secret, stored)  # a hard link to a file outside
    with pytest.raises(StoredResultError, match="no longer a result the harness stored"):
        storage.path_of("@tool-results/toolu_0001.txt")
    stored.unlink()
    stored.symlink_to(secret)
    with pytest.raises(StoredResultError, match="no longer a result the harness stored"):
        storage.path_of("@tool-results/toolu_0001.txt")


@pytest.mark.parametrize(
    "name", ["@tool-results/../secret.txt", "@tool-results/a/b.txt", "@tool-results/", "x"]
)
def test_only_names_of_stored_results_are_read_back(storage: ResultStorage, name: str) -> None:
    storage.spill("toolu_0001", big_output())
    with pytest.raises(StoredResultError, match="no stored result"):
        storage.path_of(name)


def test_spill_leaves_no_temporary_files(storage: ResultStorage) -> None:
    storage.spill("toolu_0001", big_output())
    storage.spill("toolu_0001", big_output(2_000))
    assert [p.name for p in storage.directory.iterdir()] == ["toolu_0001.txt"]


def test_read_gives_back_the_full_output_byte_for_byte(storage: ResultStorage) -> None:
    output = big_output().replace("\n", "\r\n")
    storage.spill("toolu_0001", output)
    assert storage.read("toolu_0001") == output


def test_stored_output_reads_back_through_read_file_with_offset_and_limit(
    storage: ResultStorage, workspace: Workspace
) -> None:
    storage.spill("toolu_0001", big_output())
    page = read_file(
        {"path": "@tool-results/toolu_0001.txt", "offset": 1500, "limit": 2},
        ToolContext(workspace=workspace, storage=storage),
    )
    assert isinstance(page, str)
    assert page.splitlines()[:2] == [
        "  1500\trow 01500 " + "." * 40,
        "  1501\trow 01501 " + "." * 40,
    ]


def test_stored_output_can_be_searched_with_grep(
    storage: ResultStorage, workspace: Workspace
) -> None:
    storage.spill("toolu_0001", big_output())
    counted = grep(
        {
            "pattern": "row 0[0-9]{3}5 ",
            "path": "@tool-results/toolu_0001.txt",
            "output_mode": "count",
        },
        ToolContext(workspace=workspace, storage=storage),
    )
    assert counted == "@tool-results/toolu_0001.txt:300"


def test_format_size_reads_like_a_file_size() -> None:
    assert [format_size(n) for n in (812, 2_000, 126_464, 1_572_864)] == [
        "812 bytes",
        "2.0 KB",
        "123.5 KB",
        "1.5 MB",
    ]
