"""The slash commands of the interactive session: ``/compact``, ``/cost``, ``/context``, ...

Each command is a function of the session and its argument text; it prints through the
console and returns whether the session goes on. They call the chapters' code: ``/compact``
is chapter 05's :func:`~harness.compaction.summary.compact`, ``/memory`` reads chapter 07's
memory and chapter 03's CLAUDE.md files, ``/cost`` and ``/context`` read the meter and the
next request (:mod:`harness.cli.report`), ``/todos`` shows chapter 12's todo list, and
``/hooks`` chapter 13's hooks from the settings files, ``/mcp`` chapter 14's MCP servers,
``/bashes`` (or ``/tasks``, Claude Code's name) chapter 15's background shells. Any
other ``/name`` is the user's own: a command file or a skill (chapter 13), expanded into a
prompt and run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from rich.text import Text

from harness.cli.assemble import Harness
from harness.cli.background import show_shells
from harness.cli.extensions import expand_command
from harness.cli.mcp import McpServers, show_servers
from harness.cli.report import context_parts, cost_rows
from harness.cli.terminal import Activity, readable, table
from harness.cli.todos import checklist
from harness.compaction.summary import CompactionError, compact
from harness.memory import SessionMemoryError


@dataclass
class Shell:
    """What a command may touch: the session (replaced by ``/clear``), the console, the
    spinner, and a way to start a new session."""

    harness: Harness
    console: Console
    activity: Activity
    new_session: Callable[[], Harness]
    prompt: Callable[[str], object] = field(default=lambda _text: None)
    """Runs a prompt in the session (what a user's own ``/command`` expands to)."""
    end: Callable[[Harness, str], None] = field(default=lambda _harness, _reason: None)
    """Ends a session with a reason (its SessionEnd hooks run)."""
    servers: McpServers | None = None
    """The program's MCP servers (they outlive ``/clear``)."""


Command = Callable[[Shell, str], bool]


def _help(shell: Shell, _: str) -> bool:
    rows = [(f"/{name}", text) for name, (_, text) in COMMANDS.items()]
    shell.console.print(table("Commands", ["command", "what it does"], rows, numbers=False))
    extensions = shell.harness.extensions
    if extensions is not None and extensions.skills.commands.commands:
        own = [
            (f"/{c.name}" + (f" {c.argument_hint}" if c.argument_hint else ""), c.description)
            for c in extensions.skills.commands.commands
        ]
        shell.console.print(
            table("Your commands and skills", ["command", "what it does"], own, numbers=False)
        )
    shell.console.print(
        Text("Anything else is a prompt. Ctrl-C stops the model's turn; twice exits.", style="dim")
    )
    return True


def _exit(_shell: Shell, _: str) -> bool:
    return False


def _clear(shell: Shell, _: str) -> bool:
    old = shell.harness.session_id
    shell.end(shell.harness, "clear")
    shell.harness.close()  # its background shells end with it
    shell.harness = shell.new_session()
    shell.console.print(
        Text(
            f"New session {shell.harness.session_id[:8]} (the last one, {old[:8]}, can be "
            "resumed with --resume).",
            style="magenta",
        )
    )
    return True


def _compact(shell: Shell, instructions: str) -> bool:
    agent = shell.harness.agent
    if not agent.messages:
        shell.console.print(Text("Nothing to compact yet.", style="yellow"))
        return True
    shell.activity.show("compacting the conversation…")
    try:
        report = compact(
            agent,
            pinned=shell.harness.auto.pinned,
            trigger="manual",
            instructions=instructions.strip(),
        )
    except CompactionError as error:
        shell.activity.hide()
        shell.console.print(Text(f"⚠ compaction failed: {error}", style="yellow"))
        return True
    shell.activity.hide()
    shell.console.print(Text(str(report.rewrite("manual").event), style="magenta"))
    return True


def _cost(shell: Shell, _: str) -> bool:
    meter = shell.harness.agent.meter
    rows = [
        (
            r.model,
            f"{r.calls:,}",
            f"{r.input:,}",
            f"{r.cache_write:,}",
            f"{r.cache_read:,}",
            f"{r.output:,}",
            "unpriced" if r.usd is None else f"${r.usd:.4f}",
        )
        for r in cost_rows(meter)
    ]
    if not rows:
        shell.console.print(Text("No model calls yet: $0.", style="dim"))
        return True
    columns = ["model", "calls", "input", "cache write", "cache read", "output", "cost"]
    shell.console.print(table("Cost of this session", columns, rows))
    shell.console.print(
        Text(
            f"total ${meter.total.total:.4f}; {meter.cache_read_share:.0%} of prompt tokens "
            "read from the cache (subagents, forks, summaries and memory included)",
            style="dim",
        )
    )
    return True


def _context(shell: Shell, _: str) -> bool:
    agent = shell.harness.agent
    parts = context_parts(agent, shell.harness.auto.budget)
    window = agent.context_window
    rows = []
    for part in parts:
        share = part.tokens / window
        bar = "█" * round(share * 30)
        rows.append((part.name, f"{part.tokens:,}", f"{share:.1%}", bar))
    shell.console.print(
        table(f"Context window: {window:,} tokens", ["part", "tokens", "share", ""], rows)
    )
    shell.console.print(
        Text(
            f"{len(agent.messages)} messages; auto-compact at "
            f"{shell.harness.auto.threshold:,} tokens (estimates by harness.tokens)",
            style="dim",
        )
    )
    return True


def _memory(shell: Shell, _: str) -> bool:
    h = shell.harness
    files = ", ".join(h.claude_md) or "none found"
    shell.console.print(Text(f"CLAUDE.md files in the system prompt: {files}", style="bold"))
    try:
        where = h.memory.path.relative_to(h.agent.workspace)
    except ValueError:
        where = h.memory.path
    shell.console.print(Text(f"Session memory: {where}", style="bold"))
    try:
        h.memory.load(h.agent.clock.now())
    except SessionMemoryError as error:  # broken by hand, or a link out of the folder
        shell.console.print(Text(f"⚠ {error}", style="yellow"))
        if h.memory_error is not None:
            shell.console.print(
                Text("(session memory is off for this session: fix the file, then resume)")
            )
        return True
    text = h.memory.text().strip()
    shell.console.print(
        Text(text)
        if h.memory.facts
        else Text(
            "(empty: the first extraction comes once the session has used 10,000 tokens "
            "and made 3 tool calls; edit the file by hand and it is read again)",
            style="dim",
        )
    )
    return True


def _hooks(shell: Shell, _: str) -> bool:
    extensions = shell.harness.extensions
    hooks = extensions.settings.hooks if extensions is not None else ()
    if extensions is None or not hooks:
        shell.console.print(Text("No hooks in the settings files.", style="dim"))
        return True
    rows = [  # a command is shown as written: control characters made visible
        (h.event, readable(h.matcher or "*"), readable(h.command), h.scope, f"{h.timeout:g} s")
        for h in hooks
    ]
    columns = ["event", "matcher", "command", "from", "timeout"]
    shell.console.print(table("Hooks from the settings files", columns, rows, numbers=False))
    trusted = extensions.trust.status()
    said = {True: "trusted", False: "not trusted", None: "not asked yet"}[trusted]
    shell.console.print(Text(f"This folder's own hooks: {said}.", style="dim"))
    return True


def _mcp(shell: Shell, name: str) -> bool:
    show_servers(shell.console, shell.servers, name)
    return True


def _bashes(shell: Shell, argument: str) -> bool:
    show_shells(shell.console, shell.harness.background, argument)
    return True


def _todos(shell: Shell, _: str) -> bool:
    shell.console.print(checklist(shell.harness.planning))
    return True


COMMANDS: dict[str, tuple[Command, str]] = {
    "compact": (_compact, "summarise the conversation now; text after it guides the summary"),
    "cost": (_cost, "tokens and dollars of this session, per model"),
    "context": (_context, "what fills the context window, by part"),
    "memory": (_memory, "the CLAUDE.md files and this session's memory"),
    "todos": (_todos, "the model's todo list: what is done, under way, left"),
    "hooks": (_hooks, "the hooks from the settings files, and whether this folder is trusted"),
    "mcp": (_mcp, "the MCP servers and their state; /mcp <server>: its tools and stderr"),
    "bashes": (_bashes, "background shells; /bashes <id>: its output; /bashes stop <id>"),
    "clear": (_clear, "start a new session (this one stays on disk)"),
    "help": (_help, "this list"),
    "exit": (_exit, "leave (Ctrl-D works too)"),
}


ALIASES = {"quit": "exit", "tasks": "bashes"}
"""Other names for commands: ``/quit``, and ``/tasks`` (Claude Code's name for ``/bashes``)."""


def dispatch(shell: Shell, line: str) -> bool:
    """Run a slash command; False means the session should end."""
    name, _, argument = line.strip()[1:].partition(" ")
    found = COMMANDS.get(ALIASES.get(name.lower(), name.lower()))
    if found is None:
        return _own(shell, name, line)
    return found[0](shell, argument)


def _own(shell: Shell, name: str, line: str) -> bool:
    """The user's own ``/name``: a command file or a skill, expanded and run as a prompt."""
    extensions = shell.harness.extensions
    try:
        prompt = expand_command(extensions, line) if extensions is not None else None
    except ValueError as error:
        shell.console.print(Text(f"⚠ {error}", style="yellow"))
        return True
    if prompt is None:
        shell.console.print(Text(f"Unknown command /{name}: /help lists them.", style="yellow"))
        return True
    shell.prompt(prompt)
    return True
