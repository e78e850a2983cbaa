"""A Messages API server on loopback, for testing the live path without the real API.

``LocalMessagesAPI(model)`` listens on a free port of 127.0.0.1 and answers the two endpoints
the harness uses, as the API does on the wire:

* ``POST /v1/messages``, with ``"stream": true`` as server-sent events (``message_start``,
  ``ping``, a ``content_block_start``/``_delta``/``_stop`` run per block with ``text_delta``
  and ``input_json_delta`` pieces, ``message_delta`` with the stop reason and the cumulative
  usage, ``message_stop``) and without it as one JSON message;
* ``POST /v1/messages/count_tokens`` (``count_tokens=False`` answers it 404, as a gateway
  that does not offer it does).

A request without a key (in ``x-api-key`` or as ``Authorization: Bearer``) gets the API's
401, one without ``anthropic-version`` a 400. The replies come from a
:class:`~harness.model.ScriptedModel`: it checks each request as the API does (an invalid
conversation is a 400 with the API's wording), computes usage (cache reads and writes from
its cache simulator), cuts a reply at ``max_tokens``, and raises the SDK's own errors, which
go back with their status, headers (``retry-after``) and JSON body.

Why our own server and not one from PyPI: the mock servers there (fakellm, mockllm) answer
from rules in a YAML file. Here the replies must depend on the request the way the offline
chapters' do (tool calls, then a report of their results; a summary of what was sent; cache
reads that follow the breakpoints), and every request must be checked by the API's rules,
which the scripted model already does. So the wire format is the only new part, and the
SDK's own client parses it in every test. It is the standard library's
``ThreadingHTTPServer``: nothing to install, and one thread per connection, as parallel
subagents need.

A stream can be cut short (``cuts=[...]``, or :meth:`LocalMessagesAPI.cut`): each streamed
reply takes the next :class:`Cut`, which drops every event from a given one on (by position,
or from the first event of a given type, e.g. ``"message_delta"``). By default the server then
ends the response cleanly (the body's length is that of the events sent), as a server or
proxy that closes early does, and the SDK's stream ends without an error; with
``broken=True`` it announces the whole body and closes the connection partway, which the
SDK's HTTP client reports as an incomplete body. Replies after the cuts are used up go whole.

Anything the model could not answer (its script ran out, a bug) is a 500 ``api_error`` whose
message says so, and is kept in :attr:`LocalMessagesAPI.failures` for the test to report.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
from anthropic.types import Message

from harness.model import ScriptedModel

API_VERSION_HEADER = "anthropic-version"
TEXT_PIECE = 24  # characters per text_delta (the API's pieces are a few tokens each)
JSON_PIECE = 16  # characters per input_json_delta


@dataclass(frozen=True)
class Received:
    """One request the server got: its path, headers (the key left out) and JSON body."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class Cut:
    """Where a streamed reply stops: ``at`` is how many events are sent (an ``int``) or the type
    of the first event dropped (a ``str``; a stream without that type goes whole)."""

    at: int | str
    broken: bool = False
    """Close the connection mid-body instead of ending the response cleanly."""

    def keep(self, events: list[tuple[str, dict[str, Any]]]) -> int:
        """How many of ``events`` are sent."""
        if isinstance(self.at, int):
            return max(0, min(self.at, len(events)))
        return next((i for i, (name, _) in enumerate(events) if name == self.at), len(events))


def _as_cut(cut: Cut | int | str | None) -> Cut | None:
    return cut if cut is None or isinstance(cut, Cut) else Cut(cut)


def stream_events(message: Message) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events the API streams for ``message``, in order.

    The message starts with no content and no stop reason; each block opens empty and fills
    by deltas; ``message_delta`` carries the stop reason and the final usage (cumulative, as
    the API's is, so it overwrites what ``message_start`` said).
    """
    whole = message.model_dump(mode="json")
    usage = whole["usage"]
    start = {**whole, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": min(1, usage["output_tokens"])}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(whole["content"]):
        kind = block["type"]
        if kind == "text":
            opening, text = {**block, "text": ""}, block["text"]
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(text, TEXT_PIECE)]
        elif kind == "tool_use":
            opening, raw = {**block, "input": {}}, json.dumps(block["input"])
            deltas = [
                {"type": "input_json_delta", "partial_json": p} for p in _pieces(raw, JSON_PIECE)
            ]
        elif kind == "thinking":
            opening = {**block, "thinking": "", "signature": ""}
            deltas = [
                *(
                    {"type": "thinking_delta", "thinking": p}
                    for p in _pieces(block["thinking"], 64)
                ),
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        else:  # a block with no deltas of its own arrives whole
            opening, deltas = block, []
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": opening,
            },
        )
        for delta in deltas:
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": whole["stop_sequence"]},
            "usage": usage,
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _key_of(handler: BaseHTTPRequestHandler) -> str:
    """The API key a request carries: in ``x-api-key`` (the API's documented header) or as
    ``Authorization: Bearer <key>``, which is how this SDK version sends it."""
    if key := handler.headers.get("x-api-key", "").strip():
        return key
    scheme, _, token = handler.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _error_body(error_type: str, message: str, request_id: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": request_id,
    }


class LocalMessagesAPI:
    """The Messages API on ``http://127.0.0.1:<free port>``, answered by ``model``.

    Use it as a context manager; ``url`` is what ``ANTHROPIC_BASE_URL`` should say. Any
    non-empty key is accepted unless ``api_key`` names the one to require.
    """

    def __init__(
        self,
        model: ScriptedModel,
        *,
        count_tokens: bool = True,
        api_key: str | None = None,
        cuts: Iterable[Cut | int | str | None] = (),
    ) -> None:
        self.model = model
        self.count_tokens = count_tokens
        self.api_key = api_key
        self.received: list[Received] = []
        self.failures: list[str] = []
        """What the model could not answer (each also went back as a 500)."""
        self.cuts: list[Cut | None] = [_as_cut(c) for c in cuts]
        """Cuts for the next streamed replies, one each, in order (None: that one goes whole)."""
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def cut(self, *cuts: Cut | int | str | None) -> None:
        """Cut the next streamed replies, one cut each (``int``/``str``: ``Cut(at=...)``;
        None: that reply goes whole)."""
        with self._lock:
            self.cuts += [_as_cut(c) for c in cuts]

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the server is not running: use it in a `with` block")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def address(self) -> tuple[str, int]:
        if self._server is None:
            raise RuntimeError("the server is not running: use it in a `with` block")
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def __enter__(self) -> LocalMessagesAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's client expects

            def do_POST(self) -> None:
                api._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                return None  # quiet: the test reports what matters

        server = self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        # A short poll: shutdown() waits for the loop to look, and the tests stop it often.
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    # -- one request ----------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        request_id = f"req_local_{next(self._ids):04d}"
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length)
        path = handler.path.split("?", 1)[0]
        headers = {
            k.lower(): v
            for k, v in handler.headers.items()
            if k.lower() not in ("x-api-key", "authorization")
        }
        key = _key_of(handler)
        if not key or (self.api_key is not None and key != self.api_key):
            body = _error_body("authentication_error", "invalid x-api-key", request_id)
            return self._send_json(handler, 401, body, request_id)
        if not handler.headers.get(API_VERSION_HEADER):
            message = f"{API_VERSION_HEADER}: header is required"
            return self._send_json(
                handler, 400, _error_body("invalid_request_error", message, request_id), request_id
            )
        try:
            body = json.loads(raw or b"{}")
        except ValueError as error:
            message = f"The request body is not valid JSON: {error}"
            return self._send_json(
                handler, 400, _error_body("invalid_request_error", message, request_id), request_id
            )
        with self._lock:
            self.received.append(Received(path, headers, dict(body)))
        if path == "/v1/messages":
            return self._messages(handler, body, request_id)
        if path == "/v1/messages/count_tokens" and self.count_tokens:
            return self._count(handler, body, request_id)
        return self._send_json(
            handler, 404, _error_body("not_found_error", "Not Found", request_id), request_id
        )

    def _messages(
        self, handler: BaseHTTPRequestHandler, body: dict[str, Any], request_id: str
    ) -> None:
        stream = bool(body.pop("stream", False))
        try:
            message = self.model.create(**body)
        except anthropic.APIStatusError as error:  # the API's own refusal: send it on as is
            extra = {
                k: v
                for k, v in error.response.headers.items()
                if k.lower() in ("retry-after", "retry-after-ms", "x-should-retry")
            }
            return self._send(
                handler,
                error.status_code,
                error.response.content,
                "application/json",
                request_id,
                extra,
            )
        except TypeError as error:  # a required field missing, or one the API does not know
            message = f"invalid request: {error}"
            return self._send_json(
                handler, 400, _error_body("invalid_request_error", message, request_id), request_id
            )
        except Exception as error:  # the stand-in could not answer: a test failure
            reason = f"{type(error).__name__}: {error}"
            with self._lock:
                self.failures.append(reason)
            return self._send_json(
                handler, 500, _error_body("api_error", reason, request_id), request_id
            )
        if not stream:
            return self._send(
                handler, 200, message.to_json().encode(), "application/json", request_id
            )
        events = list(stream_events(message))
        with self._lock:
            cut = self.cuts.pop(0) if self.cuts else None
        sent = events[: cut.keep(events)] if cut is not None else events
        payload = b"".join(
            f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in sent
        )
        if cut is None or not cut.broken:
            return self._send(handler, 200, payload, "text/event-stream", request_id)
        whole = b"".join(
            f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
        )
        handler.close_connection = True  # the connection goes down mid-body
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("content-length", str(len(whole)))
        handler.send_header("request-id", request_id)
        handler.end_headers()
        handler.wfile.write(payload)
        handler.wfile.flush()
        return None

    def _count(
        self, handler: BaseHTTPRequestHandler, body: dict[str, Any], request_id: str
    ) -> None:
        counted = self.model.count_tokens(
            model=str(body.get("model", "")),
            messages=body.get("messages", []),
            system=body.get("system"),
            tools=body.get("tools"),
        )
        return self._send_json(handler, 200, {"input_tokens": counted}, request_id)

    def _send_json(
        self, handler: BaseHTTPRequestHandler, status: int, body: dict[str, Any], request_id: str
    ) -> None:
        self._send(handler, status, json.dumps(body).encode(), "application/json", request_id)

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        payload: bytes,
        content_type: str,
        request_id: str,
        extra: dict[str, str] | None = None,
    ) -> None:
        handler.send_response(status)
        handler.send_header("content-type", content_type)
        handler.send_header("content-length", str(len(payload)))
        handler.send_header("request-id", request_id)
        for name, value in (extra or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(payload)
