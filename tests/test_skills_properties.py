"""Properties of the listing and the front matter, for generated skills."""

from __future__ import annotations

from dataclasses import dataclass

import yaml
from hypothesis import given
from hypothesis import strategies as st

from harness.skills import split_front_matter
from harness.skills.arguments import substitute_arguments
from harness.skills.listing import MAX_DESCRIPTION_CHARS, format_listing


@dataclass(frozen=True)
class Item:
    name: str
    description: str
    disable_model_invocation: bool = False


names = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
items = st.dictionaries(names, st.text(max_size=2000), max_size=40).map(
    lambda d: [Item(n, " ".join(text.split())) for n, text in d.items()]
)


@given(items, st.integers(min_value=0, max_value=20_000))
def test_every_name_is_listed_and_the_listing_fits_when_names_alone_fit(
    listed: list[Item], budget: int
) -> None:
    listing = format_listing(listed, budget_chars=budget)
    lines = listing.text.splitlines() if listing.text else []
    assert [line[2:].split(":")[0] for line in lines] == [i.name for i in listed]
    names_only = sum(len(i.name) + 2 for i in listed) + max(0, len(listed) - 1)
    if names_only <= budget:
        assert len(listing.text) <= budget
    for line in lines:
        assert len(line.split(": ", 1)[-1]) <= MAX_DESCRIPTION_CHARS


@given(items)
def test_within_budget_nothing_is_dropped(listed: list[Item]) -> None:
    listing = format_listing(listed, budget_chars=10**9)
    assert listing.descriptions_dropped == 0


simple = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=30
)


@given(st.dictionaries(st.from_regex(r"[a-z][a-z_-]{0,12}", fullmatch=True), simple), simple)
def test_front_matter_written_by_a_yaml_dumper_reads_back(
    fields: dict[str, str], body: str
) -> None:
    text = "---\n" + yaml.safe_dump(fields, allow_unicode=True) + "---\n" + body
    data, rest = split_front_matter(text, source="SKILL.md")
    assert data == fields
    assert rest == body


@given(st.lists(st.from_regex(r"[A-Za-z0-9_.]{1,8}", fullmatch=True), min_size=1, max_size=6))
def test_indexed_placeholders_take_the_words_counted_from_zero(words: list[str]) -> None:
    body = " ".join(f"$ARGUMENTS[{i}]" for i in range(len(words)))
    assert substitute_arguments(body, " ".join(words)) == " ".join(words)
    short = " ".join(f"${i}" for i in range(len(words)))
    assert substitute_arguments(short, " ".join(words)) == " ".join(words)
