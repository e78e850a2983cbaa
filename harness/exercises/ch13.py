"""Chapter 13's exercises: a hook's answer read as Claude Code reads it, and a command expanded.

Exercise 1 checks the learner's ``hook_decision(exit_code, stdout, stderr)``: what a
PreToolUse command hook's answer decides, ``("allow" | "deny" | "ask" | "none" | "error",
words)``, on the answers Claude Code's hooks reference describes (exit 2 with stderr, exit 0
silent or chatty, the conventional exit 1, a script that could not start, JSON decisions with
and without reasons, JSON on a non-zero exit, JSON that fails validation, JSON beside exit 2,
text that only looks like JSON), then on generated answers, where it must never raise.
Exercise 2 checks ``fill_arguments(body, arguments)``: a custom command's or a skill's body with
``$ARGUMENTS``, ``$ARGUMENTS[N]`` and ``$N`` filled in as Claude Code documents them (shell-style
quoting, a missing argument left as written, arguments appended when the body has no
placeholder, an inserted value never read again), then on generated bodies against the
package's :func:`~harness.skills.arguments.substitute_arguments`, which it refuses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.exercises import NotYet, exercise, forbid, hints, refers_to, refusing
from harness.exercises.ch13_cases import (
    decision_cases,
    expand_cases,
    generated_answers,
    generated_expansions,
)
from harness.settings import protocol
from harness.skills import arguments as arguments_module
from harness.skills.arguments import substitute_arguments

# -- exercise 1: read a hook's answer ------------------------------------------------------------


KINDS = ("allow", "deny", "ask", "none", "error")

_DECISION_HINT = (
    "Claude Code reads the exit code and stdout together. Decide first what stdout is (a "
    "JSON answer, or plain text), then which of the two speaks: exit 2 always blocks, a JSON "
    "answer that passes validation decides whatever the code, and plain text leaves it to "
    "the code."
)
_DECISION_FIRST = (
    'hook_decision(2, "", "Blocked: rm commands are not allowed\\n"), the hooks reference\'s rm '
    'guard, should be ("deny", "Blocked: rm commands are not allowed"): exit 2 blocks, and '
    "stderr, without its newline, is the reason the model reads."
)
_DECISION_RECIPE = (
    "With import json: answer = None; if stdout.lstrip().startswith('{'), try answer = "
    "json.loads(stdout), except ValueError: answer = None (plain text). Then said = {} if "
    "answer is None else answer.get('hookSpecificOutput', {}). If said is a dict, decision = "
    "said.get('permissionDecision', 'none') and reason = said.get('permissionDecisionReason', "
    "''); otherwise decision = None and reason = ''. If exit_code == 2: return ('deny', "
    "reason) when decision == 'deny' and reason, else ('deny', stderr.strip()). If decision "
    "is not one of allow, deny, ask, none, or answer is None and exit_code != 0: return "
    "('error', stderr.strip().partition('\\n')[0].strip()), the first line of stderr. "
    "Otherwise return (decision, reason), with '' for the reason when decision is 'none'."
)


def _shown(value: object) -> str:
    return repr(value) if len(repr(value)) <= 90 else repr(value)[:87] + "..."


def _ask(
    decide: Callable[[int, str, str], Any], what: str, code: int, stdout: str, stderr: str
) -> Any:
    try:
        return decide(code, stdout, stderr)
    except NotImplementedError:
        raise
    except Exception as error:
        raise NotYet(f"for {what}, your code raised {type(error).__name__}: {error}") from None


def _as_pair(got: Any, what: str) -> tuple[str, str]:
    if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(x, str) for x in got)):
        raise NotYet(f"{what}: return a pair of strings (decision, words), not {_shown(got)}.")
    if got[0] not in KINDS:
        raise NotYet(f"{what}: the decision is one of {', '.join(KINDS)}; yours is {got[0]!r}.")
    return got[0], got[1]


@exercise("hook_decision", _DECISION_HINT, first=_DECISION_FIRST, number=1)
def check_hook_decision(hook_decision: Callable[[int, str, str], Any]) -> str:
    why = "hook_decision calls the package's protocol (interpret, read_json); read it yourself."
    targets = (protocol.interpret, protocol.read_json)
    cases = decision_cases()
    generated = generated_answers()
    with refusing(hook_decision, targets, why):
        for what, code, stdout, stderr, want in cases:
            got = _as_pair(_ask(hook_decision, what, code, stdout, stderr), what)
            if got != want:
                raise NotYet(
                    f"{what}: exit {code}, stdout {_shown(stdout)}, stderr {_shown(stderr)} "
                    f"should give {want!r}; yours gives {got!r}."
                )
        for code, stdout, stderr in generated:
            what = f"a generated answer (exit {code}, stdout {_shown(stdout)})"
            _as_pair(_ask(hook_decision, what, code, stdout, stderr), what)
    return (
        f"{len(cases)} answers read as Claude Code reads them, and {len(generated)} generated "
        "ones without a crash: exit 2 blocks, valid JSON decides, plain text leaves it to the "
        "exit code."
    )


# -- exercise 2: expand a command --------------------------------------------------------------

_EXPAND_HINT = (
    "three kinds of placeholder share a prefix, and a value you put in must never be read as "
    "a placeholder in its turn. Claude Code splits the arguments as a shell would, and says "
    "what it does when the body has no placeholder at all."
)
_EXPAND_FIRST = (
    'fill_arguments("Fix GitHub issue $ARGUMENTS following our coding standards.", "123"), the '
    "skills "
    'page\'s example, should be "Fix GitHub issue 123 following our coding standards."'
)
_EXPAND_RECIPE = (
    "With import re, shlex: try words = shlex.split(arguments), except ValueError: words = "
    "arguments.split(). Take the pattern "
    r"r'\$ARGUMENTS\[(\d+)\]|\$(\d+)(?!\w)|\$ARGUMENTS' (the longest form first). If "
    "arguments is not empty and re.search(pattern, body) finds nothing, return body + "
    "'\\n\\nARGUMENTS: ' + arguments. Otherwise write fill(match): index = match.group(1) or "
    "match.group(2); when it is None the match is $ARGUMENTS, so return arguments; else "
    "return words[int(index)] if int(index) < len(words), else match.group(0) (left as "
    "written). Return re.sub(pattern, fill, body): one pass, so no inserted value is read "
    "again."
)


def _expand_one(expand: Callable[[str, str], Any], what: str, body: str, arguments: str) -> str:
    try:
        got = expand(body, arguments)
    except NotImplementedError:
        raise
    except Exception as error:
        raise NotYet(f"for {what}, your code raised {type(error).__name__}: {error}") from None
    if not isinstance(got, str):
        raise NotYet(f"{what}: return the expanded text, a str, not {_shown(got)}.")
    return got


@exercise("fill_arguments", _EXPAND_HINT, first=_EXPAND_FIRST, number=2)
def check_fill_arguments(fill_arguments: Callable[[str, str], Any]) -> str:
    why = "fill_arguments calls the package's substitute_arguments; fill them in yourself."
    if refers_to(fill_arguments, substitute_arguments, attributes=False):
        raise NotYet(why)
    cases = expand_cases()
    generated = generated_expansions()
    wanted = [substitute_arguments(body, arguments) for body, arguments in generated]
    with forbid(arguments_module, "substitute_arguments", why):
        for what, body, arguments, want in cases:
            got = _expand_one(fill_arguments, what, body, arguments)
            if got != want:
                raise NotYet(
                    f"{what}: fill_arguments({body!r}, {arguments!r}) should be {want!r}; yours is "
                    f"{got!r}."
                )
        for (body, arguments), want in zip(generated, wanted, strict=True):
            what = f"a generated body {body!r} with arguments {arguments!r}"
            got = _expand_one(fill_arguments, what, body, arguments)
            if got != want:
                raise NotYet(f"{what}: it expands to {want!r}; yours is {got!r}.")
    return (
        f"{len(cases)} bodies and {len(generated)} generated ones expanded as Claude Code "
        "documents: shell-style arguments, $ARGUMENTS[N] and $N from 0, a missing one left as "
        "written, arguments appended when the body has no placeholder, and no inserted value "
        "read twice."
    )


hint = hints(__name__, {1: _DECISION_RECIPE, 2: _EXPAND_RECIPE})

__all__ = [
    "KINDS",
    "check_fill_arguments",
    "check_hook_decision",
    "decision_cases",
    "expand_cases",
    "generated_answers",
    "generated_expansions",
    "hint",
]
