"""Two tiny read-only tools the loop and dispatch tests share."""

from __future__ import annotations

from pydantic import BaseModel

from harness.tools import ToolContext, ToolError, tool


class EchoInput(BaseModel):
    text: str


class CountInput(BaseModel):
    n: int


@tool(EchoInput, read_only=True)
def echo(args: EchoInput, context: ToolContext) -> str:
    """Say the text back."""
    return args.text


@tool(CountInput, read_only=True)
def count(args: CountInput, context: ToolContext) -> str:
    """Count up to n."""
    if args.n < 0:
        raise ToolError("n must not be negative")
    return " ".join(str(i) for i in range(1, args.n + 1))
