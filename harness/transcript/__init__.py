"""Transcripts: the conversation on disk, one JSON entry a line, as Claude Code writes it.

A session's transcript is an append-only JSONL file. Each entry is one message (or one
event: a compaction, a progress note) with its own ``uuid`` and the ``parentUuid`` of the
entry before it, so the file is a tree: a rewind starts a second child under an old entry,
and the conversation is the path from the newest leaf back to a root. This package has the
four pieces chapter 08 builds:

* :class:`Transcript`, the writer, a loop plugin. It appends each message as it joins the
  conversation, and ``fsync``\\ s before each model call.
* :func:`load`, the reader. It reads Claude Code's own files as well as ours, reports and
  skips what it cannot read, and follows the newest branch. A large file is read from its
  last compact boundary only.
* :func:`fsck`, a pure function from entries to a report of what is wrong, by line.
* :func:`repair`, a pure function that makes a loaded conversation one the API accepts,
  and says what it changed.

Where this differs from Claude Code (the chapter says so too): our writer puts a whole
message in one entry, where Claude Code 2.x writes one entry per content block (the loader
reads both); after a compaction it writes the kept messages again under the boundary, where
Claude Code relinks them in place ("preserved segments"); and a microcompaction is recorded
as a ``content-replacement`` entry that the loader applies, so a resumed conversation is the
one the model last saw (chapter 09 records an approved call's result the same way, in place
of its placeholder).

The pieces:

* ``entries``: one line as an :class:`Entry` or a :class:`BadLine`; :class:`Finding`.
* ``reading``: a file's lines parsed, from the start or from its last compact boundary.
* ``chain``: the walk from a leaf back to its root.
* ``conversation``: a branch's entries as API messages.
* ``loading``: :func:`load` and :func:`from_entries`, a file into a :class:`Session`.
* ``checking``: :func:`fsck` and its :class:`Report`.
* ``repairing``: :func:`repair`, a conversation the API accepts, and its changes.
* ``writer``: :class:`Transcript`, the plugin that writes the file, and the ids it uses.
"""

from __future__ import annotations

from harness.transcript.checking import Report, fsck
from harness.transcript.entries import (
    ENTRY_TYPES_WITH_MESSAGES,
    MAX_DEPTH,
    BadLine,
    Entry,
    Finding,
    parse_line,
    too_deep,
)
from harness.transcript.loading import (
    FAST_PATH_BYTES,
    EntryNotFound,
    Session,
    from_entries,
    load,
)
from harness.transcript.reading import (
    BOUNDARY_MARK,
    NotATranscript,
    iter_lines,
    last_boundary_offset,
    read_entries,
)
from harness.transcript.repairing import (
    NET_ROUNDS,
    RESUMED_WITHOUT_START,
    Change,
    Repair,
    UnresolvedPolicy,
    repair,
)
from harness.transcript.writer import (
    VERSION,
    Transcript,
    TranscriptFailed,
    project_folder,
    random_ids,
    seeded_ids,
)

__all__ = [
    "BOUNDARY_MARK",
    "ENTRY_TYPES_WITH_MESSAGES",
    "FAST_PATH_BYTES",
    "MAX_DEPTH",
    "NET_ROUNDS",
    "RESUMED_WITHOUT_START",
    "VERSION",
    "BadLine",
    "Change",
    "Entry",
    "EntryNotFound",
    "Finding",
    "NotATranscript",
    "Repair",
    "Report",
    "Session",
    "Transcript",
    "TranscriptFailed",
    "UnresolvedPolicy",
    "from_entries",
    "fsck",
    "iter_lines",
    "last_boundary_offset",
    "load",
    "parse_line",
    "project_folder",
    "random_ids",
    "read_entries",
    "repair",
    "seeded_ids",
    "too_deep",
]
