"""The MCP servers of one session, in one call: configure, start, check, offer, stop.

:func:`session_mcp` is the wiring the command line and chapter 14 share:

1. read ``.mcp.json`` and the user's ``~/.claude.json`` (:mod:`harness.mcp.config`);
2. keep the project's servers the person approved: a cloned repository's ``.mcp.json`` starts
   programs on your machine, so Claude Code asks before a project server runs, and reads
   ``enableAllProjectMcpServers``, ``enabledMcpjsonServers`` and ``disabledMcpjsonServers``
   from the settings; so do we (``approve`` asks about the rest; without it they stay off);
3. start every server at once, each in its own thread (start-up costs the slowest server, not
   the sum), over stdio with the SDK (:mod:`harness.mcp.connection`);
4. check each listed tool (:mod:`harness.mcp.schema`): a name or a schema the API would
   refuse would fail *every* request of the session with a 400, so such a tool is left out
   and said, and so is a second tool whose normalized name is taken;
5. offer the rest as :class:`~harness.mcp.tools.McpTool` s, deferred behind ``tool_search``
   when their definitions pass the threshold (:mod:`harness.mcp.search`).

Nothing here raises for a server: every problem is a line in :attr:`SessionMcp.problems`, to
show once, and the session goes on with what works. Close the session (``with`` or
:meth:`SessionMcp.close`) to stop the servers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from harness.compaction.summary import CompactionCheck, CompactionPoint
from harness.loop import BaseAgent, Plugin
from harness.mcp.config import McpConfig, ServerConfig, load_mcp_config
from harness.mcp.connection import (
    CALL_TIMEOUT,
    STARTUP_TIMEOUT,
    EventLoopThread,
    ServerConnection,
    ServerStatus,
)
from harness.mcp.schema import CheckedTool, check_tool
from harness.mcp.search import (
    AUTO_PERCENT,
    SearchMode,
    deferred_section,
    referenced_names,
    should_defer,
    tool_search_tool,
)
from harness.mcp.tools import Deferral, McpTool, mcp_tool
from harness.prompt import Section
from harness.tools.base import Tool

Approve = Callable[[ServerConfig], bool]
"""Asks whether a project server may start; only ``True`` means yes."""


def project_choice(server: ServerConfig, settings: Mapping[str, Any]) -> bool | None:
    """What the settings say about a project server: True, False, or None (not said).

    Claude Code's settings: ``disabledMcpjsonServers`` wins, then ``enabledMcpjsonServers``,
    then ``enableAllProjectMcpServers`` (docs: code.claude.com/docs/en/settings)."""
    if server.scope != "project":
        return True
    disabled = settings.get("disabledMcpjsonServers")
    if isinstance(disabled, list) and server.name in disabled:
        return False
    enabled = settings.get("enabledMcpjsonServers")
    if isinstance(enabled, list) and server.name in enabled:
        return True
    if settings.get("enableAllProjectMcpServers") is True:
        return True
    return None


@dataclass
class SessionMcp:
    """What one session gets from its MCP servers."""

    config: McpConfig
    connections: dict[str, ServerConnection]
    tools: list[McpTool]
    search: Tool[Any] | None
    """The ``tool_search`` tool when the tools are deferred, else None."""
    section: Section | None
    """The names of the deferred tools, for the system prompt, else None."""
    problems: list[str] = field(default_factory=list)
    runner: EventLoopThread = field(default_factory=EventLoopThread, repr=False)
    deferral: Deferral | None = field(default=None, repr=False)

    def carry_over(self) -> CarryLoadedTools | None:
        """The plugin that keeps the tools ``ToolSearch`` loaded across a full compaction
        (give it to the agent with the others); None without tool search."""
        return CarryLoadedTools(self.deferral) if self.deferral is not None else None

    def all_tools(self) -> list[Tool[Any]]:
        """The tools to give the agent: every MCP tool, and ``tool_search`` if there is one."""
        tools: list[Tool[Any]] = list(self.tools)
        if self.search is not None:
            tools.append(self.search)
        return tools

    def statuses(self) -> list[ServerStatus]:
        return [connection.status() for connection in self.connections.values()]

    def close(self) -> None:
        for connection in self.connections.values():
            connection.close()
        self.runner.close()

    def __enter__(self) -> SessionMcp:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def session_mcp(
    workspace: Path,
    home: Path | None,
    *,
    settings: Mapping[str, Any] | None = None,
    approve: Approve | None = None,
    environ: Mapping[str, str] | None = None,
    context_window: int = 200_000,
    search: SearchMode = "auto",
    percent: int = AUTO_PERCENT,
    startup_timeout: float = STARTUP_TIMEOUT,
    call_timeout: float = CALL_TIMEOUT,
    config: McpConfig | None = None,
) -> SessionMcp:
    """Start the servers configured for ``workspace`` (and ``home``'s user servers)."""
    config = config or load_mcp_config(workspace, home, environ=environ)
    problems = [str(problem) for problem in config.problems]
    chosen: list[ServerConfig] = []
    for server in config.servers:
        if _approved(server, settings or {}, approve, problems):
            chosen.append(server)
    runner = EventLoopThread()
    connections: dict[str, ServerConnection] = {}
    try:  # a Ctrl-C while servers start must not leave them running, unreachable
        for server in chosen:
            connections[server.name] = ServerConnection(
                server,
                runner,
                cwd=workspace,
                startup_timeout=startup_timeout,
                call_timeout=call_timeout,
            )
        _start_all(connections, problems)
        checked = _checked_tools(connections, problems)
        deferral = Deferral(on=False)  # each tool's definition as it would be sent in full
        tools = [mcp_tool(c, connection, deferral=deferral) for c, connection in checked]
        deferral.on = should_defer(
            [t.definition() for t in tools],
            context_window=context_window,
            mode=search,
            percent=percent,
        )
    except BaseException:
        for connection in connections.values():
            connection.close()
        runner.close()
        raise
    search_tool = tool_search_tool(tools) if deferral.on and tools else None
    section = deferred_section([t for t in tools if t.deferred]) if search_tool else None
    carried = deferral if deferral.on else None
    return SessionMcp(config, connections, tools, search_tool, section, problems, runner, carried)


class CarryLoadedTools(Plugin, CompactionPoint):
    """Before a full compaction, the tools loaded by reference stop being deferred
    (:class:`~harness.mcp.tools.Deferral`), so they outlive the references the summary drops."""

    def __init__(self, deferral: Deferral) -> None:
        self.deferral = deferral

    def before_compaction(
        self, agent: BaseAgent, trigger: str, instructions: str
    ) -> CompactionCheck | None:
        self.deferral.keep(referenced_names(agent.messages))
        return None


def _start_all(connections: Mapping[str, ServerConnection], problems: list[str]) -> None:
    """Start every server at once: the session waits for the slowest, not for the sum."""
    if not connections:
        return
    with ThreadPoolExecutor(max_workers=min(8, len(connections))) as pool:
        started = list(pool.map(lambda c: c.start(), connections.values()))
    for connection, ok in zip(connections.values(), started, strict=True):
        if not ok:
            problems.append(f"MCP server {connection.name!r} did not start: {connection.error}")


def _approved(
    server: ServerConfig,
    settings: Mapping[str, Any],
    approve: Approve | None,
    problems: list[str],
) -> bool:
    choice = project_choice(server, settings)
    if choice is None and approve is not None:
        try:
            choice = approve(server) is True
        except Exception as error:  # a broken prompt is a "no"
            problems.append(f"asking about MCP server {server.name!r} failed: {error!r}")
            choice = False
    if choice is None:
        problems.append(
            f"MCP server {server.name!r} from {server.source.name} was not started: project "
            "servers start once approved (enabledMcpjsonServers in the settings)"
        )
    elif not choice:
        problems.append(f"MCP server {server.name!r} is disabled in the settings")
    return choice is True


def _checked_tools(
    connections: Mapping[str, ServerConnection], problems: list[str]
) -> list[tuple[CheckedTool, ServerConnection]]:
    checked: list[tuple[CheckedTool, ServerConnection]] = []
    taken: set[str] = set()
    for connection in connections.values():
        for listed in connection.tools():
            result = check_tool(connection.name, listed)
            if not isinstance(result, CheckedTool):
                problems.append(str(result))
                continue
            if result.name in taken:
                problems.append(
                    f"MCP server {connection.name!r}: tool {result.tool!r} left out: its name "
                    f"{result.name} is taken by another tool"
                )
                continue
            taken.add(result.name)
            checked.append((result, connection))
    return checked
