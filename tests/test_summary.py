"""Tier 3, full compaction: the summary request, the new conversation, the retry, failures."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest

from harness import messages as m
from harness import tokens
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.pinned import PinnedFacts
from harness.compaction.reinject import (
    REINJECT_MAX_FILES,
    REINJECT_TOKEN_BUDGET,
    REINJECT_TOKENS_PER_FILE,
    recently_read_files,
)
from harness.compaction.summary import (
    COMPACT_INSTRUCTION,
    COMPACT_MARKER,
    CONTINUE,
    MAX_PTL_RETRIES,
    PTL_RETRY_MARKER,
    SUMMARY_PREAMBLE,
    CompactionError,
    CompactionHooks,
    CompactionReport,
    compact,
    drop_oldest_rounds,
    extract_summary,
    is_compaction_request,
    summarise,
    summary_messages,
)
from harness.events import HookReported
from harness.loop import AgentConfig, BaseAgent, ModelRequest, Plugin
from harness.model import Reply, Request, ScriptedModel, Step, faults, reply, tool_call
from harness.model.scripted_summary import scripted_summary
from harness.prompt import (
    PromptCaching,
    Section,
    SystemPrompt,
    default_sections,
    environment_section,
)
from harness.tools import builtin_tools

FILE_BODY = "".join(f"amount_{i} = round(price_{i} * rate, 2)\n" for i in range(60))

# --- the pieces -------------------------------------------------------------------------------


def test_the_instruction_joins_a_trailing_user_message() -> None:
    use = m.tool_use("toolu_1", "read_file", {"path": "a.py"})
    conversation = [
        m.user("Read a.py."),
        m.assistant([use]),
        m.user([m.tool_result("toolu_1", "x")]),
    ]
    before = copy.deepcopy(conversation)

    out = summary_messages(conversation, "Summarise.")

    assert conversation == before  # the conversation itself is untouched
    assert len(out) == 3
    assert out[-1]["content"] == [m.tool_result("toolu_1", "x"), m.text("Summarise.")]
    assert m.validate(out) == []


def test_the_instruction_joins_a_trailing_string_prompt_as_a_block() -> None:
    out = summary_messages([m.user("Hello")], "Summarise.")
    assert out == [m.user([m.text("Hello"), m.text("Summarise.")])]


def test_the_instruction_is_a_new_user_message_after_a_reply() -> None:
    conversation = [m.user("Hi"), m.assistant("Hello!")]
    out = summary_messages(conversation, "Summarise.")
    assert out == [*conversation, m.user("Summarise.")]
    assert m.validate(out) == []


@pytest.mark.parametrize(
    ("text", "summary"),
    [
        ("<analysis>I think.</analysis>\n<summary>\nThe summary.\n</summary>", "The summary."),
        ("<analysis>I think.</analysis><summary>Cut off before the end", "Cut off before the end"),
        ("No tags at all.", "No tags at all."),
        ("<analysis>Thinking only, never finished", ""),
        ("<analysis>a</analysis>\nThen plain text.", "Then plain text."),
        ("<summary>One</summary> trailing words", "One"),
    ],
)
def test_extract_summary_keeps_the_summary_and_drops_the_analysis(text: str, summary: str) -> None:
    assert extract_summary(text) == summary


def request_with(messages: list[m.MessageDict]) -> ModelRequest:
    return ModelRequest(model="claude-sonnet-4-6", max_tokens=100, messages=messages)


def test_is_compaction_request_looks_at_the_last_user_message() -> None:
    plain = [m.user("Hi"), m.assistant("Hello!")]
    assert is_compaction_request(request_with(summary_messages(plain, COMPACT_INSTRUCTION)))
    assert not is_compaction_request(request_with([*plain, m.user("Summarise please.")]))
    assert not is_compaction_request(request_with(plain))
    assert not is_compaction_request(request_with([]))
    # The instruction in an earlier message does not count: it was answered already.
    earlier = [m.user(COMPACT_INSTRUCTION), m.assistant("<summary>s</summary>"), m.user("Go.")]
    assert not is_compaction_request(request_with(earlier))
    assert COMPACT_INSTRUCTION.startswith(COMPACT_MARKER)


def test_recently_read_files_are_most_recent_first_each_once() -> None:
    reads = [
        m.assistant([m.tool_use(f"t{n}", "read_file", {"path": p})])
        for n, p in enumerate(["a.py", "b.py", "a.py", "c.py"])
    ]
    other = m.assistant([m.tool_use("t9", "grep", {"pattern": "x", "path": "d.py"})])
    assert recently_read_files([m.user("Go."), *reads, other]) == ["c.py", "a.py", "b.py"]


# --- a session to compact ---------------------------------------------------------------------


def big_system_prompt(clock: FakeClock) -> SystemPrompt:
    manual = Section("manual", "Project manual. " + "Follow the house style. " * 250)
    tools = [t.name for t in builtin_tools()]
    return SystemPrompt(
        (*default_sections(tools), manual, environment_section(clock, workspace_name="demo"))
    )


def make_agent(
    tmp_path: Path,
    script: list[Any],
    *,
    plugins: list[Plugin] | None = None,
    system: Any = None,
    context_window: int = 200_000,
    summariser: Any = scripted_summary,
) -> tuple[Agent, ScriptedModel]:
    clock = FakeClock()
    model = ScriptedModel(script, clock=clock, context_window=context_window)
    model.answer_when(is_compaction_request, summariser)
    agent = Agent(
        model,
        tools=builtin_tools(),
        system=system,
        workspace=tmp_path,
        clock=clock,
        plugins=plugins or [],
        config=AgentConfig(max_turns=40),
        approver=lambda request: True,
    )
    return agent, model


def reads(*paths: str) -> list[Any]:
    return [reply(f"Reading {p}.", tool_calls=[tool_call("read_file", path=p)]) for p in paths]


def project(tmp_path: Path, names: list[str]) -> None:
    for name in names:
        (tmp_path / name).write_text(f"# {name}\n{FILE_BODY}")


def read_session(tmp_path: Path, names: list[str], **kwargs: Any) -> tuple[Agent, ScriptedModel]:
    """An agent that has read ``names`` one per turn and said it is done."""
    project(tmp_path, names)
    agent, model = make_agent(tmp_path, [*reads(*names), reply("Read them all.")], **kwargs)
    list(agent.run("Fix the rounding in billing."))
    assert m.validate(agent.messages) == []
    return agent, model


def strip_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def new_text(agent: Agent) -> str:
    [message] = agent.messages
    return m.text_of(message)


# --- the summary request ------------------------------------------------------------------------


def test_the_summary_request_is_the_conversation_plus_the_instruction(tmp_path: Path) -> None:
    agent, model = read_session(tmp_path, ["a.py", "b.py"])
    old = copy.deepcopy(agent.messages)
    previous = model.requests[-1]

    compact(agent)

    request = model.requests[-1]
    assert is_compaction_request(request)
    sent = strip_cache_control(request.messages)
    expected = summary_messages(old, COMPACT_INSTRUCTION)
    assert [(x["role"], m.blocks(x)) for x in sent] == [(x["role"], m.blocks(x)) for x in expected]
    assert m.text_of(sent[-1]).endswith(COMPACT_INSTRUCTION)
    # Same system prompt and tools as the agent's own requests: the prefix is shared.
    assert strip_cache_control(request.system) == strip_cache_control(previous.system)
    assert strip_cache_control(request.tools) == strip_cache_control(previous.tools)
    assert request.model == previous.model


def test_the_summary_request_reads_the_previous_turn_from_cache(tmp_path: Path) -> None:
    # The complaint "compaction is cache-blind": a fresh summarisation prompt would write the
    # whole conversation to cache again. Asked in the same conversation, the request reads
    # everything the previous request cached.
    clock = FakeClock()
    agent, model = read_session(
        tmp_path,
        ["a.py", "b.py", "c.py"],
        system=big_system_prompt(clock).render(),
        plugins=[PromptCaching()],
    )
    previous = model.requests[-1]

    report = compact(agent)

    assert report.summary_request_cache_read > 0
    assert report.summary_request_cache_read == previous.input_tokens  # all of it
    assert agent.meter.calls[-1].usage.cache_read_input_tokens == previous.input_tokens


def test_the_summary_request_caches_only_as_the_agents_own_requests_do(tmp_path: Path) -> None:
    # No PromptCaching plugin: the agent's requests carry only the system prompt's own
    # breakpoint, and so does its summary request (it goes through the same agent.call).
    # Moving breakpoints there would pay a 1.25x cache write for a prefix never read again.
    clock = FakeClock()
    agent, model = read_session(
        tmp_path, ["a.py", "b.py", "c.py"], system=big_system_prompt(clock).render()
    )
    previous = model.requests[-1]

    report = compact(agent)

    assert 0 < report.summary_request_cache_read < previous.input_tokens


def test_the_new_conversation_is_one_user_message_with_the_summary(tmp_path: Path) -> None:
    agent, _ = read_session(tmp_path, ["a.py"])
    report = compact(agent)

    [message] = agent.messages
    assert message["role"] == "user"
    text = new_text(agent)
    assert text.startswith(SUMMARY_PREAMBLE + report.summary)
    assert "<analysis>" not in text
    assert "Fix the rounding in billing." in report.summary
    assert m.validate(agent.messages) == []


def test_the_report_says_what_happened(tmp_path: Path) -> None:
    agent, _ = read_session(tmp_path, ["a.py", "b.py"])
    request = agent.request()
    before = tokens.estimate_request(request.messages, system=request.system, tools=request.tools)
    count = len(agent.messages)

    report = compact(agent)

    after = agent.request()
    assert report.trigger == "manual"
    assert report.tokens_before == before
    assert report.tokens_after == tokens.estimate_request(
        after.messages, system=after.system, tools=after.tools
    )
    assert report.messages_summarised == count == 6
    assert (report.attempts, report.rounds_dropped) == (1, 0)
    assert report.reinjected_files == ("b.py", "a.py")
    assert report.pinned_reinjected == ()


def test_the_compaction_is_billed(tmp_path: Path) -> None:
    agent, model = read_session(tmp_path, ["a.py"])
    calls = len(agent.meter.calls)
    compact(agent)
    assert len(agent.meter.calls) == calls + 1
    last = agent.meter.calls[-1]
    assert last.usage.output_tokens > 0
    assert last.prompt_tokens == model.requests[-1].input_tokens


def test_summarise_leaves_the_conversation_and_returns_the_new_one(tmp_path: Path) -> None:
    agent, _ = read_session(tmp_path, ["a.py"])
    before = copy.deepcopy(agent.messages)

    report = summarise(agent)

    assert agent.messages == before
    [new] = report.messages
    assert m.text_of(new).startswith(SUMMARY_PREAMBLE + report.summary)
    rewrite = report.rewrite("manual")
    assert rewrite.messages == report.messages
    assert str(rewrite.event).startswith("⇊ summary (manual)")


def test_the_summary_request_goes_through_the_agents_call_model_layers(tmp_path: Path) -> None:
    # Whatever wraps the agent's calls wraps the summary request too: here a layer that
    # retries once on 529, as error recovery does, rescues a compaction that would fail.
    seen: list[str] = []

    class RetryOnce(Plugin):
        def call_model(
            self, agent: BaseAgent, request: ModelRequest, call: Callable[[ModelRequest], Any]
        ) -> Any:
            seen.append(request.purpose)
            try:
                return call(request)
            except anthropic.InternalServerError:
                return call(request)

    failing_once = iter([faults.overloaded()])

    def summariser(request: Request) -> Step:
        return next(failing_once, None) or scripted_summary(request)

    agent, _ = read_session(tmp_path, ["a.py"], plugins=[RetryOnce()], summariser=summariser)
    calls = len(agent.meter.calls)

    report = compact(agent)

    assert seen[-1:] == ["compaction"] and set(seen[:-1]) == {"turn"}
    assert report.summary
    assert len(agent.meter.calls) == calls + 1  # the failed attempt had no reply to bill


def test_the_continue_prompt_follows_an_automatic_compaction_only(tmp_path: Path) -> None:
    (tmp_path / "auto").mkdir()
    (tmp_path / "manual").mkdir()
    agent, _ = read_session(tmp_path / "auto", ["a.py"])
    compact(agent, trigger="auto")
    assert agent.messages[0]["content"][-1] == m.text(CONTINUE)

    other, _ = read_session(tmp_path / "manual", ["a.py"])
    compact(other, trigger="manual")
    assert CONTINUE not in new_text(other)


def test_the_compacted_conversation_takes_a_new_prompt(tmp_path: Path) -> None:
    agent, model = read_session(tmp_path, ["a.py"])
    compact(agent)
    model.extend([reply("Carrying on.")])
    list(agent.run("Now the tax module."))
    assert m.validate(agent.messages) == []
    assert len(agent.messages) == 2  # the prompt joined the summary message
    assert m.text_of(agent.messages[0]).endswith("Now the tax module.")


# --- files read again -------------------------------------------------------------------------


def test_the_most_recently_read_files_are_read_again_within_budget(tmp_path: Path) -> None:
    names = [f"m{n}.py" for n in range(1, 7)]
    huge = "".join(f"line_{i} = {'x' * 70}\n" for i in range(1_500))  # ~30K tokens
    (tmp_path / "huge.py").write_text(huge)
    project(tmp_path, [*names, "m7.py"])
    script = [*reads(*names, "huge.py", "m7.py"), reply("Read them all.")]
    agent, _ = make_agent(tmp_path, script)
    list(agent.run("Read everything."))
    (tmp_path / "m7.py").write_text("# m7.py as it is now\n")  # changed since it was read

    report = compact(agent)

    assert REINJECT_MAX_FILES == 5
    assert report.reinjected_files == ("m7.py", "huge.py", "m6.py", "m5.py", "m4.py")
    blocks = agent.messages[0]["content"]
    injected = [b["text"] for b in blocks if b["text"].startswith("Contents of ")]
    assert [t.split(" ", 3)[2] for t in injected] == list(report.reinjected_files)
    assert "m7.py as it is now" in injected[0]  # read from disk now, not from the old result
    for text in injected:
        assert tokens.estimate_text(text) <= REINJECT_TOKENS_PER_FILE + 50
    assert "cut to fit the re-injection budget" in injected[1]
    assert sum(tokens.estimate_text(t) for t in injected) <= REINJECT_TOKEN_BUDGET
    assert not any(f"m{n}.py (read again" in new_text(agent) for n in (1, 2, 3))


def test_a_file_deleted_since_it_was_read_is_not_put_back(tmp_path: Path) -> None:
    agent, _ = read_session(tmp_path, ["a.py", "b.py"])
    (tmp_path / "b.py").unlink()
    report = compact(agent)
    assert report.reinjected_files == ("a.py",)


# --- pinned facts ----------------------------------------------------------------------------


def test_a_pinned_fact_the_summary_lost_is_put_back_and_reported(tmp_path: Path) -> None:
    agent, _ = read_session(tmp_path, ["a.py"])
    pinned = PinnedFacts()
    pinned.add("Always write colour, not color.", "CLAUDE.md")
    pinned.add("  fix the ROUNDING in   billing. ", "task")  # in the summary: the user's request

    report = compact(agent, pinned=pinned)

    assert report.pinned_reinjected == ("Always write colour, not color.",)
    text = new_text(agent)
    assert "Pinned facts (kept across every compaction):" in text
    assert "- Always write colour, not color. (from CLAUDE.md)" in text
    assert "(from task)" not in text
    assert "Always write colour" not in report.summary
    assert pinned.missing_from(agent.messages) == []  # every fact survives


def test_no_pinned_section_when_nothing_was_lost(tmp_path: Path) -> None:
    agent, _ = read_session(tmp_path, ["a.py"])
    pinned = PinnedFacts()
    pinned.add("Fix the rounding in billing.")
    report = compact(agent, pinned=pinned)
    assert report.pinned_reinjected == ()
    assert "Pinned facts" not in new_text(agent)


# --- prompt too long: drop the oldest rounds and retry --------------------------------------


def long_conversation(rounds: int, words: int = 1_600) -> list[m.MessageDict]:
    """A prompt and ``rounds`` reads of ~``words / 0.8`` tokens each, then a final reply."""
    messages = [m.user("Refactor the billing module.")]
    for n in range(rounds):
        use = m.tool_use(f"toolu_{n:02d}", "grep", {"pattern": f"def step_{n}"})
        result = m.tool_result(use["id"], "word " * words)
        messages += [m.assistant([m.text(f"Searching step {n}."), use]), m.user([result])]
    messages.append(m.assistant("Searched everything."))
    return messages


def test_a_summary_request_too_long_drops_the_oldest_rounds_and_retries(tmp_path: Path) -> None:
    conversation = long_conversation(6)
    agent, model = make_agent(tmp_path, [])
    agent.messages = list(conversation)
    request = agent.request()
    total = tokens.estimate_request(conversation, system=request.system, tools=request.tools)
    model.context_window = total - 2_000  # the conversation fits, the summary request not

    # A small window wants a small summary budget: each retry frees what the prompt is over
    # by plus room for the summary itself.
    report = compact(agent, summary_max_tokens=500)

    assert report.attempts == 2
    assert report.rounds_dropped >= 1
    first, retry = model.requests
    assert first.input_tokens > model.context_window >= retry.input_tokens
    assert retry.messages[0] == m.user(PTL_RETRY_MARKER)  # the rest starts with the model
    assert retry.messages[1]["role"] == "assistant"
    kept = strip_cache_control(retry.messages[1:-1])
    assert kept == conversation[len(conversation) - len(kept) :]  # the newest rounds
    assert m.validate(agent.messages) == []


def test_the_retry_gives_up_after_three_and_leaves_the_conversation_as_it_was(
    tmp_path: Path,
) -> None:
    # A model that always finds the summary request a little too long: every retry drops
    # the oldest round left, and after three retries compaction gives up.
    conversation = long_conversation(8, words=200)
    agent, model = make_agent(
        tmp_path,
        [],
        summariser=lambda r: faults.prompt_too_long(r.input_tokens + 1, r.input_tokens),
    )
    agent.messages = list(conversation)

    with pytest.raises(CompactionError, match="still too long after 3 retries"):
        compact(agent, summary_max_tokens=1)

    assert MAX_PTL_RETRIES == 3
    assert len(model.requests) == 1 + MAX_PTL_RETRIES
    sizes = [len(r.messages) for r in model.requests]
    assert sizes == [19, 19, 17, 15]  # the prompt went first (for the marker), then rounds
    for request in model.requests[1:]:
        assert request.messages[0] == m.user(PTL_RETRY_MARKER)
        assert m.validate(request.messages) == []
    assert agent.messages == conversation
    assert agent.meter.calls == []  # a refused request is not billed


def test_a_retry_frees_room_for_the_summary_as_well_as_the_excess(tmp_path: Path) -> None:
    conversation = long_conversation(8, words=200)
    agent, model = make_agent(tmp_path, [])
    agent.messages = list(conversation)
    request = agent.request()
    total = tokens.estimate_request(conversation, system=request.system, tools=request.tools)
    model.context_window = total + 100  # the summary request is over by a little

    compact(agent, summary_max_tokens=2_000)

    _, retry = model.requests
    assert model.context_window - retry.input_tokens >= 2_000  # room left for the reply


def test_a_cut_off_summary_is_refused_and_the_conversation_kept(tmp_path: Path) -> None:
    conversation = long_conversation(3)
    agent, _ = make_agent(
        tmp_path, [], summariser=lambda r: Reply(text="<analysis>" + "x " * 5_000)
    )
    agent.messages = list(conversation)
    with pytest.raises(CompactionError, match="cut off"):
        compact(agent, summary_max_tokens=200)
    assert agent.messages == conversation


def test_a_single_round_too_long_for_the_window_fails_at_once(tmp_path: Path) -> None:
    conversation = long_conversation(1, words=8_000)[:-1]  # ends on the huge result
    agent, model = make_agent(tmp_path, [], context_window=5_000)
    agent.messages = list(conversation)
    with pytest.raises(CompactionError, match="only the last round left"):
        compact(agent)
    assert len(model.requests) == 2  # dropping the prompt; then nothing left to drop
    assert agent.messages == conversation


def test_the_marker_of_an_earlier_retry_is_not_counted_as_a_round() -> None:
    conversation = long_conversation(4, words=100)
    once, first = drop_oldest_rounds(conversation, 1)
    twice, second = drop_oldest_rounds(once, 1)
    assert (first, second) == (1, 1)
    assert once[0] == twice[0] == m.user(PTL_RETRY_MARKER)
    assert twice[1:] == conversation[3:]  # prompt and round 1 gone, marker once


# --- failures leave the conversation alone -----------------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [
        faults.invalid_request("messages: something else is wrong"),
        faults.overloaded(),
        faults.rate_limited(),
        faults.server_error(),
        faults.connection_error(),
    ],
    ids=["bad-request", "overloaded", "rate-limited", "server-error", "connection"],
)
def test_an_api_error_is_a_compaction_error_and_changes_nothing(
    tmp_path: Path, failure: BaseException
) -> None:
    agent, model = read_session(tmp_path, ["a.py"], summariser=lambda r: failure)
    before = copy.deepcopy(agent.messages)
    calls = len(model.requests)

    with pytest.raises(CompactionError) as raised:
        compact(agent)

    assert raised.value.__cause__ is failure
    assert agent.messages == before
    assert len(model.requests) == calls + 1  # no retry: only "too long" is retried


@pytest.mark.parametrize("text", ["<analysis>All analysis, no summary.</analysis>", "   "])
def test_an_empty_summary_is_a_compaction_error(tmp_path: Path, text: str) -> None:
    agent, _ = read_session(tmp_path, ["a.py"], summariser=lambda r: Reply(text=text))
    before = copy.deepcopy(agent.messages)
    with pytest.raises(CompactionError, match="no summary"):
        compact(agent)
    assert agent.messages == before


# --- hooks ----------------------------------------------------------------------------------


def test_a_pre_compact_hook_adds_to_the_instruction(tmp_path: Path) -> None:
    seen: list[str] = []

    def focus(trigger: str) -> str:
        seen.append(trigger)
        return "Keep the list of failing tests verbatim."

    agent, model = read_session(tmp_path, ["a.py"])

    compact(
        agent,
        trigger="auto",
        instructions="Mention the tax rules.",
        hooks=CompactionHooks(pre_compact=[focus]),
    )

    last = m.text_of(model.requests[-1].messages[-1])
    assert seen == ["auto"]
    assert COMPACT_INSTRUCTION in last
    assert "Mention the tax rules." in last
    assert last.rstrip().endswith("Keep the list of failing tests verbatim.")


def test_a_post_compact_hook_gets_the_report(tmp_path: Path) -> None:
    reports: list[CompactionReport] = []
    agent, _ = read_session(tmp_path, ["a.py"])

    report = compact(agent, hooks=CompactionHooks(post_compact=[reports.append]))

    assert reports == [report]


def test_a_failing_compaction_hook_is_reported_and_compaction_goes_on(tmp_path: Path) -> None:
    def broken_pre(trigger: str) -> str:
        raise RuntimeError("pre hook broke")

    def broken_post(report: object) -> None:
        raise ValueError("post hook broke")

    hooks = CompactionHooks(pre_compact=[broken_pre], post_compact=[broken_post])
    agent, model = read_session(tmp_path, ["a.py"])

    report = compact(agent, hooks=hooks)

    assert len(agent.messages) == 1 and report.summary
    # Compaction outside a run leaves its events for the next run, which yields them first.
    model.extend([reply("Going on.")])
    events = list(agent.run("Continue."))
    reported = [e for e in events if isinstance(e, HookReported)]
    assert [(e.hook, e.outcome) for e in reported] == [
        ("PreCompact", "failed"),
        ("PostCompact", "failed"),
    ]
    assert events[:2] == reported
    assert "RuntimeError: pre hook broke" in reported[0].detail
    assert "ValueError: post hook broke" in reported[1].detail


def test_the_scripted_summary_is_built_from_the_request() -> None:
    conversation = [
        m.user("Fix the rounding in billing."),
        m.assistant([m.tool_use("t1", "read_file", {"path": "billing.py"})]),
        m.user([m.tool_result("t1", "code")]),
        m.assistant("Fixed it."),
    ]
    request = Request(
        model="claude-sonnet-4-6",
        max_tokens=100,
        messages=summary_messages(conversation, COMPACT_INSTRUCTION),
        system=None,
        tools=None,
        extra={},
        input_tokens=0,
    )
    text = scripted_summary(request).text
    assert text is not None
    summary = extract_summary(text)
    assert "1. Primary request and intent: Fix the rounding in billing." in summary
    assert "billing.py" in summary
    assert "7. Current work: Fixed it." in summary
    assert json.dumps(summary)  # plain text


def test_an_agent_that_never_caches_sends_its_summary_request_without_breakpoints(
    tmp_path: Path,
) -> None:
    # A breakpoint on the summary request of an agent that never caches would only pay the
    # 1.25x cache write; with PromptCaching the same request reads the cached prefix.
    def marks(request: Request) -> int:
        blocks = [*(request.tools or []), *(request.system or [])]
        blocks += [
            b
            for msg in request.messages
            if isinstance(msg["content"], list)
            for b in msg["content"]
        ]
        return sum(1 for b in blocks if isinstance(b, dict) and b.get("cache_control"))

    agent, model = read_session(tmp_path, ["a.py"])
    compact(agent)
    assert marks(model.requests[-1]) == 0

    cached_agent, cached_model = read_session(tmp_path, ["a.py"], plugins=[PromptCaching()])
    compact(cached_agent)
    assert marks(cached_model.requests[-1]) > 0
