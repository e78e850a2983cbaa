"""The cases chapter 14's second check tries: ``ToolSearch`` queries, and what they load.

:func:`search_cases` are queries over the git and time reference servers' tools, with their
real descriptions, and the names the search loads; :func:`generated_searches` are queries of
both forms over shuffled pools, answered by :func:`reference_search`, the exercise's rules
written out here: the subset of :func:`harness.mcp.search.search_names` for MCP tools, without
``+term`` and without a query that starts with ``mcp__`` (a tool's name, or a server's
prefix), which Claude Code answers before the keywords (``tests/test_exercises_ch14.py``
checks that the two agree on every case). Used by
:mod:`harness.exercises.ch14`.
"""

from __future__ import annotations

import random
import re

Tools = list[dict[str, str]]
SearchCase = tuple[str, str, Tools, int | None, list[str]]


def _listed(server: str, tools: list[tuple[str, str]]) -> Tools:
    return [{"name": f"mcp__{server}__{name}", "description": text} for name, text in tools]


TIME_TOOLS: Tools = _listed(
    "time",
    [
        ("get_current_time", "Get current time in a specific timezone"),
        ("convert_time", "Convert time between timezones"),
    ],
)
"""The time server's tools as the model would see them (``mcp-server-time``'s descriptions)."""

GIT_TOOLS: Tools = _listed(
    "git",
    [
        ("git_status", "Shows the working tree status"),
        ("git_diff_unstaged", "Shows changes in the working directory that are not yet staged"),
        ("git_diff_staged", "Shows changes that are staged for commit"),
        ("git_diff", "Shows differences between branches or commits"),
        ("git_commit", "Records changes to the repository"),
        ("git_add", "Adds file contents to the staging area"),
        ("git_reset", "Unstages all staged changes"),
        ("git_log", "Shows the commit logs"),
        ("git_create_branch", "Creates a new branch from an optional base branch"),
        ("git_checkout", "Switches branches"),
        (
            "git_show",
            "Shows the contents of a commit, or of a file or directory given as <revision>:<path>",
        ),
        ("git_branch", "List Git branches"),
    ],
)
"""The git server's tools (``mcp-server-git``'s names and descriptions, in its order)."""

POOL: Tools = TIME_TOOLS + GIT_TOOLS

TIES: Tools = [
    {"name": "mcp__a__alpha_beta", "description": ""},
    {"name": "mcp__a__deltas", "description": ""},
    {"name": "mcp__a__gamma", "description": ""},
    {"name": "mcp__a__other", "description": "Delta, epsilon and zeta."},
]
"""Made-up tools whose scores tie: a check of the weights 12, 6 and 2 themselves."""


def _git(*names: str) -> list[str]:
    return [f"mcp__git__git_{name}" for name in names]


def search_cases() -> list[SearchCase]:
    """(what, query, tools, max_results or None for the default, the names loaded)."""
    current = "mcp__time__get_current_time"
    convert = "mcp__time__convert_time"
    odd = {"name": "mcp__docs__find", "description": "Find text like git.log (or a status("}
    near = {"name": "mcp__docs__read", "description": "Read the git log"}
    return [
        ("select: one exact name", "select:mcp__git__git_status", POOL, None, _git("status")),
        (
            "select: two names, in the query's order",
            "select:mcp__git__git_diff,mcp__time__get_current_time",
            POOL,
            None,
            [*_git("diff"), current],
        ),
        (
            "select: spaces stripped, a missing name skipped, a repeat once",
            "select: mcp__git__git_log , mcp__git__nope,mcp__git__git_log",
            POOL,
            None,
            _git("log"),
        ),
        ("SELECT: the word in any case", "SELECT:mcp__git__git_log", POOL, None, _git("log")),
        (
            "select: a name in another case (names are exact: none found)",
            "select:MCP__GIT__GIT_LOG",
            POOL,
            None,
            [],
        ),
        (
            "select: three names past max_results=1 (it does not apply)",
            "select:mcp__git__git_add,mcp__git__git_reset,mcp__git__git_commit",
            POOL,
            1,
            _git("add", "reset", "commit"),
        ),
        (
            "a keyword that is a part of two names, and in both descriptions",
            "timezone time",
            POOL,
            None,
            [current, convert],
        ),
        (
            "a keyword that is a whole part (12) against one inside a part (6)",
            "staged",
            POOL,
            None,
            _git("diff_staged", "diff_unstaged", "reset"),
        ),
        (
            "a server's name as a keyword (12 once, though git is two parts of each name)",
            "git status",
            POOL,
            None,
            _git("status", "branch", "diff_unstaged", "diff_staged", "diff"),
        ),
        (
            "'List Git branches' breaks a tie; other ties keep the tools' order, max_results=2",
            "git",
            POOL,
            2,
            _git("branch", "status"),
        ),
        (
            "a word found only in descriptions (2 each), six tools past the default of 5",
            "shows",
            POOL,
            None,
            _git("status", "diff_unstaged", "diff_staged", "diff", "log"),
        ),
        (
            "a description word must be whole (stag is not in 'staged')",
            "stag",
            POOL,
            None,
            _git("diff_unstaged", "diff_staged"),
        ),
        (
            "a description word at the end, next to punctuation",
            "path",
            POOL,
            None,
            _git("show"),
        ),
        (
            "a term repeated counts twice",
            "branch log log",
            POOL,
            None,
            _git("log", "create_branch", "branch"),
        ),
        (
            "upper case in the query",
            "COMMIT",
            POOL,
            None,
            _git("commit", "diff_staged", "log", "show"),
        ),
        (
            "a term across two parts (current_time is no single part)",
            "current_time",
            POOL,
            None,
            [],
        ),
        ("nothing matches", "slack message", POOL, None, []),
        ("an empty query", "", POOL, None, []),
        ("a query of spaces", "   ", POOL, None, []),
        (
            "a dot in a term is a dot, not any character",
            "git.log",
            [*GIT_TOOLS, near, odd],
            None,
            ["mcp__docs__find"],
        ),
        (
            "a bracket in a term is a bracket (and a word boundary must follow it)",
            "status(",
            [odd, *GIT_TOOLS],
            None,
            [],
        ),
        ("mcp as a keyword (not a part of any name)", "mcp", POOL, None, []),
        ("no tools at all", "git", [], None, []),
        (
            "two parts inside (6 + 6) tie one whole part (12): the first listed wins",
            "alph bet gamma",
            TIES,
            None,
            ["mcp__a__alpha_beta", "mcp__a__gamma"],
        ),
        (
            "one whole part (12) ties two parts inside (6 + 6): the first listed wins",
            "alph bet gamma",
            TIES[::-1],
            None,
            ["mcp__a__gamma", "mcp__a__alpha_beta"],
        ),
        (
            "three description words (2 + 2 + 2) tie one part inside (6)",
            "delta epsilon zeta",
            TIES,
            None,
            ["mcp__a__deltas", "mcp__a__other"],
        ),
        (
            "one part inside (6) ties three description words (2 + 2 + 2)",
            "delta epsilon zeta",
            TIES[::-1],
            None,
            ["mcp__a__other", "mcp__a__deltas"],
        ),
    ]


def reference_search(query: str, tools: Tools, max_results: int = 5) -> list[str]:
    """The exercise's rules: ``select:`` exact names, else keywords scored."""
    select = re.match(r"select:(.+)\Z", query, re.IGNORECASE)
    if select is not None:
        names = [t["name"] for t in tools]
        wanted = [piece.strip() for piece in select.group(1).split(",")]
        return [n for i, n in enumerate(wanted) if n in names and n not in wanted[:i]]

    def score(tool: dict[str, str]) -> int:
        parts = [p for p in tool["name"].removeprefix("mcp__").lower().split("_") if p]
        words = tool["description"].lower()
        total = 0
        for term in query.lower().split():
            total += 12 if term in parts else 6 if any(term in p for p in parts) else 0
            total += 2 if re.search(rf"\b{re.escape(term)}\b", words) else 0
        return total

    ranked = sorted(((score(t), i) for i, t in enumerate(tools)), key=lambda s: (-s[0], s[1]))
    return [tools[i]["name"] for s, i in ranked if s > 0][:max_results]


WORDS = (
    "git", "time", "diff", "staged", "stag", "commit", "commits", "log", "branch", "shows",
    "changes", "timezone", "zone", "get", "current", "convert", "file", "the", "x", "a",
    "GIT", "Status", "path", "repo", "slack", "status(", "a.b", "to-do", "in", "or",
    "git_status", "get_current", "mcp", "_", "-",
)  # fmt: skip
SERVERS = ("git", "time", "docs", "my-server", "a")
PARTS = ("get", "time", "status", "diff", "log", "to-do", "x", "zone", "list", "find")


def _tool(rng: random.Random) -> dict[str, str]:
    server = rng.choice(SERVERS)
    tool = "_".join(rng.choices(PARTS, k=rng.randint(1, 3)))
    if rng.random() < 0.2:
        tool = tool.replace("_", "__", 1)
    description = " ".join(rng.choices(WORDS, k=rng.randint(0, 6)))
    return {"name": f"mcp__{server}__{tool}", "description": description}


def _query(rng: random.Random, names: list[str]) -> str:
    if rng.random() < 0.25:
        picked = rng.choices([*names, "mcp__git__nope", "", " x "], k=rng.randint(1, 4))
        picked = [p.upper() if rng.random() < 0.1 else p for p in picked]
        return rng.choice(["select:", "Select:", "SELECT:"]) + ",".join(
            p if rng.random() < 0.7 else f" {p} " for p in picked
        )
    return " ".join(rng.choices(WORDS, k=rng.randint(0, 4)))


def generated_searches(count: int = 80, seed: int = 14) -> list[tuple[str, Tools, int | None]]:
    """(query, tools, max_results or None) of every form the exercise covers, over pools of
    the reference servers' tools and made-up ones (names unique, as the API requires)."""
    rng = random.Random(seed)
    out: list[tuple[str, Tools, int | None]] = []
    for _ in range(count):
        pool = rng.sample(POOL, rng.randint(0, len(POOL)))
        pool += [_tool(rng) for _ in range(rng.randint(0, 6))]
        tools: Tools = []
        for tool in pool:
            if all(tool["name"] != kept["name"] for kept in tools):
                tools.append(tool)
        names = [t["name"] for t in tools]
        out.append((_query(rng, names), tools, rng.choice([None, 1, 2, 3, 5, 8])))
    return out


__all__ = [
    "GIT_TOOLS",
    "POOL",
    "TIES",
    "TIME_TOOLS",
    "WORDS",
    "SearchCase",
    "Tools",
    "generated_searches",
    "reference_search",
    "search_cases",
]
