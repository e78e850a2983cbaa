"""The cases chapter 14's first check tries: servers' tool lists, and the names they give.

:func:`name_cases` are servers with the tool names they list, and the full names Claude Code
shows the model (``mcp__<server>__<tool>``, normalized) with the tools it leaves out;
:func:`generated_servers` are made of dots, spaces, non-ASCII letters and digits, emoji, long
runs and repeats, and :func:`expected_names` answers them with the package's own naming
(:func:`harness.mcp.names.mcp_tool_name`, :func:`harness.messages.is_valid_tool_name`), in the
order the session keeps (``harness.mcp.session``). Used by :mod:`harness.exercises.ch14`; the
second check's cases are in :mod:`harness.exercises.ch14_search`.
"""

from __future__ import annotations

import random

from harness.mcp.names import mcp_tool_name
from harness.messages import is_valid_tool_name

# -- exercise 1: name a server's tools ------------------------------------------------------------

Servers = dict[str, list[str]]
Named = tuple[list[str], list[tuple[str, str]]]
NameCase = tuple[str, Servers, Named]

TIME = {"time": ["get_current_time", "convert_time"]}
"""The reference time server (``mcp-server-time``) and its two tools."""


def name_cases() -> list[NameCase]:
    """(what, servers and their tools, (the full names, the pairs left out))."""
    x120 = "x" * 120  # mcp__s__ is 8 characters: 8 + 120 = 128, the API's limit
    return [
        (
            "the time server's two tools",
            TIME,
            (["mcp__time__get_current_time", "mcp__time__convert_time"], []),
        ),
        (
            "two servers, in the order they came (not sorted)",
            {"zeta": ["b", "a"], "alpha": ["c"]},
            (["mcp__zeta__b", "mcp__zeta__a", "mcp__alpha__c"], []),
        ),
        (
            "a dot in the server's name and in the tool's",
            {"my.server": ["get.time"]},
            (["mcp__my_server__get_time"], []),
        ),
        (
            "spaces, and upper case kept",
            {"My Server": ["List Files"]},
            (["mcp__My_Server__List_Files"], []),
        ),
        (
            "hyphens and digits kept",
            {"github-2": ["create-issue_v2"]},
            (["mcp__github-2__create-issue_v2"], []),
        ),
        (
            "accented letters (not ASCII: each becomes _)",
            {"café": ["résumé"]},
            (["mcp__caf___r_sum_"], []),
        ),
        (
            "CJK letters and an Arabic-Indic digit (letters and digits, but not ASCII ones)",
            {"日本": ["ツール٣"]},
            (["mcp__________"], []),
        ),
        (
            "a tab and a slash",
            {"fs": ["read\tfile/all"]},
            (["mcp__fs__read_file_all"], []),
        ),
        (
            "an emoji (beyond U+FFFF: two UTF-16 units, so two underscores)",
            {"s": ["🙂ok"]},
            (["mcp__s____ok"], []),
        ),
        (
            "a symbol inside U+FFFF (one underscore)",
            {"s": ["☺ok"]},
            (["mcp__s___ok"], []),
        ),
        (
            "U+FFFF, the last character of one UTF-16 unit, then U+10000, the first of two",
            {"s": ["\uffff\U00010000"]},
            (["mcp__s_____"], []),
        ),
        (
            "a tool's own __ kept",
            {"s": ["a__b"]},
            (["mcp__s__a__b"], []),
        ),
        (
            "two tools that normalize alike on one server (the first wins)",
            {"s": ["get.time", "get_time", "other"]},
            (["mcp__s__get_time", "mcp__s__other"], [("s", "get_time")]),
        ),
        (
            "two servers that normalize alike (each shared tool name: the first wins)",
            {"my.server": ["a"], "my_server": ["a", "b"]},
            (["mcp__my_server__a", "mcp__my_server__b"], [("my_server", "a")]),
        ),
        (
            "a server whose name holds __ against another server's tool",
            {"a": ["b__c"], "a__b": ["c"]},
            (["mcp__a__b__c"], [("a__b", "c")]),
        ),
        (
            "the same tool listed twice",
            {"git": ["git_log", "git_log"]},
            (["mcp__git__git_log"], [("git", "git_log")]),
        ),
        (
            "Get and get (case counts: two names)",
            {"s": ["Get", "get"]},
            (["mcp__s__Get", "mcp__s__get"], []),
        ),
        (
            "a tool with an empty name",
            {"s": ["", "ok"]},
            (["mcp__s__ok"], [("s", "")]),
        ),
        (
            "a full name of exactly 128 characters (kept)",
            {"s": [x120]},
            ([f"mcp__s__{x120}"], []),
        ),
        (
            "a full name of 129 characters (left out)",
            {"s": [x120 + "y", "short"]},
            (["mcp__s__short"], [("s", x120 + "y")]),
        ),
        (
            "an emoji that takes a name from 127 characters to 129",
            {"s": ["x" * 119 + "🙂"]},
            ([], [("s", "x" * 119 + "🙂")]),
        ),
        (
            "a server without tools, beside one with",
            {"empty": [], "t": ["x"]},
            (["mcp__t__x"], []),
        ),
        (
            "a long server name: 128 characters with one tool, 129 with another",
            {"s" * 119: ["ab", "abc"], "t": ["ab"]},
            ([f"mcp__{'s' * 119}__ab", "mcp__t__ab"], [("s" * 119, "abc")]),
        ),
    ]


SERVER_NAMES = (
    "time", "git", "my.server", "my_server", "My Server", "日本", "s🙂", "a__b", "a", "x" * 100,
)  # fmt: skip
TOOL_PIECES = (
    "get", "time", "_", "-", ".", " ", "__", "é", "日", "٣", "🙂", "\t", "A", "9", "b__c",
    "x" * 40, "x" * 119,
)  # fmt: skip


def generated_servers(count: int = 60, seed: int = 14) -> list[Servers]:
    """Servers with tool names of dots, spaces, non-ASCII letters and digits, emoji, long
    runs, repeats and near-collisions (every one left alone by ``sanitize_unicode``)."""
    rng = random.Random(seed)
    out: list[Servers] = []
    for _ in range(count):
        servers: Servers = {}
        for server in rng.sample(SERVER_NAMES, rng.randint(1, 4)):
            tools: list[str] = []
            for _ in range(rng.randint(0, 4)):
                if tools and rng.random() < 0.15:
                    tools.append(rng.choice(tools))  # listed twice
                else:
                    tools.append("".join(rng.choices(TOOL_PIECES, k=rng.randint(0, 4))))
            servers[server] = tools
        out.append(servers)
    return out


def expected_names(servers: Servers) -> Named:
    """What the harness's session keeps of ``servers`` (``_checked_tools``, for names only):
    the package's :func:`~harness.mcp.names.mcp_tool_name`, a name the API refuses or one
    already taken left out."""
    names: list[str] = []
    dropped: list[tuple[str, str]] = []
    for server, tools in servers.items():
        for tool in tools:
            name = mcp_tool_name(server, tool)
            if tool and is_valid_tool_name(name) and name not in names:
                names.append(name)
            else:
                dropped.append((server, tool))
    return names, dropped


__all__ = [
    "SERVER_NAMES",
    "TIME",
    "TOOL_PIECES",
    "NameCase",
    "Named",
    "Servers",
    "expected_names",
    "generated_servers",
    "name_cases",
]
