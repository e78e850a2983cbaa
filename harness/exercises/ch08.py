"""Chapter 08's exercises: which branch a resume follows, and answering cut-off calls.

Exercise 1 checks the learner's ``latest_leaf_path`` on hand-built transcripts (a rewind,
progress entries inside the chain and at its end, a compact boundary, a sidechain, a crash
that ends on the user's prompt, a lost line, no message at all) against the chain
:func:`harness.transcript.from_entries` follows; where a parent is missing, a walk that stops
there passes too. Exercise 2 checks ``answer_unresolved`` on conversations that end on tool
calls a crash cut off, and on some that do not: the result must be a conversation the API
accepts, keep every message, and say each call was interrupted. Both refuse code that calls
the package's answer. ``hint(n)`` gives one way to write exercise ``n``, on request only.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from harness import messages as m
from harness import resume as resume_module
from harness import transcript
from harness.exercises import NotYet, exercise, forbid, hints, refers_to
from harness.resume import resuming as resume_resuming
from harness.transcript import Entry, from_entries, repair
from harness.transcript import loading as transcript_loading

# -- exercise 1: the path a resume follows ------------------------------------------------------

_PATH_HINT = (
    "a resume follows the conversation back from its newest message; ask which entries count "
    "as that message (and which do not), which entries are links on the way back, and where "
    "the way back ends. The chapter's section *The chain as a graph* draws all of it."
)
_PATH_FIRST = (
    "latest_leaf_path(a straight chain u1 → a1 → u2 → a2) should be ['u1', 'a1', 'u2', 'a2']: "
    "the newest message is a2, and its parents lead back to the root u1."
)
_PATH_RECIPE = (
    "by_uuid = {e.uuid: e for e in entries if e.uuid}; the leaf is the last entry whose type "
    "is 'user' or 'assistant' and that is not on a sidechain (e.is_sidechain); if there is "
    "none, return []. Then walk: path.append(leaf.uuid), leaf = by_uuid.get(leaf.parent_uuid), "
    "until the parent is None or not in by_uuid (a lost line: stop there); return the path "
    "reversed (path[::-1])."
)

STRAIGHT = "a straight chain"
REWIND = "a rewind (the old branch is longer)"
PROGRESS = "progress entries in the chain and at the end"
BOUNDARY = "a compact boundary"
SIDECHAIN = "a sidechain after the main chain"
PROMPT = "a crash during a model call (it ends on your prompt)"
LOST = "a lost line (a parent that is not in the file)"
EMPTY = "a transcript with no message yet"

_NUDGES = {
    STRAIGHT: "walk from the newest message back through each parent, then give the path "
    "oldest first.",
    REWIND: "a rewind gives an old entry a second child; the branch to follow is the one that "
    "holds the newest message, whatever its length.",
    PROGRESS: "a progress entry is a link of the chain (it has a uuid and a parent), but the "
    "conversation ends at the newest message, which is not always the newest entry.",
    BOUNDARY: "a compact boundary has no parent: the walk ends there, and the boundary is on "
    "the path.",
    SIDECHAIN: "entries on a sidechain belong to a subagent, not to the main conversation.",
    PROMPT: "a crash while the model was thinking leaves your prompt as the newest message: a "
    "user entry is a message too, and it is where the conversation to resume ends.",
    LOST: "a line can be lost (a crash, a hand edit): a parent_uuid may name an entry that is "
    "not in the file. Your walk must not fail there: stop at that entry, or go on from the "
    "entry written before it, as the loader does.",
    EMPTY: "a transcript can hold no message yet (only entries without a place in the chain): "
    "then there is no path to follow.",
}


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
        STRAIGHT: _build(
            [
                ("user", "u1", None, {}),
                ("assistant", "a1", "u1", {}),
                ("user", "u2", "a1", {}),
                ("assistant", "a2", "u2", {}),
            ]
        ),
        REWIND: _build(
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
        PROGRESS: _build(
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
        BOUNDARY: _build(
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
        SIDECHAIN: _build(
            [
                ("user", "u1", None, {}),
                ("assistant", "a1", "u1", {}),
                ("user", "u2", "a1", {}),
                ("assistant", "a2", "u2", {}),
                ("user", "s1", None, {"isSidechain": True, "agentId": "x"}),
                ("assistant", "s2", "s1", {"isSidechain": True, "agentId": "x"}),
            ]
        ),
        PROMPT: _build(
            [
                ("user", "u1", None, {}),
                ("assistant", "a1", "u1", {}),
                ("user", "u2", "a1", {}),
                ("assistant", "a2", "u2", {}),
                ("user", "u3", "a2", {}),  # the prompt was written; the reply never came
                ("file-history-snapshot", "", None, {}),
            ]
        ),
        LOST: _build(
            [
                ("user", "u1", None, {}),
                ("assistant", "a1", "u1", {}),
                # the line of u2, a1's child, was lost
                ("assistant", "a2", "u2", {}),
                ("user", "u3", "a2", {}),
                ("assistant", "a3", "u3", {}),
            ]
        ),
        EMPTY: _build([("file-history-snapshot", "", None, {}), ("summary", "", None, {})]),
    }


def accepted(name: str, entries: list[Entry]) -> list[list[str]]:
    """The paths the check takes for a fixture: the loader's, and for a lost line also the
    walk that stops at the entry whose parent is missing (the loader goes on from the entry
    written before it, which the exercise does not ask for)."""
    loader = [str(e.uuid) for e in from_entries(list(entries)).chain]
    if name != LOST:
        return [loader]
    by_uuid: dict[str | None, Entry] = {e.uuid: e for e in entries if e.uuid}
    path: list[str] = []
    current: Entry | None = next(e for e in reversed(entries) if e.type in ("user", "assistant"))
    while current is not None and current.uuid is not None:
        path.append(current.uuid)
        current = by_uuid.get(current.parent_uuid)
    return [path[::-1], loader]


@exercise("latest_leaf_path", _PATH_HINT, first=_PATH_FIRST, number=1)
def check_latest_leaf_path(latest_leaf_path: Callable[[list[Entry]], Any]) -> str:
    why = "latest_leaf_path uses the package's loader; walk the parentUuid links yourself."
    if refers_to(latest_leaf_path, from_entries) or refers_to(latest_leaf_path, transcript.load):
        raise NotYet(why)
    cases = fixtures()
    expected = {name: accepted(name, entries) for name, entries in cases.items()}
    with (
        forbid(transcript, "from_entries", why),
        forbid(transcript_loading, "from_entries", why),
        forbid(transcript_loading, "_walk", why),
    ):
        for name, entries in cases.items():
            try:
                got = latest_leaf_path(list(entries))
            except (NotYet, NotImplementedError):
                raise
            except Exception as error:
                raise NotYet(
                    f"for {name}, your code raised {type(error).__name__}: {error}.", _NUDGES[name]
                ) from error
            if isinstance(got, tuple):
                got = list(got)
            if not isinstance(got, list) or not all(isinstance(u, str) for u in got):
                raise NotYet(f"for {name}, you returned {got!r}; return a list of uuids.")
            wants = expected[name]
            if got not in wants:
                said = " or ".join(str(w) for w in wants)
                raise NotYet(f"for {name}, the path is {said}; yours is {got}.", _NUDGES[name])
    return (
        f"{len(cases)} transcripts (a rewind, progress entries, a boundary, a sidechain, a crash "
        "that ends on a prompt, a lost line, no message yet): your walk follows the path a "
        "resume follows."
    )


# -- exercise 2: answer the calls a crash cut off -----------------------------------------------

_ANSWER_HINT = (
    "only the last message can hold calls a crash cut off. The API wants every call of a reply "
    "answered in the user message right after it, and the model must learn from each answer "
    "that its call failed because it was interrupted (chapter 08's section *fsck and repair*). "
    "Build a new list: the one you are given stays as it is."
)
_ANSWER_FIRST = (
    "answer_unresolved([your prompt, a reply calling toolu_01, its result, a reply calling "
    "toolu_02]) should return those four messages and one more, a user message that answers "
    "toolu_02 as an error (is_error=True) saying the call was interrupted."
)
_ANSWER_RECIPE = (
    "last = messages[-1] if messages else None; if last is None, or last['role'] != "
    "'assistant', or m.tool_uses(last) is empty, return list(messages). Otherwise answers = "
    "[m.tool_result(u['id'], INTERRUPTED, is_error=True) for u in m.tool_uses(last)] "
    "(INTERRUPTED is harness.loop.INTERRUPTED, Claude Code's own text) and return "
    "[*messages, m.user(answers)]."
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
    answered = list(finished)  # the results are written; the crash came before the reply
    finished.append(m.assistant("Released."))
    return [
        ("one call cut off", _cut_off(1)),
        ("three parallel calls cut off", _cut_off(3)),
        ("cut off on the first reply", _cut_off(2, before=0)),
        ("a finished conversation (nothing to answer)", finished),
        ("a conversation that ends on your prompt", [m.user("Hello.")]),
        ("a crash after the results were written (they are answered already)", answered),
        ("an empty conversation (nothing was written yet)", []),
    ]


@exercise("answer_unresolved", _ANSWER_HINT, first=_ANSWER_FIRST, number=2)
def check_answer_unresolved(answer_unresolved: Callable[[list[m.MessageDict]], Any]) -> str:
    why = "answer_unresolved calls the package's repair; answer the calls yourself."
    if refers_to(answer_unresolved, repair) or refers_to(answer_unresolved, resume_module.resume):
        raise NotYet(why)
    with forbid(transcript, "repair", why), forbid(resume_resuming, "repair", why):
        for name, messages in _cases():
            given = copy.deepcopy(messages)
            try:
                got = answer_unresolved(given)
            except (NotYet, NotImplementedError):
                raise
            except Exception as error:
                raise NotYet(
                    f"for {name}, your code raised {type(error).__name__}: {error}."
                ) from error
            if given != messages:
                raise NotYet(f"{name}: your function changed the messages it was given.")
            if not isinstance(got, list):
                raise NotYet(f"{name}: you returned {type(got).__name__}; return a list.")
            if got[: len(messages)] != messages:
                raise NotYet(
                    f"{name}: the first {len(messages)} messages must stay as they were "
                    "(the model asked for those calls: keep its message, answer them)."
                )
            last = messages[-1] if messages else None
            uses = m.tool_uses(last) if last is not None and last["role"] == "assistant" else []
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


hint = hints(__name__, {1: _PATH_RECIPE, 2: _ANSWER_RECIPE})

__all__ = ["accepted", "check_answer_unresolved", "check_latest_leaf_path", "fixtures", "hint"]
