"""What each mechanism is worth: every offline task under the full harness and under the
harness with one mechanism left out (``harness.evals``).

    uv run python tests/benchmarks/ablation.py             # the plain runner (seconds)
    uv run python tests/benchmarks/ablation.py --outcomes  # and each task's row
    uv run --group evals python tests/benchmarks/ablation.py --inspect   # through Inspect

Prints the table (the same on every run: scripted policies on a fake clock), then how long it
took. ``--inspect`` runs the same tasks through Inspect (``inspect_ai.eval``, the
``mockllm/model`` model: the harness's scripted model does the work) and prints the table
built from Inspect's scores, which equals the plain one.
"""

from __future__ import annotations

import sys
import time

from harness.evals import ablation_table, run_suite
from harness.evals.runner import Outcome


def outcome_lines(outcomes: list[Outcome]) -> str:
    lines = []
    for o in outcomes:
        done = "finished" if o.finished else f"LOST ({o.why})"
        lines.append(
            f"{o.task:<24} {o.configuration:<22} ${o.cost_usd:7.3f} {o.turns:3d} turns "
            f"{o.wall_seconds:6.0f} s  peak {o.peak_context:6,}  {done}"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    started = time.perf_counter()
    if "--inspect" in argv:
        from harness.evals.inspect_tasks import run_through_inspect

        outcomes = run_through_inspect()
    else:
        outcomes = run_suite()
    took = time.perf_counter() - started
    table = ablation_table(outcomes)
    print(table.text())
    if "--outcomes" in argv:
        print()
        print(outcome_lines(outcomes))
    runs = len(outcomes)
    print(f"\n{runs} runs ({len(table.rows)} configurations) in {took:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
