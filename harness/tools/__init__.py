"""Tools (chapter 02): definitions, dispatch, workspace builtins, permissions, hooks."""

from harness.tools.base import Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, tool
from harness.tools.builtins import builtin_tools
from harness.tools.dispatch import ToolRunner
from harness.tools.hooks import Hooks, PreToolUseResult, ToolUse
from harness.tools.permissions import (
    Approval,
    ApprovalRequest,
    Deferred,
    Permissions,
    Rule,
    policy,
)
from harness.tools.storage import ResultStorage
from harness.tools.workspace import BadPath, PathEscape, Workspace

__all__ = [
    "Approval",
    "ApprovalRequest",
    "BadPath",
    "Deferred",
    "Hooks",
    "PathEscape",
    "Permissions",
    "PreToolUseResult",
    "ResultStorage",
    "Rule",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolOutput",
    "ToolRegistry",
    "ToolRunner",
    "ToolUse",
    "Workspace",
    "builtin_tools",
    "policy",
    "tool",
]
