"""Chapter 13: skills, commands and hooks as configuration."""

from __future__ import annotations

import json
import re
import shlex


def hook_decision(exit_code: int, stdout: str, stderr: str) -> tuple[str, str]:
    """Exercise 1: what a PreToolUse command hook's answer decides, and the words with it."""
    answer = None
    if stdout.lstrip().startswith("{"):
        try:
            answer = json.loads(stdout)
        except ValueError:
            answer = None  # not JSON after all: plain text
    said = {} if answer is None else answer.get("hookSpecificOutput", {})
    decision = said.get("permissionDecision", "none") if isinstance(said, dict) else None
    reason = said.get("permissionDecisionReason", "") if isinstance(said, dict) else ""
    if exit_code == 2:  # blocks whatever the JSON says; a deny's own reason wins over stderr
        return "deny", reason if decision == "deny" and reason else stderr.strip()
    if decision not in ("allow", "deny", "ask", "none") or (answer is None and exit_code != 0):
        return "error", stderr.strip().partition("\n")[0].strip()  # its first line
    return decision, reason if decision != "none" else ""


def fill_arguments(body: str, arguments: str) -> str:
    """Exercise 2: a command's body with its argument placeholders filled in."""
    try:
        words = shlex.split(arguments)
    except ValueError:  # an unclosed quote: split on whitespace, as Claude Code falls back to
        words = arguments.split()

    def fill(match: re.Match[str]) -> str:
        index = match.group(1) or match.group(2)
        if index is None:
            return arguments  # $ARGUMENTS: the whole text, as typed
        return words[int(index)] if int(index) < len(words) else match.group(0)

    # $ARGUMENTS[N], then $N (not followed by a letter, digit or _), then $ARGUMENTS
    placeholder = r"\$ARGUMENTS\[(\d+)\]|\$(\d+)(?!\w)|\$ARGUMENTS"
    if arguments and not re.search(placeholder, body):
        return f"{body}\n\nARGUMENTS: {arguments}"
    return re.sub(placeholder, fill, body)  # one pass: an inserted value is never read again
