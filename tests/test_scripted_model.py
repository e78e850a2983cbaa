"""ScriptedModel: deterministic, and as strict as the real Messages API."""

from __future__ import annotations

import contextlib
import re
from typing import Any

import anthropic
import pytest
from anthropic.types import Message, TextBlock, ToolUseBlock
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import tokens
from harness.messages import assistant, tool_result, tool_use, user, validate
from harness.model import Model, Request, ScriptedModel, ScriptExhausted, faults, reply, tool_call

MODEL = "claude-sonnet-4-5"


def ask(model: ScriptedModel, messages: list[dict[str, Any]], **kwargs: Any) -> Message:
    kwargs.setdefault("max_tokens", 1024)
    return model.create(model=MODEL, messages=messages, **kwargs)


def answer_tools(conversation: list[dict[str, Any]], message: Message) -> None:
    """Append the reply and a result for each of its tool calls (what the loop does)."""
    conversation.append(assistant(message))
    results = [tool_result(b.id, "ok") for b in message.content if isinstance(b, ToolUseBlock)]
    if results:
        conversation.append(user(results))


# --- replies as SDK objects ---------------------------------------------------------------


def test_returns_an_sdk_message_with_the_scripted_text() -> None:
    message = ask(ScriptedModel([reply("Hello!")]), [user("Hi")])
    assert isinstance(message, Message)
    assert message.role == "assistant"
    assert message.model == MODEL
    assert message.content == [TextBlock(type="text", text="Hello!")]


def test_reply_survives_a_round_trip_through_the_sdk_schema() -> None:
    message = ask(ScriptedModel([reply("Hi", tool_calls=[tool_call("ls", path=".")])]), [user("?")])
    assert Message.model_validate(message.model_dump()) == message


def test_scripted_model_satisfies_the_model_protocol() -> None:
    assert isinstance(ScriptedModel(), Model)


def test_tool_calls_become_tool_use_blocks_after_the_text() -> None:
    script = [reply("Reading.", tool_calls=[tool_call("read_file", path="a.py")])]
    content = ask(ScriptedModel(script), [user("read a.py")]).content
    assert [type(b) for b in content] == [TextBlock, ToolUseBlock]
    use = content[1]
    assert isinstance(use, ToolUseBlock)
    assert (use.name, use.input) == ("read_file", {"path": "a.py"})


def test_tool_call_accepts_a_dict_or_keywords() -> None:
    assert tool_call("read_file", {"path": "a.py"}) == tool_call("read_file", path="a.py")


def test_reply_needs_text_or_tool_calls() -> None:
    with pytest.raises(ValueError):
        reply()


def test_message_ids_count_up_from_msg_0001() -> None:
    model = ScriptedModel([reply("one"), reply("two")])
    conversation = [user("1")]
    first = ask(model, conversation)
    conversation += [assistant(first), user("2")]
    second = ask(model, conversation)
    assert (first.id, second.id) == ("msg_0001", "msg_0002")


def test_tool_ids_count_up_across_replies() -> None:
    model = ScriptedModel(
        [
            reply(tool_calls=[tool_call("ls"), tool_call("pwd")]),
            reply(tool_calls=[tool_call("ls")]),
        ]
    )
    conversation = [user("look around")]
    first = ask(model, conversation)
    answer_tools(conversation, first)
    second = ask(model, conversation)
    ids = [b.id for m in (first, second) for b in m.content if isinstance(b, ToolUseBlock)]
    assert ids == ["toolu_0001", "toolu_0002", "toolu_0003"]


def test_same_script_gives_identical_replies_on_every_run() -> None:
    def run() -> list[dict[str, Any]]:
        model = ScriptedModel([reply("a", tool_calls=[tool_call("ls")]), reply("done")])
        conversation: list[dict[str, Any]] = [user("go")]
        replies = []
        for _ in range(2):
            message = ask(model, conversation)
            replies.append(message.model_dump())
            answer_tools(conversation, message)
        return replies

    assert run() == run()


def test_two_models_with_different_id_prefixes_give_different_tool_ids() -> None:
    ids = []
    for prefix in ("parent_", "child_"):
        model = ScriptedModel([reply(tool_calls=[tool_call("ls")])], id_prefix=prefix)
        block = ask(model, [user("ls")]).content[0]
        assert isinstance(block, ToolUseBlock)
        ids.append(block.id)
    assert ids == ["toolu_parent_0001", "toolu_child_0001"]


# --- stop reasons -----------------------------------------------------------------------


def test_stop_reason_is_tool_use_when_the_reply_calls_tools() -> None:
    message = ask(ScriptedModel([reply(tool_calls=[tool_call("ls")])]), [user("ls")])
    assert message.stop_reason == "tool_use"


def test_stop_reason_is_end_turn_for_plain_text() -> None:
    assert ask(ScriptedModel([reply("Done.")]), [user("go")]).stop_reason == "end_turn"


@pytest.mark.parametrize("forced", ["refusal", "pause_turn", "end_turn"])
def test_a_forced_stop_reason_is_honoured(forced: Any) -> None:
    script = [reply("I can't help with that.", stop_reason=forced)]
    message = ask(ScriptedModel(script), [user("go")])
    assert message.stop_reason == forced
    assert message.stop_sequence is None


# --- usage ------------------------------------------------------------------------------


def test_input_tokens_are_the_estimate_of_the_whole_request() -> None:
    messages = [user("Read a.py and tell me what it does.")]
    system = "You are a coding agent."
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    tools = [{"name": "read_file", "description": "Read a file.", "input_schema": schema}]
    message = ask(ScriptedModel([reply("ok")]), messages, system=system, tools=tools)
    expected = tokens.estimate_request(messages, system=system, tools=tools)
    assert message.usage.input_tokens == expected


def test_input_tokens_grow_with_the_conversation() -> None:
    short = ask(ScriptedModel([reply("ok")]), [user("hi")])
    long = ask(ScriptedModel([reply("ok")]), [user("hi " * 400)])
    assert long.usage.input_tokens - short.usage.input_tokens == 300 - 1


def test_output_tokens_count_the_reply_text() -> None:
    # One text block: block overhead + ceil(6 / 4) = 2 tokens of text.
    message = ask(ScriptedModel([reply("Hello!")]), [user("Hi")])
    assert message.usage.output_tokens == tokens.BLOCK_OVERHEAD + 2


def test_output_tokens_count_text_and_tool_calls() -> None:
    call = tool_call("read_file", path="a.py")
    message = ask(ScriptedModel([reply("Reading.", tool_calls=[call])]), [user("go")])
    expected = tokens.estimate_block({"type": "text", "text": "Reading."}) + tokens.estimate_block(
        {"type": "tool_use", "name": "read_file", "input": {"path": "a.py"}}
    )
    assert message.usage.output_tokens == expected


def test_cache_fields_are_present_and_zero() -> None:
    usage = ask(ScriptedModel([reply("ok")]), [user("hi")]).usage
    assert usage.cache_creation_input_tokens == 0
    assert usage.cache_read_input_tokens == 0
    assert usage.cache_creation is not None
    assert usage.cache_creation.ephemeral_5m_input_tokens == 0
    assert usage.cache_creation.ephemeral_1h_input_tokens == 0


def test_count_tokens_equals_the_input_tokens_create_bills() -> None:
    messages = [user("Summarise the repository.")]
    tools = [{"name": "glob", "description": "Find files.", "input_schema": {"type": "object"}}]
    model = ScriptedModel([reply("ok")])
    counted = model.count_tokens(model=MODEL, messages=messages, system="Be brief.", tools=tools)
    billed = ask(model, messages, system="Be brief.", tools=tools).usage.input_tokens
    assert counted == billed


# --- max_tokens and the context window --------------------------------------------------

LONG_TEXT = "The quick brown fox jumps over the lazy dog. " * 200  # 9000 ASCII chars


def test_reply_longer_than_max_tokens_stops_with_max_tokens() -> None:
    message = ask(ScriptedModel([reply(LONG_TEXT)]), [user("write")], max_tokens=20)
    assert message.stop_reason == "max_tokens"


def test_truncated_text_is_a_prefix_of_the_scripted_text() -> None:
    message = ask(ScriptedModel([reply(LONG_TEXT)]), [user("write")], max_tokens=20)
    block = message.content[0]
    assert isinstance(block, TextBlock)
    assert LONG_TEXT.startswith(block.text)
    assert len(block.text) < len(LONG_TEXT)


def test_truncated_ascii_reply_uses_exactly_max_tokens() -> None:
    # ASCII text can be cut at any character, so the cut fills the budget: 3 tokens of block
    # overhead and 17 of text (68 characters).
    message = ask(ScriptedModel([reply(LONG_TEXT)]), [user("write")], max_tokens=20)
    assert message.usage.output_tokens == 20
    assert message.content[0] == TextBlock(type="text", text=LONG_TEXT[:68])


def test_a_tool_call_that_does_not_fit_is_dropped() -> None:
    big = tool_call("write_file", path="a.py", content="x" * 400)
    message = ask(ScriptedModel([reply("ok", tool_calls=[big])]), [user("go")], max_tokens=10)
    assert message.content == [TextBlock(type="text", text="ok")]
    assert message.stop_reason == "max_tokens"


def test_a_truncated_reply_appended_to_the_conversation_stays_valid() -> None:
    calls = [tool_call("ls"), tool_call("write_file", path="a.py", content="x" * 400)]
    conversation = [user("go")]
    message = ask(ScriptedModel([reply("ok", tool_calls=calls)]), conversation, max_tokens=20)
    conversation.append(assistant(message))
    assert [b.name for b in message.content if isinstance(b, ToolUseBlock)] == ["ls"]
    # The kept call still needs its result; the dropped one must not.
    conversation.append(user([tool_result("toolu_0001", "a.py")]))
    assert validate(conversation) == []


def test_the_context_window_binding_gives_model_context_window_exceeded() -> None:
    messages = [user("write a lot")]
    prompt = tokens.estimate_request(messages)
    model = ScriptedModel([reply(LONG_TEXT)], context_window=prompt + 100)
    message = ask(model, messages, max_tokens=1000)
    assert message.stop_reason == "model_context_window_exceeded"
    assert message.usage.output_tokens <= 100


def test_max_tokens_binding_before_the_window_gives_max_tokens() -> None:
    messages = [user("write a lot")]
    prompt = tokens.estimate_request(messages)
    model = ScriptedModel([reply(LONG_TEXT)], context_window=prompt + 100)
    message = ask(model, messages, max_tokens=50)
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == 50


def test_prompt_over_context_window_raises_bad_request_with_real_wording() -> None:
    messages = [user("a" * 800)]  # 200 tokens of text plus framing
    prompt = tokens.estimate_request(messages)
    assert prompt > 200
    model = ScriptedModel([reply("never")], context_window=100)
    with pytest.raises(anthropic.BadRequestError) as raised:
        ask(model, messages)
    assert raised.value.status_code == 400
    assert raised.value.type == "invalid_request_error"
    body: Any = raised.value.body
    assert re.fullmatch(r"prompt is too long: \d+ tokens > \d+ maximum", body["error"]["message"])
    assert body["error"]["message"] == f"prompt is too long: {prompt} tokens > 100 maximum"


def test_prompt_exactly_filling_the_window_is_not_refused() -> None:
    messages = [user("a" * 800)]
    prompt = tokens.estimate_request(messages)
    model = ScriptedModel([reply("x")], context_window=prompt)
    assert ask(model, messages).stop_reason == "model_context_window_exceeded"


def test_prompt_one_token_over_the_window_is_refused() -> None:
    messages = [user("a" * 800)]
    prompt = tokens.estimate_request(messages)
    model = ScriptedModel([reply("x")], context_window=prompt - 1)
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
        ask(model, messages)


def test_max_tokens_over_the_model_output_limit_is_refused() -> None:
    model = ScriptedModel([reply("x")], max_output=64_000)
    with pytest.raises(anthropic.BadRequestError) as raised:
        ask(model, [user("hi")], max_tokens=64_001)
    assert "max_tokens: 64001 > 64000" in str(raised.value)


def test_max_tokens_at_the_model_output_limit_is_accepted() -> None:
    model = ScriptedModel([reply("x")], max_output=64_000)
    assert ask(model, [user("hi")], max_tokens=64_000).stop_reason == "end_turn"


# --- invalid conversations --------------------------------------------------------------


def test_tool_use_without_result_raises_bad_request_in_the_apis_words() -> None:
    conversation = [
        user("list"),
        assistant([tool_use("toolu_abc", "ls", {})]),
        user("never mind"),
    ]
    with pytest.raises(anthropic.BadRequestError) as raised:
        ask(ScriptedModel([reply("x")]), conversation)
    body: Any = raised.value.body
    assert body["error"]["message"].startswith(
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
        "after: toolu_abc."
    )


def test_orphan_tool_result_raises_bad_request_in_the_apis_words() -> None:
    conversation = [user("hi"), assistant("hello"), user([tool_result("toolu_zzz", "?")])]
    with pytest.raises(anthropic.BadRequestError) as raised:
        ask(ScriptedModel([reply("x")]), conversation)
    assert "messages.2.content: unexpected `tool_use_id` found in `tool_result` blocks: " in str(
        raised.value
    )


def test_a_refused_request_does_not_use_up_a_script_step() -> None:
    model = ScriptedModel([reply("first step")])
    with pytest.raises(anthropic.BadRequestError):
        ask(model, [assistant("I start"), user("hi")])
    assert model.remaining == 1
    assert ask(model, [user("hi")]).content[0] == TextBlock(type="text", text="first step")


# --- the script: exceptions, functions, running out -------------------------------------


def test_an_exception_step_is_raised_as_is() -> None:
    error = faults.overloaded()
    model = ScriptedModel([error])
    with pytest.raises(anthropic.OverloadedError) as raised:
        ask(model, [user("hi")])
    assert raised.value is error


def test_the_step_after_an_exception_answers_the_retry() -> None:
    model = ScriptedModel([faults.rate_limited(), reply("fine now")])
    with pytest.raises(anthropic.RateLimitError):
        ask(model, [user("hi")])
    assert ask(model, [user("hi")]).content[0] == TextBlock(type="text", text="fine now")


def test_a_function_step_receives_the_request() -> None:
    seen: list[Request] = []

    def echo(request: Request) -> Any:
        seen.append(request)
        return reply(f"you said: {request.last_message['content']}")

    message = ask(ScriptedModel([echo]), [user("ping")], system="sys", max_tokens=77)
    assert message.content[0] == TextBlock(type="text", text="you said: ping")
    assert seen[0].system == "sys"
    assert seen[0].max_tokens == 77
    assert seen[0].input_tokens == message.usage.input_tokens


def test_a_function_step_can_return_an_exception_to_raise() -> None:
    model = ScriptedModel([lambda request: faults.server_error()])
    with pytest.raises(anthropic.InternalServerError):
        ask(model, [user("hi")])


def test_running_out_of_script_raises_script_exhausted_naming_the_steps() -> None:
    model = ScriptedModel([reply("only answer")])
    conversation = [user("first")]
    conversation.append(assistant(ask(model, conversation)))
    conversation.append(user("second question"))
    with pytest.raises(ScriptExhausted) as raised:
        ask(model, conversation)
    assert "the script has 1 step(s)" in str(raised.value)
    assert "request #2" in str(raised.value)
    assert "second question" in str(raised.value)


def test_extend_adds_steps_at_the_end() -> None:
    model = ScriptedModel([reply("a")])
    model.extend([reply("b")])
    assert model.remaining == 2


# --- the requests it keeps --------------------------------------------------------------


def test_requests_keep_every_request_including_failed_ones() -> None:
    model = ScriptedModel([faults.overloaded(), reply("ok")], context_window=50)
    for messages in ([user("hi")], [user("x" * 1000)], [user("hi")], [user("again")]):
        with contextlib.suppress(anthropic.APIStatusError, ScriptExhausted):
            ask(model, messages)
    assert [r.messages for r in model.requests] == [
        [user("hi")],
        [user("x" * 1000)],
        [user("hi")],
        [user("again")],
    ]


def test_requests_are_deep_copies_of_what_was_sent() -> None:
    messages = [user([{"type": "text", "text": "original"}])]
    system = [{"type": "text", "text": "system"}]
    model = ScriptedModel([reply("ok")])
    ask(model, messages, system=system, metadata={"user_id": "u1"})
    messages[0]["content"][0]["text"] = "edited"
    messages.append(user("more"))
    system[0]["text"] = "edited"
    request = model.requests[0]
    assert request.messages == [user([{"type": "text", "text": "original"}])]
    assert request.system == [{"type": "text", "text": "system"}]
    assert request.extra == {"metadata": {"user_id": "u1"}}


# --- stop sequences ---------------------------------------------------------------------


def test_a_stop_sequence_cuts_the_text_and_is_reported() -> None:
    message = ask(ScriptedModel([reply("Hello STOP world")]), [user("hi")], stop_sequences=["STOP"])
    assert message.content == [TextBlock(type="text", text="Hello ")]
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "STOP")


def test_the_earliest_stop_sequence_wins() -> None:
    message = ask(ScriptedModel([reply("a B c A d")]), [user("hi")], stop_sequences=["A", "B"])
    assert message.content == [TextBlock(type="text", text="a ")]
    assert message.stop_sequence == "B"


def test_a_stop_sequence_ends_the_reply_before_its_tool_calls() -> None:
    script = [reply("Let me check. END", tool_calls=[tool_call("ls")])]
    message = ask(ScriptedModel(script), [user("hi")], stop_sequences=["END"])
    assert message.content == [TextBlock(type="text", text="Let me check. ")]
    assert message.stop_reason == "stop_sequence"


def test_a_stop_sequence_before_the_max_tokens_cut_wins() -> None:
    # Generation stops at the sequence long before 20 tokens have been written.
    message = ask(
        ScriptedModel([reply("Hello STOP " + LONG_TEXT)]),
        [user("hi")],
        max_tokens=20,
        stop_sequences=["STOP"],
    )
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "STOP")
    assert message.content == [TextBlock(type="text", text="Hello ")]


def test_a_stop_sequence_beyond_the_max_tokens_cut_is_never_reached() -> None:
    message = ask(
        ScriptedModel([reply(LONG_TEXT + "STOP")]),
        [user("hi")],
        max_tokens=20,
        stop_sequences=["STOP"],
    )
    assert (message.stop_reason, message.stop_sequence) == ("max_tokens", None)


def test_a_stop_sequence_that_does_not_occur_changes_nothing() -> None:
    message = ask(ScriptedModel([reply("Hello")]), [user("hi")], stop_sequences=["STOP"])
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)


# --- properties -------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab .\n日é🙂"), min_size=1, max_size=300),
    max_tokens=st.integers(min_value=1, max_value=120),
)
def test_a_reply_never_exceeds_max_tokens_and_is_a_prefix_of_the_script(
    text: str, max_tokens: int
) -> None:
    message = ask(ScriptedModel([reply(text)]), [user("go")], max_tokens=max_tokens)
    kept = "".join(b.text for b in message.content if isinstance(b, TextBlock))
    assert message.usage.output_tokens <= max_tokens
    assert text.startswith(kept)
    assert (message.stop_reason == "max_tokens") == (kept != text)


# --- faults apart from the script, regeneration, streaming (chapter 06) --------------------


def test_scheduled_faults_are_raised_without_using_script_steps() -> None:
    model = ScriptedModel([reply("first"), reply("second")], faults=[faults.overloaded()] * 2)
    for _ in range(2):
        with pytest.raises(anthropic.OverloadedError):
            ask(model, [user("hi")])
    assert model.remaining == 2
    assert ask(model, [user("hi")]).content[0].text == "first"  # type: ignore[union-attr]
    assert len(model.requests) == 3


def test_schedule_queues_faults_and_none_lets_a_call_through() -> None:
    model = ScriptedModel([reply("one"), reply("two")])
    model.schedule(faults.timeout(), None, faults.rate_limited(7))
    with pytest.raises(anthropic.APITimeoutError):
        ask(model, [user("hi")])
    assert ask(model, [user("hi")]).content[0].text == "one"  # type: ignore[union-attr]
    with pytest.raises(anthropic.RateLimitError):
        ask(model, [user("hi")])
    assert ask(model, [user("hi")]).content[0].text == "two"  # type: ignore[union-attr]
    assert model.remaining == 0


def test_a_function_schedule_decides_per_request() -> None:
    def only_long_ones(request: Request) -> BaseException | None:
        return faults.overloaded() if request.max_tokens > 1_000 else None

    model = ScriptedModel([reply("short")], faults=only_long_ones)
    with pytest.raises(anthropic.OverloadedError):
        ask(model, [user("hi")], max_tokens=8_000)
    assert ask(model, [user("hi")], max_tokens=500).content[0].text == "short"  # type: ignore[union-attr]
    with pytest.raises(TypeError):
        model.schedule(faults.timeout())  # a function schedule cannot also queue faults


def test_a_request_sent_again_after_a_cut_gets_the_same_step_regenerated() -> None:
    text = "word " * 400
    model = ScriptedModel([reply(text), reply("next")])
    cut = ask(model, [user("hi")], max_tokens=100)
    assert cut.stop_reason == "max_tokens"
    whole = model.create(model="claude-haiku-4-5", max_tokens=4_000, messages=[user("hi")])
    assert whole.stop_reason == "end_turn"
    assert whole.content[0].text == text  # type: ignore[union-attr]
    assert model.remaining == 1


def test_a_different_request_after_a_cut_gets_the_next_step() -> None:
    model = ScriptedModel([reply("word " * 400), reply("next")])
    ask(model, [user("hi")], max_tokens=100)
    other = ask(model, [user("something else")], max_tokens=4_000)
    assert other.content[0].text == "next"  # type: ignore[union-attr]


def test_stream_returns_the_same_message_as_create() -> None:
    script = [reply("Hello there, from a stream.", tool_calls=[tool_call("echo", text="x")])]
    created = ask(ScriptedModel(script), [user("hi")])
    streamed_model = ScriptedModel(script)
    with streamed_model.stream(model=MODEL, max_tokens=1024, messages=[user("hi")]) as stream:
        streamed = stream.get_final_message()
        pieces = list(stream.text_stream)
    assert streamed == created
    assert "".join(pieces) == "Hello there, from a stream."
    assert streamed_model.requests[0].messages == [user("hi")]


def test_stream_raises_the_scheduled_fault_on_with() -> None:
    model = ScriptedModel([reply("late")], faults=[faults.overloaded()])
    stream = model.stream(model=MODEL, max_tokens=1024, messages=[user("hi")])
    assert model.requests == []  # nothing is sent until the stream opens
    with pytest.raises(anthropic.OverloadedError), stream:
        pass
    with pytest.raises(RuntimeError):
        stream.get_final_message()
