"""YAML front matter: the ``---`` block at the top of a ``SKILL.md`` or a command file.

A skill or a custom command is a markdown file whose first lines may be a YAML mapping
between two ``---`` lines. :func:`split_front_matter` splits the file into that mapping and
the body; :func:`parse_fields` checks the fields Claude Code documents
(https://code.claude.com/docs/en/skills, "Frontmatter reference") and turns them into
:class:`Fields`, typed.

What we take from Claude Code, and where we differ:

* The block must open on the first line. A file without one is all body (Claude Code's
  ``FRONTMATTER_REGEX``, ``^---\\s*\\n([\\s\\S]*?)---\\s*\\n?``, in
  ``src/utils/frontmatterParser.ts`` of github.com/Gitlawb/openclaude).
* A common mistake is an unquoted value with ``: `` in it (``description: Deploy: staging``),
  which YAML reads as a nested mapping. Claude Code tries again after quoting such values
  (``quoteProblematicValues``, same file); so do we.
* Where Claude Code then gives up silently (an empty mapping, only a debug-log line), we
  raise :class:`FrontMatterError` with the reason, and the caller reports it as a problem
  of that one file: a skill with broken front matter is not loaded, never fatal.
* Booleans accept ``true/false/yes/no/on/off/1/0`` in any case (the docs: "Boolean fields
  accept yes, no, on, off, 1, and 0 in any letter case"). A wrong type (a list where text
  is expected, ``maybe`` for a boolean) is an error naming the field; Claude Code coerces or
  ignores such values.
* Sizes are capped (our choice): the front matter at :data:`MAX_FRONT_MATTER_CHARS`. The
  whole file's cap is the reader's (``discovery``): a file is read at most once that big.
* Unknown fields are ignored, as Claude Code ignores them. ``hooks`` in front matter is
  recorded (``has_hooks``) but not run: our hooks come from settings files (chapter 13's
  ``harness.settings``).

Error messages never repeat a value: a hostile value (a billion-laughs alias tree) could be
huge once printed. They name the field and the type found.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

MAX_FRONT_MATTER_CHARS = 64 * 1024
"""Our cap on the YAML block (a documented SKILL.md front matter is a few hundred bytes)."""

MAX_NAME_CHARS = 64
"""The Agent Skills spec's limit on ``name`` ("max 64 characters")."""

MAX_COMPATIBILITY_CHARS = 500
"""Documented: ``compatibility`` "Accepts a string of up to 500 characters"."""

EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
"""Documented values of ``effort``."""

_OPENING = re.compile(r"---[ \t]*\r?\n")
_CLOSING = re.compile(r"^---[ \t]*(?:\r?\n|$)", re.MULTILINE)
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
# Claude Code's YAML_SPECIAL_CHARS and the line shape it re-quotes (frontmatterParser.ts).
_SPECIAL = re.compile(r"[{}\[\]*&#!|>%@`]|: ")
_KEY_VALUE = re.compile(r"^([a-zA-Z_-]+):\s+(.+)$")


class FrontMatterError(ValueError):
    """Front matter that cannot be used: not closed, not YAML, not a mapping, a wrong type.

    ``source`` names the file; the message says what is wrong in plain words.
    """

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


def _requote(text: str) -> str:
    """Claude Code's retry: quote ``key: value`` lines whose value has YAML special chars."""
    out: list[str] = []
    for line in text.split("\n"):
        match = _KEY_VALUE.match(line)
        if match:
            key, value = match.group(1), match.group(2)
            quoted = (value[0] == value[-1]) and value[0] in "\"'" and len(value) > 1
            if not quoted and _SPECIAL.search(value):
                escaped = value.replace("\\", "\\\\").replace('"', '\\"')
                line = f'{key}: "{escaped}"'
        out.append(line)
    return "\n".join(out)


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if value is None:
        return "empty"
    return f"a YAML {type(value).__name__}"


# What PyYAML raises on hostile text is not only YAMLError: its constructors raise ValueError
# (``2024-13-45`` as a date, ``!!float abc``), KeyError (``!!bool`` of nothing),
# AttributeError (``!!timestamp`` of nothing), IndexError (``!!int`` of nothing), and deep
# nesting raises RecursionError. Any of them means "this front matter cannot be read".
_YAML_FAILURES = (Exception,)


def _why(error: BaseException) -> str:
    if isinstance(error, RecursionError):
        return "front matter is nested too deeply to read"
    if isinstance(error, yaml.YAMLError):
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 2} of the file)" if mark is not None else ""
        problem = getattr(error, "problem", None) or "not valid YAML"
        return f"front matter is not valid YAML{where}: {problem}"
    return f"front matter has a value YAML cannot build: {str(error)[:120]}"


def _load(text: str, source: str) -> Any:
    try:
        return yaml.safe_load(text)
    except _YAML_FAILURES as error:
        first = error
    try:
        return yaml.safe_load(_requote(text))
    except _YAML_FAILURES:
        raise FrontMatterError(source, _why(first)) from None


def split_front_matter(text: str, *, source: str) -> tuple[dict[str, Any], str]:
    """The front matter (a mapping, ``{}`` when there is none) and the body after it.

    Raises :class:`FrontMatterError` when a block is opened but never closed, is bigger than
    :data:`MAX_FRONT_MATTER_CHARS`, is not YAML, or is YAML but not a mapping of text keys
    (a list, a bare string).

    >>> split_front_matter("---\\nname: pdf\\n---\\nRead PDFs.\\n", source="SKILL.md")
    ({'name': 'pdf'}, 'Read PDFs.\\n')
    """
    text = text.removeprefix("\ufeff")  # a byte-order mark before the first ---
    opening = _OPENING.match(text)
    if opening is None:
        return {}, text
    closing = _CLOSING.search(text, opening.end())
    if closing is None:
        raise FrontMatterError(source, "front matter opened with --- on line 1 is never closed")
    block = text[opening.end() : closing.start()]
    if len(block) > MAX_FRONT_MATTER_CHARS:
        raise FrontMatterError(
            source,
            f"front matter is {len(block):,} characters; the limit is {MAX_FRONT_MATTER_CHARS:,}",
        )
    data = _load(block, source)
    body = text[closing.end() :]
    if data is None:
        return {}, body
    if not isinstance(data, dict):
        raise FrontMatterError(
            source, f"front matter must be a mapping of fields (key: value), not {_type_name(data)}"
        )
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        found = _type_name(bad[0])
        raise FrontMatterError(source, f"front matter keys must be text, found {found}")
    return data, body


# -- typed fields ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fields:
    """The front matter fields Claude Code documents for skills and commands, typed.

    Absent fields take Claude Code's defaults. ``model`` ``inherit`` is ``None``.
    """

    name: str | None = None
    description: str | None = None
    when_to_use: str | None = None
    argument_hint: str | None = None
    arguments: tuple[str, ...] = ()
    disable_model_invocation: bool = False
    user_invocable: bool = True
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    model: str | None = None
    effort: str | None = None
    context: str | None = None
    agent: str | None = None
    paths: tuple[str, ...] = ()
    shell: str | None = None
    license: str | None = None
    compatibility: str | None = None
    version: str | None = None
    has_hooks: bool = False


class FieldsView:
    """The documented fields as attributes of what carries them (a skill, a command file):
    ``skill.allowed_tools`` for ``skill.fields.allowed_tools``."""

    fields: Fields

    @property
    def argument_hint(self) -> str | None:
        return self.fields.argument_hint

    @property
    def allowed_tools(self) -> tuple[str, ...]:
        return self.fields.allowed_tools

    @property
    def model(self) -> str | None:
        return self.fields.model

    @property
    def when_to_use(self) -> str | None:
        return self.fields.when_to_use

    @property
    def disable_model_invocation(self) -> bool:
        return self.fields.disable_model_invocation

    @property
    def user_invocable(self) -> bool:
        return self.fields.user_invocable


def _text(data: Mapping[str, Any], key: str, source: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()  # `version: 2024-01-01` is a YAML date: meant as text
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise FrontMatterError(source, f"{key} must be text, not {_type_name(value)}")
    return str(value)


def _hint(data: Mapping[str, Any], source: str) -> str | None:
    """``argument-hint: [message]`` is a YAML list (``["message"]``), though the docs write it
    as a hint: shown back as written. (Claude Code's ``String(...)`` would show ``message``.)"""
    value = data.get("argument-hint")
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return " ".join(f"[{v}]" for v in value)
    return _text(data, "argument-hint", source)


def _flag(data: Mapping[str, Any], key: str, default: bool, source: str) -> bool:
    value = data.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, (str, int)) and str(value).strip().lower() in _TRUE | _FALSE:
        return str(value).strip().lower() in _TRUE
    shown = _type_name(value) if not isinstance(value, str) else "other text"
    raise FrontMatterError(
        source, f"{key} must be true or false (or yes/no, on/off, 1/0), not {shown}"
    )


def split_tool_list(text: str) -> tuple[str, ...]:
    """``Read Grep``, ``Read, Grep`` or ``Bash(git add *) Bash(git commit *)``: one entry per
    tool, split on commas and spaces outside parentheses (the documented forms).

    >>> split_tool_list("Bash(git add *) Bash(git status *), Read")
    ('Bash(git add *)', 'Bash(git status *)', 'Read')
    """
    entries: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        if depth == 0 and (char == "," or char.isspace()):
            if current:
                entries.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        entries.append("".join(current))
    return tuple(entries)


def _list(
    data: Mapping[str, Any], key: str, source: str, *, spaces: bool = True
) -> tuple[str, ...]:
    value = data.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        if spaces:
            return split_tool_list(value)
        return tuple(p.strip() for p in value.split(",") if p.strip())
    if isinstance(value, list):
        if not all(isinstance(item, str) for item in value):
            odd = next(item for item in value if not isinstance(item, str))
            raise FrontMatterError(source, f"{key} must be a list of text, found {_type_name(odd)}")
        return tuple(item.strip() for item in value if item.strip())
    raise FrontMatterError(source, f"{key} must be text or a list of text, not {_type_name(value)}")


def _choice(data: Mapping[str, Any], key: str, allowed: tuple[str, ...], source: str) -> str | None:
    value = _text(data, key, source)
    if value is None:
        return None
    if value.strip().lower() not in allowed:
        raise FrontMatterError(source, f"{key} must be one of {', '.join(allowed)}")
    return value.strip().lower()


def parse_fields(data: Mapping[str, Any], *, source: str) -> Fields:
    """The documented fields of ``data``, type-checked. Raises :class:`FrontMatterError`."""
    name = _text(data, "name", source)
    if name is not None and (len(name) > MAX_NAME_CHARS or not name.isprintable()):
        raise FrontMatterError(
            source, f"name must be one line of at most {MAX_NAME_CHARS} printable characters"
        )
    compatibility = _text(data, "compatibility", source)
    if compatibility is not None and len(compatibility) > MAX_COMPATIBILITY_CHARS:
        raise FrontMatterError(
            source, f"compatibility is longer than {MAX_COMPATIBILITY_CHARS} characters"
        )
    arguments = data.get("arguments")
    names = _list(data, "arguments", source) if arguments is not None else ()
    model = _text(data, "model", source)
    return Fields(
        name=name,
        description=_text(data, "description", source),
        when_to_use=_text(data, "when_to_use", source),
        argument_hint=_hint(data, source),
        # Claude Code drops empty and all-digit names: they would clash with $0, $1.
        arguments=tuple(n for n in names if not n.isdigit()),
        disable_model_invocation=_flag(data, "disable-model-invocation", False, source),
        user_invocable=_flag(data, "user-invocable", True, source),
        allowed_tools=_list(data, "allowed-tools", source),
        disallowed_tools=_list(data, "disallowed-tools", source),
        model=None if model is None or model.strip() == "inherit" else model.strip(),
        effort=_choice(data, "effort", EFFORT_LEVELS, source),
        context=_choice(data, "context", ("fork", "inline"), source),
        agent=_text(data, "agent", source),
        paths=_list(data, "paths", source, spaces=False),
        shell=_choice(data, "shell", ("bash", "powershell"), source),
        license=_text(data, "license", source),
        compatibility=compatibility,
        version=_text(data, "version", source),
        has_hooks=data.get("hooks") is not None,
    )


def first_line_description(body: str, *, limit: int = 100) -> str:
    """Claude Code's fallback description: the first non-empty line of the body, without a
    heading's ``#`` marks, cut at ``limit`` characters with ``...``
    (``extractDescriptionFromMarkdown`` in ``src/utils/markdownConfigLoader.ts``, openclaude).
    Empty when the body is."""
    for line in body.splitlines():
        text = line.strip()
        if text:
            heading = re.match(r"^#+\s+(.+)$", text)
            text = heading.group(1) if heading else text
            return text if len(text) <= limit else text[: limit - 3] + "..."
    return ""
