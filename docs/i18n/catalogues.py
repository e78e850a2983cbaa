"""The catalogues (``.po``, read and written with ``polib``): made to follow the English text
(:func:`update`), checked (:func:`check`), and filled from plain-text worksheets
(:func:`worksheet`, :func:`fill`)."""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polib

from . import sources
from .checks import Term, glossary, problems
from .markdown import key, messages
from .sources import Document


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
        report.problems.append(f"no catalogue {path.relative_to(sources.ROOT)}: run `update`")
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
