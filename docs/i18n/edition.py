"""The translated files: each English notebook with its Markdown translated and its links
moved to the edition's folder (or, for the website, kept in place with translated anchors),
the sources page, and the README."""

from __future__ import annotations

import copy
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from . import sources
from .catalogues import translations
from .markdown import CODE_SPAN, HTML_ATTRIBUTE, LINK_TARGET, headings, slug, translate_text
from .sources import (
    EDITIONS,
    Document,
    cell_text,
    document,
    documents,
    read_notebook,
    readme_english,
    texts,
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
        notebook = copy.deepcopy(read_notebook(sources.ROOT / doc.english))
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
            if not self.site:  # the Binder badge opens the edition's first chapter
                rest = rest.replace("lab/tree/chapters/", f"lab/tree/{edition.folder}/")
            return f"{title}\n\n{edition.switch}\n\n{self.edition_paths(rest)}"
        return self.markdown((sources.ROOT / doc.english).read_text(encoding="utf-8"), doc)

    def anchor(self, domain: str, english: str) -> str:
        """The anchor of a heading of ``domain`` that is ``english`` in the English text."""
        return self.anchor_map(document(domain)).get(english, english)

    def edition_paths(self, text: str) -> str:
        """The README's instructions name the edition's notebooks: a chapter's path in inline
        code (``git checkout -- chapters/05_compaction.ipynb``, also URL-encoded in a link to
        give out) becomes the edition's (``chapters/zh/05_compaction.ipynb``). Link targets
        are left to :meth:`move`."""
        folder = EDITIONS[self.language].folder
        encoded = folder.replace("/", "%2F")

        def in_code(match: re.Match[str]) -> str:
            code = re.sub(r"\bchapters/(?=\d\d_\w+\.ipynb)", f"{folder}/", match.group(0))
            return re.sub(r"(?<=%2F)chapters%2F(?=\d\d_\w+\.ipynb)", f"{encoded}%2F", code)

        return CODE_SPAN.sub(in_code, text)

    def text(self, key_: str) -> str:
        """One of the website's own texts (``docs/site_texts.py``), translated when it is."""
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
        path = sources.ROOT / place
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(place)
    return changed
