"""Chapter 01's exercise checks: the solution passes, the stub and plausible slips do not."""

from __future__ import annotations

from typing import Any

from anthropic.types import Message
from pydantic import BaseModel

from harness import Agent, Plugin
from harness.exercises import ch01
from harness.loop import BaseAgent, ModelRequest
from harness.model import DEFAULT_MODEL, ScriptedModel
from harness.tools import ToolContext, tool
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch01")

Conversation = list[dict[str, Any]]


def test_the_solutions_pass() -> None:
    assert ch01.check_agent_loop_limited(solutions.agent_loop_limited)
    assert ch01.check_stop_reasons(solutions.StopReasons)


def stub(*args: object) -> Any:
    raise NotImplementedError


def test_a_stub_hears_the_first_case_and_where_the_recipe_is() -> None:
    verdict = str(ch01.check_agent_loop_limited(stub))
    assert "first case: with a model that never stops" in verdict and "ch01.hint(1)" in verdict
    verdict = str(ch01.check_stop_reasons(stub))
    assert "first case: after a run of three replies" in verdict and "ch01.hint(2)" in verdict


def test_hint_gives_each_recipe() -> None:
    assert "range(max_turns)" in str(ch01.hint(1))
    assert "after_reply" in str(ch01.hint(2))


EQUIVALENT_LOOP: dict[str, str] = {
    "line 55: `1024` → `1025`": (
        "max_tokens only caps the length of each reply; the scripted replies of the check (and "
        "of the chapter) are a few dozen tokens, so 1,023, 1,024 or 1,025 give the same "
        "replies; the exercise asks for a turn limit, and 1,024 is the chapter's own choice."
    ),
    "line 55: `1024` → `1023`": "the same: max_tokens far above any scripted reply's length.",
}
EQUIVALENT_STOP_REASONS: dict[str, str] = {}


def test_every_mutant_of_the_loop_solution_is_caught() -> None:
    assert_exercise_caught("ch01", 1, EQUIVALENT_LOOP)


def test_every_mutant_of_the_stop_reasons_solution_is_caught() -> None:
    assert_exercise_caught("ch01", 2, EQUIVALENT_STOP_REASONS)


# -- exercise 1: a turn limit ------------------------------------------------------------------


class NoInput(BaseModel):
    pass


class ReadFileInput(BaseModel):
    path: str


@tool(NoInput, name="list_files", read_only=True)
def list_files(args: NoInput, context: ToolContext) -> str:
    "List the files of the project."
    return str(solutions.list_files())


@tool(ReadFileInput, name="read_file", read_only=True)
def read_file(args: ReadFileInput, context: ToolContext) -> str:
    "Read one file of the project."
    return str(solutions.read_file(args.path))


def loop(
    model: ScriptedModel,
    prompt: str,
    turns: range,
    answer_last: bool = True,
    exclude_none: bool = True,
    key: str = "content",
) -> Conversation:
    """The chapter's loop over ``turns``; ``answer_last=False`` drops the last turn's results,
    ``exclude_none=False`` sends the reply's empty fields back, ``key`` names the result's
    field."""
    messages: Conversation = [{"role": "user", "content": prompt}]
    for turn in turns:
        response = model.create(
            model=DEFAULT_MODEL,
            max_tokens=1024,
            messages=messages,
            tools=solutions.TOOL_DEFINITIONS,
        )
        content = [block.model_dump(exclude_none=exclude_none) for block in response.content]
        messages.append({"role": "assistant", "content": content})
        if response.stop_reason != "tool_use" or (turn == turns[-1] and not answer_last):
            return messages
        results = [
            {
                "type": "tool_result",
                "tool_use_id": b.id,
                key: solutions.TOOLS[b.name](**b.input),
            }
            for b in response.content
            if b.type == "tool_use"
        ]
        messages.append({"role": "user", "content": results})
    return messages


def stopped_on_tools(messages: Conversation) -> bool:
    return messages[-1]["role"] == "user" or any(
        b.get("type") == "tool_use" for b in messages[-1]["content"]
    )


def test_a_stub_loop_is_told_not_yet() -> None:
    def agent_loop_limited(model: ScriptedModel, prompt: str, max_turns: int) -> Any:
        raise NotImplementedError

    verdict = ch01.check_agent_loop_limited(agent_loop_limited)
    assert not verdict and str(verdict).startswith("not yet: ")
    assert "stub" in str(verdict) and "\nhint: " in str(verdict)


def test_a_loop_that_makes_one_call_too_many_is_rejected() -> None:
    def off_by_one(model: ScriptedModel, prompt: str, max_turns: int) -> Any:
        messages = loop(model, prompt, range(max_turns + 1))
        return messages, stopped_on_tools(messages)

    verdict = ch01.check_agent_loop_limited(off_by_one)
    assert not verdict and "expected 3 model call(s), your loop made 4" in str(verdict)


def test_a_loop_that_makes_one_call_too_few_is_rejected() -> None:
    def off_by_one(model: ScriptedModel, prompt: str, max_turns: int) -> Any:
        messages = loop(model, prompt, range(1, max_turns))
        return messages, stopped_on_tools(messages)

    assert not ch01.check_agent_loop_limited(off_by_one)


def test_a_loop_that_stops_before_the_last_results_is_rejected() -> None:
    def unanswered(model: ScriptedModel, prompt: str, max_turns: int) -> Any:
        messages = loop(model, prompt, range(max_turns), answer_last=False)
        return messages, stopped_on_tools(messages)

    verdict = ch01.check_agent_loop_limited(unanswered)
    assert not verdict and "not valid" in str(verdict) and "tool_result" in str(verdict)


def test_a_loop_that_counts_calls_instead_of_asking_how_the_last_one_ended_is_rejected() -> None:
    def by_count(model: ScriptedModel, prompt: str, max_turns: int) -> Any:
        messages = loop(model, prompt, range(max_turns))
        return messages, len(model.requests) == max_turns

    verdict = ch01.check_agent_loop_limited(by_count)
    assert not verdict and "hit_limit should be False" in str(verdict)


def test_a_loop_that_answers_only_the_first_of_two_calls_is_rejected() -> None:
    def first_only(model: ScriptedModel, prompt: str, max_turns: int) -> Any:
        messages: Conversation = [{"role": "user", "content": prompt}]
        for _ in range(max_turns):
            response = model.create(
                model=DEFAULT_MODEL,
                max_tokens=1024,
                messages=messages,
                tools=solutions.TOOL_DEFINITIONS,
            )
            content = [block.model_dump(exclude_none=True) for block in response.content]
            messages.append({"role": "assistant", "content": content})
            if response.stop_reason != "tool_use":
                return messages, False
            call = next(b for b in response.content if b.type == "tool_use")
            result = solutions.TOOLS[call.name](**call.input)
            messages.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call.id, "content": result}],
                }
            )
        return messages, True

    assert not ch01.check_agent_loop_limited(first_only)


def test_a_loop_that_sends_the_replys_empty_fields_back_is_rejected() -> None:
    """``model_dump()`` without ``exclude_none`` sends ``caller: None`` back on every tool_use."""

    def slip(model: ScriptedModel, prompt: str, max_turns: int) -> Any:
        messages = loop(model, prompt, range(max_turns), exclude_none=False)
        return messages, stopped_on_tools(messages)

    verdict = ch01.check_agent_loop_limited(slip)
    assert not verdict and "caller: None" in str(verdict)


def test_a_loop_whose_results_carry_no_content_is_rejected() -> None:
    def slip(model: ScriptedModel, prompt: str, max_turns: int) -> Any:
        messages = loop(model, prompt, range(max_turns), key="output")
        return messages, stopped_on_tools(messages)

    verdict = ch01.check_agent_loop_limited(slip)
    assert not verdict and "has no `content`" in str(verdict)


def test_a_loop_that_hands_the_work_to_agent_run_is_refused() -> None:
    def shortcut(model: ScriptedModel, prompt: str, max_turns: int) -> Any:
        agent = Agent(model, tools=[list_files, read_file], max_turns=max_turns)
        events = list(agent.run(prompt))
        return agent.messages, type(events[-1]).__name__ == "MaxTurnsReached"

    verdict = ch01.check_agent_loop_limited(shortcut)
    assert not verdict and "Agent.run" in str(verdict)


# -- exercise 2: a plugin that records stop reasons --------------------------------------------


def test_a_stub_plugin_is_told_not_yet() -> None:
    class StopReasons(Plugin):
        def __init__(self) -> None:
            raise NotImplementedError

    verdict = ch01.check_stop_reasons(StopReasons)
    assert not verdict and "stub" in str(verdict) and "\nhint: " in str(verdict)


def test_a_plugin_that_overrides_nothing_is_rejected() -> None:
    class StopReasons(Plugin):
        def __init__(self) -> None:
            self.seen: list[str | None] = []

    verdict = ch01.check_stop_reasons(StopReasons)
    assert not verdict and "got []" in str(verdict)


def test_a_plugin_that_records_only_tool_use_stops_is_rejected() -> None:
    class StopReasons(Plugin):
        def __init__(self) -> None:
            self.seen: list[str | None] = []

        def after_reply(self, agent: BaseAgent, reply: Message) -> None:
            if reply.stop_reason == "tool_use":
                self.seen.append(reply.stop_reason)

    verdict = ch01.check_stop_reasons(StopReasons)
    assert not verdict and "'end_turn'" in str(verdict)


def test_a_plugin_that_looks_back_from_before_request_misses_the_last_reply() -> None:
    class StopReasons(Plugin):
        def __init__(self) -> None:
            self.seen: list[str | None] = []
            self.last: Message | None = None

        def before_request(self, agent: BaseAgent) -> None:
            if self.last is not None:
                self.seen.append(self.last.stop_reason)
                self.last = None

        def call_model(self, agent: BaseAgent, request: ModelRequest, call: Any) -> Message:
            self.last = call(request)
            return self.last

    verdict = ch01.check_stop_reasons(StopReasons)
    assert not verdict and "a run of three replies" in str(verdict)


def test_a_plugin_that_records_in_call_model_also_counts_side_requests() -> None:
    class StopReasons(Plugin):
        def __init__(self) -> None:
            self.seen: list[str | None] = []

        def call_model(self, agent: BaseAgent, request: ModelRequest, call: Any) -> Message:
            response: Message = call(request)
            self.seen.append(response.stop_reason)
            return response

    verdict = ch01.check_stop_reasons(StopReasons)
    assert not verdict and "side request" in str(verdict)


def test_a_plugin_whose_list_is_shared_by_every_instance_is_rejected() -> None:
    class StopReasons(Plugin):
        seen: list[str | None] = []  # noqa: RUF012 (the slip under test)

        def after_reply(self, agent: BaseAgent, reply: Message) -> None:
            self.seen.append(reply.stop_reason)

    verdict = ch01.check_stop_reasons(StopReasons)
    assert not verdict and "list of its own" in str(verdict)


def test_a_recorder_that_is_not_a_plugin_is_rejected() -> None:
    class StopReasons:
        def __init__(self) -> None:
            self.seen: list[str | None] = []

    verdict = ch01.check_stop_reasons(StopReasons)  # type: ignore[arg-type]
    assert not verdict and "not a Plugin" in str(verdict)
