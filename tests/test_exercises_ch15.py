"""Chapter 15's exercise checks: the solutions pass, the stubs and plausible slips do not."""

from __future__ import annotations

import codecs
import json
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from harness.exercises import ch15
from harness.exercises.ch15_logs import generated_reads, read_cases, reference_read
from harness.exercises.ch15_spans import (
    COST,
    OPERATION,
    PURPOSE,
    Call,
    chat_ids,
    generated_traces,
    reference_spikes,
    spike_cases,
    steady,
    trace,
)
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch15")
ROOT = Path(__file__).resolve().parent.parent


def stub(*args: object) -> None:
    raise NotImplementedError


def read(log: bytes, offset: int, limit: int, finished: bool = False) -> tuple[str, int]:
    """The solution, typed: what the slips below start from."""
    out: tuple[str, int] = solutions.read_new(log, offset, limit, finished)
    return out


def spikes(spans: list[dict[str, Any]], factor: float = 2.0) -> list[tuple[str, str]]:
    """The solution, typed."""
    out: list[tuple[str, str]] = solutions.cost_spikes(spans, factor)
    return out


def test_the_solutions_pass() -> None:
    assert ch15.check_read_new(solutions.read_new)
    assert ch15.check_cost_spikes(solutions.cost_spikes)


def test_the_stubs_are_told_not_yet_with_a_hint() -> None:
    for verdict in (ch15.check_read_new(stub), ch15.check_cost_spikes(stub)):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)


def test_the_stubs_hear_the_first_case_and_where_the_recipe_is() -> None:
    verdicts = (ch15.check_read_new(stub), ch15.check_cost_spikes(stub))
    for n, verdict in enumerate(verdicts, start=1):
        assert "first case: " in str(verdict)
        assert f"stuck? ch15.hint({n}) shows one way" in str(verdict)


EQUIVALENT_READ: dict[str, str] = {}  # mutants of read_new that behave like it, and why
EQUIVALENT_SPIKES: dict[str, str] = {}


def test_every_mutant_of_the_reading_solution_is_caught() -> None:
    assert_exercise_caught("ch15", 1, EQUIVALENT_READ)


def test_every_mutant_of_the_spike_solution_is_caught() -> None:
    assert_exercise_caught("ch15", 2, EQUIVALENT_SPIKES)


def test_the_hints_and_first_cases_show_no_answer() -> None:
    """The hint says where to look; the recipe comes only from hint(n)."""
    for verdict, recipe in (
        (ch15.check_read_new(stub), ch15.hint(1).text),
        (ch15.check_cost_spikes(stub), ch15.hint(2).text),
    ):
        text = str(verdict)
        assert "getincrementaldecoder" not in text and "10**9" not in text
        assert not any(len(s) > 30 and s in text for s in re.split(r"(?<=[.;:])\s+", recipe))


# -- the cases themselves ------------------------------------------------------------------------


def test_the_first_cases_are_the_ones_the_stubs_hear() -> None:
    _, log, offset, limit, finished, want = read_cases()[0]
    assert (log, offset, limit, finished, want) == (
        b"collected 12 items\n",
        0,
        1000,
        False,
        ("collected 12 items\n", 19),
    )
    _, spans, factor, found = spike_cases()[0]
    assert factor is None and [reason for _, reason in found] == ["cache expired"]
    assert found[0][0] == chat_ids(spans)[3] and len(chat_ids(spans)) == 6


def test_the_reading_cases_agree_with_the_rules() -> None:
    for what, log, offset, limit, finished, want in read_cases():
        assert reference_read(log, offset, limit, finished) == want, what


def test_the_spike_cases_agree_with_the_rules() -> None:
    for what, spans, factor, want in spike_cases():
        assert reference_spikes(spans, 2.0 if factor is None else factor) == want, what


def test_the_cases_cover_every_reason_and_the_generated_ones_too() -> None:
    reasons = {reason for *_, want in spike_cases() for _, reason in want}
    assert reasons == {"cache expired", "prefix changed", "new input"}
    generated = {
        reason
        for spans, factor in generated_traces()
        for _, reason in reference_spikes(spans, 2.0 if factor is None else factor)
    }
    assert generated == reasons
    held = [
        (log, offset)
        for session in generated_reads()
        for log, _, _ in session
        for offset in [0]
        if reference_read(log, offset, 1000)[1] < len(log)
    ]
    assert len(held) >= 10  # many generated reads end inside a character


@given(st.text(), st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_reading_a_growing_log_gives_back_the_text_whole(text: str, cuts: list[int]) -> None:
    """However a UTF-8 log is cut while it is written, the reads put together are its text,
    with no character split (no U+FFFD) and no byte read twice."""
    full = text.encode()
    offset, pieces = 0, []
    for cut in sorted(min(c, len(full)) for c in cuts):
        piece, offset = reference_read(full[:cut], offset, 10**9)
        pieces.append(piece)
        assert 0 <= offset <= cut
    piece, offset = reference_read(full, offset, 10**9, finished=True)
    assert "".join([*pieces, piece]) == text and offset == len(full)


@given(st.binary(max_size=60), st.integers(min_value=0, max_value=60))
def test_reading_any_bytes_never_fails_and_never_goes_back(data: bytes, cut: int) -> None:
    """Bytes that are not UTF-8 come back replaced; a finished log is read to its end."""
    text, offset = reference_read(data[:cut], 0, 10**9)
    assert offset <= min(cut, len(data)) and len(data[:cut]) - offset <= 3
    rest, end = reference_read(data, offset, 10**9, finished=True)
    assert end == len(data)
    assert text + rest == data.decode("utf-8", errors="replace")


def test_a_trace_holds_what_a_real_one_holds() -> None:
    """Around each model call: its turn, a tool call, the run; failed attempts without usage."""
    spans = trace([Call(read=0, written=3000), Call(read=3000, written=400, failed_first=True)])
    names = [s["name"] for s in spans]
    assert names.count("invoke_agent harness") == 1 and "turn 2" in names
    assert names.count("chat claude-sonnet-5-5") == 3 and "execute_tool bash" in names
    failed = [s for s in spans if "error.type" in s["attributes"]]
    assert len(failed) == 1 and COST not in failed[0]["attributes"]
    for span in spans:
        assert span["start_time"] <= span["end_time"]
    assert [s["end_time"] for s in spans] == sorted(s["end_time"] for s in spans)


def test_the_generated_traces_have_side_requests_retries_and_shuffles() -> None:
    traces = [spans for spans, _ in generated_traces()]
    assert any(any(s["attributes"].get(PURPOSE) == "compaction" for s in spans) for spans in traces)
    assert any(any("error.type" in s["attributes"] for s in spans) for spans in traces)
    shuffled = [
        spans
        for spans in traces
        if [s["end_time"] for s in spans] != sorted(s["end_time"] for s in spans)
    ]
    assert len(shuffled) >= 10


def test_the_chapter_states_how_many_cases_each_check_tries() -> None:
    path = ROOT / "chapters" / "15_background_traces_evals.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    text = " ".join(" ".join("".join(c["source"]).split()) for c in cells)
    reads = sum(len(session) for session in generated_reads())
    assert f"The check tries {len(read_cases())} reads" in text
    assert f"then {reads} reads in {len(generated_reads())} generated sessions" in text
    assert f"The check tries {len(spike_cases())} traces" in text
    assert f"then {len(generated_traces())} generated ones" in text


# -- calling the package is refused -------------------------------------------------------------


def test_calling_the_exercises_own_reference_is_refused() -> None:
    from harness.exercises import ch15_logs, ch15_spans

    def reader(log: bytes, offset: int, limit: int, finished: bool = False) -> Any:
        return ch15_logs.reference_read(log, offset, limit, finished)

    verdict = ch15.check_read_new(reader)
    assert not verdict and "decode the new bytes yourself" in str(verdict)

    def shortcut(spans: list[dict[str, Any]], factor: float = 2.0) -> Any:
        return ch15_spans.reference_spikes(spans, factor)

    verdict = ch15.check_cost_spikes(shortcut)
    assert not verdict and "read the spans yourself" in str(verdict)


# -- exercise 1: read a background shell's new output --------------------------------------------


def test_decoding_every_byte_read_as_claude_codes_reader_does_is_rejected() -> None:
    """buffer.toString('utf8') on the range read, and the offset moved past all of it."""

    def slip(log: bytes, offset: int, limit: int, finished: bool = False) -> tuple[str, int]:
        text, _ = read(log, offset, limit, True)
        return text, len(log)

    verdict = ch15.check_read_new(slip)
    assert not verdict and "ends inside é" in str(verdict)


def test_holding_back_every_trailing_continuation_byte_is_rejected() -> None:
    def slip(log: bytes, offset: int, limit: int, finished: bool = False) -> tuple[str, int]:
        end = len(log)
        while not finished and end > offset and 0x80 <= log[end - 1] < 0xC0:
            end -= 1
        if not finished and end > offset and log[end - 1] >= 0xC0:
            end -= 1
        return read(log[:end], offset, limit, True)

    assert not ch15.check_read_new(slip)


def test_slicing_the_last_limit_characters_with_a_negative_index_is_rejected() -> None:
    def slip(log: bytes, offset: int, limit: int, finished: bool = False) -> tuple[str, int]:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = decoder.decode(log[offset:], final=finished)
        if len(text) > limit:
            text = f"[{len(text) - limit} characters omitted]\n" + text[-limit:]
        return text, len(log) - len(decoder.getstate()[0])

    verdict = ch15.check_read_new(slip)
    assert not verdict and "a limit of 0" in str(verdict)


def test_counting_the_limit_in_bytes_is_rejected() -> None:
    def slip(log: bytes, offset: int, limit: int, finished: bool = False) -> tuple[str, int]:
        text, end = read(log, offset, 10**9, finished)
        if len(text.encode()) > limit:
            return read(log, offset, max(0, limit - (len(text.encode()) - len(text))), finished)
        return text, end

    verdict = ch15.check_read_new(slip)
    assert not verdict and "not bytes" in str(verdict)


def test_keeping_the_oldest_characters_is_rejected() -> None:
    def slip(log: bytes, offset: int, limit: int, finished: bool = False) -> tuple[str, int]:
        text, end = read(log, offset, 10**9, finished)
        if len(text) > limit:
            text = f"[{len(text) - limit} characters omitted]\n" + text[:limit]
        return text, end

    verdict = ch15.check_read_new(slip)
    assert not verdict and "the limit" in str(verdict)


def test_ignoring_that_the_command_finished_is_rejected() -> None:
    def slip(log: bytes, offset: int, limit: int, finished: bool = False) -> tuple[str, int]:
        return read(log, offset, limit)

    verdict = ch15.check_read_new(slip)
    assert not verdict and "finished" in str(verdict)


def test_dropping_invalid_bytes_instead_of_replacing_them_is_rejected() -> None:
    def slip(log: bytes, offset: int, limit: int, finished: bool = False) -> tuple[str, int]:
        text, end = read(log, offset, 10**9, finished)
        return read(text.replace("\ufffd", "").encode(), 0, limit)[0], end

    verdict = ch15.check_read_new(slip)
    assert not verdict and "\ufffd" in str(verdict)


def test_an_offset_in_characters_is_rejected() -> None:
    def slip(log: bytes, offset: int, limit: int, finished: bool = False) -> tuple[str, int]:
        text, end = read(log, offset, limit, finished)
        return text, len(log[:end].decode(errors="replace"))

    assert not ch15.check_read_new(slip)


def test_strange_reads_come_back_as_not_yet() -> None:
    odds: list[Any] = [None, "text", ("text",), ("text", "19"), (b"text", 19), ("text", True)]
    for odd in odds:

        def answering(*args: Any, odd: Any = odd) -> Any:
            return odd

        verdict = ch15.check_read_new(answering)
        assert not verdict and "return (text, next_offset)" in str(verdict)


# -- exercise 2: where a session's cost jumped, and why -----------------------------------------


def _unsorted(spans: list[dict[str, Any]], factor: float = 2.0) -> list[tuple[str, str]]:
    """The solution without its sort: the model calls in the order the spans came."""
    calls = [
        s
        for s in spans
        if s["attributes"].get(OPERATION) == "chat"
        and COST in s["attributes"]
        and s["attributes"].get(PURPOSE) == "turn"
    ]
    found = []
    for before, call in pairwise(calls):
        if call["attributes"][COST] > factor * before["attributes"][COST]:
            kept = {**call, "start_time": max(call["start_time"], before["end_time"])}
            found += spikes([before, kept], factor)
    return found


def test_taking_the_spans_in_the_order_they_came_is_rejected() -> None:
    verdict = ch15.check_cost_spikes(_unsorted)
    assert not verdict and "order an exporter sent them" in str(verdict)


def test_a_failed_attempt_counted_at_no_cost_is_rejected() -> None:
    def slip(spans: list[dict[str, Any]], factor: float = 2.0) -> list[tuple[str, str]]:
        for span in spans:
            if span["attributes"].get(OPERATION) == "chat" and COST not in span["attributes"]:
                span["attributes"].update(
                    {
                        COST: 0.0,
                        "gen_ai.usage.input_tokens": 0,
                        "gen_ai.usage.cache_read.input_tokens": 0,
                    }
                )
        return spikes(spans, factor)

    verdict = ch15.check_cost_spikes(slip)
    assert not verdict and "failed once" in str(verdict)


def test_a_compactions_summary_counted_as_a_call_of_the_conversation_is_rejected() -> None:
    def slip(spans: list[dict[str, Any]], factor: float = 2.0) -> list[tuple[str, str]]:
        for span in spans:
            span["attributes"][PURPOSE] = "turn"
        return spikes(spans, factor)

    verdict = ch15.check_cost_spikes(slip)
    assert not verdict and "compaction" in str(verdict)


def test_a_lifetime_in_seconds_against_nanoseconds_is_rejected() -> None:
    def slip(spans: list[dict[str, Any]], factor: float = 2.0) -> list[tuple[str, str]]:
        in_seconds = [
            {**s, "start_time": s["start_time"] * 10**9, "end_time": s["end_time"] * 10**9}
            for s in spans
        ]
        return spikes(in_seconds, factor)  # 300 * 10**9 read as 300 nanoseconds

    verdict = ch15.check_cost_spikes(slip)
    assert not verdict and "30 s after" in str(verdict)


def test_comparing_with_what_the_call_before_read_is_rejected() -> None:
    """The call before read part of its prompt and wrote the rest: all of it is cached now."""

    def slip(spans: list[dict[str, Any]], factor: float = 2.0) -> list[tuple[str, str]]:
        reads = {
            s["span_id"]: s["attributes"].get("gen_ai.usage.cache_read.input_tokens", 0)
            for s in spans
        }
        changed = [
            {
                **s,
                "attributes": {
                    **s["attributes"],
                    "gen_ai.usage.input_tokens": reads[s["span_id"]],
                },
            }
            for s in spans
        ]
        return spikes(changed, factor)

    assert not ch15.check_cost_spikes(slip)


def test_a_spike_at_exactly_the_factor_is_rejected() -> None:
    def slip(spans: list[dict[str, Any]], factor: float = 2.0) -> list[tuple[str, str]]:
        return spikes(spans, factor * (1 - 1e-12))

    verdict = ch15.check_cost_spikes(slip)
    assert not verdict and "exactly twice" in str(verdict)


def test_a_not_yet_shows_the_calls_of_the_trace() -> None:
    def slip(spans: list[dict[str, Any]], factor: float = 2.0) -> list[tuple[str, str]]:
        return []

    text = str(ch15.check_cost_spikes(slip))
    assert "the conversation's model calls" in text and "cache read 0" in text
    assert "400 s after the call before ended" in text and "0000000000000004: input 3,400" in text


def test_strange_spike_lists_come_back_as_not_yet() -> None:
    odds: list[Any] = [None, "cache expired", [("a",)], [(1, "new input")], {("a", "b")}]
    for odd in odds:

        def answering(*args: Any, odd: Any = odd) -> Any:
            return odd

        verdict = ch15.check_cost_spikes(answering)
        assert not verdict and "(span_id, reason) pairs" in str(verdict)


def test_changing_the_spans_given_does_not_fool_the_check() -> None:
    def slip(spans: list[dict[str, Any]], factor: float = 2.0) -> list[tuple[str, str]]:
        found = spikes(spans, factor)
        spans.clear()
        return found

    assert ch15.check_cost_spikes(slip)


def test_a_steady_session_has_no_spike() -> None:
    assert reference_spikes(trace(steady(20))) == []


def test_reading_through_the_background_shells_log_reader_is_refused(tmp_path: Path) -> None:
    from harness.background.logs import LogReader

    def shortcut(log: bytes, offset: int, limit: int, finished: bool = False) -> Any:
        path = tmp_path / "log"
        path.write_bytes(log)
        reader = LogReader(path)
        reader.offset = offset
        return reader.read(final=finished), len(log)

    verdict = ch15.check_read_new(shortcut)
    assert not verdict and "decode the new bytes yourself" in str(verdict)
