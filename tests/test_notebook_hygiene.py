"""Chapter notebooks are committed clean: run in order, no secrets, no machine paths, no
errors, no stray metadata. (nbval checks their outputs; this checks how they are stored.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))
MACHINE_PATH = re.compile(r"/(root|home|work|tmp)/[A-Za-z0-9_.-]+/")

notebooks = pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])


def load(path: Path) -> dict[str, Any]:
    notebook: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return notebook


def code_cells(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]


@notebooks
def test_code_cells_were_executed_in_order_from_one(path: Path) -> None:
    counts = [cell["execution_count"] for cell in code_cells(load(path))]
    assert counts == list(range(1, len(counts) + 1))


@notebooks
def test_results_carry_their_cells_execution_count(path: Path) -> None:
    for cell in code_cells(load(path)):
        for output in cell["outputs"]:
            if output["output_type"] == "execute_result":
                assert output["execution_count"] == cell["execution_count"]


@notebooks
def test_kernel_is_python3(path: Path) -> None:
    assert load(path)["metadata"]["kernelspec"]["name"] == "python3"


@notebooks
def test_notebook_metadata_holds_only_the_kernel_and_language(path: Path) -> None:
    assert set(load(path)["metadata"]) <= {"kernelspec", "language_info"}


@notebooks
def test_no_api_key_anywhere(path: Path) -> None:
    assert "sk-ant" not in path.read_text(encoding="utf-8")


def machine_written_text(notebook: dict[str, Any]) -> str:
    """The notebook's JSON without the prose of its markdown cells: outputs, code and metadata
    are where a path from the machine that ran it leaks; prose may show an example path."""
    cells = [
        {**cell, "source": ""} if cell["cell_type"] == "markdown" else cell
        for cell in notebook["cells"]
    ]
    return json.dumps({**notebook, "cells": cells})


@notebooks
def test_no_absolute_machine_paths(path: Path) -> None:
    found = [m.group(0) for m in MACHINE_PATH.finditer(machine_written_text(load(path)))]
    assert not found, f"machine paths in {path.name}: {sorted(set(found))}"


@notebooks
def test_no_error_outputs(path: Path) -> None:
    errors = [
        (i, output.get("ename"))
        for i, cell in enumerate(load(path)["cells"])
        for output in cell.get("outputs", [])
        if output["output_type"] == "error"
    ]
    assert errors == []


@notebooks
def test_no_execution_timing_metadata_on_cells(path: Path) -> None:
    timed = [i for i, cell in enumerate(load(path)["cells"]) if "execution" in cell["metadata"]]
    assert timed == []


def test_the_notebook_checks_cover_the_chapters_once_there_are_any() -> None:
    if not (CHAPTERS / "00_start_here.ipynb").exists():
        pytest.skip("chapters/00_start_here.ipynb does not exist yet")
    assert CHAPTERS / "00_start_here.ipynb" in NOTEBOOKS


def test_machine_path_pattern_catches_what_it_should() -> None:
    assert MACHINE_PATH.search('"/home/alice/course/chapters"')
    assert MACHINE_PATH.search("/tmp/pytest-of-root/x")
    assert MACHINE_PATH.search("/work/main/harness/")
    assert not MACHINE_PATH.search("harness/model/scripted/model.py")
    assert not MACHINE_PATH.search("https://api.anthropic.com/v1/messages")


DIRTY_NOTEBOOK = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {"kernelspec": {"name": "python3-local"}, "widgets": {}},
    "cells": [
        {
            "cell_type": "code",
            "execution_count": 2,
            "metadata": {"execution": {"iopub.execute_input": "2026-01-01T00:00:00Z"}},
            "source": "key = 'sk-ant-api03-leaked'\nopen('/home/alice/course/a.py')",
            "outputs": [
                {"output_type": "execute_result", "execution_count": 7, "data": {}, "metadata": {}},
                {"output_type": "error", "ename": "KeyError", "evalue": "", "traceback": []},
            ],
        }
    ],
}


@pytest.mark.parametrize(
    "check",
    [
        test_code_cells_were_executed_in_order_from_one,
        test_results_carry_their_cells_execution_count,
        test_kernel_is_python3,
        test_notebook_metadata_holds_only_the_kernel_and_language,
        test_no_api_key_anywhere,
        test_no_absolute_machine_paths,
        test_no_error_outputs,
        test_no_execution_timing_metadata_on_cells,
    ],
)
def test_each_check_fails_on_a_dirty_notebook(check: Any, tmp_path: Path) -> None:
    path = tmp_path / "dirty.ipynb"
    path.write_text(json.dumps(DIRTY_NOTEBOOK), encoding="utf-8")
    with pytest.raises(AssertionError):
        check(path)


def test_an_example_path_in_prose_is_not_a_machine_path(tmp_path: Path) -> None:
    notebook = {
        "metadata": {"kernelspec": {"name": "python3"}},
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": "Never `/home/you/x/`."}],
    }
    path = tmp_path / "prose.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    test_no_absolute_machine_paths(path)


@notebooks
def test_dollar_amounts_in_prose_are_code_so_no_renderer_typesets_them_as_math(
    path: Path,
) -> None:
    # JupyterLab reads text between two dollar signs as LaTeX: "$3 in, $15 out" shows as
    # italic math, and a backslash does not stop it there (it does elsewhere, where it would
    # then show). In a code span, `$3`, every renderer shows it as written.
    found = []
    for cell in load(path)["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        prose = "`".join(
            part for k, part in enumerate("".join(cell["source"]).split("`")) if k % 2 == 0
        )
        found += re.findall(r"(?<!\$)\$\d[\d.,]*", prose)
    assert not found, f"dollar amounts outside code spans (write `$3`): {found}"
