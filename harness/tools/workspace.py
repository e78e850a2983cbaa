"""The workspace: the one directory tree the tools may touch.

Invariant 5 of the course: no read or write outside it, whatever the path says. A path is
resolved the way the operating system would follow it (``..`` collapsed, every symlink
followed, including symlinked parent directories) and refused unless the result is inside
the workspace root. Paths that do not exist yet (a file about to be written) are resolved as
far as they exist.

A teaching simplification, said plainly: a check-then-open can race with someone swapping a
directory for a symlink in between. Real sandboxes close that gap below the file system
(Claude Code runs shell commands in an OS sandbox: seatbelt on macOS, bubblewrap on Linux).
"""

from __future__ import annotations

from pathlib import Path


class PathEscape(PermissionError):
    """A path that would leave the workspace."""


class Workspace:
    """A directory the tools are confined to."""

    def __init__(self, root: str | Path) -> None:
        root_path = Path(root)
        if not root_path.is_dir():
            raise NotADirectoryError(f"workspace root is not a directory: {root}")
        self.root = root_path.resolve(strict=True)

    def __repr__(self) -> str:
        # Never the absolute path: it would end up in notebook outputs and transcripts.
        return f"Workspace({self.root.name!r})"

    def resolve(self, path: str | Path) -> Path:
        """The real path ``path`` points to, or :class:`PathEscape` if it leaves the workspace.

        Relative paths are taken from the workspace root. A path that cannot be checked (a
        symlink loop, an unknown ``~user``) is refused too; one with a NUL byte is a
        ``ValueError``, as everywhere in Python.
        """
        text = str(path)
        raw = Path(path)
        if text.startswith("~"):
            try:
                raw = raw.expanduser()
            except RuntimeError:  # ~someone who does not exist: still a home, not the workspace
                message = f"path {text!r} names a home directory, outside the workspace"
                raise PathEscape(message) from None
        candidate = raw if raw.is_absolute() else self.root / raw
        try:
            real = candidate.resolve(strict=False)
        except (RuntimeError, OSError):  # a symlink loop (RuntimeError before 3.13, then OSError)
            message = f"path {text!r} cannot be checked: it runs into a symlink loop"
            raise PathEscape(message) from None
        if real != self.root and not real.is_relative_to(self.root):
            raise PathEscape(
                f"path {text!r} is outside the workspace; tools may only use paths "
                f"inside it (relative paths start at the workspace root)"
            )
        return real

    def relative(self, path: str | Path) -> str:
        """``path`` as the model should see it: relative to the root, ``/`` separators."""
        real = self.resolve(path)
        return "." if real == self.root else real.relative_to(self.root).as_posix()
