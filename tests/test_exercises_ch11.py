"""Chapter 11's exercise checks: the solutions pass, the stubs and plausible slips do not."""

from __future__ import annotations

from typing import Any

from anthropic.types import Message

from harness.cli.report import ending
from harness.events import Event, MaxTurnsReached, TurnEnded
from harness.exercises import ch11
from harness.loop import BaseAgent, Plugin
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
