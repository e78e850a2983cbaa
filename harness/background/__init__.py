"""Background shells (chapter 15): commands that run while the conversation goes on.

* ``keeper`` -- the small process each command runs under, which kills the command's process
  group when the harness goes, however it goes.
* ``processes`` -- real commands under their keepers; ``scripted`` -- stand-ins on the clock.
* ``logs`` -- reading a log: only what is new, never half a UTF-8 character.
* ``shells`` -- :class:`BackgroundShells`, the session's shells: start, read, stop, list.
* ``tools`` -- ``bash`` with ``run_in_background``, ``task_output``, ``task_stop``.
* ``plugin`` -- :class:`BackgroundWork`: the tools, the ``<task-notification>``, the reminder
  after a compaction, the events.

The names below are loaded when first used (PEP 562), as ``harness``'s are: the keeper, run
as a module, imports nothing of the harness.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.background.logs import READ_CAP_CHARS, LogReader
    from harness.background.plugin import (
        BackgroundWork,
        ShellFinished,
        ShellsNotified,
        ShellStarted,
        ShellStopped,
        still_running,
        summary,
        task_notification,
    )
    from harness.background.processes import Ended, Processes
    from harness.background.scripted import Scripted, ScriptedCommand
    from harness.background.shells import (
        LOG_CAP_BYTES,
        BackgroundShells,
        Reading,
        ShellError,
        ShellInfo,
        Spawner,
        counted_ids,
        random_id,
    )
    from harness.background.tools import (
        OUTPUT_DEFAULT_TIMEOUT,
        OUTPUT_MAX_TIMEOUT,
        TASK_OUTPUT_TOOL,
        TASK_STOP_TOOL,
        BackgroundBashInput,
        background_bash_tool,
        background_tools,
        task_output_tool,
        task_stop_tool,
    )

_WHERE = {
    "READ_CAP_CHARS": "logs",
    "LogReader": "logs",
    "BackgroundWork": "plugin",
    "ShellFinished": "plugin",
    "ShellsNotified": "plugin",
    "ShellStarted": "plugin",
    "ShellStopped": "plugin",
    "still_running": "plugin",
    "summary": "plugin",
    "task_notification": "plugin",
    "Ended": "processes",
    "Processes": "processes",
    "Scripted": "scripted",
    "ScriptedCommand": "scripted",
    "LOG_CAP_BYTES": "shells",
    "BackgroundShells": "shells",
    "Reading": "shells",
    "ShellError": "shells",
    "ShellInfo": "shells",
    "Spawner": "shells",
    "counted_ids": "shells",
    "random_id": "shells",
    "OUTPUT_DEFAULT_TIMEOUT": "tools",
    "OUTPUT_MAX_TIMEOUT": "tools",
    "TASK_OUTPUT_TOOL": "tools",
    "TASK_STOP_TOOL": "tools",
    "BackgroundBashInput": "tools",
    "background_bash_tool": "tools",
    "background_tools": "tools",
    "task_output_tool": "tools",
    "task_stop_tool": "tools",
}

__all__ = [
    "LOG_CAP_BYTES",
    "OUTPUT_DEFAULT_TIMEOUT",
    "OUTPUT_MAX_TIMEOUT",
    "READ_CAP_CHARS",
    "TASK_OUTPUT_TOOL",
    "TASK_STOP_TOOL",
    "BackgroundBashInput",
    "BackgroundShells",
    "BackgroundWork",
    "Ended",
    "LogReader",
    "Processes",
    "Reading",
    "Scripted",
    "ScriptedCommand",
    "ShellError",
    "ShellFinished",
    "ShellInfo",
    "ShellStarted",
    "ShellStopped",
    "ShellsNotified",
    "Spawner",
    "background_bash_tool",
    "background_tools",
    "counted_ids",
    "random_id",
    "still_running",
    "summary",
    "task_notification",
    "task_output_tool",
    "task_stop_tool",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.background' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"harness.background.{module}"), name)
    globals()[name] = value
    return value
