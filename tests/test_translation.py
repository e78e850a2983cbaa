"""The course in Chinese, from one source (``docs/translation.py``).

First the machinery: Markdown cut into messages and joined back, what a translation must keep,
a catalogue that follows a changed English text, links that follow their page. Then the
edition itself: every catalogue complete and clean, every Chinese notebook the English one's
code and outputs byte for byte, nothing generated left stale, every link of it resolving.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import polib
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))

import translation  # noqa: E402  (docs/translation.py)

LANGUAGE = "zh_CN"
EDITION = translation.EDITIONS[LANGUAGE]
DOCUMENTS = translation.documents()
NOTEBOOKS = [d for d in DOCUMENTS if d.kind == "notebook"]


def messages_of(text: str) -> list[str]:
    return [piece for piece, is_message in translation.pieces(text) if is_message]


# --- cutting and joining ------------------------------------------------------------------


def test_every_english_text_cut_into_pieces_joins_back_to_itself() -> None:
    for doc in DOCUMENTS:
        for where, text in translation.texts(doc):
            assert "".join(p for p, _ in translation.pieces(text)) == text, (doc.domain, where)


LINE = st.sampled_from(
    [
        "A paragraph with `code` and a [link](03_x.ipynb#a-b).",
        "- an item",
        "  continued",
        "1. first",
        "## A heading",
        "| a | b |",
        "|---|---|",
        "```python",
        "x = 1",
        "```",
        "~~~",
        "<details>",
        "</details>",
        "",
        "   ",
        "> a quote",
        "plain words 42",
    ]
)


@given(st.lists(LINE, max_size=30), st.booleans())
@settings(max_examples=300, deadline=None)
def test_any_markdown_cut_into_pieces_joins_back_to_itself(lines: list[str], end: bool) -> None:
    text = "\n".join(lines) + ("\n" if end else "")
    assert "".join(p for p, _ in translation.pieces(text)) == text


def test_fenced_code_and_blocks_without_words_are_never_messages() -> None:
    text = (
        "Words here.\n\n```python\nprint('no')\n```\n\n</details>\n\n`only_code()`\n\n"
        "[binder]: https://example.org/x\n\n<!-- a comment -->\n"
    )
    assert messages_of(text) == ["Words here."]


def test_a_table_is_one_message_per_row_and_its_rule_is_none() -> None:
    text = "| word | means |\n|---|---|\n| **turn** | one pass |\n"
    assert messages_of(text) == ["| word | means |", "| **turn** | one pass |"]


def test_a_paragraph_runs_into_a_fence_without_a_blank_line() -> None:
    text = "Run this:\n```bash\nuv run pytest\n```\nThen read.\n"
    assert messages_of(text) == ["Run this:", "Then read."]


# --- what a translation must keep ---------------------------------------------------------

ENGLISH = (
    "- Send `max_tokens` of 1,024 to [the API](https://docs.anthropic.com/x) and "
    "<b>see</b> the [sources](sources.md#chapter-03).\n- The prompt cache holds it in MEMORY.md."
)
GOOD = (
    "- 把 `max_tokens` 设为 1,024 发给 [API](https://docs.anthropic.com/x)，"
    "<b>看看</b>[资料来源](sources.md#chapter-03)。\n- 提示缓存把它存进 MEMORY.md。"
)
TERMS = [
    translation.Term("prompt cache", "提示缓存", "translate"),
    translation.Term("API", "API", "keep"),
]


def test_a_faithful_translation_has_no_problem() -> None:
    assert translation.problems(ENGLISH, GOOD, TERMS) == []


@pytest.mark.parametrize(
    ("broken", "problem"),
    [
        (GOOD.replace("`max_tokens`", "`max-tokens`"), "inline code"),
        (GOOD.replace("`max_tokens`", "max_tokens"), "inline code"),
        (GOOD.replace("1,024", "1024"), "numbers"),
        (GOOD.replace("1,024", "1,024 (第 2 次)"), "numbers"),
        (GOOD.replace("sources.md#chapter-03", "sources.md#chapter-3"), "link targets"),
        (GOOD.replace("https://docs.anthropic.com/x", "https://docs.anthropic.com/y"), "link"),
        (GOOD.replace("<b>看看</b>", "看看"), "HTML tags"),
        (GOOD.replace("\n- 提示缓存", "\n提示缓存"), "structure"),
        (GOOD.replace("- 把", "  - 把"), "indentation"),
        (GOOD.replace("提示缓存", "缓存"), "glossary"),
        (GOOD.replace("[API]", "[接口]"), "glossary"),
        (GOOD.replace("看看", "看\n看"), "line break"),
        (GOOD.replace("MEMORY.md", "memory.md"), "file names"),
        (GOOD.replace("`max_tokens` 设为", "max-tokens 设为"), "inline code"),
        (GOOD + "\n", "line breaks at the end"),
        ("", "not translated"),
    ],
)
def test_a_translation_that_changes_what_it_must_keep_is_refused(broken: str, problem: str) -> None:
    found = translation.problems(ENGLISH, broken, TERMS)
    assert any(problem in p for p in found), found


def test_bold_that_commonmark_would_show_as_asterisks_is_refused() -> None:
    english = "**Reply, then the summary.** The model writes it."
    assert translation.problems(english, "**回复，然后是摘要**。模型来写。") == []
    found = translation.problems(english, "**回复，然后是摘要。**模型来写。")
    assert any("asterisks show as text" in p for p in found), found
    # Italics too, and an asterisk the English shows as text itself is fine.
    assert translation.problems("*Recovery*, then", "文字*“恢复”*然后") != []
    assert translation.problems("2 * 3 is 6", "2 * 3 等于 6") == []


def test_inline_code_may_be_joined_where_the_english_wrapped_it() -> None:
    assert translation.problems("Run `a\n  b` now.", "运行 `a b`。") == []


def test_a_numbered_line_inside_a_paragraph_is_text_not_a_list() -> None:
    english = "the approver (chapter\n09) replaces it"
    assert translation.problems(english, "审批器（第 09 章）替换它") == []


def test_a_placeholder_of_a_page_text_must_stay() -> None:
    assert translation.problems("{minutes} min", "{minutes} 分钟") == []
    assert translation.problems("{minutes} min", "{minute} 分钟") != []


def test_the_glossary_is_in_the_repository_and_read_by_the_checks() -> None:
    terms = translation.glossary(LANGUAGE)
    rules = {t.rule for t in terms}
    assert rules == {"keep", "translate", "first"}
    by_english = {t.english: t for t in terms}
    for word in (
        "tool_use",
        "prompt cache",
        "compaction",
        "microcompact",
        "transcript",
        "fork",
        "subagent",
        "approval",
    ):
        assert word in by_english, word


# --- a catalogue follows its English text -------------------------------------------------


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An English notebook of its own and an empty locales folder."""
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    monkeypatch.setattr(translation.sources, "ROOT", tmp_path)
    monkeypatch.setattr(translation.sources, "CHAPTERS", chapters)
    monkeypatch.setattr(translation.sources, "LOCALES", tmp_path / "locales")
    (chapters / "sources.md").write_text("# Sources\n\n## Chapter 16\n\nRows.\n")
    (tmp_path / "README.md").write_text("# Title\n\nIntro.\n\n## The course as a website\n")
    return tmp_path


def write_notebook(path: Path, *markdown: str) -> None:
    cells: list[dict[str, Any]] = [
        {"cell_type": "markdown", "id": f"m{i}", "metadata": {}, "source": text}
        for i, text in enumerate(markdown)
    ]
    cells.append(
        {
            "cell_type": "code",
            "id": "c",
            "metadata": {},
            "execution_count": 1,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": ["hi\n"]}],
            "source": "print('hi')",
        }
    )
    path.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)
    )


def test_a_new_chapter_gets_its_catalogue_with_no_change_to_the_machinery(scratch: Path) -> None:
    write_notebook(scratch / "chapters" / "16_new.ipynb", "# 16 · New\n\nA new idea.")
    domains = [d.domain for d in translation.documents() if d.kind != "site"]
    assert domains == ["chapters/16_new", "chapters/sources", "README"]
    doc = translation.document("chapters/16_new")
    result = translation.update(doc, LANGUAGE)
    assert (result.added, result.kept) == (2, 0)
    report = translation.check(doc, LANGUAGE)
    assert any("not translated" in p for p in report.problems)


def fill(doc: translation.Document, table: dict[str, str]) -> None:
    sheet = "".join(f"@@ {translation.key(k)}\n{v}\n" for k, v in table.items())
    translation.fill(doc, LANGUAGE, sheet)


def test_update_keeps_adds_marks_changed_messages_fuzzy_and_drops_the_gone(scratch: Path) -> None:
    path = scratch / "chapters" / "16_new.ipynb"
    write_notebook(path, "# 16 · New\n\nThe loop sends a request.\n\nGone soon.")
    doc = translation.document("chapters/16_new")
    translation.update(doc, LANGUAGE)
    fill(
        doc,
        {
            "# 16 · New": "# 16 · 新章",
            "The loop sends a request.": "循环发出一个请求。",
            "Gone soon.": "很快就没了。",
        },
    )
    assert translation.check(doc, LANGUAGE).problems == []

    write_notebook(path, "# 16 · New\n\nThe loop sends one request.\n\nBrand new text.")
    result = translation.update(doc, LANGUAGE)
    assert (result.kept, result.fuzzy, result.added, result.removed) == (1, 1, 1, 2)
    entries = {e.msgid: e for e in polib.pofile(str(doc.catalogue(LANGUAGE)))}
    changed = entries["The loop sends one request."]
    assert "fuzzy" in changed.flags
    assert changed.msgstr == "循环发出一个请求。"
    assert changed.previous_msgid == "The loop sends a request."
    assert "Gone soon." not in entries
    problems = translation.check(doc, LANGUAGE).problems
    assert any("fuzzy" in p for p in problems)
    assert any("not translated" in p for p in problems)
    # Until it is looked at, a fuzzy message stays English in the generated notebook.
    page = translation.Translator(LANGUAGE).notebook(doc)
    assert "The loop sends one request." in "".join(page["cells"][0]["source"])


def test_check_finds_a_message_the_english_no_longer_has(scratch: Path) -> None:
    path = scratch / "chapters" / "16_new.ipynb"
    write_notebook(path, "# 16 · New")
    doc = translation.document("chapters/16_new")
    translation.update(doc, LANGUAGE)
    catalogue = polib.pofile(str(doc.catalogue(LANGUAGE)))
    catalogue.append(polib.POEntry(msgid="An old paragraph.", msgstr="旧段落。"))
    catalogue.save(str(doc.catalogue(LANGUAGE)))
    problems = translation.check(doc, LANGUAGE).problems
    assert any("no longer in the English" in p for p in problems)


def test_links_go_to_the_translated_pages_and_anchors_follow_their_headings(
    scratch: Path,
) -> None:
    path = scratch / "chapters" / "16_new.ipynb"
    write_notebook(
        path,
        "# 16 · New\n\n![Map](../images/map.svg) See [the sources](sources.md#chapter-16), "
        "[chapter 17](17_next.ipynb) and [the web](https://example.org/a#b).",
    )
    (scratch / "chapters" / "17_next.ipynb").write_text(path.read_text())
    sources = translation.document("chapters/sources")
    for doc in (translation.document("chapters/16_new"), sources):
        translation.update(doc, LANGUAGE)
    fill(sources, {"# Sources": "# 资料来源", "## Chapter 16": "## 第 16 章", "Rows.": "各行。"})
    text = "".join(
        translation.Translator(LANGUAGE).notebook(translation.document("chapters/16_new"))["cells"][
            0
        ]["source"]
    )
    assert "](../../images/map.svg)" in text  # from chapters/zh/, the same picture
    assert "](sources.md#第-16-章)" in text  # the translated page, its translated heading
    assert "](17_next.ipynb)" in text  # the translated chapter beside it
    assert "](https://example.org/a#b)" in text
    site = "".join(
        translation.Translator(LANGUAGE, site=True).notebook(
            translation.document("chapters/16_new")
        )["cells"][0]["source"]
    )
    assert "](../images/map.svg)" in site  # on the website a page keeps its English place
    assert "](sources.md#第-16-章)" in site


def test_slugs_are_myst_s() -> None:
    assert translation.slug("Chapter 06") == "chapter-06"
    assert translation.slug("第 06 章") == "第-06-章"
    assert translation.slug("Five words, one meaning each") == "five-words-one-meaning-each"


# --- the Chinese edition ------------------------------------------------------------------


@pytest.mark.parametrize("doc", DOCUMENTS, ids=[d.domain for d in DOCUMENTS])
def test_each_catalogue_has_every_english_message_translated_and_nothing_else(
    doc: translation.Document,
) -> None:
    report = translation.check(doc, LANGUAGE, translation.glossary(LANGUAGE))
    assert report.problems == [], "\n".join(report.problems[:20])


@pytest.mark.parametrize("doc", NOTEBOOKS, ids=[d.domain for d in NOTEBOOKS])
def test_a_chinese_notebook_has_the_english_code_outputs_and_metadata(
    doc: translation.Document,
) -> None:
    english = json.loads((ROOT / doc.english).read_text(encoding="utf-8"))
    translated_path = doc.translated(LANGUAGE)
    assert translated_path is not None
    chinese = json.loads((ROOT / translated_path).read_text(encoding="utf-8"))
    assert chinese["metadata"] == english["metadata"]
    assert (chinese["nbformat"], chinese["nbformat_minor"]) == (
        english["nbformat"],
        english["nbformat_minor"],
    )
    assert len(chinese["cells"]) == len(english["cells"])
    for theirs, ours in zip(english["cells"], chinese["cells"], strict=True):
        if theirs["cell_type"] == "code":
            assert ours == theirs, theirs.get("id")
        else:
            assert {k: v for k, v in ours.items() if k != "source"} == {
                k: v for k, v in theirs.items() if k != "source"
            }


@pytest.mark.parametrize("doc", NOTEBOOKS, ids=[d.domain for d in NOTEBOOKS])
def test_a_chinese_notebook_reads_in_chinese(doc: translation.Document) -> None:
    translated_path = doc.translated(LANGUAGE)
    assert translated_path is not None
    chinese = json.loads((ROOT / translated_path).read_text(encoding="utf-8"))
    prose = "".join("".join(c["source"]) for c in chinese["cells"] if c["cell_type"] == "markdown")
    han = len(translation.CJK.findall(prose))
    assert han > 0.3 * len(translation.without_code(prose).split()), doc.domain
    first = "".join(chinese["cells"][0]["source"])
    assert re.search(r"^# \d\d · .*[\u4e00-\u9fff]", first, re.M), first[:80]


def test_no_generated_file_is_stale() -> None:
    stale = [
        place
        for place, text in translation.generated(LANGUAGE).items()
        if not (ROOT / place).exists() or (ROOT / place).read_text(encoding="utf-8") != text
    ]
    assert stale == [], "run `uv run python docs/translation.py generate`"


def test_every_file_in_the_edition_s_folder_is_generated() -> None:
    made = set(translation.generated(LANGUAGE))
    present = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / EDITION.folder).rglob("*")
        if p.is_file() and ".ipynb_checkpoints" not in p.parts
    }
    assert present <= made, sorted(present - made)


def edition_files() -> list[Path]:
    return [
        *sorted((ROOT / EDITION.folder).glob("*.ipynb")),
        ROOT / EDITION.folder / "sources.md",
        ROOT / EDITION.readme,
    ]


def markdown_of(path: Path) -> str:
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return path.read_text(encoding="utf-8")


def anchors_of(path: Path) -> set[str]:
    return {translation.slug(h) for h in translation.headings(markdown_of(path))}


@pytest.mark.parametrize("path", edition_files(), ids=lambda p: p.name)
def test_every_link_of_the_edition_resolves_to_a_file_and_heading(path: Path) -> None:
    text = re.sub(r"```.*?```", "", markdown_of(path), flags=re.S)
    broken = []
    for match in translation.LINK_TARGET.finditer(translation.CODE_SPAN.sub(" ", text)):
        target = match.group("target")
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue
        file, _, anchor = target.partition("#")
        found = (path.parent / file).resolve() if file else path
        if not found.exists() or (
            anchor
            and found.suffix in {".md", ".ipynb"}
            and found != ROOT / "README.md"
            and anchor not in anchors_of(found)
        ):
            broken.append(target)
    assert broken == []


def test_the_readmes_link_each_other_and_the_chinese_one_the_chinese_chapters() -> None:
    english = (ROOT / "README.md").read_text(encoding="utf-8")
    chinese = (ROOT / EDITION.readme).read_text(encoding="utf-8")
    assert f"]({EDITION.readme})" in english.split("\n\n")[1]
    assert "](README.md)" in chinese.split("\n\n")[1]
    assert f"]({EDITION.folder}/00_start_here.ipynb)" in chinese
    assert f"lab/tree/{EDITION.folder}/00_start_here.ipynb" in chinese
    # Its instructions name the Chinese notebooks: a path to reset, a link to give out.
    assert f"git checkout -- {EDITION.folder}/05_compaction.ipynb" in chinese
    assert "chapters%2Fzh%2F00_start_here.ipynb" in chinese
    assert "git checkout -- chapters/05_compaction.ipynb" in english
