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

The work is done by the package beside this file, ``docs/i18n/`` (one idea a module); this
file is its command line, and names what the tests and ``build_site.py`` use.

Why gettext and ``polib``: ``.po`` is the format translators' tools and Sphinx speak, with
fuzzy entries and the previous English built in; ``polib`` reads and writes it (a small, kept
library, pure Python). Sphinx's own extraction (``build_site.py --gettext``) cuts pages after
they are parsed, which Jupyter never sees: the notebooks need their Markdown translated before
any tool reads it, so the cutting is ours, and the website is built from the same translations.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # docs/, for i18n

from i18n import sources
from i18n.catalogues import (
    Report,
    Update,
    check,
    fill,
    translations,
    update,
    worksheet,
)
from i18n.checks import (
    Term,
    glossary,
    literal_asterisks,
    names,
    problems,
    shape,
    unrendered_emphasis,
)
from i18n.edition import Translator, generate, generated
from i18n.markdown import (
    CJK,
    CODE_SPAN,
    LINK_TARGET,
    headings,
    key,
    messages,
    pieces,
    slug,
    translate_text,
    without_code,
)
from i18n.sources import EDITIONS, Document, document, documents, texts

__all__ = [
    "CJK",
    "CODE_SPAN",
    "EDITIONS",
    "LINK_TARGET",
    "Document",
    "Report",
    "Term",
    "Translator",
    "Update",
    "check",
    "document",
    "documents",
    "fill",
    "generate",
    "generated",
    "glossary",
    "headings",
    "key",
    "literal_asterisks",
    "messages",
    "names",
    "pieces",
    "problems",
    "shape",
    "slug",
    "sources",
    "texts",
    "translate_text",
    "translations",
    "unrendered_emphasis",
    "update",
    "without_code",
    "worksheet",
]


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
            and (
                not (sources.ROOT / p).exists()
                or (sources.ROOT / p).read_text(encoding="utf-8") != t
            )
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
