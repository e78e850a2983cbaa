"""Chapter 14's exercises: an MCP server's tools named for the model, and a tool search.

Exercise 1 checks the learner's ``mcp_tool_names(servers)``: from each server's listed tool
names, the full names the model sees (``mcp__<server>__<tool>``, each part normalized as
Claude Code does it) and the ``(server, tool)`` pairs left out (an empty name, a full name
past the API's 128 characters, a name an earlier tool already took), on hand-made lists (dots,
spaces, non-ASCII letters and digits, emoji, collisions, the limit) and then on generated ones
against the package's :func:`~harness.mcp.names.mcp_tool_name`, which it refuses.
Exercise 2 checks ``search_tools(query, tools, max_results)``: the names the ``ToolSearch``
tool loads, for the subset of Claude Code's search the chapter states (``select:`` and keyword
scores), on the git and time servers' tools and made-up ties, then on generated queries
against :func:`~harness.exercises.ch14_search.reference_search`; the package's
:func:`~harness.mcp.search.search_names` is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.exercises import NotYet, exercise, hints, refusing
from harness.exercises.ch14_cases import (
    Named,
    Servers,
    expected_names,
    generated_servers,
    name_cases,
)
from harness.exercises.ch14_search import (
    POOL,
    Tools,
    generated_searches,
    reference_search,
    search_cases,
)
from harness.mcp import names as names_module
from harness.mcp import schema as schema_module
from harness.mcp import search as search_module


def _shown(value: object, limit: int = 120) -> str:
    return repr(value) if len(repr(value)) <= limit else repr(value)[: limit - 3] + "..."


# -- exercise 1: name a server's tools -----------------------------------------------------------

_NAMES_HINT = (
    "build each full name from the two parts, normalized one character at a time: which "
    "characters stay is a short, ASCII-only list, and an emoji is two characters to "
    "JavaScript. Then walk the servers and their tools in order, keeping the names you have "
    "already given out."
)
_NAMES_FIRST = (
    'mcp_tool_names({"time": ["get_current_time", "convert_time"]}), the reference time '
    'server\'s two tools, should be (["mcp__time__get_current_time", '
    '"mcp__time__convert_time"], []): nothing is left out.'
)
_NAMES_RECIPE = (
    "With import re: write normalize(part), which returns re.sub(r'[^a-zA-Z0-9_-]', "
    "replace, part), where replace(match) gives '__' if ord(match.group()) > 0xFFFF, else "
    "'_'. Start names = [] and dropped = []. For server, tools in servers.items(), and for "
    "tool in tools: name = 'mcp__' + normalize(server) + '__' + normalize(tool). If tool is "
    "empty, or len(name) > 128, or name is already in names, append (server, tool) to "
    "dropped; otherwise append name to names. Return (names, dropped)."
)


def _call_names(mcp_tool_names: Callable[[Servers], Any], what: str, servers: Servers) -> Named:
    try:
        got = mcp_tool_names({server: list(tools) for server, tools in servers.items()})
    except NotImplementedError:
        raise
    except NotYet:
        raise
    except Exception as error:
        raise NotYet(f"for {what}, your code raised {type(error).__name__}: {error}") from None
    shape = f"{what}: return (names, dropped), a list of str and a list of (server, tool) pairs"
    if not (isinstance(got, tuple | list) and len(got) == 2):
        raise NotYet(f"{shape}, not {_shown(got)}.")
    names, dropped = got
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise NotYet(f"{shape}; the names are {_shown(names)}.")
    if not (
        isinstance(dropped, list)
        and all(
            isinstance(p, tuple | list) and len(p) == 2 and all(isinstance(x, str) for x in p)
            for p in dropped
        )
    ):
        raise NotYet(f"{shape}; what is left out is {_shown(dropped)}.")
    return names, [(p[0], p[1]) for p in dropped]


def _compare_names(what: str, servers: Servers, got: Named, want: Named) -> None:
    if got[0] != want[0]:
        raise NotYet(
            f"{what}: mcp_tool_names({_shown(servers)}) should name {_shown(want[0])}; yours "
            f"names {_shown(got[0])}."
        )
    if got[1] != want[1]:
        raise NotYet(
            f"{what}: mcp_tool_names({_shown(servers)}) should leave out {_shown(want[1])}; "
            f"yours leaves out {_shown(got[1])}."
        )


@exercise("mcp_tool_names", _NAMES_HINT, first=_NAMES_FIRST, number=1)
def check_mcp_tool_names(mcp_tool_names: Callable[[Servers], Any]) -> str:
    why = (
        "mcp_tool_names calls the package's naming (mcp_tool_name, normalize, collisions, "
        "check_tool); build the names yourself."
    )
    targets = (
        names_module.mcp_tool_name,
        names_module.normalize,
        names_module.collisions,
        schema_module.check_tool,
    )
    cases = name_cases()
    generated = generated_servers()
    wanted = [expected_names(servers) for servers in generated]  # before the package is refused
    with refusing(mcp_tool_names, targets, why):
        for what, servers, want in cases:
            _compare_names(what, servers, _call_names(mcp_tool_names, what, servers), want)
        for servers, want in zip(generated, wanted, strict=True):
            what = "a generated list"
            _compare_names(what, servers, _call_names(mcp_tool_names, what, servers), want)
    return (
        f"{len(cases)} tool lists and {len(generated)} generated ones named as Claude Code "
        "names them: each part normalized (an emoji counts twice), a name the API would refuse "
        "left out, and the first tool to take a name keeps it."
    )


# -- exercise 2: search the deferred tools -------------------------------------------------------

_SEARCH_HINT = (
    "a select: query names its tools exactly; any other query is keywords. For keywords, "
    "score every tool and sort once: a stable sort keeps ties in the tools' order. A term "
    "is text the model typed, not a regular expression."
)
_SEARCH_FIRST = (
    'search_tools("select:mcp__git__git_status", tools), over the git and time servers\' '
    'tools, should be ["mcp__git__git_status"]: select: names the tools to load.'
)
_SEARCH_RECIPE = (
    "With import re: m = re.fullmatch(r'select:(.+)', query, re.IGNORECASE). If m: names = "
    "[t['name'] for t in tools]; wanted = [piece.strip() for piece in "
    "m.group(1).split(',')]; return [n for n in dict.fromkeys(wanted) if n in names] "
    "(dict.fromkeys drops repeats and keeps the order). Otherwise start scored = [] and, for "
    "each tool: parts = [p for p in tool['name'].removeprefix('mcp__').lower().split('_') if "
    "p]; score = 0; for term in query.lower().split(): add 12 if term in parts, elif any(term "
    "in p for p in parts) add 6; and add 2 if re.search(r'\\b' + re.escape(term) + r'\\b', "
    "tool['description'].lower()). Append (score, tool['name']) when score > 0. Then "
    "scored.sort(key=lambda pair: -pair[0]) (a stable sort: ties keep their order) and "
    "return the names of the first max_results."
)


def _call_search(
    search_tools: Callable[..., Any], what: str, query: str, tools: Tools, limit: int | None
) -> list[str]:
    copies = [dict(tool) for tool in tools]
    try:
        got = search_tools(query, copies) if limit is None else search_tools(query, copies, limit)
    except NotImplementedError:
        raise
    except NotYet:
        raise
    except Exception as error:
        raise NotYet(f"for {what}, your code raised {type(error).__name__}: {error}") from None
    if not (isinstance(got, list) and all(isinstance(name, str) for name in got)):
        raise NotYet(f"{what}: return the names found, a list of str, not {_shown(got)}.")
    return got


def _said(query: str, tools: Tools, limit: int | None) -> str:
    if tools == POOL:
        pool = "the git and time servers' tools"
    else:
        pool = f"{len(tools)} tools {_shown([(t['name'], t['description']) for t in tools], 600)}"
    more = "" if limit is None else f", max_results={limit}"
    return f"search_tools({query!r}, {pool}{more})"


@exercise("search_tools", _SEARCH_HINT, first=_SEARCH_FIRST, number=2)
def check_search_tools(search_tools: Callable[..., Any]) -> str:
    why = "search_tools calls the package's search (search_names); score the tools yourself."
    targets = (
        search_module.search_names,
        search_module.tool_search_tool,
        search_module._score,
        search_module._name_parts,
    )
    cases = search_cases()
    generated = generated_searches()
    wanted = [
        reference_search(query, tools) if limit is None else reference_search(query, tools, limit)
        for query, tools, limit in generated
    ]
    with refusing(search_tools, targets, why):
        for what, query, tools, limit, want in cases:
            got = _call_search(search_tools, what, query, tools, limit)
            if got != want:
                raise NotYet(
                    f"{what}: {_said(query, tools, limit)} should be {want!r}; yours is {got!r}."
                )
        for (query, tools, limit), want in zip(generated, wanted, strict=True):
            what = f"a generated query {query!r}"
            got = _call_search(search_tools, what, query, tools, limit)
            if got != want:
                raise NotYet(
                    f"{what}: {_said(query, tools, limit)} should be {want!r}; yours is {got!r}."
                )
    return (
        f"{len(cases)} queries and {len(generated)} generated ones answered as ToolSearch "
        "answers them: select: by exact name, and keywords scored on the name's parts and the "
        "description's whole words."
    )


hint = hints(__name__, {1: _NAMES_RECIPE, 2: _SEARCH_RECIPE})

__all__ = [
    "check_mcp_tool_names",
    "check_search_tools",
    "expected_names",
    "generated_searches",
    "generated_servers",
    "hint",
    "name_cases",
    "reference_search",
    "search_cases",
]
