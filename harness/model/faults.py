"""The API's failures, as the SDK raises them.

Each helper returns an instance of the official ``anthropic`` exception class, built on a real
``httpx`` request and response carrying the API's JSON error body and headers, exactly as the
SDK builds them when the network answers with an error. Code that handles these offline
(retries, a fallback model) handles the live API's errors unchanged.

Raise one from a script step::

    ScriptedModel([faults.overloaded(), reply("fine now")])
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import httpx2  # the HTTP client the SDK is built on (its fork of httpx)
from anthropic import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    InternalServerError,
    OverloadedError,
    RateLimitError,
)
from anthropic._error_classes import make_status_error  # the SDK's status -> class table

from harness.model.live import StreamCut

API_URL = "https://api.anthropic.com/v1/messages"


def _request() -> httpx2.Request:
    return httpx2.Request("POST", API_URL)


def _body_and_response(
    status: int, error_type: str, message: str, headers: dict[str, str] | None
) -> tuple[dict[str, Any], httpx2.Response]:
    # Real ids are random (req_011C...); ours derive from the error, so stored notebook outputs
    # are stable and no counter is kept between calls.
    digest = hashlib.sha256(f"{status} {error_type} {message}".encode()).hexdigest()
    request_id = f"req_scripted_{digest[:16]}"
    body: dict[str, Any] = {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": request_id,
    }
    response = httpx2.Response(
        status,
        headers={"content-type": "application/json", "request-id": request_id, **(headers or {})},
        content=json.dumps(body).encode(),
        request=_request(),
    )
    return body, response


def _error(
    cls: type[APIStatusError],
    status: int,
    error_type: str,
    message: str,
    headers: dict[str, str] | None = None,
) -> APIStatusError:
    body, response = _body_and_response(status, error_type, message, headers)
    # The SDK's own wording: "Error code: 429 - {'type': 'error', ...}".
    return cls(f"Error code: {status} - {body}", response=response, body=body)


def rate_limited(
    retry_after: float | str | None = 30, *, headers: dict[str, str] | None = None
) -> RateLimitError:
    """429 ``rate_limit_error``, with a ``retry-after`` header unless ``None``: seconds, or a
    string sent as it is (an HTTP date, say). ``headers`` adds others (``retry-after-ms``)."""
    given = {} if retry_after is None else {"retry-after": _header(retry_after)}
    headers = {**given, **(headers or {})}
    error = _error(
        RateLimitError,
        429,
        "rate_limit_error",
        "This request would exceed your organization's rate limit of 50,000 input tokens per "
        "minute. Please reduce the prompt length or the maximum tokens requested, or try "
        "again later.",
        headers,
    )
    assert isinstance(error, RateLimitError)
    return error


def _header(value: float | str) -> str:
    return value if isinstance(value, str) else f"{value:g}"


def overloaded(*, headers: dict[str, str] | None = None) -> OverloadedError:
    """529 ``overloaded_error``: the API is temporarily overloaded (not your fault)."""
    error = _error(OverloadedError, 529, "overloaded_error", "Overloaded", headers)
    assert isinstance(error, OverloadedError)
    return error


def prompt_too_long(tokens: int, maximum: int) -> BadRequestError:
    """400 ``invalid_request_error``: ``prompt is too long: N tokens > M maximum``."""
    return invalid_request(f"prompt is too long: {tokens} tokens > {maximum} maximum")


_PROMPT_TOO_LONG = re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum")


def prompt_too_long_sizes(error: BaseException) -> tuple[int, int] | None:
    """``(tokens, maximum)`` from a prompt-too-long error, or None if ``error`` is not one.

    The one failure known by its message: it is a 400 ``invalid_request_error`` like many
    others, and only its wording (matched whole, numbers included) tells it apart.
    """
    if not isinstance(error, BadRequestError):
        return None
    found = _PROMPT_TOO_LONG.search(str(error.message))
    return (int(found.group(1)), int(found.group(2))) if found else None


def invalid_request(message: str) -> BadRequestError:
    """400 ``invalid_request_error`` with the given message (the API refuses the request)."""
    error = _error(BadRequestError, 400, "invalid_request_error", message)
    assert isinstance(error, BadRequestError)
    return error


def authentication_error() -> AuthenticationError:
    """401 ``authentication_error``: the key is missing, wrong or revoked (retrying won't help)."""
    error = _error(AuthenticationError, 401, "authentication_error", "invalid x-api-key")
    assert isinstance(error, AuthenticationError)
    return error


def server_error(*, headers: dict[str, str] | None = None) -> InternalServerError:
    """500 ``api_error``: an unexpected error inside the API."""
    error = _error(InternalServerError, 500, "api_error", "Internal server error", headers)
    assert isinstance(error, InternalServerError)
    return error


def connection_error() -> APIConnectionError:
    """The request never got an answer (DNS, refused connection, dropped Wi-Fi)."""
    return APIConnectionError(request=_request())


def cut_stream(last_event: str | None = "content_block_delta") -> StreamCut:
    """The reply's stream ended before ``message_stop`` (the server closed it early): what
    ``AnthropicModel`` raises instead of returning half a reply. ``last_event`` is the type of
    the last event that arrived (None: none did)."""
    return StreamCut(_request(), last_event=last_event, detail="no message_stop event")


def timeout() -> APITimeoutError:
    """The request was sent but no answer came in time."""
    return APITimeoutError(request=_request())


# The API's error type for each status (its documented errors page); any other status gets
# "api_error" when it is a 5xx, else "invalid_request_error".
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    409: "conflict_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def status_error(
    status: int, message: str = "", *, headers: dict[str, str] | None = None
) -> APIStatusError:
    """Any status the API can answer with, as the class the SDK raises for it.

    The class comes from the SDK's own table (``make_status_error``: 403 is
    ``PermissionDeniedError``, 503 ``ServiceUnavailableError``, 409 ``ConflictError``, ...), so
    it is what ``except`` clauses written against the live API catch.
    """
    error_type = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    body, response = _body_and_response(status, error_type, message or error_type, headers)
    return make_status_error(f"Error code: {status} - {body}", body=body, response=response)
