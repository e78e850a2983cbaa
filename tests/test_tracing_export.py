"""Traces on the wire (chapter 15): OTLP/HTTP to a real receiver, from the API and the CLI.

The receiver is a small HTTP server in the test that decodes what arrives with the
OpenTelemetry protocol's own protobuf classes (``opentelemetry-proto``, which comes with the
exporter): the bytes a trace viewer would get.
"""

from __future__ import annotations

import io
import logging
import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import reachable
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from harness import Agent, FakeClock, ScriptedModel, reply, tool_call
from harness.cli import main
from harness.tools.builtins import builtin_tools
from harness.tracing import Tracing, exporting_provider


class Receiver(ThreadingHTTPServer):
    """An OTLP/HTTP trace receiver on a free local port; ``spans`` holds what arrived."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.posts = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.posts += 1
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        receiver.spans.extend(scope.spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: object) -> None:  # quiet
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1/traces"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    with reachable((str(host), int(port))):  # the one address these tests may connect to
        yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def attributes(span: Span) -> dict[str, object]:
    out: dict[str, object] = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind) if kind else None
    return out


def test_spans_arrive_over_otlp_http_with_their_genai_attributes(
    receiver: Receiver, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    clock = FakeClock()
    steps = [reply(tool_calls=[tool_call("read_file", path="a.txt")]), reply("It says hello.")]
    agent = Agent(
        ScriptedModel(steps, clock=clock), tools=builtin_tools(), workspace=tmp_path, clock=clock
    )
    provider = exporting_provider(receiver.url)
    tracing = Tracing(provider, capture_content=False, session_id="s-1").attach(agent)
    list(tracing.run(agent, "What does a.txt say?"))
    provider.shutdown()  # sends what is left, as the command line does at exit
    names = sorted(s.name for s in receiver.spans)
    model = agent.config.model
    assert names == sorted(
        [
            "invoke_agent harness",
            *("turn 1", "turn 2", f"chat {model}", f"chat {model}"),
            "execute_tool read_file",
        ]
    )
    chat = next(s for s in receiver.spans if s.name.startswith("chat"))
    got = attributes(chat)
    assert got["gen_ai.provider.name"] == "anthropic"
    assert got["gen_ai.conversation.id"] == "s-1"
    assert isinstance(got["gen_ai.usage.input_tokens"], int) and got["gen_ai.usage.input_tokens"]
    assert "harness.cost.usd" in got
    assert chat.start_time_unix_nano == round(FakeClock().now()) * 1_000_000_000


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder as the current folder, a home of its own, no trace settings."""
    project, home = tmp_path / "shop", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / "README.md").write_text("# The shop\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    for name in ("HARNESS_TRACE", "ANTHROPIC_API_KEY", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    return project


def test_the_command_line_sends_the_session_when_the_setting_names_an_endpoint(
    receiver: Receiver, shell: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_TRACE", receiver.url)
    assert main(["-p", "list files", "--output-format", "json"]) == 0
    names = [s.name for s in receiver.spans]
    assert "invoke_agent harness" in names
    assert any(name.startswith("chat ") for name in names)


def test_without_the_setting_the_command_line_sends_nothing(
    receiver: Receiver, shell: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Even with the standard endpoint variable pointing at a receiver: tracing is opt-in.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url.removesuffix("/v1/traces"))
    assert main(["-p", "list files", "--output-format", "json"]) == 0
    assert receiver.posts == 0


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nobody listens


def test_an_endpoint_nobody_listens_on_is_logged_and_the_session_ends_normally(
    shell: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    port = _closed_port()
    monkeypatch.setenv("HARNESS_TRACE", f"http://127.0.0.1:{port}/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1")  # bounds the exporter's retries
    with (  # a real refusal by the system, not the test rig's
        reachable(("127.0.0.1", port)),
        caplog.at_level(logging.WARNING, logger="opentelemetry"),
    ):
        assert main(["-p", "list files", "--output-format", "json"]) == 0
    assert any(r.name.startswith("opentelemetry.exporter") for r in caplog.records)


def test_a_malformed_setting_is_said_once_and_the_session_runs_untraced(
    shell: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HARNESS_TRACE", "banana")
    assert main(["-p", "list files", "--output-format", "json"]) == 0
    assert capsys.readouterr().err.count("tracing is off for this session") == 1
