"""What tool search saves: 5, 50 and 200 MCP tools, listed vs searched, over a 10-turn session.

    uv run python tests/benchmarks/tool_search_benchmark.py

The MCP tools are real: the definitions ``mcp-server-git`` lists (``python -m mcp_server_git``,
the reference server installed with the dev group; its 12 tools, 232 to 949 characters of
JSON each), started on a temporary repository and asked with the official SDK's
``list_tools``. 5 tools are its first five; 50 and 200 repeat its 12 across servers named
``git``, ``git2``, ... (``mcp__git2__git_log``), so every size is a size a real server sends.

The session is chapter 14's comparison (``harness.notebook.mcp.layout_session``; the chapter
runs it on its ``many`` server's definitions), here on git's, with git's work: the model globs,
reads, greps, looks at the repository's status and diff with two git tools, edits, runs the
tests and sums up, ten replies (``WORK``). Three layouts:

* **listed**: every MCP definition in ``tools`` on every request (no tool search);
* **searched**: the MCP definitions sent with ``defer_loading: true``, their names in a static
  system section, and ``ToolSearch`` (``harness.mcp.search``); one extra reply searches
  (``select:`` the two git tools) before they are used, and the API expands the two
  ``tool_reference`` blocks where they sit in the messages;
* **added to tools**: the same search, but the harness adds the two definitions it loaded to
  ``tools`` (where a harness without ``tool_reference`` would have to put them).

Every request goes through the harness's own breakpoints (``harness.prompt.with_breakpoints``:
the last tool, the last message, the message before the last reply) to the scripted model,
whose usage comes from the course's cache simulator (``harness.model.cache``) and is priced
by ``harness.pricing``, on the course's model (``harness.model.DEFAULT_MODEL``). Printed: per
layout and tool count, the tool definitions' tokens, the mean prompt per request, the cache
reads and writes and the session's cost; then, request by request, the 50-tool session in
each layout (what the turn that loads the tools writes and reads). Deterministic: the
scripted model computes usage from the requests, and the clock is fake.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


from harness.mcp.search import TOOL_SEARCH_NAME, auto_threshold, definitions_tokens, should_defer
from harness.model import DEFAULT_MODEL
from harness.model.models import context_window_of
from harness.notebook.mcp import Turn, layout_session

MODEL = DEFAULT_MODEL
COUNTS = (5, 50, 200)
LOADED = ("mcp__git__git_status", "mcp__git__git_diff")
"""The two tools the session uses, loaded by one search (both among git's first five)."""
PROMPT = "Review what changed in the repository since yesterday, fix the rounding, run the tests."

WORK: list[tuple[str, dict[str, Any], str]] = [
    ("glob", {"pattern": "app/*.py"}, "app/billing.py\napp/tax.py\napp/currency.py\n"),
    ("read_file", {"path": "app/billing.py"}, "x = 1  # a line of billing code\n" * 60),
    ("grep", {"pattern": "quantize"}, "app/billing.py:12: value.quantize(...)\n" * 12),
    (LOADED[0], {"repo_path": "."}, "Repository status:\nOn branch main\n modified: app/tax.py\n"),
    (LOADED[1], {"repo_path": ".", "target": "HEAD~1"}, "+    return value\n-    return v\n" * 30),
    ("read_file", {"path": "app/tax.py"}, "y = 2  # a line of tax code\n" * 60),
    ("edit_file", {"path": "app/tax.py", "old_string": "v", "new_string": "value"}, "Edited."),
    ("bash", {"command": "pytest -q"}, "........ 8 passed in 0.12s\n"),
    ("read_file", {"path": "README.md"}, "# Billing service\n\nRun the tests with pytest.\n"),
]
"""The session's tool calls and their results (sized like real ones), then a summary."""
SUMMARY = "The rounding in app/tax.py now matches billing; all 8 tests pass."


async def _list_git_tools() -> list[dict[str, Any]]:
    from mcp import Client, StdioServerParameters

    with tempfile.TemporaryDirectory() as repo:
        subprocess.run(["git", "init", "-q", repo], check=True)
        server = StdioServerParameters(
            command=sys.executable, args=["-m", "mcp_server_git", "--repository", repo]
        )
        async with Client(server) as client:
            listed = await client.list_tools()
    return [
        {"name": t.name, "description": t.description or "", "input_schema": t.input_schema}
        for t in listed.tools
    ]


def mcp_tools(git: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """``count`` definitions: git's tools in order, over servers git, git2, git3, ..."""
    out = []
    for i in range(count):
        server = "git" if i < len(git) else f"git{i // len(git) + 1}"
        tool = git[i % len(git)]
        out.append({**json.loads(json.dumps(tool)), "name": f"mcp__{server}__{tool['name']}"})
    return out


def main() -> None:
    git = anyio.run(_list_git_tools)
    window = context_window_of(MODEL)
    sizes = sorted(definitions_tokens([t]) for t in mcp_tools(git, len(git)))
    print(
        f"mcp-server-git lists {len(git)} tools: {sizes[0]}-{sizes[-1]} tokens each by the "
        f"harness's estimate, {sum(sizes):,} in all\n"
    )
    print(
        f"{len(WORK) + 1}-reply session on {MODEL} ({window:,}-token window), harness breakpoints"
    )
    print(
        f"{'MCP':>5} {'layout':<15}{'tools tok':>9}{'auto@1M':>8}{'auto@200K':>10}"
        f"{'requests':>9}{'prompt/req':>11}{'reads':>10}{'writes':>9}{'cost':>9}"
    )
    detail: dict[str, list[Turn]] = {}
    for count in COUNTS:
        mcp = mcp_tools(git, count)
        for layout in ("listed", "searched", "added to tools"):
            defs, turns = layout_session(
                layout, mcp, work=WORK, loaded=LOADED, prompt=PROMPT, summary=SUMMARY
            )
            if count == 50:
                detail[layout] = turns
            print(
                f"{count:>5} {layout:<15}{defs:>9,}"
                f"{'yes' if should_defer(mcp, context_window=window) else 'no':>8}"
                f"{'yes' if should_defer(mcp, context_window=200_000) else 'no':>10}"
                f"{len(turns):>9}{sum(t.prompt for t in turns) // len(turns):>11,}"
                f"{sum(t.read for t in turns):>10,}{sum(t.written for t in turns):>9,}"
                f"{'$' + format(sum(t.cost for t in turns), '.4f'):>9}"
            )
    print(
        f"(auto: Claude Code's ENABLE_TOOL_SEARCH=auto defers once the definitions reach 10% of "
        f"the window: {auto_threshold(window):,} tokens at 1M, {auto_threshold(200_000):,} at 200K)"
    )
    print("\n50 MCP tools, request by request: the reply, prompt tokens, cache read, written, cost")
    for layout, turns in detail.items():
        print(f"  {layout}")
        for i, t in enumerate(turns):
            print(
                f"  {i + 1:>3} {t.did:<22}{t.prompt:>8,}{t.read:>8,}{t.written:>8,}"
                f"{'$' + format(t.cost, '.4f'):>9}"
            )
    searched, added = detail["searched"], detail["added to tools"]
    at = next(i for i, t in enumerate(searched) if t.did == TOOL_SEARCH_NAME) + 1
    print(
        f"\nthe request after the search (req {at + 1}): by reference it reads "
        f"{searched[at].read:,} and writes {searched[at].written:,}; added to tools it reads "
        f"{added[at].read:,} (the tools before the added ones) and writes {added[at].written:,}: "
        "the system prompt and every message again, since the prefix changed at the added tool"
    )


if __name__ == "__main__":
    main()
