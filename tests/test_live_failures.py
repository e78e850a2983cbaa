"""Two failures a learner with a key can meet in a live cell, each told in a sentence.

A gateway that forwards ``/v1/messages`` and nothing else (chapter 04 counts tokens), and a
model that answers the compaction request with a tool call instead of a summary (chapter
05). Each chapter runs live against ``tests/local_api.py`` as in ``test_live_chapters_*``,
with no error output: the live cell says what happened instead of raising.
"""

from __future__ import annotations

import re

from tests.live_chapters import live_output, stand_in
from tests.local_api import LocalMessagesAPI


def test_chapter_04_says_so_when_the_server_cannot_count_tokens() -> None:
    output = live_output("04", LocalMessagesAPI(stand_in(), count_tokens=False))

    assert re.search(r"has no token-counting endpoint \(.*answered 404\)", output), output
    assert "counted" not in output


def test_chapter_05_says_so_when_the_model_writes_no_summary() -> None:
    output = live_output("05", LocalMessagesAPI(stand_in(summaries=False)))

    assert "No compaction: the model returned no summary text." in output
    assert "summary request" in output  # what the request cost is still shown
