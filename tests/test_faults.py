"""Scripted failures are the SDK's own exceptions, built exactly as the SDK builds them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import pytest

from harness.model import faults

# helper, SDK class, HTTP status, the API's error type
STATUS_FAULTS: list[tuple[Callable[[], anthropic.APIStatusError], type, int, str]] = [
    (faults.rate_limited, anthropic.RateLimitError, 429, "rate_limit_error"),
    (faults.overloaded, anthropic.OverloadedError, 529, "overloaded_error"),
    (
        lambda: faults.prompt_too_long(209_353, 199_999),
        anthropic.BadRequestError,
        400,
        "invalid_request_error",
    ),
    (
        lambda: faults.invalid_request("bad"),
        anthropic.BadRequestError,
        400,
        "invalid_request_error",
    ),
    (faults.server_error, anthropic.InternalServerError, 500, "api_error"),
]
IDS = ["rate_limited", "overloaded", "prompt_too_long", "invalid_request", "server_error"]


@pytest.mark.parametrize(("make", "cls", "status", "error_type"), STATUS_FAULTS, ids=IDS)
def test_status_fault_is_the_sdks_class(make: Any, cls: type, status: int, error_type: str) -> None:
    assert type(make()) is cls


@pytest.mark.parametrize(("make", "cls", "status", "error_type"), STATUS_FAULTS, ids=IDS)
def test_status_fault_has_the_http_status(
    make: Any, cls: type, status: int, error_type: str
) -> None:
    error = make()
    assert error.status_code == status
    assert error.response.status_code == status


@pytest.mark.parametrize(("make", "cls", "status", "error_type"), STATUS_FAULTS, ids=IDS)
def test_status_fault_has_the_apis_error_type(
    make: Any, cls: type, status: int, error_type: str
) -> None:
    assert make().type == error_type


@pytest.mark.parametrize(("make", "cls", "status", "error_type"), STATUS_FAULTS, ids=IDS)
def test_status_fault_body_is_the_apis_json_error_shape(
    make: Any, cls: type, status: int, error_type: str
) -> None:
    body = make().body
    assert set(body) == {"type", "error", "request_id"}
    assert body["type"] == "error"
    assert body["error"]["type"] == error_type
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert body["request_id"].startswith("req_")


@pytest.mark.parametrize(("make", "cls", "status", "error_type"), STATUS_FAULTS, ids=IDS)
def test_status_fault_response_json_is_the_body(
    make: Any, cls: type, status: int, error_type: str
) -> None:
    error = make()
    assert error.response.json() == error.body


@pytest.mark.parametrize(("make", "cls", "status", "error_type"), STATUS_FAULTS, ids=IDS)
def test_status_fault_response_headers_are_json_with_a_request_id(
    make: Any, cls: type, status: int, error_type: str
) -> None:
    error = make()
    headers = error.response.headers
    assert headers["content-type"] == "application/json"
    assert headers["request-id"] == error.body["request_id"] == error.request_id


@pytest.mark.parametrize(("make", "cls", "status", "error_type"), STATUS_FAULTS, ids=IDS)
def test_status_fault_message_reads_like_the_sdks(
    make: Any, cls: type, status: int, error_type: str
) -> None:
    assert str(make()).startswith(f"Error code: {status} - ")


@pytest.mark.parametrize(("make", "cls", "status", "error_type"), STATUS_FAULTS, ids=IDS)
def test_the_sdk_client_maps_the_same_response_to_the_same_error(
    make: Any, cls: type, status: int, error_type: str
) -> None:
    error = make()
    client = anthropic.Anthropic(api_key="x")
    from_sdk = client._make_status_error_from_response(error.response)
    assert type(from_sdk) is type(error)
    assert str(from_sdk) == str(error)
    assert from_sdk.body == error.body
    assert from_sdk.request_id == error.request_id


@pytest.mark.parametrize(("make", "cls", "status", "error_type"), STATUS_FAULTS, ids=IDS)
def test_status_fault_is_the_same_every_time_for_stable_notebook_outputs(
    make: Any, cls: type, status: int, error_type: str
) -> None:
    first, second = make(), make()
    assert (str(first), first.request_id) == (str(second), second.request_id)


def test_different_faults_have_different_request_ids() -> None:
    ids = {make().request_id for make, *_ in STATUS_FAULTS}
    assert len(ids) == len(STATUS_FAULTS)


def test_overloaded_is_also_an_internal_server_error() -> None:
    # So `except InternalServerError` catches 529 too, as with the real SDK.
    assert isinstance(faults.overloaded(), anthropic.InternalServerError)


def test_rate_limited_carries_retry_after_in_seconds() -> None:
    assert faults.rate_limited(retry_after=12).response.headers["retry-after"] == "12"


def test_rate_limited_defaults_to_thirty_seconds() -> None:
    assert faults.rate_limited().response.headers["retry-after"] == "30"


def test_rate_limited_keeps_fractional_seconds() -> None:
    assert faults.rate_limited(retry_after=1.5).response.headers["retry-after"] == "1.5"


def test_rate_limited_without_retry_after_has_no_header() -> None:
    assert "retry-after" not in faults.rate_limited(retry_after=None).response.headers


def test_prompt_too_long_says_how_long_and_the_maximum() -> None:
    error = faults.prompt_too_long(209_353, 199_999)
    assert error.body["error"]["message"] == "prompt is too long: 209353 tokens > 199999 maximum"


def test_invalid_request_carries_the_given_message() -> None:
    error = faults.invalid_request('messages: first message must use the "user" role')
    assert error.body["error"]["message"] == 'messages: first message must use the "user" role'


def test_status_fault_response_belongs_to_a_messages_request() -> None:
    request = faults.overloaded().response.request
    assert (request.method, str(request.url)) == ("POST", "https://api.anthropic.com/v1/messages")


def test_connection_error_is_the_sdks_class_without_a_status() -> None:
    error = faults.connection_error()
    assert type(error) is anthropic.APIConnectionError
    assert not isinstance(error, anthropic.APIStatusError)
    assert error.body is None
    assert str(error) == "Connection error."


def test_timeout_is_the_sdks_timeout_and_a_connection_error() -> None:
    error = faults.timeout()
    assert type(error) is anthropic.APITimeoutError
    assert isinstance(error, anthropic.APIConnectionError)


def test_network_faults_point_at_a_messages_request() -> None:
    for error in (faults.connection_error(), faults.timeout()):
        assert str(error.request.url) == "https://api.anthropic.com/v1/messages"


# --- any status, as the SDK's own class (chapter 06) ----------------------------------------

SDK_CLASS_BY_STATUS: list[tuple[int, type[anthropic.APIStatusError], str]] = [
    (400, anthropic.BadRequestError, "invalid_request_error"),
    (401, anthropic.AuthenticationError, "authentication_error"),
    (403, anthropic.PermissionDeniedError, "permission_error"),
    (404, anthropic.NotFoundError, "not_found_error"),
    (408, anthropic.RequestTimeoutError, "timeout_error"),
    (409, anthropic.ConflictError, "conflict_error"),
    (413, anthropic.ContentTooLargeError, "request_too_large"),
    (422, anthropic.UnprocessableEntityError, "invalid_request_error"),
    (429, anthropic.RateLimitError, "rate_limit_error"),
    (500, anthropic.InternalServerError, "api_error"),
    (502, anthropic.InternalServerError, "api_error"),
    (503, anthropic.ServiceUnavailableError, "api_error"),
    (504, anthropic.GatewayTimeoutError, "timeout_error"),
    (529, anthropic.OverloadedError, "overloaded_error"),
]


@pytest.mark.parametrize(("status", "cls", "error_type"), SDK_CLASS_BY_STATUS)
def test_status_error_is_the_sdks_class_for_each_status(
    status: int, cls: type[anthropic.APIStatusError], error_type: str
) -> None:
    error = faults.status_error(status, "what happened", headers={"retry-after": "3"})
    assert type(error) is cls
    assert error.status_code == status
    assert error.response.headers["retry-after"] == "3"
    assert isinstance(error.body, dict) and error.body["error"]["type"] == error_type


@pytest.mark.parametrize(("status", "cls", "error_type"), SDK_CLASS_BY_STATUS)
def test_status_error_is_what_the_sdk_client_makes_of_the_same_response(
    status: int, cls: type[anthropic.APIStatusError], error_type: str
) -> None:
    error = faults.status_error(status)
    client = anthropic.Anthropic(api_key="test-key-not-real")
    assert type(client._make_status_error_from_response(error.response)) is cls


def test_rate_limited_takes_an_http_date_and_extra_headers() -> None:
    date = "Thu, 01 Jan 2026 00:00:30 GMT"
    error = faults.rate_limited(date, headers={"retry-after-ms": "1500"})
    assert error.response.headers["retry-after"] == date
    assert error.response.headers["retry-after-ms"] == "1500"


def test_overloaded_and_server_error_carry_extra_headers() -> None:
    for make in (faults.overloaded, faults.server_error):
        error = make(headers={"x-should-retry": "false"})
        assert error.response.headers["x-should-retry"] == "false"
