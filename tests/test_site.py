"""The course's website (``docs/build_site.py``): built from the committed notebooks, every page
there, nothing broken, nothing of this machine in it, no answers given away.

The first tests check how a notebook is turned into a page, without Sphinx. The rest build
the whole site once (about a minute on two cores) and read the HTML; they are skipped, with
the reason, when the site's tools are not installed: run them with
``uv run --group site pytest -n 0 tests/test_site.py`` (CI does).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))

import build_site as site_build  # noqa: E402  (docs/build_site.py)
import translation  # noqa: E402  (docs/translation.py)

from harness.course import CHAPTER, chapter_modules  # noqa: E402

SITE_TOOLS_MISSING = site_build.missing_tools()

CHAPTERS = site_build.chapters()


def chapter(number: str) -> site_build.Chapter:
    return next(c for c in CHAPTERS if c.number == number)


def code_cells(notebook: dict[str, object]) -> list[dict[str, object]]:
    cells = notebook["cells"]
    assert isinstance(cells, list)
    return [c for c in cells if c["cell_type"] == "code"]


# --- a notebook made into a page, without Sphinx ---------------------------------------------


def test_every_chapter_is_found_with_its_title_reading_and_exercise_time() -> None:
    names = sorted(p.name for p in (ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    assert [c.path.name for c in CHAPTERS] == names
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for c in CHAPTERS:
        assert not c.title.startswith(c.number)
        row = rf"^\| {c.number} \|.*\| {c.minutes} min \| {c.exercise_minutes} min \|"
        assert re.search(row, readme, re.M), c.number


def test_shown_code_becomes_a_code_block_without_its_own_stylesheet() -> None:
    page = site_build.site_notebook(chapter("01"))
    shown = [
        o
        for cell in code_cells(page)
        for o in cell["outputs"]  # type: ignore[attr-defined]
        if "```python\n# harness/" in "".join(o.get("data", {}).get("text/markdown", ""))
    ]
    assert shown, "chapter 01 shows harness code with show(...)"
    for output in shown:
        assert set(output["data"]) == {"text/markdown"}


def test_a_stored_widget_becomes_its_state_and_a_note_on_how_to_run_it() -> None:
    page = site_build.site_notebook(chapter("09"))
    text = json.dumps(page)
    assert site_build.WIDGET_MIME not in text
    assert "Approval inbox: 1 call(s) listed" in text
    assert "A static page cannot run it" in text
    assert "mybinder.org" in text


def test_a_cell_skipped_by_the_tests_gets_a_note_instead_of_nothing() -> None:
    source = json.loads(chapter("04").path.read_text(encoding="utf-8"))
    skipped = [
        c["id"]
        for c in code_cells(source)
        if "".join(c["source"]).startswith("# NBVAL_SKIP") and not c["outputs"]
    ]
    assert skipped, "chapter 04's slider cell is skipped by the tests"
    page = site_build.site_notebook(chapter("04"))
    for cell in code_cells(page):
        if cell["id"] in skipped:
            assert "NBVAL_SKIP" not in str(cell["source"])
            assert "no output is stored" in json.dumps(cell["outputs"])


def test_each_chapter_page_starts_with_what_the_chapter_adds() -> None:
    for c in CHAPTERS:
        page = site_build.site_notebook(c)
        about = "".join(page["cells"][1]["source"])
        assert "About this chapter" in about
        assert f"about {c.minutes} minutes, plus about {c.exercise_minutes} for" in about
        assert f"lab/tree/chapters/{c.path.name}" in about
        for name in chapter_modules(int(c.number)):
            if not name.startswith("harness.exercises"):
                assert f"{{py:mod}}`{name}`" in about, (c.number, name)


def test_the_adds_table_counts_lines_and_plug_points_from_the_code() -> None:
    table = site_build.adds_table(7)
    assert "`SessionMemory`: `after_reply`" in table
    row = next(line for line in table.splitlines() if "`harness.memory.plugin`" in line)
    source = (ROOT / "harness" / "memory" / "plugin.py").read_text(encoding="utf-8").splitlines()
    lines = sum(1 for s in source if s.strip() and not s.strip().startswith("#"))
    assert f"| {lines} |" in row


def test_the_reference_covers_every_module_but_the_exercise_checks() -> None:
    modules = site_build.reference_modules()
    assert "harness.loop" in modules
    assert not [m for m in modules if m.startswith("harness.exercises")]
    assert set(modules) | {m for m in CHAPTER if m.startswith("harness.exercises")} == set(CHAPTER)


def test_binder_links_name_the_repository_from_the_environment_or_the_readme(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_REPOSITORY", "someone/harness-course")
    assert site_build.binder_url("chapters/00_start_here.ipynb") == (
        "https://mybinder.org/v2/gh/someone/harness-course/HEAD"
        "?urlpath=lab/tree/chapters/00_start_here.ipynb"
    )
    monkeypatch.delenv("GITHUB_REPOSITORY")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"/gh/{site_build.repository()}/" in readme


# --- the built site -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if SITE_TOOLS_MISSING:
        pytest.skip(SITE_TOOLS_MISSING)
    work = tmp_path_factory.mktemp("site")
    site = site_build.build(work / "site", source=work / "src")
    for language in translation.EDITIONS:  # each translation in a folder of its own
        site_build.build(work / "site", language=language, source=work / "src")
    return site


class Page(HTMLParser):
    """The links, images, ids and visible text of one HTML page."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.links: list[str] = []
        self.images: list[str] = []
        self.ids: set[str] = set()
        self.classes: list[str] = []
        self.text: list[str] = []
        self._skip = 0
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if "id" in found:
            self.ids.add(found["id"])
        self.classes.extend(found.get("class", "").split())
        if tag == "a" and "href" in found:
            self.links.append(found["href"])
        if tag in ("img", "script") and "src" in found:
            self.images.append(found["src"])
        if tag == "link" and "href" in found:
            self.links.append(found["href"])
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.text.append(data)

    @property
    def visible(self) -> str:
        return " ".join(" ".join(self.text).split())


def pages(site: Path) -> Iterator[Path]:
    """The site's pages (``_static`` holds the theme's templates, not pages)."""
    yield from sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


@pytest.fixture(scope="module")
def parsed(site: Path) -> dict[Path, Page]:
    return {path: Page(path) for path in pages(site)}


def is_external(url: str) -> bool:
    return bool(urlsplit(url).scheme) or url.startswith("//")


def test_every_chapter_and_module_has_a_page(site: Path, parsed: dict[Path, Page]) -> None:
    for c in CHAPTERS:
        page = site / "chapters" / f"{c.path.stem}.html"
        assert page.exists(), c.path.name
        assert c.title in parsed[page].visible
    for name in site_build.reference_modules():
        assert (site / "reference" / f"{name}.html").exists(), name
    assert (site / "index.html").exists()
    assert (site / "search.html").exists()


def test_the_sources_page_is_on_the_site_with_an_anchor_for_every_chapter(
    site: Path, parsed: dict[Path, Page]
) -> None:
    page = site / "chapters" / "sources.html"
    assert page.exists(), "chapters/sources.md was not copied into the site"
    missing = [c.number for c in CHAPTERS if f"chapter-{c.number}" not in parsed[page].ids]
    assert missing == [], f"no anchor on the sources page for chapters {missing}"
    assert any(link.endswith("chapters/sources.html") for link in parsed[site / "index.html"].links)


def test_no_internal_link_or_image_is_broken(site: Path, parsed: dict[Path, Page]) -> None:
    broken = []
    for path, page in parsed.items():
        for url in page.links + page.images:
            if not url or is_external(url) or url.startswith(("#", "mailto:", "javascript:")):
                continue
            parts = urlsplit(url)
            target = (path.parent / unquote(parts.path)).resolve()
            if not target.exists():
                broken.append(f"{path.relative_to(site)} -> {url}")
            elif (
                parts.fragment
                and target in parsed
                and unquote(parts.fragment) not in (parsed[target].ids)
            ):
                broken.append(f"{path.relative_to(site)} -> {url} (no such anchor)")
    assert broken == []


def test_no_page_shows_an_error_output(site: Path, parsed: dict[Path, Page]) -> None:
    for path, page in parsed.items():
        assert "Traceback (most recent call last)" not in page.visible, path
        assert not {"traceback", "stderr", "output_error"} & set(page.classes), path


def machine_paths(site: Path) -> list[str]:
    """Paths of the machine that built the site: the project, the home folder, the temporary
    folder, the Python in use. (A docstring's example path, such as a transcript's
    ``/home/ana/shop``, is not one of them.)"""
    import sysconfig
    import tempfile

    found = {
        str(ROOT),
        str(Path.home()),
        tempfile.gettempdir(),
        sys.prefix,
        sys.base_prefix,
        sysconfig.get_paths()["purelib"],
        str(site),
    }
    return sorted(p for p in found if len(p) > 4)


def test_no_page_holds_a_path_of_the_machine_that_built_it(site: Path) -> None:
    paths = machine_paths(site)
    found = [
        f"{path.relative_to(site)}: {machine}"
        for path in sorted(site.rglob("*"))
        if path.suffix in (".html", ".js", ".txt", ".json", ".css")
        for machine in paths
        if machine in path.read_text(encoding="utf-8", errors="replace")
    ]
    assert found == []
    assert "site-packages" not in "".join(
        p.read_text(encoding="utf-8", errors="replace") for p in pages(site)
    )


def test_pages_show_the_exercises_and_their_hints_but_never_the_solutions(
    site: Path, parsed: dict[Path, Page]
) -> None:
    assert not list(site.rglob("*solution*"))
    for c in CHAPTERS:
        visible = parsed[site / "chapters" / f"{c.path.stem}.html"].visible
        assert "Exercise 1:" in visible and "not yet:" in visible, c.number
        notebook = c.path.read_text(encoding="utf-8")
        solution = ROOT / "chapters" / "solutions" / f"ch{c.number}.py"
        # Lines of the solution that the chapter itself does not contain: its answers.
        answers = [
            line.strip()
            for line in solution.read_text(encoding="utf-8").splitlines()
            if len(line.strip()) > 30
            and not line.strip().startswith(("#", '"', "from ", "import "))
            and json.dumps(line.strip())[1:-1] not in notebook
        ]
        assert answers, f"chapter {c.number}'s solution has lines of its own"
        for line in answers:
            assert " ".join(line.split()) not in visible, (c.number, line)


def test_chapter_pages_link_the_previous_and_next_chapter(
    site: Path, parsed: dict[Path, Page]
) -> None:
    for before, this, after in zip(CHAPTERS, CHAPTERS[1:], CHAPTERS[2:], strict=False):
        links = parsed[site / "chapters" / f"{this.path.stem}.html"].links
        assert f"{before.path.stem}.html" in links, this.number
        assert f"{after.path.stem}.html" in links, this.number


def test_chapter_pages_link_their_modules_reference_and_binder(
    site: Path, parsed: dict[Path, Page]
) -> None:
    for c in CHAPTERS:
        links = parsed[site / "chapters" / f"{c.path.stem}.html"].links
        assert site_build.binder_url(f"chapters/{c.path.name}") in links, c.number
        for name in chapter_modules(int(c.number)):
            if not name.startswith("harness.exercises"):
                assert f"../reference/{name}.html" in links, (c.number, name)


def test_shown_code_is_highlighted_by_the_site(site: Path) -> None:
    html = (site / "chapters" / "01_agent_loop.html").read_text(encoding="utf-8")
    assert "line-height: 125%" not in html  # IPython's own stylesheet for Code
    assert re.search(r'<div class="highlight-python notranslate">', html)
    assert "# harness/loop.py" in html


def test_the_home_page_has_the_map_and_every_chapter_with_its_time(
    site: Path, parsed: dict[Path, Page]
) -> None:
    home = parsed[site / "index.html"]
    assert (
        "images/course_map.svg" in " ".join(home.images)
        or (site / "_images" / "course_map.svg").exists()
    )
    for c in CHAPTERS:
        assert f"chapters/{c.path.stem}.html" in home.links, c.number
        shown = rf"{c.number} {re.escape(c.title)} {c.minutes} min {c.exercise_minutes} min"
        assert re.search(shown, home.visible), c


def test_the_search_index_knows_the_chapters_words(site: Path) -> None:
    index = (site / "searchindex.js").read_text(encoding="utf-8")
    for word in ("microcompact", "sidechain", "retri"):
        assert word in index.lower(), word


def test_module_pages_carry_the_docstrings(site: Path, parsed: dict[Path, Page]) -> None:
    from harness.course import facts

    for name in ("harness.loop", "harness.recovery", "harness.transcript"):
        visible = parsed[site / "reference" / f"{name}.html"].visible
        summary = facts(name).summary.replace("``", "")
        assert " ".join(summary.split()[:6]) in visible, name
        # The docstrings are read as reStructuredText: no markup shows as text.
        assert ":class:" not in visible and ".. py:" not in visible and "``" not in visible, name
    loop = parsed[site / "reference" / "harness.loop.html"]
    assert {"harness.loop.Plugin", "harness.loop.Plugin.before_request"} <= loop.ids


# --- the Chinese edition --------------------------------------------------------------------

ZH = "zh_CN"
ZH_CHAPTERS = site_build.chapters(ZH)


def switch_links(page: Page, path: Path, site: Path) -> set[Path]:
    """Where a page's language switch goes (the links in ``nav.language-switch``)."""
    html = path.read_text(encoding="utf-8")
    nav = re.search(r'<nav class="language-switch".*?</nav>', html, re.S)
    assert nav is not None, path.relative_to(site)
    return {(path.parent / href).resolve() for href in re.findall(r'href="([^"]+)"', nav.group())}


def test_every_english_page_has_its_chinese_page_and_the_switch_goes_both_ways(
    site: Path, parsed: dict[Path, Page]
) -> None:
    english = [p for p in parsed if ZH not in p.relative_to(site).parts]
    assert len(english) > 100
    for path in english:
        chinese = site / ZH / path.relative_to(site)
        assert chinese.exists(), path.relative_to(site)
        assert switch_links(parsed[path], path, site) == {chinese.resolve()}
        assert switch_links(parsed[chinese], chinese, site) == {path.resolve()}


def test_chinese_pages_are_marked_chinese_and_read_in_chinese(
    site: Path, parsed: dict[Path, Page]
) -> None:
    home = site / ZH / "index.html"
    assert '<html lang="zh-CN"' in home.read_text(encoding="utf-8")
    title = site_build.say("home_title", ZH).lstrip("# ").strip()
    assert re.search(r"[\u4e00-\u9fff]", title)
    assert f"<title>{title}" in (site / ZH / "index.html").read_text("utf-8")
    for c in ZH_CHAPTERS:
        page = site / ZH / "chapters" / f"{c.path.stem}.html"
        visible = parsed[page].visible
        assert c.title in visible and re.search(r"[\u4e00-\u9fff]", c.title), c.number
        assert "关于本章" in visible and "阅读时间" in visible, c.number
        shown = rf"{c.number} {re.escape(c.title)} {c.minutes} 分钟 {c.exercise_minutes} 分钟"
        assert re.search(shown, parsed[home].visible), c.number
    sources = parsed[site / ZH / "chapters" / "sources.html"]
    assert "资料来源" in sources.visible


def test_the_chinese_site_keeps_the_english_code_and_outputs(site: Path) -> None:
    english = (site / "chapters" / "01_agent_loop.html").read_text(encoding="utf-8")
    chinese = (site / ZH / "chapters" / "01_agent_loop.html").read_text(encoding="utf-8")
    code = re.compile(
        r'<div class="highlight-(?:python|ipython3)[^"]*"><div class="highlight">'
        r"<pre>.*?</pre>",
        re.S,
    )
    assert code.findall(english) and code.findall(chinese) == code.findall(english)


def test_the_chinese_search_index_knows_chinese_words(site: Path) -> None:
    index = (site / ZH / "searchindex.js").read_text(encoding="utf-8")
    index = index.encode().decode("unicode_escape") if "\\u" in index else index
    assert "microcompact" in index.lower()
    assert re.search(r"[\u4e00-\u9fff]{2}", index)
