"""The cases chapter 13's checks try: hook answers, and command bodies with their arguments.

:func:`decision_cases` are PreToolUse command-hook answers (exit code, stdout, stderr) with
what Claude Code's hooks reference says they decide; :func:`generated_answers` are hostile
ones a check must survive. :func:`expand_cases` are command bodies and the text typed after
``/name``, with the prompt the skills page says they send; :func:`generated_expansions` are
made of placeholders and near-placeholders. Used by :mod:`harness.exercises.ch13`.
"""

from __future__ import annotations

import json
import random
from typing import Any


def _pre(decision: str | None = None, reason: str | None = None, **more: Any) -> str:
    """A PreToolUse hook's JSON answer, as a script prints it."""
    specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if decision is not None:
        specific["permissionDecision"] = decision
    if reason is not None:
        specific["permissionDecisionReason"] = reason
    specific.update(more)
    return json.dumps({"hookSpecificOutput": specific}) + "\n"


RM = "Blocked: rm commands are not allowed\n"
"""The hooks reference's example guard's stderr."""

HookCase = tuple[str, int, str, str, tuple[str, str]]


def decision_cases() -> list[HookCase]:
    """(what, exit code, stdout, stderr, the decision and its words)."""
    deny = _pre("deny", "Use trash/ instead of rm")
    return [
        (
            "exit 2 with the reason on stderr (the hooks reference's rm guard)",
            2,
            "",
            RM,
            ("deny", "Blocked: rm commands are not allowed"),
        ),
        ("exit 0 and nothing printed", 0, "", "", ("none", "")),
        ("exit 0 with plain text on stdout", 0, "checked 3 rules\n", "", ("none", "")),
        (
            "exit 0 with a warning on stderr (stderr of an exit 0 is never shown)",
            0,
            "",
            "note: slow disk\n",
            ("none", ""),
        ),
        (
            "exit 1 with two lines on stderr (1 does not block: a non-blocking error)",
            1,
            "",
            "guard.py: no config found\nTraceback (most recent call last):\n",
            ("error", "guard.py: no config found"),
        ),
        (
            "exit 127: the script could not start",
            127,
            "",
            "/bin/sh: 1: .claude/hooks/guard.sh: not found\n",
            ("error", "/bin/sh: 1: .claude/hooks/guard.sh: not found"),
        ),
        (
            "exit 1 with blank lines before the first line of stderr",
            1,
            "",
            "\n\n  disk full  \nmore\n",
            ("error", "disk full"),
        ),
        ("exit 3 with nothing on stderr", 3, "", "", ("error", "")),
        ("JSON that denies, exit 0", 0, deny, "", ("deny", "Use trash/ instead of rm")),
        (
            "JSON that allows, with a reason",
            0,
            _pre("allow", "read-only command"),
            "",
            ("allow", "read-only command"),
        ),
        (
            "JSON that asks the user",
            0,
            _pre("ask", "touches production"),
            "",
            ("ask", "touches production"),
        ),
        ("JSON that allows, without a reason", 0, _pre("allow"), "", ("allow", "")),
        (
            "JSON after blank lines and spaces",
            0,
            "\n   " + _pre("ask", "a new package"),
            "",
            ("ask", "a new package"),
        ),
        (
            "JSON that allows, with exit 1 (a valid answer decides; the code is ignored)",
            1,
            _pre("allow", "known script"),
            "exit 1 out of habit\n",
            ("allow", "known script"),
        ),
        (
            "JSON with context but no decision",
            0,
            _pre(additionalContext="Production is frozen today."),
            "",
            ("none", ""),
        ),
        ("JSON with a reason but no decision", 0, _pre(reason="just looking"), "", ("none", "")),
        (
            "JSON with no decision and exit 1 (valid: no decision, not an error)",
            1,
            '{"systemMessage": "checked"}\n',
            "oops\n",
            ("none", ""),
        ),
        (
            "JSON whose permissionDecision is not allow, deny or ask (it fails validation)",
            0,
            _pre("maybe", "unsure"),
            "guard: unsure\n",
            ("error", "guard: unsure"),
        ),
        (
            "JSON whose hookSpecificOutput is a string (it fails validation)",
            0,
            '{"hookSpecificOutput": "deny"}\n',
            "",
            ("error", ""),
        ),
        (
            "exit 2 with JSON that allows (exit 2 blocks whatever the JSON says)",
            2,
            _pre("allow", "fine by me"),
            "rm is not allowed\n",
            ("deny", "rm is not allowed"),
        ),
        (
            "exit 2 with JSON that denies with a reason (the JSON's reason wins)",
            2,
            deny,
            "blocked\n",
            ("deny", "Use trash/ instead of rm"),
        ),
        (
            "exit 2 with JSON that denies without a reason",
            2,
            _pre("deny"),
            "  no force pushes  \n",
            ("deny", "no force pushes"),
        ),
        (
            "exit 2 with JSON that fails validation",
            2,
            _pre("maybe"),
            "blocked anyway\n",
            ("deny", "blocked anyway"),
        ),
        (
            "exit 2 with text on stdout and the reason on stderr",
            2,
            "checking...\n",
            "Blocked: force push\n",
            ("deny", "Blocked: force push"),
        ),
        (
            "stdout that starts with { but is not JSON, exit 0 (plain text)",
            0,
            "{not json\n",
            "",
            ("none", ""),
        ),
        (
            "stdout that starts with { but is not JSON, exit 1",
            1,
            "{not json\n",
            "bad output\n",
            ("error", "bad output"),
        ),
        ("a JSON array on stdout, exit 0 (plain text)", 0, '["deny"]\n', "", ("none", "")),
        ("a JSON array on stdout, exit 1", 1, '["deny"]\n', "no\n", ("error", "no")),
    ]


def generated_answers(count: int = 60, seed: int = 13) -> list[tuple[int, str, str]]:
    """Hostile answers: odd exit codes, truncated JSON, JSON of every type, binary noise."""
    rng = random.Random(seed)
    pieces = [
        "",
        "{",
        "}",
        '{"hookSpecificOutput": null}',
        '{"hookSpecificOutput": []}',
        '{"hookSpecificOutput": {"permissionDecision": null}}',
        '{"hookSpecificOutput": {"permissionDecision": 7}}',
        '{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": ""}}',
        "null",
        "42",
        '"deny"',
        "\x00\x01\ufffd",
        "{" * 50,
        "\n\n",
    ]
    answers = []
    for _ in range(count):
        code = rng.choice([-9, 0, 1, 2, 2, 126, 255])
        stdout = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 3)))
        stderr = rng.choice(["", "\n", "x\ny", "\ufffd\n", " " * 3])
        answers.append((code, stdout, stderr))
    return answers


ExpandCase = tuple[str, str, str, str]

MIGRATE = "Migrate the $ARGUMENTS[0] component from $ARGUMENTS[1] to $ARGUMENTS[2]."


def expand_cases() -> list[ExpandCase]:
    """(what, body, arguments, the body expanded)."""
    return [
        (
            "the skills page's fix-issue example",
            "Fix GitHub issue $ARGUMENTS following our coding standards.",
            "123",
            "Fix GitHub issue 123 following our coding standards.",
        ),
        (
            "the skills page's migrate-component example, with $ARGUMENTS[N]",
            MIGRATE,
            "SearchBar React Vue",
            "Migrate the SearchBar component from React to Vue.",
        ),
        (
            "the same with the $N shorthand (0-based, like $ARGUMENTS[N])",
            "Migrate the $0 component from $1 to $2.",
            "SearchBar React Vue",
            "Migrate the SearchBar component from React to Vue.",
        ),
        (
            "double quotes around one argument",
            "Say $0, then $1. All: $ARGUMENTS",
            '"hello world" second',
            'Say hello world, then second. All: "hello world" second',
        ),
        ("single quotes around one argument", "[$0] [$1]", "'a b' c", "[a b] [c]"),
        (
            "an argument that was not given (its placeholder stays as written)",
            "Review $0 for rounding bugs. Focus on: $1.",
            "app/tax.py",
            "Review app/tax.py for rounding bugs. Focus on: $1.",
        ),
        (
            "$ARGUMENTS[N] past the last argument (it stays as written)",
            "first=$ARGUMENTS[0] fourth=$ARGUMENTS[3]",
            "a b",
            "first=a fourth=$ARGUMENTS[3]",
        ),
        (
            "a body whose only placeholder has no argument (found: nothing is appended)",
            "Compare with $2.",
            "a",
            "Compare with $2.",
        ),
        (
            "a body without placeholders, with arguments (they are appended)",
            "Squash the last commits into one.",
            "3",
            "Squash the last commits into one.\n\nARGUMENTS: 3",
        ),
        (
            "a body without placeholders, without arguments (left as it is)",
            "Squash the last commits into one.",
            "",
            "Squash the last commits into one.",
        ),
        (
            "a placeholder, without arguments (it becomes empty)",
            "Squash the last $ARGUMENTS commits.",
            "",
            "Squash the last  commits.",
        ),
        (
            "$10 (two digits: the eleventh argument)",
            "$10|$1",
            "a b c d e f g h i j k",
            "k|b",
        ),
        ("$10 with two arguments (not $1 then 0)", "[$10]", "a b", "[$10]"),
        (
            "$1x (a letter right after the digits: not a placeholder)",
            "Use $0 and $1x",
            "a b",
            "Use a and $1x",
        ),
        ("$1_ (an underscore counts as a letter)", "$0 $1_", "a b", "a $1_"),
        (
            "a $ with no name after it, and $X (no placeholder: the arguments are appended)",
            "It costs $ and $X.",
            "a",
            "It costs $ and $X.\n\nARGUMENTS: a",
        ),
        (
            "an argument that itself reads $1 (inserted, never read again)",
            "$0 then $1",
            "'$1' done",
            "$1 then done",
        ),
        (
            "an argument that reads $ARGUMENTS (inserted, never read again)",
            "[$0]",
            "'$ARGUMENTS' x",
            "[$ARGUMENTS]",
        ),
        (
            "an unclosed quote (shell-style splitting fails: split on whitespace)",
            "$0|$1|$ARGUMENTS",
            'it"s here',
            'it"s|here|it"s here',
        ),
        (
            "runs of spaces ($ARGUMENTS keeps them as typed)",
            "$1 <$ARGUMENTS>",
            "a   b",
            "b <a   b>",
        ),
        ("$ARGUMENTS[x] (not an index)", "$ARGUMENTS[x]", "a", "a[x]"),
        ("$ARGUMENTS twice", "$ARGUMENTS and $ARGUMENTS", "go", "go and go"),
    ]


GENERATED_PIECES = (
    "$0", "$1", "$2", "$10", "$1x", "$ARGUMENTS", "$ARGUMENTS[0]", "$ARGUMENTS[2]",
    "$ARGUMENTS[x]", "$", "$X", " ", "word", "[1]", "\n", "0",
)  # fmt: skip
GENERATED_WORDS = ("a", "b c", "'$1'", '"x y"', "$ARGUMENTS", "it's", "", "  ", "10")


def generated_expansions(count: int = 40, seed: int = 13) -> list[tuple[str, str]]:
    """(body, arguments) pairs made of placeholders, near-placeholders and quoted words (no
    backslashes: the escape is left out of the exercise)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        body = "".join(rng.choice(GENERATED_PIECES) for _ in range(rng.randint(0, 6)))
        arguments = " ".join(rng.choice(GENERATED_WORDS) for _ in range(rng.randint(0, 4)))
        pairs.append((body, arguments))
    return pairs


__all__ = [
    "GENERATED_PIECES",
    "GENERATED_WORDS",
    "MIGRATE",
    "RM",
    "ExpandCase",
    "HookCase",
    "decision_cases",
    "expand_cases",
    "generated_answers",
    "generated_expansions",
]
