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

API_URL = "https://api.anthropic.com/v1/messages"


def _request() -> httpx2.Request:
    return httpx2.Request("POST", API_URL)


def _error(
    cls: type[APIStatusError],
    status: int,
    error_type: str,
    message: str,
    headers: dict[str, str] | None = None,
) -> APIStatusError:
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
    # The SDK's own wording: "Error code: 429 - {'type': 'error', ...}".
    return cls(f"Error code: {status} - {body}", response=response, body=body)


def rate_limited(retry_after: float | None = 30) -> RateLimitError:
    """429 ``rate_limit_error``, with a ``retry-after`` header (seconds) unless ``None``."""
    headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
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


def overloaded() -> OverloadedError:
    """529 ``overloaded_error``: the API is temporarily overloaded (not your fault)."""
    error = _error(OverloadedError, 529, "overloaded_error", "Overloaded")
    assert isinstance(error, OverloadedError)
    return error


def prompt_too_long(tokens: int, maximum: int) -> BadRequestError:
    """400 ``invalid_request_error``: ``prompt is too long: N tokens > M maximum``."""
    return invalid_request(f"prompt is too long: {tokens} tokens > {maximum} maximum")


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


def server_error() -> InternalServerError:
    """500 ``api_error``: an unexpected error inside the API."""
    error = _error(InternalServerError, 500, "api_error", "Internal server error")
    assert isinstance(error, InternalServerError)
    return error


def connection_error() -> APIConnectionError:
    """The request never got an answer (DNS, refused connection, dropped Wi-Fi)."""
    return APIConnectionError(request=_request())


def timeout() -> APITimeoutError:
    """The request was sent but no answer came in time."""
    return APITimeoutError(request=_request())
