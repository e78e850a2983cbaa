"""A task of many small steps: write a test file for each of 18 small modules, then a tally.

Most of a long session is small steps, and that is what session memory (chapter 07) keeps
up with: it is brought up to date after the context first holds 10K tokens and 3 tool calls,
then every 5K tokens and 3 calls (Claude Code's numbers, as observed). Here each step reads a
module of about 200 tokens and writes its test file of about 1.5K: what is written stays in
the context as the ``write_file`` call's input, which microcompact cannot clear (it clears
results, never what the model said). So when the context reaches the threshold of the 60K
window, clearing old results is not enough, and the memory has read all but the last few
steps: tier 2 puts the memory in place of the old messages, with no model call.

Without tier 2, auto-compact asks for a summary: a model call that reads the whole
conversation and writes the summary (money, and wall time while the person waits), after
which the files read last are read again. And the summary keeps what the model said last,
not each note on the way ("Note: tests/test_mod_07.py has 5 tests"), which session memory
keeps under Learnings; so at the end a careful model counts the tests again (one ``grep``)
instead of reading its notes. Nothing is lost for good: the files hold the answer.

The scripted summary is short (some 200 tokens); a real one, asked for the nine sections of
Claude Code's compaction prompt, is longer, so the summary's cost here is a lower bound.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path

from harness import messages as m
from harness.evals.policy import last_match, new_results, texts
from harness.evals.trial import EvalTask, file_text
from harness.model.scripted import Reply, Request, ToolCall

MODULES = 18
WINDOW = 60_000
"""Our choice, as the long task's: the prompt (3K) and the auto-compact reserve (33K) leave
24K for the work, about 15 steps of 1.6K; all 18 need some 29K, so the context is compacted
once, near the end."""
CASES = 16
"""Assertions per test (our choice: a test file of about 1.5K tokens for five functions)."""
TALLY = "TESTS.md"
_NOTE = re.compile(r"Note: tests/test_mod_(\d+)\.py has (\d+) tests")
_DONE = re.compile(r"Done (\d+) of \d+ modules")
_COUNT = re.compile(r"tests/test_mod_(\d+)\.py:(\d+)")


def _functions(k: int) -> list[str]:
    rng = random.Random(500 + k)
    verbs = ["parse", "format", "round", "merge", "split", "check", "price", "load"]
    return [f"{verb}_{k}" for verb in rng.sample(verbs, rng.randint(3, 7))]


def _module(k: int) -> str:
    lines = [f'"""Module {k} of the invoicing library."""', ""]
    for name in _functions(k):
        lines += [f"def {name}(value):", f"    return value  # {name}", ""]
    return "\n".join(lines)


def _setup(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "tests").mkdir()
    for k in range(1, MODULES + 1):
        (workspace / "src" / f"mod_{k:02d}.py").write_text(_module(k))


def _test_file(k: int, module_text: str) -> str:
    names = re.findall(r"^ *(?:\d+\t)?def (\w+)\(", module_text, re.MULTILINE)
    lines = [f"from src.mod_{k:02d} import {', '.join(names)}", ""]
    for name in names:
        lines.append(f"def test_{name}():")
        for n in range(CASES):
            value = n * 7 + k
            lines.append(
                f'    assert {name}({value}) == {value}, "{name} keeps line {value} as it is"'
            )
        lines.append("")
    return "\n".join(lines)


def _counts(request: Request) -> dict[int, int]:
    """Tests per module, from the model's notes (or the memory, which keeps them)."""
    found: dict[int, int] = {}
    for text in texts(request.messages):
        for k, n in _NOTE.findall(text):
            found[int(k)] = int(n)
    return found


def _tally(counts: dict[int, int]) -> str:
    lines = [f"- tests/test_mod_{k:02d}.py: {counts[k]} tests" for k in sorted(counts)]
    return "\n".join(["# Tests", "", *lines, "", f"Total: {sum(counts.values())} tests", ""])


def _policy(request: Request) -> Reply:
    progress = last_match(request.messages, _DONE)
    done = int(progress[1]) if progress else 0
    for call in new_results(request):
        path = str(call.input.get("path", ""))
        if call.name == "write_file" and path == TALLY and call.succeeded:
            return Reply(text=f"Wrote tests for all {MODULES} modules; {TALLY} has the tally.")
        if call.name == "grep" and call.succeeded:
            counts = {int(k): int(n) for k, n in _COUNT.findall(str(call.result))}
            write = ToolCall("write_file", {"path": TALLY, "content": _tally(counts)})
            return Reply(text="Counted them again.", tool_calls=(write,))
        if call.name != "read_file" or not call.succeeded or path != f"src/mod_{done + 1:02d}.py":
            continue
        k = done + 1
        content = _test_file(k, str(call.result))
        count = content.count("def test_")
        text = f"Note: tests/test_mod_{k:02d}.py has {count} tests. Done {k} of {MODULES} modules."
        write = ToolCall("write_file", {"path": f"tests/test_mod_{k:02d}.py", "content": content})
        if k == MODULES:
            return Reply(text=text, tool_calls=(write,))
        read = ToolCall("read_file", {"path": f"src/mod_{k + 1:02d}.py"})
        return Reply(text=text, tool_calls=(write, read))
    if done < MODULES:
        read = ToolCall("read_file", {"path": f"src/mod_{done + 1:02d}.py"})
        return Reply(text=f"Done {done} of {MODULES} modules.", tool_calls=(read,))
    counts = _counts(request)
    if len(counts) == MODULES:
        write = ToolCall("write_file", {"path": TALLY, "content": _tally(counts)})
        return Reply(text="Writing the tally from my notes.", tool_calls=(write,))
    # Some notes are gone (a summary keeps the last words only): count the tests again.
    grep = ToolCall(
        "grep", {"pattern": "def test_", "path": "tests", "output_mode": "count", "head_limit": 100}
    )
    return Reply(text="My notes are incomplete; counting the tests.", tool_calls=(grep,))


def _check(workspace: Path, _conversation: Sequence[m.MessageDict]) -> str | None:
    expected: dict[int, int] = {}
    for k in range(1, MODULES + 1):
        names = _functions(k)
        written = file_text(workspace, f"tests/test_mod_{k:02d}.py")
        missing = [n for n in names if f"def test_{n}():" not in written]
        if missing:
            return f"tests/test_mod_{k:02d}.py does not test {', '.join(missing[:3])}"
        expected[k] = len(names)
    tally = file_text(workspace, TALLY)
    if not tally:
        return f"{TALLY} was not written"
    if tally != _tally(expected):
        return f"{TALLY} does not give each file's tests and the total ({sum(expected.values())})"
    return None


SMALL_STEPS = EvalTask(
    name="many small steps",
    description=f"Write a test file for each of {MODULES} small modules, then {TALLY}.",
    prompt=(
        f"Write tests for src/mod_01.py to src/mod_{MODULES}.py, one module at a time: "
        "tests/test_mod_NN.py with one test per function. Then list in TESTS.md how many tests "
        "each file has, and the total."
    ),
    setup=_setup,
    policy=_policy,
    check=_check,
    needs=("no tier 2",),
    window=WINDOW,
)

__all__ = ["MODULES", "SMALL_STEPS"]
