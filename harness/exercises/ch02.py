"""Chapter 02's exercises: a tool that fails the right way, and a rule set that allows no more
than it should.

Both checks go through the real machinery: ``count_lines`` is called by a scripted model through
an :class:`~harness.Agent` (validation, permissions, the runner's error handling), and the rule
set is asked about calls with :meth:`~harness.tools.Permissions.decide`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from harness import messages as m
from harness.agent import Agent
from harness.exercises import NotYet, exercise, hints
from harness.model.scripted import ScriptedModel, reply, tool_call
from harness.tools import Permissions, Tool, Workspace, builtin_tools
from harness.tools.permissions import Mode

# -- exercise 1: a tool that fails the right way ------------------------------------------------

# The files of exercise 1's workspace, as bytes: `latin1.txt` is not UTF-8 (é and ï as single
# Latin-1 bytes), what an old file or a tool's log can be.
COUNT_FILES: dict[str, bytes] = {
    "app.py": b"def total(prices):\n    return sum(prices)\n\n\nprint(total([1, 2]))\n",
    "notes.txt": b"first line\nsecond line, with no newline at the end",
    "latin1.txt": b"caf\xe9\nna\xefve\n",
}
# (what the model asks for, what it should get): a count, "error" (an error result in the
# tool's own words), "count or error" (either, but no crash), or "invalid" (validation).
COUNT_CALLS: list[tuple[dict[str, Any], str]] = [
    ({"path": "app.py"}, "5 lines"),
    ({"path": "notes.txt"}, "2 lines"),
    ({"path": "../secret.txt"}, "error"),  # leaves the workspace
    ({"path": "missing.txt"}, "error"),  # not there
    ({"path": "src"}, "error"),  # a directory, not a file
    ({"path": "latin1.txt"}, "count or error"),  # not UTF-8: 2 lines, or say so; never crash
    ({"file": "app.py"}, "invalid"),  # the wrong argument name: validation answers it
]

_COUNT_HINT = (
    "each thing that can be wrong with the path or the file (the exercise names them) should "
    "reach the model as an error result in your words, not as a Python exception; the "
    "chapter's first section ends by saying which exception does that."
)
_COUNT_FIRST = (
    "count_lines(path='app.py') should return '5 lines': the check's app.py has five lines."
)
_COUNT_RECIPE = """\
1. CountLinesInput gets one field, with no default:
   path: str = Field(description="The file to count, relative to the workspace root.")
2. Decorate the function with @tool(CountLinesInput, read_only=True): it changes nothing.
3. Resolve the path inside a try: real = context.workspace.resolve(args.path); on
   PermissionError (PathEscape is one) raise ToolError(str(error)) from None.
4. If not real.is_file() (missing, or a folder), raise ToolError with the path in the
   message: f"file not found: {args.path} (give the path of a file in the workspace)".
5. text = real.read_text(encoding="utf-8", errors="replace"): a byte that is not UTF-8
   becomes a replacement character instead of an exception.
6. Return f"{len(text.splitlines())} lines"."""


@exercise("count_lines", _COUNT_HINT, first=_COUNT_FIRST, number=1)
def check_count_lines(count_lines: object) -> str:
    """Exercise 1: a read-only ``count_lines`` tool whose failures reach the model as errors."""
    if not isinstance(count_lines, Tool):
        raise NotYet(
            f"count_lines is a {type(count_lines).__name__}, not a tool: the Agent cannot "
            "offer it to the model.",
            "the chapter's section on a tool from a pydantic model shows what makes a "
            "function a tool (@tool).",
        )
    results = _run_through_an_agent(count_lines)
    crashed = f"{count_lines.name} failed with NotImplementedError"
    if any(str(r.get("content", "")).startswith(crashed) for r in results):
        raise NotImplementedError
    definition = count_lines.definition()
    if definition["name"] != "count_lines":
        raise NotYet(f"the tool is named {definition['name']!r}; name it 'count_lines'.")
    path = definition["input_schema"].get("properties", {}).get("path")
    if path is None:
        raise NotYet(
            "CountLinesInput has no `path` field: the model has nothing to put the file in.",
            "the input model's fields are the tool's arguments; look at how the chapter's "
            "tools declare theirs.",
        )
    if not path.get("description"):
        raise NotYet(
            "`path` has no description: the schema is all the model knows about it.",
            "look at how the chapter's tools give a field a description (pydantic's Field).",
        )
    if not count_lines.read_only:
        raise NotYet(
            "count_lines changes nothing, but it is not marked read-only, so it would ask "
            "for permission and never run in parallel.",
            "the chapter's builtin read tools say they are read-only where they become tools.",
        )
    for (arguments, expected), result in zip(COUNT_CALLS, results, strict=True):
        _judge(count_lines.name, arguments, expected, result)
    return (
        "count_lines counts, and a path outside, a missing file and a folder each reach the "
        "model as an error result (is_error: true) in your own words"
    )


def _run_through_an_agent(count_lines: Tool[Any]) -> list[dict[str, Any]]:
    """The tool results a scripted model gets for :data:`COUNT_CALLS`, run by a real Agent."""
    with tempfile.TemporaryDirectory() as place:
        root = Path(place) / "project"
        (root / "src").mkdir(parents=True)
        for name, data in COUNT_FILES.items():
            (root / name).write_bytes(data)
        (Path(place) / "secret.txt").write_text("password=hunter2\n", encoding="utf-8")
        model = ScriptedModel(
            [
                reply(tool_calls=[tool_call(count_lines.name, **a) for a, _ in COUNT_CALLS]),
                reply("Counted."),
            ]
        )
        agent = Agent(
            model,
            tools=[count_lines],
            workspace=root,
            permissions=Permissions(mode="bypass"),  # the check judges read_only on its own
        )
        for _ in agent.run("How many lines do these files have?"):
            pass
        return m.tool_results(agent.messages[2])


def _judge(name: str, arguments: dict[str, Any], expected: str, result: dict[str, Any]) -> None:
    content = str(result.get("content", ""))
    is_error = bool(result.get("is_error"))
    call = f"count_lines({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
    if expected == "invalid":
        if not is_error or "path" not in content:
            raise NotYet(
                f"{call} should fail validation (there is no `file` argument), but the model "
                f"got {content!r}.",
                "a field with a default is one the model may leave out: `path` should be the "
                "one argument the model must give.",
            )
        return
    if expected == "count or error" and not is_error:
        if content != "2 lines":
            raise NotYet(
                f"{call}: the file has two lines, but they are not UTF-8; expected '2 lines' "
                f"or an error result in your words, the model got {content!r}."
            )
        return
    if expected not in ("error", "count or error"):
        if is_error or content != expected:
            raise NotYet(f"{call}: expected {expected!r}, the model got {content!r}.")
        return
    if not is_error:
        raise NotYet(
            f"{call} came back as a normal result, {content!r}: the model cannot tell that "
            "it failed (is_error is not set).",
            "a returned string is a success to the runner; the chapter says which exception "
            "the runner turns into an error result in your words (ToolError).",
        )
    if content.startswith(f"{name} failed with "):
        what = "a file that is not UTF-8 " if expected == "count or error" else ""
        raise NotYet(
            f"{call} crashed your tool {what}({content[:120]}): the runner caught it, but the "
            "model reads a Python error instead of your words.",
            "meet this case before it raises (test for it, or catch it), and either do what "
            "the model asked or say in your words what was wrong.",
        )
    if "password" in content:
        raise NotYet(f"{call} leaked the secret outside the workspace: {content!r}.")
    if arguments["path"] == "missing.txt" and "missing.txt" not in content:
        raise NotYet(
            f"{call} gave the error {content!r}, which does not say which file is missing.",
            "the model reads only your message: say which path was wrong, so it can correct "
            "the next call.",
        )


# -- exercise 2: a rule set that allows no more than it should ---------------------------------

# (tool, input, the decision the project wants)
PROJECT_RULE_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("bash", {"command": "git status"}, "allow"),
    ("bash", {"command": "git diff --stat"}, "allow"),
    ("bash", {"command": "git log --oneline -5"}, "allow"),
    ("bash", {"command": "git status && git diff"}, "allow"),
    ("bash", {"command": "git push origin main"}, "ask"),
    ("bash", {"command": "git status && git push"}, "ask"),
    ("bash", {"command": "git status && rm -rf build"}, "deny"),
    ("bash", {"command": "rm -rf build"}, "deny"),
    ("bash", {"command": "ls; rm notes.txt"}, "deny"),
    ("bash", {"command": "python3 test_app.py"}, "ask"),
    ("write_file", {"path": "docs/guide.md", "content": "..."}, "allow"),
    ("edit_file", {"path": "docs/api/index.md", "old_string": "a", "new_string": "b"}, "allow"),
    ("write_file", {"path": "app.py", "content": "..."}, "ask"),
    ("write_file", {"path": "docs.md", "content": "..."}, "ask"),
    ("read_file", {"path": "app.py"}, "allow"),
    ("grep", {"pattern": "TODO"}, "allow"),
]


def shown(tool: str, arguments: dict[str, Any]) -> str:
    """``bash(git status)``: a call as the rules see it."""
    subject = arguments.get("command") or arguments.get("path") or arguments.get("pattern")
    return f"{tool}({subject})"


_RULES_HINT = (
    "deny rule > ask rule > allow rule > the mode's default: pick the mode whose default fits "
    "what no rule names; a bash pattern's * matches anything, spaces included; each part of a "
    "compound command is judged on its own."
)
_RULES_FIRST = "project_rules() should allow bash(git status): it only reads the repository."
_RULES_RECIPE = """\
1. Return Permissions.from_rules("default", allow=[...], deny=[...]): in default mode, reads
   run and every other call asks, which is what "everything else" should do.
2. allow one bash rule per read-only git command, its arguments matched by a trailing *:
   "bash(git status*)", "bash(git diff*)", "bash(git log*)". Not "bash(git *)": its * matches
   "push origin main" too.
3. allow writes and edits under docs/: "write_file(docs/**)", "edit_file(docs/**)".
4. deny "bash(rm *)": a compound command is split into its parts, so "git status && rm -rf
   build" meets the deny rule through its second part.
5. No ask rules: git push, python3 and other writes fall to the mode's default, ask."""


@exercise("project_rules", _RULES_HINT, first=_RULES_FIRST, number=2)
def check_project_rules(project_rules: Callable[[], Permissions]) -> str:
    """Exercise 2: ``project_rules()`` returns the project's permissions."""
    rules = project_rules()
    if not isinstance(rules, Permissions):
        raise NotYet(f"project_rules() returned a {type(rules).__name__}, not Permissions.")
    if rules.mode not in get_args(Mode):
        raise NotYet(
            f"project_rules() uses the mode {rules.mode!r}, which is not one of the four modes "
            f"({', '.join(get_args(Mode))}): Permissions does not check the name, so a mode "
            "it does not know silently behaves like another."
        )
    read_only = {t.name: t.read_only for t in builtin_tools()}
    with tempfile.TemporaryDirectory() as place:
        workspace = Workspace(place)
        for tool, arguments, expected in PROJECT_RULE_CASES:
            decision, reason = rules.decide(
                tool, arguments, read_only=read_only[tool], workspace=workspace
            )
            if decision != expected:
                raise NotYet(
                    f"{shown(tool, arguments)} is {decision} ({reason}); the project wants "
                    f"{expected}."
                )
    return f"all {len(PROJECT_RULE_CASES)} calls are decided as the project asks"


hint = hints(__name__, {1: _COUNT_RECIPE, 2: _RULES_RECIPE})

__all__ = [
    "COUNT_CALLS",
    "COUNT_FILES",
    "PROJECT_RULE_CASES",
    "check_count_lines",
    "check_project_rules",
    "hint",
    "shown",
]
