"""The progress file: what a fresh session reads first, so work spans sessions.

Anthropic's write-up on long-running agents ("Effective harnesses for long-running agents",
anthropic.com/engineering) has each new session start from a progress file and the git log
instead of from memory, and update the file before it stops. A transcript resumes *one*
session (chapter 08); the progress file is for the next one, which starts with an empty
conversation: a person who ran ``/clear``, a scheduled job, a machine that was replaced.

Ours is Markdown a person can read and edit: the task, the todo list as a checklist, and
notes. The harness writes it whole and atomically (a crash leaves the old file or the new
one) every time the list changes, which is every time a step is marked done, and reads it at
the start of a session: its checklist becomes the todo list, and its text goes in front of
the first prompt. A file that is missing, too big, not UTF-8 or without a checklist is
reported, never fatal: the session starts as if it were not there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.atomic import write_atomic
from harness.clock import Clock, RealClock, isoformat
from harness.planning.todos import TodoList, parse_checklist

PROGRESS_FILE = "claude-progress.md"
"""Its default name, in the workspace (the write-up's ``claude-progress.txt``, in Markdown)."""
MAX_PROGRESS_BYTES = 256_000
"""A bigger file is read only this far (our choice: a progress file is a page, not a log)."""

HEADER = "# Progress"
NOTE = "<!-- Kept by the harness: the checklist is read back when a session starts. -->"


class ProgressFileError(ValueError):
    """The progress file cannot be used; the message says why in plain words."""


@dataclass(frozen=True)
class Progress:
    """What a progress file holds."""

    task: str
    todos: TodoList
    notes: str = ""

    def render(self, *, updated: str = "") -> str:
        lines = [HEADER, NOTE, "", f"Task: {self.task}"]
        if updated:
            lines.append(f"Updated: {updated}")
        lines += ["", "## Steps", self.todos.render() or "(none yet)"]
        if self.notes.strip():
            lines += ["", "## Notes", self.notes.strip()]
        return "\n".join(lines) + "\n"

    def briefing(self, path: str) -> str:
        """The text put in front of a new session's first prompt."""
        done, total = self.todos.count("completed"), len(self.todos.items)
        return (
            f"<system-reminder>\nAn earlier session left a progress file, {path} "
            f"({done} of {total} steps done). Carry on from it: do not redo a step marked "
            f"[x]; the step marked [~] was being worked on when it stopped, so check it first."
            f"\n\n{self.render().strip()}\n</system-reminder>"
        )


def parse_progress(text: str) -> Progress:
    """A progress file's content; raises :class:`ProgressFileError` if it has no checklist."""
    task = ""
    notes: list[str] = []
    steps: list[str] = []
    in_notes = False
    for line in text.splitlines():
        if line.startswith("Task:") and not task:
            task = line[len("Task:") :].strip()
        elif line.strip() == "## Notes":
            in_notes = True
        elif line.startswith("## "):
            in_notes = False
        elif in_notes:
            notes.append(line)  # the person's: a '- [ ]' line there is a note, not a step
        else:
            steps.append(line)
    todos = parse_checklist("\n".join(steps))
    if not todos.items:
        raise ProgressFileError("it holds no checklist (no line like '- [ ] a step')")
    return Progress(task=task, todos=todos, notes="\n".join(notes).strip())


@dataclass
class ProgressFile:
    """A progress file in the workspace: read at the start of a session, written as the
    list changes."""

    path: Path
    task: str = ""
    clock: Clock | None = None
    notes: str = ""

    def read(self) -> Progress | None:
        """What the file holds; ``None`` if there is none. Raises :class:`ProgressFileError`
        if it exists but cannot be used."""
        try:
            with self.path.open("rb") as handle:
                raw = handle.read(MAX_PROGRESS_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise ProgressFileError(f"it cannot be read ({error.strerror or error})") from error
        if len(raw) > MAX_PROGRESS_BYTES:
            raise ProgressFileError(
                f"it is over {MAX_PROGRESS_BYTES:,} bytes: a progress file is a page, not a log"
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ProgressFileError(f"it is not UTF-8 text (byte {error.start})") from error
        progress = parse_progress(text)
        if not self.task:
            self.task = progress.task
        if not self.notes:
            self.notes = progress.notes
        return progress

    def write(self, todos: TodoList) -> None:
        """Write the file whole, atomically, with ``todos`` as its checklist."""
        updated = isoformat((self.clock or RealClock()).now())
        progress = Progress(task=self.task, todos=todos, notes=self.notes)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, progress.render(updated=updated))
