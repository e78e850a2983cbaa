"""The browser tests' shared fixtures: pytest-playwright drives the machine's own Chromium.

Each browser test module imports them by name. (Not a ``conftest.py``: the suite's own
``tests/conftest.py`` is imported as ``conftest`` by other tests, and a second module of
that name would shadow it.)"""

from __future__ import annotations

from typing import Any

import check_chapters as cc
import pytest


@pytest.fixture(scope="session")
def chromium() -> str:
    found = cc.find_chromium()
    if found is None:
        pytest.skip(cc.CHROMIUM_MISSING)
    return found


@pytest.fixture(scope="session")
def browser_type_launch_args(
    browser_type_launch_args: dict[str, Any], chromium: str
) -> dict[str, Any]:
    return {**browser_type_launch_args, **cc.launch_options(chromium)}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "viewport": cc.VIEWPORT}
