"""Chapter 14 on the command line: the MCP servers of a run, from start to stop.

:class:`McpServers` belongs to one run of the program, not to one session: the servers of
``.mcp.json`` and ``~/.claude.json`` start when the first session is assembled (with
:func:`~harness.mcp.session.session_mcp`), their tools join the agent's and the names of
deferred ones join the system prompt's static sections; ``/clear`` starts a new session on
the same servers (Claude Code keeps its connections too: ``connectToServer`` is memoized,
and ``/clear`` only resets the state that lists them); the program stops them when it ends,
however it ends (``/exit``, the end of input, Ctrl-C, an error), so no process outlives it.
What went wrong at start-up (a server that did not start, a tool left out) is said once.

A project's servers run programs a cloned repository chose, so they start only once a
person approved them, as in Claude Code (code.claude.com/docs/en/mcp, "Project scope"):

* the settings decide first (``disabledMcpjsonServers``, then ``enabledMcpjsonServers``
  and ``enableAllProjectMcpServers``); the project's shared ``.claude/settings.json`` may
  reject a server but not approve one (Claude Code ignores its approvals in a folder not
  yet trusted; we always do, since our folder trust is about hooks);
* otherwise the question is asked at the terminal (:func:`terminal_approval`), and the
  answer is written to the project's ``.claude/settings.local.json`` (:func:`remember`), as
  Claude Code's approval dialog writes it, so the next session does not ask again;
* one-shot mode without a terminal asks nobody, and the server does not start (Claude Code
  starts such servers without asking in ``-p``: we choose not to).

``/mcp`` shows the servers (:func:`show_servers`), ``/mcp <name>`` one server's tools and
the end of its stderr, which never reaches the model.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rich.console import Console
from rich.text import Text

from harness.atomic import write_atomic
from harness.cli.terminal import Activity, NoInput, Reader, readable, table
from harness.loop import Plugin
from harness.mcp.config import ServerConfig, load_mcp_config
from harness.mcp.names import parse_mcp_name
from harness.mcp.search import AUTO_PERCENT, SearchMode, mode_from_env
from harness.prompt import Section
from harness.settings import Settings
from harness.settings.files import SettingsError, merge_settings, read_settings_file
from harness.tools.base import Tool

if TYPE_CHECKING:  # the SDK takes a second or two to import: only when there are servers
    from harness.mcp.session import SessionMcp

Approve = Callable[[ServerConfig], bool]
"""Asks whether a project server may start (:data:`harness.mcp.session.Approve`)."""

APPROVALS = ("enableAllProjectMcpServers", "enabledMcpjsonServers", "disabledMcpjsonServers")
"""The settings keys that approve or reject a project's servers (Claude Code's)."""
LOCAL_SETTINGS = Path(".claude") / "settings.local.json"
"""Where an answer is remembered, under the project (Claude Code's ``localSettings``)."""
STDERR_LINES = 20
"""Lines of a server's stderr ``/mcp <name>`` shows (our choice)."""
STARTING = "starting MCP servers…"

Choice = Literal["yes", "all", "no"]
ANSWERS: dict[str, Choice] = {"y": "yes", "yes": "yes", "a": "all", "all": "all"}
ANSWERS |= {"n": "no", "no": "no"}


def approvals(settings: Settings) -> dict[str, Any]:
    """The approval keys of the settings files, merged as Claude Code merges settings; from
    the project's shared file only ``disabledMcpjsonServers`` counts (a repository cannot
    approve its own servers)."""
    merged: dict[str, Any] = {}
    for file in settings.files:
        keys = ("disabledMcpjsonServers",) if file.scope == "project" else APPROVALS
        merged = merge_settings(merged, {k: file.data[k] for k in keys if k in file.data})
    return merged


def home_folder() -> Path | None:
    """Where ``~/.claude.json`` is looked for: ``HOME``, or None in a bare container."""
    home = os.environ.get("HOME")
    return Path(home) if home else None


def tool_label(name: str) -> str:
    """A tool's name for the spinner: an MCP tool's with its server (``mcp__course__slow (MCP
    server course)``), any other as it is."""
    parts = parse_mcp_name(name)
    return f"{name} (MCP server {parts[0]})" if parts is not None else name


def search_mode(environ: Mapping[str, str]) -> tuple[SearchMode, int]:
    """Tool search as ``ENABLE_TOOL_SEARCH`` sets it, read as Claude Code reads it; unset,
    the course's default: ``auto`` at 10 % of the window (Claude Code's unset is ``on``)."""
    raw = environ.get("ENABLE_TOOL_SEARCH")
    return ("auto", AUTO_PERCENT) if raw is None else mode_from_env(raw)


def seconds_from(environ: Mapping[str, str], name: str, default: float) -> float:
    """A timeout from Claude Code's variable ``name`` (milliseconds, as ``MCP_TIMEOUT`` and
    ``MCP_TOOL_TIMEOUT`` are), in seconds; ``default`` when unset or not a positive number.
    Values below 1000 count as one second, as Claude Code floors ``MCP_TOOL_TIMEOUT``."""
    raw = environ.get(name, "").strip()
    if not raw.isdecimal() or int(raw) <= 0:
        return default
    return max(int(raw), 1000) / 1000


@dataclass(frozen=True)
class Offer:
    """What the servers add to one session's agent."""

    tools: tuple[Tool[Any], ...] = ()
    section: Section | None = None
    """The names of the deferred tools, for the system prompt (None: nothing deferred)."""
    deferred: frozenset[str] = frozenset()
    plugins: tuple[Plugin, ...] = ()
    """For the agent's plugins: the one that keeps tools loaded by tool search across a
    full compaction (:meth:`~harness.mcp.session.SessionMcp.carry_over`), if any."""

    def listed(self, names: Iterable[str]) -> list[str]:
        """``names`` without the deferred tools (the section names those)."""
        return [name for name in names if name not in self.deferred]


class McpServers:
    """The MCP servers of one run of the program: started once, shared by its sessions."""

    def __init__(
        self,
        workspace: Path,
        home: Path | None,
        *,
        ask: Approve | None = None,
        given: Sequence[tuple[Path, Mapping[str, Any]]] = (),
        strict: bool = False,
        environ: Mapping[str, str] | None = None,
        context_window: int = 200_000,
    ) -> None:
        self.workspace = workspace
        self.home = home
        self.ask = ask
        """Who is asked about a project server the settings leave open (None: nobody)."""
        self.given = list(given)
        """The ``--mcp-config`` objects: they win over the files."""
        self.strict = strict
        """``--strict-mcp-config``: only the given servers."""
        self.enabled = bool(given) or not strict
        self.environ = os.environ if environ is None else environ
        self.context_window = context_window
        self.session: SessionMcp | None = None
        self.checked = False
        """Whether the configuration was read (once per run)."""
        self.settings: dict[str, Any] = {}
        """The approval keys the servers were started with (:func:`approvals`)."""
        self._unsaid: list[str] = []

    def offer(self, settings: Settings) -> Offer:
        """The tools and section for a new session, starting the servers the first time."""
        if not self.enabled or self.checked:
            return self._offer()
        self.checked = True
        config = load_mcp_config(
            self.workspace, self.home, environ=self.environ, given=self.given, strict=self.strict
        )
        if not config.servers and not config.problems:
            return Offer()  # nothing configured: the SDK is not even imported
        from harness.mcp.connection import CALL_TIMEOUT, STARTUP_TIMEOUT
        from harness.mcp.session import session_mcp

        self.settings = approvals(settings)
        mode, percent = search_mode(self.environ)
        self.session = session_mcp(
            self.workspace,
            self.home,
            settings=self.settings,
            approve=self.ask,
            environ=self.environ,
            context_window=self.context_window,
            search=mode,
            percent=percent,
            startup_timeout=seconds_from(self.environ, "MCP_TIMEOUT", STARTUP_TIMEOUT),
            call_timeout=seconds_from(self.environ, "MCP_TOOL_TIMEOUT", CALL_TIMEOUT),
            config=config,
        )
        self._unsaid = list(self.session.problems)
        return self._offer()

    def _offer(self) -> Offer:
        if self.session is None:
            return Offer()
        tools = self.session.all_tools()
        deferred = frozenset(t.name for t in tools if getattr(t, "deferred", False))
        carry = self.session.carry_over()
        plugins = (carry,) if carry is not None else ()
        return Offer(tuple(tools), self.session.section, deferred, plugins)

    def unsaid(self) -> list[str]:
        """The start-up problems not yet said (each is returned once)."""
        problems, self._unsaid = self._unsaid, []
        return problems

    def close(self) -> None:
        """Stop every server (and wait for the processes to end). Safe to call twice."""
        session, self.session = self.session, None
        if session is not None:
            session.close()


# -- asking, and remembering the answer -------------------------------------------------------


def remember(workspace: Path, name: str, choice: Choice) -> str | None:
    """Write an answer about project server ``name`` to ``.claude/settings.local.json`` as
    Claude Code's approval dialog does: ``yes`` adds it to ``enabledMcpjsonServers``,
    ``all`` also sets ``enableAllProjectMcpServers``, ``no`` adds it to
    ``disabledMcpjsonServers``. The file's other keys are kept, and it is replaced whole
    (:func:`~harness.atomic.write_atomic`). Returns why it could not be written, or None."""
    path = workspace / LOCAL_SETTINGS
    try:
        data = read_settings_file(path) or {}
    except SettingsError as error:  # broken by hand: not ours to overwrite
        return f"the answer was not remembered: {error}"
    key = "disabledMcpjsonServers" if choice == "no" else "enabledMcpjsonServers"
    names = data.get(key)
    names = list(names) if isinstance(names, list) else []
    if name not in names:
        names.append(name)
    data[key] = names
    if choice == "all":
        data["enableAllProjectMcpServers"] = True
    try:
        write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    except OSError as error:
        return f"the answer was not remembered: {path}: {error.strerror or error}"
    return None


def terminal_approval(
    reader: Reader, console: Console, activity: Activity, workspace: Path
) -> Approve:
    """Claude Code's question about a new project server, at the terminal: the server, the
    command it runs (control characters made visible), then ``y`` (use it), ``a`` (it and
    every later one of this project) or ``n``. An answer is remembered (:func:`remember`);
    no answer (Enter, Ctrl-D, a closed input) is no for this run only."""
    every = False

    def ask(server: ServerConfig) -> bool:
        nonlocal every
        if every:  # "a" approved the rest of this project's servers too
            return True
        activity.hide()
        command = shlex.join([server.command, *server.args])
        console.print(
            Text(f"New MCP server found in {server.source.name}: {readable(server.name)}"),
            style="bold yellow",
        )
        console.print(Text(f"  it runs: {readable(command)}"))
        console.print(
            Text(
                "  MCP servers may execute code or access system resources; each of its tool "
                "calls still asks first.",
                style="dim",
            )
        )
        try:
            said = reader.read("  Use it? [y = yes, a = this and all later ones, N = no] ")
        except (EOFError, NoInput):
            said = ""
        choice = ANSWERS.get(said.strip().lower())
        if choice is not None and (problem := remember(workspace, server.name, choice)):
            console.print(Text(f"⚠ {readable(problem)}", style="yellow"))
        every = choice == "all"
        activity.show(STARTING)
        return choice in ("yes", "all")

    return ask


# -- /mcp ---------------------------------------------------------------------------------------


def server_rows(servers: McpServers) -> list[tuple[str, str, str, str, str, str]]:
    """One row per configured server: name, scope, state, tools, restarts, error."""
    session = servers.session
    if session is None:
        return []
    from harness.mcp.session import project_choice

    statuses = {status.name: status for status in session.statuses()}
    rows: list[tuple[str, str, str, str, str, str]] = []
    for server in session.config.servers:
        status = statuses.get(server.name)
        if status is None:  # never started: rejected, or waiting for an approval
            said = project_choice(server, servers.settings) is False
            state = "disabled" if said else "not approved"
            rows.append((readable(server.name), server.scope, state, "0", "0", ""))
            continue
        error = readable(" ".join(status.error.split()))
        rows.append(
            (
                readable(server.name),
                server.scope,
                status.state,
                str(status.tools),
                str(status.restarts),
                error if len(error) <= 70 else error[:69] + "…",
            )
        )
    return rows


def show_servers(console: Console, servers: McpServers | None, name: str = "") -> None:
    """``/mcp``: the table of servers; ``/mcp <name>``: that server's tools and stderr."""
    session = servers.session if servers is not None else None
    if servers is None or session is None or not session.config.servers:
        said = (
            "MCP servers are off in this run (--strict-mcp-config)."
            if servers is not None and not servers.enabled
            else "No MCP servers configured (.mcp.json in the project, or mcpServers in "
            "~/.claude.json)."
        )
        console.print(Text(said, style="dim"))
        return
    if not name.strip():
        columns = ["server", "scope", "state", "tools", "restarts", "error"]
        console.print(table("MCP servers", columns, server_rows(servers), numbers=False))
        console.print(Text("/mcp <server> shows its tools and its stderr.", style="dim"))
        return
    _show_one(console, session, name.strip())


def _show_one(console: Console, session: SessionMcp, name: str) -> None:
    connection = session.connections.get(name)
    if connection is None:
        console.print(
            Text(f"No MCP server {readable(name)!r} was started: /mcp lists them.", style="yellow")
        )
        return
    status = connection.status()
    said = f"MCP server {readable(name)}: {status.state}, {status.restarts} restarts"
    console.print(Text(said, style="bold"))
    if status.error:
        console.print(Text(f"  error: {readable(status.error)}", style="red"))
    tools = [t for t in session.tools if t.connection is connection]
    for tool in tools:
        mark = "  (deferred: loaded by tool search)" if tool.deferred else ""
        console.print(Text(f"  {tool.name}{mark}"))
    if not tools:
        console.print(Text("  (no tools)", style="dim"))
    tail = status.stderr_tail.rstrip("\n").splitlines()[-STDERR_LINES:]
    if not tail:
        console.print(Text("Nothing on its stderr yet.", style="dim"))
        return
    lines = f"{len(tail)} line" + ("s" if len(tail) != 1 else "")
    console.print(Text(f"Its stderr, the last {lines} (never sent to the model):"))
    for line in tail:
        console.print(Text(f"  {readable(line)}", style="dim"))


def summary(servers: McpServers | None) -> str:
    """The banner's line about the servers ("" when none are configured)."""
    session = servers.session if servers is not None else None
    if session is None or not session.connections:
        return ""
    parts = [
        f"{readable(s.name)} ({s.tools} tools)"
        if s.state == "connected"
        else f"{readable(s.name)} ({s.state})"
        for s in session.statuses()
    ]
    return "MCP servers: " + ", ".join(parts) + " · /mcp for details"


def init_servers(servers: McpServers | None) -> list[dict[str, str]]:
    """The ``mcp_servers`` of stream-json's init record: each started server's state."""
    session = servers.session if servers is not None else None
    if session is None:
        return []
    return [{"name": s.name, "status": s.state} for s in session.statuses()]


__all__ = [
    "APPROVALS",
    "LOCAL_SETTINGS",
    "Approve",
    "McpServers",
    "Offer",
    "approvals",
    "home_folder",
    "init_servers",
    "remember",
    "seconds_from",
    "server_rows",
    "show_servers",
    "summary",
    "terminal_approval",
    "tool_label",
]
