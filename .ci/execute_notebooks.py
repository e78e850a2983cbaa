"""Re-execute chapter notebooks offline and store them clean.

    uv run python .ci/execute_notebooks.py                 # every chapter
    uv run python .ci/execute_notebooks.py chapters/00_start_here.ipynb

Each notebook is formatted with ruff, run top to bottom in a fresh kernel with no API key
(so the scripted model answers), and saved with execution counts 1..N, no timing metadata,
and only the kernelspec and language name in its metadata. The stored outputs are what nbval
compares against in `uv run pytest`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def clean(nb: nbformat.NotebookNode) -> None:
    nb.metadata = nbformat.NotebookNode(
        {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        }
    )
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("ExecuteTime", None)
        cell.metadata.pop("collapsed", None)
        cell.metadata.pop("scrolled", None)
        if cell.cell_type == "code":
            if cell.source.startswith("# NBVAL_SKIP"):
                # A live cell (a widget waiting for your click): nbval does not run it, so its
                # headless output (a widget with a random id and no state) is not kept.
                cell.outputs = []
            for output in cell.get("outputs", []):
                output.get("metadata", {}).pop("execution", None)


def execute(path: Path) -> None:
    subprocess.run(["ruff", "format", "--quiet", str(path)], check=False)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    env_key = os.environ.pop("ANTHROPIC_API_KEY", None)
    for name in ("HARNESS_MODEL", "ANTHROPIC_BASE_URL"):  # stored outputs use the defaults
        os.environ.pop(name, None)
    try:
        NotebookClient(
            nb,
            timeout=300,
            kernel_name="python3",
            record_timing=False,
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
    finally:
        if env_key is not None:
            os.environ["ANTHROPIC_API_KEY"] = env_key
    clean(nb)
    nbformat.validate(nb)
    nbformat.write(nb, path)
    print(f"executed {path.relative_to(ROOT)}")


def main(argv: list[str]) -> int:
    paths = [Path(a).resolve() for a in argv] or sorted((ROOT / "chapters").glob("*.ipynb"))
    for path in paths:
        execute(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
