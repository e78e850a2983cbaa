"""The ablation through Inspect (``harness.evals.inspect_tasks``) gives what the plain runner
gives. Inspect is the optional ``evals`` group:

    uv run --group evals pytest -p no:nbval -o addopts="" tests/test_evals_inspect.py

Without it these tests are skipped (the rest of the suite never imports Inspect).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="Inspect is in the optional `evals` group")

from inspect_ai import eval as inspect_eval

from harness.evals import configuration, run_suite, task
from harness.evals.inspect_tasks import ablation, run_through_inspect

TASKS = [task("fault storm"), task("crash and resume"), task("approval")]
CONFIGS = [configuration("full"), configuration("no recovery"), configuration("no transcript")]


def test_inspect_gives_the_outcomes_the_plain_runner_gives() -> None:
    assert run_through_inspect(TASKS, CONFIGS) == run_suite(TASKS, CONFIGS)


def test_the_inspect_task_scores_each_sample_with_the_tasks_check(tmp_path: Path) -> None:
    [log] = inspect_eval(
        ablation(configuration="full,no recovery", tasks="fault storm"),
        model="mockllm/model",
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success" and log.samples is not None
    scores = {str(s.id): next(iter((s.scores or {}).values())) for s in log.samples}
    assert scores["fault storm | full"].value == "C"
    lost = scores["fault storm | no recovery"]
    assert lost.value == "I" and "CONTENTS.md was not written" in str(lost.explanation)
    assert {"cost_usd", "turns", "tokens", "wall_seconds"} <= set(lost.metadata or {})
    metrics = log.results.scores[0].metrics if log.results else {}
    assert metrics["accuracy"].value == 0.5
    assert metrics["turns"].value == sum(s.metadata["turns"] for s in scores.values())  # type: ignore[index]


def test_an_unknown_task_name_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="fault storm"):
        ablation(tasks="no such task")
