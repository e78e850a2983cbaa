"""Arguments in a skill or command body: ``$ARGUMENTS``, ``$ARGUMENTS[N]``, ``$N``, ``$name``.

As Claude Code documents them (https://code.claude.com/docs/en/skills, "Available string
substitutions" and "Pass arguments to skills"):

* ``$ARGUMENTS`` is the whole argument text as typed.
* ``$ARGUMENTS[N]`` and its shorthand ``$N`` are the N-th argument, **counted from 0**:
  ``$0`` is the first. Arguments are split shell-style, so ``"hello world"`` is one.
  (The older slash-commands page, as of January 2026, counted from 1: ``$1`` was the first.
  Claude Code changed this when commands were merged into skills; a command file written
  for the old page now gets its arguments shifted by one. We follow the current page.)
* ``$name`` is a named argument from the front matter's ``arguments`` list, by position.
* An indexed placeholder with no argument stays as written; a named one becomes empty.
* ``\\$1`` keeps a literal ``$1`` (one backslash escapes the token; two do not).
* Each value is inserted once and never re-scanned: an argument that itself says ``$1`` stays
  ``$1`` (Claude Code parks values behind opaque slots for the same reason,
  ``src/utils/argumentSubstitution.ts`` in github.com/Gitlawb/openclaude).
* With arguments but no placeholder in the body, ``ARGUMENTS: <value>`` is appended.
* With no arguments at all (``None``: the model called the Skill tool without ``args``), the
  body is left as it is, as Claude Code's ``substituteArguments`` does; an empty string (the
  user typed ``/name`` alone) empties every placeholder.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

_INDEXED = r"\$ARGUMENTS\[(?P<index>\d+)\]"
_SHORT = r"\$(?P<short>\d+)(?!\w)"
_ALL = r"\$ARGUMENTS(?!\[\d+\])"


def split_arguments(text: str) -> list[str]:
    """Shell-style words: quotes group, no variables are expanded. Unbalanced quotes fall back
    to splitting on whitespace, as Claude Code does.

    >>> split_arguments('SearchBar "React Native" Vue')
    ['SearchBar', 'React Native', 'Vue']
    """
    if not text.strip():
        return []
    try:
        return shlex.split(text, posix=True)
    except ValueError:
        return text.split()


def substitute_arguments(
    body: str, arguments: str | None, names: Sequence[str] = (), *, append: bool = True
) -> str:
    """``body`` with its argument placeholders filled from ``arguments`` (see the module)."""
    if arguments is None:
        return body
    words = split_arguments(arguments)
    alternatives = [_INDEXED, _SHORT, _ALL]
    named = [n for n in names if n and not n.isdigit()]
    if named:
        # Longest first, so $branch_name is not read as $branch followed by _name.
        ordered = sorted(set(named), key=len, reverse=True)
        alternatives.insert(0, r"\$(?P<name>" + "|".join(map(re.escape, ordered)) + r")(?![\[\w])")
    pattern = re.compile(r"(?P<escape>(?<!\\)\\)?(?:" + "|".join(alternatives) + ")")
    found = False

    def fill(match: re.Match[str]) -> str:
        nonlocal found
        token = match.group(0)
        if match.group("escape"):
            return token[1:]  # \$1 -> $1, literally
        found = True
        if named and match.group("name"):
            position = named.index(match.group("name"))
            return words[position] if position < len(words) else ""
        index = match.group("index") or match.group("short")
        if index is not None:
            i = int(index)
            return words[i] if i < len(words) else token
        return arguments

    result = pattern.sub(fill, body)
    if not found and append and arguments:
        result += f"\n\nARGUMENTS: {arguments}"
    return result
