"""The session memory plugin: after each reply, extract when due and write the checked file.

:class:`SessionMemory` runs the extraction fork on schedule, checks its edits, holds the
memory to its budgets (what it trims, it names), and writes the file atomically, never over a
file it could not read or one changed meanwhile, and never through a link out of its folder
(``root``). Tier 2 compaction (``harness.compaction.session_memory``) reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anthropic
from anthropic.types import Message

from harness import messages as m
from harness.atomic import write_atomic
from harness.compaction.context import ContextTracker
from harness.fork import DEFAULT_FORK_TURNS, ForkResult, run_fork
from harness.loop import BaseAgent, Plugin
from harness.memory.budgets import SECTION_TOKENS, TOTAL_TOKENS, fit_budgets
from harness.memory.editor import MemoryEditor
from harness.memory.extraction import (
    Extraction,
    ExtractionSchedule,
    ForkUsage,
    MemoryNotUpdated,
    MemoryUpdated,
    extraction_directive,
)
from harness.memory.facts import (
    Fact,
    MemoryFormatError,
    MemoryPathError,
    SessionMemoryError,
    live_facts,
)
from harness.memory.fileformat import parse, render


class SessionMemory(Plugin):
    """Keeps ``MEMORY.md`` up to date as the session runs; tier 2 compacts with it.

    Put it in the agent's ``plugins``; after each reply it checks the schedule and, when due,
    runs the extraction fork. Hand it to ``harness.compaction.session_memory`` for tier 2.

    Teaching simplification: Claude Code runs the extraction in the background while the
    session goes on (and tier 2 waits for a running one to finish before it reads the file).
    Here it runs at once, after the reply, so every run is deterministic; the cost in tokens
    is the same, only the wait differs.

    ``root``, when given, is the folder the file must stay in: the memory is neither read nor
    written when the file's real path (every symbolic link on the way followed) is outside
    ``root``'s real path, so a ``session-memory`` folder linked elsewhere cannot make the
    extraction write there (:class:`MemoryPathError`). The command line gives its sessions
    folder.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        root: str | Path | None = None,
        schedule: ExtractionSchedule | None = None,
        per_section: int = SECTION_TOKENS,
        total: int = TOTAL_TOKENS,
        fork_turns: int = DEFAULT_FORK_TURNS,
    ) -> None:
        self.path = Path(path)
        self.root = Path(root) if root is not None else None
        self.schedule = schedule or ExtractionSchedule()
        self.per_section = per_section
        self.total = total
        self.fork_turns = fork_turns
        self.tracker = ContextTracker()
        """How big the context is: the last reply's usage, as auto-compact measures it."""
        self.facts: list[Fact] = []
        """The memory as last read or written (the file is the truth: see :meth:`load`)."""
        self.extractions: list[Extraction] = []
        self.covered: m.MessageDict | None = None
        """The last message of the conversation the latest extraction read (by identity)."""
        self.replies = 0
        """Replies of the session so far (``after_reply`` counts them)."""
        self.last_fork: ForkResult | None = None
        self._at_last: int | None = None
        self._calls_since = 0
        self._text: str | None = None
        """The file's text as last read or written, to notice an edit made by hand."""
        self._next = 1

    # -- the file ----------------------------------------------------------------------------

    def load(self, now: float | None = None) -> list[Fact]:
        """Read ``MEMORY.md`` again if it changed (a hand edit); ``self.facts`` keeps the last
        good memory when it cannot be read.

        Raises :class:`MemoryFormatError` (with the line, and ``path``) if the file is broken,
        bytes that are not UTF-8 included, and :class:`MemoryPathError` if it is outside
        ``root`` or cannot be read; both are :class:`SessionMemoryError`. Lines added by hand
        get an id here, with source ``hand-edit``.
        """
        text = self._read()
        if text is None or text == self._text:
            return self.facts
        try:
            parsed = parse(text)
        except MemoryFormatError as error:
            raise MemoryFormatError(error.line, error.problem, path=self.path) from None
        moment = datetime.fromtimestamp(now, tz=UTC) if now is not None else None
        self.facts = live_facts(self._number(parsed, lambda _source: self.replies or None, moment))
        self._text = text
        return self.facts

    def check_place(self) -> None:
        """:class:`MemoryPathError` unless the file's real path is inside ``root``'s (if any).

        Checked before each read and each write, not once: a link can appear at any time.
        """
        if self.root is None:
            return
        try:
            inside = self.path.resolve().is_relative_to(self.root.resolve())
        except (OSError, RuntimeError) as error:  # RuntimeError: a loop of symbolic links
            raise MemoryPathError(self.path, f"cannot follow its path ({error})") from None
        if not inside:
            raise MemoryPathError(
                self.path,
                f"leads to {self.path.resolve()}, outside {self.root} (a symbolic link on the "
                "way): the session memory is neither read nor written there",
            )

    def _read(self) -> str | None:
        """The file's text, or None if there is no file yet."""
        self.check_place()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise MemoryPathError(self.path, f"cannot be read ({error.strerror})") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
            problem = f"byte 0x{data[error.start]:02x} at column {column} is not UTF-8"
            raise MemoryFormatError(line, problem, path=self.path) from None

    def text(self, *, provenance: bool = True) -> str:
        """The memory as ``MEMORY.md`` (``provenance=False``: as the model's context gets it)."""
        return render(self.facts, provenance=provenance)

    def _display_path(self, agent: BaseAgent) -> str:
        try:
            return self.path.resolve().relative_to(agent.workspace).as_posix()
        except ValueError:
            return self.path.as_posix()

    def _number(
        self,
        parsed: Sequence[Fact],
        turn_of: Any,
        moment: datetime | None,
    ) -> list[Fact]:
        """Give new lines an id, turn and time (:func:`live_facts` then drops the superseded)."""
        self._next = max([self._next, *(f.number + 1 for f in parsed)])
        out: list[Fact] = []
        for fact in parsed:
            if fact.id is None:
                fact = fact.model_copy(
                    update={
                        "id": f"f{self._next}",
                        "turn": fact.turn or turn_of(fact.source),
                        "at": fact.at or moment,
                    }
                )
                self._next += 1
            out.append(fact)
        return out

    # -- extraction -----------------------------------------------------------------------------

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        self.replies += 1
        self._calls_since += len(m.tool_uses(agent.messages[-1]))
        self.tracker.after_reply(agent, reply)
        context = self.tracker.size(agent)
        if self._at_last is not None and context < self._at_last:
            self._at_last = context  # a compaction shrank the context: growth counts from here
        if self.schedule.due(context, self._at_last, self._calls_since):
            self.extract(agent, context_tokens=context)

    def extract(self, agent: BaseAgent, *, context_tokens: int | None = None) -> Extraction:
        """Run the extraction fork now and write the file; report by event and return it.

        Whatever fails (the file was broken by hand, the API, the fork's edits, the write),
        the memory and its file stay as they were, and the event says why.
        """
        context = self.tracker.size(agent) if context_tokens is None else context_tokens
        self._at_last, self._calls_since = context, 0
        offered = {str(t.get("name")) for t in agent.request().tools or []}
        if "edit_file" not in offered:
            return self._failed(
                agent,
                context,
                "the agent has no edit_file tool for the memory fork to use "
                "(the fork's tools are the parent's, so that the cached prefix matches)",
            )
        now = agent.clock.now()
        moment = datetime.fromtimestamp(now, tz=UTC)
        path = self._display_path(agent)
        try:
            before = self.load(now)
        except MemoryFormatError as error:  # a hand edit: never overwritten, never guessed at
            return self._failed(
                agent,
                context,
                f"{path} line {error.line}: {error.problem}; fix the file by hand "
                "(it is left as it is)",
            )
        except MemoryPathError as error:
            return self._failed(agent, context, str(error))
        text_before = render(before)
        editor = MemoryEditor(path, text_before, real=self.path)
        directive = extraction_directive(
            path, text_before, per_section=self.per_section, total=self.total
        )
        try:
            fork = run_fork(
                agent, directive, tools=editor, purpose="memory", max_turns=self.fork_turns
            )
        except anthropic.APIError as error:
            return self._failed(agent, context, f"the extraction request failed: {error}")
        self.last_fork = fork
        usage = ForkUsage.of(fork)
        if editor.edits == 0 and editor.refused:
            return self._failed(
                agent, context, f"all {editor.refused} of the fork's edits were refused", usage
            )
        numbered = self._number(parse(editor.text), self._turn_finder(agent), moment)
        after = live_facts(numbered)
        kept, trimmed = fit_budgets(after, per_section=self.per_section, total=self.total)
        text = render(kept)
        # The file must still be the one the fork started from: a person may have edited it
        # meanwhile (or put a link in its way), and their edit is not to be written over.
        try:
            on_disk = self._read()
        except SessionMemoryError as error:
            return self._failed(agent, context, f"{error}; it is left as it is", usage)
        if on_disk is not None and on_disk != self._text:
            return self._failed(
                agent,
                context,
                f"{path} was changed while the memory was being updated; the change is kept, "
                "and the next extraction reads it",
                usage,
            )
        try:
            write_atomic(self.path, text)
        except OSError as error:
            return self._failed(agent, context, f"could not write {path}: {error}", usage)
        known = {f.id for f in before}
        live = {f.id for f in after}
        targets = {f.supersedes for f in numbered if f.supersedes}
        gone = [f for f in before if f.id not in live]
        record = Extraction(
            reply=self.replies,
            context_tokens=context,
            ok=True,
            added=tuple(f for f in after if f.id not in known),
            superseded=tuple(f for f in gone if f.id in targets),
            removed=tuple(f for f in gone if f.id not in targets),
            trimmed=tuple(trimmed),
            usage=usage,
        )
        self.facts, self._text = kept, text
        self.covered = agent.messages[-1] if agent.messages else None
        self.extractions.append(record)
        agent.emit(MemoryUpdated(record))
        return record

    def _failed(
        self, agent: BaseAgent, context: int, reason: str, usage: ForkUsage | None = None
    ) -> Extraction:
        record = Extraction(
            reply=self.replies,
            context_tokens=context,
            ok=False,
            reason=reason,
            usage=usage or ForkUsage(),
        )
        self.extractions.append(record)
        agent.emit(MemoryNotUpdated(self.replies, reason))
        return record

    def _turn_finder(self, agent: BaseAgent) -> Any:
        """A function from a fact's source to the reply it came from (the latest if unknown)."""
        replies = [msg for msg in agent.messages if msg["role"] == "assistant"]
        where: dict[str, int] = {}
        for k, msg in enumerate(replies):
            for use in m.tool_uses(msg):
                where[str(use["id"])] = self.replies - (len(replies) - 1 - k)
        return lambda source: max(1, where.get(source, self.replies))
