"""The package reads in chapter order: no module imports one from a later chapter, no cycles.

Every module of ``harness`` is in ``harness.course.CHAPTER``, the chapter that builds it. A
new module must be added there (the first test fails until it is), and its imports are read
with ``ast``, so an import inside a function or under ``TYPE_CHECKING`` counts as much as
one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness.course import CHAPTER

PACKAGE = Path(__file__).resolve().parent.parent / "harness"

# The package's front door re-exports from every chapter; no module may import it.
FRONT_DOOR = "harness"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(path: Path, known: set[str]) -> set[str]:
    """The harness modules a file imports (``from pkg import submodule`` resolved)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "harness")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "harness":
                continue
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.add(sub if sub in known else node.module)
    return out


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imported(path, known) - {name} for name, path in found.items()}


def test_every_module_has_a_chapter() -> None:
    missing = sorted(set(modules()) - set(CHAPTER) - {FRONT_DOOR})
    assert missing == [], (
        f"add these modules to CHAPTER with the chapter that builds them: {missing}"
    )
    stale = sorted(set(CHAPTER) - set(modules()))
    assert stale == [], f"these modules no longer exist: {stale}"


def late_imports(edges: dict[str, set[str]], chapter: dict[str, int]) -> list[str]:
    """Every import of a module from a later chapter than the importer's, in words."""
    return [
        f"{name} (chapter {chapter[name]:02d}) imports {dep} (chapter {chapter[dep]:02d})"
        for name, deps in sorted(edges.items())
        if name in chapter
        for dep in sorted(deps)
        if dep in chapter and chapter[dep] > chapter[name]
    ]


def test_no_module_imports_one_from_a_later_chapter() -> None:
    assert late_imports(graph(), CHAPTER) == []


def test_no_module_imports_the_package_front_door() -> None:
    users = sorted(name for name, deps in graph().items() if FRONT_DOOR in deps)
    assert users == []


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as a path that ends where it starts, or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == "open":
                return [*stack[stack.index(dep) :], dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_package_has_no_import_cycles() -> None:
    assert find_cycle(graph()) is None


def test_the_model_protocol_imports_neither_implementation() -> None:
    # Code that needs only the protocol (the loop) must not pull in the SDK client or the
    # scripted model with it; the model table (the default model's id) is data.
    assert graph()["harness.model.base"] <= {"harness.tokens", "harness.model.models"}
    assert graph()["harness.model.models"] == set()


# --- the checks themselves catch what they are for -------------------------------------------


def test_a_forward_import_would_be_caught(tmp_path: Path) -> None:
    # The loop as it once was: importing chapter 02's runner.
    source = tmp_path / "loop.py"
    source.write_text("from harness.tools.dispatch import ToolRunner\nfrom harness import tokens\n")
    edges = {"harness.loop": imported(source, set(CHAPTER))}
    assert edges["harness.loop"] == {"harness.tools.dispatch", "harness.tokens"}
    assert late_imports(edges, CHAPTER) == [
        "harness.loop (chapter 01) imports harness.tools.dispatch (chapter 02)"
    ]


def test_an_import_inside_a_function_counts(tmp_path: Path) -> None:
    source = tmp_path / "late.py"
    source.write_text(
        "def f():\n    from harness import tokens, prompt\n    import harness.agent\n"
    )
    assert imported(source, set(CHAPTER)) == {"harness.tokens", "harness.prompt", "harness.agent"}


@pytest.mark.parametrize(
    ("edges", "cycle"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
        ({"a": {"a"}}, ["a", "a"]),
    ],
)
def test_a_cycle_is_found_and_named(edges: dict[str, set[str]], cycle: list[str] | None) -> None:
    assert find_cycle(edges) == cycle
