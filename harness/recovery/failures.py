"""Reading a failed call: what kind of failure an API error is, and whether to try again.

:func:`classify` reads an error as the SDK raises it (by status code, then the API's
``x-should-retry``) into a :class:`Failure` with advice for a person; :func:`retry_after` reads
how long the API asked us to wait, against the agent's clock.
"""

from __future__ import annotations

import email.utils
import math
from dataclasses import dataclass

import anthropic

from harness.model import faults
from harness.model.live import StreamCut


@dataclass(frozen=True)
class Failure:
    """What a failed call means: its kind, whether to try again, and what a person can do."""

    kind: str
    """``overloaded``, ``rate_limited``, ``server``, ``timeout``, ``connection``,
    ``conflict``, ``prompt_too_long``, ``bad_request``, ``authentication``, ``permission``,
    ``not_found``, ``too_large``, ``unprocessable`` or ``unknown``."""
    retryable: bool
    cause: str
    """One line: the status and the API's error type (``529 overloaded_error``)."""
    advice: str
    """What to do about it, for the person reading the event."""


_ADVICE = {
    "overloaded": "The API is overloaded (not your fault); try again in a few minutes, or "
    "configure a fallback model.",
    "rate_limited": "Your organisation's rate limit was reached; wait, lower max_tokens or "
    "the prompt's size, or ask for a higher limit.",
    "server": "The API failed on its side; try again later (status.anthropic.com).",
    "timeout": "No answer came in time; check the network, or try a smaller request.",
    "connection": "The API could not be reached; check the network and ANTHROPIC_BASE_URL.",
    "stream_cut": "The reply's stream ended before its end (the connection closed early); "
    "the partial reply was discarded. If it keeps happening, check the network or a proxy "
    "that cuts long responses.",
    "conflict": "The request clashed with another one; try again.",
    "prompt_too_long": "The conversation is longer than the context window; compact it "
    "(/compact) or start a new session.",
    "bad_request": "The request was malformed; the API's message says which field (a bug in "
    "the harness or a plugin, not something a retry can fix).",
    "authentication": "Set ANTHROPIC_API_KEY to a valid key (the key is missing, wrong or "
    "revoked).",
    "permission": "This key may not use this model or feature; check the workspace's "
    "permissions in the console.",
    "not_found": "The model id is wrong or retired; check HARNESS_MODEL or AgentConfig.model.",
    "too_large": "The request is larger than the API accepts (32 MB); remove large images or "
    "documents.",
    "unprocessable": "The API could not process this request as given; the message says why.",
    "unknown": "An unexpected error; the message says what the API sent.",
}
_BY_STATUS = {
    400: "bad_request",
    401: "authentication",
    403: "permission",
    404: "not_found",
    408: "timeout",
    409: "conflict",
    413: "too_large",
    422: "unprocessable",
    429: "rate_limited",
    529: "overloaded",
}
_RETRYABLE = {"overloaded", "rate_limited", "server", "timeout", "connection", "conflict"}


def is_prompt_too_long(error: BaseException) -> bool:
    """A 400 whose message says the prompt is longer than the window (the API's wording)."""
    return faults.prompt_too_long_sizes(error) is not None


def classify(error: anthropic.APIError) -> Failure:
    """Read an API error as the SDK raises it: by status code, then ``x-should-retry``.

    Never by searching the message for words (prompt-too-long aside, whose only sign is its
    message): the status code and the error's class say what kind of failure it is.
    """
    if isinstance(error, StreamCut):  # a subclass of APIConnectionError: its kind, said plainly
        after = error.last_event or "no event"
        cause = f"stream cut after {after} (no message_stop)"
        return Failure("connection", True, cause, _ADVICE["stream_cut"])
    if isinstance(error, anthropic.APITimeoutError):  # a subclass of APIConnectionError
        return Failure("timeout", True, "timeout (no answer in time)", _ADVICE["timeout"])
    if isinstance(error, anthropic.APIConnectionError):
        return Failure("connection", True, "connection error", _ADVICE["connection"])
    if not isinstance(error, anthropic.APIStatusError):
        return Failure("unknown", False, type(error).__name__, _ADVICE["unknown"])
    status = error.status_code
    kind = _BY_STATUS.get(status, "server" if status >= 500 else "unknown")
    if is_prompt_too_long(error):
        kind = "prompt_too_long"
    error_type: str = error.type or ""
    if not error_type and isinstance(error.body, dict):
        inner = error.body.get("error")
        error_type = str(inner.get("type", "")) if isinstance(inner, dict) else ""
    cause = f"{status} {error_type}".strip()
    retryable = kind in _RETRYABLE
    # The API may say itself whether a retry can help; the SDK obeys it, and so do we.
    should = error.response.headers.get("x-should-retry")
    if should in ("true", "false") and kind != "prompt_too_long":
        retryable = should == "true"
        cause += f" (x-should-retry: {should})"
    return Failure(kind, retryable, cause, _ADVICE[kind])


def retry_after(error: anthropic.APIError, now: float) -> float | None:
    """Seconds the API asked us to wait, or None: ``retry-after-ms``, then ``retry-after``
    (seconds, or an HTTP date measured against ``now``, the agent's clock).

    Written here rather than borrowed from the SDK (``BaseClient._parse_retry_after_header``,
    private) because the SDK measures a date against the machine's clock, and ours must use
    the agent's, so that a fake clock gives the same waits every run.
    """
    if not isinstance(error, anthropic.APIStatusError):
        return None
    headers = error.response.headers
    for name, scale in (("retry-after-ms", 1_000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            if name == "retry-after-ms":
                continue
            parsed = email.utils.parsedate_tz(value)
            if parsed is None:
                return None
            try:
                seconds = email.utils.mktime_tz(parsed) - now
            except (ValueError, OverflowError):  # a date no clock can hold (year 99999)
                return None
        return max(0.0, seconds) if math.isfinite(seconds) else None
    return None
