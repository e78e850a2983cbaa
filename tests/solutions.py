"""Load a chapter's solutions (``chapters/solutions/chNN.py``) for the exercise tests."""

from __future__ import annotations

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
