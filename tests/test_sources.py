"""Sources a learner can open: the sources page (``chapters/sources.md``) and the citations
that lead to it.

Every chapter states where its numbers come from, and the sources page gives each documented
or observed number a public address and the date it was checked. These tests keep it that way:

- nothing a learner reads (the chapter notebooks, ``README.md``, ``docs/*.md``, the sources
  page, the docstrings and comments of ``harness``) cites a file that is not in the project,
  such as a ``REFERENCE.md`` the course was once built from;
- none of it names a document by an internal label ("seed 000", "seed 004's plan"): it says
  what the document was, or gives its public address;
- every chapter links its own section of the sources page, and the page has one for each;
- every documented or observed row on the page has an address (or says that none was found)
  and the date it was checked.
"""

from __future__ import annotations

import ast
import io
import itertools
import json
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
SOURCES = ROOT / "chapters" / "sources.md"

# --- what a learner reads ----------------------------------------------------------------------


@dataclass(frozen=True)
class Passage:
    """A piece of text a learner reads, and where it is."""

    where: str
    """``chapters/06_error_recovery.ipynb, cell ch06-048`` or ``harness/fork.py``."""
    base: Path
    """The folder a relative link in it starts from."""
    text: str
    line: int | None = None
    """The line of a file the text starts on (None in a notebook: the cell says where)."""
    markdown: bool = False
    """Markdown, where ``[text](target)`` is a link (not in code, not in docstrings)."""

    def at(self, offset: int) -> str:
        """Where the character at ``offset`` of the text is."""
        if self.line is None:
            return self.where
        return f"{self.where}:{self.line + self.text.count(chr(10), 0, offset)}"


def notebook_passages(path: Path, *, outputs: bool) -> Iterator[Passage]:
    """Each cell's source (and, with ``outputs``, its stored text outputs)."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for index, cell in enumerate(notebook["cells"]):
        where = f"{path.relative_to(ROOT)}, cell {cell.get('id', index)}"
        markdown = cell["cell_type"] == "markdown"
        yield Passage(where, path.parent, "".join(cell.get("source", "")), markdown=markdown)
        if outputs:
            for output in cell.get("outputs", []):
                text = output.get("text") or output.get("data", {}).get("text/plain", "")
                yield Passage(f"{where} (output)", path.parent, "".join(text))


def markdown_passages(path: Path) -> Iterator[Passage]:
    """A Markdown file, line by line."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        yield Passage(str(path.relative_to(ROOT)), path.parent, line, number, markdown=True)


def python_passages(path: Path) -> Iterator[Passage]:
    """The comments and docstrings of a Python file (its code and other strings are not
    read: a path built in code is the program's business, not a citation)."""
    source = path.read_text(encoding="utf-8")
    name = path.relative_to(ROOT)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield Passage(str(name), ROOT, token.string, token.start[0])
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                doc = body[0].value
                if isinstance(doc.value, str):
                    yield Passage(str(name), ROOT, doc.value, doc.lineno)
        # An attribute's docstring: a string right after an assignment.
        for field in ("body", "orelse"):
            statements = getattr(node, field, None)
            if not isinstance(statements, list):
                continue
            for before, after in itertools.pairwise(statements):
                if (
                    isinstance(before, ast.Assign | ast.AnnAssign)
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)
                ):
                    yield Passage(str(name), ROOT, after.value.value, after.lineno)


def learner_passages(*, outputs: bool = False) -> Iterator[Passage]:
    """Everything a learner reads: the chapters, the README, the docs, the sources page and
    the docstrings and comments of the package."""
    for path in CHAPTERS:
        yield from notebook_passages(path, outputs=outputs)
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), SOURCES]:
        if path.exists():
            yield from markdown_passages(path)
    for path in sorted((ROOT / "harness").rglob("*.py")):
        yield from python_passages(path)


# --- (a) files that are not in the project -----------------------------------------------------

# A path into the project, in backquotes (Markdown `x`, reStructuredText ``x``).
PROJECT_DIRS = ("harness", "tests", "chapters", "docs", "images", "binder", ".ci")
QUOTED_PATH = re.compile(
    r"`{1,2}(?:\./)?((?:" + "|".join(re.escape(d) for d in PROJECT_DIRS) + r")/[^`\s]*)`{1,2}"
)
# A relative Markdown link: [text](target) where target is not a URL or an anchor on the page.
LINK = re.compile(r"\]\((?!https?:|mailto:|#|/)([^)\s]+)\)")
# The document the course was built from, which learners cannot open.
NOT_IN_PROJECT = re.compile(r"\bREFERENCE\.md\b")
# Paths that look like the project's but name files of an example, not a citation.
EXAMPLE_PATHS = {
    "docs/style.md": "a file of chapter 03's example project (its CLAUDE.md imports it)",
    "docs/naming.md": "a file of chapter 03's example project (imported by docs/style.md)",
    "docs/a.md": "an example path in harness/tools/permissions.py's docstrings",
}


def generated_folders() -> tuple[str, ...]:
    """The folders the project's commands write and git ignores (``build/``, the browser
    test's ``tests/browser/screenshots/``): a path in one is cited before it exists."""
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    return tuple(line.strip() for line in lines if line.strip().endswith("/") and "/" in line)


def cited_files(passage: Passage) -> Iterator[tuple[int, str, Path]]:
    """The files a passage cites: where in the text, as written, and as resolved."""
    for found in QUOTED_PATH.finditer(passage.text):
        path = found.group(1).split("::")[0].rstrip(".,;:)")
        yield found.start(), path, ROOT / path
    if passage.markdown:
        for found in LINK.finditer(passage.text):
            target = found.group(1).split("#")[0]
            if target:
                yield found.start(), target, passage.base / target


def exists(path: Path) -> bool:
    """Whether a cited path is in the project; a pattern (``chapters/NN_*.ipynb``,
    ``tests/test_exercises_chNN.py``) counts when some file matches it."""
    if path.exists():
        return True
    pattern = re.sub(r"NN|<[^>]*>|\{[^}]*\}", "*", str(path.relative_to(ROOT)))
    if "*" not in pattern and "?" not in pattern:
        return False
    # One `*` per path component is enough to match: `**` is only valid on its own.
    pattern = "/".join(re.sub(r"\*+", "*", part) for part in pattern.split("/"))
    return any(ROOT.glob(pattern))


def missing_files(passages: Iterator[Passage]) -> list[str]:
    found = []
    for passage in passages:
        for match in NOT_IN_PROJECT.finditer(passage.text):
            found.append(f"{passage.at(match.start())}: cites REFERENCE.md")
        for offset, written, path in cited_files(passage):
            if written in EXAMPLE_PATHS or written.startswith(generated_folders()):
                continue
            try:
                path.resolve().relative_to(ROOT)
            except ValueError:
                found.append(f"{passage.at(offset)}: {written} is outside the project")
                continue
            if not exists(path.resolve()):
                found.append(f"{passage.at(offset)}: {written} does not exist")
    return found


def test_the_file_check_finds_a_missing_file_and_spares_an_existing_one() -> None:
    def check(text: str) -> list[str]:
        return missing_files(iter([Passage("example", ROOT / "chapters", text, markdown=True)]))

    assert check("see `harness/fork.py` and ``harness/loop.py``") == []
    assert check("see [chapter 01](01_agent_loop.ipynb) and `chapters/NN_*.ipynb`") == []
    assert check("as `harness/no_such_module.py` says") == [
        "example: harness/no_such_module.py does not exist"
    ]
    assert check("(see REFERENCE.md)") == ["example: cites REFERENCE.md"]
    assert check("the pictures go to `tests/browser/screenshots/site-*.png`") == []
    assert check("[notes](notes.md#top)") == ["example: notes.md does not exist"]
    assert check("Claude Code's `CLAUDE.md` and [the API](https://example.com/x.md)") == []
    code = Passage("example", ROOT, "tools[name](**block.input)  # see `harness/loop.py`")
    assert missing_files(iter([code])) == []


def test_no_page_cites_a_file_that_is_not_in_the_project() -> None:
    found = missing_files(learner_passages())
    assert not found, (
        "These places cite a file a learner cannot open; cite a file of the project, or the "
        "public address on the sources page (chapters/sources.md):\n  " + "\n  ".join(found)
    )


# --- (b) a document named by an internal label -------------------------------------------------

# "seed 000", "Seed 004's plan", "seeds 000 and 002", "(seed 003)". Not a random seed:
# `rng`, `seed=3`, "the same seed", "20 seeds" all pass.
SEED_CITATION = re.compile(r"(?i)\bseeds?\s+\d{3}\b|\bseed\s+(?:document|doc)s?\b")


def seed_citations(passages: Iterator[Passage]) -> list[str]:
    return [
        f"{p.at(m.start())}: {m.group(0)!r}"
        for p in passages
        for m in SEED_CITATION.finditer(p.text)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "the post-mortem (seed 000) says",
        "Seed 004's plan keeps the snapshot in Postgres",
        "seeds 000 and 002 describe it",
        "the seed document's example",
    ],
)
def test_the_seed_check_finds_a_citation(text: str) -> None:
    assert seed_citations(iter([Passage("example", ROOT, text)])) != []


@pytest.mark.parametrize(
    "text",
    [
        "rng = random.Random(seed)",
        "RecoveryPolicy(seed=3) gives the same waits each run",
        "a source of UUIDs that repeats for the same seed",
        "each of 20 seeds moves every fault",
        "for seed in range(5):",
    ],
)
def test_the_seed_check_spares_random_seeds(text: str) -> None:
    assert seed_citations(iter([Passage("example", ROOT, text)])) == []


def test_no_page_names_a_document_by_an_internal_label() -> None:
    found = seed_citations(learner_passages(outputs=True))
    assert not found, (
        'These places name a document as "seed ...", which a learner cannot place; say what '
        "the document was (a post-mortem of a workflow runner's resume, an implementation "
        "plan for approvals, ...) or give its public address:\n  " + "\n  ".join(found)
    )


# --- (c) every chapter links its section of the sources page -----------------------------------

CHAPTER_HEADING = re.compile(r"^## Chapter (\d\d)\s*$", re.M)


def test_every_chapter_links_its_own_section_of_the_sources_page() -> None:
    missing = []
    for path in CHAPTERS:
        number = path.name[:2]
        link = f"sources.md#chapter-{number}"
        markdown = [
            p.text
            for p in notebook_passages(path, outputs=False)
            if link in p.text and f"]({link})" in p.text
        ]
        if not markdown:
            missing.append(f"{path.relative_to(ROOT)} has no link to ({link})")
    assert not missing, "\n  ".join(["Chapters that do not link their sources:", *missing])


def test_the_sources_page_has_a_section_for_every_chapter() -> None:
    assert SOURCES.exists(), "chapters/sources.md is missing"
    headings = CHAPTER_HEADING.findall(SOURCES.read_text(encoding="utf-8"))
    expected = [path.name[:2] for path in CHAPTERS]
    assert headings == expected, (
        f"the sources page needs the headings '## Chapter NN' for {expected}, in order; "
        f"it has {headings}"
    )


# --- (d) every documented or observed row has an address and a date ----------------------------

HEADER = ["number", "value", "kind", "address", "checked"]
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
NO_ADDRESS = "no public address found"


def cells(line: str) -> list[str]:
    """A Markdown table row's cells (a ``|`` inside backquotes or escaped is not a border)."""
    inner = line.strip()[1:-1]
    parts, current, quoted = [], "", False
    for index, char in enumerate(inner):
        if char == "`":
            quoted = not quoted
        if char == "|" and not quoted and (index == 0 or inner[index - 1] != "\\"):
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return parts


def source_rows() -> Iterator[tuple[str, int, list[str]]]:
    """Each table row of the sources page: its chapter section, its line, its cells."""
    section = ""
    for number, line in enumerate(SOURCES.read_text(encoding="utf-8").splitlines(), 1):
        heading = re.match(r"^## (.+)$", line)
        if heading:
            section = heading.group(1).strip()
        elif line.startswith("|") and not re.match(r"^\|[\s:|-]+\|$", line):
            row = cells(line)
            if row != HEADER:
                yield section, number, row


def test_every_chapter_section_has_a_table_of_sources() -> None:
    text = SOURCES.read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    missing = [
        section.splitlines()[0]
        for section in sections
        if CHAPTER_HEADING.match("## " + section.splitlines()[0])
        and "| " + " | ".join(HEADER) + " |" not in section
    ]
    assert not missing, f"sections without a '| {' | '.join(HEADER)} |' table: {missing}"


def test_every_documented_or_observed_row_has_an_address_and_a_date() -> None:
    problems = []
    for section, line, row in source_rows():
        where = f"chapters/sources.md:{line} ({section})"
        if len(row) != len(HEADER):
            problems.append(f"{where}: {len(row)} cells, not {len(HEADER)}")
            continue
        kind, address, checked = row[2], row[3], row[4]
        if kind not in ("documented", "observed"):
            problems.append(f"{where}: kind {kind!r} is neither documented nor observed")
            continue
        if "https://" not in address and NO_ADDRESS not in address:
            problems.append(f"{where}: no https address, and it does not say {NO_ADDRESS!r}")
        if not DATE.search(checked):
            problems.append(f"{where}: no date (YYYY-MM-DD) in the checked column")
    assert not problems, "\n  ".join(["Rows of the sources page to fix:", *problems])
