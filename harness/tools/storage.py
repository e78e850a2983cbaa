"""Oversized tool results, spilled to storage.

A tool can return far more than the model should carry in its context for the rest of the
session: a 2 MB log, a grep over a whole repository. Claude Code's "tool result storage"
writes such an output to a file and gives the model a preview and the file's path instead;
the model reads the rest back, a window at a time, only if it needs it. Nothing is lost
(the full output is on disk), and the context stays small.

This version writes into the workspace (``.tool-results/<tool_use_id>.txt``), so the model
reads it back with ``read_file`` and the usual path checks apply.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from harness.tools.workspace import Workspace

# Claude Code's observed numbers (third-party analyses of the CLI): results over 50,000
# characters are persisted, and the model sees the first 2,000 as a preview.
SPILL_THRESHOLD_CHARS = 50_000
PREVIEW_CHARS = 2_000

_SAFE_ID = re.compile(r"[A-Za-z0-9_-]+")


def format_size(size: int) -> str:
    """``812 bytes``, ``2.0 KB``, ``123.4 KB``, ``1.5 MB``."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def preview_of(output: str, length: int) -> str:
    """The first ``length`` characters, cut at a line end if one is in the last 20%."""
    head = output[:length]
    if len(head) < len(output):
        line_end = head.rfind("\n")
        if line_end >= 0.8 * length:
            head = head[:line_end]
    return head


class ResultStorage:
    """Spills tool outputs over ``threshold`` characters to files in the workspace."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        threshold: int = SPILL_THRESHOLD_CHARS,
        preview: int = PREVIEW_CHARS,
        directory: str = ".tool-results",
    ) -> None:
        self.workspace = workspace
        self.threshold = threshold
        self.preview = preview
        self.directory = directory

    def _path(self, tool_use_id: str) -> Path:
        # The id becomes a file name: a hostile one ("../../x", "a/b") must not write elsewhere.
        if not _SAFE_ID.fullmatch(tool_use_id):
            raise ValueError(
                f"tool_use_id {tool_use_id!r} is not a safe file name (only A-Z a-z 0-9 _ -)"
            )
        return self.workspace.resolve(f"{self.directory}/{tool_use_id}.txt")

    def spill(self, tool_use_id: str, output: str) -> str:
        """Return ``output`` unchanged if len(output) <= threshold; otherwise write it to
        ``<directory>/<tool_use_id>.txt`` inside the workspace and return a message with the
        size, the workspace-relative path, how to read it back (read_file with offset/limit),
        and the first ``preview`` characters (cut at a line boundary if one exists in the
        last 20% of the preview)."""
        path = self._path(tool_use_id)
        if len(output) <= self.threshold:
            return output
        path.parent.mkdir(parents=True, exist_ok=True)
        # Atomic: a crash mid-write leaves the old file or none, never half of one.
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{tool_use_id}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(output)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        preview = preview_of(output, self.preview)
        more = "\n..." if len(preview) < len(output) else ""
        return (
            "<persisted-output>\n"
            f"Output too large ({format_size(len(output.encode()))}). "
            f"Full output saved to: {self.workspace.relative(path)}\n"
            "Use read_file with offset and limit to read it.\n\n"
            f"Preview (first {format_size(self.preview)}):\n"
            f"{preview}{more}\n"
            "</persisted-output>"
        )

    def read(self, tool_use_id: str) -> str:
        """The full output stored for ``tool_use_id``."""
        with self._path(tool_use_id).open(encoding="utf-8", newline="") as f:
            return f.read()
