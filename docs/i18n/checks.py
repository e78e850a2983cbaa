"""What a translation must keep: inline code, link targets, URLs, HTML tags, numbers, file
names and identifiers, placeholders, the Markdown structure, bold that still renders, and the
glossary's terms (``docs/locales/<language>/GLOSSARY.md``)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from markdown_it import MarkdownIt

from . import sources
from .markdown import CODE_SPAN, HTML_ATTRIBUTE, HTML_TAG, LINK_TARGET, NUMBER, URL, without_code

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


@dataclass(frozen=True)
class Term:
    english: str
    chinese: str
    rule: str
    """``keep``: stays English; ``translate``: always the Chinese form (checked); ``first``:
    translated, English may follow at first use (not checked)."""


def glossary(language: str = "zh_CN") -> list[Term]:
    """The glossary's table (``docs/locales/<language>/GLOSSARY.md``)."""
    path = sources.LOCALES / language / "GLOSSARY.md"
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
