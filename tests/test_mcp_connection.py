"""One MCP server driven from the synchronous harness: start, call, time out, crash, restart, stop.

The servers are real processes: the course's own (``python -m harness.mcp.servers.course``) and
one-line Python programs that fail in a chosen way. Timeouts are tested against servers that
never answer, so the outcome never depends on how fast the machine is.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from harness.mcp.connection import EventLoopThread, McpCallError, ServerConnection


@dataclass(frozen=True)
class Spec:
    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


COURSE = Spec("course", sys.executable, ("-m", "harness.mcp.servers.course"))


@pytest.fixture(scope="module")
def runner() -> Iterator[EventLoopThread]:
    loop = EventLoopThread()
    yield loop
    loop.close()


@pytest.fixture(scope="module")
def course(runner: EventLoopThread) -> Iterator[ServerConnection]:
    connection = ServerConnection(COURSE, runner)
    assert connection.start(), connection.error
    yield connection
    connection.close()


def text(result: object) -> str:
    return " ".join(getattr(block, "text", "") for block in getattr(result, "content", []))


def test_a_started_server_lists_its_tools_and_answers_a_call(course: ServerConnection) -> None:
    names = {tool.name for tool in course.tools()}
    assert {"lookup_ticket", "slow", "fail", "big_report", "crash"} <= names
    result = course.call("lookup_ticket", {"ticket_id": "T-101"})
    assert not result.is_error and "T-101" in text(result)
    assert course.status().state == "connected"


def test_a_server_side_error_is_an_error_result_not_an_exception(course: ServerConnection) -> None:
    result = course.call("fail", {"reason": "the disk is full"})
    assert result.is_error and "the disk is full" in text(result)


def test_a_call_past_its_timeout_is_cancelled_and_the_server_goes_on(
    course: ServerConnection,
) -> None:
    with pytest.raises(McpCallError, match=r"did not answer within 0\.2 s"):
        course.call("slow", {"seconds": 3600}, timeout=0.2)
    assert "T-102" in text(course.call("lookup_ticket", {"ticket_id": "T-102"}))


def test_a_crash_mid_call_restarts_the_server_once_then_leaves_it_stopped(
    runner: EventLoopThread,
) -> None:
    connection = ServerConnection(COURSE, runner)
    assert connection.start()
    try:
        with pytest.raises(McpCallError, match="started again; the call was not repeated"):
            connection.call("crash", {})
        assert connection.status().restarts == 1
        assert "T-101" in text(connection.call("lookup_ticket", {"ticket_id": "T-101"}))
        with pytest.raises(McpCallError, match="already restarted once"):
            connection.call("crash", {})
        with pytest.raises(McpCallError, match="is not connected"):
            connection.call("lookup_ticket", {"ticket_id": "T-101"})
        status = connection.status()
        assert status.state == "failed" and status.tools == 0
        # What the server said on stderr is kept for a person, across the restart.
        assert status.stderr_tail.count("crash() called") == 2
        assert "started again" in status.stderr_tail
    finally:
        connection.close()


def test_a_missing_command_fails_to_start_with_the_reason(runner: EventLoopThread) -> None:
    connection = ServerConnection(Spec("nope", "/no/such/server-binary"), runner)
    assert not connection.start()
    assert connection.status().state == "failed"
    assert "command not found" in connection.error
    with pytest.raises(McpCallError, match="not connected: command not found"):
        connection.call("anything", {})


def test_a_server_that_exits_at_start_fails_and_its_stderr_stays_out_of_the_error(
    runner: EventLoopThread,
) -> None:
    secret = "token=sk-not-for-the-model"
    program = f"import sys; print({secret!r}, file=sys.stderr); sys.exit(1)"
    connection = ServerConnection(Spec("exits", sys.executable, ("-c", program)), runner)
    assert not connection.start()
    assert "closed the connection" in connection.error
    assert secret not in connection.error
    assert secret in connection.status().stderr_tail


def test_a_server_that_never_answers_fails_after_the_startup_timeout(
    runner: EventLoopThread,
) -> None:
    program = "import time; time.sleep(3600)"
    connection = ServerConnection(
        Spec("mute", sys.executable, ("-c", program)), runner, startup_timeout=0.3
    )
    assert not connection.start()
    assert connection.error == "the server did not answer within 0.3 s"
    assert connection.tools() == []


def test_a_closed_server_refuses_calls_and_closing_twice_is_harmless(
    runner: EventLoopThread,
) -> None:
    connection = ServerConnection(COURSE, runner)
    assert connection.start()
    connection.close()
    connection.close()
    assert connection.status().state == "closed"
    with pytest.raises(McpCallError, match="not connected"):
        connection.call("lookup_ticket", {"ticket_id": "T-101"})
