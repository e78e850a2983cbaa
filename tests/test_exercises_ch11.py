"""Chapter 11's exercise checks: the solutions pass, the stubs and plausible slips do not."""

from __future__ import annotations

from typing import Any

from anthropic.types import Message

from harness import messages as m
from harness.cli.report import ending
from harness.events import AwaitingApproval, Event, MaxTurnsReached, PromptRefused, TurnEnded
from harness.exercises import ch11
from harness.loop import BaseAgent, Plugin
from harness.recovery import GaveUp, Retrying
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch11")


def stub(*args: object, **kwargs: object) -> None:
    raise NotImplementedError


class StubTally(Plugin):
    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        raise NotImplementedError


def test_the_solutions_pass() -> None:
    assert ch11.check_exit_code(solutions.exit_code)
    assert ch11.check_tool_tally(solutions.ToolTally)


def test_the_stubs_are_told_not_yet_with_a_hint() -> None:
    for verdict in (ch11.check_exit_code(stub), ch11.check_tool_tally(StubTally)):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)


def test_the_stubs_hear_the_first_case_and_where_the_recipe_is() -> None:
    for n, verdict in enumerate(
        (ch11.check_exit_code(stub), ch11.check_tool_tally(StubTally)), start=1
    ):
        assert "first case: " in str(verdict)
        assert f"stuck? ch11.hint({n}) shows one way" in str(verdict)


EQUIVALENT_EXIT: dict[str, str] = {}  # mutants of exit_code that behave like it, and why
EQUIVALENT_TALLY: dict[str, str] = {}  # mutants of ToolTally that behave like it, and why


def test_every_mutant_of_the_exit_code_solution_is_caught() -> None:
    assert_exercise_caught("ch11", 1, EQUIVALENT_EXIT)


def test_every_mutant_of_the_tool_tally_solution_is_caught() -> None:
    assert_exercise_caught("ch11", 2, EQUIVALENT_TALLY)


def test_the_exit_cases_cover_every_code_but_usage() -> None:
    found = {int(ending(e, interrupted=i).exit) for _, e, i in ch11.exit_cases()}
    assert found == {0, 1, 3, 4, 130}


# -- exercise 1: the exit code ------------------------------------------------------------------


def test_ignoring_ctrl_c_is_rejected() -> None:
    def slip(events: list[Event], interrupted: bool = False) -> int:
        return int(solutions.exit_code(events))

    verdict = ch11.check_exit_code(slip)
    assert not verdict and "Ctrl-C" in str(verdict) and "130" in str(verdict)


def test_treating_the_turn_limit_as_done_is_rejected() -> None:
    def slip(events: list[Event], interrupted: bool = False) -> int:
        if events and isinstance(events[-1], MaxTurnsReached):
            return 0
        return int(solutions.exit_code(events, interrupted))

    verdict = ch11.check_exit_code(slip)
    assert not verdict and "max-turns" in str(verdict)


def test_a_cut_reply_as_failure_is_rejected() -> None:
    # The command line calls any TurnEnded done: the model stopped, whatever its reason.
    def slip(events: list[Event], interrupted: bool = False) -> int:
        last = events[-1] if events else None
        if isinstance(last, TurnEnded) and last.stop_reason != "end_turn":
            return 1
        return int(solutions.exit_code(events, interrupted))

    verdict = ch11.check_exit_code(slip)
    assert not verdict and "max_tokens" in str(verdict)


def test_crashing_on_no_events_is_rejected() -> None:
    def slip(events: list[Event], interrupted: bool = False) -> int:
        events[-1]  # IndexError when the run yielded nothing
        return int(solutions.exit_code(events, interrupted))

    verdict = ch11.check_exit_code(slip)
    assert not verdict and "IndexError" in str(verdict)


def test_returning_the_name_instead_of_the_number_is_rejected() -> None:
    def slip(events: list[Event], interrupted: bool = False) -> Any:
        return ending(events, interrupted=interrupted).exit.name  # also calls ending

    assert not ch11.check_exit_code(slip)


def test_looking_at_any_event_rather_than_the_last_is_rejected() -> None:
    """Right on every single run (a run's ending event is its last), wrong on two runs."""

    def slip(events: list[Event], interrupted: bool = False) -> int:
        if interrupted:
            return 130
        if any(isinstance(e, (GaveUp, PromptRefused)) for e in events):
            return 1
        if any(isinstance(e, AwaitingApproval) for e in events):
            return 4
        if any(isinstance(e, MaxTurnsReached) for e in events):
            return 3
        if any(isinstance(e, TurnEnded) for e in events):
            return 0
        return 1

    verdict = ch11.check_exit_code(slip)
    assert not verdict and "two runs" in str(verdict) and "the last one ended" in str(verdict)


def test_every_order_of_looking_at_any_event_is_rejected() -> None:
    """Whatever order the "any" tests come in, a case of two runs catches it."""
    import itertools

    codes: list[tuple[tuple[type[Event], ...], int]] = [
        ((GaveUp, PromptRefused), 1),
        ((AwaitingApproval,), 4),
        ((MaxTurnsReached,), 3),
        ((TurnEnded,), 0),
    ]
    for order in itertools.permutations(codes):

        def slip(events: list[Event], interrupted: bool = False, order: Any = order) -> int:
            if interrupted:
                return 130
            for kinds, code in order:
                if any(isinstance(e, kinds) for e in events):
                    return int(code)
            return 1

        assert not ch11.check_exit_code(slip), order


def test_the_first_ending_rather_than_the_last_is_rejected() -> None:
    def slip(events: list[Event], interrupted: bool = False) -> int:
        endings = (TurnEnded, MaxTurnsReached, AwaitingApproval, GaveUp, PromptRefused)
        first = next((e for e in events if isinstance(e, endings)), None)
        return int(solutions.exit_code([first] if first else [], interrupted))

    assert not ch11.check_exit_code(slip)


def test_a_retry_read_as_a_failure_is_rejected() -> None:
    def slip(events: list[Event], interrupted: bool = False) -> int:
        if not interrupted and any(isinstance(e, Retrying) for e in events):
            return 1
        return int(solutions.exit_code(events, interrupted))

    verdict = ch11.check_exit_code(slip)
    assert not verdict and "retried twice" in str(verdict)


def test_ctrl_c_checked_after_the_last_event_is_rejected() -> None:
    """`interrupted` read only when the events say nothing: a Ctrl-C after an answer, or as
    the turn limit stopped the run, exits 130 all the same."""

    def slip(events: list[Event], interrupted: bool = False) -> int:
        last = events[-1] if events else None
        if isinstance(last, TurnEnded):
            return 0
        if isinstance(last, MaxTurnsReached):
            return 3
        if isinstance(last, AwaitingApproval):
            return 4
        return 130 if interrupted else 1

    verdict = ch11.check_exit_code(slip)
    assert not verdict and "Ctrl-C" in str(verdict) and "`interrupted`" in str(verdict)


def test_ctrl_c_with_no_events_as_a_failure_is_rejected() -> None:
    def slip(events: list[Event], interrupted: bool = False) -> int:
        if not events:
            return 1
        return int(solutions.exit_code(events, interrupted))

    verdict = ch11.check_exit_code(slip)
    assert not verdict and "before any event" in str(verdict)


def test_calling_the_command_lines_ending_is_refused() -> None:
    def shortcut(events: list[Event], interrupted: bool = False) -> int:
        return int(ending(events, interrupted=interrupted).exit)

    verdict = ch11.check_exit_code(shortcut)
    assert not verdict and "ending" in str(verdict)


# -- exercise 2: a plugin that counts tool calls ------------------------------------------------


def test_counting_replies_instead_of_calls_is_rejected() -> None:
    class PerReply(Plugin):
        def __init__(self) -> None:
            self.counts: dict[str, int] = {}

        def after_reply(self, agent: BaseAgent, reply: Message) -> None:
            names = {b.name for b in reply.content if b.type == "tool_use"}
            for name in names:
                self.counts[name] = self.counts.get(name, 0) + 1

    verdict = ch11.check_tool_tally(PerReply)
    assert not verdict and "count calls, not replies" in str(verdict)


def test_counting_only_the_first_call_of_a_reply_is_rejected() -> None:
    class FirstOnly(Plugin):
        def __init__(self) -> None:
            self.counts: dict[str, int] = {}

        def after_reply(self, agent: BaseAgent, reply: Message) -> None:
            uses = [b for b in reply.content if b.type == "tool_use"]
            if uses:
                self.counts[uses[0].name] = self.counts.get(uses[0].name, 0) + 1

    assert not ch11.check_tool_tally(FirstOnly)


def test_a_tally_that_forgets_earlier_runs_is_rejected() -> None:
    class Forgetful(Plugin):
        def __init__(self) -> None:
            self.counts: dict[str, int] = {}

        def before_request(self, agent: BaseAgent) -> None:
            if len(agent.messages) % 4 == 1:  # slip: a "new run" guess that fires mid-session
                self.counts = {}
            return None

        def after_reply(self, agent: BaseAgent, reply: Message) -> None:
            for block in reply.content:
                if block.type == "tool_use":
                    self.counts[block.name] = self.counts.get(block.name, 0) + 1

    assert not ch11.check_tool_tally(Forgetful)


def test_a_class_that_is_not_a_plugin_is_rejected() -> None:
    class NotAPlugin:
        def __init__(self) -> None:
            self.counts: dict[str, int] = {}

    verdict = ch11.check_tool_tally(NotAPlugin)
    assert not verdict and "Plugin" in str(verdict)


def test_counts_kept_in_the_class_body_are_rejected() -> None:
    """One dict for every tally: the check's own tally passes, a second one is not empty."""

    class Shared(Plugin):
        counts: dict[str, int] = {}  # noqa: RUF012 (the slip under test)

        def after_reply(self, agent: BaseAgent, reply: Message) -> None:
            for block in reply.content:
                if block.type == "tool_use":
                    self.counts[block.name] = self.counts.get(block.name, 0) + 1

    verdict = ch11.check_tool_tally(Shared)
    assert not verdict and "second ToolTally()" in str(verdict)
    assert "counts of its own" in str(verdict) and "__init__" not in str(verdict)


def test_counting_only_the_last_reply_is_rejected() -> None:
    class LastOnly(Plugin):
        def __init__(self) -> None:
            self.counts: dict[str, int] = {}

        def after_reply(self, agent: BaseAgent, reply: Message) -> None:
            counts: dict[str, int] = {}
            for block in reply.content:
                if block.type == "tool_use":
                    counts[block.name] = counts.get(block.name, 0) + 1
            self.counts = counts

    assert not ch11.check_tool_tally(LastOnly)


def test_counting_only_the_last_reply_with_calls_is_rejected() -> None:
    class LastWithCalls(Plugin):
        def __init__(self) -> None:
            self.counts: dict[str, int] = {}

        def after_reply(self, agent: BaseAgent, reply: Message) -> None:
            uses = [b.name for b in reply.content if b.type == "tool_use"]
            if uses:
                self.counts = {name: uses.count(name) for name in uses}

    assert not ch11.check_tool_tally(LastWithCalls)


def test_recounting_the_agents_conversation_is_rejected() -> None:
    """Right for one agent, wrong once the tally moves to a second (a new session)."""

    class Recount(Plugin):
        def __init__(self) -> None:
            self.counts: dict[str, int] = {}

        def after_reply(self, agent: BaseAgent, reply: Message) -> None:
            self.counts = {}
            for message in agent.messages:
                for use in m.tool_uses(message):
                    name = str(use["name"])
                    self.counts[name] = self.counts.get(name, 0) + 1

    verdict = ch11.check_tool_tally(Recount)
    assert not verdict and "two agents" in str(verdict)


def test_a_tally_that_does_not_start_empty_is_rejected() -> None:
    class Primed(Plugin):
        def __init__(self) -> None:
            self.counts: dict[str, int] = {"read_file": 1}

        def after_reply(self, agent: BaseAgent, reply: Message) -> None:
            for block in reply.content:
                if block.type == "tool_use":
                    self.counts[block.name] = self.counts.get(block.name, 0) + 1

    verdict = ch11.check_tool_tally(Primed)
    assert not verdict and "start empty" in str(verdict)
