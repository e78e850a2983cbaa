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
from typing import Any

from harness import messages as m
from harness.agent import Agent
from harness.exercises import NotYet, exercise
from harness.model.scripted import ScriptedModel, reply, tool_call
from harness.tools import Permissions, Tool, Workspace, builtin_tools

# (what the model asks for, the file's text or None) for exercise 1's workspace.
COUNT_FILES: dict[str, str] = {
    "app.py": "def total(prices):\n    return sum(prices)\n\n\nprint(total([1, 2]))\n",
    "notes.txt": "first line\nsecond line, with no newline at the end",
}
COUNT_CALLS: list[tuple[dict[str, Any], str]] = [
    ({"path": "app.py"}, "5 lines"),
    ({"path": "notes.txt"}, "2 lines"),
    ({"path": "../secret.txt"}, "error"),  # leaves the workspace
    ({"path": "missing.txt"}, "error"),  # not there
    ({"path": "src"}, "error"),  # a directory, not a file
    ({"file": "app.py"}, "invalid"),  # the wrong argument name: validation answers it
]

_COUNT_HINT = (
    "resolve the path with context.workspace.resolve(args.path) (it raises PathEscape, a "
    "PermissionError, for a path outside); check that it is a file; for anything wrong, "
    "raise ToolError('...') with words the model can act on; count with "
    "len(text.splitlines())."
)


@exercise("count_lines", _COUNT_HINT)
def check_count_lines(count_lines: object) -> str:
    """Exercise 1: a read-only ``count_lines`` tool whose failures reach the model as errors."""
    if not isinstance(count_lines, Tool):
        raise NotYet(
            f"count_lines is a {type(count_lines).__name__}, not a tool.",
            "decorate the function with @tool(CountLinesInput, read_only=True).",
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
        raise NotYet("CountLinesInput has no `path` field.", "path: str = Field(description=...)")
    if not path.get("description"):
        raise NotYet(
            "`path` has no description: the schema is all the model knows about it.",
            "path: str = Field(description='The file to count, relative to the workspace.')",
        )
    if not count_lines.read_only:
        raise NotYet(
            "count_lines changes nothing, but it is not marked read-only, so it would ask "
            "for permission and never run in parallel.",
            "@tool(CountLinesInput, read_only=True)",
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
        for name, text in COUNT_FILES.items():
            (root / name).write_text(text, encoding="utf-8")
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
                "give CountLinesInput one required field, `path`, and no default.",
            )
        return
    if expected != "error":
        if is_error or content != expected:
            raise NotYet(f"{call}: expected {expected!r}, the model got {content!r}.")
        return
    if not is_error:
        raise NotYet(
            f"{call} came back as a normal result, {content!r}: the model cannot tell that "
            "it failed (is_error is not set).",
            "raise ToolError('...') instead of returning a message: the runner turns it "
            "into a tool_result with is_error: true.",
        )
    if content.startswith(f"{name} failed with "):
        raise NotYet(
            f"{call} crashed your tool ({content[:120]}): the runner caught it, but the "
            "model reads a Python error instead of your words.",
            "catch the problem (or test for it first) and raise ToolError('...') with a "
            "message that says what was wrong and what to do.",
        )
    if "password" in content:
        raise NotYet(f"{call} leaked the secret outside the workspace: {content!r}.")
    if arguments["path"] == "missing.txt" and "missing.txt" not in content:
        raise NotYet(
            f"{call} gave the error {content!r}, which does not say which file is missing.",
            "put the path in the message: ToolError(f'file not found: {args.path}').",
        )


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


@exercise(
    "project_rules",
    "Permissions.from_rules('default', allow=[...], deny=[...]); a bash pattern's * matches "
    "anything, spaces included, so name each git command you allow; each part of a compound "
    "command is judged on its own.",
)
def check_project_rules(project_rules: Callable[[], Permissions]) -> str:
    """Exercise 2: ``project_rules()`` returns the project's permissions."""
    rules = project_rules()
    if not isinstance(rules, Permissions):
        raise NotYet(f"project_rules() returned a {type(rules).__name__}, not Permissions.")
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


__all__ = [
    "COUNT_CALLS",
    "COUNT_FILES",
    "PROJECT_RULE_CASES",
    "check_count_lines",
    "check_project_rules",
    "shown",
]
