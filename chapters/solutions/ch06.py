"""Chapter 06: error recovery."""

from __future__ import annotations

import email.utils

import anthropic


def wait_before_retry(error: anthropic.APIError, attempt: int, now: float, jitter: float) -> float:
    """Exercise 1: Retry-After (ms, then seconds or an HTTP date), else capped backoff + jitter."""
    if isinstance(error, anthropic.APIStatusError):
        headers = error.response.headers
        if (ms := headers.get("retry-after-ms")) is not None:
            try:
                return max(0.0, float(ms) / 1000)
            except ValueError:
                pass
        if (value := headers.get("retry-after")) is not None:
            try:
                return max(0.0, float(value))
            except ValueError:
                return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - now)
    return min(0.5 * 2 ** (attempt - 1), 32.0) * (1 + jitter)


def should_retry(error: anthropic.APIError) -> bool:
    """Exercise 2: by the x-should-retry header, then the kind of error; never by its words."""
    if isinstance(error, anthropic.APIConnectionError):  # timeouts are connection errors too
        return True
    if not isinstance(error, anthropic.APIStatusError):
        return False
    if error.status_code == 400 and "prompt is too long" in str(error.message):
        return False  # it needs a compaction: the same request would be just as long
    header = error.response.headers.get("x-should-retry")
    if header in ("true", "false"):
        return header == "true"
    status = error.status_code
    return status in (408, 409, 429) or status >= 500
