"""Tools (chapter 02): definitions, dispatch, workspace builtins, permissions, hooks."""

from harness.tools.base import Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, tool
from harness.tools.workspace import PathEscape, Workspace

__all__ = [
    "PathEscape",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolOutput",
    "ToolRegistry",
    "Workspace",
    "tool",
]
