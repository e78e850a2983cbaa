"""Chapter 02's exercise checks: the solution passes, the stub and plausible slips do not."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from harness.exercises import ch02
from harness.tools import Permissions, ToolContext, ToolError, tool
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch02")


class CountLinesInput(BaseModel):
    path: str = Field(description="The file to count, relative to the workspace root.")


@tool(CountLinesInput, name="count_lines", read_only=True)
def stub_count_lines(args: CountLinesInput, context: ToolContext) -> str:
    "Count the lines of a text file in the workspace."
    raise NotImplementedError


def stub_project_rules() -> Permissions:
    raise NotImplementedError


def test_the_solutions_pass() -> None:
    assert ch02.check_count_lines(solutions.count_lines)
    assert ch02.check_project_rules(solutions.project_rules)


@pytest.mark.parametrize(
    ("check", "stub"),
    [
        (ch02.check_count_lines, stub_count_lines),
        (ch02.check_project_rules, stub_project_rules),
    ],
)
def test_a_stub_is_told_not_yet_with_a_hint(check: object, stub: object) -> None:
    verdict = check(stub)  # type: ignore[operator]
    assert not verdict
    assert str(verdict).startswith("not yet: ")
    assert "stub" in str(verdict) and "\nhint: " in str(verdict)


def test_a_stub_hears_the_first_case_and_where_the_recipe_is() -> None:
    verdict = str(ch02.check_count_lines(stub_count_lines))
    assert "first case: count_lines(path='app.py') should return '5 lines'" in verdict
    assert "ch02.hint(1)" in verdict
    verdict = str(ch02.check_project_rules(stub_project_rules))
    assert (
        "first case: project_rules() should allow bash(git status)" in verdict
        and "ch02.hint(2)" in verdict
    )


def test_hint_gives_each_recipe() -> None:
    assert "ToolError" in str(ch02.hint(1)) and "errors=" in str(ch02.hint(1))
    assert "bash(git status*)" in str(ch02.hint(2))


EQUIVALENT_COUNT_LINES: dict[str, str] = {}  # every mutant behaves differently: none listed
EQUIVALENT_PROJECT_RULES: dict[str, str] = {}


def test_every_mutant_of_the_count_lines_solution_is_caught() -> None:
    assert_exercise_caught("ch02", 1, EQUIVALENT_COUNT_LINES)


def test_every_mutant_of_the_project_rules_solution_is_caught() -> None:
    assert_exercise_caught("ch02", 2, EQUIVALENT_PROJECT_RULES)


# --- exercise 1: count_lines -------------------------------------------------------------


def test_count_lines_that_returns_its_error_as_text_is_rejected() -> None:
    @tool(CountLinesInput, name="count_lines", read_only=True)
    def slip(args: CountLinesInput, context: ToolContext) -> str:
        "Count the lines of a text file in the workspace."
        try:
            real = context.workspace.resolve(args.path)
        except PermissionError as error:
            return f"error: {error}"
        if not real.is_file():
            return f"error: file not found: {args.path}"
        return f"{len(real.read_text().splitlines())} lines"

    verdict = ch02.check_count_lines(slip)
    assert not verdict and "is_error" in str(verdict) and "ToolError" in str(verdict)


def test_count_lines_that_lets_the_path_escape_crash_it_is_rejected() -> None:
    """The old check's hole: an uncaught PathEscape still ends as an error result."""

    @tool(CountLinesInput, name="count_lines", read_only=True)
    def slip(args: CountLinesInput, context: ToolContext) -> str:
        "Count the lines of a text file in the workspace."
        real = context.workspace.resolve(args.path)  # PathEscape is not caught
        if not real.is_file():
            raise ToolError(f"file not found: {args.path}")
        return f"{len(real.read_text().splitlines())} lines"

    verdict = ch02.check_count_lines(slip)
    assert not verdict and "PathEscape" in str(verdict) and "crashed" in str(verdict)


def test_count_lines_that_opens_whatever_it_is_given_is_rejected() -> None:
    @tool(CountLinesInput, name="count_lines", read_only=True)
    def slip(args: CountLinesInput, context: ToolContext) -> str:
        "Count the lines of a text file in the workspace."
        try:
            real = context.workspace.resolve(args.path)
        except PermissionError as error:
            raise ToolError(str(error)) from None
        return f"{len(real.read_text().splitlines())} lines"  # a missing file, a folder: crash

    verdict = ch02.check_count_lines(slip)
    assert not verdict and "missing.txt" in str(verdict) and "crashed" in str(verdict)


def test_count_lines_without_the_workspace_check_is_rejected() -> None:
    @tool(CountLinesInput, name="count_lines", read_only=True)
    def slip(args: CountLinesInput, context: ToolContext) -> str:
        "Count the lines of a text file in the workspace."
        real = Path(context.workspace.root) / args.path  # ../ walks straight out
        if not real.is_file():
            raise ToolError(f"file not found: {args.path}")
        return f"{len(real.read_text().splitlines())} lines"

    verdict = ch02.check_count_lines(slip)
    assert not verdict and "../secret.txt" in str(verdict)


def test_count_lines_that_counts_newlines_is_rejected() -> None:
    @tool(CountLinesInput, name="count_lines", read_only=True)
    def slip(args: CountLinesInput, context: ToolContext) -> str:
        "Count the lines of a text file in the workspace."
        return solutions.count_lines.function(args, context).replace(  # type: ignore[no-any-return]
            "2 lines", "1 lines"
        )

    verdict = ch02.check_count_lines(slip)
    assert not verdict and "notes.txt" in str(verdict)


def test_count_lines_that_crashes_on_a_file_that_is_not_utf8_is_rejected() -> None:
    @tool(CountLinesInput, name="count_lines", read_only=True)
    def slip(args: CountLinesInput, context: ToolContext) -> str:
        "Count the lines of a text file in the workspace."
        try:
            real = context.workspace.resolve(args.path)
        except PermissionError as error:
            raise ToolError(str(error)) from None
        if not real.is_file():
            raise ToolError(f"file not found: {args.path}")
        return f"{len(real.read_text(encoding='utf-8').splitlines())} lines"  # strict decoding

    verdict = ch02.check_count_lines(slip)
    assert not verdict and "latin1.txt" in str(verdict) and "UnicodeDecodeError" in str(verdict)


def test_count_lines_that_says_a_file_is_not_utf8_passes() -> None:
    """Either answer is right for a file that is not UTF-8: a count, or an error in words."""

    @tool(CountLinesInput, name="count_lines", read_only=True)
    def careful(args: CountLinesInput, context: ToolContext) -> str:
        "Count the lines of a text file in the workspace."
        try:
            real = context.workspace.resolve(args.path)
        except PermissionError as error:
            raise ToolError(str(error)) from None
        if not real.is_file():
            raise ToolError(f"file not found: {args.path}")
        try:
            text = real.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{args.path} is not UTF-8 text; I count text files only") from None
        return f"{len(text.splitlines())} lines"

    assert ch02.check_count_lines(careful)


def test_count_lines_that_is_not_read_only_is_rejected() -> None:
    slip = tool(CountLinesInput, name="count_lines")(solutions.count_lines.function)
    verdict = ch02.check_count_lines(slip)
    assert not verdict and "read-only" in str(verdict)


def test_count_lines_with_an_undescribed_path_is_rejected() -> None:
    class Bare(BaseModel):
        path: str

    slip = tool(Bare, name="count_lines", read_only=True)(solutions.count_lines.function)
    verdict = ch02.check_count_lines(slip)
    assert not verdict and "description" in str(verdict)


def test_a_plain_function_is_told_to_become_a_tool() -> None:
    verdict = ch02.check_count_lines(solutions.count_lines.function)
    assert not verdict and "@tool" in str(verdict)


# --- exercise 2: project_rules -----------------------------------------------------------


def test_rules_that_allow_every_git_command_are_rejected() -> None:
    def slip() -> Permissions:
        return Permissions.from_rules(
            allow=["bash(git *)", "write_file(docs/**)", "edit_file(docs/**)"],
            deny=["bash(rm *)"],
        )

    verdict = ch02.check_project_rules(slip)
    assert not verdict and "git push" in str(verdict)


def test_bypass_mode_without_a_deny_rule_is_rejected() -> None:
    def slip() -> Permissions:
        return Permissions.from_rules(
            "bypass",
            allow=["bash(git status*)", "bash(git diff*)", "bash(git log*)"],
        )

    verdict = ch02.check_project_rules(slip)
    assert not verdict and "git push" in str(verdict) and "allow" in str(verdict)


def test_bypass_mode_that_asks_for_push_still_lets_a_compound_rm_through() -> None:
    def slip() -> Permissions:
        return Permissions.from_rules(
            "bypass",
            allow=["bash(git status*)", "bash(git diff*)", "bash(git log*)"],
            ask=["bash(git push*)", "bash(python3 *)", "write_file(app.py)", "write_file(*.md)"],
        )

    verdict = ch02.check_project_rules(slip)
    assert not verdict and "git status && rm -rf build) is allow" in str(verdict)


def test_a_deny_rule_that_is_too_narrow_is_rejected() -> None:
    def slip() -> Permissions:
        return Permissions.from_rules(
            allow=["bash(git status*)", "bash(git diff*)", "bash(git log*)"],
            deny=["bash(rm -rf /*)"],
        )

    verdict = ch02.check_project_rules(slip)
    assert not verdict and "rm -rf build" in str(verdict) and "ask" in str(verdict)


def test_accept_edits_instead_of_a_docs_rule_is_rejected() -> None:
    def slip() -> Permissions:
        return Permissions.from_rules(
            "accept_edits",
            allow=["bash(git status*)", "bash(git diff*)", "bash(git log*)"],
            deny=["bash(rm *)"],
        )

    verdict = ch02.check_project_rules(slip)
    assert not verdict and "write_file(app.py)" in str(verdict)


def test_plan_mode_is_rejected_for_denying_what_should_ask() -> None:
    def slip() -> Permissions:
        return Permissions.from_rules(
            "plan",
            allow=[
                "bash(git status*)",
                "bash(git diff*)",
                "bash(git log*)",
                "write_file(docs/**)",
                "edit_file(docs/**)",
            ],
            deny=["bash(rm *)"],
        )

    assert not ch02.check_project_rules(slip)


def test_a_rule_set_that_is_not_permissions_is_told_so() -> None:
    verdict = ch02.check_project_rules(lambda: ["bash(git *)"])  # type: ignore[arg-type, return-value]
    assert not verdict and "not Permissions" in str(verdict)


def test_a_mode_spelt_as_claude_code_spells_it_is_rejected() -> None:
    """Claude Code's setting is "acceptEdits"; Permissions does not check a mode's name, and
    behaves for one it does not know as in "default", so the rules alone would pass."""

    def slip() -> Permissions:
        rules = solutions.project_rules()
        rules.mode = "acceptEdits"
        return rules  # type: ignore[no-any-return]

    verdict = ch02.check_project_rules(slip)
    assert not verdict and "'acceptEdits'" in str(verdict)
    assert "not one of the four modes" in str(verdict)
