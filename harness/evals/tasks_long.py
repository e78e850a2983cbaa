"""A long task over a small window: review 10 modules, one section each in REVIEW.md.

Each module is about 6K tokens; the window is 60K, of which the harness's prompt takes 3K
and the auto-compact reserve 33K. Reading a module is a result microcompact can clear, but
only once ten are clearable, and ten modules already fill the window. So the
conversation must be compacted as it goes: auto-compact does it at its threshold, every few
modules, with room to spare. Without it, only error recovery is left, and it compacts at the
window's very end: each time the API refuses a prompt as too long, or a reply runs into the
end of the window (``model_context_window_exceeded``: cut, never an answer), it compacts and
asks again. The task is still done, but every few modules a request fails first, and the
summary is made from a conversation at the window's limit. The model keeps a running note
("Running total after module_07.py: 19 TODO lines"), as a careful model does, so a
compaction that keeps the note loses nothing.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path

from harness import messages as m
from harness.evals.policy import last_match, new_results
from harness.evals.trial import EvalTask, file_text
from harness.model.scripted import Reply, Request, ToolCall

MODULES = 10
LINES = 900
"""Lines per module (our choice: about 6K tokens each)."""
WINDOW = 60_000
"""Our choice: the prompt (3K) and the auto-compact reserve (33K) leave 24K for the work,
about three modules; all ten would take 62K."""
END = "<!-- end of review -->"
_NOTE = re.compile(r"Running total after module_(\d+)\.py: (\d+) TODO lines")


def _module(k: int) -> str:
    rng = random.Random(k)
    lines = [f'"""Module {k}: part of the billing service."""', ""]
    for n in range(LINES):
        roll = rng.random()
        if roll < 0.04:
            lines.append(f"    # TODO: handle the {rng.choice(['retry', 'refund', 'tax'])} case")
        elif roll < 0.12:
            lines.append(
                f"def charge_{k}_{n}(account, amount_{n}, currency='EUR', *, dry_run=False):"
            )
        else:
            lines.append(f"    total_{n} = amount_{n} * rate_{rng.randint(1, 9)}  # step {n}")
    return "\n".join(lines) + "\n"


def todo_count(text: str) -> int:
    """TODO lines in a module's text."""
    return sum("TODO" in line for line in text.splitlines())


def _setup(workspace: Path) -> None:
    (workspace / "src").mkdir()
    for k in range(1, MODULES + 1):
        (workspace / "src" / f"module_{k:02d}.py").write_text(_module(k))
    (workspace / "REVIEW.md").write_text(f"# Review of src/\n\n{END}\n")


def _section(k: int, text: str) -> str:
    lines = [line.split("\t", 1)[-1] for line in text.splitlines()]
    functions = [line.removesuffix(":") for line in lines if line.startswith("def ")]
    todos = [line.strip().removeprefix("# TODO: ") for line in lines if "TODO" in line]
    return "\n".join(
        [
            f"## module_{k:02d}.py",
            f"- TODO lines: {len(todos)}",
            *(f"  - {todo}" for todo in todos),
            f"- functions ({len(functions)}):",
            *(f"  - `{signature}`" for signature in functions),
            "",
        ]
    )


def _policy(request: Request) -> Reply:
    note = last_match(request.messages, _NOTE)
    done, total = (int(note[1]), int(note[2])) if note else (0, 0)
    for call in new_results(request):
        if call.name == "write_file" and call.succeeded:
            return Reply(text=f"Reviewed {MODULES} modules: {total} TODO lines in all.")
        found = re.search(r"module_(\d+)\.py$", str(call.input.get("path", "")))
        if call.name != "read_file" or not call.succeeded or not found:
            continue
        if int(found[1]) != done + 1:
            continue
        done, count = done + 1, todo_count(str(call.result))
        total += count
        edit = {
            "path": "REVIEW.md",
            "old_string": END,
            "new_string": _section(done, str(call.result)) + "\n" + END,
        }
        text = f"module_{done:02d}.py: {count}. {_note(done, total)}"
        following: tuple[ToolCall, ...] = ()
        if done < MODULES:
            following = (ToolCall("read_file", {"path": f"src/module_{done + 1:02d}.py"}),)
        return Reply(text=text, tool_calls=(ToolCall("edit_file", edit), *following))
    # Each reply restates the note: a summary quotes the last words, whatever they were.
    note_text = _note(done, total) if done else "Starting with the first module."
    if done >= MODULES:
        write = ToolCall("write_file", {"path": "TODO_COUNT.txt", "content": f"{total}\n"})
        return Reply(text=f"{note_text} All reviewed; writing the total.", tool_calls=(write,))
    read = ToolCall("read_file", {"path": f"src/module_{done + 1:02d}.py"})
    return Reply(text=f"{note_text} Reading the next module.", tool_calls=(read,))


def _note(done: int, total: int) -> str:
    return f"Running total after module_{done:02d}.py: {total} TODO lines."


def _check(workspace: Path, _conversation: Sequence[m.MessageDict]) -> str | None:
    review = file_text(workspace, "REVIEW.md")
    total = 0
    for k in range(1, MODULES + 1):
        want = todo_count(_module(k))
        total += want
        times = review.count(f"## module_{k:02d}.py\n- TODO lines: {want}\n")
        if times != 1:
            return f"REVIEW.md has {times} right sections for module_{k:02d}.py, not 1"
    answer = file_text(workspace, "TODO_COUNT.txt").strip()
    if not answer:
        return "TODO_COUNT.txt was not written"
    if answer != str(total):
        return f"TODO_COUNT.txt says {answer[:40]!r}, the modules hold {total}"
    return None


LONG_TASK = EvalTask(
    name="long task in a small window",
    description=f"Review {MODULES} modules of 6K tokens into REVIEW.md, in a 60K window.",
    prompt=(
        f"Review src/module_01.py to src/module_{MODULES}.py, one at a time: for each, add a "
        "section to REVIEW.md with its TODO lines and its functions. Then write the total "
        "number of TODO lines to TODO_COUNT.txt."
    ),
    setup=_setup,
    policy=_policy,
    check=_check,
    needs=("no auto-compact",),
    window=WINDOW,
)

__all__ = ["LONG_TASK", "MODULES", "todo_count"]
