"""Chapter 13's exercise checks: the solutions pass, the stubs and plausible slips do not."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from harness.exercises import ch13
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch13")


def stub(*args: object) -> None:
    raise NotImplementedError


def hook_decision(exit_code: int, stdout: str, stderr: str) -> tuple[str, str]:
    """The solution, typed: what the slips below start from."""
    out: tuple[str, str] = solutions.hook_decision(exit_code, stdout, stderr)
    return out


def fill(body: str, arguments: str) -> str:
    """The solution, typed."""
    out: str = solutions.fill_arguments(body, arguments)
    return out


def test_the_solutions_pass() -> None:
    assert ch13.check_hook_decision(solutions.hook_decision)
    assert ch13.check_fill_arguments(solutions.fill_arguments)


def test_the_stubs_are_told_not_yet_with_a_hint() -> None:
    for verdict in (ch13.check_hook_decision(stub), ch13.check_fill_arguments(stub)):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)


def test_the_stubs_hear_the_first_case_and_where_the_recipe_is() -> None:
    verdicts = (ch13.check_hook_decision(stub), ch13.check_fill_arguments(stub))
    for n, verdict in enumerate(verdicts, start=1):
        assert "first case: " in str(verdict)
        assert f"stuck? ch13.hint({n}) shows one way" in str(verdict)


EQUIVALENT_DECISION: dict[str, str] = {}  # mutants of hook_decision that behave like it, and why

EQUIVALENT_EXPAND: dict[str, str] = {}  # mutants of expand that behave like it, and why


def test_every_mutant_of_the_hook_decision_solution_is_caught() -> None:
    assert_exercise_caught("ch13", 1, EQUIVALENT_DECISION)


def test_every_mutant_of_the_expand_solution_is_caught() -> None:
    assert_exercise_caught("ch13", 2, EQUIVALENT_EXPAND)


# -- the cases themselves ------------------------------------------------------------------------


def test_the_first_case_is_the_one_the_stub_hears() -> None:
    _, code, stdout, stderr, want = ch13.decision_cases()[0]
    assert (code, stdout) == (2, "") and want[0] == "deny" and "rm" in stderr
    body, arguments, expanded = ch13.expand_cases()[0][1:]
    assert (body, arguments) == (
        "Fix GitHub issue $ARGUMENTS following our coding standards.",
        "123",
    )
    assert expanded == "Fix GitHub issue 123 following our coding standards."


def test_the_decision_cases_cover_every_outcome_and_every_exit_code_kind() -> None:
    cases = ch13.decision_cases()
    assert {want[0] for *_, want in cases} == set(ch13.KINDS)
    assert {code for _, code, *_ in cases} >= {0, 1, 2, 3, 127}
    assert len({what for what, *_ in cases}) == len(cases)


def test_the_json_answers_are_in_the_documented_shape() -> None:
    for what, _, stdout, _, _ in ch13.decision_cases():
        if not stdout.strip().startswith("{"):
            continue
        try:
            answer = json.loads(stdout)
        except ValueError:
            continue
        specific = answer.get("hookSpecificOutput")
        if isinstance(specific, dict):
            assert specific["hookEventName"] == "PreToolUse", what


def test_the_expand_cases_split_their_arguments_as_a_shell_would() -> None:
    """Every case's arguments split the same by shlex and by Claude Code's shell-quote (no
    operators, globs or escapes, where the two differ), or fail to split (an open quote)."""
    for what, _, arguments, _ in ch13.expand_cases():
        assert not re.search(r"[;&|<>*?\\]", arguments), what
        try:
            shlex.split(arguments)
        except ValueError:
            assert arguments.count('"') % 2 == 1, what


def test_the_decision_cases_agree_with_the_packages_protocol() -> None:
    """The package's reading of a PreToolUse answer (harness/settings/protocol.py) gives the
    same decision, and the same words for a block or a decision (an error's words are its
    own: the validation message, or the first line of stderr after a prefix)."""
    from harness.settings.command import HookRun
    from harness.settings.protocol import interpret

    for what, code, stdout, stderr, (kind, words) in ch13.decision_cases():
        answer = interpret("PreToolUse", HookRun(code, stdout, stderr))
        if answer.status == "blocking":
            assert (kind, words) == ("deny", answer.blocking_error), what
        elif answer.status == "non_blocking_error":
            assert kind == "error", what
        elif answer.permission_decision is not None:
            assert (kind, words) == (answer.permission_decision, answer.permission_reason), what
        else:
            assert (kind, words) == ("none", ""), what


def test_calling_the_packages_interpret_is_refused() -> None:
    from harness.settings.command import HookRun
    from harness.settings.protocol import interpret

    def shortcut(exit_code: int, stdout: str, stderr: str) -> tuple[str, str]:
        answer = interpret("PreToolUse", HookRun(exit_code, stdout, stderr))
        return ("deny", answer.blocking_error) if answer.blocks else ("none", "")

    verdict = ch13.check_hook_decision(shortcut)
    assert not verdict and "interpret" in str(verdict)


# -- exercise 1: read a hook's answer -----------------------------------------------------------


def test_exit_2_with_the_json_ignored_is_rejected() -> None:
    def slip(exit_code: int, stdout: str, stderr: str) -> tuple[str, str]:
        if exit_code == 2:
            return "deny", stderr.strip()
        return hook_decision(exit_code, stdout, stderr)

    verdict = ch13.check_hook_decision(slip)
    assert not verdict and "the JSON's reason wins" in str(verdict)


def test_json_that_overrides_exit_2_is_rejected() -> None:
    def slip(exit_code: int, stdout: str, stderr: str) -> tuple[str, str]:
        got = hook_decision(0, stdout, stderr)
        if got[0] in ("allow", "ask", "deny"):
            return got
        return hook_decision(exit_code, stdout, stderr)

    verdict = ch13.check_hook_decision(slip)
    assert not verdict and "exit 2 blocks whatever the JSON says" in str(verdict)


def test_exit_1_taken_as_a_block_is_rejected() -> None:
    def slip(exit_code: int, stdout: str, stderr: str) -> tuple[str, str]:
        if exit_code != 0 and not stdout.strip():
            return "deny", stderr.strip()
        return hook_decision(exit_code, stdout, stderr)

    verdict = ch13.check_hook_decision(slip)
    assert not verdict and "1 does not block" in str(verdict)


def test_json_read_only_on_exit_0_is_rejected() -> None:
    """The hooks reference once said so; today a valid answer decides on any exit code."""

    def slip(exit_code: int, stdout: str, stderr: str) -> tuple[str, str]:
        if exit_code not in (0, 2):
            return "error", stderr.strip().partition("\n")[0].strip()
        return hook_decision(exit_code, stdout, stderr)

    verdict = ch13.check_hook_decision(slip)
    assert not verdict and "the code is ignored" in str(verdict)


def test_json_with_leading_whitespace_read_as_text_is_rejected() -> None:
    def slip(exit_code: int, stdout: str, stderr: str) -> tuple[str, str]:
        if not stdout.startswith("{"):
            stdout = "plain"
        return hook_decision(exit_code, stdout, stderr)

    verdict = ch13.check_hook_decision(slip)
    assert not verdict and "blank lines and spaces" in str(verdict)


def test_crashing_on_text_that_only_looks_like_json_is_rejected() -> None:
    def slip(exit_code: int, stdout: str, stderr: str) -> tuple[str, str]:
        if stdout.strip().startswith("{"):
            json.loads(stdout)  # raises on "{not json"
        return hook_decision(exit_code, stdout, stderr)

    verdict = ch13.check_hook_decision(slip)
    assert not verdict and "JSONDecodeError" in str(verdict) and "not JSON" in str(verdict)


def test_an_unknown_decision_passed_through_is_rejected() -> None:
    def slip(exit_code: int, stdout: str, stderr: str) -> tuple[str, str]:
        got = hook_decision(exit_code, stdout, stderr)
        if got[0] == "error" and stdout.strip().startswith("{"):
            return "none", ""
        return got

    verdict = ch13.check_hook_decision(slip)
    assert not verdict and "fails validation" in str(verdict)


def test_the_whole_of_stderr_as_the_error_is_rejected() -> None:
    def slip(exit_code: int, stdout: str, stderr: str) -> tuple[str, str]:
        got = hook_decision(exit_code, stdout, stderr)
        return (got[0], stderr.strip()) if got[0] == "error" else got

    verdict = ch13.check_hook_decision(slip)
    assert not verdict and "two lines on stderr" in str(verdict)


def test_a_hook_that_crashes_on_generated_answers_is_rejected() -> None:
    def slip(exit_code: int, stdout: str, stderr: str) -> tuple[str, str]:
        if stdout.lstrip().startswith("{"):
            try:
                answer = json.loads(stdout)
            except ValueError:
                answer = None
            if answer is not None:
                answer["hookSpecificOutput"].get("x")  # null, a list: raises
        return hook_decision(exit_code, stdout, stderr)

    verdict = ch13.check_hook_decision(slip)
    assert not verdict and "raised" in str(verdict)


def test_strange_returns_come_back_as_not_yet() -> None:
    odds: list[Any] = [None, "deny", ("deny",), ("deny", None), ["deny", ""], ("block", "")]
    for odd in odds:

        def answering(code: int, out: str, err: str, odd: Any = odd) -> Any:
            return odd

        verdict = ch13.check_hook_decision(answering)
        assert not verdict and (
            "return a pair of strings" in str(verdict) or "one of" in str(verdict)
        )


# -- exercise 2: expand a command ---------------------------------------------------------------


def test_replacing_one_kind_after_another_is_rejected() -> None:
    """str.replace in passes: a value inserted by one pass is read by the next."""

    def slip(body: str, arguments: str) -> str:
        try:
            words = shlex.split(arguments)
        except ValueError:
            words = arguments.split()
        if arguments and not re.search(r"\$(ARGUMENTS|\d)", body):
            return f"{body}\n\nARGUMENTS: {arguments}"
        out = body
        for i in reversed(range(len(words))):
            out = out.replace(f"$ARGUMENTS[{i}]", words[i])
            out = re.sub(rf"\${i}(?!\w)", words[i].replace("\\", "\\\\"), out)
        return re.sub(r"\$ARGUMENTS(?!\[\d)", lambda _m: arguments, out)

    verdict = ch13.check_fill_arguments(slip)
    assert not verdict and "never read again" in str(verdict)


def test_arguments_matched_before_its_index_is_rejected() -> None:
    def slip(body: str, arguments: str) -> str:
        words = arguments.split()
        pattern = r"\$ARGUMENTS|\$ARGUMENTS\[(\d+)\]|\$(\d+)(?!\w)"

        def fill(match: re.Match[str]) -> str:
            index = match.group(1) or match.group(2)
            if index is None:
                return arguments
            return words[int(index)] if int(index) < len(words) else ""

        out = re.sub(pattern, fill, body)
        return out if out != body or not arguments else f"{out}\n\nARGUMENTS: {arguments}"

    verdict = ch13.check_fill_arguments(slip)
    assert not verdict and "migrate-component" in str(verdict)


def test_splitting_on_spaces_only_is_rejected() -> None:
    def slip(body: str, arguments: str) -> str:
        return fill(body, arguments.replace('"', "").replace("'", ""))

    verdict = ch13.check_fill_arguments(slip)
    assert not verdict and "quotes" in str(verdict)


def test_numbering_from_one_is_rejected() -> None:
    def slip(body: str, arguments: str) -> str:
        return fill(body, f"_ {arguments}" if arguments else arguments)

    assert not ch13.check_fill_arguments(slip)


def test_crashing_on_an_unclosed_quote_is_rejected() -> None:
    def slip(body: str, arguments: str) -> str:
        shlex.split(arguments)
        return fill(body, arguments)

    verdict = ch13.check_fill_arguments(slip)
    assert not verdict and "unclosed quote" in str(verdict) and "ValueError" in str(verdict)


def test_forgetting_to_append_the_arguments_is_rejected() -> None:
    def slip(body: str, arguments: str) -> str:
        out = fill(body, arguments)
        return out.split("\n\nARGUMENTS: ")[0]

    verdict = ch13.check_fill_arguments(slip)
    assert not verdict and "they are appended" in str(verdict)


def test_a_missing_argument_made_empty_is_rejected() -> None:
    """What Claude Code's source did (openclaude), before its page said "stays unchanged"."""

    def slip(body: str, arguments: str) -> str:
        return re.sub(r"\$ARGUMENTS\[\d+\]|\$\d+(?!\w)", "", fill(body, arguments))

    verdict = ch13.check_fill_arguments(slip)
    assert not verdict and "not given" in str(verdict)


def test_appending_when_nothing_changed_instead_of_when_nothing_was_found_is_rejected() -> None:
    def slip(body: str, arguments: str) -> str:
        out = fill(body, arguments)
        if out == body and arguments:
            return f"{out}\n\nARGUMENTS: {arguments}"
        return out

    verdict = ch13.check_fill_arguments(slip)
    assert not verdict and "nothing is appended" in str(verdict)


def test_calling_the_packages_substitute_arguments_is_refused() -> None:
    from harness.skills.arguments import substitute_arguments

    def shortcut(body: str, arguments: str) -> str:
        return substitute_arguments(body, arguments)

    verdict = ch13.check_fill_arguments(shortcut)
    assert not verdict and "substitute_arguments" in str(verdict)


def test_the_cases_agree_with_the_packages_substitute_arguments() -> None:
    from harness.skills.arguments import substitute_arguments

    for what, body, arguments, want in ch13.expand_cases():
        assert substitute_arguments(body, arguments) == want, what


def test_a_non_string_comes_back_as_not_yet() -> None:
    verdict = ch13.check_fill_arguments(lambda body, arguments: body.split())
    assert not verdict and "return the expanded text" in str(verdict)


def test_the_chapter_states_how_many_cases_each_check_tries() -> None:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "chapters/13_skills_commands_hooks.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    text = " ".join(" ".join("".join(c["source"]).split()) for c in cells)
    assert f"The check tries {len(ch13.decision_cases())} answers" in text
    assert f"then {len(ch13.generated_answers())} generated ones" in text
    assert f"The check tries {len(ch13.expand_cases())} bodies" in text
    assert f"and {len(ch13.generated_expansions())} generated ones" in text
