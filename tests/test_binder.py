"""The Binder/JupyterHub configuration in binder/ is what the lockfile gives, and it works.

repo2docker reads ``binder/requirements.txt`` (pip's format), ``binder/runtime.txt`` (the
Python) and ``binder/postBuild``. The requirements come from ``uv.lock`` through
``binder/generate.py``; these tests fail when someone changes the lock and forgets to
regenerate them, or when the Python the image gets is one the course does not support.
"""

from __future__ import annotations

import importlib.util
import os
import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"


def _generate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("binder_generate", BINDER / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _requirement_lines() -> list[str]:
    lines = (BINDER / "requirements.txt").read_text().splitlines()
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _pinned() -> dict[str, str]:
    """Package name -> pinned version, for every line but the course's own ``-e .``."""
    pins: dict[str, str] = {}
    for line in _requirement_lines():
        if line.startswith("-e "):
            continue
        requirement = Requirement(line)
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", f"not pinned exactly: {line}"
        pins[requirement.name] = specifier.version
    return pins


def test_binder_requirements_are_what_uv_lock_gives_today() -> None:
    generate = _generate()
    uv = generate.find_uv()
    if uv is None:
        pytest.skip("uv is not on PATH: cannot export uv.lock to compare (pip install uv)")
    expected = generate.expected(uv)
    actual = (BINDER / "requirements.txt").read_text()
    assert actual == expected, (
        "binder/requirements.txt is not what uv.lock gives: run "
        "`uv run python binder/generate.py` (`--check` shows the difference)"
    )


def test_binder_requirements_pin_the_versions_in_uv_lock() -> None:
    # The same check without uv: every pin is the lock's version of that package.
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    locked = {package["name"]: package.get("version") for package in lock["package"]}
    pins = _pinned()
    assert pins, "binder/requirements.txt pins no package"
    wrong = {
        name: (version, locked.get(name))
        for name, version in pins.items()
        if locked.get(name) != version
    }
    assert not wrong, f"pinned (file, lock): {wrong}"


def test_binder_requirements_say_they_are_generated_and_how_to_regenerate() -> None:
    text = (BINDER / "requirements.txt").read_text()
    first = text.splitlines()[0]
    assert first.startswith("# Generated from uv.lock"), first
    assert "uv run python binder/generate.py" in text.split("\n-e", 1)[0]


def test_binder_image_installs_the_course_itself_and_the_tests_but_not_the_browser_tools() -> None:
    lines = _requirement_lines()
    assert "-e ." in lines, "without the project itself, `import harness` fails on Binder"
    pins = _pinned()
    # What the chapters import, and what a host needs to run the suite on the image.
    for needed in ("anthropic", "jupyterlab", "ipywidgets", "matplotlib", "pytest", "nbval"):
        assert needed in pins, f"{needed} missing from binder/requirements.txt"
    # The browser group needs a Chromium the image does not have.
    for absent in ("playwright", "pytest-playwright"):
        assert absent not in pins, f"{absent} belongs to the browser group, not the image"


def test_binder_runtime_python_satisfies_requires_python() -> None:
    runtime = (BINDER / "runtime.txt").read_text().strip()
    match = re.fullmatch(r"python-(3\.\d+)", runtime)
    assert match, f"runtime.txt must read python-3.X (repo2docker's format), not {runtime!r}"
    version = match.group(1)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    for where, spec in (
        ("pyproject.toml", project["requires-python"]),
        ("uv.lock", lock["requires-python"]),
    ):
        assert SpecifierSet(spec).contains(version), f"{where}: {spec}, runtime.txt: {version}"


def test_binder_post_build_is_an_executable_script() -> None:
    post_build = BINDER / "postBuild"
    assert post_build.read_text().startswith("#!"), "postBuild needs a shebang line"
    assert os.access(post_build, os.X_OK), "repo2docker runs postBuild only if it is executable"
