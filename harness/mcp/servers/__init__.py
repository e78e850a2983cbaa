"""MCP servers the course runs: small programs that speak MCP over stdio, each run as a module.

- ``python -m harness.mcp.servers.course``: the course's own project server, ``course``, with
  one small tool per behaviour a harness must handle (a slow call, a failing call, a large
  result, a crash).
- ``python -m harness.mcp.servers.many --tools 150``: a server with as many generated tools
  of realistic size as you ask for (the "too many tools" failure and tool search).
- ``python -m harness.mcp.servers.hostile --fault NAME``: a server that misbehaves on purpose,
  one fault at a time, so tests and the chapter can show what a harness does about each.

They are written with the official ``mcp`` SDK's own server API, need no network, and write
nothing to stdout but the protocol: their log lines go to stderr.
"""
