"""The tool runner: every call answered, in order, with errors the model can act on."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.events import Event, PermissionDecided, ToolFinished, TurnEnded
from harness.model import ScriptedModel, reply, tool_call
from harness.tools import Tool, ToolContext, ToolError, ToolRegistry, Workspace, tool
from harness.tools.dispatch import ToolRunner
from harness.tools.permissions import ApprovalRequest, Permissions
from harness.tools.storage import ResultStorage
from tests.small_tools import EchoInput, count, echo

# --- small tools ---------------------------------------------------------------------------


class TagInput(BaseModel):
    tag: str


def runner(
    tmp_path: Path, tools: Iterable[Tool[Any]], **kwargs: Any
) -> tuple[ToolRunner, Workspace]:
    space = Workspace(tmp_path)
    kwargs.setdefault("permissions", Permissions(mode="bypass", workspace=space))
    context = ToolContext(workspace=space, clock=FakeClock())
    return ToolRunner(registry=ToolRegistry(tools), context=context, **kwargs), space


def drive(
    run: Generator[Event, None, list[m.Block]],
) -> tuple[list[Event], list[m.Block]]:
    """Iterate a ``ToolRunner.run`` to the end: its events and the results it returns."""
    events: list[Event] = []
    while True:
        try:
            events.append(next(run))
        except StopIteration as stop:
            return events, stop.value


def use(tool_use_id: str, name: str, **input: Any) -> m.Block:
    return m.tool_use(tool_use_id, name, input)


def only_result(tmp_path: Path, tools: Iterable[Tool[Any]], call: m.Block) -> m.Block:
    _, results = drive(runner(tmp_path, tools)[0].run([call]))
    (result,) = results
    return result


def agent(script: list[Any], tmp_path: Path, tools: Iterable[Tool[Any]]) -> Agent:
    return Agent(
        ScriptedModel(script),
        tools=tools,
        workspace=tmp_path,
        clock=FakeClock(),
        permissions=Permissions(mode="bypass"),
    )


# --- errors the model can act on ------------------------------------------------------------


def test_an_unknown_tool_gets_an_error_naming_the_available_tools(tmp_path: Path) -> None:
    result = only_result(tmp_path, [echo, count], use("t1", "ehco", text="hi"))

    assert result["is_error"] is True
    assert result["content"] == "Unknown tool 'ehco'. Available tools: echo, count."


def test_the_loop_goes_on_after_an_unknown_tool(tmp_path: Path) -> None:
    script = [reply(tool_calls=[tool_call("ehco", text="hi")]), reply("Oops, wrong name.")]
    a = agent(script, tmp_path, [echo])

    events = list(a.run("go"))

    assert events[-1] == TurnEnded(2, "end_turn")
    assert "Unknown tool" in m.tool_results(a.messages[2])[0]["content"]


def test_a_missing_field_is_named_in_the_error(tmp_path: Path) -> None:
    result = only_result(tmp_path, [echo], use("t1", "echo", txt="hi"))

    assert result["is_error"] is True
    assert result["content"].startswith("Invalid input for tool 'echo':")
    assert "- text: Field required" in result["content"]


def test_a_wrong_type_is_named_with_the_value_sent(tmp_path: Path) -> None:
    result = only_result(tmp_path, [count], use("t1", "count", n="three"))

    assert result["is_error"] is True
    assert "- n: Input should be a valid integer" in result["content"]
    assert '(got "three")' in result["content"]


def test_the_model_can_correct_malformed_arguments_on_the_next_turn(tmp_path: Path) -> None:
    written: list[str] = []

    @tool(EchoInput)
    def note(args: EchoInput, context: ToolContext) -> str:
        """Write a note."""
        written.append(args.text)
        return "noted"

    script = [
        reply(tool_calls=[tool_call("note", body="hello")]),
        reply(tool_calls=[tool_call("note", text="hello")]),
        reply("Noted."),
    ]
    a = agent(script, tmp_path, [note])

    events = list(a.run("note hello"))

    first, second = (m.tool_results(a.messages[i])[0] for i in (2, 4))
    assert first["is_error"] is True
    assert "text: Field required" in first["content"]
    assert second == m.tool_result(second["tool_use_id"], "noted")
    assert written == ["hello"]
    assert events[-1] == TurnEnded(3, "end_turn")


def test_an_exception_inside_a_tool_becomes_an_error_result(tmp_path: Path) -> None:
    @tool(EchoInput)
    def fragile(args: EchoInput, context: ToolContext) -> str:
        """Break."""
        raise ValueError(f"cannot handle {args.text!r}")

    result = only_result(tmp_path, [fragile], use("t1", "fragile", text="x"))

    assert result["is_error"] is True
    assert result["content"] == "fragile failed with ValueError: cannot handle 'x'"


def test_a_tool_error_message_is_passed_through_verbatim(tmp_path: Path) -> None:
    @tool(EchoInput)
    def picky(args: EchoInput, context: ToolContext) -> str:
        """Refuse."""
        raise ToolError("file not found: notes/today.md")

    result = only_result(tmp_path, [picky], use("t1", "picky", text="x"))

    assert result == m.tool_result("t1", "file not found: notes/today.md", is_error=True)


# --- order and parallelism -------------------------------------------------------------------


def test_results_come_back_in_call_order_when_parallel_tools_finish_in_reverse(
    tmp_path: Path,
) -> None:
    second_done = threading.Event()
    finished: list[str] = []

    @tool(TagInput, read_only=True)
    def slow(args: TagInput, context: ToolContext) -> str:
        """Wait for the fast one."""
        assert second_done.wait(timeout=2)
        time.sleep(0.005)
        finished.append(args.tag)
        return args.tag

    @tool(TagInput, read_only=True)
    def fast(args: TagInput, context: ToolContext) -> str:
        """Finish at once."""
        finished.append(args.tag)
        second_done.set()
        return args.tag

    r, _ = runner(tmp_path, [slow, fast])
    calls = [use("t1", "slow", tag="first"), use("t2", "fast", tag="second")]

    events, results = drive(r.run(calls))

    assert finished == ["second", "first"]
    assert [res["tool_use_id"] for res in results] == ["t1", "t2"]
    assert [res["content"] for res in results] == ["first", "second"]
    finishes = [e.tool_use_id for e in events if isinstance(e, ToolFinished)]
    assert finishes == ["t1", "t2"]


def test_read_only_tools_run_in_parallel_and_a_write_between_them_runs_alone(
    tmp_path: Path,
) -> None:
    meet = threading.Barrier(2, timeout=2)
    log: list[str] = []
    lock = threading.Lock()

    def record(entry: str) -> None:
        with lock:
            log.append(entry)

    @tool(TagInput, read_only=True)
    def look(args: TagInput, context: ToolContext) -> str:
        """Wait for the other reader: only possible if both run at once."""
        record(f"start {args.tag}")
        meet.wait()
        record(f"end {args.tag}")
        return f"saw {args.tag}"

    @tool(TagInput)
    def change(args: TagInput, context: ToolContext) -> str:
        """Change something."""
        record(f"start {args.tag}")
        time.sleep(0.01)
        record(f"end {args.tag}")
        return f"changed {args.tag}"

    r, _ = runner(tmp_path, [look, change])
    calls = [
        use("t1", "look", tag="a"),
        use("t2", "look", tag="b"),
        use("t3", "change", tag="w"),
        use("t4", "look", tag="c"),
        use("t5", "look", tag="d"),
    ]

    _, results = drive(r.run(calls))

    assert [res.get("is_error", False) for res in results] == [False] * 5
    assert [res["content"] for res in results] == [
        "saw a",
        "saw b",
        "changed w",
        "saw c",
        "saw d",
    ]
    start_w, end_w = log.index("start w"), log.index("end w")
    assert end_w == start_w + 1  # nothing ran while the write did
    assert set(log[:start_w]) == {"start a", "start b", "end a", "end b"}
    assert set(log[end_w + 1 :]) == {"start c", "start d", "end c", "end d"}


# --- what the model sees ---------------------------------------------------------------------


def test_empty_output_says_the_tool_completed_with_no_output(tmp_path: Path) -> None:
    @tool(EchoInput)
    def quiet(args: EchoInput, context: ToolContext) -> str:
        """Say nothing."""
        return ""

    result = only_result(tmp_path, [quiet], use("t1", "quiet", text="x"))

    assert result == m.tool_result("t1", "(quiet completed with no output)")


def test_oversized_output_is_spilled_to_storage_with_a_preview(tmp_path: Path) -> None:
    big = "".join(f"line {i}\n" for i in range(200))
    storage = ResultStorage(tmp_path / "results", threshold=500, preview=100)
    r, _ = runner(tmp_path, [echo], storage=storage)

    _, (result,) = drive(r.run([use("toolu_big", "echo", text=big)]))

    content = result["content"]
    assert content.startswith("<persisted-output>")
    assert "Full output saved to: @tool-results/toolu_big.txt" in content
    assert "line 0\nline 1\n" in content
    assert "line 199" not in content
    assert storage.read("toolu_big") == big


def test_small_output_is_not_spilled(tmp_path: Path) -> None:
    r, _ = runner(tmp_path, [echo], storage=ResultStorage(tmp_path / "results", threshold=500))

    _, (result,) = drive(r.run([use("toolu_1", "echo", text="short")]))

    assert result["content"] == "short"
    assert not (tmp_path / "results").exists()


def test_a_denied_call_is_an_error_and_the_tool_does_not_run(tmp_path: Path) -> None:
    written: list[str] = []

    @tool(EchoInput)
    def note(args: EchoInput, context: ToolContext) -> str:
        """Write a note."""
        written.append(args.text)
        return "noted"

    r, _ = runner(tmp_path, [note], permissions=Permissions.from_rules(deny=["note"]))

    events, (result,) = drive(r.run([use("t1", "note", text="hi")]))

    assert result["is_error"] is True
    assert result["content"] == "Permission to use note was denied: deny rule note."
    assert written == []
    assert PermissionDecided("t1", "note", "deny", "deny rule note") in events


# --- every call answered ---------------------------------------------------------------------


@tool(EchoInput)
def write(args: EchoInput, context: ToolContext) -> str:
    """Change something (so it runs alone, and asks in default mode)."""
    return f"wrote {args.text}"


@tool(EchoInput, read_only=True)
def explode(args: EchoInput, context: ToolContext) -> str:
    """Always fail."""
    raise RuntimeError("kaboom")


CALLS = st.tuples(
    st.sampled_from(["echo", "count", "write", "explode", "nonexistent"]),
    st.sampled_from([{"text": "hi"}, {"n": 3}, {}, {"text": 5}]),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(calls=st.lists(CALLS, max_size=8), mode=st.sampled_from(["default", "bypass"]))
def test_every_tool_use_gets_exactly_one_result_in_order(
    tmp_path: Path, calls: list[tuple[str, dict[str, Any]]], mode: Any
) -> None:
    r, _ = runner(
        tmp_path,
        [echo, count, write, explode],
        permissions=Permissions(mode=mode, workspace=Workspace(tmp_path)),
    )
    blocks = [use(f"toolu_{i}", name, **input) for i, (name, input) in enumerate(calls)]

    events, results = drive(r.run(blocks))

    assert [res["tool_use_id"] for res in results] == [b["id"] for b in blocks]
    assert all(res["type"] == "tool_result" and res["content"] for res in results)
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [e.tool_use_id for e in finished] == [b["id"] for b in blocks]
    conversation = [m.user("go"), m.assistant(blocks or [m.text("nothing")])]
    if blocks:
        conversation.append(m.user(results))
    assert m.validate(conversation) == []


def test_an_approver_that_raises_denies_the_call_and_the_loop_goes_on(tmp_path: Path) -> None:
    ran: list[str] = []

    @tool(EchoInput)
    def shout(args: EchoInput, context: ToolContext) -> str:
        """Say the text loudly (changes nothing, but is not marked read-only)."""
        ran.append(args.text)
        return args.text.upper()

    def closed_stdin(request: ApprovalRequest) -> bool:
        raise EOFError("no terminal")

    runner_ = ToolRunner(
        registry=ToolRegistry([shout]),
        context=ToolContext(workspace=Workspace(tmp_path)),
        approver=closed_stdin,
    )
    events, results = drive(runner_.run([use("toolu_1", "shout", text="hi")]))
    assert ran == []
    assert results[0]["is_error"] is True
    assert "approver failed (EOFError: no terminal)" in results[0]["content"]
    decided = [e for e in events if isinstance(e, PermissionDecided)]
    assert decided and decided[0].decision == "deny"
