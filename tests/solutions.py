"""Load a chapter's solutions (``chapters/solutions/chNN.py``) for the exercise tests."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

SOLUTIONS = Path(__file__).resolve().parent.parent / "chapters" / "solutions"


def load(chapter: str) -> ModuleType:
    """The solutions module of ``chapter`` (``"ch00"``), loaded from its file."""
    path = SOLUTIONS / f"{chapter}.py"
    spec = importlib.util.spec_from_file_location(f"solutions_{chapter}", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def definitions(
    chapter: str,
    names: list[str] | tuple[str, ...],
    folder: Path = SOLUTIONS,
    *,
    missing_ok: bool = False,
) -> tuple[ast.Module, list[ast.FunctionDef | ast.ClassDef]]:
    """The parsed solution file of ``chapter`` and its top-level definitions of ``names``.

    What the mutation tests mutate, what the exercise times count and what no hint may show.
    """
    path = folder / f"{chapter}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in names
    ]
    missing = set(names) - {node.name for node in found}
    assert missing_ok or not missing, f"{path} does not define {sorted(missing)}"
    return tree, found
