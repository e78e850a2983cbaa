"""Chapter 08's exercises: which branch a resume follows, and answering cut-off calls.

Exercise 1 checks the learner's ``latest_leaf_path`` on hand-built transcripts (a rewind,
progress entries inside the chain and at its end, a compact boundary, a sidechain) against
the chain :func:`harness.transcript.from_entries` follows. Exercise 2 checks
``answer_unresolved`` on conversations that end on tool calls a crash cut off: the result
must be a conversation the API accepts, keep every message, and say each call was
interrupted. Both refuse code that calls the package's answer.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from harness import messages as m
from harness import resume as resume_module
from harness import transcript
from harness.exercises import NotYet, exercise, forbid, refers_to
from harness.resume import resuming as resume_resuming
from harness.transcript import Entry, from_entries, repair
from harness.transcript import loading as transcript_loading

# -- exercise 1: the path a resume follows ------------------------------------------------------

_PATH_HINT = (
    "by_uuid = {e.uuid: e for e in entries if e.uuid}; leaf = the last entry whose type is "
    "'user' or 'assistant' and that is not on a sidechain (e.is_sidechain); then walk: "
    "path.append(leaf.uuid), leaf = by_uuid.get(leaf.parent_uuid), until the parent is None "
    "or missing; return the path reversed."
)


def _entry(line: int, kind: str, uuid: str, parent: str | None, **extra: Any) -> Entry:
    data: dict[str, Any] = {"type": kind, "uuid": uuid or None, "parentUuid": parent, **extra}
    if kind in ("user", "assistant") and "message" not in extra:
        data["message"] = {"role": kind, "content": [{"type": "text", "text": uuid}]}
    return Entry.model_validate({**data, "line": line})


def _build(rows: list[tuple[str, str, str | None, dict[str, Any]]]) -> list[Entry]:
    return [_entry(i, kind, u, p, **x) for i, (kind, u, p, x) in enumerate(rows, 1)]


def fixtures() -> dict[str, list[Entry]]:
    """Small transcripts, each with the trap its name says."""
    return {
        "a straight chain": _build(
            [
                ("user", "u1", None, {}),
                ("assistant", "a1", "u1", {}),
                ("user", "u2", "a1", {}),
                ("assistant", "a2", "u2", {}),
            ]
        ),
        "a rewind (the old branch is longer)": _build(
            [
                ("user", "u1", None, {}),
                ("assistant", "a1", "u1", {}),
                ("user", "old2", "a1", {}),
                ("assistant", "old3", "old2", {}),
                ("user", "old4", "old3", {}),
                ("assistant", "old5", "old4", {}),
                ("user", "new2", "a1", {}),  # rewound to a1: a second child
                ("assistant", "new3", "new2", {}),
            ]
        ),
        "progress entries in the chain and at the end": _build(
            [
                ("user", "u1", None, {}),
                ("progress", "p1", "u1", {}),
                ("assistant", "a1", "p1", {}),
                ("user", "u2", "a1", {}),
                ("assistant", "a2", "u2", {}),
                ("progress", "p2", "a2", {}),  # a dead-end leaf, newer than every message
                ("file-history-snapshot", "", None, {}),
            ]
        ),
        "a compact boundary": _build(
            [
                ("user", "u1", None, {}),
                ("assistant", "a1", "u1", {}),
                (
                    "system",
                    "b1",
                    None,
                    {"subtype": "compact_boundary", "logicalParentUuid": "a1"},
                ),
                ("user", "s1", "b1", {"isCompactSummary": True}),
                ("assistant", "a2", "s1", {}),
            ]
        ),
        "a sidechain after the main chain": _build(
            [
                ("user", "u1", None, {}),
                ("assistant", "a1", "u1", {}),
                ("user", "u2", "a1", {}),
                ("assistant", "a2", "u2", {}),
                ("user", "s1", None, {"isSidechain": True, "agentId": "x"}),
                ("assistant", "s2", "s1", {"isSidechain": True, "agentId": "x"}),
            ]
        ),
    }


def _expected(entries: list[Entry]) -> list[str]:
    return [str(e.uuid) for e in from_entries(list(entries)).chain]


@exercise("latest_leaf_path", _PATH_HINT)
def check_latest_leaf_path(latest_leaf_path: Callable[[list[Entry]], Any]) -> str:
    why = "latest_leaf_path uses the package's loader; walk the parentUuid links yourself."
    if refers_to(latest_leaf_path, from_entries) or refers_to(latest_leaf_path, transcript.load):
        raise NotYet(why)
    cases = fixtures()
    expected = {name: _expected(entries) for name, entries in cases.items()}
    with (
        forbid(transcript, "from_entries", why),
        forbid(transcript_loading, "from_entries", why),
        forbid(transcript_loading, "_walk", why),
    ):
        for name, entries in cases.items():
            got = latest_leaf_path(list(entries))
            if isinstance(got, tuple):
                got = list(got)
            if not isinstance(got, list) or not all(isinstance(u, str) for u in got):
                raise NotYet(f"for {name}, you returned {got!r}; return a list of uuids.")
            want = expected[name]
            if got != want:
                raise NotYet(f"for {name}, the path is {want}; yours is {got}.")
    return (
        f"{len(cases)} transcripts (a rewind, progress entries, a boundary, a sidechain): your "
        "walk follows the same path as the loader."
    )


# -- exercise 2: answer the calls a crash cut off -----------------------------------------------

_ANSWER_HINT = (
    "if the last message is an assistant message with tool_use blocks (m.tool_uses), return "
    "messages + [m.user([m.tool_result(u['id'], INTERRUPTED, is_error=True) for u in uses])]; "
    "otherwise return the messages as they are."
)


def _cut_off(calls: int, *, before: int = 1) -> list[m.MessageDict]:
    out: list[m.MessageDict] = [m.user("Release version 2.")]
    n = 0
    for _ in range(before):
        n += 1
        out.append(m.assistant([m.text("Next step."), m.tool_use(f"toolu_{n:02d}", "do_step", {})]))
        out.append(m.user([m.tool_result(f"toolu_{n:02d}", "done")]))
    uses = [m.tool_use(f"toolu_{n + k:02d}", "do_step", {"name": f"s{k}"}) for k in range(1, 4)]
    out.append(m.assistant([m.text("In parallel:"), *uses[:calls]]))
    return out


def _cases() -> list[tuple[str, list[m.MessageDict]]]:
    finished = _cut_off(1)
    finished.append(m.user([m.tool_result("toolu_02", "done")]))
    finished.append(m.assistant("Released."))
    return [
        ("one call cut off", _cut_off(1)),
        ("three parallel calls cut off", _cut_off(3)),
        ("cut off on the first reply", _cut_off(2, before=0)),
        ("a finished conversation (nothing to answer)", finished),
        ("a conversation that ends on your prompt", [m.user("Hello.")]),
    ]


@exercise("answer_unresolved", _ANSWER_HINT)
def check_answer_unresolved(answer_unresolved: Callable[[list[m.MessageDict]], Any]) -> str:
    why = "answer_unresolved calls the package's repair; answer the calls yourself."
    if refers_to(answer_unresolved, repair) or refers_to(answer_unresolved, resume_module.resume):
        raise NotYet(why)
    with forbid(transcript, "repair", why), forbid(resume_resuming, "repair", why):
        for name, messages in _cases():
            given = copy.deepcopy(messages)
            got = answer_unresolved(given)
            if given != messages:
                raise NotYet(f"{name}: your function changed the messages it was given.")
            if not isinstance(got, list):
                raise NotYet(f"{name}: you returned {type(got).__name__}; return a list.")
            if got[: len(messages)] != messages:
                raise NotYet(
                    f"{name}: the first {len(messages)} messages must stay as they were "
                    "(the model asked for those calls: keep its message, answer them)."
                )
            uses = m.tool_uses(messages[-1]) if messages[-1]["role"] == "assistant" else []
            if not uses:
                if got != messages:
                    raise NotYet(f"{name}: nothing is unanswered, so nothing should be added.")
                continue
            if len(got) != len(messages) + 1:
                raise NotYet(f"{name}: add exactly one user message with the answers.")
            problems = m.validate(got)
            if problems:
                raise NotYet(f"{name}: the API would refuse it: {problems[0].detail}.")
            for result in m.tool_results(got[-1]):
                if result.get("is_error") is not True:
                    raise NotYet(
                        f"{name}: the answer to {result.get('tool_use_id')} does not say it "
                        "failed (is_error=True): the model would believe the step was done."
                    )
                if "interrupt" not in str(result.get("content", "")).lower():
                    raise NotYet(
                        f"{name}: the answer to {result.get('tool_use_id')} should say the call "
                        "was interrupted, so the model knows to check or run it again."
                    )
    return (
        f"{len(_cases())} conversations: every call a crash cut off is answered as interrupted "
        "(is_error), nothing else changes, and the API would accept each one."
    )


__all__ = ["check_answer_unresolved", "check_latest_leaf_path", "fixtures"]
