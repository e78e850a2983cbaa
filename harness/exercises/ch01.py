"""Chapter 01's exercises: a turn limit for your own loop, a plugin that records stop reasons."""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from harness import messages as m
from harness.events import Event
from harness.exercises import NotYet, exercise, forbid, hints
from harness.loop import AgentConfig, BaseAgent, ModelRequest, Plugin
from harness.model import ScriptedModel, reply, tool_call
from harness.model.scripted import Reply

_LIMIT_HINT = (
    "start from the chapter's agent_loop and change only how it repeats; then ask what the "
    "conversation must look like when the limit, not the model, ends the run, and how the "
    "loop can tell which of the two ended it."
)
_LIMIT_FIRST = (
    "with a model that never stops (every reply asks for two tools) and max_turns=3, it should "
    "make 3 model calls and give back 7 messages (the prompt, then each reply followed by its "
    "results) and True, since the limit ended the run."
)
_LIMIT_RECIPE = """\
1. Copy agent_loop from the top of the chapter, and replace `while True:` with
   `for _ in range(max_turns):` so that it makes at most max_turns model calls.
2. Keep the body as it is: call the model, append the reply as
   [block.model_dump(exclude_none=True) for block in response.content], and if
   stop_reason != "tool_use" return (messages, False): the model finished in time.
3. Otherwise run every tool_use block and append one user message with all the tool_result
   blocks, even in the last allowed turn: the conversation stays valid for a next prompt.
4. After the loop (every allowed turn still asked for tools), return (messages, True)."""

Loop = Callable[[ScriptedModel, str, int], Any]


def _stubborn() -> list[Reply]:
    """A model that never stops: every reply asks for two tools at once."""
    return [reply(tool_calls=[tool_call("list_files"), tool_call("list_files")])] * 12


def _finisher() -> list[Reply]:
    """A model that answers in three model calls: one tool, then two, then the answer."""
    return [
        reply("Let me look at the files.", tool_calls=[tool_call("list_files")]),
        reply(tool_calls=[tool_call("read_file", path="todo.md"), tool_call("list_files")]),
        reply("Done: fix the login bug, then write the release notes."),
    ]


# (what the model does, its script, max_turns, model calls, whether the run hit the limit)
LIMIT_CASES: list[tuple[str, Callable[[], list[Reply]], int, int, bool]] = [
    ("a model that never stops", _stubborn, 3, 3, True),
    ("a model that answers on its 3rd call", _finisher, 3, 3, False),
    ("a model that answers on its 3rd call", _finisher, 10, 3, False),
    ("a model that answers on its 3rd call", _finisher, 2, 2, True),
    ("a model that answers on its 3rd call", _finisher, 1, 1, True),
]


def _judge_blocks(case: str, messages: list[Any]) -> None:
    """Each reply as the API takes it back, and each tool result carrying the tool's output."""
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            empty = sorted(k for k, v in block.items() if v is None)
            if message.get("role") == "assistant" and empty:
                raise NotYet(
                    f"{case}, a {block.get('type')} block of a reply went back with "
                    f"{', '.join(f'{k}: None' for k in empty)}: the SDK's request types have no "
                    "null for some of these fields (`caller`), and some endpoints refuse one "
                    "with a 400.",
                    "compare how your loop turns the reply's blocks into dicts with how the "
                    "chapter's agent_loop does it.",
                )
            if block.get("type") == "tool_result" and not block.get("content"):
                raise NotYet(
                    f"{case}, the tool_result for {block.get('tool_use_id')} has no `content` "
                    f"(its keys: {sorted(block)}): the model never sees what the tool returned."
                )


@exercise("agent_loop_limited", _LIMIT_HINT, first=_LIMIT_FIRST, number=1)
def check_agent_loop_limited(agent_loop_limited: Loop) -> str:
    """Exercise 1: ``agent_loop_limited(model, prompt, max_turns)`` -> (messages, hit_limit)."""
    for what, script, max_turns, calls, limited in LIMIT_CASES:
        case = f"with {what} and max_turns={max_turns}"
        model = ScriptedModel(script())
        with forbid(BaseAgent, "run", "this is your own loop: write it, don't call Agent.run."):
            result = agent_loop_limited(model, "What is left to do?", max_turns)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise NotYet(f"{case}, it returned {result!r:.80}; return (messages, hit_limit).")
        messages, hit_limit = result
        if len(model.requests) != calls:
            raise NotYet(
                f"{case}, expected {calls} model call(s), your loop made {len(model.requests)}."
            )
        if not isinstance(messages, list) or not messages:
            raise NotYet(f"{case}, the conversation it returned is {messages!r:.80}, not a list.")
        if problems := m.validate(messages):
            raise NotYet(f"{case}, the conversation is not valid: {problems[0]}")
        _judge_blocks(case, messages)
        if len(messages) != 2 * calls + (1 if limited else 0):
            raise NotYet(
                f"{case}, expected {2 * calls + (1 if limited else 0)} messages (the prompt, "
                f"then a reply and its results per tool-using call), got {len(messages)}."
            )
        if hit_limit is not limited:
            raise NotYet(f"{case}, hit_limit should be {limited}, got {hit_limit!r}.")
        if not limited and not m.text_of(messages[-1]).startswith("Done"):
            raise NotYet(f"{case}, the conversation should end on the model's final answer.")
    return "your loop stops after max_turns turns, answers every call, and says when it hit it"


_RECORD_HINT = (
    "reread the chapter's list of plug-in points: which one sees each reply that joins the "
    "conversation, each run's last reply included, and no side request? And where does each "
    "recorder get a list of its own?"
)
_RECORD_FIRST = (
    "after a run of three replies (tool_use, tool_use, end_turn), recorder.seen should be "
    "['tool_use', 'tool_use', 'end_turn']: one stop_reason per reply, the last one included."
)
_RECORD_RECIPE = """\
1. In __init__, set self.seen = [] (a list written in the class body would be one list
   shared by every StopReasons()).
2. Override after_reply(self, agent, reply): the loop calls it once for each reply that joins
   the conversation, each run's last reply included, and never for a side request sent
   through agent.call.
3. In it, self.seen.append(reply.stop_reason).
(before_request runs before each request, so it never sees a run's last reply; call_model
wraps every model call, side requests included.)"""


class _Files:
    """A tiny tool runner (the ``ToolCalls`` the loop needs) with one tool, ``list_files``."""

    def __init__(self) -> None:
        self._finished: dict[str, m.Block] = {}

    def definitions(self) -> list[dict[str, Any]]:
        schema = {"type": "object", "properties": {}}
        return [{"name": "list_files", "description": "List the files.", "input_schema": schema}]

    def run(self, calls: Sequence[m.Block]) -> Generator[Event, None, list[m.Block]]:
        self._finished = {}
        for call in calls:
            self._finished[call["id"]] = m.tool_result(call["id"], "README.md\ntodo.md")
        yield from ()
        return list(self._finished.values())

    @property
    def finished(self) -> Mapping[str, m.Block]:
        return self._finished


def _drain(agent: BaseAgent, prompt: str) -> None:
    for _ in agent.run(prompt):
        pass


@exercise("StopReasons", _RECORD_HINT, first=_RECORD_FIRST, number=2)
def check_stop_reasons(StopReasons: Callable[[], Plugin]) -> str:
    """Exercise 2: a plugin whose ``seen`` lists every reply's ``stop_reason``, across runs."""
    recorder = StopReasons()
    if not isinstance(recorder, Plugin):
        raise NotYet("StopReasons() is not a Plugin; subclass harness.Plugin.")
    model = ScriptedModel(
        [
            *_finisher(),  # run 1: tool_use, tool_use, end_turn
            reply("A summary of the conversation so far."),  # a side request, not a reply
            reply("word " * 400),  # run 2: cut off by max_tokens
            *_stubborn()[:2],  # run 3: stopped by max_turns after two tool_use replies
        ]
    )
    agent = BaseAgent(model, tools=_Files(), config=AgentConfig(max_turns=5), plugins=[recorder])
    run_1 = ["tool_use", "tool_use", "end_turn"]
    steps: list[tuple[str, Callable[[], None], list[str]]] = [
        ("a run of three replies", lambda: _drain(agent, "What is left?"), run_1),
        (
            "a side request through agent.call (a summary, as chapter 05 sends; its reply "
            "does not join the conversation)",
            lambda: _side_request(agent),
            [],
        ),
        ("a reply cut off by max_tokens", lambda: _cut_off(agent), ["max_tokens"]),
        ("a run stopped by max_turns", lambda: _limited(agent), ["tool_use", "tool_use"]),
    ]
    expected: list[str] = []
    for what, step, adds in steps:
        step()
        expected += adds
        seen = getattr(recorder, "seen", None)
        if not isinstance(seen, list):
            raise NotYet(f"after {what}, recorder.seen is {seen!r:.80}, not a list.")
        if seen != expected:
            raise NotYet(f"after {what}, expected seen == {expected}, got {seen}.")
        if problems := m.validate(agent.messages):
            raise NotYet(f"after {what}, the conversation is not valid: {problems[0]}")
    fresh = getattr(StopReasons(), "seen", None)
    if fresh != []:
        raise NotYet(
            f"a new StopReasons() starts with seen == {fresh!r:.80}: every instance needs a "
            "list of its own (a list set in the class body is shared by all of them)."
        )
    return f"StopReasons records every reply's stop_reason: {expected}"


def _side_request(agent: BaseAgent) -> None:
    """A request outside the loop, as a compaction sends one: through ``agent.call``."""
    request = agent.request()
    messages = [*request.messages, m.user("Summarise the conversation so far.")]
    summary = ModelRequest(
        model=request.model, max_tokens=request.max_tokens, messages=messages, purpose="summary"
    )
    agent.call(summary)


def _cut_off(agent: BaseAgent) -> None:
    agent.config.max_tokens = 100  # far shorter than the scripted reply
    try:
        _drain(agent, "Now write it all out in full.")
    finally:
        agent.config.max_tokens = AgentConfig().max_tokens


def _limited(agent: BaseAgent) -> None:
    agent.config.max_turns = 2
    _drain(agent, "Keep checking the files.")


hint = hints(__name__, {1: _LIMIT_RECIPE, 2: _RECORD_RECIPE})

__all__ = ["LIMIT_CASES", "check_agent_loop_limited", "check_stop_reasons", "hint"]
