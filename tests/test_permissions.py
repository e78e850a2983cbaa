"""Permissions: rules, their precedence, the modes, and who is asked."""

from __future__ import annotations

from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.events import Event, PermissionDecided
from harness.model import ScriptedModel, reply, tool_call
from harness.tools import ToolContext, ToolRegistry, Workspace, tool
from harness.tools.dispatch import ToolRunner
from harness.tools.permissions import (
    Approval,
    ApprovalRequest,
    Approver,
    Mode,
    Permissions,
    Rule,
    deny_all,
    policy,
    split_command,
)


def decide(perms: Permissions, tool: str, read_only: bool = False, **input: Any) -> tuple[str, str]:
    return perms.decide(tool, input, read_only=read_only)


# --- rules ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("bash", Rule("bash")),
        ("bash(git *)", Rule("bash", "git *")),
        ("write_file(docs/**)", Rule("write_file", "docs/**")),
        ("  read_file  ", Rule("read_file")),
    ],
)
def test_a_rule_parses_into_a_tool_and_an_optional_pattern(text: str, rule: Rule) -> None:
    assert Rule.parse(text) == rule
    assert str(Rule.parse(str(rule))) == str(rule)


@pytest.mark.parametrize("text", ["", "bash(", "bash git", "(git *)", "bash(git *) extra"])
def test_a_malformed_rule_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match="not a permission rule"):
        Rule.parse(text)


# --- precedence: deny > ask > allow > mode ------------------------------------------------------


def test_a_deny_rule_beats_an_allow_rule() -> None:
    perms = Permissions.from_rules(allow=["bash"], deny=["bash(rm *)"])

    assert decide(perms, "bash", command="rm -rf build") == ("deny", "deny rule bash(rm *)")
    assert decide(perms, "bash", command="ls")[0] == "allow"


def test_a_deny_rule_beats_an_ask_rule() -> None:
    perms = Permissions.from_rules(ask=["bash(git *)"], deny=["bash(git push *)"])

    assert decide(perms, "bash", command="git push origin main")[0] == "deny"


def test_an_ask_rule_beats_an_allow_rule() -> None:
    perms = Permissions.from_rules(allow=["bash(git *)"], ask=["bash(git push *)"])

    assert decide(perms, "bash", command="git push origin main") == (
        "ask",
        "ask rule bash(git push *)",
    )
    assert decide(perms, "bash", command="git status")[0] == "allow"


def test_an_ask_rule_beats_the_mode_allowing_a_read() -> None:
    perms = Permissions.from_rules(ask=["read_file(.env)"])

    assert decide(perms, "read_file", read_only=True, path=".env")[0] == "ask"
    assert decide(perms, "read_file", read_only=True, path="README.md")[0] == "allow"


def test_an_allow_rule_beats_the_mode() -> None:
    perms = Permissions.from_rules("plan", allow=["write_file(PLAN.md)"])

    assert decide(perms, "write_file", path="PLAN.md") == (
        "allow",
        "allow rule write_file(PLAN.md)",
    )
    assert decide(perms, "write_file", path="main.py")[0] == "deny"


# --- modes ------------------------------------------------------------------------------------


def test_default_mode_allows_reads_and_asks_for_writes_and_bash() -> None:
    perms = Permissions()

    assert decide(perms, "read_file", read_only=True, path="a.py")[0] == "allow"
    assert decide(perms, "write_file", path="a.py")[0] == "ask"
    assert decide(perms, "bash", command="ls")[0] == "ask"


def test_accept_edits_mode_allows_file_edits_but_bash_still_asks() -> None:
    perms = Permissions(mode="accept_edits")

    assert decide(perms, "write_file", path="a.py")[0] == "allow"
    assert decide(perms, "edit_file", path="a.py")[0] == "allow"
    assert decide(perms, "bash", command="ls")[0] == "ask"


def test_plan_mode_denies_anything_that_changes_something() -> None:
    perms = Permissions(mode="plan")

    assert decide(perms, "read_file", read_only=True, path="a.py")[0] == "allow"
    assert decide(perms, "write_file", path="a.py")[0] == "deny"
    assert decide(perms, "bash", command="ls")[0] == "deny"


def test_a_pre_approved_call_answers_only_the_modes_own_question() -> None:
    hook = "a PreToolUse hook allowed it"
    default = Permissions.from_rules("default", deny=["bash(rm *)"], ask=["bash(git push*)"])
    plan = Permissions(mode="plan")

    def approved(perms: Permissions, **command: Any) -> tuple[str, str]:
        return perms.decide("bash", command, read_only=False, pre_approved=hook)

    assert approved(default, command="ls") == ("allow", hook)
    assert approved(default, command="rm -rf build")[0] == "deny"
    assert approved(default, command="git push --force")[0] == "ask"
    assert approved(default, command="echo $(cat ~/.ssh/id_rsa)")[0] == "ask"
    assert approved(plan, command="ls")[0] == "deny"


def test_bypass_mode_allows_everything_but_a_deny_rule_still_denies() -> None:
    perms = Permissions.from_rules("bypass", deny=["bash(rm *)"])

    assert decide(perms, "bash", command="ls") == ("allow", "bypass mode")
    assert decide(perms, "write_file", path="a.py")[0] == "allow"
    assert decide(perms, "bash", command="rm -rf /")[0] == "deny"


# --- path patterns ------------------------------------------------------------------------------


@pytest.fixture
def docs(tmp_path: Path) -> Permissions:
    return Permissions.from_rules(allow=["write_file(docs/**)"], workspace=Workspace(tmp_path))


@pytest.mark.parametrize("path", ["docs/a.md", "./docs/a.md", "docs/x/y.md", "docs//a.md"])
def test_a_path_rule_matches_paths_under_its_directory(docs: Permissions, path: str) -> None:
    assert decide(docs, "write_file", path=path)[0] == "allow"


def test_a_path_rule_matches_an_absolute_path_inside_the_workspace(
    docs: Permissions, tmp_path: Path
) -> None:
    assert decide(docs, "write_file", path=str(tmp_path / "docs" / "a.md"))[0] == "allow"


@pytest.mark.parametrize("path", ["src/docs/a.md", "docs.md", "../docs/a.md", "docs/../a.md"])
def test_a_path_rule_does_not_match_paths_elsewhere(docs: Permissions, path: str) -> None:
    assert decide(docs, "write_file", path=path)[0] == "ask"


def test_a_single_star_stays_within_one_path_segment(tmp_path: Path) -> None:
    perms = Permissions.from_rules(allow=["write_file(docs/*.md)"], workspace=Workspace(tmp_path))

    assert decide(perms, "write_file", path="docs/a.md")[0] == "allow"
    assert decide(perms, "write_file", path="docs/x/y.md")[0] == "ask"


def test_double_star_slash_also_matches_no_directory_at_all(tmp_path: Path) -> None:
    perms = Permissions.from_rules(
        "bypass", deny=["write_file(secrets/**/*.key)"], workspace=Workspace(tmp_path)
    )

    assert decide(perms, "write_file", path="secrets/a.key")[0] == "deny"
    assert decide(perms, "write_file", path="secrets/x/y/a.key")[0] == "deny"
    assert decide(perms, "write_file", path="secrets/a.txt")[0] == "allow"


def test_a_deny_rule_sees_through_dot_dot_in_a_path(tmp_path: Path) -> None:
    perms = Permissions.from_rules(
        "bypass", deny=["write_file(secrets/**)"], workspace=Workspace(tmp_path)
    )

    assert decide(perms, "write_file", path="docs/../secrets/k")[0] == "deny"


class PathInput(BaseModel):
    path: str
    content: str = ""


def test_a_deny_rule_holds_for_any_spelling_of_the_path_when_run_by_an_agent(
    tmp_path: Path,
) -> None:
    @tool(PathInput, name="write_file")
    def write(args: PathInput, context: ToolContext) -> str:
        """Write a file."""
        context.workspace.resolve(args.path).parent.mkdir(parents=True, exist_ok=True)
        context.workspace.resolve(args.path).write_text(args.content)
        return "written"

    # The rules were written without a workspace: the agent's own is used to read paths.
    perms = Permissions.from_rules("accept_edits", deny=["write_file(secrets/**)"])
    calls = [
        tool_call("write_file", path="./secrets/key", content="x"),
        tool_call("write_file", path=str(tmp_path / "secrets" / "key2"), content="x"),
    ]
    model = ScriptedModel([reply(tool_calls=calls), reply("done")])
    agent = Agent(model, tools=[write], workspace=tmp_path, permissions=perms, clock=FakeClock())

    list(agent.run("go"))

    results = m.tool_results(agent.messages[2])
    assert [r.get("is_error") for r in results] == [True, True]
    assert not (tmp_path / "secrets").exists()


# --- bash patterns ------------------------------------------------------------------------------


@pytest.fixture
def git() -> Permissions:
    return Permissions.from_rules(allow=["bash(git *)"])


def test_a_command_rule_matches_the_command_prefix(git: Permissions) -> None:
    assert decide(git, "bash", command="git status")[0] == "allow"
    assert decide(git, "bash", command="gitk")[0] == "ask"
    assert decide(git, "bash", command="echo git status")[0] == "ask"


# The examples of Claude Code's permissions documentation
# (https://code.claude.com/docs/en/permissions, "Wildcard patterns" and "Bash"), as
# (rule, command, matches?). The documentation writes ``Bash(...)``; the harness's tool is
# ``bash``.
DOCUMENTED_COMMAND_RULES: list[tuple[str, str, bool]] = [
    # "Bash(npm run build) matches the exact Bash command npm run build"
    ("npm run build", "npm run build", True),
    ("npm run build", "npm run build --watch", False),
    # "Bash(npm run test *) matches Bash commands starting with npm run test"
    ("npm run test *", "npm run test", True),
    ("npm run test *", "npm run test --coverage", True),
    ("npm run test *", "npm run testing", False),
    # "Bash(npm *) matches any command starting with npm"
    ("npm *", "npm install", True),
    ("npm *", "npx jest", False),
    # "Bash(* install) matches any command ending with  install"
    ("* install", "npm install", True),
    ("* install", "yarn install", True),
    ("* install", "npm install lodash", False),
    # "Bash(git * main) matches commands like git checkout main, git merge main"
    ("git * main", "git checkout main", True),
    ("git * main", "git merge main", True),
    ("git * main", "git checkout dev", False),
    # "Bash(ls *) matches ls -la but not lsof, while Bash(ls*) matches both"
    ("ls *", "ls -la", True),
    ("ls *", "lsof", False),
    ("ls*", "ls -la", True),
    ("ls*", "lsof", True),
    # a trailing " *" is a word boundary: "the prefix followed by a space or end-of-string"
    ("ls *", "ls", True),
    # "Bash(* --help *)": --help followed by more arguments (two wildcards: none optional)
    ("* --help *", "git --help commit", True),
    ("* --help *", "git --help", False),
    # "The legacy :* suffix syntax is equivalent to ` *` but is deprecated."
    ("ls:*", "ls -la", True),
    ("ls:*", "ls", True),
    ("ls:*", "lsof", False),
    ("git diff:*", "git diff --stat", True),
    ("git diff:*", "git diff", True),
    ("git diff:*", "git difftool", False),
]


@pytest.mark.parametrize(("pattern", "command", "matches"), DOCUMENTED_COMMAND_RULES)
def test_a_command_rule_matches_as_claude_codes_documentation_says(
    pattern: str, command: str, matches: bool
) -> None:
    assert Rule.parse(f"bash({pattern})").matches("bash", command) is matches


@pytest.mark.parametrize("pattern", ["git diff *", "git diff:*"])
def test_the_legacy_suffix_and_the_current_form_decide_alike(pattern: str) -> None:
    perms = Permissions.from_rules(allow=[f"bash({pattern})"])

    assert decide(perms, "bash", command="git diff") == ("allow", f"allow rule bash({pattern})")
    assert decide(perms, "bash", command="git diff --stat")[0] == "allow"
    assert decide(perms, "bash", command="git diff && git push")[0] == "ask"
    assert decide(perms, "bash", command="git difftool")[0] == "ask"


def test_a_colon_star_inside_a_pattern_is_not_the_legacy_suffix() -> None:
    # Only a trailing ":*" is the legacy form; elsewhere ":" is a character like any other.
    rule = Rule.parse("bash(echo a:* b)")

    assert rule.matches("bash", "echo a:anything b")
    assert not rule.matches("bash", "echo a anything b")


@pytest.mark.parametrize(
    "command",
    [
        "git status && rm -rf /",
        "git status || rm -rf /",
        "git status; rm -rf /",
        "git log | sh",
        "git status\nrm -rf /",
        "git status & rm -rf /",
        'git status \\"; rm -rf /; echo \\"',
    ],
)
def test_a_compound_command_is_not_allowed_by_its_first_part(
    git: Permissions, command: str
) -> None:
    assert decide(git, "bash", command=command) == ("ask", "default mode: bash changes things")


def test_a_compound_command_is_allowed_when_every_part_is() -> None:
    perms = Permissions.from_rules(allow=["bash(git *)", "bash(grep *)"])

    assert decide(perms, "bash", command="git log | grep fix")[0] == "allow"


def test_a_deny_rule_denies_a_compound_command_if_any_part_matches() -> None:
    perms = Permissions.from_rules("bypass", deny=["bash(rm *)"])

    assert decide(perms, "bash", command="ls; rm -rf x")[0] == "deny"
    assert decide(perms, "bash", command="ls & rm -rf x")[0] == "deny"


def test_quotes_keep_separators_inside_one_command(git: Permissions) -> None:
    assert split_command("git commit -m 'a && b'") == ["git commit -m 'a && b'"]
    assert split_command('git commit -m "a; b | c"') == ['git commit -m "a; b | c"']
    assert decide(git, "bash", command="git commit -m 'a && b'")[0] == "allow"


def test_an_ampersand_in_a_redirection_is_not_a_separator(git: Permissions) -> None:
    assert split_command("git log 2>&1") == ["git log 2>&1"]
    assert split_command("git log &> out.txt") == ["git log &> out.txt"]
    assert decide(git, "bash", command="git log 2>&1")[0] == "allow"


@pytest.mark.parametrize(
    "command", ["git log $(rm -rf x)", "git log `rm -rf x`", "git diff <(rm -rf x)"]
)
def test_a_command_substitution_always_asks(git: Permissions, command: str) -> None:
    assert decide(git, "bash", command=command) == (
        "ask",
        "command substitution cannot be checked part by part (asks in every mode)",
    )


@pytest.mark.parametrize("mode", ["default", "accept_edits", "bypass"])
def test_a_command_substitution_asks_in_every_mode_even_bypass(mode: Mode) -> None:
    perms = Permissions(mode=mode)

    assert decide(perms, "bash", command="echo $(cat .env)")[0] == "ask"


def test_a_command_substitution_is_denied_in_plan_mode_like_any_command() -> None:
    assert decide(Permissions(mode="plan"), "bash", command="echo $(cat .env)")[0] == "deny"


def test_a_deny_rule_matching_the_whole_command_beats_a_substitution() -> None:
    # The parts of "rm -rf $(pwd)" cannot be checked one by one, but the whole line still
    # starts with "rm": a deny rule must not be weakened to "ask" by the substitution.
    for mode in ("default", "bypass"):
        perms = Permissions.from_rules(mode, deny=["bash(rm *)"])
        assert decide(perms, "bash", command="rm -rf $(pwd)")[0] == "deny"


# --- who is asked -------------------------------------------------------------------------------


class NoteInput(BaseModel):
    text: str


def ask_once(tmp_path: Path, approver: Approver | None = None) -> tuple[list[Event], m.Block]:
    """Run one non-read-only call in default mode (so the approver is asked)."""
    written: list[str] = []

    @tool(NoteInput)
    def note(args: NoteInput, context: ToolContext) -> str:
        """Write a note."""
        written.append(args.text)
        return "noted"

    space = Workspace(tmp_path)
    runner = ToolRunner(
        registry=ToolRegistry([note]),
        context=ToolContext(workspace=space, clock=FakeClock()),
        permissions=Permissions(workspace=space),
        **({} if approver is None else {"approver": approver}),
    )
    events, (result,) = drive(runner.run([m.tool_use("toolu_1", "note", {"text": "hi"})]))
    assert (result.get("is_error") is True) == (written == [])  # the tool ran iff allowed
    return events, result


def drive(run: Generator[Event, None, list[m.Block]]) -> tuple[list[Event], list[m.Block]]:
    events: list[Event] = []
    while True:
        try:
            events.append(next(run))
        except StopIteration as stop:
            return events, stop.value


def decisions(events: Iterable[Event]) -> list[PermissionDecided]:
    return [e for e in events if isinstance(e, PermissionDecided)]


def test_a_policy_approver_that_approves_lets_the_call_run(tmp_path: Path) -> None:
    seen: list[ApprovalRequest] = []

    def allow_notes(request: ApprovalRequest) -> bool:
        seen.append(request)
        return request.tool == "note"

    events, result = ask_once(tmp_path, policy(allow_notes, "notes are fine"))

    assert result == m.tool_result("toolu_1", "noted")
    assert seen == [
        ApprovalRequest("toolu_1", "note", {"text": "hi"}, "default mode: note changes things")
    ]
    assert decisions(events) == [
        PermissionDecided(
            "toolu_1",
            "note",
            "allow",
            "default mode: note changes things; notes are fine: approved",
        )
    ]


def test_a_policy_approver_that_refuses_denies_the_call(tmp_path: Path) -> None:
    events, result = ask_once(tmp_path, policy(lambda request: False, "no notes"))

    assert result["is_error"] is True
    assert result["content"] == (
        "Permission to use note was denied: default mode: note changes things; no notes: refused."
    )
    assert decisions(events)[0].decision == "deny"


@pytest.mark.parametrize(("answer", "decision"), [(True, "allow"), (False, "deny")])
def test_an_approver_may_return_a_bare_bool(tmp_path: Path, answer: bool, decision: str) -> None:
    events, _ = ask_once(tmp_path, lambda request: answer)

    (decided,) = decisions(events)
    assert decided.decision == decision
    assert decided.reason.endswith("approved" if answer else "refused")


def test_an_approver_may_give_its_own_reason(tmp_path: Path) -> None:
    events, result = ask_once(tmp_path, lambda request: Approval(False, "it is Friday"))

    assert decisions(events)[0].reason == "default mode: note changes things; it is Friday"
    assert result["content"].endswith("it is Friday.")


def test_with_no_approver_an_ask_is_refused(tmp_path: Path) -> None:
    events, result = ask_once(tmp_path)

    assert result["is_error"] is True
    assert "no approver configured" in result["content"]
    assert decisions(events)[0].decision == "deny"
    assert deny_all(ApprovalRequest("t", "x", {}, "")).approved is False


def test_a_rule_decision_is_reported_with_its_rule(tmp_path: Path) -> None:
    calls = [tool_call("note", text="a")]

    @tool(NoteInput)
    def note(args: NoteInput, context: ToolContext) -> str:
        """Write a note."""
        return "noted"

    agent = Agent(
        ScriptedModel([reply(tool_calls=calls), reply("ok")]),
        tools=[note],
        workspace=tmp_path,
        clock=FakeClock(),
        permissions=Permissions.from_rules(allow=["note"]),
    )

    (decided,) = decisions(agent.run("go"))

    assert decided == PermissionDecided(decided.tool_use_id, "note", "allow", "allow rule note")


def test_a_misspelt_mode_is_refused_with_the_modes_there_are() -> None:
    with pytest.raises(ValueError, match="unknown permission mode 'acceptEdits': use one of"):
        Permissions(mode="acceptEdits")  # type: ignore[arg-type]
