"""Every chapter in JupyterLab in headless Chromium: Run All, no errors, live widgets.

Run it with ``uv run --group browser pytest -m browser -n 0 tests/browser`` (minutes; not in
the normal suite). One test per chapter notebook, so a new chapter is picked up; they share
one JupyterLab server and one browser. The checks themselves are in ``check_chapters.py``,
which also runs as a script.

pytest-playwright provides the browser: its ``browser_type_launch_args`` fixture is
overridden (in ``browser_fixtures.py``, shared with the website's test) to drive the machine's own
Chromium (no browser download) with the flags it needs here, and each chapter gets a fresh
page from its ``page`` fixture.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import check_chapters as cc
import pytest
from browser_fixtures import (  # noqa: F401  (fixtures, used by name)
    browser_context_args,
    browser_type_launch_args,
    chromium,
)

_HAVE_PLAYWRIGHT = all(
    importlib.util.find_spec(name) is not None for name in ("playwright", "pytest_playwright")
)

pytestmark = [pytest.mark.browser]
if not _HAVE_PLAYWRIGHT:
    # Without the plugin its fixtures (``page``) do not exist: skip before pytest asks for them.
    pytestmark.append(pytest.mark.skip(reason=cc.PLAYWRIGHT_MISSING))


@pytest.fixture(scope="session")
def lab(request: pytest.FixtureRequest) -> Iterator[cc.LabServer]:
    request.getfixturevalue("chromium")  # no Chromium: skipped before JupyterLab starts
    with cc.jupyter_lab() as server:
        yield server


# Every chapter, and the Chinese edition's chapter 09 (its approval inbox is a widget): the
# same cells from chapters/zh/, their widgets live, the prose in Chinese.
NOTEBOOKS = [*cc.chapter_notebooks(), *cc.chapter_notebooks(["zh/09"])]


@pytest.mark.parametrize(
    "notebook", NOTEBOOKS, ids=lambda p: p.relative_to(cc.CHAPTERS).with_suffix("").as_posix()
)
def test_chapter_runs_all_cells_without_errors_and_its_widgets_are_live(
    lab: cc.LabServer, page: Any, notebook: Path
) -> None:
    result = cc.check_chapter(page, lab, notebook, cc.DEFAULT_OUT)
    print(result.report())
    assert result.ok, result.report()
    if notebook.parent != cc.CHAPTERS:  # a translation: the English cells, its own prose
        chinese = page.locator(".jp-MarkdownCell").filter(has_text=re.compile("[\u4e00-\u9fff]"))
        assert chinese.count() > 0
