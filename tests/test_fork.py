"""Forks: the parent's exact request plus one message, run without touching the parent.

``fork_messages`` is checked as a property over generated conversations (ending on a reply
that asked for tools, on a plain reply, or on the user's side); ``run_fork`` against the
scripted model: its calls go through ``agent.call`` (layers, meter, purpose) but never
``before_request``, the parent's state is left as it was, and with prompt caching its first
call reads the parent's prefix from the cache.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic.types import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.fork import FORK_PLACEHOLDER, NoForkTools, fork_messages, run_fork
from harness.loop import AgentConfig, BaseAgent, ModelRequest, Plugin, Rewrite
from harness.model import Reply, Request, ScriptedModel, faults, reply, tool_call
from harness.pricing import prompt_tokens
from harness.prompt import PromptCaching, SystemPrompt, default_sections
from harness.tools import builtin_tools
from tests.test_compaction_properties import coding_conversations

PROPERTY = settings(max_examples=80, deadline=None)

Conversation = list[dict[str, Any]]

DIRECTIVE = "Update the notes from the conversation above."
SIBLING = "Write a one-line summary of the conversation above."


# --- fork_messages -----------------------------------------------------------------------------


@st.composite
def parent_conversations(draw: st.DrawFn) -> tuple[Conversation, str]:
    """A valid conversation ending on a reply with tool calls (not yet run), on a reply with
    none, or on the user's side; and which of the three it is."""
    messages = draw(coding_conversations())
    ending = draw(st.sampled_from(["tool_use", "assistant", "user"]))
    with_calls = [i for i, x in enumerate(messages) if x["role"] == "assistant" and m.tool_uses(x)]
    if ending == "tool_use" and with_calls:
        messages = messages[: draw(st.sampled_from(with_calls)) + 1]
    elif ending == "tool_use":
        if messages[-1]["role"] == "assistant":
            messages.append(m.user("Go on."))
        messages.append(m.assistant([m.tool_use("toolu_pending_1", "read_file", {"path": "a"})]))
    if ending == "assistant" and messages[-1]["role"] == "user":
        messages.append(m.assistant(draw(st.sampled_from(["Done.", "日本語 🙂"]))))
    if ending == "user" and messages[-1]["role"] == "assistant":
        messages.append(m.user(draw(st.sampled_from(["Go on.", "Thanks"]))))
    return messages, ending


def pending_ids(messages: Conversation) -> list[str]:
    last = messages[-1]
    return [u["id"] for u in m.tool_uses(last)] if last["role"] == "assistant" else []


@PROPERTY
@given(parent_conversations())
def test_a_fork_of_any_conversation_is_one_the_api_accepts(case: tuple[Conversation, str]) -> None:
    messages, _ = case
    assert m.validate(fork_messages(messages, DIRECTIVE)) == []


@PROPERTY
@given(parent_conversations())
def test_forking_leaves_the_parents_list_and_messages_as_they_were(
    case: tuple[Conversation, str],
) -> None:
    messages, _ = case
    before = copy.deepcopy(messages)
    identities = [id(x) for x in messages]

    forked = fork_messages(messages, DIRECTIVE)

    assert messages == before
    assert [id(x) for x in messages] == identities
    assert forked is not messages
    # Every parent message the fork shares is the same object (none was copied needlessly),
    # except the last one when the directive had to join it.
    shared = len(messages) if messages[-1]["role"] == "assistant" else len(messages) - 1
    assert all(a is b for a, b in zip(forked[:shared], messages, strict=False))


@PROPERTY
@given(parent_conversations())
def test_the_fork_adds_placeholders_for_pending_calls_then_the_directive(
    case: tuple[Conversation, str],
) -> None:
    messages, ending = case
    forked = fork_messages(messages, DIRECTIVE)

    last = forked[-1]
    assert last["role"] == "user"
    assert m.blocks(last)[-1] == m.text(DIRECTIVE)
    if ending == "user":
        assert len(forked) == len(messages)
        assert m.blocks(last)[:-1] == m.blocks(messages[-1])  # the user's words, then ours
        return
    assert len(forked) == len(messages) + 1
    results = m.tool_results(last)
    assert [r["tool_use_id"] for r in results] == pending_ids(messages)
    assert {json.dumps(r["content"]) for r in results} <= {json.dumps(FORK_PLACEHOLDER)}
    assert not any(r.get("is_error") for r in results)
    assert len(m.blocks(last)) == len(results) + 1


def cache_order(messages: Conversation, system: str, tools: list[dict[str, Any]]) -> str:
    """A request as the prompt cache reads it: tools, then system, then messages."""
    return json.dumps({"tools": tools, "system": system, "messages": messages}, ensure_ascii=False)


@PROPERTY
@given(parent_conversations())
def test_sibling_forks_share_every_byte_up_to_their_directives(
    case: tuple[Conversation, str],
) -> None:
    messages, _ = case
    tools = [t.definition() for t in builtin_tools()]
    one = cache_order(fork_messages(messages, DIRECTIVE), "You are a coding agent.", tools)
    two = cache_order(fork_messages(messages, SIBLING), "You are a coding agent.", tools)

    cut = one.rindex(json.dumps(DIRECTIVE)[1:-1])
    assert two[:cut] == one[:cut]
    assert two[cut:].startswith(json.dumps(SIBLING)[1:-1])


def test_a_fork_of_nothing_is_the_directive_alone() -> None:
    assert fork_messages([], DIRECTIVE) == [m.user([m.text(DIRECTIVE)])]


def test_every_pending_call_gets_the_same_placeholder_text() -> None:
    calls = [m.tool_use(f"toolu_{n}", "read_file", {"path": f"{n}.py"}) for n in range(3)]
    messages = [m.user("Read three files."), m.assistant([m.text("Reading."), *calls])]
    last = fork_messages(messages, DIRECTIVE)[-1]
    assert [r["content"] for r in m.tool_results(last)] == [FORK_PLACEHOLDER] * 3


# --- run_fork ----------------------------------------------------------------------------------


class Spy(Plugin):
    """Counts ``before_request`` calls and records each request's purpose at ``call_model``."""

    def __init__(self) -> None:
        self.before = 0
        self.purposes: list[str] = []

    def before_request(self, agent: BaseAgent) -> Rewrite | None:
        self.before += 1
        return None

    def call_model(
        self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Message]
    ) -> Message:
        self.purposes.append(request.purpose)
        return call(request)


class RecordingTools:
    """A fork's tool runner that records the calls it is given and answers each one."""

    def __init__(self) -> None:
        self.calls: list[m.Block] = []

    def run(self, calls: Sequence[m.Block]) -> list[m.Block]:
        self.calls += calls
        return [m.tool_result(str(c["id"]), "noted") for c in calls]


def is_fork(request: Request) -> bool:
    return any(
        DIRECTIVE in m.text_of(x) or SIBLING in m.text_of(x)
        for x in request.messages
        if x["role"] == "user"
    )


def edits_once(request: Request) -> Reply:
    """The fork's model: a tool call answering the directive, then a sentence."""
    if DIRECTIVE in m.text_of(request.last_message) or SIBLING in m.text_of(request.last_message):
        return reply("Noting it.", tool_calls=[tool_call("edit_file", path="NOTES.md")])
    return reply("Done.")


def always_calls(request: Request) -> Reply:
    return reply(tool_calls=[tool_call("read_file", path="a.py")])


BODY = "".join(f"total_{i} = round(price_{i} * rate, 2)  # line {i}\n" for i in range(400))


def parent(
    tmp_path: Path,
    plugins: Sequence[Plugin] = (),
    *,
    responder: Callable[[Request], Any] = edits_once,
) -> tuple[Agent, ScriptedModel]:
    """An agent that has read a file (about 4K tokens) and answered: one run done."""
    (tmp_path / "a.py").write_text(BODY)
    clock = FakeClock()
    model = ScriptedModel(
        [
            reply("Reading a.py.", tool_calls=[tool_call("read_file", path="a.py")]),
            reply("a.py rounds every total to cents."),
        ],
        clock=clock,
    )
    model.answer_when(is_fork, responder)
    tools = builtin_tools()
    agent = Agent(
        model,
        tools=tools,
        system=SystemPrompt(tuple(default_sections(t.name for t in tools))).render(),
        workspace=tmp_path,
        clock=clock,
        plugins=list(plugins),
        config=AgentConfig(max_turns=5),
    )
    for _ in agent.run("How does a.py round totals?"):
        pass
    return agent, model


def test_a_forks_calls_go_through_the_layers_and_the_parents_meter(tmp_path: Path) -> None:
    spy = Spy()
    agent, model = parent(tmp_path, [spy])
    calls, purposes, before = len(agent.meter.calls), list(spy.purposes), spy.before

    fork = run_fork(agent, DIRECTIVE, tools=RecordingTools(), purpose="memory")

    assert fork.calls == 2 and fork.stopped == "end_turn" and fork.text == "Done."
    assert len(agent.meter.calls) == calls + 2
    assert agent.meter.calls[-1].usage == fork.replies[-1].usage
    assert spy.purposes == [*purposes, "memory", "memory"]
    assert spy.before == before  # never before_request: a fork cannot compact
    assert sum(is_fork(r) for r in model.requests) == 2


def test_a_fork_started_outside_a_run_never_runs_before_request(tmp_path: Path) -> None:
    spy = Spy()
    clock = FakeClock()
    model = ScriptedModel(clock=clock)
    model.answer_when(is_fork, edits_once)
    agent = Agent(model, tools=builtin_tools(), workspace=tmp_path, clock=clock, plugins=[spy])
    agent.messages = [m.user("Hello."), m.assistant("Hi.")]

    run_fork(agent, DIRECTIVE, purpose="memory")

    assert spy.before == 0
    assert spy.purposes == ["memory", "memory"]


def test_the_forks_first_request_is_the_parents_request_plus_one_message(
    tmp_path: Path,
) -> None:
    agent, model = parent(tmp_path)
    last_turn = model.requests[-1]

    run_fork(agent, DIRECTIVE)

    first = next(r for r in model.requests if is_fork(r))
    assert first.system == last_turn.system and first.tools == last_turn.tools
    assert first.model == last_turn.model and first.max_tokens == last_turn.max_tokens
    assert first.messages[:-1] == m.normalize(agent.messages)
    assert first.messages[-1] == m.user([m.text(DIRECTIVE)])


def test_a_fork_whose_model_calls_tools_leaves_the_parents_state_as_it_was(
    tmp_path: Path,
) -> None:
    agent, _ = parent(tmp_path)
    messages, identity = copy.deepcopy(agent.messages), agent.messages
    finished = copy.deepcopy(dict(agent.tools.finished))
    runner = RecordingTools()

    fork = run_fork(agent, DIRECTIVE, tools=runner)

    assert agent.messages is identity and agent.messages == messages
    assert dict(agent.tools.finished) == finished
    assert [c["name"] for c in runner.calls] == ["edit_file"]  # the fork's runner, not the agent's
    assert not (tmp_path / "NOTES.md").exists()
    fork_ids = {u["id"] for x in fork.messages for u in m.tool_uses(x)}
    parent_ids = {u["id"] for x in agent.messages for u in m.tool_uses(x)}
    assert fork_ids and not fork_ids & parent_ids
    # The fork's own messages: the directive, its call, the result, its last words.
    assert [x["role"] for x in fork.messages] == ["user", "assistant", "user", "assistant"]
    assert m.tool_results(fork.messages[2])[0]["content"] == "noted"


def test_a_fork_with_no_tool_runner_gets_an_error_for_every_call(tmp_path: Path) -> None:
    agent, _ = parent(tmp_path)
    fork = run_fork(agent, DIRECTIVE)
    [result] = m.tool_results(fork.messages[2])
    assert result["is_error"] is True
    assert NoForkTools().run([m.tool_use("t", "x", {})])[0]["is_error"] is True


def test_a_fork_started_while_calls_are_pending_answers_them_with_placeholders(
    tmp_path: Path,
) -> None:
    agent, model = parent(tmp_path)
    agent.messages.append(m.user("Now check b.py."))
    agent.messages.append(m.assistant([m.tool_use("toolu_9001", "read_file", {"path": "b.py"})]))
    run_fork(agent, DIRECTIVE)  # the scripted model refuses an invalid conversation
    first = next(r for r in model.requests if is_fork(r))
    assert m.tool_results(first.messages[-1]) == [m.tool_result("toolu_9001", FORK_PLACEHOLDER)]
    assert m.tool_uses(agent.messages[-1])[0]["id"] == "toolu_9001"  # still pending


@pytest.mark.parametrize("turns", [1, 2, 3])
def test_a_fork_stops_at_its_turn_limit(tmp_path: Path, turns: int) -> None:
    agent, _ = parent(tmp_path, responder=always_calls)
    calls = len(agent.meter.calls)

    fork = run_fork(agent, DIRECTIVE, tools=RecordingTools(), max_turns=turns)

    assert fork.calls == turns and fork.stopped == "max_turns"
    assert len(agent.meter.calls) == calls + turns
    assert len(fork.messages) == 2 * turns  # the last call's tools were not run
    assert m.validate([*agent.messages, *fork.messages][:-1]) == []


def test_a_fork_needs_at_least_one_turn(tmp_path: Path) -> None:
    agent, _ = parent(tmp_path)
    with pytest.raises(ValueError, match="at least one turn"):
        run_fork(agent, DIRECTIVE, max_turns=0)


@pytest.mark.parametrize(
    "error",
    [faults.invalid_request("x"), faults.overloaded(), faults.authentication_error()],
    ids=["400", "529", "401"],
)
def test_an_api_error_in_a_fork_reaches_the_caller_and_the_parent_is_untouched(
    tmp_path: Path, error: anthropic.APIError
) -> None:
    agent, _ = parent(tmp_path, responder=lambda request: error)
    messages = copy.deepcopy(agent.messages)
    with pytest.raises(type(error)):
        run_fork(agent, DIRECTIVE)
    assert agent.messages == messages


def test_an_api_error_on_a_forks_later_turn_reaches_the_caller(tmp_path: Path) -> None:
    answers = iter([reply(tool_calls=[tool_call("edit_file", path="NOTES.md")])])

    def then_fails(request: Request) -> Reply | BaseException:
        return next(answers, faults.server_error())

    agent, _ = parent(tmp_path, responder=then_fails)
    with pytest.raises(anthropic.InternalServerError):
        run_fork(agent, DIRECTIVE, tools=RecordingTools())


def test_a_forks_first_call_reads_the_parents_prefix_from_the_cache(tmp_path: Path) -> None:
    caching = PromptCaching()
    agent, _ = parent(tmp_path, [caching])

    fork = run_fork(agent, DIRECTIVE, tools=RecordingTools(), purpose="memory")

    first = fork.replies[0].usage
    read = first.cache_read_input_tokens or 0
    assert read > 0.9 * prompt_tokens(first), (read, prompt_tokens(first))
    assert prompt_tokens(first) > 4_000  # the parent's read of a.py is in it
    assert caching.requests[-1].purpose == "memory"  # the breakpoints were added to it too
    # A fresh prompt (the same request with nothing cached) would have read nothing.
    assert agent.meter.calls[0].usage.cache_read_input_tokens == 0


def test_sibling_forks_send_the_same_bytes_up_to_their_directives(tmp_path: Path) -> None:
    agent, model = parent(tmp_path, [PromptCaching()])
    agent.messages.append(m.user("And b.py?"))
    agent.messages.append(m.assistant([m.tool_use("toolu_9002", "read_file", {"path": "b.py"})]))

    run_fork(agent, DIRECTIVE)
    one = next(r for r in model.requests if is_fork(r))
    run_fork(agent, SIBLING)
    two = [r for r in model.requests if is_fork(r)][2]

    a = cache_order(one.messages, json.dumps(one.system), one.tools or [])
    b = cache_order(two.messages, json.dumps(two.system), two.tools or [])
    cut = a.rindex(json.dumps(DIRECTIVE)[1:-1])
    assert b[:cut] == a[:cut]
    assert b[cut:].startswith(json.dumps(SIBLING)[1:-1])
    # The second fork read the first one's prefix, placeholders included, from the cache.
    assert two.cache is not None and two.cache.read > one.cache.read  # type: ignore[union-attr]
