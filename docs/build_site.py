"""Build the course's website from the committed notebooks: one command, static files out.

    uv run --group site python docs/build_site.py                   # English, into build/site/
    uv run --group site python docs/build_site.py --language zh_CN  # into build/site/zh_CN/
    uv run --group site python docs/build_site.py --gettext       # the texts to translate (.pot)

It never runs a notebook: every page shows the outputs stored in ``chapters/*.ipynb``, so the
build needs no key, no kernel and no network. It works in two steps:

1. **Prepare** a source tree under ``build/site-src/``: each chapter notebook, copied and
   adjusted for a static page (the code ``show(...)`` prints becomes a code block, a widget's
   output becomes its stored state and a note, an "About this chapter" box goes under the
   title); ``chapters/sources.md``, the sources page the chapters link to; ``images/``; a
   generated home page (the README's introduction and chapter table,
   and what each chapter adds, read from the code); and one reference page per module of
   ``harness``, from its docstrings. ``chapters/solutions/`` is not copied: the pages show
   the exercises and their hints, never the answers.
2. **Build** it with Sphinx (``myst-nb`` reads notebooks, ``sphinx-book-theme`` lays them out,
   Sphinx's own search index works from static files) into ``build/site/``.

Why Sphinx and myst-nb: they install from PyPI, build offline, render a notebook's stored
outputs as they are (plots, HTML tables, text), and Sphinx has gettext-based translation
built in, so a second language is a set of ``.po`` files, not a second copy of the course.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the modules beside this file:
import translation  # docs/translation.py: the other languages
from i18n.sources import cell_text, read_notebook  # docs/i18n/: the notebooks as JSON
from site_texts import TEXTS  # docs/site_texts.py: the pages' own texts

if TYPE_CHECKING:
    from harness.course import ModuleFacts

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SOURCE = ROOT / "build" / "site-src"
OUTPUT = ROOT / "build" / "site"
CHAPTERS = ROOT / "chapters"
IMAGES = ROOT / "images"
SOURCES = CHAPTERS / "sources.md"
"""The sources page: a public address for every documented and observed number. It sits beside
the notebooks, so their links (``sources.md#chapter-06``) work in Jupyter and on the site."""
SOURCES_PAGE = "chapters/sources"
WIDGET_SHOTS = IMAGES / "widgets"

# The repository the "run this chapter" links open on Binder. GitHub Actions sets
# GITHUB_REPOSITORY; otherwise the README's one Binder line names it (OWNER/REPO until a
# host fills it in, as "Hosting a workshop" says).
BINDER_LINE = re.compile(r"^\[binder\]: https://mybinder\.org/v2/gh/([^/\s]+/[^/\s]+)/", re.M)

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
NBVAL_MARKERS = ("# NBVAL_SKIP", "# NBVAL_IGNORE_OUTPUT", "# NBVAL_CHECK_OUTPUT")


# The packages the build needs (the `site` dependency group); tests skip without them.
SITE_TOOLS = ("sphinx", "myst_nb", "sphinx_book_theme")


def missing_tools() -> str | None:
    """Why the site cannot be built here, or None when it can."""
    import importlib.util

    missing = [name for name in SITE_TOOLS if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (
        f"the site's tools are not installed ({', '.join(missing)}): "
        "add `--group site` to the uv command (`uv run --group site pytest ...`)"
    )


# --- what the course is made of -----------------------------------------------------------


@dataclass(frozen=True)
class Chapter:
    """One chapter notebook, as the site names it."""

    path: Path
    number: str
    """``"00"`` to ``"11"``: the first two characters of the file name."""
    title: str
    """The first heading, without its ``NN ·`` prefix."""
    minutes: int
    """Reading time, as the chapter's first cell states it (a test measures it)."""
    exercise_minutes: int
    """Exercise time, as the chapter's first cell states it (a test checks the estimate)."""

    @property
    def page(self) -> str:
        """The page's name in the site: ``chapters/00_start_here``."""
        return f"chapters/{self.path.stem}"


def chapters(language: str | None = None) -> list[Chapter]:
    """Every chapter notebook, in order (titles in ``language``: ``None`` is English)."""
    found = []
    for path in sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb")):
        first = cell_text(read_notebook(path)["cells"][0])
        heading = re.search(r"^# (.+)$", first, re.M)
        if language is not None:
            translated = notebook_in(path, language)["cells"][0]
            heading = re.search(r"^# (.+)$", cell_text(translated), re.M)
        minutes = re.search(r"reads in about (\d+) minutes", first)
        exercises = re.search(r"plus about (\d+) for its exercises", first)
        if heading is None or minutes is None or exercises is None:
            raise SystemExit(
                f"{path.name}: the first cell needs a '# ' title, a reading and an exercise time"
            )
        title = re.sub(r"^\d\d\s*·\s*", "", heading.group(1)).strip()
        found.append(
            Chapter(path, path.name[:2], title, int(minutes.group(1)), int(exercises.group(1)))
        )
    return found


# --- the languages -------------------------------------------------------------------------
#
# Every text of its own that a page shows is in docs/site_texts.py, in English, and translated
# through the `site` catalogue (docs/translation.py): the chapters, the sources page and the
# README come translated from theirs.


def say(key: str, language: str | None = None, **values: object) -> str:
    """One of the site's own texts in ``language`` (``None``: English), filled in."""
    template = TEXTS[key]
    if language is not None:
        template = translator(language).text(key)
    return template.format(**values)


@functools.cache
def translator(language: str) -> translation.Translator:
    """The translations of ``language``, for pages that take their English page's place."""
    return translation.Translator(language, site=True)


def notebook_in(path: Path, language: str | None) -> dict[str, Any]:
    """A chapter notebook in ``language`` (``None``: as committed, in English)."""
    if language is None:
        return read_notebook(path)
    return translator(language).notebook(translation.document(f"chapters/{path.stem}"))


def repository() -> str:
    """``owner/name`` on GitHub, for the Binder links."""
    named = os.environ.get("GITHUB_REPOSITORY", "").strip()
    if named:
        return named
    found = BINDER_LINE.search((ROOT / "README.md").read_text(encoding="utf-8"))
    return found.group(1) if found else "OWNER/REPO"


def binder_url(notebook: str) -> str:
    """A Binder link that opens ``notebook`` (a path from the repository's root) in JupyterLab."""
    return f"https://mybinder.org/v2/gh/{repository()}/HEAD?urlpath=lab/tree/{notebook}"


# --- what each chapter adds, from the code ------------------------------------------------


def reference_modules() -> list[str]:
    """The modules that get a reference page: all of ``harness`` but the exercise checks
    (a check's hints are in its chapter; its code would give the answers away)."""
    from harness.course import CHAPTER

    return sorted(name for name in CHAPTER if not name.startswith("harness.exercises"))


def chapter_facts(number: int) -> list[ModuleFacts]:
    """What each module of chapter ``number`` adds, read from the code (exercise checks left
    out: see :func:`reference_modules`)."""
    from harness.course import chapter_modules, facts

    return [facts(n) for n in chapter_modules(number) if not n.startswith("harness.exercises")]


def adds_table(number: int, language: str | None = None) -> str:
    """A Markdown table of what chapter ``number`` adds to the package, read from the code."""
    rows = []
    found = chapter_facts(number)
    for module in found:
        plugs = "; ".join(
            f"`{cls}`: {', '.join(f'`{p}`' for p in points) or say('adds_none', language)}"
            for cls, points in module.plugins.items()
        )
        if module.defines_points:
            defines = say("adds_defines", language)
            plugs = f"{defines} " + ", ".join(f"`{p}`" for p in module.points)
        if module.tools:
            tools = ", ".join(f"`{t}`" for t in module.tools)
            plugs = f"{plugs}; " if plugs else ""
            plugs += f"{say('adds_tools', language)} {tools}"
        summary = module.summary.replace("|", "\\|").replace("``", "`")
        rows.append(f"| {{py:mod}}`{module.name}` | {module.lines} | {plugs or '–'} | {summary} |")
    head = [say("adds_head", language), "|---|---:|---|---|"]
    total = sum(m.lines for m in found)
    foot = "\n\n" + say("adds_foot", language, modules=len(rows), lines=f"{total:,}")
    return "\n".join(head + rows) + foot


# --- step 1: the source tree --------------------------------------------------------------


def about_cell(chapter: Chapter, language: str | None = None) -> dict[str, Any]:
    """The box under a chapter's title: reading time, where to run it, what it adds."""
    notebook = f"chapters/{chapter.path.name}"
    if language is not None:
        notebook = f"{translation.EDITIONS[language].folder}/{chapter.path.name}"
    about = say(
        "about",
        language,
        minutes=chapter.minutes,
        exercise_minutes=chapter.exercise_minutes,
        binder=binder_url(notebook),
        notebook=notebook,
        setup=translator(language).anchor("README", "set-up") if language else "set-up",
    )
    text = f"{about}\n{adds_table(int(chapter.number), language)}\n:::\n"
    cell_id = f"about-{chapter.number}"
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": text}


def is_shown_code(output: dict[str, Any]) -> bool:
    """An output of ``harness.notebook.show``: IPython's ``Code`` (HTML with its own CSS)."""
    data = output.get("data", {})
    html = "".join(data.get("text/html", ""))
    return "text/latex" in data and '<div class="highlight' in html


def code_block(source: str, language: str = "python") -> str:
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", source)), default=0))
    return f"{fence}{language}\n{source.rstrip()}\n{fence}\n"


def static_outputs(
    cell: dict[str, Any], chapter: Chapter, language: str | None = None
) -> list[dict[str, Any]]:
    """A code cell's stored outputs, adjusted for a page that runs nothing."""
    outputs = []
    for output in cell.get("outputs", []):
        output = copy.deepcopy(output)
        data = output.get("data", {})
        if is_shown_code(output):
            # The theme highlights code blocks itself (and gives them a copy button); the
            # output's own HTML would bring a second stylesheet with it.
            text = "".join(data["text/plain"])
            output["data"] = {"text/markdown": code_block(text)}
        elif WIDGET_MIME in data:
            text = "".join(data.get("text/plain", ""))
            output["data"] = {"text/markdown": widget_note(cell, chapter, text, language)}
        outputs.append(output)
    if not outputs and cell_text(cell).lstrip().startswith("# NBVAL_SKIP"):
        outputs.append(
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {"text/markdown": widget_note(cell, chapter, "", language)},
            }
        )
    return outputs


def widget_note(
    cell: dict[str, Any], chapter: Chapter, state: str, language: str | None = None
) -> str:
    """What a static page shows for a cell that needs a running kernel."""
    shot = WIDGET_SHOTS / f"{chapter.path.stem}-{cell.get('id', '')}.png"
    parts = [":::{note}"]
    if state:
        parts.append(say("widget_state", language) + "\n")
        parts.append(code_block(state, "text"))
    else:
        parts.append(say("widget_no_state", language))
    if shot.exists():
        parts.append("\n" + say("widget_shot", language) + "\n")
        parts.append(f"![{say('widget_shot_alt', language)}](../images/widgets/{shot.name})\n")
    notebook = f"chapters/{chapter.path.name}"
    if language is not None:
        notebook = f"{translation.EDITIONS[language].folder}/{chapter.path.name}"
    parts.append("\n" + say("widget_run", language, binder=binder_url(notebook)))
    parts.append(":::")
    return "\n".join(parts)


def site_notebook(chapter: Chapter, language: str | None = None) -> dict[str, Any]:
    """A chapter notebook as its page shows it (in ``language``; ``None``: English)."""
    notebook = copy.deepcopy(notebook_in(chapter.path, language))
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            cell["outputs"] = static_outputs(cell, chapter, language)  # reads the NBVAL markers
            lines = cell_text(cell).splitlines()
            cell["source"] = "\n".join(line for line in lines if line.strip() not in NBVAL_MARKERS)
            jupyter = cell.get("metadata", {}).get("jupyter", {})
            tags = list(cell.get("metadata", {}).get("tags", []))
            if jupyter.get("source_hidden"):
                tags.append("hide-input")
            if jupyter.get("outputs_hidden"):
                tags.append("hide-output")
            cell.setdefault("metadata", {})["tags"] = tags
        cells.append(cell)
        if index == 0:
            cells.append(about_cell(chapter, language))
    notebook["cells"] = cells
    return notebook


def chapter_summary(number: int) -> tuple[int, int, list[str]]:
    """Modules, lines of code and the loop points used, for chapter ``number``."""
    from harness.course import POINTS

    found = chapter_facts(number)
    used = {p for module in found for p in module.points}
    return len(found), sum(m.lines for m in found), [p for p in POINTS if p in used]


def hours(minutes: int, language: str | None = None) -> str:
    """``425`` as ``7 h 05 min``."""
    return say("hours", language, hours=minutes // 60, minutes=minutes % 60)


def home_page(found: list[Chapter], language: str | None = None) -> str:
    readme = "README.md"  # a copy beside index.md (conf.py keeps it from being a page)
    toc = "\n".join(chapter.page for chapter in found)
    rows = []
    for c in found:
        modules, lines, points = chapter_summary(int(c.number))
        plugs = ", ".join(f"`{p}`" for p in points) or "–"
        rows.append(
            f"| {c.number} | [{c.title}]({c.page}.ipynb) "
            f"| {say('minutes', language, minutes=c.minutes)} "
            f"| {say('minutes', language, minutes=c.exercise_minutes)} "
            f"| {modules} | {lines:,} | {plugs} |"
        )
    total = sum(c.minutes for c in found)
    practice = sum(c.exercise_minutes for c in found)
    table = "\n".join(rows)
    chapters_text = say(
        "home_chapters",
        language,
        reading=hours(total, language),
        practice=hours(practice, language),
    )
    return f"""\
{say("home_title", language)}

```{{include}} {readme}
:start-after: <!-- site: intro -->
:end-before: <!-- site: end intro -->
```

{chapters_text}
{say("home_table_head", language)}
|---|---|---|---|---:|---:|---|
{table}

{say("home_sources", language, sources=f"{SOURCES_PAGE}.md")}
```{{include}} {readme}
:start-after: <!-- site: setup -->
:end-before: <!-- site: end setup -->
```

```{{toctree}}
:caption: {say("toc_chapters", language)}
:hidden:

{toc}
```

```{{toctree}}
:caption: {say("toc_sources", language)}
:hidden:

{SOURCES_PAGE}
```

```{{toctree}}
:caption: {say("toc_reference", language)}
:hidden:

reference/index
```
"""


def reference_index(language: str | None = None) -> str:
    from harness.course import CHAPTER

    by_chapter: dict[int, list[str]] = {}
    for name in reference_modules():
        by_chapter.setdefault(CHAPTER[name], []).append(name)
    parts = [say("reference_intro", language)]
    toc = []
    for number in sorted(by_chapter):
        parts.append(say("reference_chapter", language, number=f"{number:02d}") + "\n")
        for name in by_chapter[number]:
            parts.append(f"- {{py:mod}}`{name}`")
            toc.append(name)
        parts.append("")
    parts.append("```{toctree}\n:hidden:\n:maxdepth: 1\n\n" + "\n".join(toc) + "\n```\n")
    return "\n".join(parts)


def module_page(name: str, language: str | None = None) -> str:
    """A module's reference page, in reStructuredText: autodoc writes reST, which a Markdown
    page would show as text, and the package's docstrings are reST too."""
    from harness.course import facts

    found = facts(name)
    title = f"``{name}``"
    return f"""\
{title}
{"=" * len(title)}

{say("module_built", language, chapter=f"{found.chapter:02d}", path=found.path, lines=found.lines)}

.. automodule:: {name}
   :members:
   :show-inheritance:
   :ignore-module-all:
"""


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def prepare(source: Path = SOURCE, language: str | None = None) -> list[Chapter]:
    """Write the site's source tree into ``source`` (emptied first), in ``language`` (``None``:
    English). A translated page takes its English page's name, so the language switch goes
    from one to the other."""
    if source.exists():
        shutil.rmtree(source)
    found = chapters(language)
    for chapter in found:
        write(
            source / "chapters" / chapter.path.name,
            json.dumps(site_notebook(chapter, language), indent=1, ensure_ascii=False) + "\n",
        )
    if language is None:
        shutil.copy(SOURCES, source / "chapters" / SOURCES.name)
        shutil.copy(ROOT / "README.md", source / "README.md")
    else:
        pages = translator(language)
        write(
            source / "chapters" / SOURCES.name, pages.file(translation.document("chapters/sources"))
        )
        write(source / "README.md", pages.file(translation.document("README")))
    shutil.copytree(IMAGES, source / "images")
    write(source / "index.md", home_page(found, language))
    write(source / "reference" / "index.md", reference_index(language))
    for name in reference_modules():
        write(source / "reference" / f"{name}.rst", module_page(name, language))
    return found


# --- step 2: Sphinx -----------------------------------------------------------------------


def sphinx(builder: str, out: Path, *, source: Path = SOURCE, language: str | None = None) -> None:
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-b",
        builder,
        "-c",
        str(DOCS),
        "-q",  # warnings only
        "-j",
        "auto",  # one process per core
        "-W",  # a warning (a broken reference, a missing image) fails the build
        "--keep-going",
        "-d",
        str(source.parent / f"doctrees-{builder}-{language or 'en'}"),
        str(source),
        str(out),
    ]
    if language:  # the theme's words in that language, and the site's title (the sidebar's)
        title = say("home_title", language).lstrip("# ").strip()
        command += ["-D", f"language={language}", "-D", f"html_title={title}"]
    subprocess.run(command, check=True, cwd=ROOT)


def build(out: Path = OUTPUT, *, language: str | None = None, source: Path = SOURCE) -> Path:
    """Prepare the sources (in ``source``) and build the HTML site; returns the folder that
    holds it: ``out``, or ``out/<language>`` for a translation.

    Sphinx writes beside ``source`` first (myst-nb keeps a working folder next to Sphinx's
    output, which must not land inside a published site), then the pages are copied over.
    """
    prepare(source, language)
    staged = source.parent / "html" / (language or "en")
    sphinx("html", staged, source=source, language=language)
    (staged / ".nojekyll").touch()  # GitHub Pages: serve the folders whose names start with _
    target = out / language if language else out
    if target.exists():  # no page of an earlier build left over; other languages stay
        languages = set(translation.EDITIONS)
        for old in target.iterdir():
            if not (language is None and old.name in languages):
                shutil.rmtree(old) if old.is_dir() else old.unlink()
    shutil.copytree(staged, target, dirs_exist_ok=True)
    return target


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=OUTPUT, help="where the site goes (build/site/)"
    )
    parser.add_argument(
        "--language",
        help="build only this language: en, or a translation's code such as zh_CN "
        "(default: English, then every translation)",
    )
    parser.add_argument(
        "--gettext", action="store_true", help="write the texts to translate to build/gettext/"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.gettext:
        prepare()
        sphinx("gettext", ROOT / "build" / "gettext")
        print(f"texts to translate: build/gettext/ ({time.perf_counter() - started:.1f} s)")
        return 0
    languages = [None, *translation.EDITIONS] if args.language is None else [args.language]
    for language in languages:
        target = build(args.out, language=None if language == "en" else language)
        pages = sum(1 for _ in target.rglob("*.html") if language or "zh_CN" not in _.parts)
        print(
            f"site: {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target} "
            f"({pages} pages) in {time.perf_counter() - started:.1f} s"
        )
    print(f"{folder_size(args.out) / 1e6:.1f} MB in all; open index.html in a browser")
    return 0


if __name__ == "__main__":
    sys.exit(main())
