"""The workspace refuses every way out (invariant 5) and allows every way that stays in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.tools.workspace import PathEscape, Workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace, with a secret in it."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("the secret\n")
    return directory


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    return Workspace(root)


# --- refused ---------------------------------------------------------------------------


def test_dot_dot_is_refused(workspace: Workspace) -> None:
    with pytest.raises(PathEscape):
        workspace.resolve("../x")


def test_dot_dot_after_a_directory_is_refused(workspace: Workspace) -> None:
    with pytest.raises(PathEscape):
        workspace.resolve("a/../../x")


def test_absolute_path_elsewhere_is_refused(workspace: Workspace) -> None:
    with pytest.raises(PathEscape):
        workspace.resolve("/etc/passwd")


def test_absolute_path_of_the_parent_is_refused(workspace: Workspace) -> None:
    with pytest.raises(PathEscape):
        workspace.resolve(workspace.root.parent)


def test_sibling_with_the_root_as_name_prefix_is_refused(workspace: Workspace) -> None:
    sibling = workspace.root.parent / (workspace.root.name + "-other")
    sibling.mkdir()
    with pytest.raises(PathEscape):
        workspace.resolve(sibling / "x")


def test_symlink_to_a_file_outside_is_refused(workspace: Workspace, outside: Path) -> None:
    (workspace.root / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(PathEscape):
        workspace.resolve("link.txt")


def test_symlinked_parent_directory_outside_is_refused(workspace: Workspace, outside: Path) -> None:
    (workspace.root / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathEscape):
        workspace.resolve("link/secret.txt")


def test_new_file_under_a_symlinked_directory_outside_is_refused(
    workspace: Workspace, outside: Path
) -> None:
    (workspace.root / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathEscape):
        workspace.resolve("link/not-yet-written.txt")


def test_symlink_chain_ending_outside_is_refused(workspace: Workspace, outside: Path) -> None:
    (workspace.root / "third").symlink_to(outside / "secret.txt")
    (workspace.root / "second").symlink_to("third")
    (workspace.root / "first").symlink_to("second")
    with pytest.raises(PathEscape):
        workspace.resolve("first")


def test_dangling_symlink_pointing_outside_is_refused(workspace: Workspace, outside: Path) -> None:
    (workspace.root / "dangling").symlink_to(outside / "does-not-exist-yet")
    with pytest.raises(PathEscape):
        workspace.resolve("dangling")


def test_home_directory_path_is_refused(workspace: Workspace) -> None:
    with pytest.raises(PathEscape):
        workspace.resolve("~/x")


def test_unknown_users_home_is_refused(workspace: Workspace) -> None:
    with pytest.raises(PathEscape):
        workspace.resolve("~no-such-user-here/x")


def test_symlink_loop_is_refused(workspace: Workspace) -> None:
    (workspace.root / "loop-a").symlink_to("loop-b")
    (workspace.root / "loop-b").symlink_to("loop-a")
    with pytest.raises(PathEscape):
        workspace.resolve("loop-a")


def test_path_escape_is_a_permission_error(workspace: Workspace) -> None:
    with pytest.raises(PermissionError, match="outside the workspace"):
        workspace.resolve("../x")


# --- allowed ---------------------------------------------------------------------------


def test_relative_path_resolves_under_the_root(workspace: Workspace) -> None:
    assert workspace.resolve("src/app.py") == workspace.root / "src" / "app.py"


def test_absolute_path_inside_the_root_is_allowed(workspace: Workspace) -> None:
    inside = workspace.root / "notes.md"
    assert workspace.resolve(str(inside)) == inside


def test_dot_dot_that_stays_inside_is_allowed(workspace: Workspace) -> None:
    assert workspace.resolve("a/../b") == workspace.root / "b"


def test_root_itself_is_allowed(workspace: Workspace) -> None:
    assert workspace.resolve(".") == workspace.root


def test_symlink_pointing_inside_is_allowed(workspace: Workspace) -> None:
    (workspace.root / "real.txt").write_text("hi")
    (workspace.root / "alias.txt").symlink_to("real.txt")
    assert workspace.resolve("alias.txt") == workspace.root / "real.txt"


def test_path_that_does_not_exist_yet_is_allowed(workspace: Workspace) -> None:
    assert workspace.resolve("new/dir/file.txt") == workspace.root / "new" / "dir" / "file.txt"


def test_root_given_through_a_symlink_is_resolved(tmp_path: Path) -> None:
    (tmp_path / "real-root").mkdir()
    (tmp_path / "root-link").symlink_to(tmp_path / "real-root", target_is_directory=True)
    workspace = Workspace(tmp_path / "root-link")
    assert workspace.resolve("x") == (tmp_path / "real-root").resolve() / "x"


# --- how it shows itself ----------------------------------------------------------------


def test_repr_does_not_contain_the_absolute_path(workspace: Workspace) -> None:
    assert str(workspace.root) not in repr(workspace)
    assert os.sep + "ws" not in repr(workspace)


def test_relative_gives_a_root_relative_posix_path(workspace: Workspace) -> None:
    assert workspace.relative(workspace.root / "src" / "app.py") == "src/app.py"
    assert workspace.relative("a/../b/c.txt") == "b/c.txt"


def test_relative_of_the_root_is_dot(workspace: Workspace) -> None:
    assert workspace.relative(workspace.root) == "."


def test_relative_refuses_a_path_outside(workspace: Workspace) -> None:
    with pytest.raises(PathEscape):
        workspace.relative("../x")


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        Workspace(tmp_path / "missing")
