"""Chapter 02: tools."""

from __future__ import annotations

from pydantic import BaseModel, Field

from harness.tools import Permissions, ToolContext, ToolError, tool


class CountLinesInput(BaseModel):
    path: str = Field(description="The file to count, relative to the workspace root.")


@tool(CountLinesInput, read_only=True)
def count_lines(args: CountLinesInput, context: ToolContext) -> str:
    "Count the lines of a text file in the workspace."
    try:
        real = context.workspace.resolve(args.path)
    except PermissionError as error:  # PathEscape is a PermissionError
        raise ToolError(str(error)) from None
    if not real.is_file():
        raise ToolError(f"file not found: {args.path} (give the path of a file in the workspace)")
    text = real.read_text(encoding="utf-8", errors="replace")
    return f"{len(text.splitlines())} lines"


def project_rules() -> Permissions:
    """Exercise 2: read-only git commands and docs/ edits run, rm never, the rest asks."""
    return Permissions.from_rules(
        "default",
        allow=[
            "bash(git status*)",
            "bash(git diff*)",
            "bash(git log*)",
            "write_file(docs/**)",
            "edit_file(docs/**)",
        ],
        deny=["bash(rm *)"],
    )
