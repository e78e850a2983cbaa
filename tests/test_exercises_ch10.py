"""Chapter 10's exercise checks: the solutions pass, the stubs and plausible slips do not."""

from __future__ import annotations

from harness import messages as m
from harness.events import Event, MaxTurnsReached, ToolFinished, TurnEnded
from harness.exercises import ch10
from harness.fork import fork_messages
from harness.recovery import GaveUp
from harness.subagents import BudgetSpent, outcome
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch10")


def stub(*args: object) -> None:
    raise NotImplementedError


def test_the_solutions_pass() -> None:
    assert ch10.check_status_of(solutions.status_of)
    assert ch10.check_fork_messages_for(solutions.fork_messages_for)


def test_the_stubs_are_told_not_yet_with_a_hint() -> None:
    for verdict in (ch10.check_status_of(stub), ch10.check_fork_messages_for(stub)):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)


def test_the_stubs_hear_the_first_case_and_where_the_recipe_is() -> None:
    for n, verdict in enumerate(
        (ch10.check_status_of(stub), ch10.check_fork_messages_for(stub)), start=1
    ):
        assert "first case: " in str(verdict)
        assert f"stuck? ch10.hint({n}) shows one way" in str(verdict)


EQUIVALENT_STATUS: dict[str, str] = {}  # mutants of status_of that behave like it, and why

EQUIVALENT_FORK: dict[str, str] = {  # mutants of fork_messages_for that behave like it, and why
    "line 34: `m.tool_uses(last) if last['role'] == 'assistant' else []` → its `if` part always": (
        "m.tool_uses of a user message is [] as well: a user message holds no tool_use blocks "
        "(the API refuses one that does), so asking it for its calls finds none"
    ),
}


def test_every_mutant_of_the_status_of_solution_is_caught() -> None:
    assert_exercise_caught("ch10", 1, EQUIVALENT_STATUS)


def test_every_mutant_of_the_fork_messages_for_solution_is_caught() -> None:
    assert_exercise_caught("ch10", 2, EQUIVALENT_FORK)


def test_the_status_cases_cover_every_status() -> None:
    found = {outcome(events)[0] for _, events in ch10.status_cases()}
    assert found == {"complete", "partial", "failed"}


# -- exercise 1: complete, partial or failed ---------------------------------------------------


def test_treating_a_turn_limit_as_complete_is_rejected() -> None:
    def slip(events: list[Event]) -> str:
        if events and isinstance(events[-1], MaxTurnsReached):
            return "complete"
        return str(solutions.status_of(events))

    verdict = ch10.check_status_of(slip)
    assert not verdict and "ran out of turns" in str(verdict) and "'partial'" in str(verdict)


def test_treating_a_max_tokens_cut_as_complete_is_rejected() -> None:
    def slip(events: list[Event]) -> str:
        last = events[-1] if events else None
        if isinstance(last, TurnEnded) and last.stop_reason == "max_tokens":
            return "complete"
        return str(solutions.status_of(events))

    verdict = ch10.check_status_of(slip)
    assert not verdict and "cut at max_tokens" in str(verdict)


def test_crashing_on_an_empty_list_is_rejected() -> None:
    def slip(events: list[Event]) -> str:
        last = events[-1]  # IndexError when the child never ran
        return str(solutions.status_of([last]))

    verdict = ch10.check_status_of(slip)
    assert not verdict and "never ran" in str(verdict) and "IndexError" in str(verdict)


def test_any_turn_end_as_complete_is_rejected() -> None:
    def slip(events: list[Event]) -> str:
        if not events:
            return "failed"
        return "complete" if isinstance(events[-1], TurnEnded) else "partial"

    assert not ch10.check_status_of(slip)


def test_the_last_turn_ended_instead_of_the_last_event_is_rejected() -> None:
    """The wrong answer the issue found passing: it looks back for the last TurnEnded, so a
    child stopped by an API error after an earlier answer reads as complete."""

    def slip(events: list[Event]) -> str:
        for event in reversed(events):
            if isinstance(event, TurnEnded):
                return str(solutions.status_of([event]))
            if isinstance(event, (MaxTurnsReached, BudgetSpent)):
                return "partial"
        return "failed"

    verdict = ch10.check_status_of(slip)
    assert not verdict and "API error" in str(verdict) and "'failed'" in str(verdict)
    assert "two runs" in str(verdict)  # the nudge for a list with two endings


def test_an_api_error_read_as_partial_is_rejected() -> None:
    def slip(events: list[Event]) -> str:
        if events and isinstance(events[-1], GaveUp):
            return "partial"  # "it did some work, so it is partial"
        return str(solutions.status_of(events))

    verdict = ch10.check_status_of(slip)
    assert not verdict and "GaveUp" in str(verdict)


def test_any_turn_limit_in_the_events_as_partial_is_rejected() -> None:
    def slip(events: list[Event]) -> str:
        if any(isinstance(e, (MaxTurnsReached, BudgetSpent)) for e in events):
            return "partial"
        return str(solutions.status_of(events))

    verdict = ch10.check_status_of(slip)
    assert not verdict and "follow-up that answered" in str(verdict)


def test_any_cut_reply_in_the_events_as_partial_is_rejected() -> None:
    def slip(events: list[Event]) -> str:
        cut = ("max_tokens", "model_context_window_exceeded", "pause_turn")
        if any(isinstance(e, TurnEnded) and e.stop_reason in cut for e in events):
            return "partial"
        return str(solutions.status_of(events))

    assert not ch10.check_status_of(slip)


def test_any_answer_in_the_events_as_complete_is_rejected() -> None:
    def slip(events: list[Event]) -> str:
        if any(isinstance(e, TurnEnded) and e.stop_reason == "end_turn" for e in events):
            return "complete"
        return str(solutions.status_of(events))

    assert not ch10.check_status_of(slip)


def test_a_failed_tool_as_a_failed_child_is_rejected() -> None:
    def slip(events: list[Event]) -> str:
        if any(isinstance(e, ToolFinished) and e.is_error for e in events):
            return "failed"
        return str(solutions.status_of(events))

    verdict = ch10.check_status_of(slip)
    assert not verdict and "read failed" in str(verdict)


def test_calling_the_packages_outcome_is_refused() -> None:
    def shortcut(events: list[Event]) -> str:
        return outcome(events)[0]

    verdict = ch10.check_status_of(shortcut)
    assert not verdict and "outcome" in str(verdict)


# -- exercise 2: a fork's messages -------------------------------------------------------------


def test_a_different_placeholder_per_call_is_rejected() -> None:
    def slip(parent: list[m.MessageDict], directive: str) -> list[m.MessageDict]:
        pending = m.tool_uses(parent[-1]) if parent[-1]["role"] == "assistant" else []
        results = [m.tool_result(str(u["id"]), f"[{u['id']} not run here]") for u in pending]
        return [*parent, m.user([*results, m.text(directive)])]

    verdict = ch10.check_fork_messages_for(slip)
    assert not verdict and "different placeholder" in str(verdict)


def test_the_directive_in_its_own_message_before_the_results_is_rejected() -> None:
    def slip(parent: list[m.MessageDict], directive: str) -> list[m.MessageDict]:
        pending = m.tool_uses(parent[-1])
        results = [m.tool_result(str(u["id"]), solutions.PLACEHOLDER) for u in pending]
        return [*parent, m.user(directive), *([m.user(results)] if results else [])]

    verdict = ch10.check_fork_messages_for(slip)
    assert not verdict and "the API would refuse" in str(verdict)


def test_results_for_only_some_calls_are_rejected() -> None:
    def slip(parent: list[m.MessageDict], directive: str) -> list[m.MessageDict]:
        first = m.tool_uses(parent[-1])[:1]
        results = [m.tool_result(str(u["id"]), solutions.PLACEHOLDER) for u in first]
        return [*parent, m.user([*results, m.text(directive)])]

    verdict = ch10.check_fork_messages_for(slip)
    assert not verdict and "the API would refuse" in str(verdict)


def test_mutating_the_parents_list_is_rejected() -> None:
    def slip(parent: list[m.MessageDict], directive: str) -> list[m.MessageDict]:
        pending = m.tool_uses(parent[-1])
        results = [m.tool_result(str(u["id"]), solutions.PLACEHOLDER) for u in pending]
        parent.append(m.user([*results, m.text(directive)]))
        return parent

    verdict = ch10.check_fork_messages_for(slip)
    assert not verdict and "parent's conversation changed" in str(verdict)


def test_the_directive_before_the_placeholders_is_rejected() -> None:
    def slip(parent: list[m.MessageDict], directive: str) -> list[m.MessageDict]:
        pending = m.tool_uses(parent[-1]) if parent[-1]["role"] == "assistant" else []
        results = [m.tool_result(str(u["id"]), solutions.PLACEHOLDER) for u in pending]
        return [*parent, m.user([m.text(directive), *results])]

    assert not ch10.check_fork_messages_for(slip)


def test_calling_the_packages_fork_messages_is_refused() -> None:
    def shortcut(parent: list[m.MessageDict], directive: str) -> list[m.MessageDict]:
        return fork_messages(parent, directive)

    verdict = ch10.check_fork_messages_for(shortcut)
    assert not verdict and "package's fork" in str(verdict)
