"""Every chapter runs live: with a key set, against a local Messages API, with no error.

Each chapter is executed top to bottom as a learner with ``ANTHROPIC_API_KEY`` set would run
it, with ``ANTHROPIC_BASE_URL`` pointing at ``tests/local_api.py`` on loopback (the SDK's
client, streaming, tool calls: the whole live path; see ``tests/live_chapters.py`` for the
model behind it). No cell may show an error or write to stderr, and each chapter's live cell
must show what its mechanism did, not just that it ran. Two more runs take the failures a
learner can meet: a gateway without token counting (chapter 04) and a model that writes no
summary (chapter 05) must each be told in a sentence.

The server runs on this machine, so this is part of the offline suite. Each chapter takes a
few seconds (a kernel of its own).
"""

from __future__ import annotations

import re

import pytest

from tests.live_chapters import Executed, run_chapter, stand_in
from tests.local_api import LocalMessagesAPI

# What each live cell must show: its mechanism at work, as the chapter says to expect.
EVIDENCE: dict[str, list[str]] = {
    "00": [r"An agent harness runs the loop", r"cost: \$0\.\d+"],
    "01": [r"✓ read_file → - fix the login bug", r"done after 3 model call\(s\)"],
    "02": [r"✓ read_file → 1 def total", r"🔒 bash: deny \(plan mode", r"app\.py: 7 lines"],
    "03": [r"request 1 wrote: [1-9]\d*", r"request 2 read: +[1-9]\d*"],
    "04": [r"call 72: estimated [\d,]+, counted [\d,]+", r"after microcompact: estimated"],
    "05": [r"Primary request and intent", r"put back: \['Amounts are Decimal"],
    "06": [r"reply cut at 300 output tokens: discarded, asking again with 2,000", r"out [3-9]\d\d"],
    "07": [r"# Session memory", r"ROUND_HALF_UP", r"fork call 1"],
    "08": [r"✓ read_file → 1 PRICE = 3", r"↺ resumed \w+: 4 messages", r"Twice 3 is 6"],
    "09": [r"⏸ awaiting approval", r"ledger: \['refund order-7 20', 'transfer bob 100'\]"],
    "10": [r"[1-9][\d,]* of [\d,]+ prompt tokens read from the cache\n(.|\n)*read from the cache"],
    "11": [r"✓ write_file → Wrote 1 line to NOTES\.md", r"NOTES\.md: app/tax\.py rounds"],
}


def live_run(number: str, server: LocalMessagesAPI) -> Executed:
    with server:
        executed = run_chapter(number, server.url)
    assert executed.errors() == [], f"chapter {number} live: " + "\n".join(executed.errors())
    assert server.failures == [], f"the stand-in model could not answer: {server.failures}"
    return executed


def live_output(executed: Executed) -> str:
    (cell,) = executed.live_cells()
    output = executed.text_of(cell)
    assert output.startswith("Live: "), f"the live cell did not go live:\n{output}"
    return output


@pytest.mark.parametrize("number", sorted(EVIDENCE))
def test_the_chapter_runs_live_and_its_live_cell_shows_its_mechanism(number: str) -> None:
    server = LocalMessagesAPI(stand_in())

    output = live_output(live_run(number, server))

    for pattern in EVIDENCE[number]:
        assert re.search(pattern, output), f"chapter {number}: no {pattern!r} in\n{output}"
    assert server.received, f"chapter {number} sent nothing to the server"
    turns = [r for r in server.received if r.path == "/v1/messages"]
    assert all(r.body.get("stream") is True for r in turns)  # the live model always streams


def test_chapter_04_says_so_when_the_server_cannot_count_tokens() -> None:
    server = LocalMessagesAPI(stand_in(), count_tokens=False)

    output = live_output(live_run("04", server))

    assert re.search(r"has no token-counting endpoint \(.*answered 404\)", output), output
    assert "counted" not in output


def test_chapter_05_says_so_when_the_model_writes_no_summary() -> None:
    server = LocalMessagesAPI(stand_in(summaries=False))

    output = live_output(live_run("05", server))

    assert "No compaction: the model returned no summary text." in output
    assert "summary request" in output  # what the request cost is still shown
