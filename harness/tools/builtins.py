"""The builtin workspace tools: read, write and edit files, find files, search them, run bash.

The file tools live in :mod:`harness.tools.files`, ``glob`` and ``grep`` in
:mod:`harness.tools.search`, ``bash`` in :mod:`harness.tools.shell` (it is *not* confined by
path checks); this module is the set the agent offers, in its fixed order, and keeps every
name importable from here.
"""

from __future__ import annotations

from typing import Any

from harness.tools.base import Tool
from harness.tools.files import (
    BINARY_SNIFF_BYTES,
    READ_DEFAULT_LIMIT,
    READ_MAX_FILE_BYTES,
    READ_MAX_LINE_CHARS,
    READ_MAX_OUTPUT_CHARS,
    EditFileInput,
    ReadFileInput,
    WriteFileInput,
    edit_file,
    read_file,
    replace_text,
    write_file,
)
from harness.tools.search import (
    GLOB_MAX_RESULTS,
    GREP_DEFAULT_HEAD_LIMIT,
    GREP_MAX_LINE_CHARS,
    GlobInput,
    GrepInput,
    compile_pattern,
    glob,
    grep,
)
from harness.tools.shell import bash

__all__ = [
    "BINARY_SNIFF_BYTES",
    "GLOB_MAX_RESULTS",
    "GREP_DEFAULT_HEAD_LIMIT",
    "GREP_MAX_LINE_CHARS",
    "READ_DEFAULT_LIMIT",
    "READ_MAX_FILE_BYTES",
    "READ_MAX_LINE_CHARS",
    "READ_MAX_OUTPUT_CHARS",
    "EditFileInput",
    "GlobInput",
    "GrepInput",
    "ReadFileInput",
    "WriteFileInput",
    "bash",
    "builtin_tools",
    "compile_pattern",
    "edit_file",
    "glob",
    "grep",
    "read_file",
    "replace_text",
    "write_file",
]


def builtin_tools() -> list[Tool[Any]]:
    """The six workspace tools, in the fixed order they are offered to the model."""
    return [read_file, write_file, edit_file, glob, grep, bash]
