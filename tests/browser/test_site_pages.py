"""The course's website in headless Chromium: the home page and two chapter pages render,
with their navigation, and search answers. One screenshot each, to look at.

It builds the site from the committed notebooks (``docs/build_site.py``, about a minute), serves
it over HTTP on a free local port, as a static host would, and opens it in the machine's own
Chromium. Run it with the browser test:
``uv run --group browser --group site pytest -m browser -n 0 tests/browser``.
Screenshots go to ``tests/browser/screenshots/site-*.png``.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import check_chapters as cc
import pytest
from browser_fixtures import (  # noqa: F401  (fixtures, used by name)
    browser_context_args,
    browser_type_launch_args,
    chromium,
)

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.browser]
if importlib.util.find_spec("pytest_playwright") is None:
    pytestmark.append(pytest.mark.skip(reason=cc.PLAYWRIGHT_MISSING))


@pytest.fixture(scope="session")
def site_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    sys.path.insert(0, str(ROOT / "docs"))
    import build_site  # docs/build_site.py

    if (missing := build_site.missing_tools()) is not None:
        pytest.skip(missing)
    work = tmp_path_factory.mktemp("site")
    site = build_site.build(work / "site", source=work / "src")
    build_site.build(work / "site", language=ZH, source=work / "src")  # the Chinese edition

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=site))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


sys.path.insert(0, str(ROOT / "docs"))
import build_site  # noqa: E402  (docs/build_site.py; it needs no site tool to be imported)

ZH = "zh_CN"
ZH_TITLE = {c.number: c.title for c in build_site.chapters(ZH)}

# The pages to open, the heading each must show, and what else must be on it.
PAGES = [
    ("home", "index.html", "Build an agent harness", ["Who it is for", "reading time"]),
    ("chapter-01", "chapters/01_agent_loop.html", "01 · The agent loop", ["About this chapter"]),
    (
        "chapter-09",
        "chapters/09_approvals.html",
        "09 · Approvals",
        ["About this chapter", "A static page cannot run it"],
    ),
    # The Chinese edition: its home page and a chapter, their own words, the English code.
    ("zh-home", f"{ZH}/index.html", build_site.say("home_title", ZH).lstrip("# "), ["阅读时间"]),
    (
        "zh-chapter-03",
        f"{ZH}/chapters/03_prompt_and_cache.html",
        f"03 · {ZH_TITLE['03']}",
        ["关于本章", "cache_control"],
    ),
]


def open_page(page: Any, url: str) -> tuple[list[str], list[str]]:
    """Open ``url``; return the script errors and the site's requests that failed."""
    errors: list[str] = []
    failed: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    site = url.split("/")[2]

    def answered(response: Any) -> None:
        if site in response.url and response.status >= 400:
            failed.append(f"{response.status} {response.url}")

    page.on("response", answered)
    page.on("requestfailed", lambda request: failed.append(f"failed {request.url}"))
    page.goto(url)
    page.wait_for_load_state("networkidle")
    return errors, [f for f in failed if site in f]


@pytest.mark.parametrize(("name", "path", "heading", "texts"), PAGES, ids=[p[0] for p in PAGES])
def test_site_page_renders_with_its_navigation(
    site_url: str, page: Any, name: str, path: str, heading: str, texts: list[str]
) -> None:
    errors, failed = open_page(page, f"{site_url}/{path}")
    out = cc.DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out / f"site-{name}.png"))  # what a reader sees first
    page.screenshot(path=str(out / f"site-{name}-full.png"), full_page=True)

    assert errors == []
    assert failed == []
    assert heading in page.locator("article h1").first.inner_text()
    body = page.locator("article").inner_text()
    for text in texts:
        assert text in body, text
    # The left sidebar lists every chapter; each image on the page has loaded.
    chapters = page.evaluate(
        "() => [...document.querySelectorAll('nav.bd-docs-nav a')]"
        ".filter(a => /^\\d\\d · /.test(a.textContent.trim())).length"
    )
    assert chapters == len(list((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")))
    assert page.locator("article img").count() >= 1  # the course map, a chapter's diagram
    broken_images = page.evaluate(
        "() => [...document.images].filter(i => !i.complete || i.naturalWidth === 0)"
        ".map(i => i.src)"
    )
    assert broken_images == []
    if name.startswith("chapter"):
        assert page.locator(".prev-next-area a").count() == 2  # previous and next chapter


@pytest.mark.parametrize(
    ("search", "shot"),
    [
        ("search.html?q=microcompact", "site-search"),
        (f"{ZH}/search.html?q=微压缩", "site-zh-search"),
    ],
    ids=["english", "chinese"],
)
def test_search_finds_the_chapter_that_teaches_a_word(
    site_url: str, page: Any, search: str, shot: str
) -> None:
    errors, failed = open_page(page, f"{site_url}/{search}")
    results = page.locator("#search-results ul.search li a")
    results.first.wait_for(timeout=30_000)
    page.screenshot(path=str(cc.DEFAULT_OUT / f"{shot}.png"))
    hrefs = [results.nth(i).get_attribute("href") or "" for i in range(results.count())]
    assert any("04_context_budget_and_microcompact" in h for h in hrefs), hrefs
    assert errors == [] and failed == []


def test_the_language_switch_opens_the_same_page_in_the_other_language(
    site_url: str, page: Any
) -> None:
    errors, failed = open_page(page, f"{site_url}/chapters/05_compaction.html")
    page.locator("nav.language-switch a", has_text="简体中文").click()
    page.wait_for_url(f"**/{ZH}/chapters/05_compaction.html")
    assert f"05 · {ZH_TITLE['05']}" in page.locator("article h1").first.inner_text()
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    page.screenshot(path=str(cc.DEFAULT_OUT / "site-zh-chapter-05.png"))
    page.locator("nav.language-switch a", has_text="English").click()
    page.wait_for_url("**/chapters/05_compaction.html")
    assert "05 · Full compaction" in page.locator("article h1").first.inner_text()
    assert errors == [] and failed == []
