"""The offline demo model of the command line: a scripted model that follows simple wording.

With no ``ANTHROPIC_API_KEY`` the command line still runs every mechanism: this model
answers. It is chapter 00's :class:`~harness.model.ScriptedModel` (real ``anthropic.types``,
computed usage, the cache simulator) with one responder that reads your latest words and
picks a tool by keyword: ``list files``, ``read notes.md``, ``search TODO``, ``write
notes.md hello``, ``run ls -la``, ``sleep 5``, ``delegate <task>``, ``fork <question>``,
``todo <step>; <step>; ...`` (the whole todo list, a step marked ``[x]`` done or ``[~]`` under
way), ``plan <step>; <step>; ...`` (a plan for approval: ``exit_plan_mode``), ``skill <name>
[arguments]`` (load one of your skills with chapter 13's ``Skill`` tool), ``mcp <full tool
name> {json arguments}`` (call an MCP server's tool, chapter 14: ``mcp
mcp__course__lookup_ticket {"ticket_id": "T-101"}``), ``background <command>`` (run it in the
background, chapter 15: ``/bashes`` lists it). ``flaky``
makes the next model calls fail with 529s first, so you can watch the retries. A
compaction request gets chapter 05's scripted summary; a memory extraction, chapter 07's
scripted extraction. It reads past ``<system-reminder>`` text (a reminder, a progress file's
briefing) and ``<task-notification>`` text (a background shell finished): keywords there are
not the person's.

This is a stand-in, and it says so in every reply: a real model decides for itself which
tools to call and in what order. Set ``ANTHROPIC_API_KEY`` and the same program runs live.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from harness import messages as m
from harness.clock import Clock
from harness.compaction.summary import is_compaction_request
from harness.model import ScriptedModel, faults
from harness.model.scripted import Reply, Request, ToolCall
from harness.model.scripted_memory import is_extraction_request, scripted_extraction
from harness.model.scripted_summary import scripted_summary
from harness.planning import EXIT_PLAN_TOOL, TODO_TOOL, parse_checklist
from harness.skills.tool import SKILL_TOOL
from harness.tokens import truncate_text
from harness.tools.outputs import output_text

DEMO_NOTE = "(offline demo model: it follows keywords; set ANTHROPIC_API_KEY for a real model)"

HELP = (
    "I am the offline demo model: I pick a tool by keyword. Try: `list files`, `read "
    "README.md`, `search TODO`, `write notes.md remember the milk`, `run ls -la`, `sleep 5` "
    "(then press Ctrl-C), `delegate search TODO`, `fork read README.md`, `todo read; [~] fix; "
    "test`, `plan read the code; fix it` (with --permission-mode plan), `skill <name>` (one of "
    'your skills, from .claude/skills), `mcp mcp__<server>__<tool> {"arg": 1}` (a tool of '
    "an MCP server, /mcp lists them), `background <command>` (in the background: /bashes "
    "lists it), or `flaky` "
    "(two 529s first, then an answer)."
)

RESULT_TOKENS = 300  # our choice: how much of each tool result the demo quotes back
_REMINDER = re.compile(r"<(system-reminder|task-notification)>.*?(?:</\1>|$)", re.DOTALL)


def _said(request: Request) -> str:
    """The text of the latest user message (a prompt or directive), or "" if it holds only
    tool results (the model is being told what its calls returned). System reminders are
    left out: they are the harness's words, added to the person's or to tool results."""
    last = request.last_message
    if last.get("role") != "user":
        return ""
    text = " ".join(str(b.get("text", "")) for b in m.blocks(last) if b.get("type") == "text")
    return _REMINDER.sub(" ", text).strip()


def _todos(text: str) -> list[dict[str, str]]:
    """``a; [x] b; [~] c``: the items of a todo list, in order (``[x]`` done, ``[~]`` under
    way, else pending); with none under way, the first one pending is."""
    lines = []
    for part in text.split(";"):
        step = " ".join(part.split())
        found = re.fullmatch(r"\[([ xX~])\]\s*(.+)", step)
        mark, step = (found[1], found[2]) if found else (" ", step)
        if step:
            lines.append(f"- [{mark}] {step}")
    items = parse_checklist("\n".join(lines)).as_json()
    if not any(i["status"] == "in_progress" for i in items):
        first = next((i for i in items if i["status"] == "pending"), None)
        if first is not None:
            first["status"] = "in_progress"
    return items


def _plan(text: str) -> str:
    """``a; b``: a plan in Markdown, one numbered step each."""
    steps = [" ".join(s.split()) for s in text.split(";")]
    return "\n".join(f"{i}. {step}" for i, step in enumerate((s for s in steps if s), 1))


def _routes() -> list[tuple[re.Pattern[str], Callable[[re.Match[str]], Reply]]]:
    def call(text: str, name: str, **arguments: object) -> Reply:
        return Reply(text=text, tool_calls=(ToolCall(name, dict(arguments)),))

    def word(pattern: str) -> re.Pattern[str]:
        return re.compile(pattern, re.IGNORECASE | re.DOTALL)

    return [
        (word(r"^\s*(?:help|what can you do)\b"), lambda _: Reply(text=HELP)),
        (
            word(r"^\s*todos?\b[:\s]*(?P<items>.*)"),
            lambda g: call("Updating my todo list.", TODO_TOOL, todos=_todos(g["items"])),
        ),
        (
            word(r"^\s*plan\b[:\s]*(?P<steps>\S.*)"),
            lambda g: call("Here is my plan.", EXIT_PLAN_TOOL, plan=_plan(g["steps"])),
        ),
        (
            word(r"^\s*mcp\s+(?P<name>mcp__[\w-]+)\s*(?P<args>.*)"),
            lambda g: _mcp_call(g["name"], g["args"]),
        ),
        (
            word(r"^\s*skill\s+(?P<name>[\w:.-]+)\s*(?P<args>.*)"),
            lambda g: call(
                f"Loading the {g['name']} skill.",
                SKILL_TOOL,
                skill=g["name"],
                **({"args": g["args"].strip()} if g["args"].strip() else {}),
            ),
        ),
        (
            word(r"\bdelegate\b[:\s]*(?P<task>.+)"),
            lambda g: call(
                "I'll hand that to a subagent.",
                "subagent",
                description=_short(g["task"], 40),
                prompt=g["task"].strip(),
            ),
        ),
        (
            word(r"\bfork\b[:\s]*(?P<task>.+)"),
            lambda g: call(
                "I'll ask a fork of this conversation.",
                "fork",
                description=_short(g["task"], 40),
                prompt=g["task"].strip(),
            ),
        ),
        (
            word(r"\bsleep\s+(?P<n>\d{1,3})\b"),
            lambda g: call(f"Sleeping {g['n']} s.", "bash", command=f"sleep {g['n']}; echo awake"),
        ),
        (
            word(r"^\s*(?:background|bg|&)\s+(?P<cmd>.+)"),
            lambda g: call(
                "Running it in the background.",
                "bash",
                command=g["cmd"].strip(),
                run_in_background=True,
            ),
        ),
        (
            word(r"^\s*(?:run|bash|\$)\s+(?P<cmd>.+)"),
            lambda g: call("Running it.", "bash", command=g["cmd"].strip()),
        ),
        (
            word(r"\b(?:write|create)\s+(?P<path>[\w./-]+)\s*(?::|with\b)?\s*(?P<body>.*)"),
            lambda g: call(
                f"Writing {g['path']}.",
                "write_file",
                path=g["path"],
                content=(g["body"].strip() or "(empty)") + "\n",
            ),
        ),
        (
            word(r"\b(?:read|show|open|cat)\s+(?P<path>[\w./-]+\.\w+|[\w./-]+/[\w.-]+)"),
            lambda g: call(f"Reading {g['path']}.", "read_file", path=g["path"]),
        ),
        (
            word(r"\b(?:search|grep|find)\s+(?:for\s+)?(?P<pattern>\S+)"),
            lambda g: call(
                f"Searching for {g['pattern']}.", "grep", pattern=re.escape(g["pattern"])
            ),
        ),
        (
            word(r"\b(?:list|ls|files)\b"),
            lambda _: call("Listing the files.", "glob", pattern="**/*"),
        ),
    ]


def _mcp_call(name: str, text: str) -> Reply:
    """``mcp <name> <json>``: a call of that MCP tool with the JSON object as its input (none:
    ``{}``); text that is not a JSON object is answered with why, and no call."""
    try:
        arguments = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as error:
        return Reply(text=f'The arguments are not JSON ({error.msg}): try {{"key": "value"}}.')
    if not isinstance(arguments, dict):
        return Reply(text='The arguments must be a JSON object, such as {"key": "value"}.')
    return Reply(text=f"Calling {name}.", tool_calls=(ToolCall(name, arguments),))


def _short(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _report(request: Request) -> Reply:
    """What the demo says once its tool calls have answered: each result, shortened."""
    names = {
        str(u["id"]): str(u["name"])
        for msg in request.messages
        if msg.get("role") == "assistant"
        for u in m.tool_uses(msg)
    }
    lines = []
    for result in m.tool_results(request.last_message):
        name = names.get(str(result.get("tool_use_id")), "tool")
        text = output_text(result.get("content") or "").strip() or "(no output)"
        mark = "failed" if result.get("is_error") else "returned"
        lines.append(f"{name} {mark}:\n{truncate_text(text, RESULT_TOKENS)}")
    return Reply(text="\n\n".join([*lines, DEMO_NOTE]))


def demo_reply(request: Request) -> Reply:
    """The demo's answer to a request of the loop (or of a subagent, or a fork)."""
    said = _said(request)
    if not said:
        return _report(request)
    for pattern, answer in _routes():
        found = pattern.search(said)
        if found is not None:
            return answer(found)
    return Reply(text=f"You said: {_short(said, 200)}\n\n{HELP}\n{DEMO_NOTE}")


def _flaky(model: ScriptedModel) -> Callable[[Request], BaseException | None]:
    """Two 529s before the reply to any prompt that says ``flaky`` (once per prompt)."""
    seen: dict[str, int] = {}

    def fault(request: Request) -> BaseException | None:
        said = _said(request)
        if "flaky" not in said.lower():
            return None
        key = f"{len(request.messages)}:{said}"
        seen[key] = seen.get(key, 0) + 1
        return faults.overloaded() if seen[key] <= 2 else None

    return fault


def demo_model(
    *,
    clock: Clock | None = None,
    context_window: int | None = None,
    id_prefix: str = "demo",
) -> ScriptedModel:
    """The command line's offline model (see the module's docstring). Its message and tool
    call ids are ``msg_<id_prefix>0001``, ... : a session resumed in a new process needs a
    new prefix, or its first call's id repeats one the conversation already holds (a 400)."""
    model = ScriptedModel(clock=clock, context_window=context_window, id_prefix=id_prefix)
    model.faults = _flaky(model)
    model.answer_when(is_compaction_request, scripted_summary)
    model.answer_when(is_extraction_request, scripted_extraction)
    model.answer_when(lambda _request: True, demo_reply)
    return model
