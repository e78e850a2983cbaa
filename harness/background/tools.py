"""The model's side of background shells: ``bash`` with ``run_in_background``, ``task_output``
and ``task_stop``.

Claude Code's Bash tool takes ``run_in_background`` (and a ``description`` of the command);
with it, the call returns at once: "Command running in background with ID: <id>. Output is
being written to: <path>". Its ``TaskOutput`` tool (once ``BashOutput``) reads a task's
output, waiting for it to finish unless ``block`` is false; ``TaskStop`` (once ``KillShell``)
stops it. Ours are the same three, with the course's names and units:

* ``bash`` keeps its name, chapter 02's fields and chapter 02's path for a command in the
  foreground, unchanged; :class:`BackgroundBashInput` only adds two fields;
* ``task_output`` takes ``timeout`` in seconds like our ``bash`` (Claude Code: milliseconds,
  default 30,000, at most 600,000) and returns only what is new since the last read, as
  ``BashOutput`` did (``TaskOutput`` returns all of it, the last 32,000 characters);
* ``task_stop`` takes ``task_id`` (Claude Code also takes the deprecated ``shell_id``).

``task_output`` and ``task_stop`` are marked read-only: they change nothing but the state of
shells the model itself started, and Claude Code asks no permission for them either (both
are concurrency-safe there). ``bash`` asks as it always did, background or not.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from harness.background.shells import BackgroundShells, ShellError
from harness.tools.base import Tool, ToolContext, ToolError, ToolInput, tool
from harness.tools.shell import BashInput
from harness.tools.shell import bash as chapter02_bash

TASK_OUTPUT_TOOL = "task_output"
TASK_STOP_TOOL = "task_stop"
OUTPUT_DEFAULT_TIMEOUT = 30.0
"""Seconds ``task_output`` waits by default (Claude Code's TaskOutput: 30,000 ms)."""
OUTPUT_MAX_TIMEOUT = 600.0
"""The longest it may wait (Claude Code's: 600,000 ms)."""

BACKGROUND_NOTE = (
    "You can use the run_in_background parameter to run the command in the background. Only "
    "use this if you don't need the result immediately and are OK being notified when the "
    "command completes later. You do not need to check the output right away - you'll be "
    "notified when it finishes. You do not need to use '&' at the end of the command when "
    "using this parameter. A background command has no timeout: it runs until it ends or "
    "task_stop stops it; task_output reads what it wrote since your last read."
)
"""Claude Code's note on ``run_in_background`` in its Bash prompt, and what is ours."""


class BackgroundBashInput(BashInput):
    """Chapter 02's fields, and Claude Code's two more."""

    description: str = Field(
        default="",
        description="Clear, concise description of what this command does in active voice "
        "(5-10 words), e.g. 'Run the test suite'.",
    )
    run_in_background: bool = Field(
        default=False,
        description="Set to true to run this command in the background. Use task_output to "
        "read the output later.",
    )


class TaskOutputInput(ToolInput):
    task_id: str = Field(description="The task ID to get output from")
    block: bool = Field(default=True, description="Whether to wait for completion")
    timeout: float = Field(
        default=OUTPUT_DEFAULT_TIMEOUT,
        ge=0,
        le=OUTPUT_MAX_TIMEOUT,
        description=f"Max wait time in seconds (default {OUTPUT_DEFAULT_TIMEOUT:g}, at most "
        f"{OUTPUT_MAX_TIMEOUT:g})",
    )


class TaskStopInput(ToolInput):
    task_id: str = Field(description="The ID of the background task to stop")


def background_bash_tool(shells: BackgroundShells) -> Tool[BackgroundBashInput]:
    """``bash``, with ``run_in_background``: commands in the foreground run as chapter 02
    runs them (or as stand-ins, with a scripted spawner); in the background, by ``shells``."""

    def run_bash(args: BackgroundBashInput, context: ToolContext) -> str:
        if not args.run_in_background:
            return shells.foreground(args, context)
        try:
            cwd = context.workspace.resolve(args.cwd)
        except (PermissionError, ValueError) as error:
            raise ToolError(str(error)) from None
        if not cwd.is_dir():
            raise ToolError(f"cwd is not a directory in the workspace: {args.cwd}")
        try:
            info = shells.start(
                args.command,
                cwd=cwd,
                workspace=context.workspace.root,
                description=args.description,
                tool_use_id=context.tool_use_id,
            )
        except (OSError, ValueError, ShellError) as error:
            raise ToolError(f"The command could not start in the background: {error}") from None
        # Claude Code's words for a command started with run_in_background.
        return (
            f"Command running in background with ID: {info.task_id}. "
            f"Output is being written to: {info.log}"
        )

    description = f"{chapter02_bash.description} {BACKGROUND_NOTE}"
    return Tool("bash", description, BackgroundBashInput, run_bash)


def task_output_tool(shells: BackgroundShells) -> Tool[TaskOutputInput]:
    """``task_output``: a background shell's status and its output since the last read."""

    def task_output(args: TaskOutputInput, context: ToolContext) -> str:
        try:
            if args.block:
                shells.wait(args.task_id, args.timeout)
            reading = shells.read_new(args.task_id)
        except ShellError as error:
            raise ToolError(str(error)) from None
        except OSError as error:  # the log is gone, or no longer the harness's own file
            raise ToolError(f"The output of {args.task_id} could not be read: {error}") from None
        info = reading.shell
        if info.status != "running":
            retrieval = "success"
        else:
            retrieval = "timeout" if args.block else "not_ready"
        # Claude Code's TaskOutput result, tag for tag.
        parts = [
            f"<retrieval_status>{retrieval}</retrieval_status>",
            f"<task_id>{info.task_id}</task_id>",
            "<task_type>local_bash</task_type>",
            f"<status>{info.status}</status>",
        ]
        if info.exit_code is not None:
            parts.append(f"<exit_code>{info.exit_code}</exit_code>")
        if reading.output.strip():
            parts.append(f"<output>\n{reading.output.rstrip()}\n</output>")
        return "\n\n".join(parts)

    text = (
        "Retrieves output from a running or completed background shell (started by bash with "
        "run_in_background): its status, exit code, and the output written since your last "
        "read. Use block=true (the default) to wait for it to finish, up to timeout seconds; "
        "block=false to check at once. You are notified when a background shell finishes, so "
        "you do not need to poll."
    )
    return Tool(TASK_OUTPUT_TOOL, text, TaskOutputInput, task_output, read_only=True)


def task_stop_tool(shells: BackgroundShells) -> Tool[TaskStopInput]:
    """``task_stop``: kill a background shell and every process it started."""

    @tool(TaskStopInput, name=TASK_STOP_TOOL, read_only=True)
    def task_stop(args: TaskStopInput, context: ToolContext) -> str:
        """Stops a running background task by its ID. Takes a task_id parameter identifying
        the task to stop. Returns a success or failure status. Use this tool when you need to
        terminate a long-running task."""
        try:
            info = shells.stop(args.task_id)
        except ShellError as error:
            raise ToolError(str(error)) from None
        # Claude Code's TaskStop answers with this JSON.
        said: dict[str, Any] = {
            "message": f"Successfully stopped task: {info.task_id} ({info.command})",
            "task_id": info.task_id,
            "task_type": "local_bash",
            "command": info.command,
        }
        return json.dumps(said, ensure_ascii=False)

    return task_stop


def background_tools(shells: BackgroundShells) -> list[Tool[Any]]:
    """The three tools, in the order they are offered: ``bash``, ``task_output``,
    ``task_stop``."""
    return [background_bash_tool(shells), task_output_tool(shells), task_stop_tool(shells)]
