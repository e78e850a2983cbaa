"""Chapter 14's scenes: MCP servers in a project, an agent that calls their tools, and the same
work with 150 tools listed on every request or found with tool search.

The servers are real processes (:mod:`harness.mcp.servers`, ``mcp_server_git``) started by
:func:`harness.mcp.session.session_mcp`; the model is scripted, with a fake clock and chapter
03's :class:`~harness.prompt.PromptCaching`, so every request, what it read from the prompt
cache and what it wrote, can be measured and is the same on every run. Nothing here starts a
server on import; a scene that starts one closes it.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from IPython.display import Code

from harness.agent import Agent
from harness.clock import FakeClock
from harness.mcp.schema import CheckedTool, check_tool
from harness.mcp.search import TOOL_SEARCH_NAME, deferred, deferred_section, tool_search_tool
from harness.mcp.servers.many import generated_tools
from harness.mcp.session import SessionMcp
from harness.mcp.tools import McpTool
from harness.messages import from_reply, tool_result, user
from harness.model import DEFAULT_MODEL, ScriptedModel
from harness.model.scripted import Step, reply, tool_call
from harness.points import ModelRequest
from harness.pricing import MeteredCall, cost_of
from harness.prompt import PromptCaching, Section, SystemPrompt, default_sections, with_breakpoints
from harness.tokens import estimate_tools
from harness.tools import Hooks, Permissions, builtin_tools
from harness.tools.base import Tool, ToolContext
from harness.tools.workspace import Workspace

Layout = Literal["listed", "searched", "added to tools"]

ISSUE_PROMPTS = (
    "Find the open issues about the login page and tell me what the newest one says.",
    "Is there a pull request that fixes it?",
)
"""The two prompts of the 150-tool session: each needs two of the ``many`` server's tools."""


def server_entry(module: str, *args: str) -> dict[str, Any]:
    """An ``.mcp.json`` entry that runs ``python -m module args`` with this Python."""
    return {"command": sys.executable, "args": ["-m", module, *args]}


def write_mcp_json(root: Path, servers: Mapping[str, Mapping[str, Any]]) -> Path:
    """Write the project's ``.mcp.json`` (Claude Code's format) under ``root``; its path."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}, indent=2) + "\n", encoding="utf-8")
    return path


def shown(text: str, root: Path | None = None) -> str:
    """``text`` as a chapter prints it: this Python as ``python``, ``root`` as ``.``."""
    text = text.replace(sys.executable, "python")
    if root is not None:
        text = text.replace(str(root.resolve()), ".")
    return text


def git_project(root: Path) -> Path:
    """A small git repository at ``root``: one commit (fixed author and date, so the same
    hash on every machine), then an edit not yet committed."""
    root.mkdir(parents=True, exist_ok=True)
    env = {
        "GIT_AUTHOR_NAME": "Ana",
        "GIT_AUTHOR_EMAIL": "ana@example.com",
        "GIT_COMMITTER_NAME": "Ana",
        "GIT_COMMITTER_EMAIL": "ana@example.com",
        "GIT_AUTHOR_DATE": "2026-11-20T10:00:00+00:00",
        "GIT_COMMITTER_DATE": "2026-11-20T10:00:00+00:00",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    (root / "tax.py").write_text("RATE = Decimal('0.20')\n", encoding="utf-8")
    write_mcp_json(root, {"git": server_entry("mcp_server_git", "--repository", ".")})
    git("add", ".")
    git("commit", "-q", "-m", "Add the standard tax rate")
    (root / "tax.py").write_text("RATE = Decimal('0.21')\n", encoding="utf-8")
    return root


# -- an agent over MCP tools -------------------------------------------------------------------


def mcp_system(tools: Sequence[Tool[Any]], section: Section | None = None) -> list[dict[str, Any]]:
    """Chapter 03's system prompt for ``tools``, naming the tools that are not MCP tools (an
    MCP tool's name and description are in ``tools``), then ``section`` if there is one."""
    names = [t.name for t in tools if not isinstance(t, McpTool)]
    sections = [*default_sections(names), *([section] if section else [])]
    return SystemPrompt(tuple(sections)).render()


def excerpt(obj: Any, first: str, stop: str) -> Code:
    """Part of ``obj``'s source, as :func:`harness.notebook.show` shows it: from the first
    line that holds ``first`` to the line before the next one (after it) that holds
    ``stop``."""
    lines = inspect.getsource(obj).splitlines()
    start = next(i for i, line in enumerate(lines) if first in line)
    end = next((i for i in range(start + 1, len(lines)) if stop in lines[i]), len(lines))
    where = f"# {inspect.getmodule(obj).__name__.replace('.', '/')}.py (part)\n"  # type: ignore[union-attr]
    return Code(where + textwrap.dedent("\n".join(lines[start:end])), language="python")  # type: ignore[no-untyped-call]


def mcp_agent(
    root: Path,
    tools: Sequence[Tool[Any]],
    steps: Sequence[Step],
    *,
    section: Section | None = None,
    permissions: Permissions | None = None,
    approver: Callable[[Any], bool] | None = None,
    hooks: Hooks | None = None,
    model: ScriptedModel | None = None,
) -> Agent:
    """An agent on ``root`` with ``tools``, a scripted model playing ``steps`` (added to
    ``model``'s script when one is given, to share its prompt cache), chapter 03's system
    prompt (with ``section``, the deferred tools' names, when there is one) and caching."""
    clock = FakeClock()
    if model is None:
        model = ScriptedModel(list(steps), clock=clock)
    else:
        model.extend(list(steps))
    return Agent(
        model,
        tools=list(tools),
        workspace=root,
        system=mcp_system(tools, section),
        permissions=permissions,
        approver=approver or (lambda request: True),
        hooks=hooks,
        clock=model.clock,
        plugins=[PromptCaching()],
    )


def issue_steps(*, search: bool) -> list[Step]:
    """The model's replies to :data:`ISSUE_PROMPTS`; with ``search``, it loads each tool it
    needs with ``ToolSearch`` first (``select:``, the names being in its system prompt)."""

    def load(*names: str) -> list[Step]:
        query = "select:" + ",".join(f"mcp__many__{n}" for n in names)
        return [reply("Loading the tools.", tool_calls=[tool_call(TOOL_SEARCH_NAME, query=query)])]

    return [
        *(load("issues_search", "issues_get") if search else []),
        reply(tool_calls=[tool_call("mcp__many__issues_search", query='"login page"')]),
        reply(tool_calls=[tool_call("mcp__many__issues_get", id="ISS-1042")]),
        reply("ISS-1042, the newest: the login page rejects passwords with a space."),
        *(load("pulls_search") if search else []),
        reply(tool_calls=[tool_call("mcp__many__pulls_search", query="ISS-1042")]),
        reply("Yes: PR-311 fixes ISS-1042 and is waiting for review."),
    ]


@dataclass
class McpSession:
    """:data:`ISSUE_PROMPTS` run over one ``many`` server: the agent and each request."""

    layout: str
    agent: Agent
    model: ScriptedModel
    tools_tokens: int
    """The tokens of the first request's tool definitions that are rendered (not deferred)."""
    calls: list[MeteredCall] = field(default_factory=list)

    def prompt_tokens(self) -> list[int]:
        return [c.prompt_tokens for c in self.calls]

    def costs(self) -> list[float]:
        return [c.cost.total if c.cost else 0.0 for c in self.calls]


def issue_session(root: Path, mcp: SessionMcp) -> McpSession:
    """:data:`ISSUE_PROMPTS` with ``mcp``'s tools beside the built-in ones; the person allows
    the ``many`` server's tools with one rule (``mcp__many``)."""
    search = mcp.search is not None
    tools = [*builtin_tools(), *mcp.all_tools()]
    agent = mcp_agent(
        root,
        tools,
        issue_steps(search=search),
        section=mcp.section,
        permissions=Permissions.from_rules(allow=["mcp__many"]),
    )
    for prompt in ISSUE_PROMPTS:
        list(agent.run(prompt))
    definitions = [t.definition() for t in tools]
    assert isinstance(agent.model, ScriptedModel)
    return McpSession(
        "searched" if search else "listed",
        agent,
        agent.model,
        estimate_tools([d for d in definitions if not d.get("defer_loading")]),
        list(agent.meter.calls),
    )


def continue_with(
    session: McpSession,
    root: Path,
    mcp: SessionMcp,
    prompt: str,
    steps: Sequence[Step],
    *,
    section: Section | None = None,
) -> MeteredCall:
    """Carry ``session``'s conversation on with ``mcp``'s tools (a server restarted with
    another list) on the same model, so the same prompt cache; the first request's cost.
    ``section``: the system prompt's deferred-names section to keep (the old one)."""
    tools = [*builtin_tools(), *mcp.all_tools()]
    agent = mcp_agent(
        root,
        tools,
        steps,
        section=section if section is not None else mcp.section,
        permissions=Permissions.from_rules(allow=["mcp__many"]),
        model=session.model,
    )
    agent.messages = list(session.agent.messages)
    list(agent.run(prompt))
    return agent.meter.calls[0]


# -- listed, searched, added to tools: the same work at 5, 50 and 200 tools ---------------------


def many_checked(count: int) -> list[CheckedTool]:
    """The ``many`` server's first ``count`` tools, checked as a session checks them."""
    checked = [check_tool("many", tool) for tool in generated_tools(count)]
    return [c for c in checked if isinstance(c, CheckedTool)]


LOADED = ("mcp__many__issues_search", "mcp__many__issues_get")
"""The two MCP tools the comparison's session uses (among the first five at every size)."""

WORK: list[tuple[str, dict[str, Any], str]] = [
    ("glob", {"pattern": "app/*.py"}, "app/login.py\napp/session.py\n"),
    ("read_file", {"path": "app/login.py"}, "def check(password):  # a line of login code\n" * 40),
    (LOADED[0], {"query": '"login page"'}, "ISS-1042 open: login rejects spaces\n" * 8),
    (LOADED[1], {"id": "ISS-1042"}, "ISS-1042: the login page rejects a password with a space.\n"),
    ("edit_file", {"path": "app/login.py", "old_string": "strip()", "new_string": ""}, "Edited."),
    ("bash", {"command": "pytest -q"}, "......... 9 passed\n"),
]
"""The comparison's tool calls, each with the result the script gives it, then a summary."""


@dataclass(frozen=True)
class Turn:
    """One request of a :func:`layout_session`: what it did, and its prompt and cost."""

    did: str
    prompt: int
    read: int
    written: int
    cost: float


def layout_session(
    layout: Layout,
    mcp: Sequence[dict[str, Any]],
    *,
    work: Sequence[tuple[str, dict[str, Any], str]] = WORK,
    loaded: Sequence[str] = LOADED,
    prompt: str = "Fix the login issue the tracker has open, then run the tests.",
    summary: str = "Fixed: spaces are kept; 9 tests pass.",
) -> tuple[int, list[Turn]]:
    """``work`` (each call with the result the script gives it, then ``summary``) with the MCP
    definitions ``mcp`` in ``layout``: the first request's rendered tool tokens, and every
    request. ``searched``: the MCP tools deferred, their names in the system prompt, one
    ``ToolSearch`` for ``loaded`` before the first of them is used (the API expands the
    references where they sit); ``added to tools``: the same search, but the loaded
    definitions are then appended to ``tools``, as a harness without ``tool_reference`` would
    do. The tool search benchmark runs it too, on ``mcp-server-git``'s definitions."""
    builtins = [t.definition() for t in builtin_tools()]
    sections = default_sections([t["name"] for t in builtins])
    calls = list(work)
    tools = [*builtins, *mcp]
    search = tool_search_tool(lambda: tools)
    if layout != "listed":
        section = deferred_section(mcp)
        assert section is not None
        sections.append(section)
        first = next(i for i, (name, _, _) in enumerate(calls) if name in loaded)
        calls.insert(first, (TOOL_SEARCH_NAME, {"query": "select:" + ",".join(loaded)}, ""))
        tools = [*builtins, *(deferred(t) for t in mcp if layout == "searched")]
        tools.append(search.definition())
    system = SystemPrompt(tuple(sections)).render()
    rendered = estimate_tools([t for t in tools if not t.get("defer_loading")])
    steps: list[Step] = [reply(tool_calls=[tool_call(n, a)]) for n, a, _ in calls]
    model = ScriptedModel([*steps, reply(summary)])
    context = ToolContext(workspace=Workspace(Path.cwd()), clock=FakeClock())
    messages: list[Any] = [user(prompt)]
    turns: list[Turn] = []
    for name, _, result in [*calls, ("summary", {}, "")]:
        request = with_breakpoints(
            ModelRequest(DEFAULT_MODEL, 1024, messages, system=system, tools=tools)
        )
        answer = model.create(**request.kwargs())
        usage = answer.usage
        read, written = usage.cache_read_input_tokens or 0, usage.cache_creation_input_tokens or 0
        prompt_tokens = usage.input_tokens + read + written
        turns.append(Turn(name, prompt_tokens, read, written, cost_of(usage, DEFAULT_MODEL).total))
        if name == "summary":
            break
        use = answer.content[-1]
        content: Any = result
        if use.type == "tool_use" and use.name == TOOL_SEARCH_NAME:
            content = search(dict(use.input), context)
            if layout == "added to tools":
                tools = [*tools, *(t for t in mcp if t["name"] in loaded)]
                content = "Loaded: " + ", ".join(loaded)
        assert use.type == "tool_use"
        messages += [from_reply(answer), user([tool_result(use.id, content)])]
    return rendered, turns


def many_definitions(count: int) -> list[dict[str, Any]]:
    """The definitions of the ``many`` server's first ``count`` tools, as a session sends them."""
    return [
        McpTool(name=c.name, description=c.description, checked=c).definition()
        for c in many_checked(count)
    ]


def compare_layouts(
    counts: Sequence[int] = (5, 50, 200),
) -> dict[tuple[int, str], tuple[int, list[Turn]]]:
    """:func:`layout_session` for every count and layout."""
    layouts: tuple[Layout, ...] = ("listed", "searched", "added to tools")
    return {
        (n, layout): layout_session(layout, many_definitions(n))
        for n in counts
        for layout in layouts
    }


__all__ = [
    "ISSUE_PROMPTS",
    "LOADED",
    "WORK",
    "Layout",
    "McpSession",
    "Turn",
    "compare_layouts",
    "continue_with",
    "excerpt",
    "git_project",
    "issue_session",
    "issue_steps",
    "layout_session",
    "many_checked",
    "many_definitions",
    "mcp_agent",
    "mcp_system",
    "server_entry",
    "shown",
    "write_mcp_json",
]
