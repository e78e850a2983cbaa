"""An MCP server's tool as a harness :class:`~harness.tools.base.Tool`, under every tool's rules.

An :class:`McpTool` is an ordinary tool to the rest of the harness: the dispatcher checks its
input before anything runs, then the permission rules (``mcp__server`` names a whole server),
the PreToolUse hooks (chapter 02's and chapter 13's settings hooks, which see the full name, so
a matcher ``mcp__github__.*`` works as in Claude Code), then runs it, caps and spills a big
result (chapter 06), writes it to the transcript (08) and can hold it for an approval (09).
What differs is only where its pieces come from:

* its definition is the server's: the full name ``mcp__<server>__<tool>``, the description,
  and the server's JSON schema as ``input_schema`` (checked by :mod:`harness.mcp.schema` when
  the server listed it, so a tool the API would refuse is never offered);
* its input is validated against that schema with ``jsonschema`` before it is sent (the
  server validates again; ours gives the model an answer it can fix without a round trip);
* running it forwards the call to the server (:mod:`harness.mcp.connection`) and turns the
  answer into ``tool_result`` content (:mod:`harness.mcp.results`).

A server's ``readOnlyHint`` is a hint from a program we do not control: like Claude Code, we
still ask permission for every MCP tool unless a rule allows it, so the hint is not used to
skip the question (nor to run calls in parallel, which needs read-only tools here).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, ValidationError

from harness.mcp.connection import ServerConnection
from harness.mcp.results import result_content
from harness.mcp.schema import CheckedTool, input_problem
from harness.tools.base import Tool, ToolContext, ToolError, ToolInput, ToolOutput
from harness.tools.outputs import output_text


class McpArguments(ToolInput):
    """Whatever object the model sent: the server's JSON schema, not pydantic, checks it."""

    model_config = ConfigDict(extra="allow")


MAX_REFERENCE_NAME = 64
"""The longest name a ``tool_reference`` may carry."""


@dataclass
class Deferral:
    """Which of a session's MCP tools are sent deferred: all of them while tool search is on,
    but for those a compaction carried over (:meth:`keep`).

    A tool that ``ToolSearch`` loaded is shown to the model by the ``tool_reference`` in the
    conversation. A full compaction replaces that part of the conversation with a summary, so
    the reference goes, and with it the tool. Claude Code carries the loaded tools across a
    compaction (``preCompactDiscoveredTools``); here they stop being deferred from then on.
    Our choice, and cheap: the compaction rewrites the cache after the system prompt anyway,
    and this adds only the loaded tools' definitions and the system prompt to what is written.
    """

    on: bool = True
    kept: set[str] = field(default_factory=set)

    def defers(self, name: str) -> bool:
        # A reference names its tool in at most 64 characters (the API's 400 "tool_reference.
        # tool_name: String should have at most 64 characters", quoted in a public issue),
        # though a tool's name may have 128: a longer name could never be loaded, so it is sent.
        return self.on and name not in self.kept and len(name) <= MAX_REFERENCE_NAME

    def keep(self, names: set[str]) -> None:
        self.kept |= names


def _never(args: McpArguments, context: ToolContext) -> ToolOutput:  # pragma: no cover
    raise ToolError("an MCP tool runs through its connection")


@dataclass(frozen=True)
class McpTool(Tool[McpArguments]):
    """One tool of one MCP server."""

    input_model: type[McpArguments] = McpArguments
    function: Any = _never
    checked: CheckedTool | None = None
    connection: ServerConnection | None = field(default=None, repr=False, compare=False)
    deferral: Deferral | None = field(default=None, repr=False, compare=False)
    """Whether it is sent with ``defer_loading: true`` (tool search, :mod:`harness.mcp.search`);
    None: never deferred."""
    timeout: float | None = None
    """Seconds a call may run; None: the connection's default."""

    @property
    def deferred(self) -> bool:
        return self.deferral is not None and self.deferral.defers(self.name)

    @property
    def server(self) -> str:
        return self.checked.server if self.checked is not None else ""

    def definition(self) -> dict[str, Any]:
        schema = self.checked.input_schema if self.checked is not None else {"type": "object"}
        definition: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "input_schema": copy.deepcopy(schema),
        }
        if self.deferred:
            definition["defer_loading"] = True
        return definition

    def input_problem(self, raw_input: dict[str, Any]) -> ValidationError | str | None:
        if self.checked is None:
            return None
        return input_problem(self.name, self.checked.input_schema, raw_input)

    def __call__(self, raw_input: dict[str, Any], context: ToolContext) -> ToolOutput:
        if self.checked is None or self.connection is None:
            raise ToolError(f"{self.name} is not connected to a server.")
        if (problem := self.input_problem(raw_input)) is not None:
            raise ToolError(str(problem))
        result = self.connection.call(self.checked.tool, raw_input, timeout=self.timeout)
        content, is_error = result_content(result, name=self.name, server=self.server)
        if is_error:
            raise ToolError(output_text(content))
        return content


def mcp_tool(
    checked: CheckedTool,
    connection: ServerConnection,
    *,
    deferral: Deferral | None = None,
    timeout: float | None = None,
) -> McpTool:
    """The harness tool for ``checked``: a tool the server listed that passed the checks."""
    return McpTool(
        name=checked.name,
        description=checked.description,
        checked=checked,
        connection=connection,
        deferral=deferral,
        timeout=timeout,
        spill=True,
    )
