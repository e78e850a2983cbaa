"""The ``MEMORY.md`` format: facts to the file's text and back, exactly.

:func:`render` writes a title, then every section in order, each fact a bullet with a comment
saying where it came from; :func:`parse` reads it back. A person may edit the file: the next
read sees the edit, and a line that breaks the format is an error naming its line
(:class:`MemoryFormatError`), never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from harness.memory.facts import _ID, HAND_EDIT, SECTIONS, Fact, MemoryFormatError

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

TITLE = "# Session memory"
NOTE = (
    "<!-- One fact per line, under its section. The comment after a fact says where it came "
    "from; a line you add without one is kept as written. -->"
)
_FACT_LINE = re.compile(r"^[-*] (?P<text>.*?)(?: <!-- (?P<meta>[^<>]*) -->)?$")
_SECTION_BY_KEY = {name.lower(): name for name in SECTIONS}


def _meta(fact: Fact) -> str:
    parts = [fact.id] if fact.id else []
    if fact.turn is not None:
        parts.append(f"turn={fact.turn}")
    if fact.source != HAND_EDIT:
        parts.append(f"from={fact.source}")
    if fact.at is not None:
        parts.append(f"at={fact.at.strftime(_TIME_FORMAT)}")
    if fact.supersedes:
        parts.append(f"supersedes={fact.supersedes}")
    return " ".join(parts)


def fact_line(fact: Fact, *, provenance: bool = True) -> str:
    """The fact's line in the file: ``- text <!-- f3 turn=7 from=toolu_0012 ... -->``."""
    meta = _meta(fact) if provenance else ""
    return f"- {fact.text} <!-- {meta} -->" if meta else f"- {fact.text}"


def render(facts: Iterable[Fact], *, provenance: bool = True) -> str:
    """``MEMORY.md`` for ``facts``: a title, then every section in order, facts as bullets.

    With ``provenance=False`` the origin comments are left out: the text that goes into the
    model's context (tier 2), where they would only cost tokens.
    """
    by_section: dict[str, list[Fact]] = {name: [] for name in SECTIONS}
    for fact in facts:
        by_section[fact.section].append(fact)
    out = [TITLE, ""]
    if provenance:
        out += [NOTE, ""]
    for name in SECTIONS:
        out.append(f"## {name}")
        out += [fact_line(f, provenance=provenance) for f in by_section[name]]
        out.append("")
    return "\n".join(out)


def _parse_meta(meta: str, line: int) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    keys = {"turn": "turn", "from": "source", "at": "at", "supersedes": "supersedes"}
    for n, token in enumerate(meta.split()):
        if n == 0 and re.match(_ID, token):
            fields["id"] = token
            continue
        key, sep, value = token.partition("=")
        if not sep or key not in keys or not value:
            raise MemoryFormatError(
                line, f"{token!r} in the comment is not one of turn=, from=, at=, supersedes="
            )
        if keys[key] in fields:
            raise MemoryFormatError(line, f"{key}= is given twice")
        if key == "at":
            try:
                fields["at"] = datetime.strptime(value, _TIME_FORMAT).replace(tzinfo=UTC)
            except ValueError:
                raise MemoryFormatError(
                    line, f"at={value} is not a time like 2026-01-01T12:00:00Z"
                ) from None
        else:
            fields[keys[key]] = value
    return fields


def parse(text: str) -> list[Fact]:
    """The facts in a ``MEMORY.md``, in file order; :class:`MemoryFormatError` if it is off.

    ``parse(render(facts)) == facts`` for facts in section order (``render`` groups them by
    section) whose ids are unique. A line added by hand (no comment) is a
    fact with source ``hand-edit`` and no id yet; a title, blank lines and comment lines are
    skipped; anything else (an unknown section, a paragraph, a bad comment) is an error that
    names the line.
    """
    facts: list[Fact] = []
    section: str | None = None
    lines_of: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or (line.startswith("# ") and not line.startswith("## ")):
            continue
        if line.startswith("<!--") and line.endswith("-->"):
            continue
        if line.startswith("## "):
            key = " ".join(line[3:].split()).lower()
            if key not in _SECTION_BY_KEY:
                raise MemoryFormatError(
                    number,
                    f"unknown section {line[3:].strip()!r}; the sections are "
                    + ", ".join(SECTIONS),
                )
            section = _SECTION_BY_KEY[key]
            continue
        found = _FACT_LINE.match(line)
        if found is None:
            raise MemoryFormatError(
                number, f"{_shorten(line)!r} is not a fact: a fact is one line starting with '- '"
            )
        if section is None:
            raise MemoryFormatError(number, "a fact before the first '## ' section heading")
        fields = _parse_meta(found.group("meta") or "", number)
        if (taken := lines_of.setdefault(fields.get("id", ""), number)) != number and fields.get(
            "id"
        ):
            raise MemoryFormatError(
                number, f"id {fields['id']} is already used on line {taken}: ids are unique"
            )
        try:
            facts.append(Fact(section=section, text=found.group("text"), **fields))
        except ValidationError as error:
            problem = "; ".join(str(e["msg"]) for e in error.errors())
            raise MemoryFormatError(number, problem) from None
    return facts


def _shorten(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
