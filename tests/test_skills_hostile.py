"""Hostile skills folders: every bad file is a problem with a reason, discovery never crashes.

Hand-made cases for each kind of damage, then hypothesis: generated front matter, generated
bytes, generated argument text.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.skills import FrontMatterError, discover_skills, split_front_matter
from harness.skills.arguments import split_arguments, substitute_arguments
from harness.skills.discovery import MAX_SKILL_BYTES, SkillCatalog
from harness.skills.frontmatter import MAX_FRONT_MATTER_CHARS, parse_fields
from harness.skills.listing import format_listing


def skills_dir(root: Path) -> Path:
    folder = root / ".claude" / "skills"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def one_problem(root: Path) -> str:
    catalog = discover_skills(root, None)
    assert catalog.skills == ()
    assert len(catalog.problems) == 1, catalog.problems
    return catalog.problems[0].reason


def put(root: Path, name: str, data: bytes) -> None:
    folder = skills_dir(root) / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_bytes(data)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"---\ndescription: \xff\xfe\n---\n", "not UTF-8"),
        (b'---\ndescription: "open\n---\n', "not valid YAML"),
        (b"---\n- a\n- b\n---\nbody\n", "mapping of fields"),
        (b"---\njust a string\n---\nbody\n", "mapping of fields"),
        (b"---\ndescription: x\nbody without an end\n", "never closed"),
        (b"---\ndescription: [1, 2]\n---\n", "description must be text, not a list"),
        (b"---\ndescription: d\ndisable-model-invocation: maybe\n---\n", "true or false"),
        (b"---\ndescription: d\nallowed-tools: {a: 1}\n---\n", "allowed-tools must be"),
        (b"---\ndescription: d\nallowed-tools: [Read, 3]\n---\n", "list of text"),
        (b"---\ndescription: d\neffort: enormous\n---\n", "effort must be one of"),
        (b"---\n1: numeric key\n---\n", "keys must be text"),
        (b"---\nname: " + b"x" * 65 + b"\n---\n", "at most 64"),
        (b"---\n" + b"[" * 5000 + b"\n---\n", "front matter"),
    ],
)
def test_a_broken_skill_file_is_a_problem_with_its_reason(
    tmp_path: Path, data: bytes, reason: str
) -> None:
    put(tmp_path, "bad", data)
    assert reason in one_problem(tmp_path)


def test_a_huge_file_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    put(tmp_path, "huge", b"---\ndescription: d\n---\n" + b"x" * (MAX_SKILL_BYTES + 10))
    assert "limit" in one_problem(tmp_path)


def test_huge_front_matter_is_refused(tmp_path: Path) -> None:
    put(tmp_path, "big", b"---\ndescription: " + b"y" * MAX_FRONT_MATTER_CHARS + b"\n---\n")
    assert "limit" in one_problem(tmp_path)


def test_a_billion_laughs_alias_tree_is_not_expanded_into_the_message(tmp_path: Path) -> None:
    levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        prev = chr(ord("a") + i - 1)
        levels.append(f"{chr(ord('a') + i)}: &{chr(ord('a') + i)} [{','.join(['*' + prev] * 9)}]")
    text = "---\n" + "\n".join(levels) + "\ndescription: *i\n---\n"
    put(tmp_path, "laughs", text.encode())
    reason = one_problem(tmp_path)
    assert "description must be text, not a list" in reason and len(reason) < 200


def test_a_folder_named_skill_md_is_a_problem(tmp_path: Path) -> None:
    (skills_dir(tmp_path) / "odd" / "SKILL.md").mkdir(parents=True)
    assert "is a folder, not a file" in one_problem(tmp_path)


def test_a_symlink_loop_is_a_problem(tmp_path: Path) -> None:
    folder = skills_dir(tmp_path) / "loop"
    folder.mkdir()
    os.symlink("SKILL.md", folder / "SKILL.md")
    assert "symlink loop" in one_problem(tmp_path)


def test_a_skills_folder_that_links_to_itself_is_a_problem(tmp_path: Path) -> None:
    root = skills_dir(tmp_path)
    os.symlink("self", root / "self")
    assert "symlink loop" in one_problem(tmp_path)


def test_a_dangling_symlink_is_a_problem(tmp_path: Path) -> None:
    os.symlink(tmp_path / "missing", skills_dir(tmp_path) / "gone")
    assert "points nowhere" in one_problem(tmp_path)


def test_a_project_skill_linked_to_a_file_outside_the_project_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("---\ndescription: steal me\n---\nthe key\n")
    project = tmp_path / "project"
    folder = skills_dir(project) / "innocent"
    folder.mkdir()
    os.symlink(secret, folder / "SKILL.md")
    assert "outside the project" in one_problem(project)


def test_the_same_file_reached_twice_is_loaded_once(tmp_path: Path) -> None:
    put(tmp_path, "real", b"---\ndescription: d\n---\n")
    os.symlink("real", skills_dir(tmp_path) / "alias")
    catalog = discover_skills(tmp_path, None)
    assert catalog.names() == ["alias"]  # sorted: alias is met first
    assert "the same file" in catalog.problems[0].reason


def test_a_folder_name_that_cannot_be_a_command_is_a_problem(tmp_path: Path) -> None:
    put(tmp_path, "two words", b"---\ndescription: d\n---\n")
    put(tmp_path, "new\nline", b"---\ndescription: d\n---\n")
    catalog = discover_skills(tmp_path, None)
    assert catalog.skills == ()
    assert all("not a usable skill name" in p.reason for p in catalog.problems)


def test_a_skills_path_that_is_a_file_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "skills").write_text("not a folder")
    assert "is not a folder" in one_problem(tmp_path)


def test_stray_files_and_folders_without_skill_md_are_ignored_quietly(tmp_path: Path) -> None:
    root = skills_dir(tmp_path)
    (root / "README.md").write_text("notes")
    (root / "empty").mkdir()
    assert discover_skills(tmp_path, None) == SkillCatalog()


def test_a_lower_case_skill_md_is_found(tmp_path: Path) -> None:
    folder = skills_dir(tmp_path) / "lower"
    folder.mkdir()
    (folder / "skill.md").write_text("---\ndescription: d\n---\n")
    assert discover_skills(tmp_path, None).names() == ["lower"]


def test_an_unquoted_colon_in_a_value_is_retried_as_claude_code_does() -> None:
    data, _ = split_front_matter(
        "---\ndescription: Deploy with Helm: staging or production\n---\n", source="SKILL.md"
    )
    assert data == {"description": "Deploy with Helm: staging or production"}


def test_boolean_fields_accept_the_documented_spellings() -> None:
    for value in ("yes", "On", "TRUE", "1", 1, True):
        fields = parse_fields({"disable-model-invocation": value}, source="s")
        assert fields.disable_model_invocation
    for value in ("no", "Off", "false", "0", 0, False):
        assert parse_fields({"user-invocable": value}, source="s").user_invocable is False


def test_a_bom_before_the_front_matter_is_ignored() -> None:
    assert split_front_matter("\ufeff---\na: b\n---\nx", source="s") == ({"a": "b"}, "x")


# -- generated input ---------------------------------------------------------------------------

yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
field_names = st.sampled_from(
    [
        "name",
        "description",
        "when_to_use",
        "argument-hint",
        "arguments",
        "disable-model-invocation",
        "user-invocable",
        "allowed-tools",
        "model",
        "effort",
        "context",
        "paths",
        "shell",
        "hooks",
        "compatibility",
    ]
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(field_names, yaml_values, max_size=6))
def test_any_typed_front_matter_is_parsed_or_refused_with_a_front_matter_error(
    data: dict[str, object],
) -> None:
    try:
        parse_fields(data, source="SKILL.md")
    except FrontMatterError as error:
        assert error.reason and "\n" not in error.reason


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400) | st.text(max_size=400).map(lambda t: ("---\n" + t).encode()))
def test_any_bytes_in_a_skill_md_never_crash_discovery(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        put(root, "gen", data)
        catalog = discover_skills(root, None)
        assert len(catalog.skills) + len(catalog.problems) == 1
        format_listing(catalog.skills)  # and whatever was loaded can be listed


@settings(max_examples=200)
@given(st.text(max_size=80), st.text(max_size=60) | st.none())
def test_substitution_never_crashes_and_inserts_values_literally(
    body: str, arguments: str | None
) -> None:
    result = substitute_arguments(body, arguments, ["name"])
    if arguments is None:
        assert result == body
    if arguments is not None and "$" not in body and arguments:
        assert result == f"{body}\n\nARGUMENTS: {arguments}"


@settings(max_examples=200)
@given(
    st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=10), max_size=5)
)
def test_an_argument_that_looks_like_a_placeholder_is_not_expanded_again(
    words: list[str],
) -> None:
    arguments = " ".join(["$1", *[w.replace("'", "") for w in words if w.strip()]])
    split = split_arguments(arguments)
    result = substitute_arguments("first=$0 second=$1", arguments)
    if split and split[0] == "$1":
        assert result.startswith("first=$1 ")


@pytest.mark.parametrize(
    "value",
    ["2024-13-45", "!!float abc", "!!int 0x", "!!binary zz", "!!python/object:os.system ls"],
)
def test_values_yaml_cannot_build_never_crash_discovery(tmp_path: Path, value: str) -> None:
    put(tmp_path, "odd", f"---\ndescription: d\nversion: {value}\n---\n".encode())
    catalog = discover_skills(tmp_path, None)
    if catalog.skills:  # Claude Code's retry quoted the value: it is read as text
        assert catalog.skills[0].fields.version == value
    else:
        assert "front matter" in catalog.problems[0].reason


def test_an_impossible_date_is_a_problem(tmp_path: Path) -> None:
    put(tmp_path, "date", b"---\ndescription: d\nversion: 2024-13-45\n---\n")
    assert "YAML cannot build: month must be in 1..12" in one_problem(tmp_path)


def test_an_unhashable_key_is_a_problem(tmp_path: Path) -> None:
    put(tmp_path, "key", b"---\n? [a, b]\n: c\n---\n")
    assert "not valid YAML" in one_problem(tmp_path)


def test_windows_line_endings_are_read(tmp_path: Path) -> None:
    put(tmp_path, "crlf", b"---\r\ndescription: Windows skill\r\n---\r\nBody.\r\n")
    catalog = discover_skills(tmp_path, None)
    skill = catalog.get("crlf")
    assert skill is not None and skill.description == "Windows skill"
    assert skill.body() == "Body.\r\n"


tags = st.sampled_from(
    ["", "!!float ", "!!int ", "!!binary ", "!!timestamp ", "!!bool ", "!!set ", "!!omap ",
     "!!str ", "!!null ", "&a ", "*a ", "!custom ", "? ", "- "]
)  # fmt: skip
scalars = st.text(alphabet="0123456789-:.eExTZ+abc[]{}, ", max_size=20)


@settings(max_examples=300)
@given(st.lists(st.tuples(field_names, tags, scalars), max_size=5))
def test_tagged_and_odd_scalars_are_read_or_refused_never_raised(
    lines: list[tuple[str, str, str]],
) -> None:
    text = "---\n" + "\n".join(f"{key}: {tag}{value}" for key, tag, value in lines) + "\n---\n"
    try:
        data, _ = split_front_matter(text, source="SKILL.md")
        parse_fields(data, source="SKILL.md")
    except FrontMatterError as error:
        assert error.reason


def test_a_date_where_text_is_expected_is_read_as_text() -> None:
    data, _ = split_front_matter("---\nversion: 2024-01-01\n---\n", source="s")
    assert parse_fields(data, source="s").version == "2024-01-01"


def test_two_skill_files_in_one_folder_use_the_upper_case_one_and_say_so(
    tmp_path: Path,
) -> None:
    put(tmp_path, "twin", b"---\ndescription: upper\n---\n")
    (skills_dir(tmp_path) / "twin" / "skill.md").write_text("---\ndescription: lower\n---\n")
    catalog = discover_skills(tmp_path, None)
    skill = catalog.get("twin")
    assert skill is not None and skill.description == "upper"
    assert "SKILL.md is used" in catalog.problems[0].reason


def test_a_folder_with_too_many_entries_is_read_up_to_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.skills import discovery

    monkeypatch.setattr(discovery, "MAX_ENTRIES", 3)
    for i in range(5):
        put(tmp_path, f"s{i}", b"---\ndescription: d\n---\n")
    catalog = discover_skills(tmp_path, None)
    assert catalog.names() == ["s0", "s1", "s2"]
    assert "only the first 3 read" in catalog.problems[0].reason


def test_command_folders_deeper_than_the_cap_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.skills import commands as module
    from harness.skills import discover_commands

    monkeypatch.setattr(module, "MAX_DEPTH", 1)
    deep = tmp_path / ".claude" / "commands" / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "c.md").write_text("deep")
    (deep.parent / "ok.md").write_text("fine")
    catalog = discover_commands(tmp_path, None)
    assert catalog.names() == ["a:ok"]
    assert "deeper than 1 folders" in catalog.problems[0].reason


def test_a_commands_path_that_is_a_file_is_a_problem(tmp_path: Path) -> None:
    from harness.skills import discover_commands

    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "commands").write_text("not a folder")
    assert "is not a folder" in discover_commands(tmp_path, None).problems[0].reason


def test_a_command_file_name_that_cannot_be_typed_is_a_problem(tmp_path: Path) -> None:
    from harness.skills import discover_commands

    folder = tmp_path / ".claude" / "commands"
    folder.mkdir(parents=True)
    (folder / "two words.md").write_text("x")
    assert "not a usable command name" in discover_commands(tmp_path, None).problems[0].reason
