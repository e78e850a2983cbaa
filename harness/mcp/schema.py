"""What a server lists, checked before the model sees it; what the model sends, checked before
the server does.

A server's tool list goes into every request, and the API refuses the *whole request* when
one tool in it is malformed: a name it does not accept, a schema that is not an object, a
property key with a space in it. One careless (or hostile) server would stop every turn of
the session. So :func:`check_tool` takes each listed tool apart first and refuses, with a
reason, the ones the API would refuse:

* the full name ``mcp__server__tool`` (:mod:`harness.mcp.names`) must match
  :data:`harness.messages.TOOL_NAME_PATTERN`;
* the ``input_schema`` must be a JSON object with ``"type": "object"`` at the top, no
  ``oneOf``/``allOf``/``anyOf`` there, top-level property keys matching
  :data:`PROPERTY_KEY_PATTERN` (the API's own 400 errors, quoted in public issues), a valid
  schema by its dialect's metaschema (JSON Schema 2020-12 unless ``$schema`` names another:
  MCP's default, SEP-1613), and small
  (:data:`MAX_SCHEMA_BYTES`, :data:`MAX_SCHEMA_DEPTH`: our choices).

What it keeps is cleaned as Claude Code cleans it: hidden Unicode removed
(:func:`sanitize_unicode`) from the description, title and schema, and the description cut
at :data:`MAX_DESCRIPTION_CHARS`.

:func:`input_problem` then checks the model's arguments against the schema, as chapter 02's
dispatcher checks a pydantic model, and words the errors the same way, so the model can fix
its call without bothering the server. It never raises: a schema that defeats the validator
(a ``$ref`` that loops, a ``$ref`` to the network) is itself the problem reported.
"""

from __future__ import annotations

import copy
import functools
import itertools
import json
import re
import sys
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types
import re2  # google-re2: linear-time matching (see harness.tools.search)
from referencing import Registry

from harness.mcp.names import mcp_tool_name
from harness.messages import TOOL_NAME_PATTERN, is_valid_tool_name, valid_text
from harness.settings.files import nesting_depth

# jsonschema, when it is imported, imports every optional format library it finds, and one of
# them, rfc3987_syntax (installed for JupyterLab's jupyter-events), compiles a grammar then:
# 1.2 s in every process that checks a schema (each command line with servers, each kernel),
# for the "iri" formats this module never checks (it validates without a format checker).
# That library is kept out of this one import and put back: a later import of it works.
_KEPT_OUT = "rfc3987_syntax" not in sys.modules
if _KEPT_OUT:
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]
try:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
    from jsonschema.exceptions import (  # type: ignore[import-untyped,unused-ignore]
        SchemaError,
        ValidationError,
    )
    from jsonschema.validators import (  # type: ignore[import-untyped,unused-ignore]
        extend,
        validator_for,
    )
finally:
    if _KEPT_OUT and sys.modules.get("rfc3987_syntax", False) is None:
        del sys.modules["rfc3987_syntax"]

MAX_DESCRIPTION_CHARS = 2048
"""Claude Code's cap on an MCP tool's description (``MAX_MCP_DESCRIPTION_LENGTH`` in
openclaude ``src/services/mcp/client.ts``: "OpenAPI-generated MCP servers have been observed
dumping 15-60KB of endpoint docs into tool.description")."""

TRUNCATED_MARK = "… [truncated]"
"""What Claude Code appends to a description it cut."""

MAX_SCHEMA_BYTES = 64 * 1024
"""Our cap on a tool's ``input_schema``, as compact JSON (Claude Code has none; a real one
is a few kilobytes, and every byte is sent with every request)."""

MAX_SCHEMA_DEPTH = 32
"""Our cap on how deeply a schema's objects and lists nest."""

PROPERTY_KEY_PATTERN = r"^[a-zA-Z0-9_.-]{1,64}$"
"""What the API accepts as a top-level property name of an ``input_schema`` (its 400 error:
"Property keys should match pattern ...")."""

MAX_ERRORS = 5
"""How many of the input's errors :func:`input_problem` lists."""

_PROPERTY_KEY = re.compile(PROPERTY_KEY_PATTERN)
_NO_RETRIEVAL: Registry[Any] = Registry()  # a $ref to a URL is unresolvable, never fetched
_HIDDEN = frozenset(("Cf", "Co", "Cn"))


@dataclass(frozen=True)
class CheckedTool:
    """A listed tool the API will accept, as the model will see it."""

    server: str
    tool: str
    """The tool's own name, the one to call the server with."""
    name: str
    """The full name the model calls it by, ``mcp__server__tool``."""
    description: str
    input_schema: dict[str, Any] = field(compare=False)
    """A deep copy of the server's schema, cleaned (the server's object is left alone)."""
    read_only_hint: bool = False
    """The server's ``readOnlyHint`` annotation (Claude Code runs such tools in parallel and
    calls them read-only; a hint, not a promise)."""
    title: str | None = None


@dataclass(frozen=True)
class ToolProblem:
    """A listed tool that was refused, and why."""

    server: str
    tool: str
    reason: str

    def __str__(self) -> str:
        text = f"MCP server {self.server!r}: tool {self.tool[:80]!r} refused: {self.reason}"
        return " ".join(text.split())


def sanitize_unicode(text: str) -> str:
    """``text`` without hidden characters, as Claude Code cleans what MCP servers send.

    ``partiallySanitizeUnicode`` (openclaude ``src/utils/sanitization.ts``, against "ASCII
    smuggling" in tool descriptions and results): NFKC normalization, then every format
    (Cf: zero-width and bidirectional marks, Unicode tags), private-use (Co) and unassigned
    (Cn) character removed, repeated until nothing changes (at most 10 rounds). Lone
    surrogates, which the API cannot carry, become U+FFFD.
    """
    current = text
    for _ in range(10):
        previous = current
        current = unicodedata.normalize("NFKC", valid_text(current))
        current = "".join(c for c in current if unicodedata.category(c) not in _HIDDEN)
        if current == previous:
            break
    return current


def check_tool(server: str, tool: mcp_types.Tool) -> CheckedTool | ToolProblem:
    """``tool`` as the model should see it, or why the API would refuse it."""
    raw_name = tool.name if isinstance(tool.name, str) else ""

    def refuse(reason: str) -> ToolProblem:
        return ToolProblem(server, raw_name, reason)

    try:
        if not raw_name:
            return refuse("it has no name")
        name = mcp_tool_name(server, sanitize_unicode(raw_name))
        if not is_valid_tool_name(name):
            return refuse(
                f"its full name {name[:60]!r}... has {len(name)} characters; the API "
                f"accepts {TOOL_NAME_PATTERN}"
                if len(name) > 128
                else f"its full name {name!r} does not match {TOOL_NAME_PATTERN}"
            )
        schema = tool.input_schema
        if (reason := schema_problem(schema)) is not None:
            return refuse(reason)
        description = sanitize_unicode(tool.description or "")
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[:MAX_DESCRIPTION_CHARS] + TRUNCATED_MARK
        annotations = tool.annotations
        title = tool.title or (annotations.title if annotations is not None else None)
        return CheckedTool(
            server=server,
            tool=raw_name,
            name=name,
            description=description,
            input_schema=_sanitized(copy.deepcopy(schema)),
            read_only_hint=bool(annotations is not None and annotations.read_only_hint),
            title=sanitize_unicode(title) if isinstance(title, str) and title else None,
        )
    except (RecursionError, ValueError, TypeError, AttributeError) as error:
        return refuse(f"it could not be read ({type(error).__name__})")


def schema_problem(schema: object) -> str | None:
    """Why ``schema`` cannot be a tool's ``input_schema``, or None when the API takes it."""
    if not isinstance(schema, dict):
        return f"its input schema is {type(schema).__name__}, not a JSON object"
    if nesting_depth(schema, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:
        return f"its input schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
    try:
        size = len(json.dumps(schema, allow_nan=False, separators=(",", ":")).encode())
    except (TypeError, ValueError, RecursionError):
        return "its input schema is not plain JSON"
    if size > MAX_SCHEMA_BYTES:
        return f"its input schema is {size} bytes of JSON (at most {MAX_SCHEMA_BYTES})"
    if schema.get("type") != "object":
        return f'its input schema\'s top-level "type" is {_show(schema.get("type"))}, not "object"'
    combined = [k for k in ("oneOf", "allOf", "anyOf") if k in schema]
    if combined:
        return f"its input schema has {combined[0]} at the top level, which the API refuses"
    properties = schema.get("properties", {})
    if isinstance(properties, dict):
        for key in properties:
            if not isinstance(key, str) or not _PROPERTY_KEY.fullmatch(key):
                return (
                    f"its input schema has the property {_show(key)}; the API accepts "
                    f"property names matching {PROPERTY_KEY_PATTERN}"
                )
    try:
        _dialect(schema).check_schema(schema)
    except SchemaError as error:
        where = "/".join(str(p) for p in error.path) or "(top)"
        return f"its input schema is not valid JSON Schema at {where}: {_cut(error.message)}"
    except RecursionError:
        return "its input schema is too deeply nested to check"
    return None


def input_problem(name: str, schema: Mapping[str, Any], raw: Mapping[str, Any]) -> str | None:
    """What is wrong with ``raw`` as the input of tool ``name``, worded for the model, or None.

    The same wording as chapter 02's ``format_validation_error``: one line per field (its
    path, what was wrong), then "Fix the input and call the tool again."; at most
    :data:`MAX_ERRORS` errors, each cut to a couple of hundred characters. The schema's own
    ``$schema`` picks the dialect (2020-12 when it has none). Never raises: a schema the
    validator cannot use is reported as the problem, and the call is not made.
    """
    try:
        cls = _with_re2(_dialect(schema))
        validator = cls(schema, registry=_NO_RETRIEVAL)
        errors = list(itertools.islice(validator.iter_errors(raw), MAX_ERRORS + 1))
    except RecursionError:
        return _cannot_check(name, "its schema refers to itself without end")
    except Exception as error:  # a hostile schema must not crash the loop
        return _cannot_check(name, f"{type(error).__name__}: {_cut(str(error))}")
    if not errors:
        return None
    lines = [f"Invalid input for tool {name!r}:"]
    for found in errors[:MAX_ERRORS]:
        where = ".".join(str(p) for p in found.absolute_path) or "(input)"
        lines.append(f"- {where}: {_cut(found.message)}")
    if len(errors) > MAX_ERRORS:
        lines.append("- (more errors not shown)")
    lines.append("Fix the input and call the tool again.")
    return "\n".join(lines)


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """The ``pattern`` keyword matched by RE2, in time linear in the text.

    jsonschema's own uses Python's ``re``, which backtracks: a server's ``"(a+)+$"`` and a
    model's long string would hang the turn. A pattern RE2 cannot compile (backreferences,
    lookaround) is not checked here; the server still checks it.
    """
    if isinstance(instance, str) and isinstance(pattern, str):
        compiled = _compiled(pattern)
        if compiled is not None and compiled.search(instance) is None:
            yield ValidationError(f"{_cut(repr(instance), 80)} does not match {pattern!r}")


def _dialect(schema: Mapping[str, Any]) -> Any:
    """The validator class for the dialect ``$schema`` names; 2020-12 when it names none
    (or something that is not a string, which 2020-12's metaschema then refuses)."""
    if not isinstance(schema, Mapping) or not isinstance(schema.get("$schema"), str):
        return Draft202012Validator
    return validator_for(schema, default=Draft202012Validator)


@functools.lru_cache(maxsize=16)
def _with_re2(cls: Any) -> Any:
    return extend(cls, {"pattern": _pattern})


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options=options)
    except re2.error:
        return None


def _cannot_check(name: str, why: str) -> str:
    return f"The input of tool {name!r} cannot be checked against its schema ({why})."


def _sanitized(value: Any) -> Any:
    if isinstance(value, str):
        return sanitize_unicode(value)
    if isinstance(value, list):
        return [_sanitized(item) for item in value]
    if isinstance(value, dict):
        return {sanitize_unicode(str(k)): _sanitized(v) for k, v in value.items()}
    return value


def _cut(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _show(value: object) -> str:
    try:
        return _cut(json.dumps(value, ensure_ascii=False), 60)
    except (TypeError, ValueError, RecursionError):
        return type(value).__name__
