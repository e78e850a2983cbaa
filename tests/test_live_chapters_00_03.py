"""Chapters 00-03 run live: with a key set, against a local Messages API, with no error.

Each chapter is executed top to bottom as a learner with ``ANTHROPIC_API_KEY`` set would run
it, with ``ANTHROPIC_BASE_URL`` pointing at ``tests/local_api.py`` on loopback (the SDK's
client, streaming, tool calls: the whole live path). No cell may show an error or write to
stderr, and the chapter's live cell must show what its mechanism did
(``tests/live_chapters.py`` says what, and plays the model). The server runs on this
machine, so this is part of the offline suite. The chapters are split over four files (the
failures a live cell tells are in ``test_live_chapters_04_07.py``) so that the test workers
share them: each takes a few seconds, in a kernel of its own, and a file's tests stay on one
worker (``tests/conftest.py`` hands these files out first, being among the longest).
"""

from __future__ import annotations

import pytest

from tests.live_chapters import CHAPTERS, EVIDENCE, check_live_chapter


@pytest.mark.parametrize("number", [n for n in sorted(EVIDENCE) if "00" <= n <= "03"])
def test_the_chapter_runs_live_and_its_live_cell_shows_its_mechanism(number: str) -> None:
    check_live_chapter(number)


def test_every_chapter_says_what_its_live_cell_must_show() -> None:
    chapters = sorted(p.name[:2] for p in CHAPTERS.glob("[0-9][0-9]_*.ipynb"))

    assert sorted(EVIDENCE) == chapters
