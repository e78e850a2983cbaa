"""The memory fork's edit tool: its ``edit_file`` calls run on a copy of ``MEMORY.md``, checked.

The fork edits the file with the agent's own ``edit_file`` tool definition, as Claude Code's
memory agent uses its Edit tool (the definitions must be the parent's, byte for byte, or the
cached prefix would not match). :class:`MemoryEditor` applies those edits to a copy in
memory and refuses one that would break the file; the plugin writes the copy once at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness import messages as m
from harness.memory.fileformat import parse
from harness.tools.base import ToolError
from harness.tools.files import replace_text


class MemoryEditor:
    """Runs the memory fork's tool calls against a copy of ``MEMORY.md`` held in memory.

    Only ``edit_file`` (and ``write_file``) on the memory file are allowed, as Claude Code lets
    its memory agent use only its Edit tool on that one file. Each edit follows
    ``edit_file``'s rules (the old text must occur exactly once) and must leave a file that
    :func:`parse` accepts: an edit that would break it is refused with the reason, so the fork
    can try again, and the copy stays as it was.
    """

    def __init__(self, path: str, text: str, *, real: Path | None = None) -> None:
        self.path = path
        self.real = real.resolve() if real is not None else None
        """The file itself: a model may name it by its absolute path instead."""
        self.text = text
        self.edits = 0
        self.refused = 0

    def _is_memory(self, path: object) -> bool:
        if not isinstance(path, str):
            return False
        if path.strip().removeprefix("./") == self.path:
            return True
        given = Path(path.strip())
        return self.real is not None and given.is_absolute() and given.resolve() == self.real

    def run(self, calls: Sequence[m.Block]) -> list[m.Block]:
        return [self._one(call) for call in calls]

    def _one(self, call: m.Block) -> m.Block:
        call_id, name, args = str(call["id"]), call.get("name"), call.get("input")
        if not isinstance(args, dict):
            args = {}
        try:
            if name not in ("edit_file", "write_file") or not self._is_memory(args.get("path")):
                raise ValueError(
                    f"this memory update may only change {self.path}, with edit_file "
                    f"(not {name} on {args.get('path')!r})"
                )
            new = self._edited(name, args)
            parse(new)  # the file must stay readable: a broken edit is refused, not written
        except (ValueError, TypeError) as error:
            self.refused += 1
            return m.tool_result(call_id, f"Refused: {error}", is_error=True)
        self.text = new
        self.edits += 1
        return m.tool_result(call_id, f"Edited {self.path}")

    def _edited(self, name: object, args: dict[str, Any]) -> str:
        if name == "write_file":
            content = args.get("content")
            if not isinstance(content, str):
                raise ValueError("write_file needs content, the whole new file")
            return content
        old, new = args.get("old_string"), args.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str):
            raise ValueError("edit_file needs old_string and new_string")
        try:  # the builtin edit_file's own rule, on the copy
            text, _ = replace_text(self.text, old, new, bool(args.get("replace_all")), self.path)
        except ToolError as error:
            raise ValueError(str(error)) from None
        return text
