"""Chapter 06's exercises: how long to wait before a retry, and whether to retry at all.

Both checks feed the learner's function the SDK's own exceptions, as the scripted model raises
them (``harness.model.faults``), and compare with what the chapter's mechanism does. Where the
package already has the answer (``retry_after``, ``RecoveryPolicy.backoff``, ``classify``),
the check refuses code that calls it.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import anthropic
import httpx2  # the HTTP client the SDK is built on

from harness import recovery
from harness.clock import FAKE_EPOCH
from harness.exercises import NotYet, exercise, forbid, hints
from harness.model import faults

# -- helpers -------------------------------------------------------------------------------------


def _names(code: types.CodeType) -> set[str]:
    found = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _names(const)
    return found


def _reaches(function: object, targets: list[object]) -> str | None:
    """A name the function uses, from its globals or its closure, that is bound to one of
    ``targets`` (an alias of ``retry_after``, say), or None. Never a local variable's name: a
    learner's own ``retry_after = ...`` is not the package's function."""
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    scope: dict[str, Any] = dict(getattr(function, "__globals__", {}))
    cells = getattr(function, "__closure__", None) or ()
    for name, cell in zip(code.co_freevars, cells, strict=False):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    for name in sorted(_names(code)):
        if any(scope.get(name) is target for target in targets):
            return name
    return None


def _ask(function: Callable[..., Any], case: str, *args: Any) -> Any:
    """Call the learner's function on one case; an exception becomes a "not yet" naming it."""
    try:
        return function(*args)
    except (NotYet, NotImplementedError):
        raise
    except Exception as error:  # the learner's code failed on this case: say which
        raise NotYet(f"for {case} your code raised {type(error).__name__}: {error}") from None


@contextmanager
def _refusing(*attributes: tuple[object, str, str]) -> Iterator[None]:
    with ExitStack() as stack:
        for owner, attribute, why in attributes:
            stack.enter_context(forbid(owner, attribute, why))
        yield


# -- exercise 1: how long to wait ---------------------------------------------------------------

_WAIT_HINT = (
    'read "Backoff, with jitter" and "Retry-After first" again: which header wins over '
    "which, how a date becomes seconds (against now), where the ceiling applies and where the "
    "jitter does, and that a wait is never below zero. An error without a response has no "
    "headers."
)
_WAIT_FIRST = (
    "wait_before_retry(faults.overloaded(), 1, now, 0.0) should be 0.5: a 529 names no wait, "
    "so the backoff decides, and after the first attempt it is 0.5 s."
)
_WAIT_RECIPE = """\
1. If the error is an anthropic.APIStatusError it has a response: headers =
   error.response.headers. Any other error (a dropped connection, a timeout) has none: go to
   step 4.
2. If headers.get("retry-after-ms") is not None, try float(value) / 1000 and return it (never
   below 0: max(0.0, ...)). If float(...) fails, go on to step 3.
3. If headers.get("retry-after") is not None: try float(value) and return max(0.0, it). If
   float(...) fails it is an HTTP date: return
   max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - now). A date already past
   gives 0: retry now.
4. With neither header: base = min(0.5 * 2 ** (attempt - 1), 32.0), then return
   base * (1 + jitter). The cap comes before the jitter; Retry-After never gets jitter."""

_HTTP_DATE = "Thu, 01 Jan 2026 00:00:30 GMT"  # FAKE_EPOCH + 30 s
_PAST_DATE = "Wed, 31 Dec 2025 23:59:30 GMT"  # FAKE_EPOCH - 30 s

# (what the case is, the error, attempt, jitter, the wait expected, why)
_WAIT_CASES: list[tuple[str, anthropic.APIError, int, float, float, str]] = [
    ("a 529 after attempt 1, jitter 0", faults.overloaded(), 1, 0.0, 0.5, "0.5 · 2^0"),
    ("a 529 after attempt 2, jitter 0", faults.overloaded(), 2, 0.0, 1.0, "0.5 · 2^1"),
    (
        "a 500 after attempt 4, jitter 0.2",
        faults.server_error(),
        4,
        0.2,
        4.8,
        "0.5 · 2^3 = 4, plus 20 %",
    ),
    (
        "a dropped connection after attempt 3, jitter 0.1",
        faults.connection_error(),
        3,
        0.1,
        2.2,
        "no response, so no headers: 0.5 · 2^2 = 2, plus 10 %",
    ),
    (
        "a 529 after attempt 7, jitter 0",
        faults.overloaded(),
        7,
        0.0,
        32.0,
        "0.5 · 2^6 = 32, the cap",
    ),
    (
        "a 529 after attempt 9, jitter 0.25",
        faults.overloaded(),
        9,
        0.25,
        40.0,
        "capped at 32 before the jitter, plus 25 %",
    ),
    (
        "a 429 with retry-after: 7, after attempt 1, jitter 0.25",
        faults.rate_limited(7),
        1,
        0.25,
        7.0,
        "the API said 7 seconds: exactly that, no jitter on top",
    ),
    (
        "a 429 with retry-after: 3, after attempt 6, jitter 0",
        faults.rate_limited(3),
        6,
        0.0,
        3.0,
        "Retry-After wins over the backoff (16 s here), shorter or longer",
    ),
    (
        "a 429 with retry-after-ms: 1500 and retry-after: 2",
        faults.rate_limited(2, headers={"retry-after-ms": "1500"}),
        1,
        0.0,
        1.5,
        "retry-after-ms comes first: 1.5 s",
    ),
    (
        f"a 429 with retry-after: {_HTTP_DATE!r}, now = 2026-01-01 00:00:00 UTC",
        faults.rate_limited(_HTTP_DATE),
        1,
        0.0,
        30.0,
        "an HTTP date, 30 s after now",
    ),
    (
        "a 503 with retry-after: 45, after attempt 2",
        faults.status_error(503, headers={"retry-after": "45"}),
        2,
        0.1,
        45.0,
        "any status may carry Retry-After",
    ),
    (
        "a 429 with retry-after-ms: 200 and retry-after: 1",
        faults.rate_limited(1, headers={"retry-after-ms": "200"}),
        1,
        0.0,
        0.2,
        "retry-after-ms comes first, and it may be under a second: 0.2 s",
    ),
    (
        "a 429 with retry-after: 0, after attempt 3",
        faults.rate_limited(0),
        3,
        0.2,
        0.0,
        "the API said to retry at once: 0 s, not the backoff",
    ),
    (
        f"a 429 with retry-after: {_PAST_DATE!r}, now = 2026-01-01 00:00:00 UTC",
        faults.rate_limited(_PAST_DATE),
        1,
        0.0,
        0.0,
        "a date 30 s in the past: retry now, 0 s (never a negative wait)",
    ),
    (
        "a 503 with a malformed retry-after: -3",
        faults.status_error(503, headers={"retry-after": "-3"}),
        1,
        0.0,
        0.0,
        "a wait is never negative (time.sleep refuses one): 0 s",
    ),
    (
        "a 529 with a malformed retry-after-ms: -400",
        faults.overloaded(headers={"retry-after-ms": "-400"}),
        1,
        0.0,
        0.0,
        "a wait is never negative (time.sleep refuses one): 0 s",
    ),
]


@exercise("wait_before_retry", _WAIT_HINT, first=_WAIT_FIRST, number=1)
def check_wait_before_retry(wait_before_retry: Callable[..., Any]) -> str:
    """Exercise 1: ``wait_before_retry(error, attempt, now, jitter)`` in seconds."""
    why = (
        "the check wants your own reading of the headers and your own backoff: "
        "recovery.retry_after and RecoveryPolicy.backoff are what it compares against."
    )
    alias = _reaches(wait_before_retry, [recovery.retry_after, recovery.RecoveryPolicy])
    if alias is not None:
        raise NotYet(f"`{alias}` is the package's answer; {why}")
    with _refusing(
        (recovery, "retry_after", why),
        (recovery.RecoveryPolicy, "backoff", why),
    ):
        for case, error, attempt, jitter, expected, reason in _WAIT_CASES:
            got = _ask(wait_before_retry, case, error, attempt, FAKE_EPOCH, jitter)
            if not isinstance(got, int | float) or isinstance(got, bool):
                raise NotYet(f"for {case} you returned {got!r}: return a number of seconds.")
            if abs(float(got) - expected) > 1e-6:
                raise NotYet(
                    f"for {case} you said {float(got):g} s; expected {expected:g} s ({reason})."
                )
    return (
        "Retry-After (ms, seconds, date) first, then min(0.5 · 2^(n-1), 32) plus the jitter: "
        f"{len(_WAIT_CASES)} cases right."
    )


# -- exercise 2: worth another try? ---------------------------------------------------------------

_RETRY_HINT = (
    'read "Reading an error" again: what the error\'s class and status code say, when the '
    "x-should-retry header is the API's verdict (and which values are one), and the one 400 "
    "that no retry of the same request can fix, whatever a header says. Never the message's "
    "words."
)
_RETRY_FIRST = (
    "should_retry(faults.overloaded()) should be True: a 529 means the API has no room right "
    "now, and it will."
)
_RETRY_RECIPE = """\
1. anthropic.APIConnectionError (a dropped connection; APITimeoutError is a subclass): True.
2. Anything that is not an anthropic.APIStatusError (so has no status and no headers): False.
3. Prompt too long: status_code 400 and "prompt is too long" in str(error.message): False,
   whatever x-should-retry says (the same request is just as long; it needs a compaction).
4. header = error.response.headers.get("x-should-retry"); if header is exactly "true" or
   "false", return header == "true". Any other value is no verdict: go on.
5. Otherwise by status: True for 408, 409, 429 and any status >= 500; False for the rest."""

_TOOL_NAME_400 = faults.invalid_request(
    "tools.2.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$' "
    "(got 'retry when overloaded or rate limited')"
)

# (what the case is, the error, retry?, why)
_RETRY_CASES: list[tuple[str, anthropic.APIError, bool, str]] = [
    ("529 overloaded", faults.overloaded(), True, "the API has no room right now; it will"),
    ("429 rate limit", faults.rate_limited(7), True, "the limit resets"),
    ("500 server error", faults.server_error(), True, "the API failed on its side"),
    ("502 bad gateway", faults.status_error(502, "Bad gateway"), True, "any 5xx passes"),
    ("503 unavailable", faults.status_error(503), True, "any 5xx passes"),
    ("408 request timeout", faults.status_error(408), True, "the server gave up waiting"),
    ("409 conflict", faults.status_error(409), True, "a clash with another request"),
    ("a dropped connection", faults.connection_error(), True, "the network comes back"),
    ("a timeout", faults.timeout(), True, "the next attempt may be answered in time"),
    (
        "400 whose message names a tool 'retry when overloaded or rate limited'",
        _TOOL_NAME_400,
        False,
        "a 400 is a mistake in the request, whatever words its message contains",
    ),
    (
        "400 invalid max_tokens",
        faults.invalid_request("max_tokens: Input should be a valid integer"),
        False,
        "the same request gets the same 400",
    ),
    (
        "400 prompt too long",
        faults.prompt_too_long(209_353, 200_000),
        False,
        "the same request is just as long: it needs a compaction, not a retry",
    ),
    ("401 bad key", faults.authentication_error(), False, "the key stays wrong"),
    ("403 forbidden", faults.status_error(403), False, "a permission stays missing"),
    ("404 not found", faults.status_error(404), False, "the model id stays wrong"),
    ("413 too large", faults.status_error(413), False, "the request stays too large"),
    ("422 unprocessable", faults.status_error(422), False, "the request stays as it is"),
    (
        "503 with x-should-retry: false",
        faults.status_error(503, headers={"x-should-retry": "false"}),
        False,
        "the API said not to retry, and it knows",
    ),
    (
        "529 with x-should-retry: false",
        faults.overloaded(headers={"x-should-retry": "false"}),
        False,
        "the API said not to retry, and it knows",
    ),
    (
        "400 with x-should-retry: true",
        faults.status_error(400, "Please retry", headers={"x-should-retry": "true"}),
        True,
        "the API said to retry; it overrides the status either way",
    ),
    (
        "400 prompt too long with x-should-retry: true",
        faults.status_error(
            400,
            "prompt is too long: 209353 tokens > 200000 maximum",
            headers={"x-should-retry": "true"},
        ),
        False,
        "no header makes the same request shorter: it needs a compaction, not a retry",
    ),
    (
        "400 prompt too long on a 1M window",
        faults.prompt_too_long(1_048_577, 1_000_000),
        False,
        "the same request is just as long, whatever the window",
    ),
    (
        "504 whose message says the upstream took too long",
        faults.status_error(504, "Gateway timeout: the upstream took too long to answer"),
        True,
        "a 5xx is the server's failure; the words 'too long' do not make it a prompt too long",
    ),
    (
        "400 'Validation took too long' with x-should-retry: true",
        faults.status_error(
            400, "Validation took too long; please retry", headers={"x-should-retry": "true"}
        ),
        True,
        "the API said to retry, and this is not a prompt too long (only its exact message "
        "says that), whatever words the message has",
    ),
    (
        "529 with x-should-retry: 'maybe'",
        faults.overloaded(headers={"x-should-retry": "maybe"}),
        True,
        "only 'true' and 'false' are the API's verdict; with any other value the status "
        "decides, and a 529 is retried",
    ),
    (
        "400 with x-should-retry: '1'",
        faults.status_error(400, "Bad request", headers={"x-should-retry": "1"}),
        False,
        "only 'true' and 'false' are the API's verdict; with any other value the status "
        "decides, and a 400 is not retried",
    ),
    (
        "499 (a status below 500)",
        faults.status_error(499),
        False,
        "only 408, 409, 429 and 500 and up are retried; 499 is not a server error",
    ),
    (
        "an APIResponseValidationError (the API answered 200, in a shape the SDK did not expect)",
        anthropic.APIResponseValidationError(
            httpx2.Response(200, request=httpx2.Request("POST", faults.API_URL)), None
        ),
        False,
        "it is neither a status error nor a lost connection: nothing says a retry would help",
    ),
    (
        "an anthropic.APIError of no kind above",
        anthropic.APIError("Unexpected error", httpx2.Request("POST", faults.API_URL), body=None),
        False,
        "it is neither a status error nor a lost connection, and it has no status_code: "
        "nothing says a retry would help",
    ),
]


@exercise("should_retry", _RETRY_HINT, first=_RETRY_FIRST, number=2)
def check_should_retry(should_retry: Callable[[anthropic.APIError], Any]) -> str:
    """Exercise 2: ``should_retry(error)`` says whether a retry may fix ``error``."""
    why = "the check wants your own reading of the error: classify is what it compares against."
    alias = _reaches(should_retry, [recovery.classify])
    if alias is not None:
        raise NotYet(f"`{alias}` is the package's answer; {why}")
    with forbid(recovery, "classify", why):
        for case, error, expected, reason in _RETRY_CASES:
            got = _ask(should_retry, case, error)
            if not isinstance(got, bool):
                raise NotYet(f"for {case} you returned {got!r}: return True or False.")
            if got != expected:
                verb = "retry" if expected else "not retry"
                raise NotYet(f"for {case} you said {got}; it should {verb}: {reason}.")
    return f"{len(_RETRY_CASES)} errors read by their status and x-should-retry."


hint = hints(__name__, {1: _WAIT_RECIPE, 2: _RETRY_RECIPE})

__all__ = ["check_should_retry", "check_wait_before_retry", "hint"]
