"""Chapters 04-07 run live against a local Messages API (see ``test_live_chapters_00_03.py``),
and two failures a learner with a key can meet in a live cell, each told in a sentence.

The failures: a gateway that forwards ``/v1/messages`` and nothing else (chapter 04 counts
tokens), and a model that answers the compaction request with a tool call instead of a summary
(chapter 05). Each is the server changed after the chapter's live run, and the live cell run
again in the same kernel, with no error output: the live cell says what happened instead of
raising. (Only the live cell talks to the server, which :func:`~live_chapters.live_run`
checks, so no other cell could meet the failure; a second run of the whole chapter would show
nothing more.)
"""

from __future__ import annotations

import functools
import re

import pytest

from tests.live_chapters import (
    EVIDENCE,
    Change,
    Executed,
    check_evidence,
    live_run,
    shown,
    stand_in,
)
from tests.local_api import LocalMessagesAPI


def no_token_counting(server: LocalMessagesAPI) -> None:
    server.count_tokens = False


def no_summaries(server: LocalMessagesAPI) -> None:
    server.model = stand_in(summaries=False)


FAILURES: dict[str, dict[str, Change]] = {
    "04": {"no token counting": no_token_counting},
    "05": {"no summary": no_summaries},
}


@functools.cache
def live(number: str) -> tuple[LocalMessagesAPI, Executed]:
    """Chapter ``number`` run live once (and its live cell again for each of its failures)."""
    server = LocalMessagesAPI(stand_in())
    return server, live_run(number, server, FAILURES.get(number))


@pytest.mark.parametrize("number", [n for n in sorted(EVIDENCE) if "04" <= n <= "07"])
def test_the_chapter_runs_live_and_its_live_cell_shows_its_mechanism(number: str) -> None:
    check_evidence(number, *live(number))


def test_chapter_04_says_so_when_the_server_cannot_count_tokens() -> None:
    _, executed = live("04")
    output = shown(executed.again["no token counting"])

    assert re.search(r"has no token-counting endpoint \(.*answered 404\)", output), output
    assert "counted" not in output


def test_chapter_05_says_so_when_the_model_writes_no_summary() -> None:
    _, executed = live("05")
    output = shown(executed.again["no summary"])

    assert "No compaction: the model returned no summary text." in output
    assert "summary request" in output  # what the request cost is still shown
