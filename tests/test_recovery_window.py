"""A reply cut at the end of the context window (``model_context_window_exceeded``) is never
an answer: recovery throws it away, compacts once, and asks again; cut twice, the run ends."""

from __future__ import annotations

from pathlib import Path

import tests.test_recovery as recovery_tests
from harness import messages as m
from harness.compaction.events import Compacted
from harness.events import TurnEnded
from harness.model import reply, tool_call
from harness.model.scripted import Step
from harness.recovery import GaveUp, PromptTooLong, RecoveryPolicy, WindowExceeded
from tests.small_tools import count

LONG_ANSWER = "z " * 14_000
"""About 7K tokens: under max_tokens (8K), over the room a nearly full 20K window leaves."""


def filling(tmp_path: Path, answers: list[Step], **kwargs: object) -> recovery_tests.Session:
    """Three ~4.7K-token tool results in a 20K window, then the given answers."""
    script: list[Step] = [reply(tool_calls=[tool_call("count", n=4_000)])] * 3
    return recovery_tests.Session(
        tmp_path, [*script, *answers], tools=[count], window=20_000, **kwargs
    )


def test_a_reply_cut_at_the_window_is_discarded_compacted_and_asked_again(
    tmp_path: Path,
) -> None:
    session = filling(tmp_path, [reply(LONG_ANSWER), reply(LONG_ANSWER)])
    session.run()
    (cut,) = session.of(WindowExceeded)
    assert cut.prompt_tokens + cut.output_tokens >= 19_000  # it ran to the window's end
    (compacted,) = session.of(Compacted)
    assert compacted.trigger == "reactive" and session.of(PromptTooLong) == []
    assert isinstance(session.last, TurnEnded) and session.last.stop_reason == "end_turn"
    answers = [msg for msg in session.agent.messages if m.text_of(msg).startswith("z z")]
    assert len(answers) == 1  # the cut one never joined the conversation
    outcomes = [a.outcome for a in session.recovery.attempts if a.purpose == "turn"]
    assert outcomes[-2:] == ["cut", "ok"]


def test_a_reply_cut_at_the_window_again_after_compacting_ends_the_run(tmp_path: Path) -> None:
    session = filling(tmp_path, [reply(LONG_ANSWER), reply("z " * 60_000)])
    session.run()
    assert len(session.of(WindowExceeded)) == 1 and len(session.of(Compacted)) == 1
    assert isinstance(session.last, GaveUp)
    assert session.last.kind == "model_context_window_exceeded"
    assert "cut again after a reactive compaction" in session.last.reason
    assert not any(isinstance(e, TurnEnded) for e in session.events)  # never an answer
    assert not [msg for msg in session.agent.messages if m.text_of(msg).startswith("z z")]
    # The second answer is cut at max_tokens first: escalated (64K of room), then cut at the
    # window's end, which ends the run.
    outcomes = [(a.purpose, a.outcome) for a in session.recovery.attempts]
    assert outcomes[-4:] == [
        ("turn", "cut"),
        ("compaction", "ok"),
        ("turn", "cut"),
        ("turn", "cut"),
    ]


def test_with_reactive_compaction_off_a_reply_cut_at_the_window_ends_the_run(
    tmp_path: Path,
) -> None:
    policy = RecoveryPolicy(reactive_compact=False)
    session = filling(tmp_path, [reply(LONG_ANSWER)], policy=policy)
    session.run()
    assert session.of(Compacted) == [] and session.of(WindowExceeded) == []
    assert isinstance(session.last, GaveUp) and "reactive compaction is off" in session.last.reason
    assert "end of the context window" in str(session.last)
