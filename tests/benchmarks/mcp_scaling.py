"""How chapter 14's work grows with its input: 1x, 10x and 100x sizes (prints figures).

Run: ``uv run python tests/benchmarks/mcp_scaling.py``. Each row is the best of three runs,
on this machine, at that moment: compare the rows with each other, not with another machine.
What is measured, each at three sizes:

* reading ``.mcp.json`` with 10, 100 and 1,000 servers (:func:`load_mcp_config`);
* checking a server's listing of 150, 1,500 and 15,000 tools (:func:`check_tool`, each schema
  against the JSON Schema metaschema);
* one ``ToolSearch`` query over 200, 2,000 and 20,000 deferred definitions
  (:func:`search_names`);
* turning a text result of 10 KB, 100 KB and 1 MB into ``tool_result`` content, capped at
  25,000 tokens (:func:`result_content`).

Each should take about ten times as long as the row above it (linear); the last column says
by how much it grew.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import mcp_types

from harness.mcp.config import load_mcp_config
from harness.mcp.results import result_content
from harness.mcp.schema import check_tool
from harness.mcp.search import deferred, search_names
from harness.mcp.servers.many import generated_tools, wire_form


def best_of(work: Callable[[], object], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def row(label: str, sizes: list[int], make: Callable[[int], Callable[[], object]]) -> None:
    previous = None
    for size in sizes:
        seconds = best_of(make(size))
        growth = f"{seconds / previous:5.1f}x" if previous else "     -"
        print(f"  {label:<34} {size:>8,}  {seconds * 1000:9.1f} ms  {growth}")
        previous = seconds


def config_of(count: int) -> Callable[[], object]:
    folder = Path(tempfile.mkdtemp())
    servers = {f"s{i}": {"command": "python", "args": ["-m", "x", str(i)]} for i in range(count)}
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return lambda: load_mcp_config(folder, None, environ={})


def listing_of(count: int) -> Callable[[], object]:
    tools = generated_tools(count)
    return lambda: [check_tool("many", tool) for tool in tools]


def search_over(count: int) -> Callable[[], object]:
    definitions = []
    for tool in generated_tools(count):
        wire = wire_form(tool)
        definitions.append(
            deferred(
                {
                    "name": f"mcp__many__{wire['name']}",
                    "description": wire.get("description", ""),
                    "input_schema": wire["inputSchema"],
                }
            )
        )
    return lambda: search_names("issues list open", definitions, max_results=5)


def result_of(size: int) -> Callable[[], object]:
    text = ("0123456789 abcdefghij " * (size // 22 + 1))[:size]
    result = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)])
    return lambda: result_content(result, name="mcp__many__x", server="many")


def main() -> None:
    print("chapter 14: time against input size (best of 3)")
    row(".mcp.json servers", [10, 100, 1000], config_of)
    row("listed tools checked", [150, 1500, 15000], listing_of)
    row("deferred tools searched", [200, 2000, 20000], search_over)
    row("result characters converted", [10_000, 100_000, 1_000_000], result_of)


if __name__ == "__main__":
    main()
