"""The ablation (chapter 15, ``harness.evals``): every task finishes under the full harness,
and each is lost, or clearly dearer, slower or fuller, without the mechanism it needs.

The whole suite runs once for the module (8 tasks under 9 configurations, some 8 s of CPU);
every other test here is cheap.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from conftest import reachable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli.assemble import Options, assemble
from harness.clock import FakeClock, RealClock
from harness.evals import (
    CONFIGURATIONS,
    TASKS,
    AblationTable,
    Configuration,
    Outcome,
    ablation_table,
    configuration,
    run_suite,
    run_task,
    task,
)
from harness.evals.policy import scripted
from harness.evals.tasks_long import WINDOW
from harness.model import ScriptedModel
from harness.notebook.ablation import ablation_figure, ablation_view, outcomes_view, task_matrix
from tests.local_api import LocalMessagesAPI


@pytest.fixture(scope="module")
def table() -> AblationTable:
    return ablation_table(run_suite())


def outcome(table: AblationTable, name: str, config: str = "full") -> Outcome:
    return table.outcome(name, config)


def test_every_task_finishes_under_the_full_harness(table: AblationTable) -> None:
    for t in TASKS:
        done = outcome(table, t.name)
        assert done.finished, f"{t.name}: {done.why}"
        assert done.cost_usd > 0 and done.turns > 0 and done.wall_seconds > 0


def test_each_task_is_lost_or_worse_without_the_mechanism_it_needs(table: AblationTable) -> None:
    for t in TASKS:
        full = outcome(table, t.name)
        assert t.needs, f"{t.name} names no mechanism it needs"
        for need in t.needs:
            without = outcome(table, t.name, need)
            worse = (
                not without.finished
                or without.cost_usd > 1.1 * full.cost_usd
                or without.wall_seconds > full.wall_seconds + 10
                or without.peak_context > 2 * full.peak_context
                # a compaction the full harness made without a model call cost one here
                or (without.summaries > full.summaries and without.calls > full.calls)
            )
            assert worse, f"{t.name} is no worse under {need!r}: {without}"


def test_with_session_memory_kept_up_a_compaction_makes_no_model_call(table: AblationTable) -> None:
    full = outcome(table, "many small steps")
    without = outcome(table, "many small steps", "no tier 2")
    assert full.compactions > 0 and full.summaries == 0  # tier 2 compacted
    assert without.finished and without.summaries == 1
    # The summary is a model call; it keeps the last words, not each note, so the model
    # counts the tests again before it writes the tally: one more turn.
    assert without.calls > full.calls and without.turns == full.turns + 1
    assert without.wall_seconds > full.wall_seconds
    assert table.row("no tier 2").summaries == table.full.summaries + 1  # the table shows it


def test_without_recovery_the_fault_storm_ends_at_the_first_529(table: AblationTable) -> None:
    lost = outcome(table, "fault storm", "no recovery")
    assert not lost.finished
    assert "OverloadedError" in lost.why and "CONTENTS.md was not written" in lost.why
    assert lost.turns < outcome(table, "fault storm").turns


def test_without_a_transcript_a_crash_means_the_work_is_done_twice(table: AblationTable) -> None:
    assert outcome(table, "crash and resume").finished  # resumed: nothing redone
    lost = outcome(table, "crash and resume", "no transcript")
    assert not lost.finished and "work was done twice" in lost.why
    assert lost.turns > outcome(table, "crash and resume").turns


def test_without_a_transcript_an_approval_cannot_wait_for_its_person(table: AblationTable) -> None:
    lost = outcome(table, "approval", "no transcript")
    assert not lost.finished and "RELEASE.md was not written" in lost.why


def test_a_subagent_keeps_the_parents_context_small(table: AblationTable) -> None:
    full, solo = (
        outcome(table, "explore in a child"),
        outcome(table, "explore in a child", "no subagents"),
    )
    assert solo.finished
    assert solo.peak_context > 3 * full.peak_context
    assert solo.cost_usd > full.cost_usd


def test_without_cache_breakpoints_every_prompt_is_read_at_full_price(table: AblationTable) -> None:
    row = table.row("no cache breakpoints")
    assert row.cache_read_tokens == row.cache_write_tokens == 0
    for t in TASKS:
        assert (
            outcome(table, t.name, "no cache breakpoints").cost_usd
            > outcome(table, t.name).cost_usd
        )
    rename = outcome(table, "many turns on one prefix")
    assert outcome(table, rename.task, "no cache breakpoints").cost_usd > 3 * rename.cost_usd


def test_without_auto_compact_the_long_task_lives_on_recoverys_reactive_compactions(
    table: AblationTable,
) -> None:
    full = outcome(table, "long task in a small window")
    edge = outcome(table, "long task in a small window", "no auto-compact")
    assert full.over_window == 0 and full.peak_context < WINDOW
    # Requests run to the window's end: refused as too long, or a reply cut there (never
    # taken as an answer); each time recovery compacts and asks again, and the task is done.
    assert edge.finished, edge.why
    assert edge.over_window > 0 and edge.peak_context > WINDOW
    assert 0 < edge.summaries < full.summaries  # later, so fewer: auto-compact keeps a reserve


def test_background_shells_let_the_session_work_while_the_tests_run(table: AblationTable) -> None:
    full = outcome(table, "tests in the background")
    blocked = outcome(table, "tests in the background", "no background shells")
    assert blocked.finished
    assert blocked.wall_seconds > full.wall_seconds + 15


def test_the_table_has_the_full_harness_first_and_one_row_per_configuration(
    table: AblationTable,
) -> None:
    assert [r.configuration for r in table.rows] == [c.name for c in CONFIGURATIONS]
    assert table.full.finished == table.full.tasks == len(TASKS)
    text = table.text().splitlines()
    assert text[0].split()[:2] == ["configuration", "finished"]
    assert text[2].startswith("full ") and f"{len(TASKS)}/{len(TASKS)}" in text[2]
    assert table.row("no transcript").lost == ("crash and resume", "approval")


def test_the_same_tasks_give_the_same_table_on_every_run(table: AblationTable) -> None:
    cheap = [task("fault storm"), task("approval")]
    configs = [configuration("full"), configuration("no transcript")]
    again = run_suite(cheap, configs)  # a second run: the module's table was the first
    assert again == [table.outcome(t.name, c.name) for t in cheap for c in configs]


def test_each_configuration_leaves_exactly_one_mechanism_out() -> None:
    def parts(config: Configuration) -> tuple[list[str], list[str], bool]:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            (root / "home").mkdir()
            options = Options(workspace=root, env={}, home=root / "home", sessions_root=root / "s")
            harness = assemble(
                options,
                model=ScriptedModel(),
                clock=FakeClock(),
                fsync=False,
                leave_out=config.leave_out,
            )
            config.apply(harness)
            plugins = [type(p).__name__ for p in harness.agent.plugins]
            tools = [str(d["name"]) for d in harness.agent.tools.definitions()]
            system = harness.agent.system
            assert isinstance(system, list)
            [line] = [x for b in system for x in str(b["text"]).splitlines() if "Your tools:" in x]
            harness.close()
            tier2 = harness.auto.session_memory is not None
            return plugins, tools, tier2, line

    full_plugins, full_tools, _, full_line = parts(configuration("full"))
    expected = {
        "no cache breakpoints": ({"PromptCaching"}, set()),
        "no microcompact": ({"Microcompact"}, set()),
        "no tier 2": (set(), set()),
        "no auto-compact": ({"AutoCompact"}, set()),
        "no recovery": ({"Recovery"}, set()),
        "no subagents": ({"Subagent"}, {"subagent", "fork"}),
        "no transcript": ({"Transcript"}, set()),
        "no background shells": ({"BackgroundWork"}, {"task_output", "task_stop"}),
    }
    for config in CONFIGURATIONS[1:]:
        plugins, tools, tier2, line = parts(config)
        gone_plugins, gone_tools = expected[config.name]
        assert set(full_plugins) - set(plugins) == gone_plugins, config.name
        assert set(full_tools) - set(tools) == gone_tools, config.name
        # The prompt names the tools the model has, and only those.
        named = set(line.split(":", 1)[1].strip(" .").split(", "))
        assert set(tools) <= named and not named & gone_tools, config.name
        assert named == set(full_line.split(":", 1)[1].strip(" .").split(", ")) - gone_tools
        assert tier2 == (config.name != "no tier 2"), config.name


def test_names_have_no_commas_so_a_command_line_can_list_them() -> None:
    # Inspect's ``-T tasks=a,b`` splits on commas.
    names = [t.name for t in TASKS] + [c.name for c in CONFIGURATIONS]
    assert not [n for n in names if "," in n]
    assert len(set(names)) == len(names)


def test_an_unknown_configuration_or_task_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(KeyError, match="no recovery"):
        configuration("no such thing")
    with pytest.raises(KeyError, match="fault storm"):
        task("no such task")


def test_the_notebook_views_show_the_table_the_matrix_and_a_plot(table: AblationTable) -> None:
    view = ablation_view(table)
    assert "no recovery" in view.text and "<table>" in view.html
    matrix = task_matrix(table).text
    assert "lost" in matrix and "fault storm" in matrix
    rows = outcomes_view(table.outcomes[:3]).text.splitlines()
    assert len(rows) == 2 + 3
    figure = ablation_figure(table, title="t")
    assert len(figure.axes) == 3
    bars = figure.axes[0].patches
    assert [b.get_width() for b in bars] == [r.finished for r in table.rows]
    plt.close(figure)


junk = st.one_of(st.binary(max_size=200), st.text(max_size=200))
files = st.dictionaries(
    st.sampled_from(
        [
            "REVIEW.md",
            "TODO_COUNT.txt",
            "TESTS.md",
            "CONTENTS.md",
            "CHANGELOG.md",
            "RELEASE.md",
            "REPORT.md",
        ]
    ),
    junk,
    max_size=4,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(files=files, index=st.integers(0, len(TASKS) - 1), as_folder=st.booleans())
def test_a_check_says_what_is_wrong_whatever_the_agent_left(
    tmp_path_factory: pytest.TempPathFactory,
    files: dict[str, bytes | str],
    index: int,
    as_folder: bool,
) -> None:
    chosen = TASKS[index]
    workspace = tmp_path_factory.mktemp("ws")
    chosen.setup(workspace)
    for name, content in files.items():
        path = workspace / name
        if as_folder:
            if path.is_file():
                path.unlink()
            path.mkdir(exist_ok=True)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", errors="surrogatepass")
    verdict = chosen.check(workspace, [])
    assert verdict is None or (isinstance(verdict, str) and verdict)
    assert verdict is not None  # nothing the agent should have written is right by chance


def test_a_task_runs_on_the_live_path_and_is_checked_the_same_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The live model (the SDK over HTTP, on the real clock) against a local Messages API
    # answered by the task's policy: what a run with a key does, short of the real model.
    crash = task("crash and resume")
    served = scripted(crash.policy, clock=FakeClock(), window=None, id_prefix="live")
    with LocalMessagesAPI(served) as api, reachable(api.address):

        def no_retry_waits(_clock: RealClock, seconds: float) -> None:
            # The local API never asks for a retry: a wait means it failed (a 500), and
            # recovery would wait out ten real backoffs (some 2 minutes) before giving up.
            # The failure ends the test at once instead.
            pytest.fail(f"the live run waited {seconds:.1f} s to retry: {api.failures}")

        monkeypatch.setattr(RealClock, "sleep", no_retry_waits)
        env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": api.url}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        done = run_task(crash, configuration("full"), live=True, env=env)
        lost = run_task(crash, configuration("no transcript"), live=True, env=env)
    assert not api.failures
    assert done.finished, done.why
    assert not lost.finished and "work was done twice" in lost.why
