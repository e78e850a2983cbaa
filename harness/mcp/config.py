"""Which MCP servers to start: Claude Code's configuration files, read as Claude Code writes them.

Claude Code keeps MCP servers at three scopes (code.claude.com/docs/en/mcp, "MCP
installation scopes"):

* user: the top-level ``"mcpServers"`` of ``~/.claude.json``, you in every project;
* project: ``"mcpServers"`` of ``.mcp.json`` in the project's folder, checked in and shared;
* local: ``"projects"`` → the project's absolute path → ``"mcpServers"`` in
  ``~/.claude.json``, you in this project only.

A name defined at several scopes is one server, the whole entry taken from the highest
scope: local over project over user ("Scope hierarchy and precedence"; ``getMcpConfigByName``
and the ``Object.assign`` in ``getClaudeCodeMcpConfigs``, openclaude
``src/services/mcp/config.ts``). Each entry is ``{"type"?: "stdio", "command": str,
"args"?: [str], "env"?: {str: str}}`` (``McpStdioServerConfigSchema`` in
``src/services/mcp/types.ts``); other keys are ignored, as Zod's objects strip them. In
``command``, ``args`` and ``env``, ``${VAR}`` and ``${VAR:-default}`` are replaced from the
environment (:func:`expand_variables`).

This harness starts stdio servers only: an entry of another ``type`` (``http``, ``sse``,
``ws``, ``sdk``...) is reported as unsupported, and still hides a same-named entry of a
lower scope, as it would in Claude Code. Nothing here raises on a bad file: each file or
entry that cannot be used is a :class:`ConfigProblem` naming the file and the field, and the
rest still loads. Where this reader differs from Claude Code (our choices):

* one bad entry drops only itself (Claude Code drops the whole file when one entry does not
  fit its schema);
* only ``<workspace>/.mcp.json`` is read, not the ``.mcp.json`` of every parent folder, and
  the local scope is looked up under the workspace's own path (Claude Code uses the git
  root when there is one);
* a server name must leave room for its tools' names (:func:`server_name_problem`), and two
  servers whose names normalize alike are one server too many: the later is dropped;
* a NUL character, or an ``env`` name with ``=``, which no process can be started with, is
  a problem for that server;
* files are read with chapter 13's :func:`harness.settings.files.read_settings_file` (at
  most 1 MiB, UTF-8 JSON objects, no folders, devices or symbolic-link loops).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.mcp.names import mcp_tool_name, normalize
from harness.messages import is_valid_tool_name
from harness.settings.files import MAX_SETTINGS_BYTES, SettingsError, read_settings_file

Scope = Literal["user", "project", "local"]
"""Where a server was configured; later in :data:`SCOPES` wins."""

SCOPES: tuple[Scope, ...] = ("user", "project", "local")
"""The scopes, lowest precedence first."""

OTHER_TYPES = ("sse", "sse-ide", "http", "ws", "ws-ide", "sdk", "claudeai-proxy")
"""The ``type`` values Claude Code knows besides ``stdio`` (``McpServerConfigSchema``);
this harness reports them as unsupported."""

PROJECT_FILE = ".mcp.json"
USER_FILE = ".claude.json"

_VARIABLE = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True)
class ServerConfig:
    """One stdio server to start: its name, the command line, extra environment, and where
    it was configured. Values are already expanded (:func:`expand_variables`)."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict, hash=False)
    scope: Scope = "project"
    source: Path = Path(PROJECT_FILE)


@dataclass(frozen=True)
class ConfigProblem:
    """A file, or one server in it, that could not be used as written."""

    source: Path
    server: str
    """The server's name, or ``""`` when the problem is the whole file."""
    reason: str

    def __str__(self) -> str:
        where = f"{self.source}: server {self.server!r}" if self.server else str(self.source)
        return " ".join(f"{where}: {self.reason}".split())


@dataclass(frozen=True)
class McpConfig:
    """What :func:`load_mcp_config` found: the servers to start, and what was wrong."""

    servers: tuple[ServerConfig, ...] = ()
    problems: tuple[ConfigProblem, ...] = ()

    def get(self, name: str) -> ServerConfig | None:
        """The server called ``name``, if it is one to start."""
        return next((s for s in self.servers if s.name == name), None)


def expand_variables(value: str, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """``value`` with ``${VAR}`` and ``${VAR:-default}`` replaced, and the variables missing.

    As ``expandEnvVarsInString`` (openclaude ``src/services/mcp/envExpansion.ts``): the
    default follows the *first* ``:-`` (``${A:-x:-y}`` is ``x:-y`` when ``A`` is unset); a
    variable set to ``""`` is used as it is; a missing one with no default stays as written
    (``${VAR}``), and is reported, as Claude Code reports it and still loads the server.
    """
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        content = match.group(1)
        name, separator, default = content.partition(":-")
        if name in environ:
            return environ[name]
        if separator:
            return default
        if name not in missing:
            missing.append(name)
        return match.group(0)

    return _VARIABLE.sub(replace, value), missing


def server_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a server's name here, or None: its tools would have no valid
    name (empty, or so long that ``mcp__<name>__x`` passes the API's 128 characters)."""
    if not name:
        return "has an empty name"
    if not is_valid_tool_name(mcp_tool_name(name, "x")):
        return (
            f"has a name of {len(normalize(name))} characters: its tools' names "
            "mcp__<server>__<tool> would be longer than the 128 the API accepts"
        )
    return None


def load_mcp_config(
    workspace: Path,
    home: Path | None,
    *,
    environ: Mapping[str, str] | None = None,
    given: Sequence[tuple[Path, Mapping[str, Any]]] = (),
    strict: bool = False,
) -> McpConfig:
    """The stdio servers configured for ``workspace``, in Claude Code's precedence.

    ``home`` holds ``.claude.json`` (the user and local scopes); None reads the project's
    ``.mcp.json`` only. ``environ`` is what ``${VAR}`` expands from (``os.environ`` when
    None). Servers come in the order their names first appear, user scope first, as
    Claude Code's merge leaves them. Never raises for anything in the files.

    ``given`` are the objects of ``--mcp-config`` (each ``{"mcpServers": ...}``, with where
    it came from): they win over every file, later ones over earlier ones, and need no
    approval (the person named them); with ``strict`` (``--strict-mcp-config``) they are
    the only servers, as in Claude Code.
    """
    env = os.environ if environ is None else environ
    problems: list[ConfigProblem] = []
    winners: dict[str, ServerConfig | ConfigProblem] = {}

    def take(scope: Scope, source: Path, servers: object, where: str) -> None:
        for name, entry in _entries(servers, source, where, problems).items():
            parsed = _server(name, entry, scope, source, f"{where}.{name}", env, problems)
            if parsed is not None:
                winners[name] = parsed

    if strict:
        home = None
    user_data = _read(home / USER_FILE, problems) if home is not None else None
    if user_data is not None and home is not None and user_data.get("mcpServers") is not None:
        take("user", home / USER_FILE, user_data["mcpServers"], "mcpServers")
    project_file = workspace / PROJECT_FILE
    project_data = _read(project_file, problems) if not strict else None
    if project_data is not None:
        if "mcpServers" in project_data:
            take("project", project_file, project_data["mcpServers"], "mcpServers")
        else:
            problems.append(ConfigProblem(project_file, "", "has no mcpServers object"))
    if user_data is not None and home is not None:
        local = _local_servers(user_data, workspace, home / USER_FILE, problems)
        if local is not None:
            take("local", home / USER_FILE, *local)
    for source, data in given:
        if "mcpServers" in data:
            take("user", source, data["mcpServers"], "mcpServers")
        else:
            problems.append(ConfigProblem(source, "", "has no mcpServers object"))

    servers: list[ServerConfig] = []
    normalized: dict[str, str] = {}
    for name, winner in winners.items():
        if isinstance(winner, ConfigProblem):
            problems.append(winner)
        elif normalize(name) in normalized:
            reason = f"has the same tool names as server {normalized[normalize(name)]!r}"
            problems.append(ConfigProblem(winner.source, name, f"{reason}; not started"))
        else:
            normalized[normalize(name)] = name
            servers.append(winner)
    return McpConfig(tuple(servers), tuple(problems))


def given_config(value: str) -> tuple[Path, Mapping[str, Any]]:
    """One ``--mcp-config`` value as Claude Code takes it: a JSON object, or the path of a
    file holding one; with where it came from (for problem lines). Raises ``ValueError``
    with the reason when it is neither."""
    if value.lstrip().startswith("{"):
        try:
            data = json.loads(value)
        except ValueError as error:
            raise ValueError(f"not valid JSON ({error})") from None
        source = Path("--mcp-config")
    else:
        source = Path(value)
        try:
            data = read_settings_file(source, max_bytes=MAX_SETTINGS_BYTES)
        except SettingsError as error:
            raise ValueError(str(error)) from None
        if data is None:
            raise ValueError(f"{value}: no such file")
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return source, data


def project_fingerprint(config: McpConfig) -> str:
    """A hex digest of the project scope's servers (names, commands, arguments and
    environment, as expanded), so that a trust gate can ask again when ``.mcp.json``
    changes what would run. The same servers in any order give the same digest."""
    rows = sorted(
        [s.name, s.command, list(s.args), sorted(s.env.items())]
        for s in config.servers
        if s.scope == "project"
    )
    text = json.dumps(rows, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


MAX_USER_FILE_BYTES = 16 * 1024 * 1024
"""``~/.claude.json`` keeps each project's history too, so it can pass the settings' 1 MiB cap
(our choice: 16 MiB)."""


def _read(path: Path, problems: list[ConfigProblem]) -> dict[str, Any] | None:
    limit = MAX_USER_FILE_BYTES if path.name == USER_FILE else MAX_SETTINGS_BYTES
    try:
        return read_settings_file(path, max_bytes=limit)
    except SettingsError as error:
        problems.append(ConfigProblem(path, "", error.reason))
        return None


def _local_servers(
    data: Mapping[str, Any], workspace: Path, source: Path, problems: list[ConfigProblem]
) -> tuple[object, str] | None:
    projects = data.get("projects")
    if projects is None:
        return None
    if not isinstance(projects, dict):
        problems.append(
            ConfigProblem(source, "", f"projects must be an object, not {_kind(projects)}")
        )
        return None
    key = _project_key(workspace)
    project = projects.get(key)
    where = f"projects[{json.dumps(key)}]"
    if project is None:
        return None
    if not isinstance(project, dict):
        problems.append(
            ConfigProblem(source, "", f"{where} must be an object, not {_kind(project)}")
        )
        return None
    if project.get("mcpServers") is None:  # absent or null: none, as in Claude Code
        return None
    return project["mcpServers"], f"{where}.mcpServers"


def _project_key(workspace: Path) -> str:
    """The key of ``workspace`` in ``projects``: its absolute path with forward slashes."""
    try:
        return workspace.resolve().as_posix()
    except (OSError, RuntimeError):  # a symbolic-link loop on the way
        return workspace.absolute().as_posix()


def _entries(
    servers: object, source: Path, where: str, problems: list[ConfigProblem]
) -> dict[str, object]:
    if not isinstance(servers, dict):
        problems.append(
            ConfigProblem(source, "", f"{where} must be an object, not {_kind(servers)}")
        )
        return {}
    return servers


def _server(
    name: str,
    entry: object,
    scope: Scope,
    source: Path,
    where: str,
    environ: Mapping[str, str],
    problems: list[ConfigProblem],
) -> ServerConfig | ConfigProblem | None:
    """The entry as a server; a problem that still wins by name (another type); or None
    after recording why the entry is unusable."""
    reason = server_name_problem(name) or _entry_problem(entry, where)
    if reason is not None or not isinstance(entry, dict):
        problems.append(ConfigProblem(source, name, reason or "is not an object"))
        return None
    kind = entry.get("type", "stdio")
    if kind != "stdio":
        return ConfigProblem(
            source, name, f"has type {kind!r}; only stdio servers are supported here"
        )
    missing: list[str] = []

    def expand(value: str) -> str:
        text, absent = expand_variables(value, environ)
        missing.extend(v for v in absent if v not in missing)
        return text

    server = ServerConfig(
        name=name,
        command=expand(entry["command"]),
        args=tuple(expand(a) for a in entry.get("args", [])),
        env={key: expand(value) for key, value in entry.get("env", {}).items()},
        scope=scope,
        source=source,
    )
    if missing:
        reason = f"missing environment variables: {', '.join(missing)} (left as written)"
        problems.append(ConfigProblem(source, name, reason))
    texts = (server.command, *server.args, *server.env, *server.env.values())
    if any("\0" in text for text in texts):
        reason = f"{where} has a NUL character, which no command line can hold"
        problems.append(ConfigProblem(source, name, reason))
        return None
    return server


def _entry_problem(entry: object, where: str) -> str | None:
    """What makes ``entry`` unusable as a server (another type is usable: unsupported)."""
    if not isinstance(entry, dict):
        return f"{where} must be an object, not {_kind(entry)}"
    kind = entry.get("type", "stdio")
    if kind in OTHER_TYPES:
        return None
    if kind != "stdio":
        return f"{where}.type must be one of stdio, {', '.join(OTHER_TYPES)}, not {_show(kind)}"
    command, args, env = entry.get("command"), entry.get("args", []), entry.get("env", {})
    if not isinstance(command, str):
        return f"{where}.command must be a string, not {_kind(command)}"
    if not command:
        return f"{where}.command cannot be empty"
    if not isinstance(args, list):
        return f"{where}.args must be an array of strings, not {_kind(args)}"
    for i, arg in enumerate(args):
        if not isinstance(arg, str):
            return f"{where}.args[{i}] must be a string, not {_kind(arg)}"
    if not isinstance(env, dict):
        return f"{where}.env must be an object of strings, not {_kind(env)}"
    for key, value in env.items():
        if not isinstance(value, str):
            return f"{where}.env.{key} must be a string, not {_kind(value)}"
        if not key or "=" in key:
            return f"{where}.env has the name {key!r}, which no environment can hold"
    return None


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if value is None:
        return "null"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _show(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."
