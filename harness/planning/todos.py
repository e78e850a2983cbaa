"""The todo list: what the agent means to do, written by the model, kept by the harness.

Claude Code gives the model a ``TodoWrite`` tool. The model sends the *whole* list every
time (never a diff), each item with what to do (``content``), how to say it while it is
being done (``activeForm``: "Running the tests"), and a status: ``pending``, ``in_progress``
or ``completed``. Its instructions ask for exactly one item in progress at a time. The
harness keeps the list as part of the session: it shows it to the person, and it puts it back
in front of the model whenever the model could lose it (chapter 12).

Here the list is validated with pydantic at the edge, like every tool input (chapter 02): a
list that does not fit is refused with an error the model can read, and the old list stays.
Two rules are ours, stricter than what Claude Code accepts (its transcripts show two items
in progress at once): at most one item in progress, and at most :data:`MAX_TODOS` items.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

Status = Literal["pending", "in_progress", "completed"]

MAX_TODOS = 100
"""Items one list may hold (our choice: a plan longer than this is not a plan)."""
MAX_TEXT = 500
"""Characters an item's ``content`` or ``activeForm`` may hold (our choice)."""

RESULT_TEXT = (
    "Todos have been modified successfully. Ensure that you continue to use the todo list to "
    "track your progress. Please proceed with the current tasks if applicable"
)
"""What Claude Code answers a ``TodoWrite`` call with (observed in its transcripts)."""

# One character per status, for the checklist the model and the person read (and the progress
# file, which is read back: see :func:`parse_checklist`).
MARKS: dict[Status, str] = {"pending": " ", "in_progress": "~", "completed": "x"}


class TodoItem(BaseModel):
    """One item, with Claude Code's field names (so its transcripts' lists read here too)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: str = Field(min_length=1, max_length=MAX_TEXT)
    """What to do, in the imperative: "Run the tests"."""
    status: Status
    activeForm: str = Field(min_length=1, max_length=MAX_TEXT)  # Claude Code's field name
    """The same, as it is being done: "Running the tests"."""

    @field_validator("content", "activeForm")
    @classmethod
    def _one_line(cls, value: str) -> str:
        flat = " ".join(value.split())  # one line each: the checklist is one item per line
        if not flat:
            raise ValueError("must not be empty or only whitespace")
        return flat


class TodoWriteInput(BaseModel):
    """The todo tool's input: the whole new list."""

    model_config = ConfigDict(extra="forbid")

    todos: list[TodoItem] = Field(max_length=MAX_TODOS)
    """The updated list, in order. Send every item, not only the ones that changed."""

    @model_validator(mode="after")
    def _one_in_progress(self) -> TodoWriteInput:
        busy = [item.content for item in self.todos if item.status == "in_progress"]
        if len(busy) > 1:
            raise ValueError(
                f"{len(busy)} items are in_progress ({'; '.join(busy[:3])}): mark exactly one "
                "in_progress at a time, and the others pending or completed"
            )
        return self


@dataclass(frozen=True)
class TodoList:
    """A list as written, immutable: each write replaces the whole list."""

    items: tuple[TodoItem, ...] = ()

    @classmethod
    def of(cls, items: Iterable[TodoItem | Mapping[str, Any]]) -> TodoList:
        """A list from items or dicts with Claude Code's fields (validated: raises
        ``pydantic.ValidationError``, one in progress at most)."""
        raw = [i.model_dump() if isinstance(i, TodoItem) else dict(i) for i in items]
        return cls(tuple(TodoWriteInput.model_validate({"todos": raw}).todos))

    @property
    def open(self) -> tuple[TodoItem, ...]:
        """Items not completed."""
        return tuple(i for i in self.items if i.status != "completed")

    @property
    def current(self) -> TodoItem | None:
        """The item in progress, if any."""
        return next((i for i in self.items if i.status == "in_progress"), None)

    def count(self, status: Status) -> int:
        return sum(1 for i in self.items if i.status == status)

    def as_json(self) -> list[dict[str, str]]:
        """The list as the tool's input carries it (Claude Code's ``todos``)."""
        return [i.model_dump() for i in self.items]

    def render(self) -> str:
        """The checklist: one line per item, ``- [x]`` done, ``- [~]`` in progress, ``- [ ]``
        to do. The same text is shown to the person, put back after a compaction, sent in a
        reminder, and written to the progress file (which is why it must read back)."""
        return "\n".join(f"- [{MARKS[i.status]}] {i.content}" for i in self.items)

    def summary(self) -> str:
        """``3/12 done · now: Running the tests`` (the command line's status line)."""
        if not self.items:
            return "no todos"
        now = self.current
        tail = f" · now: {now.activeForm}" if now is not None else ""
        return f"{self.count('completed')}/{len(self.items)} done{tail}"


def parse_checklist(text: str) -> TodoList:
    """The items of a checklist written by :meth:`TodoList.render`, in order.

    Lines that are not checklist items are skipped, so a checklist inside other text (a
    progress file, a compacted conversation) reads back. An item's ``activeForm`` is not in
    the checklist; its ``content`` stands in. A second item marked in progress is read as
    pending (a list has at most one). Never raises: text that holds no item is an empty list.
    """
    status_of = {mark: status for status, mark in MARKS.items()}
    items: list[TodoItem] = []
    busy = False
    for line in text.splitlines():
        stripped = line.strip()
        if len(stripped) < 7 or not stripped.startswith("- [") or stripped[4:6] != "] ":
            continue
        status = status_of.get(stripped[3].lower())
        content = " ".join(stripped[6:].split())[:MAX_TEXT]
        if status is None or not content or len(items) >= MAX_TODOS:
            continue
        if status == "in_progress" and busy:
            status = "pending"
        try:
            item = TodoItem(content=content, status=status, activeForm=content)
        except ValidationError:  # text pydantic refuses (a lone surrogate): not an item
            continue
        busy = busy or status == "in_progress"
        items.append(item)
    return TodoList(tuple(items))


@dataclass
class Todos:
    """The session's list, and who wants to hear when it changes.

    The todo tool writes it; the planning plugin reads it (reminders, the re-injection after a
    compaction, the progress file); the command line shows it. Thread-safe: read-only tools
    run in parallel (chapter 02), and the todo tool is one.
    """

    current: TodoList = field(default_factory=TodoList)
    writes: int = 0
    """Successful writes so far (a restored list does not count)."""
    listeners: list[Callable[[TodoList], None]] = field(default_factory=list)
    """Called with the new list after every change (the progress file, a display)."""
    problems: list[str] = field(default_factory=list)
    """Listeners that failed, in words, until someone reports them (the planning plugin does,
    as events): a full disk under the progress file must not fail the model's write."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def write(self, items: Sequence[TodoItem]) -> TodoList:
        """Replace the list (the tool's path: the items are already validated)."""
        new = TodoList(tuple(items))
        with self._lock:
            self.current = new
            self.writes += 1
        self._tell(new)
        return new

    def restore(self, todo_list: TodoList) -> None:
        """Put a list back without counting it as a write (a resumed session)."""
        with self._lock:
            self.current = todo_list
        self._tell(todo_list)

    def _tell(self, todo_list: TodoList) -> None:
        for listener in list(self.listeners):
            try:
                listener(todo_list)
            except Exception as error:  # reported, never fatal: the list itself is written
                self.problems.append(f"{type(error).__name__}: {error}")
