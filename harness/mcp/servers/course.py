"""The course's project MCP server, ``course``: one small tool per behaviour a harness must handle.

Run it over stdio with ``python -m harness.mcp.servers.course``. It is written with the
official SDK's high-level server API (``MCPServer``): each tool is a typed Python function,
the SDK turns its signature into the tool's input schema, and its ``description`` is what
the model reads to decide when to call it.

The tools, and what each one teaches:

- ``lookup_ticket`` and ``word_count``: ordinary useful tools (read-only, so annotated with
  ``readOnlyHint``); ``word_count`` also returns structured content.
- ``slow``: waits before answering, so a harness needs a timeout.
- ``fail`` and ``flaky``: end with an error result (``is_error``) whose text the model
  should read; ``flaky`` fails every other call, so a retry helps.
- ``big_report``: a result as large as you ask, so a harness needs a cap and a spill file.
- ``crash``: the server process exits in the middle of the call, so a harness needs to
  notice and restart it.

Nothing but the protocol goes to stdout. The SDK logs to stderr, and this module prints one
startup line there too, so a test can show that a server's stderr never reaches the model.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Annotated

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

SERVER_NAME = "course"
CRASH_EXIT_CODE = 3
"""The exit status of the process after ``crash`` (a test can tell it from other exits)."""

TICKETS: dict[str, tuple[str, str, str]] = {
    "T-101": ("open", "ana", "Login page rejects passwords that contain a space."),
    "T-102": ("closed", "ben", "Export to CSV drops the last row when the table has 1000 rows."),
    "T-103": ("open", "chen", "Search is slow (over 5 s) for queries with a leading wildcard."),
    "T-104": ("in review", "ana", "Dark mode: tooltips are unreadable (black on dark grey)."),
}
"""The small built-in ticket table ``lookup_ticket`` reads: id -> (status, assignee, title)."""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


class WordCount(BaseModel):
    """What ``word_count`` returns (the SDK sends it as structured content and as JSON text)."""

    words: int
    lines: int
    characters: int


def build_server() -> MCPServer:
    """The ``course`` server with its tools registered (not yet running)."""
    app: MCPServer = MCPServer(
        SERVER_NAME,
        instructions="The course's demo project server: tickets, text tools and fault drills.",
        log_level="WARNING",
    )
    flaky_calls = 0

    @app.tool(
        description=(
            "Look up a ticket in the project's tracker by its id (for example T-101) and "
            "return its status, assignee and title. Fails with the list of known ids if "
            "the ticket does not exist."
        ),
        annotations=READ_ONLY,
        structured_output=False,
    )
    def lookup_ticket(
        ticket_id: Annotated[str, Field(description="The ticket id, such as T-101.")],
    ) -> str:
        found = TICKETS.get(ticket_id.strip().upper())
        if found is None:
            raise ToolError(f"No ticket {ticket_id!r}. Known tickets: {', '.join(TICKETS)}.")
        status, assignee, title = found
        return f"{ticket_id.strip().upper()} [{status}] assigned to {assignee}: {title}"

    @app.tool(
        description="Count the words, lines and characters of a text.",
        annotations=READ_ONLY,
    )
    def word_count(
        text: Annotated[str, Field(description="The text to count.")],
    ) -> WordCount:
        return WordCount(
            words=len(text.split()), lines=len(text.splitlines()), characters=len(text)
        )

    @app.tool(
        description=(
            "Wait the given number of seconds, then answer. Use it to try out timeouts: a "
            "harness should give up on a call that takes too long."
        ),
        annotations=READ_ONLY,
        structured_output=False,
    )
    async def slow(
        seconds: Annotated[float, Field(ge=0, description="How long to wait, in seconds.")],
    ) -> str:
        await anyio.sleep(seconds)
        return f"Done after waiting {seconds:g} seconds."

    @app.tool(
        description="Always fail with the given reason, as an error result the model can read.",
        annotations=READ_ONLY,
        structured_output=False,
    )
    def fail(
        reason: Annotated[str, Field(description="The error message to fail with.")],
    ) -> str:
        raise ToolError(reason)

    @app.tool(
        description=(
            "A flaky service: the first call fails with a temporary error, the next one "
            "succeeds, and so on, alternating. Retrying once helps."
        ),
        annotations=READ_ONLY,
        structured_output=False,
    )
    def flaky() -> str:
        nonlocal flaky_calls
        flaky_calls += 1
        if flaky_calls % 2 == 1:
            raise ToolError(f"Service temporarily unavailable (call {flaky_calls}). Try again.")
        return f"Service answered (call {flaky_calls})."

    @app.tool(
        description=(
            "Produce a long plain-text report with the given number of lines (about 60 "
            "characters each)."
        ),
        annotations=READ_ONLY,
        structured_output=False,
    )
    def big_report(
        lines: Annotated[int, Field(ge=0, le=1_000_000, description="How many lines.")],
    ) -> str:
        return report_text(lines)

    @app.tool(
        description="Make the server process exit in the middle of this call (a crash drill).",
        structured_output=False,
    )
    def crash() -> str:
        print(f"{SERVER_NAME}: crash() called, exiting now", file=sys.stderr, flush=True)
        # os._exit, not sys.exit: no reply, no cleanup, exactly as a segfault or an OOM kill.
        os._exit(CRASH_EXIT_CODE)

    return app


def report_text(lines: int) -> str:
    """The text ``big_report`` returns: deterministic numbered lines, about 60 characters each."""
    ids = list(TICKETS)
    return "\n".join(
        f"line {n:07d}: ticket {ids[n % len(ids)]} checked, no change since last run"
        for n in range(1, lines + 1)
    )


def main(argv: list[str] | None = None) -> None:
    """Parse the command line (there are no options yet beyond ``--help``) and serve on stdio."""
    argparse.ArgumentParser(prog="python -m harness.mcp.servers.course").parse_args(argv)
    app = build_server()
    print(f"{SERVER_NAME}: MCP server starting on stdio", file=sys.stderr, flush=True)
    app.run("stdio")


if __name__ == "__main__":
    main()
