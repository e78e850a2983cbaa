"""Chapter 13's project: a workspace configured the way Claude Code's users configure theirs.

:func:`make_workspace` writes chapter 04's billing project (:func:`make_project`) and, beside
it, what a team keeps in ``.claude/``:

* 30 skills (:data:`SKILLS`; :data:`ALL_SKILLS` has 50, for the skills benchmark),
  ``.claude/skills/<name>/SKILL.md``, each with YAML front matter (``name``,
  ``description``) and a body whose size is taken from the real ``SKILL.md`` files of
  Anthropic's public skills repository (:data:`SKILL_SIZES`, cycled): the bodies' words are
  ours, their lengths are not;
* two custom slash commands, ``.claude/commands/review.md`` and ``.claude/commands/git/fixup.md``;
* ``.claude/settings.json`` and its two hook scripts
  (:mod:`harness.notebook.extensions_hooks`).

Nothing here runs an agent: :mod:`harness.notebook.extensions_runs` does, and
:mod:`harness.notebook.extensions_views` shows what came of it.
"""

from __future__ import annotations

from pathlib import Path

from harness.notebook.extensions_hooks import write_settings
from harness.notebook.sessions import make_project

SKILL_SIZES: tuple[int, ...] = (
    19_769,  # algorithmic-art
    2_235,  # brand-guidelines
    11_939,  # canvas-design
    73_938,  # claude-api
    15_815,  # doc-coauthoring
    20_084,  # docx
    8_260,  # frontend-design
    1_511,  # internal-comms
    9_092,  # mcp-builder
    8_072,  # pdf
    9_182,  # pptx
    33_168,  # skill-creator
    7_841,  # slack-gif-creator
    3_124,  # theme-factory
    3_087,  # web-artifacts-builder
    3_913,  # webapp-testing
    11_463,  # xlsx
)
"""Bytes of each ``skills/*/SKILL.md`` in github.com/anthropics/skills (commit 9d2f1ae1),
in the repository's order (observed): the 17 real skills, median 9,092 bytes."""

SKILL_SOURCE = "github.com/anthropics/skills at commit 9d2f1ae1"

SKILLS: tuple[tuple[str, str], ...] = (
    (
        "api-conventions",
        "REST conventions for this codebase: paths, errors, pagination. "
        "Use when adding or changing an endpoint.",
    ),
    (
        "release-notes",
        "Write release notes from CHANGELOG.md and the merged work. "
        "Use when the user asks for release notes or a version summary.",
    ),
    (
        "commit-message",
        "Write a commit message in the team's format. "
        "Use when committing or when asked for a commit message.",
    ),
    (
        "db-migration",
        "Write and check a database migration. Use when a model or a table changes.",
    ),
    (
        "deploy-staging",
        "Deploy the service to staging and check it. "
        "Use when asked to deploy or to test on staging.",
    ),
    ("changelog", "Keep CHANGELOG.md current. Use after a user-visible change."),
    (
        "code-review",
        "Review a change for bugs, style and tests. Use when asked to review code or a diff.",
    ),
    (
        "test-writing",
        "Write pytest tests in the project's style. Use when adding tests or fixing a bug.",
    ),
    (
        "error-handling",
        "How errors are raised, wrapped and logged here. Use when writing code that can fail.",
    ),
    (
        "logging-style",
        "Structured logging fields and levels. Use when adding logs.",
    ),
    (
        "security-review",
        "Check a change for injection, secrets and unsafe input. "
        "Use before merging code that touches input or auth.",
    ),
    (
        "dependency-upgrade",
        "Upgrade a dependency safely, with its changelog read. Use when bumping a package.",
    ),
    ("incident-report", "Write a blameless incident report. Use after an outage or a bad deploy."),
    (
        "pr-description",
        "Write a pull request description with context, changes and testing. "
        "Use when opening a PR.",
    ),
    (
        "performance-profiling",
        "Profile a slow path and report where the time goes. Use when something is slow.",
    ),
    (
        "feature-flags",
        "Add, read and retire feature flags. Use when a change should ship behind a flag.",
    ),
    (
        "i18n-strings",
        "Add user-facing strings to the translation files. Use when adding text the user sees.",
    ),
    (
        "accessibility-check",
        "Check pages for keyboard use, labels and contrast. Use when changing UI.",
    ),
    (
        "docs-style",
        "The documentation's voice and layout. Use when writing or editing docs.",
    ),
    (
        "rounding-rules",
        "How money is rounded in each module (Decimal, half-even, cents). "
        "Use when code rounds amounts.",
    ),
    (
        "invoice-format",
        "The invoice layout, numbering and required fields. Use when changing invoices.",
    ),
    (
        "tax-rules",
        "VAT rates, exemptions and where they apply. Use when code computes tax.",
    ),
    (
        "currency-conversion",
        "Rates, their source and when to convert. Use when amounts change currency.",
    ),
    (
        "data-export",
        "CSV and JSON exports: columns, encodings, limits. Use when adding or changing an export.",
    ),
    ("backup-restore", "Back up and restore the database. Use before risky data changes."),
    ("oncall-handoff", "Write the on-call handoff note. Use at the end of an on-call shift."),
    (
        "sql-style",
        "How SQL is written and reviewed here. Use when writing queries.",
    ),
    (
        "api-versioning",
        "When and how to version the API. Use when a change could break clients.",
    ),
    (
        "customer-email",
        "Tone and templates for customer emails. Use when drafting a message to a customer.",
    ),
    (
        "benchmark-run",
        "Run the benchmarks and compare with main. Use when a change may affect speed.",
    ),
)
"""The project's 30 skills, the ones the chapter writes: (name, description). Names and words
are ours (our choice)."""

MORE_SKILLS: tuple[tuple[str, str], ...] = (
    (
        "docker-images",
        "Write and slim the Dockerfiles: pinned bases, multi-stage builds. "
        "Use when changing an image.",
    ),
    (
        "k8s-manifests",
        "Deployments, probes and resource limits for the cluster. Use when editing k8s/.",
    ),
    (
        "terraform",
        "Plan and review Terraform before any apply. Use when changing infrastructure.",
    ),
    (
        "ci-pipelines",
        "Write and fix the CI workflows. Use when CI is red or slow.",
    ),
    (
        "observability",
        "Metrics, traces and alerts for a service. Use when adding monitoring or an alert.",
    ),
    (
        "caching-strategy",
        "What to cache, keys, expiry and invalidation. Use when a read path is slow.",
    ),
    (
        "queue-workers",
        "Background jobs that are idempotent and retried with backoff. "
        "Use when work should leave the request.",
    ),
    (
        "auth-flows",
        "Sign-in, sessions and role checks. Use when changing login or permissions.",
    ),
    (
        "payments",
        "Take payments and refunds through the provider; webhooks verified. "
        "Use when changing checkout or billing.",
    ),
    (
        "e2e-tests",
        "Browser tests of whole user journeys, no fixed waits. Use when testing a flow in the UI.",
    ),
    (
        "api-client",
        "The typed clients generated from the OpenAPI spec. Use when calling another service.",
    ),
    (
        "graphql",
        "Schema changes and resolvers for the GraphQL API. Use when editing a .graphql file.",
    ),
    (
        "frontend-components",
        "Components in the design system, with a story per state. Use when changing a component.",
    ),
    (
        "onboarding-docs",
        "Setup steps and the architecture in one page. Use when writing docs for newcomers.",
    ),
    (
        "adr",
        "Record an architecture decision: context, options, decision. "
        "Use when a design choice is made.",
    ),
    (
        "meeting-notes",
        "Decisions, action items and owners from a meeting. Use when given a transcript.",
    ),
    (
        "status-update",
        "The weekly status update: progress, plans, problems. Use when asked what the team did.",
    ),
    (
        "refactoring",
        "Small steps that keep the tests green. Use when cleaning up or splitting a module.",
    ),
    (
        "privacy-review",
        "What personal data a change collects, keeps and shows. Use when code touches user data.",
    ),
    (
        "pdf-reports",
        "Reports as PDF: cover, contents, page numbers. Use when a report must be printable.",
    ),
)
"""20 more skills in the same style, for a project of 50 (the skills benchmark, our choice)."""

ALL_SKILLS: tuple[tuple[str, str], ...] = SKILLS + MORE_SKILLS
"""All 50: :data:`SKILLS` then :data:`MORE_SKILLS`; :func:`write_skills` writes the first
``count``."""

LOADED_SKILL = "release-notes"
"""The skill the chapter's sessions load."""

RELEASE_NOTES_STEPS = """\
1. Read CHANGELOG.md: the entries under "Unreleased" are this release.
2. Group them under Added, Changed and Fixed, in that order; leave out internal refactors.
3. Write one line per entry, in the past tense, with the issue number in brackets.
4. Start with the version and the date: "## 1.4.0 (2026-11-27)".
5. Save the notes as RELEASE_NOTES.md and show them to the user."""


def skill_text(name: str, description: str, size: int) -> str:
    """A ``SKILL.md`` of about ``size`` bytes: front matter, a title, then numbered steps."""
    title = name.replace("-", " ").capitalize()
    head = f"---\nname: {name}\ndescription: {description}\n---\n\n# {title}\n\n"
    steps = RELEASE_NOTES_STEPS if name == LOADED_SKILL else ""
    lines = [head + (steps + "\n\n## Details\n\n" if steps else "## Steps\n\n")]
    n = 1
    while sum(len(line) for line in lines) < size:
        lines.append(
            f"{n}. For the {title.lower()} work, check item {n} of the team's list: read the "
            f"files it names, follow the project's conventions, and note what you changed.\n"
        )
        n += 1
    return "".join(lines)


def skill_sizes(count: int = len(SKILLS)) -> list[int]:
    """The sizes of the first ``count`` skills: :data:`SKILL_SIZES`, cycled."""
    return [SKILL_SIZES[i % len(SKILL_SIZES)] for i in range(count)]


def write_skills(root: Path, count: int = len(SKILLS)) -> list[Path]:
    """Write the first ``count`` of :data:`ALL_SKILLS` under ``root/.claude/skills`` (the
    chapter's 30 unless told); their paths. :class:`ValueError` past 50 or below 0."""
    if not 0 <= count <= len(ALL_SKILLS):
        raise ValueError(f"count must be 0 to {len(ALL_SKILLS)}, not {count}")
    paths = []
    for (name, description), size in zip(ALL_SKILLS[:count], skill_sizes(count), strict=True):
        path = root / ".claude" / "skills" / name / "SKILL.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(skill_text(name, description, size), encoding="utf-8")
        paths.append(path)
    return paths


REVIEW_COMMAND = """\
---
description: Review one file for rounding bugs
argument-hint: <file> [focus]
---

Review $0 for rounding bugs. Focus on: $1.
Read the file first, then the tests that import it. Report each bug with its line number.
"""
"""``.claude/commands/review.md``: ``/review app/tax.py "half-even"``."""

FIXUP_COMMAND = """\
---
description: Squash the last commits into one
---

Squash the last $ARGUMENTS commits into one with a message that says what they did together.
"""
"""``.claude/commands/git/fixup.md``: ``/fixup 3`` (a subfolder groups commands)."""

CHANGELOG = """\
# Changelog

## Unreleased

- Invoices round each line to cents before the total (#41)
- New CSV export of customers (#44)
- Tax rates read from config/tax.toml (#47)

## 1.3.0 (2026-10-02)

- Currency conversion uses the day's rate (#35)
"""


def make_workspace(root: Path, *, skills: int = len(SKILLS)) -> Path:
    """The chapter's project under ``root``: code, tests, a changelog, a ``build/`` folder,
    ``skills`` skills, two commands, and the settings with their hook scripts."""
    root.mkdir(parents=True, exist_ok=True)
    make_project(root)
    (root / "CHANGELOG.md").write_text(CHANGELOG, encoding="utf-8")
    (root / "build").mkdir()
    (root / "build" / "old.log").write_text("an old build log\n", encoding="utf-8")
    write_skills(root, skills)
    commands = root / ".claude" / "commands"
    (commands / "git").mkdir(parents=True)
    (commands / "review.md").write_text(REVIEW_COMMAND, encoding="utf-8")
    (commands / "git" / "fixup.md").write_text(FIXUP_COMMAND, encoding="utf-8")
    write_settings(root)
    return root


def tree(root: Path, *, under: str = ".claude", limit: int = 6) -> str:
    """The files under ``root/under``, one a line, relative to ``root``; each folder shows at
    most ``limit`` entries (and says how many more)."""
    lines: list[str] = []

    def walk(folder: Path, depth: int) -> None:
        entries = sorted(folder.iterdir(), key=lambda p: (p.is_file(), p.name))
        for entry in entries[:limit]:
            suffix = "/" if entry.is_dir() else ""
            lines.append(f"{'  ' * depth}{entry.name}{suffix}")
            if entry.is_dir():
                walk(entry, depth + 1)
        if len(entries) > limit:
            lines.append(f"{'  ' * depth}… {len(entries) - limit} more")

    start = root / under
    lines.append(f"{under}/")
    walk(start, 1)
    return "\n".join(lines)


__all__ = [
    "ALL_SKILLS",
    "CHANGELOG",
    "FIXUP_COMMAND",
    "LOADED_SKILL",
    "MORE_SKILLS",
    "REVIEW_COMMAND",
    "SKILLS",
    "SKILL_SIZES",
    "SKILL_SOURCE",
    "make_workspace",
    "skill_sizes",
    "skill_text",
    "tree",
    "write_skills",
]
