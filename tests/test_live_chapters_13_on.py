"""Chapters 13 on run live against a local Messages API (see ``test_live_chapters_00_03.py``).

A file of their own, so that the suite's two workers share the live chapters evenly."""

from __future__ import annotations

import pytest

from tests.live_chapters import EVIDENCE, check_live_chapter


@pytest.mark.parametrize("number", [n for n in sorted(EVIDENCE) if n >= "13"])
def test_the_chapter_runs_live_and_its_live_cell_shows_its_mechanism(number: str) -> None:
    check_live_chapter(number)
