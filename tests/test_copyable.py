"""The README's promise, checked: copy a chapter's modules into your own project and they import.

For each chapter, the modules it builds are copied into an empty folder with only the modules
they import (read with ``ast``, as the architecture test reads them), and then imported there
in a fresh interpreter that cannot see this project. A package's ``__init__.py`` comes along
when it belongs to that chapter or an earlier one; a later chapter's ``__init__.py`` (which
re-exports that chapter's modules) is replaced by an empty one, as a reader who copies only
``harness/notebook/views.py`` would write. The package's front door, ``harness/__init__.py``,
re-exports every chapter, so it is always empty in the copy.

And a file a reader can read in one sitting: no module of the package passes 500 lines, except
the exercise checks and the notebooks' display helpers, which a reader does not copy.
"""

from __future__ import annotations

import functools
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.course import CHAPTER, importable, source_path
from tests.test_architecture import FRONT_DOOR, PACKAGE, graph

import_graph = functools.cache(graph)
"""Who imports whom in the package (:func:`~tests.test_architecture.graph`): parsing every
module takes a while, and the files do not change during a run, so once for every test."""

MAX_LINES = 500
NOT_COPIED = ("exercises", "notebook")
"""Folders of ``harness/`` whose files are not meant to be copied: the exercise checks and the
notebooks' display helpers."""


def parents(name: str) -> list[str]:
    """The packages a module sits in, outermost first, without the front door."""
    parts = name.split(".")
    return [".".join(parts[:n]) for n in range(2, len(parts))]


def copy_set(chapter: int, edges: dict[str, set[str]]) -> tuple[set[str], set[str]]:
    """What a copy of ``chapter``'s modules needs: the modules to copy, and the packages that
    get an empty ``__init__.py`` (a later chapter's, or the front door)."""
    todo = [name for name, number in CHAPTER.items() if number == chapter]
    copied: set[str] = set()
    empty: set[str] = {FRONT_DOOR}
    while todo:
        name = todo.pop()
        if name in copied or name == FRONT_DOOR:
            continue
        copied.add(name)
        todo.extend(edges.get(name, ()))
        for package in parents(name):
            if CHAPTER[package] <= chapter:
                todo.append(package)
            else:
                empty.add(package)
    return copied, empty - copied


def write_copy(chapter: int, folder: Path, imports: dict[str, set[str]]) -> list[str]:
    """Copy ``chapter``'s modules and what they import (``imports``: :data:`import_graph`) into
    ``folder``; the modules to import."""
    copied, empty = copy_set(chapter, imports)
    for name in sorted(copied | empty):
        target = folder / source_path(name).relative_to(PACKAGE.parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            source_path(name).read_text(encoding="utf-8") if name in copied else "",
            encoding="utf-8",
        )
    return sorted(name for name, number in CHAPTER.items() if number == chapter)


# One fresh interpreter imports every chapter's copy in turn, each with its folder first on the
# path and with no module of the package left from the copy before (third-party modules, such as
# the SDK, stay loaded: that is what keeps it to one interpreter). For each chapter it says
# which files the package's modules came from, or which import failed.
IMPORT_ALL = """
import importlib, json, sys, traceback
report = {}
for folder, names in json.loads(sys.argv[1]):
    for loaded in [n for n in sys.modules if n == "harness" or n.startswith("harness.")]:
        del sys.modules[loaded]
    sys.path.insert(0, folder)
    importlib.invalidate_caches()
    try:
        for name in names:
            importlib.import_module(name)
    except Exception:
        report[folder] = {"error": traceback.format_exc()}
    else:
        report[folder] = {"files": {
            n: getattr(m, "__file__", None) for n, m in sys.modules.items()
            if n == "harness" or n.startswith("harness.")
        }}
    sys.path.remove(folder)
print(json.dumps(report))
"""


def import_copies(copies: list[tuple[Path, list[str]]]) -> dict[str, dict[str, object]]:
    """Import each folder's modules in one fresh interpreter; what each folder reported."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL, json.dumps([[str(f), n] for f, n in copies])],
        capture_output=True,
        text=True,
        cwd=copies[0][0],
        timeout=300,
        check=True,
    )
    report: dict[str, dict[str, object]] = json.loads(done.stdout)
    return report


CHAPTERS = sorted(set(CHAPTER.values()))


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Path, dict[str, object]]]:
    """Each chapter's copy, and what importing it reported."""
    folders = {chapter: tmp_path_factory.mktemp(f"chapter{chapter:02d}") for chapter in CHAPTERS}
    # A module that needs an optional group's package (Inspect) is copied, and imported only
    # where that package is installed.
    report = import_copies(
        [
            (folders[c], [n for n in write_copy(c, folders[c], import_graph()) if importable(n)])
            for c in CHAPTERS
        ]
    )
    return {c: (folders[c], report[str(folders[c])]) for c in CHAPTERS}


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_chapters_modules_import_from_a_copy_with_only_what_they_import(
    chapter: int, copies: dict[int, tuple[Path, dict[str, object]]]
) -> None:
    folder, result = copies[chapter]
    assert "error" not in result, result.get("error")
    files = result["files"]
    assert isinstance(files, dict)
    outside = {name: file for name, file in files.items() if not str(file).startswith(str(folder))}
    assert outside == {}, "imported from the project instead of the copy"
    built = {name for name, number in CHAPTER.items() if number == chapter and importable(name)}
    assert built <= set(files)


def test_the_copy_has_no_module_from_a_later_chapter() -> None:
    for chapter in sorted(set(CHAPTER.values())):
        copied, _ = copy_set(chapter, import_graph())
        assert {name for name in copied if CHAPTER[name] > chapter} == set(), chapter


def test_a_later_chapters_package_init_is_left_empty_in_a_copy() -> None:
    # harness/notebook/__init__.py re-exports chapter 03's cache views; a copy of chapter 00's
    # views must not need them.
    copied, empty = copy_set(0, import_graph())
    assert "harness.notebook.views" in copied
    assert "harness.notebook" in empty
    assert "harness.notebook.cache" not in copied


def test_an_import_the_copy_left_out_would_fail(tmp_path: Path) -> None:
    # The check can fail: chapter 00's copy without one module that chapter 00 imports.
    write_copy(0, tmp_path, import_graph())
    (tmp_path / "harness" / "tokens.py").unlink()
    report = import_copies([(tmp_path, ["harness.model.base"])])
    assert "No module named 'harness.tokens'" in str(report[str(tmp_path)]["error"])


def long_files() -> dict[str, int]:
    return {
        path.relative_to(PACKAGE.parent).as_posix(): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in NOT_COPIED
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }


def test_no_module_a_reader_copies_passes_500_lines() -> None:
    assert long_files() == {}


def words(text: str) -> list[str]:
    return text.split()


# Every public name the modules that were split defined before the split (and the assembly names
# ``harness.cli`` exported). They still import from where they did:
# ``from harness.transcript import load`` keeps working.
NAMES_BEFORE_THE_SPLIT: dict[str, list[str]] = {
    "harness.messages": words(
        """
        Block CONTENT_BLOCK_TYPES InvalidConversation MessageDict NO_CONTENT Problem
        ProblemKind TOOL_NAME_PATTERN TOOL_RESULT_CONTENT_TYPES api_rounds as_block assistant
        bad_unicode blocks ensure_valid from_reply is_utf8 is_valid_tool_name normalize text
        text_of tool_result tool_result_content_problem tool_results tool_use tool_uses user
        valid_text validate
        """
    ),
    "harness.model.scripted": words(
        """
        Content Fault FaultSchedule Reply Request ScriptExhausted ScriptedModel ScriptedStream
        Step ToolCall reply said tool_call
        """
    ),
    "harness.recovery": words(
        """
        Attempt CONTINUATION_PROMPT Continued Escalated Failure FellBack GaveUp PromptTooLong
        Recovery RecoveryPolicy Retrying StoppedContinuing classify is_prompt_too_long
        retry_after
        """
    ),
    "harness.memory": words(
        """
        EXTRACTION_MARKER Extraction ExtractionSchedule Fact ForkUsage HAND_EDIT MemoryEditor
        MemoryFormatError MemoryNotUpdated MemoryPathError MemoryUpdated NOTE SECTIONS
        SECTION_TOKENS SectionName SessionMemory SessionMemoryError TITLE TOTAL_TOKENS
        TRIM_ORDER Trimmed extraction_directive fact_line fit_budgets live_facts parse render
        section_tokens stale_temporaries write_atomic
        """
    ),
    "harness.transcript": words(
        """
        BOUNDARY_MARK BadLine Change ENTRY_TYPES_WITH_MESSAGES Entry EntryNotFound
        FAST_PATH_BYTES Finding MAX_DEPTH NET_ROUNDS NotATranscript RESUMED_WITHOUT_START
        Repair Report Session Transcript TranscriptFailed UnresolvedPolicy VERSION
        from_entries fsck iter_lines last_boundary_offset load parse_line project_folder
        random_ids read_entries repair seeded_ids too_deep
        """
    ),
    "harness.approvals": words(
        """
        APPLY_LEASE ApprovalApplied ApprovalConflict ApprovalError ApprovalExpired
        ApprovalGate ApprovalInvalid ApprovalNotFound ApprovalResume ApprovalStore
        ApprovalStoreBusy Claim DEFAULT_TTL Decision MAY_HAVE_RUN PendingToolCall Record
        SCHEMA_VERSION SNAPSHOT_VERSION STATES State ask_in_terminal call_hash canonical
        continue_run new_approval_id new_owner refused_text resume session_id_problem
        """
    ),
    "harness.model.cache": words(
        """
        CacheResult DEFAULT_MINIMUM_TOKENS Fingerprint LOOKBACK_POSITIONS MAX_BREAKPOINTS
        MINIMUMS_AS_OF MINIMUMS_SOURCE MINIMUM_CACHEABLE_TOKENS PROMPT_AFFECTING PrefixBlock
        PromptCache TTL TTL_SECONDS check_breakpoints diagnose fingerprint
        minimum_cacheable_tokens positions prefix_blocks with_automatic
        """
    ),
    "harness.resume": words(
        """
        CONTINUE_PROMPT Check INDEX NotFlushed Resumable Resume Resumed SessionNotFound
        Sessions StepRun continue_run correction_prompt final_text is_flushed
        journaled_answers resume resume_with run_step
        """
    ),
    "harness.cli": words(
        """
        EPILOG Exit Harness MODES Options PICK Program assemble describe main parser
        run_module sessions_for transcript_path unwritable
        """
    ),
    "harness.tools.builtins": words(
        """
        BINARY_SNIFF_BYTES EditFileInput GLOB_MAX_RESULTS GREP_DEFAULT_HEAD_LIMIT
        GREP_MAX_LINE_CHARS GlobInput GrepInput READ_DEFAULT_LIMIT READ_MAX_FILE_BYTES
        READ_MAX_LINE_CHARS READ_MAX_OUTPUT_CHARS ReadFileInput WriteFileInput builtin_tools
        compile_pattern edit_file glob grep read_file replace_text write_file
        """
    ),
}


@pytest.mark.parametrize("module", sorted(NAMES_BEFORE_THE_SPLIT))
def test_every_public_name_still_imports_from_where_it_did(module: str) -> None:
    package = importlib.import_module(module)
    assert [n for n in NAMES_BEFORE_THE_SPLIT[module] if not hasattr(package, n)] == []
