"""The course in other languages, from one source: the English chapters.

    uv run python docs/translation.py update     # the catalogues follow the English texts
    uv run python docs/translation.py check      # what is missing, stale or broken
    uv run python docs/translation.py generate   # the Chinese notebooks, sources page, README
    uv run python docs/translation.py status     # how much of each catalogue is translated

The English notebooks, ``chapters/sources.md``, the README's course sections and the website's
own texts are the source. Their prose is cut into **messages** (a paragraph, a list, a heading,
one row of a table), and each language keeps one gettext catalogue (``.po``) per document under
``docs/locales/<language>/``: the English message, its translation, where it is used. A
catalogue is a plain text file that any ``.po`` editor (Poedit, Lokalize, Weblate) opens.

From the English notebooks and the catalogues, ``generate`` writes the translated ones
(``chapters/zh/``): every code cell, output, plot and widget is the English notebook's, byte for
byte; only the Markdown cells change. Code blocks in Markdown, inline code, numbers, link
targets and HTML tags are never translated, and :func:`problems` refuses a translation that
changes one. Links are moved to the translated folder: a link to another chapter or to the
sources page goes to its translation, with the heading's anchor translated too.

When an English text changes, ``update`` keeps every message that is still there, adds the new
ones, drops the ones that are gone, and gives a changed message its old translation marked
*fuzzy* (to be looked at: ``check`` fails until someone does). A new chapter needs nothing
here: ``update`` finds every ``chapters/NN_*.ipynb``.

Why gettext and ``polib``: ``.po`` is the format translators' tools and Sphinx speak, with
fuzzy entries and the previous English built in; ``polib`` reads and writes it (a small, kept
library, pure Python). Sphinx's own extraction (``build_site.py --gettext``) cuts pages after
they are parsed, which Jupyter never sees: the notebooks need their Markdown translated before
any tool reads it, so the cutting is ours, and the website is built from the same translations.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import difflib
import fcntl
import hashlib
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import polib
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
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
        "（`chapters/zh/`）。代码、输出和命令行的消息保持英文。",
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


# --- the documents ------------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    """One English source and its catalogue."""

    domain: str
    """The catalogue's name: ``chapters/03_prompt_and_cache``, ``chapters/sources``, ``README``,
    ``site``."""
    english: str
    """The English file, from the repository's root (``docs/build_site.py`` for ``site``)."""
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
    found.append(Document("site", "docs/build_site.py", "site"))
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
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import build_site  # beside this file; imported here, as it imports this module

        yield from build_site.TEXTS.items()


# --- cutting Markdown into messages -------------------------------------------------------

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
LINK_TARGET = re.compile(r"\]\((?P<target><[^>\n]*>|[^)\s]+)(?P<title>\s+\"[^\"\n]*\")?\)")
HTML_ATTRIBUTE = re.compile(r"\b(?P<name>src|href)=\"(?P<target>[^\"]+)\"")
URL = re.compile(r"\bhttps?://[^\s)>\]\"'`]+(?<![.,;:!?])")  # a sentence's full stop is not in it
HTML_TAG = re.compile(r"</?[a-zA-Z][^<>\n]*>")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
REFERENCE_DEFINITION = re.compile(r"^\s*\[[^\]]+\]:\s*\S+\s*$")
NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
CJK = re.compile(r"[\u3400-\u9fff]")
WORDS = re.compile(r"[A-Za-z]{2,}")
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
MONTH = re.compile(r"\b(" + "|".join(MONTHS) + r")\b")
MARKDOWN = MarkdownIt("commonmark").enable("table")
"""The Markdown reader for checks (``markdown-it-py``, which rich brings; MyST reads with it)."""
PLACEHOLDER = re.compile(r"\{[a-z_]+(?:[.:][^{}]*)?\}")


def without_code(text: str) -> str:
    """``text`` with its inline code, link targets, URLs, comments and HTML tags taken out:
    the words a translator translates."""
    text = HTML_COMMENT.sub(" ", text)
    text = CODE_SPAN.sub(" ", text)
    text = LINK_TARGET.sub("] ", text)
    text = URL.sub(" ", text)
    return HTML_TAG.sub(" ", text)


def translatable(block: str) -> bool:
    """Whether a block has words to translate (not only code, links, tags or a comment)."""
    if all(REFERENCE_DEFINITION.match(line) for line in block.splitlines()):
        return False
    return WORDS.search(without_code(block)) is not None


def pieces(text: str) -> list[tuple[str, bool]]:
    """``text`` cut into pieces that join back to it: ``(piece, is_message)``. A message is a
    block between blank lines (a paragraph, a list, a heading) or one row of a table; fenced
    code, blank lines and blocks with no words are kept as they are."""
    out: list[tuple[str, bool]] = []
    block: list[str] = []

    def flush() -> None:
        if not block:
            return
        lines = list(block)
        block.clear()
        if all(line.lstrip().startswith("|") for line in lines):
            for line in lines:  # a table: one message per row
                row = line.rstrip("\n")
                out.append((row, translatable(row) and not re.fullmatch(r"[\s|:-]*", row)))
                out.append((line[len(row) :], False))
            return
        joined = "".join(lines)
        body = joined.rstrip("\n")
        out.append((body, translatable(body)))
        out.append((joined[len(body) :], False))

    lines = text.splitlines(keepends=True)
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = FENCE.match(line)
        if fence:
            flush()
            mark = fence.group(1)
            end = index + 1
            while end < len(lines) and not re.match(
                rf"^\s*{re.escape(mark[0])}{{{len(mark)},}}\s*$", lines[end]
            ):
                end += 1
            out.append(("".join(lines[index : end + 1]), False))
            index = end + 1
            continue
        if not line.strip():
            flush()
            out.append((line, False))
        else:
            block.append(line)
        index += 1
    flush()
    return [(piece, message) for piece, message in out if piece]


def messages(doc: Document) -> list[tuple[str, str]]:
    """The messages of ``doc`` as (message, where) pairs, first use first, each once."""
    seen: dict[str, str] = {}
    for where, text in texts(doc):
        if doc.kind == "site":
            seen.setdefault(text, where)  # a page's text is one message (it has placeholders)
            continue
        section = where
        for piece, is_message in pieces(text):
            heading = re.match(r"^#{1,6}\s+(.+)", piece)
            if heading and doc.kind != "notebook":
                section = f"{where} § {heading.group(1).strip()}"
            if is_message:
                seen.setdefault(piece, section)
    return list(seen.items())


def key(msgid: str) -> str:
    """A short, stable name for a message (worksheets use it)."""
    return hashlib.sha1(msgid.encode()).hexdigest()[:8]


# --- what a translation must keep ---------------------------------------------------------


@dataclass(frozen=True)
class Term:
    english: str
    chinese: str
    rule: str
    """``keep``: stays English; ``translate``: always the Chinese form (checked); ``first``:
    translated, English may follow at first use (not checked)."""


def glossary(language: str = "zh_CN") -> list[Term]:
    """The glossary's table (``docs/locales/<language>/GLOSSARY.md``)."""
    path = LOCALES / language / "GLOSSARY.md"
    if not path.exists():
        return []
    terms = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[2] in {"keep", "translate", "first"}:
            english = cells[0].strip("`* ")
            chinese = cells[1].strip("`* ")
            terms.append(Term(english, chinese, cells[2]))
    return terms


def spans(text: str) -> Counter[str]:
    # A line break inside inline code shows as a space (CommonMark), so either may be written.
    return Counter(re.sub(r"[ \t]*\n[ \t]*", " ", m.group(0)) for m in CODE_SPAN.finditer(text))


def targets(text: str) -> Counter[str]:
    text = CODE_SPAN.sub(" ", text)
    found = [m.group("target") for m in LINK_TARGET.finditer(text)]
    found += [m.group("target") for m in HTML_ATTRIBUTE.finditer(text)]
    found += URL.findall(LINK_TARGET.sub("] ", HTML_ATTRIBUTE.sub(" ", text)))
    return Counter(found)


def tags(text: str) -> Counter[str]:
    return Counter(HTML_TAG.findall(CODE_SPAN.sub(" ", text)))


def numbers(text: str) -> Counter[str]:
    return Counter(NUMBER.findall(without_code(text)))


FILE_NAME = re.compile(
    r"(?<![\w/.-])[\w./~-]*\w\.(?:md|py|json|jsonl|ipynb|toml|yaml|yml|txt|db|sqlite|svg|png|sh|js"
    r"|html|csv|lock|cfg)\b"
)
SNAKE_CASE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
CAMEL_CASE = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+\b")


def names(text: str) -> set[str]:
    """File names and identifiers written outside code (``MEMORY.md``, ``tool_use``,
    ``CostMeter``, ``JupyterLab``): a translation keeps each of them as it is."""
    words = without_code(text)
    return {
        name for pattern in (FILE_NAME, SNAKE_CASE, CAMEL_CASE) for name in pattern.findall(words)
    }


def shape(text: str) -> list[str]:
    """The structure of a block: each line that opens a heading, a list item, a quote or a
    table row, with its indentation (and a table row's number of cells)."""
    found = []
    previous = ""
    for number, line in enumerate(CODE_SPAN.sub("x", text).splitlines()):
        marker = re.match(r"^(\s*)(#{1,6}\s|[-*+]\s|(\d+)[.)]\s|>|\|)", line)
        kind = marker.group(2).strip() if marker else ""
        # A numbered line inside a paragraph is text, unless it is 1 or continues a list
        # (CommonMark: only a list that starts at 1 interrupts a paragraph).
        if marker and marker.group(3) and number and previous != "1." and marker.group(3) != "1":
            marker = None
        if marker:
            if kind == "|":
                kind = "|" * len(re.findall(r"(?<!\\)\|", line))
            elif kind[:1].isdigit():
                kind = "1."
            found.append(f"{len(marker.group(1))}{kind}")
            previous = kind
        elif line.strip() and not line.startswith((" ", "\t")):
            previous = ""
    return found


def literal_asterisks(text: str) -> int:
    """How many ``*`` a Markdown text shows as text once rendered (CommonMark, as JupyterLab and
    the website read it), outside code."""
    count = 0
    for token in MARKDOWN.parse(text):
        for child in token.children or []:
            if child.type == "text":
                count += child.content.count("*")
    return count


def unrendered_emphasis(msgid: str, msgstr: str) -> list[str]:
    """Bold or italics that would show as asterisks. CommonMark's rules for where ``**`` may
    open and close are written for spaced text: ``**摘要。**后面`` does not close (punctuation
    before the ``**``, a letter after it). Chinese meets them often, English rarely."""
    extra = literal_asterisks(msgstr) - literal_asterisks(msgid)
    if extra <= 0:
        return []
    return [
        f"{extra} asterisks show as text (bold or italics that does not render): move the "
        "punctuation outside the ** or * (**摘要**。), or put a space beside it"
    ]


def problems(msgid: str, msgstr: str, terms: list[Term] | None = None) -> list[str]:
    """What a translation changed that it must keep; empty when it is fine."""
    if not msgstr.strip():
        return ["not translated"]
    found = []
    for name, measure in (
        ("inline code", spans),
        ("link targets", targets),
        ("HTML tags", tags),
        ("numbers", numbers),
        ("placeholders", lambda t: Counter(PLACEHOLDER.findall(t))),
    ):
        english, translated = measure(msgid), measure(msgstr)
        if name == "numbers":  # "October 2026" is 2026 年 10 月: a month's name may be its number
            months = Counter(str(MONTHS.index(m) + 1) for m in re.findall(MONTH, msgid))
            translated -= months & (translated - english)
        if english != translated:
            lost = sorted((english - translated).elements())
            extra = sorted((translated - english).elements())
            found.append(f"{name} differ: missing {lost}, added {extra}")
    lost_names = sorted(n for n in names(msgid) if n not in without_code(msgstr))
    if lost_names:
        found.append(f"file names or identifiers missing: {lost_names}")
    if shape(msgid) != shape(msgstr):
        found.append(f"Markdown structure differs: {shape(msgid)} became {shape(msgstr)}")
    if len(msgid) - len(msgid.rstrip("\n")) != len(msgstr) - len(msgstr.rstrip("\n")):
        found.append("the line breaks at the end differ")
    if msgid.startswith((" ", "\t")) != msgstr.startswith((" ", "\t")):
        found.append("the indentation of the first line differs")
    if re.search(r"[\u3400-\u9fff，。：；！？）]\n[ \t]*[\u3400-\u9fff（]", msgstr):
        found.append("a line break between Chinese characters (it shows as a space): join them")
    found += unrendered_emphasis(msgid, msgstr)
    english_words = without_code(msgid)
    translated_words = without_code(msgstr)
    for term in terms or []:
        if term.rule == "keep":
            if re.search(rf"(?<![\w-]){re.escape(term.english)}(?![\w-])", english_words) and (
                term.english not in translated_words
            ):
                found.append(f"glossary: {term.english!r} stays in English")
        elif term.rule == "translate":
            pattern = rf"(?<![\w-]){re.escape(term.english)}(?:e?s)?(?![\w-])"
            if re.search(pattern, english_words, re.I) and term.chinese not in translated_words:
                found.append(f"glossary: {term.english!r} is {term.chinese!r}")
    return found


# --- catalogues ---------------------------------------------------------------------------


def load(doc: Document, language: str) -> polib.POFile:
    path = doc.catalogue(language)
    if path.exists():
        return polib.pofile(str(path), wrapwidth=0)
    catalogue = polib.POFile(wrapwidth=0)
    catalogue.metadata = {
        "Project-Id-Version": "harness-course",
        "Language": language,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": "nplurals=1; plural=0;",
    }
    return catalogue


def save(catalogue: polib.POFile, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    catalogue.wrapwidth = 0
    path.write_text(catalogue.__unicode__(), encoding="utf-8")


@dataclass
class Update:
    added: int = 0
    fuzzy: int = 0
    removed: int = 0
    kept: int = 0


def update(doc: Document, language: str) -> Update:
    """Make ``doc``'s catalogue follow its English text (see the module's docstring)."""
    with locked(doc.catalogue(language)):
        return _update(doc, language)


def _update(doc: Document, language: str) -> Update:
    old = load(doc, language)
    by_id = {entry.msgid: entry for entry in old if not entry.obsolete}
    wanted = messages(doc)
    still = dict(wanted)
    gone = [entry for msgid, entry in by_id.items() if msgid not in still]
    # A changed message is looked for among the gone ones of the same place (a cell, a section
    # of a page): that is where an edited paragraph was, and it keeps the cost linear.
    gone_at: dict[str, list[polib.POEntry]] = {}
    for was in gone:
        gone_at.setdefault(was.comment, []).append(was)
    result = Update()
    new = polib.POFile(wrapwidth=0)
    new.metadata = old.metadata
    for msgid, where in wanted:
        entry = by_id.get(msgid)
        if entry is not None:
            result.kept += 1
            entry.occurrences, entry.comment = [(doc.english, "")], where
            new.append(entry)
            continue
        # Where it is used: the file (a "#:" line) and the cell or section ("#.", which a
        # translator's editor shows beside the message).
        entry = polib.POEntry(
            msgid=msgid, msgstr="", occurrences=[(doc.english, "")], comment=where
        )
        near = gone_at.get(where, [])
        closest = difflib.get_close_matches(msgid, [e.msgid for e in near], n=1, cutoff=0.6)
        if closest:
            previous = next(e for e in near if e.msgid == closest[0])
            entry.msgstr = previous.msgstr
            entry.flags = ["fuzzy"]
            entry.previous_msgid = previous.msgid
            result.fuzzy += 1
        else:
            result.added += 1
        new.append(entry)
    result.removed = len(gone)
    save(new, doc.catalogue(language))
    return result


@dataclass
class Report:
    domain: str
    problems: list[str] = field(default_factory=list)


def check(doc: Document, language: str, terms: list[Term] | None = None) -> Report:
    """Everything wrong with ``doc``'s catalogue: messages missing or no longer in the English,
    untranslated or fuzzy entries, and translations that change what they must keep."""
    report = Report(doc.domain)
    path = doc.catalogue(language)
    if not path.exists():
        report.problems.append(f"no catalogue {path.relative_to(ROOT)}: run `update`")
        return report
    catalogue = load(doc, language)
    wanted = dict(messages(doc))
    have = {entry.msgid: entry for entry in catalogue if not entry.obsolete}
    for msgid in wanted:
        if msgid not in have:
            report.problems.append(f"missing message [{key(msgid)}]: {msgid[:80]!r}")
    for msgid in have:
        if msgid not in wanted:
            report.problems.append(
                f"message no longer in the English [{key(msgid)}]: {msgid[:80]!r}"
            )
    if any(entry.obsolete for entry in catalogue):
        report.problems.append("obsolete (#~) entries: run `update`")
    for msgid, entry in have.items():
        if msgid not in wanted:
            continue
        if "fuzzy" in entry.flags:
            report.problems.append(
                f"fuzzy [{key(msgid)}]: the English changed; check it and "
                f"remove the fuzzy flag: {msgid[:80]!r}"
            )
            continue
        for problem in problems(msgid, entry.msgstr, terms):
            report.problems.append(f"[{key(msgid)}] {problem}: {msgid[:80]!r}")
    return report


def translations(doc: Document, language: str) -> dict[str, str]:
    """The finished translations of ``doc`` (fuzzy and empty ones left out)."""
    path = doc.catalogue(language)
    if not path.exists():
        return {}
    return {
        entry.msgid: entry.msgstr
        for entry in load(doc, language)
        if entry.msgstr and not entry.obsolete and "fuzzy" not in entry.flags
    }


# --- generating the translated files ------------------------------------------------------


def slug(heading: str) -> str:
    """A heading's anchor as MyST makes it (``myst_parser.slugs.github_slugify``, copied: the
    notebooks' own tools do not import the website's)."""
    return re.sub(r"[^\w\u4e00-\u9fff\- ]", "", heading.lower().replace(" ", "-"))


def headings(text: str) -> list[str]:
    found = []
    for piece, _ in pieces(text):
        if FENCE.match(piece):
            continue
        found += re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", piece, re.M)
    return found


def translate_text(text: str, table: dict[str, str]) -> str:
    """``text`` with every message that has a translation replaced by it."""
    return "".join(
        table.get(piece, piece) if is_message else piece for piece, is_message in pieces(text)
    )


@dataclass
class Translator:
    """Translates the documents of one language, and moves their links."""

    language: str
    site: bool = False
    """For the website: each translated page takes its English page's place, so only anchors
    change; for the repository, a page goes to the edition's folder."""
    tables: dict[str, dict[str, str]] = field(default_factory=dict)
    anchors: dict[str, dict[str, str]] = field(default_factory=dict)
    by_english: dict[str, Document] = field(default_factory=dict)

    def table(self, doc: Document) -> dict[str, str]:
        if doc.domain not in self.tables:
            self.tables[doc.domain] = translations(doc, self.language)
        return self.tables[doc.domain]

    def place(self, doc: Document) -> str:
        translated = doc.translated(self.language)
        return doc.english if self.site or translated is None else translated

    def anchor_map(self, doc: Document) -> dict[str, str]:
        """English anchor -> translated anchor, for the headings of ``doc``."""
        if doc.domain not in self.anchors:
            english = [english for _, english in texts(doc)]
            english_headings = [h for text in english for h in headings(text)]
            translated_headings = [
                h for text in english for h in headings(translate_text(text, self.table(doc)))
            ]
            self.anchors[doc.domain] = {
                slug(e): slug(t) for e, t in zip(english_headings, translated_headings, strict=True)
            }
        return self.anchors[doc.domain]

    def move(self, target: str, source: str, place: str) -> str:
        """A link ``target`` written in ``source`` (a path from the root), for ``place``."""
        if re.match(r"^[a-z][a-z0-9+.-]*:|^/|^#", target) or target.startswith("<"):
            return target
        path, hash_, anchor = target.partition("#")
        resolved = os.path.normpath(PurePosixPath(source).parent / path) if path else source
        resolved = resolved.replace(os.sep, "/")
        if not self.by_english:
            self.by_english = {d.english: d for d in documents()}
        counterpart = self.by_english.get(resolved)
        # A document that names its own English file (the README's note on its rest) means it.
        if counterpart is not None and counterpart.kind != "site" and resolved != source:
            if anchor:
                anchor = self.anchor_map(counterpart).get(anchor, anchor)
            resolved = self.place(counterpart)
        if not path:
            return f"#{anchor}"
        moved = os.path.relpath(resolved, PurePosixPath(place).parent).replace(os.sep, "/")
        return moved + (hash_ + anchor if hash_ else "")

    def markdown(self, text: str, doc: Document) -> str:
        translated = translate_text(text, self.table(doc))
        place = self.place(doc)

        def link(match: re.Match[str]) -> str:
            moved = self.move(match.group("target"), doc.english, place)
            return f"]({moved}{match.group('title') or ''})"

        def attribute(match: re.Match[str]) -> str:
            moved = self.move(match.group("target"), doc.english, place)
            return f'{match.group("name")}="{moved}"'

        parts = re.split(r"((?<!`)```.*?```)", translated, flags=re.S)  # code stays as it is
        for index in range(0, len(parts), 2):
            parts[index] = HTML_ATTRIBUTE.sub(attribute, LINK_TARGET.sub(link, parts[index]))
        return "".join(parts)

    def notebook(self, doc: Document) -> dict[str, Any]:
        """The English notebook with its Markdown cells translated; the rest unchanged."""
        notebook = copy.deepcopy(read_notebook(ROOT / doc.english))
        for cell in notebook["cells"]:
            if cell["cell_type"] == "markdown":
                cell["source"] = self.markdown(cell_text(cell), doc).splitlines(keepends=True)
        return notebook

    def file(self, doc: Document) -> str:
        """The translated file's text, as it is written."""
        if doc.kind == "notebook":
            return json.dumps(self.notebook(doc), indent=1, ensure_ascii=False) + "\n"
        if doc.kind == "readme":
            edition = EDITIONS[self.language]
            title, _, rest = self.markdown(readme_english(), doc).partition("\n\n")
            if not self.site:  # the Binder badge, and the chapter to start with, are the edition's
                rest = rest.replace("lab/tree/chapters/", f"lab/tree/{edition.folder}/")
                rest = re.sub(r"`chapters/(\d\d_\w+\.ipynb)`", rf"`{edition.folder}/\1`", rest)
            return f"{title}\n\n{edition.switch}\n\n{rest}"
        return self.markdown((ROOT / doc.english).read_text(encoding="utf-8"), doc)

    def anchor(self, domain: str, english: str) -> str:
        """The anchor of a heading of ``domain`` that is ``english`` in the English text."""
        return self.anchor_map(document(domain)).get(english, english)

    def text(self, key_: str) -> str:
        """One of the website's own texts (``build_site.TEXTS``), translated when it is."""
        site = document("site")
        english = dict(texts(site))[key_]
        return self.table(site).get(english, english)


def generated(language: str) -> dict[str, str]:
    """Every file the repository's edition has: path from the root -> its text."""
    translator = Translator(language)
    out = {}
    for doc in documents():
        place = doc.translated(language)
        if place is not None:
            out[place] = translator.file(doc)
    return out


def generate(language: str, only: str | None = None) -> list[str]:
    """Write the edition's files (or the one of document ``only``); returns the ones that
    changed."""
    changed = []
    for place, text in generated(language).items():
        if only is not None and place != document(only).translated(language):
            continue
        path = ROOT / place
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(place)
    return changed


# --- worksheets: a plain-text way to fill a catalogue -------------------------------------


def worksheet(doc: Document, language: str, everything: bool = False) -> str:
    """The messages still to translate, as ``@@ <key>`` sections (``fill`` reads them back)."""
    done = translations(doc, language)
    parts = []
    for msgid, where in messages(doc):
        if everything or msgid not in done:
            parts.append(f"@@ {key(msgid)}  ({where})\n{msgid}\n")
    return "\n".join(parts)


def fill(doc: Document, language: str, sheet: str) -> list[str]:
    """Put the translations of a filled worksheet into the catalogue; returns what is wrong
    with them (the catalogue keeps them all: fix and fill again)."""
    with locked(doc.catalogue(language)):
        return _fill(doc, language, sheet)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold a lock beside ``path`` while it is read and written back (two people filling one
    catalogue at once keep both their translations)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _fill(doc: Document, language: str, sheet: str) -> list[str]:
    catalogue = load(doc, language)
    by_key = {key(entry.msgid): entry for entry in catalogue}
    terms = glossary(language)
    found = []
    for match in re.finditer(r"^@@ (\w{8})[^\n]*\n(.*?)(?=^@@ \w{8}|\Z)", sheet, re.S | re.M):
        entry = by_key.get(match.group(1))
        if entry is None:
            found.append(f"[{match.group(1)}] no such message (run `update`, then a new sheet)")
            continue
        # The English's own line ends stay (a page's text that ends with a blank line keeps it).
        ending = entry.msgid[len(entry.msgid.rstrip("\n")) :]
        entry.msgstr = match.group(2).strip("\n") + ending
        entry.flags = [flag for flag in entry.flags if flag != "fuzzy"]
        entry.previous_msgid = None
        found += [f"[{match.group(1)}] {p}" for p in problems(entry.msgid, entry.msgstr, terms)]
    save(catalogue, doc.catalogue(language))
    return found


# --- the command line ---------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "command", choices=["update", "check", "generate", "status", "worksheet", "fill"]
    )
    parser.add_argument(
        "domain", nargs="?", help="one catalogue (e.g. chapters/03_prompt_and_cache)"
    )
    parser.add_argument("sheet", nargs="?", type=Path, help="fill: the filled worksheet")
    parser.add_argument("--language", default="zh_CN", choices=sorted(EDITIONS))
    parser.add_argument("--all", action="store_true", help="worksheet: every message")
    args = parser.parse_args(argv)
    chosen = [document(args.domain)] if args.domain else documents()
    language = args.language
    if args.command == "update":
        for doc in chosen:
            r = update(doc, language)
            print(
                f"{doc.domain}: {r.kept} kept, {r.added} new, {r.fuzzy} fuzzy, {r.removed} removed"
            )
        return 0
    if args.command == "status":
        for doc in chosen:
            total = len(messages(doc))
            print(f"{doc.domain}: {len(translations(doc, language))}/{total} translated")
        return 0
    if args.command == "check":
        terms = glossary(language)
        failed = 0
        for doc in chosen:
            report = check(doc, language, terms)
            for problem in report.problems:
                print(f"{doc.domain}: {problem}")
            failed += len(report.problems)
        places = {doc.translated(language) for doc in chosen}
        stale = [
            p
            for p, t in generated(language).items()
            if p in places
            and (not (ROOT / p).exists() or (ROOT / p).read_text(encoding="utf-8") != t)
        ]
        for place in stale:
            print(f"{place}: stale: run `generate`")
        print(f"{failed + len(stale)} problems")
        return 1 if failed or stale else 0
    if args.command == "generate":
        for place in generate(language, args.domain):
            print(f"wrote {place}")
        return 0
    if args.command == "worksheet":
        if len(chosen) != 1:
            parser.error("worksheet: name one catalogue")
        print(worksheet(chosen[0], language, args.all))
        return 0
    if len(chosen) != 1 or args.sheet is None:
        parser.error("fill: name one catalogue and the worksheet")
    found = fill(chosen[0], language, args.sheet.read_text(encoding="utf-8"))
    for problem in found:
        print(problem)
    print(f"{len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
