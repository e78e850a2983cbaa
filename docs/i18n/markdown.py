"""Markdown cut into messages and joined back: a paragraph, a list, a heading or one table row
is a message; fenced code, blank lines and blocks without words stay as they are. Also the
headings' anchors, as MyST makes them, and a text with its messages replaced."""

from __future__ import annotations

import hashlib
import re

from .sources import Document, texts

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
