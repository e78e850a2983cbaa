"""The system prompt and where the cache breakpoints go.

A system prompt is a list of named sections. The *static* ones (who the agent is, how it
works, how it uses tools) are the same for every session, so they come first; then a
boundary; then the *dynamic* ones (the environment, the date, the project's CLAUDE.md files,
later the session memory). Rendering puts a cache breakpoint on the last static block, so the
static part is written to the prompt cache once and read back on every later request, even
when the dynamic part changes. Claude Code splits its prompt the same way, at a marker it
calls ``SYSTEM_PROMPT_DYNAMIC_BOUNDARY``.

Each request gets up to three breakpoints (the API allows four):

1. the last tool definition: the tool list is the start of the prefix;
2. the end of the static system prompt;
3. the last block of the last message, which moves forward every turn, so each request
   reads the whole previous conversation from cache and writes only what is new.

Rendering is byte-stable: the same inputs always give the same blocks, because a single
changed byte before a breakpoint turns a cache read into a cache write.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from anthropic.types import Message

from harness.clock import Clock, isoformat
from harness.loop import Agent, ModelRequest, Plugin

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
# Claude Code follows @imports in CLAUDE.md files at most 5 levels deep.
MAX_IMPORT_DEPTH = 5


@dataclass(frozen=True)
class Section:
    name: str
    text: str
    dynamic: bool = False
    """Dynamic sections change between sessions; they go after the cached static part."""


@dataclass(frozen=True)
class SystemPrompt:
    sections: tuple[Section, ...]

    def __post_init__(self) -> None:
        kinds = [s.dynamic for s in self.sections]
        if kinds != sorted(kinds):
            late = next(
                s.name for i, s in enumerate(self.sections) if not s.dynamic and any(kinds[:i])
            )
            raise ValueError(f"static section {late!r} comes after a dynamic one: static go first")

    @property
    def static(self) -> list[Section]:
        return [s for s in self.sections if not s.dynamic]

    @property
    def dynamic(self) -> list[Section]:
        return [s for s in self.sections if s.dynamic]

    def render(self, *, cache: bool = True) -> list[dict[str, Any]]:
        """System blocks: the static part (with a breakpoint), then the dynamic part."""
        blocks: list[dict[str, Any]] = []
        static = "\n\n".join(s.text.strip() for s in self.static)
        dynamic = "\n\n".join(s.text.strip() for s in self.dynamic)
        if static:
            blocks.append({"type": "text", "text": static})
            if cache:
                blocks[-1]["cache_control"] = dict(EPHEMERAL)
        if dynamic:
            blocks.append({"type": "text", "text": dynamic})
        return blocks


# -- CLAUDE.md -------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryFile:
    """One CLAUDE.md file, its @imports already followed."""

    label: str
    """How the file is named to the model: ``~/.claude/CLAUDE.md`` or project-relative."""
    text: str
    notes: tuple[str, ...] = ()
    """Imports that were skipped (missing, a cycle, too deep), said plainly."""


_IMPORT = re.compile(r"(?<![\w`])@((?:~/|\.{1,2}/|/)?[\w.\-/]+)")


def _label(path: Path, project_root: Path, home: Path) -> str:
    if path.is_relative_to(project_root):
        return path.relative_to(project_root).as_posix()
    if path.is_relative_to(home):
        return "~/" + path.relative_to(home).as_posix()
    return path.name


def _expand(path: Path, chain: tuple[Path, ...], home: Path, root: Path, notes: list[str]) -> str:
    """The file's text with each ``@path`` replaced by that file's (expanded) text."""
    text = path.read_text(encoding="utf-8")
    out: list[str] = []
    in_code = False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        if in_code:
            out.append(line)
            continue
        out.append(_IMPORT.sub(lambda m: _import(m, path, chain, home, root, notes), line))
    return "".join(out)


def _import(
    match: re.Match[str],
    path: Path,
    chain: tuple[Path, ...],
    home: Path,
    root: Path,
    notes: list[str],
) -> str:
    spec = match.group(1)
    target = (home / spec[2:]) if spec.startswith("~/") else (path.parent / spec)
    target = target.resolve()
    here = _label(path, root, home)
    if not target.is_file():
        return match.group(0)  # not a file: an @mention, left as written
    if target in chain:
        cycle = " → ".join(_label(p, root, home) for p in (*chain, target))
        notes.append(f"import cycle skipped: {cycle}")
        return f"(import skipped: cycle {cycle})"
    if len(chain) > MAX_IMPORT_DEPTH:
        notes.append(f"import of {spec} in {here} skipped: deeper than {MAX_IMPORT_DEPTH} levels")
        return f"(import skipped: more than {MAX_IMPORT_DEPTH} levels deep)"
    return _expand(target, (*chain, target), home, root, notes).rstrip("\n")


def discover_claude_md(
    project_root: str | Path, cwd: str | Path | None = None, *, home: str | Path | None = None
) -> list[MemoryFile]:
    """The CLAUDE.md files that apply in ``cwd``, in the order they are given to the model.

    First the user's own (``~/.claude/CLAUDE.md``), then one per directory from the project
    root down to ``cwd`` (``CLAUDE.md`` or ``.claude/CLAUDE.md``), so the nearest, most
    specific instructions come last and win when they disagree.
    """
    root = Path(project_root).resolve()
    here = Path(cwd).resolve() if cwd is not None else root
    home_dir = Path(home).resolve() if home is not None else Path.home()
    if not here.is_relative_to(root):
        raise ValueError("cwd must be inside the project root")
    candidates = [home_dir / ".claude" / "CLAUDE.md"]
    directories = [
        root,
        *[
            root / Path(*here.relative_to(root).parts[: i + 1])
            for i in range(len(here.relative_to(root).parts))
        ],
    ]
    for directory in directories:
        candidates += [directory / "CLAUDE.md", directory / ".claude" / "CLAUDE.md"]
    files: list[MemoryFile] = []
    seen: set[Path] = set()  # one file reached twice (a symlink, home as the root) counts once
    for path in candidates:
        if path.is_file() and (real := path.resolve()) not in seen:
            seen.add(real)
            notes: list[str] = []
            text = _expand(real, (real,), home_dir, root, notes)
            files.append(MemoryFile(_label(real, root, home_dir), text.strip(), tuple(notes)))
    return files


def memory_section(files: Sequence[MemoryFile]) -> Section | None:
    """The dynamic section that carries the CLAUDE.md files, or None if there are none."""
    if not files:
        return None
    parts = [
        "Instructions from the user and the project follow. Follow them exactly: they take "
        "precedence over your default behaviour, and later (more specific) files take "
        "precedence over earlier ones."
    ]
    parts += [f"Contents of {f.label}:\n\n{f.text}" for f in files]
    return Section("claude_md", "\n\n".join(parts), dynamic=True)


def environment_section(clock: Clock, *, workspace_name: str, platform: str = "linux") -> Section:
    """Where and when the agent runs. Taken once per session: a date that changed at midnight
    would move every later byte and miss the cache (Claude Code memoizes it the same way)."""
    day = isoformat(clock.now())[:10]
    return Section(
        "environment",
        f"Environment:\n- Working directory: {workspace_name} (tools take paths relative to it)\n"
        f"- Platform: {platform}\n- Today's date: {day}",
        dynamic=True,
    )


# -- breakpoints on a request ----------------------------------------------------------------


class TooManyBreakpoints(ValueError):
    """More than 4 cache_control blocks: refused here, before the API would refuse it."""


def count_breakpoints(request: ModelRequest) -> int:
    blocks: list[Any] = [*(request.tools or [])]
    if isinstance(request.system, list):
        blocks += request.system
    for message in request.messages:
        if isinstance(message.get("content"), list):
            blocks += message["content"]
    return sum(1 for b in blocks if isinstance(b, dict) and b.get("cache_control"))


def with_breakpoints(request: ModelRequest) -> ModelRequest:
    """The request with breakpoints on the last tool and the last message (copies, never the
    agent's own conversation: a breakpoint left behind there would pile up turn after turn)."""
    tools = copy.deepcopy(request.tools) if request.tools else request.tools
    if tools:
        # The API wants 1-hour breakpoints before 5-minute ones: if the system prompt caches
        # for an hour, the tools before it must too.
        system = request.system if isinstance(request.system, list) else []
        hour = any((b.get("cache_control") or {}).get("ttl") == "1h" for b in system)
        tools[-1]["cache_control"] = {**EPHEMERAL, "ttl": "1h"} if hour else dict(EPHEMERAL)
    messages = list(request.messages)
    if messages:
        last = copy.deepcopy(messages[-1])
        content = last["content"]
        blocks: list[dict[str, Any]] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else content
        )
        blocks[-1].setdefault("cache_control", dict(EPHEMERAL))  # keep a breakpoint set there
        last["content"] = blocks
        messages[-1] = last
    cached = replace(request, tools=tools, messages=messages)
    if (n := count_breakpoints(cached)) > MAX_BREAKPOINTS:
        raise TooManyBreakpoints(
            f"this request would carry {n} cache breakpoints; the API allows {MAX_BREAKPOINTS}"
        )
    return cached


@dataclass
class PromptCaching(Plugin):
    """Adds the moving breakpoints to every request the agent sends (at ``call_model``)."""

    requests: list[ModelRequest] = field(default_factory=list)

    def call_model(
        self, agent: Agent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        cached = with_breakpoints(request)
        self.requests.append(cached)
        return call(cached)


def default_sections(tools: Iterable[str]) -> list[Section]:
    """The course agent's static sections: who it is, how it works, how it uses tools."""
    names = ", ".join(tools) or "none"
    return [
        Section(
            "identity",
            "You are a coding agent working in a user's project. You read and change files and "
            "run commands with the tools you are given, and you explain what you did briefly.",
        ),
        Section(
            "doing_tasks",
            "Doing tasks:\n- Read the relevant code before changing it.\n- Make the smallest "
            "change that solves the problem, then check it (run the tests if there are any).\n"
            "- If something fails, read the error and fix the cause, not the symptom.",
        ),
        Section(
            "tool_use",
            f"Using tools:\n- Your tools: {names}.\n- Paths are relative to the working "
            "directory.\n- Call several read-only tools in one reply when they do not depend "
            "on each other: they run in parallel.",
        ),
    ]
