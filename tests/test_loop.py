"""The agent loop: what it yields, what it sends, and that the conversation stays valid."""

from __future__ import annotations

import copy
import itertools
import threading
from collections.abc import Callable, Generator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from anthropic import OverloadedError
from anthropic.types import Message, TextBlock, ToolUseBlock, Usage

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.events import (
    AssistantReplied,
    Event,
    HookReported,
    MaxTurnsReached,
    ModelCalled,
    PermissionDecided,
    PromptRefused,
    RewriteRefused,
    ToolFinished,
    ToolStarted,
    TurnEnded,
)
from harness.loop import (
    DEFAULT_CONTEXT_WINDOW,
    INTERRUPTED,
    AgentConfig,
    BaseAgent,
    ModelRequest,
    NoTools,
    Plugin,
    PromptCheck,
    Rewrite,
    RunInProgress,
    StopRun,
)
from harness.model import DEFAULT_MODEL, ScriptedModel, faults, reply, tool_call
from harness.model.models import UNKNOWN_MODEL_WINDOW
from harness.pricing import cost_of
from harness.tools import ToolContext, tool
from harness.tools.permissions import Permissions
from tests.small_tools import EchoInput, count, echo

# --- small tools ---------------------------------------------------------------------------


def make_agent(
    script: list[Any], tmp_path: Path, *, tools: Any = (echo, count), **kwargs: Any
) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(script)
    agent = Agent(model, tools=tools, workspace=tmp_path, clock=FakeClock(), **kwargs)
    return agent, model


def kinds(events: list[Event]) -> list[type[Event]]:
    return [type(e) for e in events]


def problems_at_rest(messages: list[m.MessageDict]) -> list[m.Problem]:
    """``validate``, except for the calls of the last reply while its tools are running."""
    return [
        p
        for p in m.validate(messages)
        if not (p.kind == "tool_use_unanswered" and p.index == len(messages) - 1)
    ]


def run_validating(agent: Agent, prompt: str) -> list[Event]:
    """Run to the end, checking the conversation after every event.

    Between a reply and its results the last reply's calls are pending (that is what "the
    tools are running" means); everything else must be valid at every step, and the whole
    conversation once the run is over.
    """
    events = []
    for event in agent.run(prompt):
        assert problems_at_rest(agent.messages) == [], f"invalid after {event}"
        events.append(event)
    assert m.validate(agent.messages) == []
    return events


def assert_valid_wherever_stopped(make: Callable[[], Agent], prompt: str) -> None:
    """Stop a fresh run after each event in turn: the conversation left must be API-valid."""
    total = len(list(make().run(prompt)))
    for stop_after in range(1, total + 1):
        agent = make()
        run = agent.run(prompt)
        for _ in range(stop_after):
            next(run)
        run.close()
        assert m.validate(agent.messages) == [], f"invalid when stopped after event {stop_after}"


# --- the basic shapes -----------------------------------------------------------------------


def test_a_run_without_tools_calls_the_model_once_and_ends_the_turn(tmp_path: Path) -> None:
    agent, _ = make_agent([reply("Hello!")], tmp_path, tools=())

    events = list(agent.run("Hi"))

    assert kinds(events) == [ModelCalled, AssistantReplied, TurnEnded]
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].stop_reason == "end_turn"
    assert [msg["role"] for msg in agent.messages] == ["user", "assistant"]
    assert m.text_of(agent.messages[1]) == "Hello!"


class _PromptGate(Plugin):
    def __init__(self, check: PromptCheck | None) -> None:
        self.check = check
        self.seen: list[str] = []

    def before_prompt(self, agent: BaseAgent, prompt: str) -> PromptCheck | None:
        self.seen.append(prompt)
        return self.check


def test_a_prompt_refused_by_before_prompt_is_never_sent_and_the_run_says_why(
    tmp_path: Path,
) -> None:
    gate = _PromptGate(PromptCheck(block=True, reason="no secrets in prompts"))
    agent, model = make_agent([reply("never")], tmp_path, tools=(), plugins=[gate])

    events = list(agent.run("my password is hunter2"))

    assert kinds(events) == [PromptRefused]
    assert "no secrets in prompts" in str(events[0])
    assert agent.messages == [] and model.requests == []
    assert gate.seen == ["my password is hunter2"]


def test_context_from_before_prompt_follows_the_prompt_in_its_message(tmp_path: Path) -> None:
    gates = [_PromptGate(PromptCheck(context="Branch: main")), _PromptGate(None)]
    gates.append(_PromptGate(PromptCheck(context="Time: 09:00")))
    agent, model = make_agent([reply("ok")], tmp_path, tools=(), plugins=gates)

    list(agent.run("What changed?"))

    sent = model.requests[0].messages[0]
    assert [b["text"] for b in m.blocks(sent)] == ["What changed?", "Branch: main", "Time: 09:00"]


def test_blank_context_from_before_prompt_is_left_out(tmp_path: Path) -> None:
    agent, model = make_agent(
        [reply("ok")], tmp_path, tools=(), plugins=[_PromptGate(PromptCheck(context="  \n"))]
    )

    list(agent.run("Hi"))

    assert model.requests[0].messages[0]["content"] == "Hi"


def test_a_tool_result_goes_back_in_the_next_request_with_the_same_id(tmp_path: Path) -> None:
    agent, model = make_agent(
        [reply(tool_calls=[tool_call("echo", text="pong")]), reply("It said pong.")], tmp_path
    )

    events = list(agent.run("ping it"))

    assert kinds(events) == [
        ModelCalled,
        AssistantReplied,
        ToolStarted,
        PermissionDecided,
        ToolFinished,
        ModelCalled,
        AssistantReplied,
        TurnEnded,
    ]
    use = m.tool_uses(model.requests[1].messages[-2])[0]
    sent = model.requests[1].messages[-1]
    assert sent["role"] == "user"
    assert sent["content"] == [m.tool_result(use["id"], "pong")]
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].stop_reason == "end_turn"


# --- the conversation is valid after every step ---------------------------------------------


def test_the_conversation_is_valid_after_every_event_of_a_multi_tool_turn(tmp_path: Path) -> None:
    script = [
        reply(
            "Three at once.",
            tool_calls=[
                tool_call("echo", text="a"),
                tool_call("count", n=3),
                tool_call("echo", text="b"),
            ],
        ),
        reply("Done."),
    ]
    agent, _ = make_agent(script, tmp_path)

    events = run_validating(agent, "go")

    results = m.tool_results(agent.messages[2])
    assert [r["content"] for r in results] == ["a", "1 2 3", "b"]
    assert isinstance(events[-1], TurnEnded)
    assert_valid_wherever_stopped(lambda: make_agent(script, tmp_path)[0], "go")


def test_the_conversation_is_valid_after_every_event_when_a_tool_fails(tmp_path: Path) -> None:
    script = [reply(tool_calls=[tool_call("count", n=-1)]), reply("Sorry.")]
    agent, _ = make_agent(script, tmp_path)

    run_validating(agent, "count to minus one")

    (result,) = m.tool_results(agent.messages[2])
    assert result["is_error"] is True
    assert result["content"] == "n must not be negative"
    assert_valid_wherever_stopped(lambda: make_agent(script, tmp_path)[0], "count")


def test_the_conversation_is_valid_after_every_event_of_a_truncated_reply(tmp_path: Path) -> None:
    script = [reply("x" * 400, tool_calls=[tool_call("echo", text="never")])]
    agent, _ = make_agent(script, tmp_path, config=AgentConfig(max_tokens=20))

    events = run_validating(agent, "talk a lot")

    assert isinstance(events[-1], TurnEnded)
    assert events[-1].stop_reason == "max_tokens"
    assert m.tool_uses(agent.messages[-1]) == []


# --- max_turns --------------------------------------------------------------------------------


def test_max_turns_ends_the_run_with_an_event_and_a_valid_conversation(tmp_path: Path) -> None:
    script = [reply(tool_calls=[tool_call("echo", text=str(i))]) for i in range(3)]
    agent, model = make_agent(script, tmp_path, config=AgentConfig(max_turns=2))

    events = run_validating(agent, "loop forever")
    assert_valid_wherever_stopped(
        lambda: make_agent(script, tmp_path, config=AgentConfig(max_turns=2))[0], "loop"
    )

    assert events[-1] == MaxTurnsReached(2)
    assert len(model.requests) == 2
    assert agent.messages[-1]["role"] == "user"  # it stopped on tool results


def test_a_run_after_max_turns_merges_the_prompt_into_the_trailing_user_message(
    tmp_path: Path,
) -> None:
    script = [reply(tool_calls=[tool_call("echo", text="1")]), reply("All right, stopping.")]
    agent, model = make_agent(script, tmp_path, config=AgentConfig(max_turns=1))
    list(agent.run("loop forever"))
    before = len(agent.messages)

    events = run_validating(agent, "please stop now")

    assert isinstance(events[-1], TurnEnded)
    sent = model.requests[1].messages
    assert len(sent) == before  # no new message: the prompt joined the tool results
    assert m.tool_results(sent[-1])
    assert m.text_of(sent[-1]) == "please stop now"
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(sent))


# --- one run at a time ----------------------------------------------------------------------


def test_a_second_run_while_one_is_in_progress_raises_run_in_progress(tmp_path: Path) -> None:
    agent, _ = make_agent([reply("one"), reply("two")], tmp_path)
    first = agent.run("first")
    next(first)

    with pytest.raises(RunInProgress, match="already running"):
        next(agent.run("second"))

    assert list(first)[-1] == TurnEnded(1, "end_turn")
    assert list(agent.run("second"))[-1] == TurnEnded(1, "end_turn")


def test_a_run_from_another_thread_is_refused_while_one_is_in_progress(tmp_path: Path) -> None:
    agent, _ = make_agent([reply("one"), reply("two")], tmp_path)
    first = agent.run("first")
    next(first)
    errors: list[BaseException] = []

    def second() -> None:
        try:
            list(agent.run("second"))
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=second)
    thread.start()
    thread.join(timeout=5)

    assert len(errors) == 1
    assert isinstance(errors[0], RunInProgress)
    list(first)
    thread = threading.Thread(target=second)
    thread.start()
    thread.join(timeout=5)
    assert len(errors) == 1  # the second attempt, after the first run finished, went through
    assert m.text_of(agent.messages[-1]) == "two"


# --- truncated replies ------------------------------------------------------------------------


def test_a_reply_cut_by_max_tokens_ends_the_run_without_running_its_tool(tmp_path: Path) -> None:
    ran: list[str] = []

    @tool(EchoInput)
    def record(args: EchoInput, context: ToolContext) -> str:
        """Record the text."""
        ran.append(args.text)
        return "recorded"

    script = [reply("x" * 200, tool_calls=[tool_call("record", text="never")])]
    agent, _ = make_agent(script, tmp_path, tools=[record], config=AgentConfig(max_tokens=30))

    events = list(agent.run("go"))

    replied = next(e for e in events if isinstance(e, AssistantReplied))
    assert replied.message.stop_reason == "max_tokens"
    assert not any(isinstance(e, ToolStarted) for e in events)
    assert events[-1] == TurnEnded(1, "max_tokens")
    assert ran == []


def test_a_reply_stopped_by_max_tokens_keeps_no_tool_call_it_contains(tmp_path: Path) -> None:
    script = [reply("partial", tool_calls=[tool_call("echo", text="x")], stop_reason="max_tokens")]
    agent, _ = make_agent(script, tmp_path)

    events = list(agent.run("go"))

    replied = next(e for e in events if isinstance(e, AssistantReplied))
    assert any(b.type == "tool_use" for b in replied.message.content)  # the reply had one
    assert m.tool_uses(agent.messages[-1]) == []  # the conversation did not keep it
    assert events[-1] == TurnEnded(1, "max_tokens")
    assert m.validate(agent.messages) == []


def api_message(content: list[Any], stop_reason: Any) -> Message:
    return Message(
        id="msg_test",
        type="message",
        role="assistant",
        model="claude-test",
        content=content,
        stop_reason=stop_reason,
        stop_sequence=None,
        usage=Usage(input_tokens=10, output_tokens=5),
    )


def test_from_reply_drops_tool_calls_unless_the_model_stopped_to_call_them() -> None:
    blocks = [
        TextBlock(type="text", text="Let me look"),
        ToolUseBlock(type="tool_use", id="toolu_x", name="echo", input={"text": "hi"}),
    ]

    cut = m.from_reply(api_message(blocks, "max_tokens"))
    kept = m.from_reply(api_message(blocks, "tool_use"))

    assert cut == {"role": "assistant", "content": [m.text("Let me look")]}
    assert m.tool_uses(kept) == [m.tool_use("toolu_x", "echo", {"text": "hi"})]


def test_from_reply_uses_no_content_for_an_empty_reply() -> None:
    only_a_cut_call = [ToolUseBlock(type="tool_use", id="toolu_y", name="echo", input={})]

    assert m.from_reply(api_message([], "end_turn"))["content"] == [m.text(m.NO_CONTENT)]
    assert m.from_reply(api_message(only_a_cut_call, "max_tokens"))["content"] == [
        m.text("(no content)")
    ]


def test_from_reply_drops_whitespace_only_text_the_api_would_refuse() -> None:
    blocks = [
        TextBlock(type="text", text="\n\n"),
        ToolUseBlock(type="tool_use", id="toolu_z", name="echo", input={"text": "hi"}),
    ]

    message = m.from_reply(api_message(blocks, "tool_use"))
    blank = m.from_reply(api_message([TextBlock(type="text", text="  ")], "end_turn"))

    assert message["content"] == [m.tool_use("toolu_z", "echo", {"text": "hi"})]
    assert blank["content"] == [m.text(m.NO_CONTENT)]


def test_a_tool_use_stop_without_tool_calls_ends_the_run_validly(tmp_path: Path) -> None:
    agent, _ = make_agent([reply("I will call a tool", stop_reason="tool_use")], tmp_path)

    events = run_validating(agent, "go")

    assert isinstance(events[-1], TurnEnded)
    assert agent.messages[-1]["role"] == "assistant"


# --- interruption and errors --------------------------------------------------------------------


def test_stopping_after_a_reply_with_tool_calls_answers_them_as_interrupted(
    tmp_path: Path,
) -> None:
    script = [
        reply(tool_calls=[tool_call("echo", text="a"), tool_call("echo", text="b")]),
        reply("fresh start"),
    ]
    agent, _ = make_agent(script, tmp_path)
    run = agent.run("go")
    for event in run:
        if isinstance(event, AssistantReplied):
            break
    run.close()

    last = agent.messages[-1]
    results = m.tool_results(last)
    assert len(results) == 2
    assert all(r["content"] == INTERRUPTED and r["is_error"] is True for r in results)
    assert m.validate(agent.messages) == []
    assert list(agent.run("again"))[-1] == TurnEnded(1, "end_turn")


def test_stopping_after_tools_ran_keeps_their_real_results_and_runs_nothing_twice(
    tmp_path: Path,
) -> None:
    ran: list[str] = []

    @tool(EchoInput)
    def write_note(args: EchoInput, context: ToolContext) -> str:
        """Record a note (a side effect that must not happen twice)."""
        ran.append(args.text)
        return f"noted {args.text}"

    script = [
        reply(tool_calls=[tool_call("write_note", text="a"), tool_call("write_note", text="b")]),
        reply("done"),
    ]
    agent, _ = make_agent(script, tmp_path, tools=[write_note], permissions=Permissions("bypass"))
    run = agent.run("go")
    for event in run:
        if isinstance(event, ToolFinished):  # the caller walks away mid-way through the results
            break
    run.close()

    results = m.tool_results(agent.messages[-1])
    assert [r["content"] for r in results] == ["noted a", "noted b"]
    assert ran == ["a", "b"]
    assert m.validate(agent.messages) == []
    list(agent.run("go on"))
    assert ran == ["a", "b"]


def test_settings_given_both_in_config_and_as_keywords_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="max_turns"):
        Agent(ScriptedModel([]), workspace=tmp_path, config=AgentConfig(), max_turns=3)


def test_the_model_id_is_a_keyword_setting_beside_the_model_object(tmp_path: Path) -> None:
    model = ScriptedModel([reply("hi")])
    agent = Agent(model, workspace=tmp_path, model="claude-haiku-4-5", max_tokens=100)

    list(agent.run("go"))

    assert agent.model is model
    assert (model.requests[0].model, model.requests[0].max_tokens) == ("claude-haiku-4-5", 100)


def test_an_error_from_the_model_propagates_and_leaves_the_agent_usable(tmp_path: Path) -> None:
    script = [
        reply(tool_calls=[tool_call("echo", text="a")]),
        faults.overloaded(),
        reply("back"),
    ]
    agent, _ = make_agent(script, tmp_path)

    with pytest.raises(OverloadedError):
        list(agent.run("go"))

    assert m.validate(agent.messages) == []
    events = run_validating(agent, "try again")
    assert events[-1] == TurnEnded(1, "end_turn")
    assert m.text_of(agent.messages[-1]) == "back"


# --- plugins ------------------------------------------------------------------------------------


class Recorder(Plugin):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def call_model(
        self, agent: Agent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        self.log.append(f"{self.name} in")
        reply = call(request)
        self.log.append(f"{self.name} out")
        return reply


def test_a_rewrite_from_before_request_is_put_in_place_and_its_event_yielded(
    tmp_path: Path,
) -> None:
    note = HookReported("Plugin", "", "edited", "added a note")

    class AddNote(Plugin):
        def before_request(self, agent: BaseAgent) -> Rewrite:
            last = agent.messages[-1]
            edited = {"role": "user", "content": [*m.blocks(last), m.text("(a note)")]}
            return Rewrite([*agent.messages[:-1], edited], note)

    agent, model = make_agent([reply("ok")], tmp_path, plugins=[AddNote()])
    conversation = agent.messages

    events = list(agent.run("hi"))

    assert events[0] == note
    assert isinstance(events[1], ModelCalled)
    assert m.text_of(model.requests[0].messages[0]) == "hi(a note)"
    assert agent.messages is conversation  # replaced in place: a list you hold stays current


def test_a_rewrite_the_api_would_refuse_is_not_applied_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    class DropEverything(Plugin):
        def before_request(self, agent: BaseAgent) -> Rewrite:
            return Rewrite([], HookReported("Plugin", "", "dropped", "everything"))

    agent, model = make_agent([reply("ok")], tmp_path, plugins=[DropEverything()])

    events = list(agent.run("hi"))

    refused = [e for e in events if isinstance(e, RewriteRefused)]
    assert [e.plugin for e in refused] == ["DropEverything"]
    assert "not API-valid" in refused[0].reason
    assert m.text_of(model.requests[0].messages[0]) == "hi"
    assert isinstance(events[-1], TurnEnded)


def test_each_before_request_plugin_sees_the_conversation_the_one_before_left(
    tmp_path: Path,
) -> None:
    seen: list[str] = []

    class Append(Plugin):
        def __init__(self, word: str) -> None:
            self.word = word

        def before_request(self, agent: BaseAgent) -> Rewrite:
            seen.append(m.text_of(agent.messages[-1]))
            last = {"role": "user", "content": m.text_of(agent.messages[-1]) + self.word}
            return Rewrite([last], HookReported("Plugin", "", "appended", self.word))

    agent, model = make_agent([reply("ok")], tmp_path, plugins=[Append(" a"), Append(" b")])

    list(agent.run("hi"))

    assert seen == ["hi", "hi a"]
    assert m.text_of(model.requests[0].messages[0]) == "hi a b"


def test_apply_refuses_a_conversation_the_api_would_refuse_and_keeps_the_old_one(
    tmp_path: Path,
) -> None:
    agent, _ = make_agent([reply("ok")], tmp_path)
    list(agent.run("hi"))
    before = copy.deepcopy(agent.messages)
    unanswered = [m.user("go"), m.assistant([m.tool_use("toolu_9", "echo", {"text": "x"})])]

    with pytest.raises(m.InvalidConversation, match="toolu_9"):
        agent.apply(Rewrite([*unanswered, m.user("next")], TurnEnded(0, None)))

    assert agent.messages == before


def test_agent_call_runs_the_layers_and_the_meter_but_never_before_request(
    tmp_path: Path,
) -> None:
    log: list[str] = []

    class Watch(Recorder):
        def before_request(self, agent: BaseAgent) -> None:
            log.append("before_request")

    agent, model = make_agent([reply("a side answer")], tmp_path, plugins=[Watch("layer", log)])
    side = replace(agent.request(), messages=[m.user("a side question")], purpose="side")

    answer = agent.call(side)

    assert m.text_of(m.from_reply(answer)) == "a side answer"
    assert log == ["layer in", "layer out"]
    assert len(agent.meter.calls) == 1
    assert agent.messages == []  # a side request leaves the conversation alone
    assert model.requests[0].messages == [m.user("a side question")]


def test_the_purpose_of_a_request_is_never_sent(tmp_path: Path) -> None:
    agent, _ = make_agent([reply("ok")], tmp_path)
    request = replace(agent.request(), purpose="compaction")
    assert request.purpose == "compaction"
    assert "purpose" not in request.kwargs()
    assert agent.request().purpose == "turn"


def test_call_model_plugins_are_layered_with_the_first_outermost(tmp_path: Path) -> None:
    log: list[str] = []
    plugins = [Recorder("outer", log), Recorder("inner", log)]
    agent, _ = make_agent([reply("ok")], tmp_path, plugins=plugins)

    list(agent.run("hi"))

    assert log == ["outer in", "inner in", "inner out", "outer out"]


def test_after_reply_sees_the_reply_already_in_the_conversation(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []

    class Watch(Plugin):
        def after_reply(self, agent: Agent, reply: Message) -> None:
            seen.append((reply.id, m.text_of(agent.messages[-1])))

    agent, _ = make_agent([reply("remember me")], tmp_path, plugins=[Watch()])

    events = list(agent.run("hi"))

    replied = next(e for e in events if isinstance(e, AssistantReplied))
    assert seen == [(replied.message.id, "remember me")]


# --- the request ----------------------------------------------------------------------------------


def test_the_request_carries_config_system_prompt_and_tool_definitions(tmp_path: Path) -> None:
    agent, model = make_agent(
        [reply("ok")],
        tmp_path,
        system="You are terse.",
        config=AgentConfig(model="claude-test-1", max_tokens=1234),
    )

    list(agent.run("hi"))

    sent = model.requests[0]
    assert sent.model == "claude-test-1"
    assert sent.max_tokens == 1234
    assert sent.system == "You are terse."
    assert sent.tools is not None
    assert [t["name"] for t in sent.tools] == ["echo", "count"]
    assert sent.tools[0]["input_schema"] == EchoInput.model_json_schema()
    assert sent.tools[0]["description"] == "Say the text back."


def test_the_request_has_no_tools_when_the_agent_has_none(tmp_path: Path) -> None:
    agent, model = make_agent([reply("ok")], tmp_path, tools=())

    list(agent.run("hi"))

    assert model.requests[0].tools is None
    assert "tools" not in agent.request().kwargs()


# --- events read in one line ------------------------------------------------------------------


def test_events_print_on_one_line_with_their_key_facts(tmp_path: Path) -> None:
    script = [reply("Checking", tool_calls=[tool_call("echo", text="a\nb")]), reply("Done.")]
    agent, _ = make_agent(
        script, tmp_path, permissions=Permissions(mode="bypass"), config=AgentConfig(max_turns=5)
    )

    events = list(agent.run("go"))
    lines = {type(e).__name__: str(e) for e in events}

    assert all("\n" not in str(e) for e in events)
    assert "echo" in lines["ToolStarted"]
    assert "echo" in lines["ToolFinished"]
    assert "allow" in lines["PermissionDecided"]
    assert "tool_use" in str(events[1])  # the first reply's stop reason
    assert "[echo]" in str(events[1])
    assert "end_turn" in lines["TurnEnded"]
    assert "5" in str(MaxTurnsReached(5))


def test_the_model_id_comes_from_harness_model_when_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_MODEL", "claude-haiku-4-5")
    agent, model = make_agent([reply("hi")], tmp_path)
    list(agent.run("hello"))
    assert model.requests[0].model == "claude-haiku-4-5"


# --- the loop without chapter 02 ----------------------------------------------------------------


class Shout:
    """A tool runner of its own: the loop needs only what ``ToolCalls`` asks for."""

    def __init__(self) -> None:
        self.finished: dict[str, m.Block] = {}

    def definitions(self) -> list[dict[str, Any]]:
        return [{"name": "shout", "description": "Shout.", "input_schema": {"type": "object"}}]

    def run(self, calls: Sequence[m.Block]) -> Generator[Event, None, list[m.Block]]:
        for call in calls:
            yield ToolStarted(call["id"], call["name"], call["input"])
            self.finished[call["id"]] = m.tool_result(call["id"], str(call["input"]).upper())
        return [self.finished[c["id"]] for c in calls]


def test_the_loop_runs_tools_through_any_tool_calls_implementation() -> None:
    model = ScriptedModel([reply(tool_calls=[tool_call("shout", word="hey")]), reply("done")])
    agent = BaseAgent(model, tools=Shout(), clock=FakeClock())

    events = list(agent.run("go"))

    assert [t["name"] for t in model.requests[0].tools or []] == ["shout"]
    assert m.tool_results(agent.messages[2])[0]["content"] == "{'WORD': 'HEY'}"
    assert isinstance(events[-1], TurnEnded)


def test_an_agent_with_no_tools_answers_a_stray_tool_call_with_an_error() -> None:
    model = ScriptedModel([reply(tool_calls=[tool_call("ghost")]), reply("sorry")])
    agent = BaseAgent(model, clock=FakeClock())

    list(agent.run("go"))

    assert isinstance(agent.tools, NoTools)
    [result] = m.tool_results(agent.messages[2])
    assert result["is_error"] is True
    assert "no tools" in result["content"]
    assert m.validate(agent.messages) == []


# --- a layer that ends the run, a plugin's own stop hook, the meter (chapter 06) -----------


class _Refused(Event):
    def __str__(self) -> str:
        return "■ refused by a layer"


class EndsTheRun(Plugin):
    """A call_model layer that gives up on the n-th call, as error recovery does."""

    def __init__(self, on_call: int) -> None:
        self.on_call, self.calls = on_call, 0

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        self.calls += 1
        if self.calls == self.on_call:
            agent.emit(HookReported("Stop", "", "failed", "reported before giving up"))
            raise StopRun(_Refused())
        return call(request)


def test_stop_run_from_a_plugin_ends_the_run_with_its_event(tmp_path: Path) -> None:
    agent, model = make_agent([reply("never")], tmp_path, plugins=[EndsTheRun(on_call=1)])
    events = list(agent.run("go"))
    assert isinstance(events[-1], _Refused)
    assert isinstance(events[-2], HookReported)  # what the layer emitted comes first
    assert model.requests == [] and model.remaining == 1
    assert not any(isinstance(e, TurnEnded | AssistantReplied) for e in events)


def test_stop_run_after_a_tool_turn_leaves_a_valid_conversation_and_a_usable_agent(
    tmp_path: Path,
) -> None:
    script = [reply(tool_calls=[tool_call("count", n=2)]), reply("again")]
    agent, _ = make_agent(script, tmp_path, plugins=[EndsTheRun(on_call=2)])
    events = list(agent.run("go"))
    assert isinstance(events[-1], _Refused)
    assert m.validate(agent.messages) == []
    assert isinstance(list(agent.run("try again"))[-1], TurnEnded)


class KeepGoingOnce(Plugin):
    def __init__(self) -> None:
        self.asked = 0

    def on_stop(self, agent: BaseAgent, reply: Message) -> str | None:
        self.asked += 1
        return "Go on, please." if self.asked == 1 else None


def test_a_plugins_on_stop_can_continue_the_turn(tmp_path: Path) -> None:
    plugin = KeepGoingOnce()
    agent, model = make_agent([reply("part one"), reply("part two")], tmp_path, plugins=[plugin])
    events = list(agent.run("go"))
    assert m.text_of(model.requests[1].last_message) == "Go on, please."
    assert [msg["role"] for msg in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert isinstance(events[-1], TurnEnded) and events[-1].turn == 2
    assert plugin.asked == 2


def test_on_stop_is_asked_only_after_the_stop_hooks_let_the_turn_end(tmp_path: Path) -> None:
    plugin = KeepGoingOnce()
    hook_calls: list[str] = []

    def stop_hook(message: Message) -> str | None:
        hook_calls.append("hook")
        return "Check your work." if len(hook_calls) == 1 else None

    script = [reply("a"), reply("b"), reply("c")]
    agent, model = make_agent(script, tmp_path, plugins=[plugin], stop_hooks=[stop_hook])
    list(agent.run("go"))
    assert [m.text_of(r.last_message) for r in model.requests[1:]] == [
        "Check your work.",
        "Go on, please.",
    ]


class ServedByAnotherModel:
    """A model whose replies say a different model served them (a fallback, a gateway)."""

    def __init__(self, served_by: str) -> None:
        self.inner = ScriptedModel([reply("hi")])
        self.served_by = served_by

    def create(self, **params: Any) -> Message:
        return self.inner.create(**params).model_copy(update={"model": self.served_by})

    def count_tokens(self, **params: Any) -> int:
        return self.inner.count_tokens(**params)


def test_the_meter_prices_a_call_at_the_model_the_reply_names(tmp_path: Path) -> None:
    agent = Agent(
        ServedByAnotherModel("claude-haiku-4-5"),
        workspace=tmp_path,
        clock=FakeClock(),
        config=AgentConfig(model="claude-opus-4-6"),
    )
    list(agent.run("go"))
    (call,) = agent.meter.calls
    assert call.model == "claude-haiku-4-5"
    assert call.cost == cost_of(call.usage, "claude-haiku-4-5")


def test_the_context_window_comes_from_config_then_the_model_then_the_model_table(
    tmp_path: Path,
) -> None:
    scripted = ScriptedModel([], context_window=50_000)
    assert Agent(scripted, workspace=tmp_path).context_window == 50_000
    configured = AgentConfig(context_window=30_000)
    assert Agent(scripted, workspace=tmp_path, config=configured).context_window == 30_000
    no_window = ServedByAnotherModel("x")

    def window_for(model: str) -> int:
        config = AgentConfig(model=model)
        return Agent(no_window, workspace=tmp_path, config=config).context_window

    assert window_for(DEFAULT_MODEL) == DEFAULT_CONTEXT_WINDOW == 1_000_000
    assert window_for("claude-haiku-4-5-20251001") == 200_000  # the table, dated id and all
    assert window_for("claude-sonnet-4-6") == 1_000_000
    assert window_for("not-a-claude-model") == UNKNOWN_MODEL_WINDOW == 200_000
