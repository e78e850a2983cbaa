"""What progressive disclosure saves: 30 and 50 skills, listed vs inlined, over 10 turns.

    uv run python tests/benchmarks/skills_benchmark.py

Three layouts of the same 10-turn coding session (chapter 04's scripted session, with one
first turn added), on the course's model (``harness.model.DEFAULT_MODEL``) at its prices
(``harness.pricing``), with the harness's cache breakpoints (``PromptCaching``):

* **inlined**: every skill's whole body in the system prompt (chapter 13's failure);
* **listed**: only names and descriptions in the system prompt (``skills_section``), the
  ``Skill`` tool offered, and no skill loaded;
* **listed + load**: the same, and the first turn loads one skill with the ``Skill`` tool.

The skills are made up but shaped like real ones: the descriptions below are written the way
published skills write theirs (what it does, then "Use when ...", 150-600 characters), and the
bodies take the sizes of the 17 SKILL.md files of github.com/anthropics/skills at commit
9d2f1ae187231d8199c64b5b762e1bdf2244733d (:data:`BODY_SIZES`, in characters), in turn.

Printed per layout: the system prompt's tokens, the mean prompt tokens per turn, the
first turn's cost (it writes the cache), the mean cost of turns 2-10 (they read it), and the
session's cost; then, turn by turn, what loading one skill adds: the cache writes of the
turn that loads it and the cache reads of every turn after. Deterministic: the scripted
model computes usage from the requests, and the clock is fake.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.agent import Agent
from harness.clock import FakeClock
from harness.loop import AgentConfig
from harness.model import DEFAULT_MODEL, ScriptedModel, Step, reply, tool_call
from harness.model.models import context_window_of
from harness.notebook.sessions import ThinkingTime, coding_script, make_project
from harness.pricing import MeteredCall
from harness.prompt import PromptCaching, Section, SystemPrompt, default_sections
from harness.skills import SkillLoader, discover_skills, skill_tool
from harness.skills.listing import format_listing, inlined_section, skills_section
from harness.tokens import estimate_system
from harness.tools import Tool, builtin_tools

TURNS = 10
MODEL = DEFAULT_MODEL
LOADED = "release-notes"
"""The skill the first turn loads in the "listed + load" layout (its body: 2,235 characters)."""

BODY_SIZES = [
    1511, 2235, 3073, 3124, 3861, 7841, 8035, 8250, 9059,
    9128, 11455, 11937, 15815, 19735, 20056, 32987, 73299,
]  # fmt: skip
"""Bytes of each SKILL.md in anthropics/skills (commit above), sorted."""

SKILLS: list[tuple[str, str]] = [
    (
        "api-conventions",
        "REST API design rules for this codebase: resource naming, pagination, error "
        "envelopes and versioning. Use when adding or changing an HTTP endpoint, "
        "reviewing a route handler, or when the user asks how an API should look.",
    ),
    (
        "release-notes",
        "Write release notes from merged pull requests and commit history, grouped into "
        "features, fixes and breaking changes, in the project's changelog format. Use "
        "when the user asks for release notes, a changelog entry, or a summary of what "
        "shipped since a tag.",
    ),
    (
        "db-migrations",
        "Create and review database schema migrations (Alembic) that are reversible and "
        "safe on large tables: batched backfills, concurrent indexes, no long locks. Use "
        "when a model changes, a column is added or renamed, or the user mentions a "
        "migration.",
    ),
    (
        "incident-report",
        "Draft a blameless incident report: timeline, impact, root cause, contributing "
        "factors, action items with owners. Use when the user asks for a postmortem, an "
        "incident write-up, or a summary of an outage.",
    ),
    (
        "pr-review",
        "Review a pull request for correctness, security, tests and readability, and "
        "leave findings ordered by severity with file and line references. Use when asked"
        " to review a PR, a diff, a branch, or 'my changes'.",
    ),
    (
        "test-writer",
        "Write unit tests with pytest for existing code: one behaviour per test, named "
        "after the behaviour, fixtures over setup code, no sleeps. Use when the user asks"
        " for tests, coverage, or to reproduce a bug in a test first.",
    ),
    (
        "dependency-upgrade",
        "Upgrade a Python or npm dependency safely: read the changelog for breaking "
        "changes, update lock files, run the test suite, and note anything deprecated. "
        "Use when the user asks to bump, upgrade or update a package, or when a security "
        "advisory names one.",
    ),
    (
        "docker-images",
        "Write and slim Dockerfiles: multi-stage builds, pinned base images, non-root "
        "users, a .dockerignore, layer caching that survives code changes. Use when the "
        "user mentions Docker, a container image, or image size.",
    ),
    (
        "k8s-manifests",
        "Author Kubernetes manifests and Helm values: deployments with probes and "
        "resource limits, services, config maps, secrets by reference. Use when deploying"
        " to a cluster, editing YAML under k8s/ or charts/, or debugging a crash-looping "
        "pod.",
    ),
    (
        "terraform",
        "Plan and write Terraform for AWS: modules, remote state, least-privilege IAM, "
        "tagging rules, and a plan review before any apply. Use when the user mentions "
        "infrastructure as code, Terraform, an AWS resource, or a .tf file.",
    ),
    (
        "sql-analytics",
        "Write analytics SQL against the warehouse (BigQuery dialect): CTEs over "
        "subqueries, partition filters on every large table, explicit time zones. Use "
        "when the user asks a question about metrics, dashboards, cohorts, or 'how many "
        "users'.",
    ),
    (
        "data-cleaning",
        "Clean tabular data with pandas: detect the header row, fix types, normalise "
        "dates and currencies, drop duplicates, and report every change made. Use when a "
        "CSV or spreadsheet is messy, has misplaced headers, or fails to load.",
    ),
    (
        "charts",
        "Make clear static charts with matplotlib: one message per chart, labelled axes "
        "with units, colour-blind-safe palettes, saved as PNG and SVG. Use when the user "
        "asks for a plot, a graph, or a figure for a report.",
    ),
    (
        "security-audit",
        "Audit code for common vulnerabilities: injection, path traversal, unsafe "
        "deserialisation, secrets in code, missing authorisation checks, weak crypto. Use"
        " when asked for a security review, before a release, or when code handles user "
        "input or credentials.",
    ),
    (
        "performance-profiling",
        "Find why code is slow: profile with py-spy or cProfile, read the flame graph, "
        "fix the hottest path first, and measure before and after. Use when the user says"
        " something is slow, times out, or uses too much memory.",
    ),
    (
        "logging-standards",
        "Add structured logging that follows the team's conventions: JSON logs, request "
        "ids, no personal data, levels used consistently. Use when adding logs, debugging"
        " production behaviour, or reviewing code that prints.",
    ),
    (
        "feature-flags",
        "Put new behaviour behind a feature flag, with a default, a kill switch, tests "
        "for both paths and a cleanup ticket. Use when the user asks for a gradual "
        "rollout, an experiment, or a risky change in production.",
    ),
    (
        "accessibility",
        "Check and fix web accessibility: semantic HTML, labels, focus order, contrast, "
        "keyboard use and screen-reader text, against WCAG 2.2 AA. Use when building or "
        "reviewing UI, forms, or when the user mentions a11y.",
    ),
    (
        "frontend-components",
        "Build React components in the design system: typed props, composition over "
        "configuration, stories for each state, and tests with Testing Library. Use when "
        "creating or changing a component under src/components.",
    ),
    (
        "css-styling",
        "Style with the project's Tailwind setup and design tokens: no arbitrary values, "
        "responsive by default, dark mode through the theme. Use when the user asks to "
        "change how something looks, spacing, colours or layout.",
    ),
    (
        "e2e-tests",
        "Write end-to-end browser tests with Playwright: stable selectors, no fixed "
        "waits, one user journey per test, traces on failure. Use when the user asks to "
        "test a flow in the browser, a login, a checkout, or a regression in the UI.",
    ),
    (
        "api-client",
        "Generate and maintain typed API clients from the OpenAPI spec, with retries, "
        "timeouts and errors mapped to exceptions. Use when calling one of our services "
        "from another, or when the spec in openapi/ changes.",
    ),
    (
        "graphql",
        "Design GraphQL schema changes and resolvers: nullable by default, connections "
        "for lists, dataloaders against N+1 queries, deprecations instead of removals. "
        "Use when the user works on the GraphQL API or a .graphql file.",
    ),
    (
        "mobile-release",
        "Prepare an iOS and Android release: version bump, changelog, store screenshots "
        "checklist, phased rollout settings. Use when the user asks to ship the mobile "
        "app, cut a release branch, or submit to the stores.",
    ),
    (
        "onboarding-docs",
        "Write onboarding documentation for new engineers: setup steps that were actually"
        " run, the architecture in one page, who owns what. Use when the user asks for a "
        "README, a getting-started guide, or docs for newcomers.",
    ),
    (
        "adr",
        "Write an architecture decision record: context, options considered with their "
        "costs, the decision, and its consequences, in docs/adr with the next number. Use"
        " when a design choice is being made or the user asks to record one.",
    ),
    (
        "meeting-notes",
        "Turn a meeting transcript into notes: decisions, action items with owners and "
        "dates, open questions, in the team's template. Use when the user pastes a "
        "transcript or asks for minutes, notes or a recap of a meeting.",
    ),
    (
        "status-update",
        "Write a weekly status update in the 3P format (progress, plans, problems) from "
        "the week's tickets and commits. Use when the user asks for a status report, a "
        "weekly update, or what the team did this week.",
    ),
    (
        "customer-email",
        "Draft a customer-facing email about an incident, a change or a deprecation: "
        "plain language, what changes for them, dates, where to get help. Use when the "
        "user needs to tell customers something.",
    ),
    (
        "translation",
        "Translate product strings and docs while keeping placeholders, plurals and "
        "markup intact, and flag strings that need context. Use when the user asks to "
        "translate or localise text, or edits files under locales/.",
    ),
    (
        "regex-helper",
        "Write and explain regular expressions, with test cases for what must and must "
        "not match, and a note on catastrophic backtracking. Use when the user needs a "
        "regex, a pattern for validation, or to fix one that misbehaves.",
    ),
    (
        "git-workflow",
        "Handle git tasks the team's way: branch names, conventional commits, rebasing "
        "onto main, resolving conflicts, and never force-pushing shared branches. Use "
        "when the user asks to commit, branch, rebase, squash, or untangle history.",
    ),
    (
        "ci-pipelines",
        "Write and fix GitHub Actions workflows: caching, matrix builds, pinned actions, "
        "secrets handled safely, and jobs that fail fast. Use when CI is red, slow, or "
        "the user edits .github/workflows.",
    ),
    (
        "observability",
        "Add metrics, traces and alerts with OpenTelemetry: RED metrics per endpoint, "
        "spans around external calls, alerts on symptoms not causes. Use when the user "
        "asks about monitoring, dashboards, alerting or tracing.",
    ),
    (
        "caching-strategy",
        "Design caching for a read path: what to cache, keys, TTLs, invalidation, "
        "stampede protection, and how to measure the hit rate. Use when a page or "
        "endpoint is slow because of repeated work, or the user mentions Redis.",
    ),
    (
        "queue-workers",
        "Build background jobs with Celery: idempotent tasks, retries with backoff, dead-"
        "letter handling, and visibility into stuck jobs. Use when work should happen "
        "outside a request, or a job is failing or duplicating.",
    ),
    (
        "auth-flows",
        "Implement login and authorisation: OAuth 2.0 / OIDC flows, session handling, "
        "token refresh, role checks at the boundary. Use when the user works on sign-in, "
        "permissions, API keys, or an access bug.",
    ),
    (
        "payments",
        "Integrate payments with Stripe: payment intents, webhooks verified and "
        "idempotent, refunds, test clocks for subscriptions. Use when the user works on "
        "billing, checkout, invoices or a payment failure.",
    ),
    (
        "pdf-reports",
        "Produce PDF reports from data with a consistent layout: cover, table of "
        "contents, charts, page numbers, and fonts embedded. Use when the user wants a "
        "report as a PDF or a printable document.",
    ),
    (
        "spreadsheet-export",
        "Export data to Excel with formatting: typed columns, frozen header, number "
        "formats, formulas kept live, one sheet per entity. Use when the user asks for an"
        " .xlsx export or a spreadsheet of results.",
    ),
    (
        "slide-decks",
        "Build slide decks from an outline: one idea per slide, speaker notes, charts "
        "from real data, the company template. Use when the user asks for slides, a deck,"
        " or a presentation.",
    ),
    (
        "brand-voice",
        "Apply the company's brand voice and visual identity to text and artifacts: tone,"
        " words to avoid, colours, type. Use when writing anything public: landing pages,"
        " announcements, social posts.",
    ),
    (
        "legal-review",
        "Flag legal risk in product copy and contracts: claims that need substantiation, "
        "missing disclaimers, licence conflicts in dependencies. Use when the user asks "
        "whether something is OK to publish or ship, or mentions a licence.",
    ),
    (
        "privacy-review",
        "Review a change for personal data: what is collected, why, where it is stored, "
        "how long, who can see it, and what the privacy notice says. Use when code "
        "touches user data, analytics, logs with identifiers, or exports.",
    ),
    (
        "ml-experiments",
        "Run and record ML experiments: fixed seeds, tracked configs and metrics, a "
        "baseline first, and a short write-up of what changed and why. Use when training "
        "or evaluating a model, tuning hyperparameters, or comparing runs.",
    ),
    (
        "prompt-engineering",
        "Write and test prompts for LLM features: clear instructions, examples, output "
        "formats, and an eval set that catches regressions. Use when the user builds or "
        "changes a feature that calls a language model.",
    ),
    (
        "code-search",
        "Find where something is implemented in a large codebase: entry points, call "
        "sites, config, and tests, reported as a short map with paths. Use when the user "
        "asks where or how something works, or is new to the code.",
    ),
    (
        "refactoring",
        "Refactor in small, behaviour-preserving steps with tests green between each: "
        "extract, rename, inline, move, and stop when the goal is met. Use when the user "
        "asks to clean up, simplify, split a module, or remove duplication.",
    ),
    (
        "error-handling",
        "Make error handling consistent: typed exceptions at boundaries, errors that say "
        "what to do, no swallowed exceptions, retries only where safe. Use when the user "
        "sees a crash, a confusing error, or reviews failure paths.",
    ),
    (
        "changelog-check",
        "Check that a change is recorded for users: changelog entry, docs updated, "
        "migration notes for breaking changes. Use before merging a user-visible change, "
        "or when the user asks if anything is missing for a release.",
    ),
]


def body_for(index: int, name: str) -> str:
    """A SKILL.md body of ``BODY_SIZES[index % 17]`` characters: numbered steps, the way real
    skills are written (the scripted model counts characters, not meaning)."""
    size = BODY_SIZES[index % len(BODY_SIZES)]
    lines = [f"# {name.replace('-', ' ').title()}", ""]
    step = 0
    while sum(len(line) + 1 for line in lines) < size:
        step += 1
        lines += [
            f"## Step {step}",
            f"- Check the inputs for step {step} and say what you found before changing files.",
            "- Prefer the project's existing helpers; read them first with the file tools.",
            "",
        ]
    return "\n".join(lines)[:size]


def make_skills(root: Path, count: int) -> list[tuple[str, str]]:
    """``count`` skills in ``root/.claude/skills``; the (name, body) pairs written."""
    written = []
    for i, (name, description) in enumerate(SKILLS[:count]):
        folder = root / ".claude" / "skills" / name
        folder.mkdir(parents=True)
        body = body_for(i, name)
        text = f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"
        (folder / "SKILL.md").write_text(text)
        written.append((name, body))
    return written


@dataclass(frozen=True)
class Run:
    layout: str
    skills: int
    system_tokens: int
    calls: list[MeteredCall]

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def cost(self) -> float:
        return sum(c.cost.total for c in self.calls if c.cost is not None)

    def turn_cost(self, turn: int) -> float:
        cost = self.calls[turn].cost
        return cost.total if cost is not None else 0.0


def run(layout: str, count: int) -> Run:
    """One 10-turn session; ``layout`` is ``inlined``, ``listed`` or ``listed + load``."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root)
        written = make_skills(root, count)
        clock = FakeClock()
        tools: list[Tool] = list(builtin_tools())  # type: ignore[type-arg]
        sections: list[Section] = []
        if layout == "inlined":
            inlined = inlined_section(written)
            assert inlined is not None
            sections.append(inlined)
        else:
            catalog = discover_skills(root, None)
            assert not catalog.problems, catalog.problems
            listed = skills_section(catalog.skills, context_window=context_window_of(MODEL))
            assert listed is not None
            sections.append(listed)
            tools.append(skill_tool(SkillLoader(catalog)))
        prompt = SystemPrompt((*default_sections(t.name for t in tools), *sections))
        first = (
            tool_call("Skill", skill=LOADED)
            if layout == "listed + load"
            else tool_call("glob", pattern="app/*.py")
        )
        script: list[Step] = [reply("First, what this task needs.", tool_calls=[first])]
        script += coding_script(TURNS - 1)
        agent = Agent(
            ScriptedModel(script, clock=clock),
            tools=tools,
            system=prompt.render(),
            workspace=root,
            clock=clock,
            plugins=[ThinkingTime(20.0), PromptCaching()],
            config=AgentConfig(model=MODEL, max_turns=TURNS + 1),
            approver=lambda request: True,
        )
        for _ in agent.run("Write the release notes for this week, then check the rounding."):
            pass
        assert len(agent.meter.calls) == TURNS, len(agent.meter.calls)
        return Run(layout, count, estimate_system(prompt.render()), list(agent.meter.calls))


def listing_figures(count: int) -> tuple[int, int, int]:
    """The listing's characters and the descriptions dropped at a 1M and at a 200K window."""
    with tempfile.TemporaryDirectory() as tmp:
        make_skills(Path(tmp), count)
        skills = discover_skills(Path(tmp), None).skills
        big = format_listing(skills, context_window=context_window_of(MODEL))
        small = format_listing(skills, context_window=200_000)
        return len(big.text), big.descriptions_dropped, small.descriptions_dropped


def main() -> None:
    print(f"{TURNS}-turn session on {MODEL}, prompt caching on (harness layout)\n")
    for count in (30, 50):
        chars, dropped_big, dropped_small = listing_figures(count)
        print(
            f"{count} skills: listing {chars:,} characters; descriptions dropped to fit the "
            f"budget: {dropped_big} at {context_window_of(MODEL):,} tokens of window, "
            f"{dropped_small} at 200,000"
        )
        print(
            f"{'layout':<15}{'system tok':>11}{'prompt tok/turn':>17}{'turn 1':>10}"
            f"{'turns 2-10':>12}{'session':>10}"
        )
        runs = {layout: run(layout, count) for layout in ("inlined", "listed", "listed + load")}
        for r in runs.values():
            later = sum(r.turn_cost(t) for t in range(1, TURNS)) / (TURNS - 1)
            print(
                f"{r.layout:<15}{r.system_tokens:>11,}{r.prompt_tokens // TURNS:>17,}"
                f"{'$' + format(r.turn_cost(0), '.4f'):>10}{'$' + format(later, '.4f'):>12}"
                f"{'$' + format(r.cost, '.4f'):>10}"
            )
        ratio = runs["inlined"].cost / runs["listed"].cost
        late = [sum(r.turn_cost(t) for t in range(1, TURNS)) for r in runs.values()]
        print(
            f"inlined costs {ratio:.1f}x the listed session ({late[0] / late[1]:.1f}x on the "
            "turns that only read the cache)\n"
        )
    base, loaded = run("listed", 50), run("listed + load", 50)
    size = BODY_SIZES[[n for n, _ in SKILLS].index(LOADED) % len(BODY_SIZES)]
    print(f"what loading '{LOADED}' ({size:,}-character body) costs, turn by turn (50 skills):")
    print(f"{'turn':>4}{'extra cache write':>19}{'extra cache read':>18}{'extra cost':>12}")
    for t in range(TURNS):
        a, b = base.calls[t].usage, loaded.calls[t].usage
        write = (b.cache_creation_input_tokens or 0) - (a.cache_creation_input_tokens or 0)
        read = (b.cache_read_input_tokens or 0) - (a.cache_read_input_tokens or 0)
        extra = loaded.turn_cost(t) - base.turn_cost(t)
        print(f"{t + 1:>4}{write:>19,}{read:>18,}{'$' + format(extra, '.5f'):>12}")
    print(f"session: +${loaded.cost - base.cost:.4f} for one skill loaded")


if __name__ == "__main__":
    main()
