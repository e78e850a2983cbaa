"""Chapter 08's exercise checks: the solutions pass, the stubs and plausible slips do not."""

from __future__ import annotations

from harness import messages as m
from harness.exercises import ch08
from harness.loop import INTERRUPTED
from harness.transcript import Entry, from_entries, repair
from tests.mutation import assert_exercise_caught
from tests.solutions import load

solutions = load("ch08")

EQUIVALENT_PATH: dict[str, str] = {}  # mutants that behave like the solution, and why
EQUIVALENT_ANSWER: dict[str, str] = {}


def stub(*args: object) -> None:
    raise NotImplementedError


def test_the_solutions_pass() -> None:
    assert ch08.check_latest_leaf_path(solutions.latest_leaf_path)
    assert ch08.check_answer_unresolved(solutions.answer_unresolved)


def test_the_stubs_are_told_not_yet_with_a_hint() -> None:
    for verdict in (ch08.check_latest_leaf_path(stub), ch08.check_answer_unresolved(stub)):
        assert not verdict
        assert str(verdict).startswith("not yet: ")
        assert "stub" in str(verdict) and "\nhint: " in str(verdict)
        assert "first case: " in str(verdict) and "stuck? ch08.hint(" in str(verdict)


def test_every_mutant_of_the_path_solution_is_caught() -> None:
    assert_exercise_caught("ch08", 1, EQUIVALENT_PATH)


def test_every_mutant_of_the_answer_solution_is_caught() -> None:
    assert_exercise_caught("ch08", 2, EQUIVALENT_ANSWER)


# -- exercise 1: the path a resume follows ------------------------------------------------------


def test_following_the_first_root_forward_is_rejected() -> None:
    """Start at the first entry and take each entry's first child: the old branch."""

    def slip(entries: list[Entry]) -> list[str]:
        main = [e for e in entries if e.uuid and not e.is_sidechain]
        path = [main[0]]
        while child := next((e for e in main if e.parent_uuid == path[-1].uuid), None):
            path.append(child)
        return [str(e.uuid) for e in path if e.type in ("user", "assistant", "system")]

    verdict = ch08.check_latest_leaf_path(slip)
    assert not verdict and "rewind" in str(verdict)


def test_picking_the_longest_branch_is_rejected() -> None:
    def slip(entries: list[Entry]) -> list[str]:
        by_uuid = {e.uuid: e for e in entries if e.uuid}
        best: list[str] = []
        for leaf in entries:
            if leaf.type not in ("user", "assistant") or leaf.is_sidechain:
                continue
            path, current = [], leaf
            while current is not None:
                path.append(str(current.uuid))
                current = by_uuid.get(current.parent_uuid) if current.parent_uuid else None
            if len(path) > len(best):
                best = path
        return best[::-1]

    verdict = ch08.check_latest_leaf_path(slip)
    assert not verdict and "the old branch is longer" in str(verdict)


def test_a_walk_that_stops_at_progress_entries_is_rejected() -> None:
    """Only message entries are looked up, so the walk ends at the first progress parent."""

    def slip(entries: list[Entry]) -> list[str]:
        messages = [e for e in entries if e.type in ("user", "assistant") and not e.is_sidechain]
        by_uuid = {e.uuid: e for e in messages}
        path, current = [], messages[-1] if messages else None
        while current is not None:
            path.append(str(current.uuid))
            current = by_uuid.get(current.parent_uuid)
        return path[::-1]

    verdict = ch08.check_latest_leaf_path(slip)
    assert not verdict and "progress" in str(verdict)


def test_starting_from_the_newest_entry_of_any_type_is_rejected() -> None:
    """The newest entry is often a dead-end progress entry, not the conversation's end."""

    def slip(entries: list[Entry]) -> list[str]:
        by_uuid = {e.uuid: e for e in entries if e.uuid}
        chain = [e for e in entries if e.uuid and not e.is_sidechain]
        path, current = [], chain[-1]
        while current is not None:
            path.append(str(current.uuid))
            current = by_uuid.get(current.parent_uuid) if current.parent_uuid else None
        return path[::-1]

    verdict = ch08.check_latest_leaf_path(slip)
    assert not verdict and "progress" in str(verdict)


def test_a_walk_that_follows_the_sidechain_is_rejected() -> None:
    def slip(entries: list[Entry]) -> list[str]:
        by_uuid = {e.uuid: e for e in entries if e.uuid}
        messages = [e for e in entries if e.type in ("user", "assistant")]
        path, current = [], messages[-1]
        while current is not None:
            path.append(str(current.uuid))
            current = by_uuid.get(current.parent_uuid) if current.parent_uuid else None
        return path[::-1]

    verdict = ch08.check_latest_leaf_path(slip)
    assert not verdict and "sidechain" in str(verdict)


def test_starting_from_the_newest_assistant_entry_is_rejected() -> None:
    """A crash while the model was thinking leaves the user's prompt as the newest message."""

    def slip(entries: list[Entry]) -> list[str]:
        by_uuid = {e.uuid: e for e in entries if e.uuid}
        replies = [e for e in entries if e.type == "assistant" and not e.is_sidechain]
        path, current = [], replies[-1] if replies else None
        while current is not None:
            path.append(str(current.uuid))
            current = by_uuid.get(current.parent_uuid)
        return path[::-1]

    verdict = ch08.check_latest_leaf_path(slip)
    assert not verdict and "ends on your prompt" in str(verdict)


def test_a_walk_that_crashes_on_a_missing_parent_is_rejected() -> None:
    def slip(entries: list[Entry]) -> list[str]:
        by_uuid = {e.uuid: e for e in entries if e.uuid}
        messages = [e for e in entries if e.type in ("user", "assistant") and not e.is_sidechain]
        if not messages:
            return []
        path, current = [], messages[-1]
        while True:
            path.append(str(current.uuid))
            if current.parent_uuid is None:
                return path[::-1]
            current = by_uuid[current.parent_uuid]

    verdict = ch08.check_latest_leaf_path(slip)
    assert not verdict and "a lost line" in str(verdict) and "KeyError" in str(verdict)
    assert "must not fail" in str(verdict)


def test_a_walk_that_stops_at_a_missing_parent_or_bridges_it_passes() -> None:
    """Both are right: the exercise stops; the loader goes on from the entry written before."""

    def bridging(entries: list[Entry]) -> list[str]:
        return [str(e.uuid) for e in from_entries(list(entries)).chain]

    for name, entries in ch08.fixtures().items():
        assert solutions.latest_leaf_path(entries) in ch08.accepted(name, entries)
        assert bridging(entries) in ch08.accepted(name, entries)
    lost = ch08.fixtures()[ch08.LOST]
    assert ch08.accepted(ch08.LOST, lost) == [
        ["a2", "u3", "a3"],
        ["u1", "a1", "a2", "u3", "a3"],
    ]


def test_a_walk_that_fails_on_a_transcript_with_no_message_is_rejected() -> None:
    def slip(entries: list[Entry]) -> list[str]:
        by_uuid = {e.uuid: e for e in entries if e.uuid}
        messages = [e for e in entries if e.type in ("user", "assistant") and not e.is_sidechain]
        path, current = [], messages[-1]
        while current is not None:
            path.append(str(current.uuid))
            current = by_uuid.get(current.parent_uuid)
        return path[::-1]

    verdict = ch08.check_latest_leaf_path(slip)
    assert not verdict and "no message yet" in str(verdict) and "IndexError" in str(verdict)


def test_calling_the_loader_is_refused() -> None:
    def shortcut(entries: list[Entry]) -> list[str]:
        return [str(e.uuid) for e in from_entries(list(entries)).chain]

    verdict = ch08.check_latest_leaf_path(shortcut)
    assert not verdict and "loader" in str(verdict)


def test_the_fixtures_agree_with_the_loader_on_what_each_one_tests() -> None:
    paths = {
        name: [e.uuid for e in from_entries(list(es)).chain] for name, es in ch08.fixtures().items()
    }
    assert paths["a rewind (the old branch is longer)"] == ["u1", "a1", "new2", "new3"]
    assert paths["progress entries in the chain and at the end"] == ["u1", "p1", "a1", "u2", "a2"]
    assert paths["a compact boundary"] == ["b1", "s1", "a2"]
    assert paths["a sidechain after the main chain"] == ["u1", "a1", "u2", "a2"]
    assert paths[ch08.PROMPT] == ["u1", "a1", "u2", "a2", "u3"]
    assert paths[ch08.LOST] == ["u1", "a1", "a2", "u3", "a3"]
    assert paths[ch08.EMPTY] == []


# -- exercise 2: answer the calls a crash cut off -----------------------------------------------


def test_dropping_the_assistant_message_is_rejected() -> None:
    def slip(messages: list[m.MessageDict]) -> list[m.MessageDict]:
        if messages and messages[-1]["role"] == "assistant" and m.tool_uses(messages[-1]):
            return messages[:-1]
        return list(messages)

    verdict = ch08.check_answer_unresolved(slip)
    assert not verdict and "must stay as they were" in str(verdict)


def test_answering_with_a_fake_success_is_rejected() -> None:
    def slip(messages: list[m.MessageDict]) -> list[m.MessageDict]:
        last = messages[-1]
        if last["role"] != "assistant" or not m.tool_uses(last):
            return list(messages)
        return [*messages, m.user([m.tool_result(u["id"], "done") for u in m.tool_uses(last)])]

    verdict = ch08.check_answer_unresolved(slip)
    assert not verdict and "is_error=True" in str(verdict)


def test_an_error_that_does_not_say_interrupted_is_rejected() -> None:
    def slip(messages: list[m.MessageDict]) -> list[m.MessageDict]:
        last = messages[-1]
        if last["role"] != "assistant" or not m.tool_uses(last):
            return list(messages)
        results = [m.tool_result(u["id"], "error", is_error=True) for u in m.tool_uses(last)]
        return [*messages, m.user(results)]

    verdict = ch08.check_answer_unresolved(slip)
    assert not verdict and "interrupted" in str(verdict)


def test_answering_only_the_first_call_is_rejected() -> None:
    def slip(messages: list[m.MessageDict]) -> list[m.MessageDict]:
        last = messages[-1]
        if last["role"] != "assistant" or not m.tool_uses(last):
            return list(messages)
        first = m.tool_uses(last)[0]
        return [*messages, m.user([m.tool_result(first["id"], INTERRUPTED, is_error=True)])]

    verdict = ch08.check_answer_unresolved(slip)
    assert not verdict and "three parallel calls" in str(verdict) and "refuse" in str(verdict)


def test_answering_a_finished_conversation_is_rejected() -> None:
    def slip(messages: list[m.MessageDict]) -> list[m.MessageDict]:
        return [*messages, m.user([m.text("(nothing was interrupted)")])]

    verdict = ch08.check_answer_unresolved(slip)
    assert not verdict


def test_changing_the_given_list_is_rejected() -> None:
    def slip(messages: list[m.MessageDict]) -> list[m.MessageDict]:
        last = messages[-1]
        if last["role"] == "assistant" and m.tool_uses(last):
            results = [
                m.tool_result(u["id"], INTERRUPTED, is_error=True) for u in m.tool_uses(last)
            ]
            messages.append(m.user(results))
        return messages

    verdict = ch08.check_answer_unresolved(slip)
    assert not verdict and "changed the messages" in str(verdict)


def test_answering_the_last_reply_even_after_its_results_is_rejected() -> None:
    """Looking for the last assistant message, not at the last message: a crash after the
    results were written gets its calls answered twice."""

    def slip(messages: list[m.MessageDict]) -> list[m.MessageDict]:
        replies = [msg for msg in messages if msg["role"] == "assistant"]
        if not replies or not m.tool_uses(replies[-1]):
            return list(messages)
        results = [
            m.tool_result(u["id"], INTERRUPTED, is_error=True) for u in m.tool_uses(replies[-1])
        ]
        return [*messages, m.user(results)]

    verdict = ch08.check_answer_unresolved(slip)
    assert not verdict and "answered already" in str(verdict)


def test_failing_on_an_empty_conversation_is_rejected() -> None:
    def slip(messages: list[m.MessageDict]) -> list[m.MessageDict]:
        last = messages[-1]
        if last["role"] != "assistant" or not m.tool_uses(last):
            return list(messages)
        results = [m.tool_result(u["id"], INTERRUPTED, is_error=True) for u in m.tool_uses(last)]
        return [*messages, m.user(results)]

    verdict = ch08.check_answer_unresolved(slip)
    assert not verdict and "an empty conversation" in str(verdict) and "IndexError" in str(verdict)


def test_calling_repair_is_refused() -> None:
    def shortcut(messages: list[m.MessageDict]) -> list[m.MessageDict]:
        return repair(messages).messages

    verdict = ch08.check_answer_unresolved(shortcut)
    assert not verdict and "repair" in str(verdict)
