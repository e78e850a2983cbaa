"""The todo tool: the model writes its whole list; the harness checks it and keeps it.

Its description follows what Claude Code's ``TodoWrite`` asks of the model (use it for work of
three steps or more, one item in progress at a time, mark an item completed as soon as it
is done, never batch completions), in our own words. Its answer is Claude Code's observed one:
the list is not echoed back, since the model has just written it.
"""

from __future__ import annotations

from harness.planning.todos import RESULT_TEXT, Todos, TodoWriteInput
from harness.tools.base import Tool, ToolContext

TODO_TOOL = "todo_write"

DESCRIPTION = (
    "Write your todo list for the current task: the whole list every time, in order, each "
    "item with its content (imperative: 'Run the tests'), its activeForm (as it is being "
    "done: 'Running the tests') and a status (pending, in_progress, completed). Use it for "
    "any task of three steps or more: write the list before you start, keep exactly one item "
    "in_progress, and mark an item completed as soon as it is done (not in batches later). "
    "The list survives compaction and resumes; it is how you, and the user, know what is "
    "done and what is left."
)


def todo_tool(todos: Todos) -> Tool[TodoWriteInput]:
    """The ``todo_write`` tool, writing to ``todos``.

    Marked read-only: it changes nothing in the workspace, only the session's list, so it runs
    in plan mode and beside other read-only calls (``Todos`` is thread-safe).
    """

    def write(args: TodoWriteInput, context: ToolContext) -> str:
        todos.write(args.todos)
        return RESULT_TEXT

    return Tool(TODO_TOOL, DESCRIPTION, TodoWriteInput, write, read_only=True)
