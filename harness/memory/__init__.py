"""Session memory: the facts of a session, kept in a file as it runs, for compaction to use.

A summary written when the context is full (tier 3) is one model's reading of a long
conversation at its most crowded moment: a correction the user made an hour ago can be left
out, and then the agent makes the same mistake again. Claude Code also keeps *session memory*
while the session runs: after some replies, a forked agent (``harness.fork``) reads the
conversation from the cache and updates a markdown file of fixed sections. When the context
fills up, the memory replaces the old messages with no model call at all (tier 2,
``harness.compaction.session_memory``).

The memory is a list of :class:`Fact` (each with where it came from), kept in ``MEMORY.md``
(:func:`render` and :func:`parse`, exactly: a person may edit the file) and written whole or
not at all (:func:`write_atomic`, from ``harness.atomic``). :class:`SessionMemory` is the
plugin that decides when to extract, runs the fork, checks its edits, holds the memory to its
budgets and writes the file.

The fork edits the file with the agent's own ``edit_file`` tool definition, as Claude Code's
memory agent uses its Edit tool: the definitions must be the parent's, byte for byte, or the
cached prefix would not match. Its edits are applied to a copy in memory
(:class:`MemoryEditor`), checked, and written once at the end.

Submodules:

* ``facts``: one fact and where it came from, the facts that stand, and the errors;
* ``fileformat``: facts to ``MEMORY.md`` and back, exactly;
* ``budgets``: about 2K tokens a section and 12K the whole, and what is trimmed;
* ``editor``: the fork's edits, applied to a copy of the file and checked;
* ``extraction``: when an extraction is due, what it did and cost, and the fork's instruction;
* ``plugin``: :class:`SessionMemory`, the plugin that runs it all.
"""

from __future__ import annotations

from harness.atomic import stale_temporaries, write_atomic
from harness.memory.budgets import (
    SECTION_TOKENS,
    TOTAL_TOKENS,
    TRIM_ORDER,
    Trimmed,
    fit_budgets,
    section_tokens,
)
from harness.memory.editor import MemoryEditor
from harness.memory.extraction import (
    EXTRACTION_MARKER,
    Extraction,
    ExtractionSchedule,
    ForkUsage,
    MemoryNotUpdated,
    MemoryUpdated,
    extraction_directive,
)
from harness.memory.facts import (
    HAND_EDIT,
    SECTIONS,
    Fact,
    MemoryFormatError,
    MemoryPathError,
    SectionName,
    SessionMemoryError,
    live_facts,
)
from harness.memory.fileformat import NOTE, TITLE, fact_line, parse, render
from harness.memory.plugin import SessionMemory

__all__ = [
    "EXTRACTION_MARKER",
    "HAND_EDIT",
    "NOTE",
    "SECTIONS",
    "SECTION_TOKENS",
    "TITLE",
    "TOTAL_TOKENS",
    "TRIM_ORDER",
    "Extraction",
    "ExtractionSchedule",
    "Fact",
    "ForkUsage",
    "MemoryEditor",
    "MemoryFormatError",
    "MemoryNotUpdated",
    "MemoryPathError",
    "MemoryUpdated",
    "SectionName",
    "SessionMemory",
    "SessionMemoryError",
    "Trimmed",
    "extraction_directive",
    "fact_line",
    "fit_budgets",
    "live_facts",
    "parse",
    "render",
    "section_tokens",
    "stale_temporaries",
    "write_atomic",
]
