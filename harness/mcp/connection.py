"""One MCP server as a subprocess, driven by the official SDK from the harness's synchronous loop.

The ``mcp`` SDK is asynchronous (anyio), and the harness's loop is not (notebooks and asyncio
mix badly, DESIGN §3). The bridge is one background thread running an asyncio event loop
(:class:`EventLoopThread`, one per session), and for each server a long-lived task that holds
the SDK's :class:`mcp.Client` open: the SDK's contexts must be entered and left by the same
task, so the task opens the client, publishes it, and waits to be told to stop. Each call is a
short task of its own on the same loop, submitted from the loop's thread with
:func:`asyncio.run_coroutine_threadsafe`, so a call that times out is cancelled alone and the
session goes on.

What can go wrong, and what the caller sees (:class:`ServerConnection` never raises from
:meth:`~ServerConnection.start`; :meth:`~ServerConnection.call` raises only
:class:`McpCallError`, a :class:`~harness.tools.base.ToolError`, so the model reads the reason as
an error result and the loop goes on):

* the command is not found, or the server exits or hangs before it answers: the server is
  ``failed`` with the reason, its tools are not offered, the session starts without them;
* a call runs past its timeout: the call is cancelled and answered as timed out; the server
  stays connected (the SDK sends the cancellation, and a later call works);
* the server dies during a call (``Connection closed``): the call is answered as failed, and
  the server is started again once per session (a second crash leaves it ``failed``). The call
  is never repeated by itself: it may have done something before the crash.

A server's stderr goes to a pipe that a reader thread drains into a bounded tail
(:attr:`ServerStatus.stderr_tail`, for ``/mcp`` and for a person), never to the model and never
to the terminal. Its environment is the SDK's safe default (``HOME``, ``PATH``, ``USER``, ...)
plus the configured ``env``: Claude Code passes its whole environment, so an API key in it
reaches every server; the SDK's default keeps it out, and we keep that (the chapter says so).
"""

from __future__ import annotations

import asyncio
import codecs
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import anyio
import mcp_types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from harness.tools.base import ToolError

T = TypeVar("T")

STARTUP_TIMEOUT = 30.0
"""Seconds a server has to start and answer (Claude Code's ``MCP_TIMEOUT`` default, 30,000 ms)."""
CALL_TIMEOUT = 300.0
"""Seconds one tool call may run (our choice, as openclaude's 300,000 ms: Claude Code's own
``MCP_TOOL_TIMEOUT`` default is about 27.8 hours, longer than any lesson can wait)."""
RESTARTS = 1
"""How often a server that died is started again in one session."""
STDERR_TAIL = 16_384
"""Characters of a server's stderr kept (the newest), for a person to read."""
MAX_PAGES = 100
"""Pages of ``tools/list`` read at most: a server whose cursor never ends cannot hang the start."""

State = Literal["pending", "connected", "failed", "closed"]


class ServerSpec(Protocol):
    """What a connection needs of a configured server (:class:`harness.mcp.config.ServerConfig`)."""

    @property
    def name(self) -> str: ...
    @property
    def command(self) -> str: ...
    @property
    def args(self) -> Sequence[str]: ...
    @property
    def env(self) -> Mapping[str, str]: ...


class McpCallError(ToolError):
    """A call that could not be answered by the server: the text says why, for the model."""


class EventLoopThread:
    """An asyncio event loop in a daemon thread, for every server of one session."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="harness-mcp", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coroutine`` on the loop; cancelling the returned future cancels the task."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coroutine`` on the loop and wait for its result; if the wait is cut short
        (a timeout, Ctrl-C), the task is cancelled, so the server is told to stop the call."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout)
        except BaseException:
            future.cancel()
            raise

    def close(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        if not thread.is_alive():
            loop.close()


class _StderrTail:
    """A pipe for a server's stderr, read by a thread into its newest :data:`STDERR_TAIL` chars."""

    def __init__(self, name: str, earlier: _StderrTail | None = None) -> None:
        read_end, write_end = os.pipe()
        self.writer = os.fdopen(write_end, "w", encoding="utf-8", errors="replace")
        # Raw bytes, decoded as they come: a text reader's read(n) would wait for n characters.
        self._reader = os.fdopen(read_end, "rb", buffering=0)
        self._lock = threading.Lock()
        self._text = f"{earlier.text()}--- started again ---\n" if earlier is not None else ""
        self.total = 0
        self._thread = threading.Thread(
            target=self._drain, name=f"harness-mcp-stderr-{name}", daemon=True
        )
        self._thread.start()

    def _drain(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            while chunk := self._reader.read(4096):
                text = decoder.decode(chunk)
                with self._lock:
                    self.total += len(chunk)
                    self._text = (self._text + text)[-STDERR_TAIL:]
        except (OSError, ValueError):
            pass
        finally:
            self._reader.close()

    def close_writer(self) -> None:
        """Our copy of the write end: the child keeps its own, so the reader ends when it exits."""
        with contextlib.suppress(OSError):
            self.writer.close()

    def text(self) -> str:
        with self._lock:
            return self._text


@dataclass(frozen=True)
class ServerStatus:
    """What ``/mcp`` shows of one server."""

    name: str
    state: State
    tools: int
    error: str
    restarts: int
    stderr_tail: str


def _describe(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        inner = [e for e in error.exceptions if not isinstance(e, asyncio.CancelledError)]
        if inner:
            return _describe(inner[0])
    if isinstance(error, FileNotFoundError):
        return f"command not found: {error.filename or error}"
    if isinstance(error, MCPError) and error.error.code == mcp_types.CONNECTION_CLOSED:
        return "the server closed the connection (it exited; its stderr is in /mcp)"
    text = str(error).strip() or type(error).__name__
    return f"{type(error).__name__}: {text}"[:500]


class ServerConnection:
    """One configured stdio server: start it, list its tools, call them, stop it."""

    def __init__(
        self,
        spec: ServerSpec,
        runner: EventLoopThread,
        *,
        cwd: Path | None = None,
        startup_timeout: float = STARTUP_TIMEOUT,
        call_timeout: float = CALL_TIMEOUT,
        restarts: int = RESTARTS,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self._runner = runner
        self._cwd = cwd
        self.startup_timeout = startup_timeout
        self.call_timeout = call_timeout
        self._restarts_left = restarts
        self.restarts = 0
        self.state: State = "pending"
        self.error = ""
        self._tools: list[mcp_types.Tool] = []
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._task: concurrent.futures.Future[None] | None = None
        self._done = threading.Event()
        self._stderr: _StderrTail | None = None
        self._lock = threading.RLock()

    # -- starting and stopping -------------------------------------------------------------

    def start(self) -> bool:
        """Start the server and read its tools; False (with :attr:`error`) if it did not come up."""
        with self._lock:
            self._stop_task()
            self._tools, self.error, self._client = [], "", None
            self._done = threading.Event()
            ready = threading.Event()
            stderr = _StderrTail(self.name, earlier=self._stderr)
            self._stderr = stderr
            self._task = self._runner.submit(self._serve(ready, stderr))
            if not ready.wait(self.startup_timeout):
                self._fail(f"the server did not answer within {self.startup_timeout:g} s")
                self._stop_task(cancel=True)
                return False
            if self.error:
                self.state = "failed"
                self._stop_task()
                return False
            self.state = "connected"
            return True

    async def _serve(self, ready: threading.Event, stderr: _StderrTail) -> None:
        params = StdioServerParameters(
            command=self.spec.command,
            args=list(self.spec.args),
            env=dict(self.spec.env) or None,
            cwd=self._cwd,
            encoding_error_handler="replace",
        )
        self._stop = asyncio.Event()
        try:
            async with Client(_stdio(params, stderr), mode="auto") as client:
                stderr.close_writer()
                self._tools = await self._list(client)
                self._client = client
                ready.set()
                await self._stop.wait()
        except BaseException as error:  # reported through the state, never raised to the loop
            if not ready.is_set() and not self.error:
                self.error = _describe(error)
            if not isinstance(error, Exception):
                raise
        finally:
            stderr.close_writer()
            self._client = None
            ready.set()
            self._done.set()

    @staticmethod
    async def _list(client: Client) -> list[mcp_types.Tool]:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    def _fail(self, reason: str) -> None:
        self.state = "failed"
        self.error = reason

    def _stop_task(self, *, cancel: bool = False) -> None:
        task, stop = self._task, self._stop
        self._task = None
        if task is None:
            return
        if stop is not None and not cancel:
            self._runner.loop.call_soon_threadsafe(stop.set)
        if cancel or not self._done.wait(5):  # still starting (a hang): the SDK ends the process
            task.cancel()
            self._done.wait(10)

    def close(self) -> None:
        """Stop the server (the SDK closes its stdin, then terminates it)."""
        with self._lock:
            self._stop_task()
            if self.state != "failed":
                self.state = "closed"

    # -- what it offers --------------------------------------------------------------------

    def tools(self) -> list[mcp_types.Tool]:
        """The tools the server listed when it started (empty unless connected)."""
        return list(self._tools) if self.state == "connected" else []

    def status(self) -> ServerStatus:
        stderr = self._stderr.text() if self._stderr is not None else ""
        return ServerStatus(
            self.name, self.state, len(self.tools()), self.error, self.restarts, stderr
        )

    def call(
        self, tool: str, arguments: Mapping[str, Any], *, timeout: float | None = None
    ) -> mcp_types.CallToolResult:
        """Call ``tool``; :class:`McpCallError` says why when the server could not answer."""
        limit = self.call_timeout if timeout is None else timeout
        client = self._client
        if self.state != "connected" or client is None:
            why = f": {self.error}" if self.error else ""
            raise McpCallError(f"MCP server {self.name!r} is not connected{why}.")

        async def call() -> mcp_types.CallToolResult | Any:
            with anyio.fail_after(limit):
                return await client.call_tool(tool, dict(arguments))

        try:
            result = self._runner.run(call(), timeout=limit + 5)
        except TimeoutError:
            raise McpCallError(
                f"MCP tool {tool!r} on server {self.name!r} did not answer within {limit:g} s; "
                "the call was cancelled (the server is still connected)."
            ) from None
        except MCPError as error:
            if error.error.code != mcp_types.CONNECTION_CLOSED:
                raise McpCallError(
                    f"MCP server {self.name!r} refused the call: {error.error.message[:500]}"
                ) from None
            raise McpCallError(self._crashed(tool)) from None
        except Exception as error:  # the SDK could not read the answer (a malformed reply)
            raise McpCallError(
                f"MCP server {self.name!r} sent an answer that could not be read: "
                f"{_describe(error)}"
            ) from None
        if not isinstance(result, mcp_types.CallToolResult):
            raise McpCallError(
                f"MCP server {self.name!r} answered {type(result).__name__}, not a tool result "
                "(this harness does not answer a server's questions during a call)."
            )
        return result

    def _crashed(self, tool: str) -> str:
        with self._lock:
            said = f"MCP server {self.name!r} stopped during the call to {tool!r}"
            self._stop_task()
            if self._restarts_left <= 0:
                self._fail("it stopped during a call, after its restart")
                return f"{said}; it was already restarted once, so it stays stopped."
            self._restarts_left -= 1
            self.restarts += 1
            if self.start():
                return (
                    f"{said}. It was started again; the call was not repeated (it may have "
                    "done part of its work): check before calling again."
                )
            return f"{said}, and could not be started again: {self.error}"


def _stdio(params: StdioServerParameters, stderr: _StderrTail) -> Any:
    from mcp.client.stdio import stdio_client

    return stdio_client(params, errlog=stderr.writer)
