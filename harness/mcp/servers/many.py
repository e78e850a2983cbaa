"""A server with many generated tools, ``many``: the "too many tools" failure and tool search.

Run it with ``python -m harness.mcp.servers.many --tools 150``. The tools are named
``<area>_<verb>`` (``issues_list``, ``invoices_delete``, ...) over 30 areas of a made-up
company's systems and six verbs, and their descriptions and input schemas are sized like a
real server's: ``mcp_server_git`` (the reference git server) lists 12 tools in 6,475
characters of JSON, 540 a tool (from 340 to 1,061); these average about 700. Every call
succeeds and echoes its arguments: the point is the listing, not the work.

The listing is built by ``generated_tools``, a pure function, so a benchmark can use the
same tools without starting a process. The server uses the SDK's low-level ``Server``
rather than ``MCPServer``, because ``MCPServer`` derives each schema from a Python
function's signature and these schemas are generated data.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)

SERVER_NAME = "many"
DEFAULT_TOOL_COUNT = 150

AREAS = (
    "issues", "pulls", "repos", "branches", "commits", "releases", "deployments", "builds",
    "alerts", "metrics", "logs", "traces", "users", "teams", "billing", "invoices", "orders",
    "inventory", "shipments", "customers", "calendar", "mail", "contacts", "files", "wiki",
    "tickets", "secrets", "dns", "databases", "queues",
)  # fmt: skip
"""The made-up systems the tools belong to (30 of them)."""

VERBS = ("list", "get", "search", "create", "update", "delete")
"""What each area's tools do, in the order they are generated."""

_READ_ONLY_VERBS = frozenset({"list", "get", "search"})


def tool_names(count: int) -> list[str]:
    """The first ``count`` tool names: ``issues_list``, ``issues_get``, ... then ``pulls_list``, ...

    Each area comes with its six verbs. Past 180 (30 areas x 6 verbs) the areas repeat with a
    number (``issues2_list``).
    """
    names: list[str] = []
    round_ = 1
    while len(names) < count:
        suffix = "" if round_ == 1 else str(round_)
        for area in AREAS:
            for verb in VERBS:
                names.append(f"{area}{suffix}_{verb}")
        round_ += 1
    return names[:count]


def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def _limit() -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "default": 20,
        "description": "Maximum number of items to return in one page (1-100, default 20).",
    }


def _schema_and_description(area: str, verb: str) -> tuple[dict[str, Any], str]:
    """The input schema and description of ``<area>_<verb>``, shaped like a real server's."""
    item = area.rstrip("s") if area.endswith("s") and not area.endswith("ss") else area
    props: dict[str, Any]
    required: list[str]
    if verb == "list":
        description = (
            f"List {area} in the current workspace, newest first. Returns up to `limit` "
            f"{area} per page with their id, title, state and last-updated time; pass the "
            f"`cursor` from the previous page to continue. Use {area}_get for one full record."
        )
        props = {
            "limit": _limit(),
            "cursor": _string("Opaque cursor from the previous page; omit for the first page."),
            "state": _string(
                "Only items in this state.", enum=["open", "closed", "all"], default="open"
            ),
        }
        required = []
    elif verb == "get":
        description = (
            f"Get one {item} by id, with all its fields, its comments and its history of "
            f"changes. Fails if no {item} has that id."
        )
        props = {
            "id": _string(f"The {item}'s id, as returned by {area}_list or {area}_search."),
            "include_history": {
                "type": "boolean",
                "default": False,
                "description": "Also return the full history of changes (can be long).",
            },
        }
        required = ["id"]
    elif verb == "search":
        description = (
            f"Search {area} by free text and filters. The query matches titles and bodies; "
            f'quote a phrase for an exact match ("connection reset") and prefix a word with '
            f"- to exclude it. Results are ranked by relevance."
        )
        props = {
            "query": _string('The search text, for example: timeout -flaky "login page".'),
            "author": _string("Only items created by this user (login name)."),
            "since": _string("Only items updated at or after this time.", format="date-time"),
            "limit": _limit(),
        }
        required = ["query"]
    elif verb == "create":
        description = (
            f"Create a new {item}. Returns the new {item}'s id and web address. The title is "
            f"required; the body accepts Markdown."
        )
        props = {
            "title": _string(f"A short title for the {item}.", maxLength=200),
            "body": _string("The full text, in Markdown."),
            "labels": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Labels to attach (they must already exist).",
            },
        }
        required = ["title"]
    elif verb == "update":
        description = (
            f"Change fields of an existing {item}. Only the fields you pass are changed; "
            f"the others keep their values."
        )
        props = {
            "id": _string(f"The {item}'s id."),
            "title": _string("The new title.", maxLength=200),
            "body": _string("The new text, in Markdown."),
            "state": _string("The new state.", enum=["open", "closed"]),
        }
        required = ["id"]
    else:  # delete
        description = (
            f"Delete a {item} permanently. This cannot be undone: prefer {area}_update "
            f"with state closed unless the user asked for deletion."
        )
        props = {
            "id": _string(f"The {item}'s id."),
            "confirm": {
                "type": "boolean",
                "description": "Must be true; guards against deleting by accident.",
            },
        }
        required = ["id", "confirm"]
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema, description


def generated_tools(count: int = DEFAULT_TOOL_COUNT) -> list[Tool]:
    """The ``count`` tools the server lists, in a fixed order (deterministic)."""
    if count < 0:
        raise ValueError(f"count must be 0 or more, not {count}")
    tools: list[Tool] = []
    for name in tool_names(count):
        area, verb = name.rsplit("_", 1)
        schema, description = _schema_and_description(area.rstrip("0123456789"), verb)
        read_only = verb in _READ_ONLY_VERBS
        tools.append(
            Tool(
                name=name,
                description=description,
                input_schema=schema,
                annotations=ToolAnnotations(
                    read_only_hint=read_only,
                    destructive_hint=verb == "delete",
                    open_world_hint=False,
                ),
            )
        )
    return tools


def wire_form(tool: Tool) -> dict[str, Any]:
    """``tool`` as it travels in a ``tools/list`` reply (JSON, with the protocol's key names)."""
    return tool.model_dump(by_alias=True, exclude_none=True, mode="json")


def build_server(count: int = DEFAULT_TOOL_COUNT) -> Server[Any]:
    """The ``many`` server listing ``count`` generated tools (not yet running)."""
    tools = generated_tools(count)
    names = {tool.name for tool in tools}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        if params.name not in names:
            text = f"Unknown tool: {params.name}"
            return CallToolResult(content=[TextContent(text=text)], is_error=True)
        arguments = json.dumps(params.arguments or {}, sort_keys=True)
        text = f"{params.name}: done (arguments: {arguments})"
        return CallToolResult(content=[TextContent(text=text)])

    return Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(server: Server[Any]) -> None:
    """Serve ``server`` on stdin and stdout until the client closes stdin."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    """``python -m harness.mcp.servers.many [--tools N]``: serve N generated tools on stdio."""
    parser = argparse.ArgumentParser(prog="python -m harness.mcp.servers.many")
    parser.add_argument(
        "--tools", type=int, default=DEFAULT_TOOL_COUNT, help="how many tools to list"
    )
    args = parser.parse_args(argv)
    if args.tools < 0:
        parser.error("--tools must be 0 or more")
    server = build_server(args.tools)
    print(f"{SERVER_NAME}: MCP server with {args.tools} tools starting", file=sys.stderr)
    anyio.run(serve, server)


if __name__ == "__main__":
    main()
