"""The workspace: the one directory tree the tools may touch.

Invariant 5 of the course: no read or write outside it, whatever the path says. A path is
resolved the way the operating system would follow it (``..`` collapsed, every symlink
followed, including symlinked parent directories) and refused unless the result is inside
the workspace root. Paths that do not exist yet (a file about to be written) are resolved as
far as they exist.

Two more ways out are closed here, because no path check sees them:

* a **hard link** is a second name for the same file, and it carries no trace of where the
  other name lives: ``ln /outside/secret notes.txt`` (from a shell command) makes a file in
  the workspace that *is* the outside file. A file with more than one link is refused, since
  nothing tells whether its other names lie inside;
* a path the operating system cannot even take (a NUL byte, text that is not valid Unicode,
  a name over 255 bytes) is a :class:`BadPath`, with a message that never shows the
  workspace's absolute path.

A teaching simplification, said plainly: a check-then-open can race with someone swapping a
directory for a symlink in between. Real sandboxes close that gap below the file system
(Claude Code runs shell commands in an OS sandbox: seatbelt on macOS, bubblewrap on Linux).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

# Linux's limits (NAME_MAX, PATH_MAX); macOS has 255 and 1,024. Past them the operating
# system's own error would carry the absolute path.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4_095


class PathEscape(PermissionError):
    """A path that would leave the workspace."""


class BadPath(ValueError):
    """A path the operating system cannot use: a NUL byte, invalid Unicode, too long."""


def shown(text: str, limit: int = 80) -> str:
    """``text`` as a message quotes it: ``repr``, cut to ``limit`` characters."""
    quoted = repr(text)
    return quoted if len(quoted) <= limit else quoted[: limit - 1] + "…"


def check_path_text(text: str) -> None:
    """Raise :class:`BadPath` if the operating system could not take ``text`` as a path."""
    if "\0" in text:
        raise BadPath(f"path {shown(text)} contains a NUL byte, which no file name can hold")
    try:
        encoded = os.fsencode(text)
    except UnicodeError:
        raise BadPath(
            f"path {shown(text)} is not valid Unicode text (it has a lone surrogate)"
        ) from None
    if len(encoded) > MAX_PATH_BYTES:
        raise BadPath(
            f"path {shown(text)} is {len(encoded):,} bytes long; paths are limited to "
            f"{MAX_PATH_BYTES:,} bytes"
        )
    for part in encoded.split(b"/"):
        if len(part) > MAX_NAME_BYTES:
            name = shown(os.fsdecode(part), 40)
            raise BadPath(
                f"path {shown(text)} has a name of {len(part)} bytes ({name}); file names are "
                f"limited to {MAX_NAME_BYTES} bytes"
            )


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
        symlink loop, an unknown ``~user``) is refused too, and so is a file with several
        hard links. One the operating system cannot take at all is a :class:`BadPath`.
        """
        text = str(path)
        check_path_text(text)
        raw = Path(path)
        if text.startswith("~"):
            try:
                raw = raw.expanduser()
            except RuntimeError:  # ~someone who does not exist: still a home, not the workspace
                message = f"path {shown(text)} names a home directory, outside the workspace"
                raise PathEscape(message) from None
        candidate = raw if raw.is_absolute() else self.root / raw
        try:
            real = candidate.resolve(strict=False)
        except (RuntimeError, OSError):  # a symlink loop (RuntimeError before 3.13, then OSError)
            message = f"path {shown(text)} cannot be checked: it runs into a symlink loop"
            raise PathEscape(message) from None
        if real != self.root and not real.is_relative_to(self.root):
            raise PathEscape(
                f"path {shown(text)} is outside the workspace; tools may only use paths "
                f"inside it (relative paths start at the workspace root)"
            )
        self._check_links(real, text)
        return real

    def _check_links(self, real: Path, text: str) -> None:
        try:
            info = real.lstat()
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ENOTDIR):
                return  # not there (yet): nothing to link to
            raise BadPath(f"path {shown(text)} cannot be checked: {error.strerror}") from None
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            raise PathEscape(
                f"path {shown(text)} is a file with {info.st_nlink} hard links; another of its "
                "names may lie outside the workspace, so the file tools do not open it"
            )

    def relative(self, path: str | Path) -> str:
        """``path`` as the model should see it: relative to the root, ``/`` separators."""
        real = self.resolve(path)
        return "." if real == self.root else real.relative_to(self.root).as_posix()
