"""Session memory's extractions: when one is due, what it did and cost, and the fork's instruction.

:class:`ExtractionSchedule` says when to bring the memory up to date (first after 10K tokens
and 3 tool calls, then every 5K tokens and 3 tool calls: Claude Code's numbers as observed);
:class:`Extraction` records one run, its fork's cost in :class:`ForkUsage`, and the events
:class:`MemoryUpdated` and :class:`MemoryNotUpdated` report it. :func:`extraction_directive`
is what the fork is asked to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from harness.events import Event
from harness.fork import ForkResult
from harness.memory.budgets import Trimmed
from harness.memory.facts import SECTIONS, Fact
from harness.pricing import prompt_tokens

# -- when to extract ----------------------------------------------------------------------------


class ExtractionSchedule(BaseModel):
    """When session memory is brought up to date (Claude Code's numbers, as observed)."""

    model_config = ConfigDict(frozen=True)

    first_tokens: int = Field(10_000, gt=0)
    """The first extraction waits until the context holds this many tokens..."""
    every_tokens: int = Field(5_000, gt=0)
    """...and each later one until it has grown by this many since the last..."""
    tool_calls: int = Field(3, ge=0)
    """...and, both times, until this many tool calls were made since the last."""

    def due(self, context: int, at_last: int | None, calls_since: int) -> bool:
        """Whether to extract now: ``context`` tokens, ``at_last`` at the last extraction."""
        if calls_since < self.tool_calls:
            return False
        if at_last is None:
            return context >= self.first_tokens
        return context - at_last >= self.every_tokens


# -- events and records -------------------------------------------------------------------------


@dataclass(frozen=True)
class ForkUsage:
    """The model calls of one extraction fork, and their tokens."""

    calls: int = 0
    prompt_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def of(cls, fork: ForkResult) -> ForkUsage:
        return cls(
            calls=fork.calls,
            prompt_tokens=sum(prompt_tokens(r.usage) for r in fork.replies),
            cache_read_tokens=fork.tokens("cache_read_input_tokens"),
            output_tokens=fork.tokens("output_tokens"),
        )


@dataclass(frozen=True)
class Extraction:
    """One extraction: when, what it changed, and what its fork cost."""

    reply: int
    """The session's reply it followed."""
    context_tokens: int
    ok: bool
    reason: str = ""
    """Why it failed (the memory was left as it was)."""
    added: tuple[Fact, ...] = ()
    superseded: tuple[Fact, ...] = ()
    removed: tuple[Fact, ...] = ()
    """Facts the fork deleted without superseding them."""
    trimmed: tuple[Trimmed, ...] = ()
    usage: ForkUsage = field(default_factory=lambda: ForkUsage())
    """What the fork's model calls took."""


@dataclass(frozen=True)
class MemoryUpdated(Event):
    extraction: Extraction

    def __str__(self) -> str:
        e, u = self.extraction, self.extraction.usage
        parts = [f"+{len(e.added)} fact{'' if len(e.added) == 1 else 's'}"]
        if e.superseded:
            parts.append(f"{len(e.superseded)} superseded")
        if e.removed:
            parts.append(f"{len(e.removed)} removed")
        line = (
            f"🧠 session memory after reply {e.reply}: {', '.join(parts)}; fork: {u.calls} "
            f"call{'' if u.calls == 1 else 's'}, {u.cache_read_tokens:,} of "
            f"{u.prompt_tokens:,} prompt tokens from cache"
        )
        if e.trimmed:
            line += "; trimmed " + ", ".join(str(t) for t in e.trimmed)
        return line


@dataclass(frozen=True)
class MemoryNotUpdated(Event):
    reply: int
    reason: str

    def __str__(self) -> str:
        return (
            f"⚠ session memory not updated after reply {self.reply}: {self.reason} "
            "(the previous memory is kept)"
        )


# -- the fork's instruction -------------------------------------------------------------------

EXTRACTION_MARKER = "Update the session memory file"


def extraction_directive(path: str, current: str, *, per_section: int, total: int) -> str:
    """The fork's instruction: the file as it is now, and how to update it."""
    return f"""{EXTRACTION_MARKER} {path} from the conversation above. Do not answer or \
continue the conversation's work: only update that file, with the edit_file tool (no other \
tool, no other file).

The file now holds:
```markdown
{current}```

Rules:
- One fact per line, "- " then the fact, under its section: {", ".join(SECTIONS)}.
- End each line you add with <!-- from=ID -->: the id of the tool call it comes from \
(toolu_...), or user for something the user said.
- To correct or update a fact, replace its whole line with the new one and name the old \
fact's id in the comment: <!-- from=ID supersedes=f3 -->. Leave every other line as it is, \
comment included.
- Record what someone taking over would need: the task in the user's words, every \
correction the user made, errors and how they were fixed, the files and functions that \
matter, what was learned, the current state, and a line of worklog.
- Keep each section under about {per_section:,} tokens and the file under about {total:,}.
- When the file is up to date, answer with one short sentence."""
