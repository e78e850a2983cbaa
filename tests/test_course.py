"""``harness.course``: what each module adds, read from the code."""

from __future__ import annotations

import sys

import pytest

from harness.course import (
    CHAPTER,
    OPTIONAL,
    POINTS,
    chapter_modules,
    code_lines,
    facts,
    first_sentence,
    importable,
)
from harness.loop import Plugin


def test_chapter_modules_are_the_ones_the_map_gives_that_chapter() -> None:
    assert chapter_modules(1) == [
        "harness.events",
        "harness.exercises.ch01",
        "harness.loop",
        "harness.points",
    ]
    assert sum(len(chapter_modules(n)) for n in range(max(CHAPTER.values()) + 1)) == len(CHAPTER)


def test_the_points_are_the_plugin_methods_of_the_loop() -> None:
    methods = {name for name in vars(Plugin) if not name.startswith("_")}
    assert set(POINTS) == methods


def test_a_plugin_lists_the_points_it_overrides_in_the_order_a_turn_meets_them() -> None:
    assert facts("harness.recovery.plugin").plugins == {
        "Recovery": ["call_model", "after_reply", "on_stop"]
    }
    assert facts("harness.transcript.writer").plugins["Transcript"] == [
        "before_request",
        "after_reply",
        "on_tool_progress",
        "after_tools",
        "on_rewrite",
    ]


def test_a_module_lists_only_the_tools_it_defines_not_the_ones_it_imports() -> None:
    assert facts("harness.tools.files").tools == ["edit_file", "read_file", "write_file"]
    assert facts("harness.tools.search").tools == ["glob", "grep"]
    assert facts("harness.tools.builtins").tools == []  # it gathers them; bash is shell's
    assert facts("harness.tools.shell").tools == ["bash"]
    assert facts("harness.compaction.reinject").tools == []


def test_code_lines_leave_out_blank_lines_and_comments() -> None:
    assert code_lines('"""Doc."""\n\n# a comment\nx = 1  # counted\n    \n') == 2


def test_the_summary_is_the_first_sentence_of_the_module_docstring() -> None:
    assert (
        first_sentence("Tier 1: microcompact. Old results go.\n\nMore.") == "Tier 1: microcompact."
    )
    assert first_sentence(None) == ""
    assert facts("harness.loop").summary.startswith("The agent loop:")
    assert facts("harness.loop").path == "harness/loop.py"
    assert facts("harness.tools").path == "harness/tools/__init__.py"


def test_the_loop_defines_every_point_and_a_plugin_module_uses_its_own() -> None:
    loop = facts("harness.loop")
    assert loop.defines_points and loop.points == list(POINTS)
    assert not facts("harness.recovery.plugin").defines_points
    assert facts("harness.recovery.plugin").points == ["call_model", "after_reply", "on_stop"]
    assert facts("harness.clock").points == []


def test_a_module_whose_optional_package_is_missing_is_read_from_its_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As on a plain install, where the `evals` group (Inspect) is not there.
    monkeypatch.setitem(OPTIONAL, "harness.evals.inspect_tasks", "no_such_package_anywhere")
    monkeypatch.delitem(sys.modules, "harness.evals.inspect_tasks", raising=False)
    assert not importable("harness.evals.inspect_tasks")
    described = facts("harness.evals.inspect_tasks")
    assert "harness.evals.inspect_tasks" not in sys.modules
    assert described.summary.startswith("The ablation's tasks as Inspect tasks")
    assert described.plugins == {} and described.tools == []
    assert described.lines > 50
