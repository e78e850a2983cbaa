"""A server that misbehaves on purpose, one fault at a time, so a harness can be tested on each.

Run it with ``python -m harness.mcp.servers.hostile --fault NAME`` (``--help`` lists them).
Every fault but the two that never serve also lists ``echo``, a tool that works, so a test
can show the rest of the server is still usable:

- ``exit-at-start``: writes a reason to stderr and exits with status 1 before speaking.
- ``hang-at-start``: reads its input but never answers ``initialize``.
- ``garbage-stdout``: prints lines that are not JSON-RPC on stdout before it starts serving,
  and one more before every reply.
- ``hang-on-call``: its ``hang`` tool never returns.
- ``crash-on-call``: its ``crash`` tool makes the process exit in the middle of the call.
- ``huge-result``: its ``huge`` tool returns ``--size`` bytes of text (5 MB by default).
- ``bad-tool-names``: lists names with spaces, slashes, dots, non-ASCII letters, a
  200-character name, an empty name, and one name twice.
- ``bad-schemas``: lists object schemas that are invalid JSON Schema, enormous, or whose
  ``$ref`` recurse, loop or point at nothing.
- ``schema-not-object``: lists input schemas that are not object schemas at all (the SDK's
  client rejects the whole listing).
- ``flood-stderr``: writes ``--size`` bytes to stderr at start (4 MB by default) and again on
  every call of its ``shout`` tool.
- ``wrong-content``: its tools return a content block of an unknown type, an image whose
  data is not base64, and an image of a media type the API does not take.

Most faults are served by the SDK's low-level ``Server`` (``MCPServer`` would refuse a
duplicate name). Three are served by a minimal hand-written JSON-RPC loop, because the SDK's
server checks every result against the protocol's types before sending it and keeps stray
output off stdout while it serves: ``garbage-stdout``, ``schema-not-object`` and
``wrong-content`` write what a server written without the SDK could write. The start-up
faults happen before any of that.

Everything is deterministic; the one random thing, the garbage lines, comes from ``--seed``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
from collections.abc import Iterator
from typing import Any

import anyio

FAULTS = (
    "exit-at-start",
    "hang-at-start",
    "garbage-stdout",
    "hang-on-call",
    "crash-on-call",
    "huge-result",
    "bad-tool-names",
    "bad-schemas",
    "schema-not-object",
    "flood-stderr",
    "wrong-content",
)
"""Every fault ``--fault`` accepts."""

SERVER_NAME = "hostile"
EXIT_AT_START_STATUS = 1
CRASH_STATUS = 7
"""The exit status after ``crash`` (a test can tell it from other exits)."""
DEFAULT_SIZES = {"huge-result": 5_000_000, "flood-stderr": 4_000_000}
"""Bytes of text for the faults that take ``--size``."""
GARBAGE_LINES = 5
"""How many lines of garbage ``garbage-stdout`` prints before serving."""

LONG_NAME = "very_long_tool_name_" + "x" * 180
"""A 200-character tool name (the API and the MCP spec allow at most 128 characters)."""
BAD_TOOL_NAMES = (
    "has space",
    "slash/name",
    "dot.name",
    "ünïcödé_tool",
    "工具",
    LONG_NAME,
    "",
    "duplicate",
    "duplicate",
)
"""What ``bad-tool-names`` lists (``echo`` too), in this order."""

ENORMOUS_PROPERTIES = 2_000
"""How many properties the enormous schema of ``bad-schemas`` has (about 170 KB of JSON)."""


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


ECHO: dict[str, Any] = {
    "name": "echo",
    "description": "Return the text you send (this tool works, whatever the fault).",
    "inputSchema": _object({"text": {"type": "string"}}, ["text"]),
}
NO_ARGUMENTS = _object({})


def bad_schemas() -> dict[str, dict[str, Any]]:
    """The input schemas ``bad-schemas`` lists, by tool name.

    Each is an object schema, as the protocol requires, so an SDK client accepts the listing;
    what is wrong is inside.
    """
    enormous = {
        f"field_{i:04d}": {"type": "string", "description": f"Setting number {i} of the form."}
        for i in range(ENORMOUS_PROPERTIES)
    }
    return {
        # Not valid JSON Schema: an unknown type name and a "minimum" that is not a number.
        "invalid_schema": _object({"count": {"type": "integr", "minimum": "zero"}}, ["count"]),
        "enormous_schema": _object(enormous),
        # A recursive type: legal, but inlining its references never ends.
        "recursive_ref": {
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/node"}},
            "$defs": {
                "node": _object({"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}})
            },
        },
        # A pure cycle, a -> b -> a, which no resolver can finish.
        "ref_cycle": {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/a"}},
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        },
        # A reference to nothing.
        "dangling_ref": _object({"x": {"$ref": "#/$defs/missing"}}),
    }


NON_OBJECT_SCHEMAS: dict[str, dict[str, Any]] = {
    "array_schema": {"type": "array", "items": {"type": "string"}},
    "no_type_schema": {"properties": {"x": {"type": "string"}}},
    "required_not_a_list": {"type": "object", "properties": {}, "required": "x"},
}
"""What ``schema-not-object`` lists: schemas that break the protocol's own rule (an input
schema is an object schema, with ``required`` a list), by tool name."""


def listed_tools(fault: str) -> list[dict[str, Any]]:
    """The raw ``tools/list`` entries of a serving fault, ``echo`` first."""
    tools = [ECHO]
    if fault == "bad-tool-names":
        tools += [
            {"name": name, "description": "A tool with a bad name.", "inputSchema": NO_ARGUMENTS}
            for name in BAD_TOOL_NAMES
        ]
    elif fault in ("bad-schemas", "schema-not-object"):
        schemas = bad_schemas() if fault == "bad-schemas" else NON_OBJECT_SCHEMAS
        tools += [
            {"name": name, "description": "A tool with a bad schema.", "inputSchema": schema}
            for name, schema in schemas.items()
        ]
    else:
        extra = {
            "garbage-stdout": [],
            "hang-on-call": ["hang"],
            "crash-on-call": ["crash"],
            "huge-result": ["huge"],
            "flood-stderr": ["shout"],
            "wrong-content": ["unknown_type", "bad_base64", "unsupported_media", "mixed"],
        }[fault]
        tools += [
            {"name": name, "description": f"The {fault} fault.", "inputSchema": NO_ARGUMENTS}
            for name in extra
        ]
    return tools


def huge_text(size: int) -> str:
    """``size`` characters of numbered lines (ASCII, so also ``size`` bytes)."""
    line = "0000000 the quick brown fox jumps over the lazy dog, again and again\n"
    count = size // len(line) + 1
    text = "".join(f"{n:07d}{line[7:]}" for n in range(count))
    return text[:size]


def garbage_lines(seed: int) -> Iterator[str]:
    """Endless lines that are not JSON-RPC (most not JSON at all), chosen by ``seed``."""
    rng = random.Random(seed)
    while True:
        kind = rng.randrange(5)
        if kind == 0:
            yield "Starting server... " + "".join(rng.choices("abcdef0123456789", k=12))
        elif kind == 1:
            yield "{not json: " + str(rng.randrange(10**6))
        elif kind == 2:
            yield '{"hello": "a JSON object, but not JSON-RPC"}'
        elif kind == 3:
            yield "DEBUG " + "=" * rng.randrange(5, 40)
        else:
            yield "\x1b[31mcoloured log line\x1b[0m"


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    """A raw ``CallToolResult`` with one text block (``resultType``: a 2026-07-28 session
    requires it, the handshake-era one ignores it)."""
    return {
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
        "resultType": "complete",
    }


# A 1x1 transparent PNG, as base64.
_PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

WRONG_CONTENT: dict[str, list[dict[str, Any]]] = {
    "unknown_type": [{"type": "video", "url": "https://example.invalid/clip.mp4"}],
    "bad_base64": [{"type": "image", "data": "this is *not* base64!", "mimeType": "image/png"}],
    "unsupported_media": [{"type": "image", "data": _PNG_1X1, "mimeType": "image/tiff"}],
    "mixed": [
        {"type": "text", "text": "Here is the chart:"},
        {"type": "hologram", "data": "?"},
    ],
}
"""What each ``wrong-content`` tool returns as its content blocks."""


def reply(fault: str, name: str, arguments: dict[str, Any], size: int) -> dict[str, Any]:
    """The raw result of tool ``name`` of ``fault``'s server (``hang`` never gets here)."""
    if name not in {tool["name"] for tool in listed_tools(fault)}:
        return text_result(f"Unknown tool: {name}", is_error=True)
    if name == "echo":
        return text_result(str(arguments.get("text", "")))
    if name == "crash":
        print(f"{SERVER_NAME}: crashing in the middle of a call", file=sys.stderr, flush=True)
        os._exit(CRASH_STATUS)
    if name == "huge":
        return text_result(huge_text(size))
    if name == "shout":
        _flood_stderr(size)
        return text_result(f"wrote {size} bytes to stderr")
    if name in WRONG_CONTENT:
        return {"content": WRONG_CONTENT[name], "isError": False, "resultType": "complete"}
    return text_result(f"called {name!r}")  # the bad-names and bad-schemas tools


def _flood_stderr(size: int) -> None:
    chunk = "stderr flood " * 80 + "\n"
    written = 0
    while written < size:
        part = chunk[: size - written]
        sys.stderr.write(part)
        written += len(part)
    sys.stderr.flush()


def _hang_at_start() -> None:
    # Read (so the client's writes never block) but never answer; exit when stdin closes,
    # which is how a client that gives up says goodbye.
    while sys.stdin.buffer.read(65536):
        pass


RAW_FAULTS = frozenset({"garbage-stdout", "schema-not-object", "wrong-content"})
"""The faults served by ``serve_raw`` (hand-written JSON-RPC) rather than the SDK."""


def serve_sdk(fault: str, size: int) -> None:
    """Serve ``fault``'s tools with the SDK's low-level ``Server`` until stdin closes."""
    # Imported here: the start-up faults must not pay for (or depend on) the SDK.
    from mcp.server import Server, ServerRequestContext
    from mcp.server.stdio import stdio_server
    from mcp.types import CallToolRequestParams, PaginatedRequestParams

    tools = listed_tools(fault)

    # The handlers return raw dictionaries (hence ``Any``): the low-level server checks
    # them against the protocol's types, but names are just strings to it, so duplicate
    # and badly formed names get through.
    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> Any:
        # ttlMs, cacheScope, resultType: a 2026-07-28 session (the SDK's client asks for it first)
        # requires them on a listing; the handshake-era one ignores them.
        return {"tools": tools, "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}

    async def call_tool(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> Any:
        if fault == "hang-on-call" and params.name == "hang":
            await anyio.sleep_forever()
        return reply(fault, params.name, params.arguments or {}, size)

    server: Server[Any] = Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


def serve_raw(fault: str, size: int, garbage: Iterator[str] | None = None) -> None:
    """Serve ``fault``'s tools with a minimal hand-written JSON-RPC loop until stdin closes.

    The SDK's server cannot send these faults: it checks every result against the
    protocol's types before writing it (a schema without ``"type": "object"`` or a content
    block of an unknown type becomes an "invalid result" error), and while it serves it
    points file descriptor 1 at stderr, so nothing else can write to the wire. A server
    written without the SDK has neither guard, so this loop writes what it likes. It
    answers one request at a time, which is enough: these tools return at once.
    """

    def send(message: dict[str, Any]) -> None:
        if garbage is not None:  # a line of garbage before every reply (garbage-stdout)
            sys.stdout.write(next(garbage) + "\n")
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if not isinstance(request, dict) or "id" not in request:
            continue  # a notification (initialized, cancelled): nothing to answer
        method = request.get("method")
        params = request.get("params") or {}
        result: dict[str, Any] | None = None
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": SERVER_NAME, "version": "0"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": listed_tools(fault)}
        elif method == "tools/call":
            result = reply(fault, str(params.get("name")), params.get("arguments") or {}, size)
        if result is None:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            send({"jsonrpc": "2.0", "id": request["id"], "error": error})
        else:
            send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line: ``--fault NAME [--seed N] [--size BYTES]``."""
    parser = argparse.ArgumentParser(prog="python -m harness.mcp.servers.hostile")
    parser.add_argument("--fault", required=True, choices=FAULTS, help="how to misbehave")
    parser.add_argument("--seed", type=int, default=0, help="seed for the garbage lines")
    parser.add_argument(
        "--size", type=int, default=None, help="bytes for huge-result and flood-stderr"
    )
    args = parser.parse_args(argv)
    if args.size is not None and args.size < 0:
        parser.error("--size must be 0 or more")
    return args


def main(argv: list[str] | None = None) -> None:
    """Misbehave as ``--fault`` says."""
    args = parse_args(argv)
    fault: str = args.fault
    size: int = args.size if args.size is not None else DEFAULT_SIZES.get(fault, 0)
    print(f"{SERVER_NAME}: starting with fault {fault}", file=sys.stderr, flush=True)
    if fault == "exit-at-start":
        print(f"{SERVER_NAME}: configuration error, giving up", file=sys.stderr, flush=True)
        sys.exit(EXIT_AT_START_STATUS)
    if fault == "hang-at-start":
        _hang_at_start()
        return
    garbage = garbage_lines(args.seed) if fault == "garbage-stdout" else None
    if garbage is not None:
        for line in itertools.islice(garbage, GARBAGE_LINES):
            print(line, flush=True)
    if fault == "flood-stderr":
        _flood_stderr(size)
    if fault in RAW_FAULTS:
        serve_raw(fault, size, garbage)
    else:
        serve_sdk(fault, size)


if __name__ == "__main__":
    main()
