"""The skill listing: names and descriptions in the system prompt, bodies left on disk.

This is progressive disclosure. The model sees one line per skill, ``- name: description``
(Claude Code's format, ``formatCommandDescription`` in ``src/tools/SkillTool/prompt.ts``,
github.com/Gitlawb/openclaude), under Claude Code's heading "The following skills are
available for use with the Skill tool:" (``src/utils/messages.ts``, same repository), and
loads a body with the ``Skill`` tool only when it needs it.

Limits, as documented on https://code.claude.com/docs/en/skills:

* each entry's description (with ``when_to_use`` appended, Claude Code joins them with
  `` - ``) is cut at **1,536 characters** (:data:`MAX_DESCRIPTION_CHARS`, the setting
  ``skillListingMaxDescChars``);
* the whole listing gets **1% of the model's context window, in characters**
  (:data:`BUDGET_FRACTION`, the setting ``skillListingBudgetFraction``); Claude Code counts 4
  characters per token for this (``CHARS_PER_TOKEN`` in ``prompt.ts``), so 8,000 characters
  for a 200K window, 40,000 for 1M;
* over budget, "the listing always contains every skill name" and Claude Code "drops
  descriptions starting with the skills you invoke least". We drop whole descriptions the
  same way, least used first (``uses`` counts, when the caller keeps them), ties broken from
  the end of the list.

Skills with ``disable-model-invocation: true`` are not listed ("Description not in
context"). Where we differ: Claude Code sends the listing as a ``<system-reminder>`` user
message; we put it in the system prompt as a static :class:`~harness.prompt.Section`, in the
cached part, so it is written to the prompt cache once and read on every later request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from harness.prompt import Section

MAX_DESCRIPTION_CHARS = 1536
BUDGET_FRACTION = 0.01
CHARS_PER_TOKEN = 4
DEFAULT_BUDGET_CHARS = 8_000
"""Claude Code's fallback when the window is unknown (``DEFAULT_CHAR_BUDGET``: 1% of 200K x 4)."""
HEADING = "The following skills are available for use with the Skill tool:"


class Listable(Protocol):
    """A skill or a command: what the listing needs of it."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def disable_model_invocation(self) -> bool: ...


@dataclass(frozen=True)
class Listing:
    """The listing's text and what the budget cost."""

    text: str
    entries: int
    descriptions_dropped: int
    budget_chars: int


def budget_for(context_window: int | None) -> int:
    """1% of the window, in characters (4 per token); the fallback when it is unknown."""
    if not context_window:
        return DEFAULT_BUDGET_CHARS
    return int(context_window * CHARS_PER_TOKEN * BUDGET_FRACTION)


def entry_description(item: Listable) -> str:
    """The description as listed: ``when_to_use`` appended, cut at 1,536 characters."""
    description = item.description
    when = getattr(getattr(item, "fields", None), "when_to_use", None)
    if when:
        description = f"{description} - {' '.join(when.split())}" if description else when
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[: MAX_DESCRIPTION_CHARS - 1] + "\u2026"
    return description


def format_listing(
    items: Sequence[Listable],
    *,
    context_window: int | None = None,
    budget_chars: int | None = None,
    uses: Mapping[str, int] | None = None,
) -> Listing:
    """The listing of the model-invocable ``items``, fitted to the budget (see the module)."""
    listed = [i for i in items if not i.disable_model_invocation]
    budget = budget_chars if budget_chars is not None else budget_for(context_window)
    descriptions = {i.name: entry_description(i) for i in listed}

    def line(name: str) -> str:
        text = descriptions.get(name, "")
        return f"- {name}: {text}" if text else f"- {name}"

    counts = uses or {}
    order = sorted(
        range(len(listed)), key=lambda k: (counts.get(listed[k].name, 0), -k)
    )  # least used first; among equals, the last listed first
    total = sum(len(line(i.name)) for i in listed) + max(0, len(listed) - 1)
    dropped = 0
    for k in order:
        if total <= budget:
            break
        name = listed[k].name
        before = len(line(name))
        if descriptions.pop(name, ""):
            dropped += 1
            total -= before - len(line(name))
    text = "\n".join(line(i.name) for i in listed)
    return Listing(text, len(listed), dropped, budget)


def skills_section(
    items: Sequence[Listable],
    *,
    context_window: int | None = None,
    budget_chars: int | None = None,
    dynamic: bool = False,
) -> Section | None:
    """The system-prompt section listing ``items``; None when none may be loaded by the model.

    Static by default: it changes only when skill files do, so it belongs in the cached part.
    """
    listing = format_listing(items, context_window=context_window, budget_chars=budget_chars)
    if not listing.entries:
        return None
    return Section("skills", f"{HEADING}\n\n{listing.text}", dynamic=dynamic)


def inlined_section(items: Sequence[tuple[str, str]], *, dynamic: bool = False) -> Section | None:
    """The opposite layout, for comparison (chapter 13's failure first): every skill's whole
    body in the system prompt. ``items`` are ``(name, body)`` pairs."""
    if not items:
        return None
    parts = [f'<skill name="{name}">\n{body.strip()}\n</skill>' for name, body in items]
    return Section("skills_inlined", "Skills:\n\n" + "\n\n".join(parts), dynamic=dynamic)
