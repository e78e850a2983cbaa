"""The conversations chapter 12's exercise checks look at: one session, built as the loop
builds it.

The task is a bug fix in four steps. A reply can write the todo list (``todo_write``), read a
file, or both; a user message answers the calls, some of them declined by the person (an error
result); a compaction leaves a summary with the checklist put back by the real pinned facts
(chapter 05), or keeps the messages and adds the checklist at the end. :func:`list_cases` are
the conversations exercise 2 names one by one; :func:`session_cases` are generated ones, seeded.
"""

from __future__ import annotations

import random

from harness import messages as m
from harness.compaction.pinned import PinnedFacts
from harness.compaction.summary import CONTINUE, SUMMARY_PREAMBLE
from harness.planning.plugin import Planning, list_in
from harness.planning.reminders import todo_reminder
from harness.planning.todos import RESULT_TEXT, TodoList, Todos
from harness.planning.tool import TODO_TOOL, todo_tool
from harness.tools.builtins import builtin_tools

TASK = "Fix the rounding bug in app/tax.py and add a test for it."
PLAN = [
    ("Read app/tax.py", "Reading app/tax.py"),
    ("Fix the rounding in tax()", "Fixing the rounding in tax()"),
    ("Add a test for half-cent amounts", "Adding a test for half-cent amounts"),
    ("Run the test suite", "Running the test suite"),
]
SYSTEM = (
    "You are a coding agent in a billing service's repository. Amounts are integers of cents; "
    "never use floats for money. Run the tests after every change. "
) * 40  # well above the cache's minimum, as a real system prompt is


def items(*statuses: str) -> list[dict[str, str]]:
    """The plan's first ``len(statuses)`` items with these statuses, as a todo_write input."""
    return [
        {"content": content, "status": status, "activeForm": active}
        for (content, active), status in zip(PLAN, statuses, strict=False)
    ]


def write(n: int, *statuses: str, then_read: str | None = None) -> m.MessageDict:
    """A reply that writes the list (call ``toolu_NN``), and perhaps reads a file after."""
    blocks = [
        m.text("Updating my todo list."),
        m.tool_use(f"toolu_{n:02d}", TODO_TOOL, {"todos": items(*statuses)}),
    ]
    if then_read is not None:
        blocks.append(m.tool_use(f"toolu_{n + 1:02d}", "read_file", {"path": then_read}))
    return m.assistant(blocks)


def answered(*ids: int, refused: tuple[int, ...] = (), explicit: bool = False) -> m.MessageDict:
    """The user message with the results of calls ``ids`` (those in ``refused`` are errors:
    the person declined them; ``explicit``: a success says ``"is_error": false``, as Claude
    Code's transcripts do)."""
    out = []
    for n in ids:
        if n in refused:
            error = f"Permission to use {TODO_TOOL} was denied: the user declined this call."
            out.append(m.tool_result(f"toolu_{n:02d}", error, is_error=True))
        else:
            block = m.tool_result(f"toolu_{n:02d}", RESULT_TEXT)
            if explicit:
                block["is_error"] = False
            out.append(block)
    return m.user(out)


def read(n: int, path: str) -> list[m.MessageDict]:
    """A reply that reads one file, and its result."""
    return [
        m.assistant([m.tool_use(f"toolu_{n:02d}", "read_file", {"path": path})]),
        m.user([m.tool_result(f"toolu_{n:02d}", f"1  # {path}\n2  def tax(cents): ...")]),
    ]


def put_back(conversation: list[m.MessageDict], todo_list: TodoList) -> list[m.MessageDict]:
    """``conversation`` with the checklist put back at its end, as every compaction tier does
    (a session's ``Planning`` pins its list; chapter 05's pinned facts put it back)."""
    pinned = PinnedFacts()
    pinned.add("Amounts are integers of cents.", "CLAUDE.md")
    todos = Todos()
    Planning(todos=todos, pinned=pinned, reminder_turns=None)
    todos.restore(todo_list)
    return pinned.put_back(conversation, system=None).messages


def compacted(todo_list: TodoList, summary: str) -> list[m.MessageDict]:
    """What a full compaction leaves: one user message, the summary, the pinned facts put
    back (the checklist among them), and the instruction to go on."""
    (kept,) = put_back([m.user([m.text(SUMMARY_PREAMBLE + summary)])], todo_list)
    return [m.user([*m.blocks(kept), m.text(CONTINUE)])]


TOOLS = [*(t.definition() for t in builtin_tools()), todo_tool(Todos()).definition()]
REMINDER = todo_reminder(TodoList.of(items("completed", "in_progress", "pending", "pending")))


def session(turns: int) -> list[m.MessageDict]:
    """The agent's conversation after ``turns`` replies with tool calls (``turns`` >= 1): it
    ends on the user message with the last reply's results."""
    out: list[m.MessageDict] = [m.user(TASK)]
    out += [write(1, "in_progress", "pending", "pending", "pending", then_read="app/tax.py")]
    out += [answered(1, 2)]
    for turn in range(1, turns):
        n = 2 * turn + 1
        out += read(n, f"app/module_{turn:02d}.py")
    return out


def list_cases() -> list[tuple[str, list[m.MessageDict]]]:
    """(what, the conversation); the expected list is ``list_in``'s."""
    summary = "The user asked to fix the rounding bug in app/tax.py; tax() is read and fixed."
    earlier = TodoList.of(items("completed", "completed", "in_progress", "pending"))
    newer = TodoList.of(items("completed", "completed", "completed", "in_progress"))
    start = [m.user(TASK)]
    one = [*start, write(1, "in_progress", "pending", "pending", "pending"), answered(1)]
    two = [
        *one,
        *read(2, "app/tax.py"),
        write(3, "completed", "in_progress", "pending", "pending", then_read="tests/test_tax.py"),
        answered(3, 4, explicit=True),
    ]
    return [
        ("a conversation where the model wrote its list once", one),
        ("a conversation with no todo_write call and no checklist", [*start, *read(1, "app")]),
        ("two writes (the second, later, wins)", two),
        (
            "two writes, then a third the user declined (its result is an error: the list "
            "stays as the second wrote it)",
            [
                *two,
                write(5, "completed", "completed", "in_progress", "pending"),
                answered(5, refused=(5,)),
            ],
        ),
        (
            "two writes in one reply, both taken (the second is later: it wins)",
            [
                *one,
                m.assistant(
                    [
                        m.tool_use("toolu_02", TODO_TOOL, {"todos": items("completed")}),
                        m.tool_use("toolu_03", TODO_TOOL, {"todos": items("in_progress")}),
                    ]
                ),
                answered(2, 3),
            ],
        ),
        (
            "two writes in one reply, the second declined by the user (the first stands)",
            [
                *one,
                m.assistant(
                    [
                        m.tool_use("toolu_02", TODO_TOOL, {"todos": items("completed")}),
                        m.tool_use("toolu_03", TODO_TOOL, {"todos": items("in_progress")}),
                    ]
                ),
                answered(2, 3, refused=(3,)),
            ],
        ),
        (
            "a transcript edited by hand: the latest write's input has two items in progress "
            "(no longer valid), its result says it was taken (the earlier list stands)",
            [*two, write(5, "completed", "in_progress", "in_progress"), answered(5)],
        ),
        (
            "a compacted conversation: only the checklist put back holds the list",
            compacted(earlier, summary),
        ),
        (
            "a write after the checklist was put back (the write is later: it wins)",
            [
                *compacted(earlier, summary),
                write(7, "completed", "completed", "completed", "in_progress"),
                answered(7),
            ],
        ),
        (
            "a checklist put back at the end, after the last write (it is later: it wins)",
            put_back(two, newer),
        ),
    ]


_STEP_NAMES = {
    "write": "a write",
    "refused": "a write the user declined",
    "edited": "a write edited by hand",
    "read": "a read",
    "full": "a full compaction",
    "kept": "a compaction that kept the messages",
}


def session_cases(count: int = 40, seed: int = 12) -> list[tuple[str, list[m.MessageDict]]]:
    """Generated sessions: writes, refused writes, edited inputs, reads, and compactions of
    both kinds (a full one that leaves the summary, one that keeps the messages and adds the
    checklist at the end), in a seeded random order."""
    rng = random.Random(seed)
    out = []
    for number in range(1, count + 1):
        conversation: list[m.MessageDict] = [m.user(TASK)]
        steps: list[str] = []
        n = 1
        for _ in range(rng.randint(1, 9)):
            kind = rng.choice(["write", "write", "refused", "edited", "read", "full", "kept"])
            held = list_in(conversation)
            if kind in ("full", "kept") and held is None:
                kind = "read"
            statuses = [rng.choice(["completed", "pending"]) for _ in PLAN]
            statuses[rng.randrange(len(PLAN))] = "in_progress"
            if kind == "edited":  # no longer valid: two items or more in progress
                statuses = ["in_progress"] * len(PLAN)
            if kind in ("write", "refused", "edited"):
                also = "app/tax.py" if rng.random() < 0.5 else None
                conversation.append(write(n, *statuses, then_read=also))
                ids = (n, n + 1) if also else (n,)
                refused = (n,) if kind == "refused" else ()
                conversation.append(answered(*ids, refused=refused, explicit=rng.random() < 0.5))
            elif kind == "read":
                conversation += read(n, f"app/module_{n:02d}.py")
            elif kind == "full" and held is not None:
                conversation = compacted(held, f"Work so far on the tax bug (step {n}).")
            elif held is not None:
                conversation = put_back(conversation, held)
            steps.append(_STEP_NAMES[kind])
            n += 2
        out.append((f"generated session {number} ({', '.join(steps)})", conversation))
    return out


__all__ = [
    "PLAN",
    "REMINDER",
    "SYSTEM",
    "TASK",
    "TOOLS",
    "answered",
    "compacted",
    "items",
    "list_cases",
    "put_back",
    "read",
    "session",
    "session_cases",
    "write",
]
