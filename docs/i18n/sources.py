"""What the course translates: its editions, and the English documents with prose in them
(every chapter notebook, the sources page, the README's course sections, the website's own
texts). A new ``chapters/NN_*.ipynb`` is found by :func:`documents` with no change here."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LOCALES = ROOT / "docs" / "locales"
CHAPTERS = ROOT / "chapters"


@dataclass(frozen=True)
class Edition:
    """Where a language's generated files go."""

    language: str
    """The gettext and Sphinx code: ``zh_CN``."""
    name: str
    """The language's own name, for the language switch."""
    folder: str
    """The translated notebooks and sources page, from the repository's root."""
    readme: str
    """The translated README, from the repository's root."""
    switch: str
    """The README's line that names the languages, in this edition (it stands where the
    English README has :data:`SWITCH`)."""


EDITIONS = {
    "zh_CN": Edition(
        "zh_CN",
        "简体中文",
        "chapters/zh",
        "README.zh-CN.md",
        "[English](README.md) · **简体中文**：整个课程的简体中文版，由英文章节生成"
        "（`chapters/zh/`）。代码、输出和命令行程序输出的信息保持英文。",
    )
}

SWITCH = re.compile(r"^\*\*English\*\* · .*?\n\n", re.S | re.M)
"""The English README's line that names the languages: each edition writes its own."""

README_END = "## The course as a website"
"""The README is translated up to this heading; what follows is for the course's developers."""
README_REST = (
    "The rest of this README (the course as a website, the course in a browser, the layout of "
    "the repository and the benchmarks) is for the course's developers and stays in English: "
    "[README.md](README.md#the-course-as-a-website)."
)


@dataclass(frozen=True)
class Document:
    """One English source and its catalogue."""

    domain: str
    """The catalogue's name: ``chapters/03_prompt_and_cache``, ``chapters/sources``, ``README``,
    ``site``."""
    english: str
    """The English file, from the repository's root (``docs/site_texts.py`` for ``site``)."""
    kind: str
    """``notebook``, ``markdown``, ``readme`` or ``site``."""

    def catalogue(self, language: str) -> Path:
        return LOCALES / language / f"{self.domain}.po"

    def translated(self, language: str) -> str | None:
        """The generated file, from the repository's root (``None``: the website's own texts)."""
        edition = EDITIONS[language]
        if self.kind == "readme":
            return edition.readme
        if self.kind == "site":
            return None
        return f"{edition.folder}/{PurePosixPath(self.english).name}"


def documents() -> list[Document]:
    """Every English source with prose to translate, chapters in order."""
    found = [
        Document(f"chapters/{path.stem}", f"chapters/{path.name}", "notebook")
        for path in sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))
    ]
    found.append(Document("chapters/sources", "chapters/sources.md", "markdown"))
    found.append(Document("README", "README.md", "readme"))
    found.append(Document("site", "docs/site_texts.py", "site"))
    return found


def document(domain: str) -> Document:
    for found in documents():
        if found.domain == domain:
            return found
    raise SystemExit(f"no document {domain!r}: see `translation.py status`")


def read_notebook(path: Path) -> dict[str, Any]:
    notebook: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return notebook


def cell_text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def readme_english() -> str:
    """The README's course sections (up to :data:`README_END`), and the note on the rest."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    head, found, _ = text.partition(README_END)
    if not found:
        raise SystemExit(f"README.md has no {README_END!r}: update README_END in translation.py")
    return SWITCH.sub("", head, count=1).rstrip("\n") + "\n\n" + README_REST + "\n"


def texts(doc: Document) -> Iterator[tuple[str, str]]:
    """The English texts of ``doc`` as (where, Markdown) pairs."""
    if doc.kind == "notebook":
        for index, cell in enumerate(read_notebook(ROOT / doc.english)["cells"]):
            if cell["cell_type"] == "markdown":
                yield f"cell {cell.get('id', index)}", cell_text(cell)
    elif doc.kind == "markdown":
        yield doc.english, (ROOT / doc.english).read_text(encoding="utf-8")
    elif doc.kind == "readme":
        yield doc.english, readme_english()
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        import site_texts  # docs/site_texts.py

        yield from site_texts.TEXTS.items()
