"""The course's MCP servers do what they say, driven by the official SDK's own client.

Each server runs as a real process (``python -m harness.mcp.servers.<name>``) talking MCP over
stdio, except where a test only needs the tools' behaviour: then the SDK's client connects to
the server object in-process, which is much faster. The hostile server gets one test per
fault, showing both what the server sends and how the SDK's client takes it. The two
off-the-shelf reference servers (``mcp_server_time``, ``mcp_server_git``) run unchanged,
offline. Hangs are tested against servers that never answer, under a short timeout: the
outcome is asserted, never a duration.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO

import anyio
import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, ImageContent, TextContent, jsonrpc_message_adapter
from pydantic import ValidationError

from harness.mcp.servers import course, hostile, many

ROOT = Path(__file__).resolve().parents[1]
HANG_TIMEOUT = 0.5
"""How long a test waits on a server that never answers (the outcome, not the time, is tested)."""


def server(module: str, *args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    """How to start ``python -m <module> <args>`` from the project's root."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", module, *args], cwd=str(ROOT), env=env
    )


def course_server() -> StdioServerParameters:
    return server("harness.mcp.servers.course")


def hostile_server(fault: str, *args: str) -> StdioServerParameters:
    return server("harness.mcp.servers.hostile", "--fault", fault, *args)


def hostile_command(fault: str, *args: str) -> list[str]:
    """The hostile server's command line, to run it without a client."""
    return [sys.executable, "-m", "harness.mcp.servers.hostile", "--fault", fault, *args]


@asynccontextmanager
async def connect(params: StdioServerParameters, errlog: TextIO) -> AsyncIterator[Client]:
    """The SDK's client on a server process whose stderr goes to ``errlog``."""
    async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
        yield client


def run(test: Callable[[], Awaitable[None]]) -> None:
    anyio.run(test)


def text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


@pytest.fixture
def errlog(tmp_path: Path) -> Iterator[TextIO]:
    """A file for a server's stderr (the SDK's client needs a real file descriptor)."""
    with (tmp_path / "stderr.log").open("w+", encoding="utf-8") as log:
        yield log


def logged(log: TextIO) -> str:
    log.flush()
    return Path(log.name).read_text(encoding="utf-8")


# The course server ------------------------------------------------------------------------


def test_course_server_lists_typed_tools_marks_read_only_ones_and_logs_only_to_stderr(
    errlog: TextIO,
) -> None:
    async def check() -> None:
        async with connect(course_server(), errlog) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert client.server_info is not None and client.server_info.name == "course"
            result = await client.call_tool("lookup_ticket", {"ticket_id": "T-101"})
        expected = {"lookup_ticket", "word_count", "slow", "fail", "flaky", "big_report", "crash"}
        assert set(tools) == expected
        for tool in tools.values():
            assert tool.description and tool.input_schema["type"] == "object"
        assert tools["lookup_ticket"].input_schema["required"] == ["ticket_id"]
        assert tools["slow"].input_schema["properties"]["seconds"]["type"] == "number"
        read_only = {
            name
            for name, tool in tools.items()
            if tool.annotations and tool.annotations.read_only_hint
        }
        assert read_only == expected - {"crash"}
        assert text(result).startswith("T-101 [open] assigned to ana")
        # The startup line went to stderr; stdout carried only the protocol (or the client
        # would have failed to parse it).
        assert "course: MCP server starting on stdio" in logged(errlog)

    run(check)


def test_course_tools_answer_or_fail_with_a_reason_the_model_can_read() -> None:
    async def check() -> None:
        async with Client(course.build_server()) as client:
            found = await client.call_tool("lookup_ticket", {"ticket_id": " t-103 "})
            missing = await client.call_tool("lookup_ticket", {"ticket_id": "T-999"})
            counted = await client.call_tool("word_count", {"text": "one two\nthree"})
            failed = await client.call_tool("fail", {"reason": "the disk is full"})
            flaky = [await client.call_tool("flaky", {}) for _ in range(4)]
            report = await client.call_tool("big_report", {"lines": 2000})
            wrong_type = await client.call_tool("big_report", {"lines": "many"})
            waited = await client.call_tool("slow", {"seconds": 0})
        assert not found.is_error and "T-103 [open]" in text(found)
        assert missing.is_error and "Known tickets: T-101, T-102, T-103, T-104" in text(missing)
        assert counted.structured_content == {"words": 3, "lines": 2, "characters": 13}
        assert failed.is_error and text(failed).endswith("the disk is full")
        assert [result.is_error for result in flaky] == [True, False, True, False]
        assert "Try again" in text(flaky[0])
        assert not report.is_error and text(report) == course.report_text(2000)
        assert text(report).count("\n") == 1999 and len(text(report)) > 100_000
        assert wrong_type.is_error and "lines" in text(wrong_type)
        assert not waited.is_error

    run(check)


def test_a_slow_call_can_be_abandoned_and_the_server_keeps_serving(errlog: TextIO) -> None:
    async def check() -> None:
        async with connect(course_server(), errlog) as client:
            with pytest.raises(TimeoutError), anyio.fail_after(HANG_TIMEOUT):
                await client.call_tool("slow", {"seconds": 3600})
            after = await client.call_tool("lookup_ticket", {"ticket_id": "T-102"})
        assert "T-102 [closed]" in text(after)

    run(check)


def test_crash_ends_the_server_process_in_the_middle_of_the_call(errlog: TextIO) -> None:
    async def check() -> None:
        async with connect(course_server(), errlog) as client:
            with pytest.raises(MCPError, match="Connection closed"):
                await client.call_tool("crash", {})
            with pytest.raises(MCPError, match="Connection closed"):
                await client.call_tool("lookup_ticket", {"ticket_id": "T-101"})

    run(check)
    assert "crash() called, exiting now" in logged(errlog)


# The server with many tools ---------------------------------------------------------------


def test_many_server_lists_as_many_tools_as_asked_sized_like_a_real_server(
    errlog: TextIO,
) -> None:
    async def check() -> None:
        async with connect(server("harness.mcp.servers.many", "--tools", "150"), errlog) as client:
            tools = (await client.list_tools()).tools
            result = await client.call_tool("invoices_delete", {"id": "I-7", "confirm": True})
        assert len(tools) == 150 and len({tool.name for tool in tools}) == 150
        assert all(
            re.fullmatch(r"[a-z]+_(list|get|search|create|update|delete)", t.name) for t in tools
        )
        sizes = [len(json.dumps(many.wire_form(tool))) for tool in tools]
        # mcp_server_git: 12 tools, 340 to 1,061 characters each (540 on average).
        assert 500 < sum(sizes) / len(sizes) < 900 and min(sizes) > 300 and max(sizes) < 1100
        assert text(result) == 'invoices_delete: done (arguments: {"confirm": true, "id": "I-7"})'

    run(check)


def test_generated_tools_are_valid_schemas_with_hints_that_match_their_verb() -> None:
    tools = many.generated_tools(200)
    assert [tool.name for tool in tools[:2]] == ["issues_list", "issues_get"]
    assert [tool.name for tool in tools[180:182]] == ["issues2_list", "issues2_get"]
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.annotations is not None
        verb = tool.name.rsplit("_", 1)[1]
        assert tool.annotations.read_only_hint is (verb in {"list", "get", "search"})
        assert tool.annotations.destructive_hint is (verb == "delete")
    with pytest.raises(ValueError):
        many.generated_tools(-1)


@given(st.integers(min_value=0, max_value=400))
@settings(max_examples=30, deadline=None)
def test_tool_names_are_unique_and_as_many_as_asked(count: int) -> None:
    names = many.tool_names(count)
    assert len(names) == count == len(set(names))


# The hostile server: one test per fault ---------------------------------------------------


def test_exit_at_start_exits_with_status_1_and_a_reason_on_stderr_before_speaking() -> None:
    done = subprocess.run(
        hostile_command("exit-at-start"),
        cwd=ROOT,
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == hostile.EXIT_AT_START_STATUS
    assert done.stdout == b""
    assert b"configuration error, giving up" in done.stderr


def test_a_server_that_never_answers_initialize_times_out(errlog: TextIO) -> None:
    async def check() -> None:
        with pytest.raises(TimeoutError), anyio.fail_after(HANG_TIMEOUT):
            async with connect(hostile_server("hang-at-start"), errlog):
                pass

    run(check)


def test_garbage_on_stdout_is_skipped_by_the_sdk_client(errlog: TextIO) -> None:
    async def check() -> None:
        async with connect(hostile_server("garbage-stdout", "--seed", "3"), errlog) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            results = [await client.call_tool("echo", {"text": f"hi {n}"}) for n in range(2)]
        assert names == ["echo"]
        assert [text(result) for result in results] == ["hi 0", "hi 1"]

    run(check)


def test_garbage_stdout_prints_seeded_lines_before_serving_and_before_every_reply() -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
    }
    done = subprocess.run(
        hostile_command("garbage-stdout", "--seed", "1"),
        cwd=ROOT,
        input=(json.dumps(initialize) + "\n").encode(),  # then stdin closes: the server stops
        capture_output=True,
        timeout=60,
        check=True,
    )
    *garbage, reply = done.stdout.decode().splitlines()
    assert garbage == list(itertools.islice(hostile.garbage_lines(1), hostile.GARBAGE_LINES + 1))
    assert json.loads(reply)["result"]["serverInfo"]["name"] == "hostile"


@given(st.integers())
@settings(max_examples=50, deadline=None)
def test_garbage_lines_are_never_json_rpc_and_follow_the_seed(seed: int) -> None:
    lines = list(itertools.islice(hostile.garbage_lines(seed), 20))
    assert lines == list(itertools.islice(hostile.garbage_lines(seed), 20))
    for line in lines:
        with pytest.raises(ValidationError):
            jsonrpc_message_adapter.validate_json(line)


def test_a_call_that_hangs_times_out_and_the_server_keeps_serving(errlog: TextIO) -> None:
    async def check() -> None:
        async with connect(hostile_server("hang-on-call"), errlog) as client:
            with pytest.raises(TimeoutError), anyio.fail_after(HANG_TIMEOUT):
                await client.call_tool("hang", {})
            assert text(await client.call_tool("echo", {"text": "still here"})) == "still here"

    run(check)


def test_crash_on_call_closes_the_connection(errlog: TextIO) -> None:
    async def check() -> None:
        async with connect(hostile_server("crash-on-call"), errlog) as client:
            with pytest.raises(MCPError, match="Connection closed"):
                await client.call_tool("crash", {})

    run(check)
    assert "crashing in the middle of a call" in logged(errlog)


def test_huge_result_arrives_whole_through_the_sdk_client(errlog: TextIO) -> None:
    async def check() -> None:
        async with connect(hostile_server("huge-result", "--size", "3000000"), errlog) as client:
            result = await client.call_tool("huge", {})
        assert len(text(result)) == 3_000_000
        assert text(result) == hostile.huge_text(3_000_000)

    run(check)


@given(st.integers(min_value=0, max_value=10_000))
def test_huge_text_is_exactly_the_size_asked(size: int) -> None:
    assert len(hostile.huge_text(size).encode()) == size


def test_bad_tool_names_reach_the_client_as_listed(errlog: TextIO) -> None:
    async def check() -> None:
        async with connect(hostile_server("bad-tool-names"), errlog) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            spaced = await client.call_tool("has space", {})
        assert names == ["echo", *hostile.BAD_TOOL_NAMES]
        assert names.count("duplicate") == 2 and len(hostile.LONG_NAME) == 200
        assert text(spaced) == "called 'has space'"

    run(check)


def test_bad_schemas_reach_the_client_and_their_tools_still_answer(errlog: TextIO) -> None:
    async def check() -> None:
        async with connect(hostile_server("bad-schemas"), errlog) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            called = await client.call_tool("ref_cycle", {})
        assert list(tools) == ["echo", *hostile.bad_schemas()]
        assert tools["ref_cycle"].input_schema == hostile.bad_schemas()["ref_cycle"]
        assert len(json.dumps(tools["enormous_schema"].input_schema)) > 150_000
        assert text(called) == "called 'ref_cycle'"

    run(check)
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.Draft202012Validator.check_schema(hostile.bad_schemas()["invalid_schema"])


def test_schemas_that_are_not_objects_make_the_sdk_client_reject_the_whole_server(
    errlog: TextIO,
) -> None:
    async def check() -> None:
        async with connect(hostile_server("schema-not-object"), errlog) as client:
            with pytest.raises(ValidationError, match="inputSchema"):
                await client.list_tools()
            # Not even a good tool can be called: before it hands back a result, the client
            # lists the tools again (to check the result against the tool's output schema).
            with pytest.raises(ValidationError, match="inputSchema"):
                await client.call_tool("echo", {"text": "ok"})

    run(check)


def test_flood_on_stderr_does_not_block_the_server(errlog: TextIO) -> None:
    async def check() -> None:
        async with connect(hostile_server("flood-stderr", "--size", "1000000"), errlog) as client:
            await client.call_tool("shout", {})
            assert text(await client.call_tool("echo", {"text": "ok"})) == "ok"

    run(check)
    assert len(logged(errlog)) >= 2_000_000


def test_wrong_content_blocks_reach_the_client_or_fail_its_validation(errlog: TextIO) -> None:
    async def check() -> None:
        async with connect(hostile_server("wrong-content"), errlog) as client:
            for name in ("unknown_type", "mixed"):
                with pytest.raises(ValidationError):
                    await client.call_tool(name, {})
            bad_data = await client.call_tool("bad_base64", {})
            tiff = await client.call_tool("unsupported_media", {})
            assert text(await client.call_tool("echo", {"text": "ok"})) == "ok"
        image = bad_data.content[0]
        assert isinstance(image, ImageContent) and image.mime_type == "image/png"
        with pytest.raises(binascii.Error):
            base64.b64decode(image.data, validate=True)
        assert isinstance(tiff.content[0], ImageContent)
        assert tiff.content[0].mime_type == "image/tiff"

    run(check)


@pytest.mark.parametrize(
    ("main", "argv"),
    [
        (hostile.main, ["--fault", "no-such-fault"]),
        (hostile.main, ["--fault", "huge-result", "--size", "-1"]),
        (many.main, ["--tools", "-1"]),
        (course.main, ["--unknown"]),
    ],
)
def test_a_bad_command_line_is_refused_before_anything_starts(
    main: Callable[[list[str]], None], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2


def test_every_fault_is_listed_in_the_module_docstring() -> None:
    for fault in hostile.FAULTS:
        assert f"``{fault}``" in (hostile.__doc__ or "")


# The off-the-shelf reference servers, unchanged and offline -------------------------------


def test_the_reference_time_server_runs_offline(errlog: TextIO) -> None:
    async def check() -> None:
        async with connect(server("mcp_server_time"), errlog) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            now = await client.call_tool("get_current_time", {"timezone": "UTC"})
            converted = await client.call_tool(
                "convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            )
        assert names == {"get_current_time", "convert_time"}
        assert not now.is_error and json.loads(text(now))["timezone"] == "UTC"
        assert not converted.is_error
        assert json.loads(text(converted))["target"]["datetime"][11:16] == "21:00"

    run(check)


def test_the_reference_git_server_reads_a_fresh_repository(tmp_path: Path, errlog: TextIO) -> None:
    repo = tmp_path / "repo"
    git_env = {
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.invalid",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    env = {**os.environ, **git_env}
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], env=env, check=True)
    (repo / "notes.txt").write_text("hello\n")
    subprocess.run(["git", "-C", str(repo), "add", "notes.txt"], env=env, check=True)
    subprocess.run(
        ["git", "-C", str(repo), "commit", "-q", "-m", "First note"], env=env, check=True
    )
    (repo / "draft.txt").write_text("not yet\n")

    async def check() -> None:
        params = server("mcp_server_git", "--repository", str(repo), env=git_env)
        async with connect(params, errlog) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            status = await client.call_tool("git_status", {"repo_path": str(repo)})
            log = await client.call_tool("git_log", {"repo_path": str(repo), "max_count": 5})
        assert {"git_status", "git_log", "git_diff", "git_commit"} <= names
        assert "On branch main" in text(status) and "draft.txt" in text(status)
        assert "First note" in text(log) and "Ada" in text(log)

    run(check)
