"""Chapter 06's exercise checks: the solutions pass, the stubs and plausible slips do not."""

from __future__ import annotations

import email.utils

import anthropic

from harness import recovery
from harness.exercises import ch06
from harness.recovery import RecoveryPolicy
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch06")


def stub(*args: object) -> None:
    raise NotImplementedError


def test_the_solutions_pass() -> None:
    assert ch06.check_wait_before_retry(solutions.wait_before_retry)
    assert ch06.check_should_retry(solutions.should_retry)


def test_the_stubs_are_told_not_yet_with_a_hint() -> None:
    for verdict in (ch06.check_wait_before_retry(stub), ch06.check_should_retry(stub)):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)


# -- exercise 1: how long to wait ---------------------------------------------------------------


def headers(error: anthropic.APIError) -> dict[str, str]:
    if isinstance(error, anthropic.APIStatusError):
        return dict(error.response.headers)
    return {}


def seconds(value: str, now: float) -> float:
    try:
        return float(value)
    except ValueError:
        return email.utils.parsedate_to_datetime(value).timestamp() - now


def test_ignoring_retry_after_ms_is_rejected() -> None:
    def slip(error: anthropic.APIError, attempt: int, now: float, jitter: float) -> float:
        if "retry-after" in headers(error):
            return seconds(headers(error)["retry-after"], now)
        return min(0.5 * 2 ** (attempt - 1), 32) * (1 + jitter)

    verdict = ch06.check_wait_before_retry(slip)
    assert not verdict and "retry-after-ms" in str(verdict)


def test_an_exponent_off_by_one_is_rejected() -> None:
    def slip(error: anthropic.APIError, attempt: int, now: float, jitter: float) -> float:
        if "retry-after" not in headers(error):
            return min(0.5 * 2**attempt, 32) * (1 + jitter)
        return solutions.wait_before_retry(error, attempt, now, jitter)  # type: ignore[no-any-return]

    verdict = ch06.check_wait_before_retry(slip)
    assert not verdict and "attempt 1" in str(verdict) and "0.5 s" in str(verdict)


def test_a_backoff_without_the_32_second_cap_is_rejected() -> None:
    def slip(error: anthropic.APIError, attempt: int, now: float, jitter: float) -> float:
        if "retry-after" not in headers(error):
            return 0.5 * 2 ** (attempt - 1) * (1 + jitter)
        return solutions.wait_before_retry(error, attempt, now, jitter)  # type: ignore[no-any-return]

    verdict = ch06.check_wait_before_retry(slip)
    assert not verdict and "attempt 9" in str(verdict) and "the cap" not in str(verdict)


def test_undercutting_retry_after_with_the_backoff_is_rejected() -> None:
    def slip(error: anthropic.APIError, attempt: int, now: float, jitter: float) -> float:
        backoff = min(0.5 * 2 ** (attempt - 1), 32) * (1 + jitter)
        asked = headers(error).get("retry-after")
        return min(seconds(asked, now), backoff) if asked is not None else backoff

    verdict = ch06.check_wait_before_retry(slip)
    assert not verdict and "retry-after: 7" in str(verdict)


def test_jitter_on_top_of_retry_after_is_rejected() -> None:
    def slip(error: anthropic.APIError, attempt: int, now: float, jitter: float) -> float:
        return solutions.wait_before_retry(error, attempt, now, 0.0) * (1 + jitter)  # type: ignore[no-any-return]

    verdict = ch06.check_wait_before_retry(slip)
    assert not verdict and "no jitter on top" in str(verdict)


def test_a_retry_after_date_read_as_nothing_is_rejected() -> None:
    def slip(error: anthropic.APIError, attempt: int, now: float, jitter: float) -> float:
        for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
            try:
                return float(headers(error)[name]) / scale
            except (KeyError, ValueError):
                continue
        return min(0.5 * 2 ** (attempt - 1), 32) * (1 + jitter)

    verdict = ch06.check_wait_before_retry(slip)
    assert not verdict and "HTTP date" in str(verdict)


def test_calling_the_packages_retry_after_is_refused() -> None:
    def slip(error: anthropic.APIError, attempt: int, now: float, jitter: float) -> float:
        asked = recovery.retry_after(error, now)
        return asked if asked is not None else min(0.5 * 2 ** (attempt - 1), 32) * (1 + jitter)

    verdict = ch06.check_wait_before_retry(slip)
    assert not verdict and "your own reading" in str(verdict)


def test_an_imported_alias_of_the_packages_functions_is_refused() -> None:
    from harness.recovery import retry_after as asked_for

    def slip(error: anthropic.APIError, attempt: int, now: float, jitter: float) -> float:
        asked = asked_for(error, now)
        return asked if asked is not None else min(0.5 * 2 ** (attempt - 1), 32) * (1 + jitter)

    # Bound to another name, where patching harness.recovery does not reach it.
    verdict = ch06.check_wait_before_retry(slip)
    assert not verdict and "`asked_for` is the package's answer" in str(verdict)


def test_a_local_variable_named_like_the_packages_function_is_fine() -> None:
    def answer(error: anthropic.APIError, attempt: int, now: float, jitter: float) -> float:
        retry_after = solutions.wait_before_retry(error, attempt, now, jitter)
        return retry_after  # type: ignore[no-any-return]

    assert ch06.check_wait_before_retry(answer)


def test_calling_the_policys_backoff_is_refused() -> None:
    def slip(error: anthropic.APIError, attempt: int, now: float, jitter: float) -> float:
        if "retry-after" in headers(error):
            return solutions.wait_before_retry(error, attempt, now, jitter)  # type: ignore[no-any-return]
        return RecoveryPolicy(jitter=0).backoff(attempt, __import__("random").Random(0)) * (
            1 + jitter
        )

    verdict = ch06.check_wait_before_retry(slip)
    assert not verdict and "your own" in str(verdict)


# -- exercise 2: worth another try? --------------------------------------------------------------


def status(error: anthropic.APIError) -> int | None:
    return error.status_code if isinstance(error, anthropic.APIStatusError) else None


def test_retrying_every_400_is_rejected() -> None:
    def slip(error: anthropic.APIError) -> bool:
        return status(error) not in (401, 403, 404, 413, 422)

    verdict = ch06.check_should_retry(slip)
    assert not verdict and "400" in str(verdict)


def test_skipping_409_is_rejected() -> None:
    def slip(error: anthropic.APIError) -> bool:
        code = status(error)
        if code is None:
            return True
        should = headers(error).get("x-should-retry")
        if should in ("true", "false"):
            return should == "true"
        return code in (408, 429) or code >= 500

    verdict = ch06.check_should_retry(slip)
    assert not verdict and "409" in str(verdict)


def test_ignoring_x_should_retry_is_rejected() -> None:
    def slip(error: anthropic.APIError) -> bool:
        code = status(error)
        return code is None or code in (408, 409, 429) or code >= 500

    verdict = ch06.check_should_retry(slip)
    assert not verdict and "x-should-retry" in str(verdict)


def test_reading_the_message_for_words_is_rejected() -> None:
    def slip(error: anthropic.APIError) -> bool:
        text = str(error).lower()
        words = ("overloaded", "rate limit", "timeout", "timed out", "server", "connection")
        return any(word in text for word in words)

    verdict = ch06.check_should_retry(slip)
    assert not verdict


def test_retrying_prompt_too_long_is_rejected() -> None:
    def slip(error: anthropic.APIError) -> bool:
        if "prompt is too long" in str(error):
            return True
        return solutions.should_retry(error)  # type: ignore[no-any-return]

    verdict = ch06.check_should_retry(slip)
    assert not verdict and "compaction" in str(verdict)


def test_calling_classify_is_refused() -> None:
    def slip(error: anthropic.APIError) -> bool:
        return recovery.classify(error).retryable

    verdict = ch06.check_should_retry(slip)
    assert not verdict and "classify" in str(verdict)


def test_a_retry_rule_that_reads_too_long_in_the_message_is_rejected() -> None:
    """The chapter's lesson: never classify by the message's words. "too long" is in a 504's
    message as well as in a prompt too long's."""

    def slip(error: anthropic.APIError) -> bool:
        if "too long" in str(error):
            return False
        return solutions.should_retry(error)  # type: ignore[no-any-return]

    verdict = ch06.check_should_retry(slip)
    assert not verdict and "504" in str(verdict)


def test_no_prompt_too_long_guard_when_x_should_retry_is_true_is_rejected() -> None:
    def slip(error: anthropic.APIError) -> bool:
        if isinstance(error, anthropic.APIConnectionError):
            return True
        if not isinstance(error, anthropic.APIStatusError):
            return False
        should = headers(error).get("x-should-retry")
        if should in ("true", "false"):
            return should == "true"
        if "prompt is too long" in str(error.message):
            return False
        return error.status_code in (408, 409, 429) or error.status_code >= 500

    verdict = ch06.check_should_retry(slip)
    assert not verdict and "prompt too long with x-should-retry: true" in str(verdict)


def test_an_x_should_retry_value_neither_true_nor_false_read_as_false_is_rejected() -> None:
    def slip(error: anthropic.APIError) -> bool:
        should = headers(error).get("x-should-retry")
        if should is not None and "prompt is too long" not in str(error):
            return should == "true"
        return solutions.should_retry(error)  # type: ignore[no-any-return]

    verdict = ch06.check_should_retry(slip)
    assert not verdict and "'maybe'" in str(verdict)


def test_an_x_should_retry_value_neither_true_nor_false_read_as_true_is_rejected() -> None:
    def slip(error: anthropic.APIError) -> bool:
        should = headers(error).get("x-should-retry")
        if should is not None and "prompt is too long" not in str(error):
            return should != "false"
        return solutions.should_retry(error)  # type: ignore[no-any-return]

    verdict = ch06.check_should_retry(slip)
    assert not verdict and "x-should-retry: '1'" in str(verdict)


def test_a_rule_that_crashes_on_an_error_it_does_not_know_names_the_case() -> None:
    def slip(error: anthropic.APIError) -> bool:
        if isinstance(error, anthropic.APIConnectionError):
            return True
        return error.status_code > 0 and solutions.should_retry(error)  # type: ignore[attr-defined,no-any-return]

    verdict = ch06.check_should_retry(slip)
    assert not verdict and "anthropic.APIError of no kind above your code raised" in str(verdict)


def test_a_negative_wait_for_a_past_retry_after_date_is_rejected() -> None:
    def slip(error: anthropic.APIError, attempt: int, now: float, jitter: float) -> float:
        asked = headers(error)
        if "retry-after-ms" in asked:
            return max(0.0, float(asked["retry-after-ms"]) / 1000)
        if "retry-after" in asked:
            return seconds(asked["retry-after"], now)  # a past date gives a negative wait
        return min(0.5 * 2 ** (attempt - 1), 32) * (1 + jitter)

    verdict = ch06.check_wait_before_retry(slip)
    assert not verdict and "in the past" in str(verdict) and "-30 s" in str(verdict)


def test_a_wait_floored_at_one_second_is_rejected() -> None:
    def slip(error: anthropic.APIError, attempt: int, now: float, jitter: float) -> float:
        return max(1.0, solutions.wait_before_retry(error, attempt, now, jitter))  # type: ignore[no-any-return]

    verdict = ch06.check_wait_before_retry(slip)
    assert not verdict and "0.5 s" in str(verdict)


def test_the_recipes_are_given_only_on_request() -> None:
    assert "parsedate_to_datetime" in str(ch06.hint(1))
    assert "x-should-retry" in str(ch06.hint(2))


# -- mutation tests ------------------------------------------------------------------------------

EQUIVALENT_WAIT: dict[str, str] = {}  # every mutant of wait_before_retry is caught by a case
EQUIVALENT_RETRY: dict[str, str] = {}  # every mutant of should_retry is caught by a case


def test_every_mutant_of_the_wait_solution_is_caught() -> None:
    assert_exercise_caught("ch06", 1, EQUIVALENT_WAIT)


def test_every_mutant_of_the_retry_solution_is_caught() -> None:
    assert_exercise_caught("ch06", 2, EQUIVALENT_RETRY)
