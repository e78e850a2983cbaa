"""The system prompt and where the cache breakpoints go.

A system prompt is a list of named sections. The *static* ones (who the agent is, how it
works, how it uses tools) are the same for every session, so they come first; then a
boundary; then the *dynamic* ones (the environment, the date, the project's CLAUDE.md files,
anything else that belongs to this session). Rendering puts a cache breakpoint on the last
static block, so the static part is written to the prompt cache once and read back on every
later request, even when the dynamic part changes. Claude Code splits its prompt the same
way, at a marker it calls ``SYSTEM_PROMPT_DYNAMIC_BOUNDARY``.

Each request gets up to four breakpoints, the most the API allows:

1. the last tool definition: the tool list is the start of the prefix;
2. the end of the static system prompt;
3. the last block of the last message, which moves forward every turn, so each request
   reads the whole previous conversation from cache and writes only what is new;
4. the last block of ``messages[-3]``, when that is a user message: the message the
   previous request ended with, where it wrote its entry (request N is ``[..., U_N]``,
   request N+1 is ``[..., U_N, A_N, U_N+1]``). A breakpoint finds an earlier entry only
   within 20 positions, its own counted first, and on the API a run of consecutive
   ``tool_use`` blocks is one position, and so is a run of ``tool_result`` blocks: a reply
   of one line and any number of parallel calls, with their results, adds three. What adds
   20 or more is other content: a reply that puts a line of text before each of its ten
   calls (21 positions with the results), or a user message of twenty pasted screenshots and
   a question. Then breakpoint 3 is out of reach of the previous entry and the whole
   conversation would be written again at 1.25×; breakpoint 4 sits exactly on that entry
   and reads it whatever the turn added. It is optional: left out when it would make more
   than four. (A sequential loop never piles up between two writes here, because every
   request of the loop writes at its breakpoint 3; a harness that marks only the user's
   prompt lets each round of the loop add two positions, and its next prompt misses.)

The simplest alternative is *automatic caching*: one ``cache_control`` at the top level of
the request, which the API turns into a breakpoint on the last block and so moves forward by
itself. ``PromptCaching(automatic=True)`` sends that instead of breakpoints 1, 3 and 4 (the
static system prompt keeps its own); see :func:`with_automatic_caching`.

Rendering is byte-stable: the same inputs always give the same blocks, because a single
changed byte before a breakpoint turns a cache read into a cache write.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from anthropic.types import Message

from harness import messages as m
from harness import tokens
from harness.clock import Clock, isoformat
from harness.loop import BaseAgent, ModelRequest, Plugin

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
# Claude Code follows @imports in CLAUDE.md files at most four hops deep: "Imported files can
# recursively import other files, with a maximum depth of four hops" (its memory page,
# https://code.claude.com/docs/en/memory, checked 2026-11-26; the page said five before).
MAX_IMPORT_DEPTH = 4


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


def _marked_copy(message: m.MessageDict, control: dict[str, Any]) -> m.MessageDict:
    """A deep copy of ``message`` with ``control`` on its last block (one already set there is
    kept). A string content becomes one text block, since only blocks carry ``cache_control``."""
    marked = m.fresh(message)
    blocks = m.blocks(marked)
    if blocks:
        blocks[-1].setdefault("cache_control", control)
    marked["content"] = blocks
    return marked


def _hour(blocks: Iterable[Mapping[str, Any]]) -> bool:
    return any((b.get("cache_control") or {}).get("ttl") == "1h" for b in blocks)


def with_breakpoints(request: ModelRequest) -> ModelRequest:
    """The request with breakpoints on the last tool, the last message and, when there is room,
    the message the previous request ended with (``messages[-3]``: it reads the previous
    entry after a turn that added more positions than the lookback reaches, such as a reply
    that narrates each of its calls; see the module's docstring). All go on copies, never on
    the agent's own conversation, where they would pile up turn after turn.
    """
    tools = m.fresh(request.tools) if request.tools else request.tools
    # A deferred tool (``defer_loading``, chapter 14) is not in the prefix and may not carry a
    # breakpoint (the API refuses it): the last tool that is rendered takes it.
    rendered = [tool for tool in tools or [] if not tokens.is_deferred(tool)]
    if rendered:
        # The API wants 1-hour breakpoints before 5-minute ones: if the system prompt caches
        # for an hour, the tools before it must too.
        hour = _hour(request.system if isinstance(request.system, list) else [])
        rendered[-1]["cache_control"] = {**EPHEMERAL, "ttl": "1h"} if hour else dict(EPHEMERAL)
    messages = list(request.messages)
    if messages:
        messages[-1] = _marked_copy(messages[-1], dict(EPHEMERAL))
    cached = replace(request, tools=tools, messages=messages)
    if (n := count_breakpoints(cached)) > MAX_BREAKPOINTS:
        raise TooManyBreakpoints(
            f"this request would carry {n} cache breakpoints; the API allows {MAX_BREAKPOINTS}"
        )
    previous_end = messages[-3] if len(messages) >= 3 else None
    if (
        previous_end is not None
        and previous_end.get("role") == "user"
        and (blocks := m.blocks(previous_end))
        and not blocks[-1].get("cache_control")  # already a breakpoint: kept as it is
        and n < MAX_BREAKPOINTS  # no room: left out (it only saves money, it is not needed)
    ):
        # A 1-hour breakpoint later in the request needs this one to be 1-hour too.
        hour = _hour(b for message in messages[-2:] for b in m.blocks(message))
        control = {**EPHEMERAL, "ttl": "1h"} if hour else dict(EPHEMERAL)
        marked = _marked_copy(previous_end, control)
        cached = replace(cached, messages=[*messages[:-3], marked, *messages[-2:]])
    return cached


def with_automatic_caching(request: ModelRequest, *, ttl: str | None = None) -> ModelRequest:
    """The request with a top-level ``cache_control``: automatic caching.

    The API puts the breakpoint on the last block that can carry one, so it moves forward with
    the conversation and nothing in the messages needs marking. It takes one of the four
    places a request has for breakpoints. ``ttl="1h"`` asks for 1-hour entries.
    """
    control = {**EPHEMERAL, "ttl": ttl} if ttl else dict(EPHEMERAL)
    return replace(request, extra={**request.extra, "cache_control": control})


@dataclass
class PromptCaching(Plugin):
    """Adds the moving breakpoints to every request the agent sends (at ``call_model``).

    ``automatic=True`` sends one top-level ``cache_control`` instead (automatic caching, see
    :func:`with_automatic_caching`): simpler, with no breakpoint on the tools and nothing to
    bridge a turn that adds more positions than the lookback reaches.
    """

    requests: list[ModelRequest] = field(default_factory=list)
    automatic: bool = False

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        cached = with_automatic_caching(request) if self.automatic else with_breakpoints(request)
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
