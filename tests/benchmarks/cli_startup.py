"""How long the command line takes to start: ``python -m harness`` timed from outside.

    uv run python tests/benchmarks/cli_startup.py [RUNS]

Each command runs RUNS times (default 7) as a fresh process in an empty tmp folder, with a
tmp ``HOME`` and no API key (so the offline demo model answers), and the wall time from
start to exit is taken. Printed: the median, the fastest and the slowest run of

* ``python -c pass``: the interpreter alone, the floor;
* ``python -c "import anthropic"``: the SDK the harness is built on;
* ``python -m harness --help``: every module of the harness imported, then the flags;
* ``python -m harness -p "hello"``: a whole one-shot run (a session, its transcript, an
  answer from the demo model);
* the interactive program until its first ``›`` prompt, in a pseudo-terminal (with pexpect).

The difference between the first two rows and the rest is the harness's own share.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 7


def environment(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "HARNESS_MODEL")
    }
    env.update(HOME=str(home), PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color")
    return env


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> Callable[[], float]:
    def once() -> float:
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
        took = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"{argv} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
        return took

    return once


def to_first_prompt(cwd: Path, env: dict[str, str]) -> Callable[[], float] | None:
    try:
        import pexpect
    except ImportError:
        return None

    def once() -> float:
        start = time.perf_counter()
        child = pexpect.spawn(
            sys.executable,
            ["-m", "harness"],
            cwd=str(cwd),
            env=env,
            encoding="utf-8",
            dimensions=(40, 120),
        )
        child.expect("›", timeout=60)
        took = time.perf_counter() - start
        child.sendeof()
        child.expect(pexpect.EOF, timeout=30)
        child.close()
        return took

    return once


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, work = Path(tmp) / "home", Path(tmp) / "project"
        home.mkdir()
        work.mkdir()
        env = environment(home)
        python = sys.executable
        cases: list[tuple[str, Callable[[], float] | None]] = [
            ("python -c pass", timed([python, "-c", "pass"], work, env)),
            ("python -c 'import anthropic'", timed([python, "-c", "import anthropic"], work, env)),
            ("python -m harness --help", timed([python, "-m", "harness", "--help"], work, env)),
            (
                "python -m harness -p hello",
                timed([python, "-m", "harness", "-p", "hello"], work, env),
            ),
            ("python -m harness → first prompt", to_first_prompt(work, env)),
        ]
        print(f"{RUNS} runs each, wall time in seconds ({os.cpu_count()} cores)")
        print(f"{'command':<34} {'median':>7} {'min':>7} {'max':>7}")
        for name, once in cases:
            if once is None:
                print(f"{name:<34} (skipped: pexpect is not installed)")
                continue
            once()  # a first run warms the disk cache and writes .pyc files
            times = [once() for _ in range(RUNS)]
            print(f"{name:<34} {statistics.median(times):7.2f} {min(times):7.2f} {max(times):7.2f}")


if __name__ == "__main__":
    main()
