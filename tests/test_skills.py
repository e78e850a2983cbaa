"""Skills: discovery, the listing in the system prompt, and the ``Skill`` tool, on real files.

The fixtures (tests/fixtures/claude_code/skills, see its SOURCES.md) are SKILL.md files from
Anthropic's skills repository and from Claude Code's skills documentation, copied unchanged.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.prompt import Section, SystemPrompt, default_sections
from harness.skills import (
    SKILL_TOOL,
    SkillLoader,
    discover_skills,
    format_listing,
    skill_tool,
    skills_section,
)
from harness.skills.discovery import SkillCatalog
from harness.skills.listing import HEADING, MAX_DESCRIPTION_CHARS, budget_for
from harness.skills.render import SHELL_DISABLED
from harness.tools import ToolContext, ToolError, ToolRegistry, Workspace, builtin_tools

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code" / "skills"


def install(root: Path, *names: str) -> Path:
    """Copy fixture skills into ``root/.claude/skills`` (all of them when no names)."""
    target = root / ".claude" / "skills"
    target.mkdir(parents=True, exist_ok=True)
    for folder in sorted(FIXTURES.iterdir()):
        if folder.is_dir() and (not names or folder.name in names):
            shutil.copytree(folder, target / folder.name)
    return target


def write_skill(root: Path, name: str, text: str) -> Path:
    folder = root / ".claude" / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    return folder / "SKILL.md"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    install(root)
    return root


def loader(project: Path, **options: object) -> SkillLoader:
    return SkillLoader(discover_skills(project, None), **options)  # type: ignore[arg-type]


def call(tool_loader: SkillLoader, workspace: Path, **arguments: object) -> str:
    result = skill_tool(tool_loader)(dict(arguments), ToolContext(Workspace(workspace)))
    assert isinstance(result, str)
    return result


# -- discovery ---------------------------------------------------------------------------------


def test_every_fixture_skill_from_the_docs_and_anthropic_is_discovered_without_problems(
    project: Path,
) -> None:
    catalog = discover_skills(project, None)
    expected = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
    assert catalog.names() == expected
    assert catalog.problems == ()


def test_the_command_name_is_the_folder_and_front_matter_name_is_only_a_label(
    project: Path,
) -> None:
    skill = discover_skills(project, None).get("template")
    assert skill is not None
    assert skill.display_name == "template-skill"
    assert skill.name == "template"


def test_documented_fields_are_read_typed(project: Path) -> None:
    catalog = discover_skills(project, None)
    commit, deploy, research = (
        catalog.get("commit"),
        catalog.get("deploy"),
        catalog.get("deep-research"),
    )
    assert commit is not None and deploy is not None and research is not None
    assert commit.allowed_tools == ("Bash(git add *)", "Bash(git commit *)", "Bash(git status *)")
    assert commit.disable_model_invocation and deploy.disable_model_invocation
    assert research.fields.context == "fork" and research.fields.agent == "Explore"
    comms = catalog.get("internal-comms")
    assert comms is not None and comms.fields.license == "Complete terms in LICENSE.txt"
    assert comms.description.startswith("A set of resources to help me write")


def test_a_skill_without_description_takes_the_first_line_of_its_body(tmp_path: Path) -> None:
    write_skill(tmp_path, "notes", "---\nname: notes\n---\n\n# Keep release notes\n\nMore.\n")
    skill = discover_skills(tmp_path, None).get("notes")
    assert skill is not None and skill.description == "Keep release notes"


def test_a_personal_skill_wins_over_a_project_skill_of_the_same_name(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    write_skill(home, "deploy", "---\ndescription: personal deploy\n---\nMine.\n")
    write_skill(project, "deploy", "---\ndescription: project deploy\n---\nOurs.\n")
    catalog = discover_skills(project, home)
    skill = catalog.get("deploy")
    assert skill is not None and skill.scope == "user" and skill.description == "personal deploy"
    assert len(catalog.problems) == 1
    assert "takes precedence" in catalog.problems[0].reason


def test_project_skills_show_a_workspace_relative_base_directory(project: Path) -> None:
    skill = discover_skills(project, None).get("internal-comms")
    assert skill is not None and skill.base_dir == ".claude/skills/internal-comms"


def test_the_body_is_read_when_used_not_at_discovery(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "late", "---\ndescription: d\n---\nfirst body\n")
    skill = discover_skills(tmp_path, None).get("late")
    assert skill is not None
    path.write_text("---\ndescription: d\n---\nsecond body\n")
    assert skill.body() == "second body\n"


# -- the listing -------------------------------------------------------------------------------


def test_the_listing_has_one_line_per_model_invocable_skill_in_claude_codes_format(
    project: Path,
) -> None:
    catalog = discover_skills(project, None)
    section = skills_section(catalog.skills)
    assert section is not None and not section.dynamic
    lines = section.text.splitlines()
    assert lines[0] == HEADING
    listed = [line.split(":")[0].removeprefix("- ") for line in lines[2:]]
    assert "deploy" not in listed and "commit" not in listed and "my-skill" not in listed
    assert "internal-comms" in listed
    assert "- api-conventions: API design patterns for this codebase" in lines


def test_the_listing_goes_in_the_cached_static_part_of_the_system_prompt(project: Path) -> None:
    section = skills_section(discover_skills(project, None).skills)
    assert section is not None
    prompt = SystemPrompt((*default_sections(["Skill"]), section, Section("env", "x", True)))
    blocks = prompt.render()
    assert HEADING in blocks[0]["text"] and "cache_control" in blocks[0]
    assert HEADING not in blocks[1]["text"]


def test_a_description_longer_than_1536_characters_is_cut_with_an_ellipsis(
    tmp_path: Path,
) -> None:
    write_skill(tmp_path, "long", f"---\ndescription: {'word ' * 800}\n---\nbody\n")
    listing = format_listing(discover_skills(tmp_path, None).skills, budget_chars=10**6)
    description = listing.text.split(": ", 1)[1]
    assert len(description) == MAX_DESCRIPTION_CHARS and description.endswith("\u2026")


def test_when_to_use_is_appended_to_the_description(tmp_path: Path) -> None:
    write_skill(tmp_path, "w", "---\ndescription: Does X.\nwhen_to_use: When asked for X.\n---\n")
    listing = format_listing(discover_skills(tmp_path, None).skills)
    assert listing.text == "- w: Does X. - When asked for X."


def test_over_budget_every_name_stays_and_descriptions_go_least_used_first(
    tmp_path: Path,
) -> None:
    for i in range(10):
        write_skill(tmp_path, f"s{i}", f"---\ndescription: {'d' * 90}\n---\n")
    skills = discover_skills(tmp_path, None).skills
    listing = format_listing(skills, budget_chars=500, uses={"s9": 3})
    lines = listing.text.splitlines()
    assert len(lines) == 10 and len(listing.text) <= 500
    assert lines[9].startswith("- s9: d")  # the most used keeps its description
    assert lines[8] == "- s8"  # ties: the last listed lose theirs first
    assert listing.descriptions_dropped == 10 - sum(": " in line for line in lines)


def test_the_budget_is_one_percent_of_the_window_in_characters() -> None:
    assert budget_for(200_000) == 8_000
    assert budget_for(1_000_000) == 40_000
    assert budget_for(None) == 8_000


# -- the Skill tool ----------------------------------------------------------------------------


def test_loading_a_skill_returns_its_base_directory_and_body(project: Path) -> None:
    text = call(loader(project), project, skill="internal-comms")
    assert text.startswith("Launching skill: internal-comms\n\n")
    assert "Base directory for this skill: .claude/skills/internal-comms\n\n" in text
    assert "examples/3p-updates.md" in text
    assert "description:" not in text  # the front matter is not part of the body


def test_files_a_skill_refers_to_are_read_with_the_ordinary_read_tool(project: Path) -> None:
    text = call(loader(project), project, skill="internal-comms")
    base = text.split("Base directory for this skill: ")[1].split("\n")[0]
    registry = ToolRegistry(builtin_tools())
    read = registry.get("read_file")
    assert read is not None
    example = read({"path": f"{base}/examples/3p-updates.md"}, ToolContext(Workspace(project)))
    assert "3P" in str(example)


def test_a_leading_slash_is_accepted(project: Path) -> None:
    text = call(loader(project), project, skill="/api-conventions")
    assert text.startswith("Launching skill: api-conventions")


def test_arguments_fill_the_documented_placeholders(project: Path) -> None:
    tool_loader = loader(project)
    text = call(tool_loader, project, skill="migrate-component", args="SearchBar React Vue")
    assert "Migrate the SearchBar component from React to Vue." in text
    text = call(tool_loader, project, skill="migrate-component-shorthand", args="A B C")
    assert "Migrate the A component from B to C." in text


def test_skill_dir_and_session_id_are_substituted(project: Path) -> None:
    tool_loader = loader(project, session_id="s-42")
    text = call(tool_loader, project, skill="render-chart")
    assert "Run `.claude/skills/render-chart/scripts/render.sh <csv-file>`" in text
    text = call(tool_loader, project, skill="session-logger", args="hello")
    assert "logs/s-42.log" in text and "hello" in text


def test_shell_injection_lines_are_not_run_and_say_so(project: Path) -> None:
    text = call(loader(project), project, skill="summarize-changes")
    assert "!`git diff HEAD`" not in text
    assert SHELL_DISABLED in text


def test_a_disable_model_invocation_skill_is_refused(project: Path) -> None:
    with pytest.raises(ToolError, match="disable-model-invocation") as error:
        call(loader(project), project, skill="deploy", args="prod")
    assert "/deploy" in str(error.value)


def test_an_unknown_name_is_an_error_that_lists_the_names(project: Path) -> None:
    with pytest.raises(ToolError, match="Unknown skill: nope") as error:
        call(loader(project), project, skill="nope")
    assert "internal-comms" in str(error.value) and "deploy" not in str(error.value)


def test_a_skill_whose_file_broke_after_discovery_is_a_clear_error(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "fragile", "---\ndescription: d\n---\nbody\n")
    tool_loader = loader(tmp_path)
    path.write_bytes(b"\xff\xfe not text")
    with pytest.raises(ToolError, match="could not be read: not UTF-8"):
        call(tool_loader, tmp_path, skill="fragile")


def test_loading_the_same_content_twice_gives_a_short_note_when_deduplicating(
    project: Path,
) -> None:
    tool_loader = loader(project, dedupe=True)
    first = call(tool_loader, project, skill="api-conventions")
    second = call(tool_loader, project, skill="api-conventions")
    assert "RESTful" in first and "already loaded" in second and "RESTful" not in second
    assert "RESTful" in call(tool_loader, project, skill="api-conventions", args="v2")
    tool_loader.forget()
    assert "RESTful" in call(tool_loader, project, skill="api-conventions")


def test_the_tool_is_named_skill_and_read_only(project: Path) -> None:
    tool = skill_tool(loader(project))
    assert tool.name == SKILL_TOOL == "Skill"
    assert tool.read_only
    schema = tool.definition()["input_schema"]
    assert set(schema["properties"]) == {"skill", "args"} and schema["required"] == ["skill"]


def test_an_empty_catalog_gives_no_section() -> None:
    assert skills_section(SkillCatalog().skills) is None


def test_a_session_gets_the_tool_the_section_and_the_commands_in_one_call(
    project: Path,
) -> None:
    from harness.skills import session_skills

    setup = session_skills(project, None, context_window=200_000, session_id="abc")
    assert [t.name for t in setup.tools()] == ["Skill"]
    assert setup.section is not None and "- internal-comms:" in setup.section.text
    assert setup.commands.get("deploy") is not None  # typable, though not model-invocable
    assert setup.problems == ()


def test_a_project_without_skills_pays_nothing(tmp_path: Path) -> None:
    from harness.skills import session_skills

    setup = session_skills(tmp_path, None)
    assert setup.tools() == [] and setup.section is None


def test_an_agent_loads_a_skill_and_a_refused_one_comes_back_as_an_error_result(
    project: Path,
) -> None:
    from harness.agent import Agent
    from harness.clock import FakeClock
    from harness.model import ScriptedModel, reply, tool_call
    from harness.skills import session_skills

    setup = session_skills(project, None)
    assert setup.section is not None
    clock = FakeClock()
    model = ScriptedModel(
        [
            reply("Loading.", tool_calls=[tool_call("Skill", skill="internal-comms")]),
            reply("And deploying.", tool_calls=[tool_call("Skill", skill="deploy")]),
            reply("Done."),
        ],
        clock=clock,
    )
    agent = Agent(
        model,
        tools=[*builtin_tools(), *setup.tools()],
        system=SystemPrompt((*default_sections(["Skill"]), setup.section)).render(),
        workspace=project,
        clock=clock,
        approver=lambda request: True,
    )
    list(agent.run("Write a 3P update."))
    results = [
        block
        for message in model.requests[-1].messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    loaded, refused = results
    assert "Base directory for this skill: .claude/skills/internal-comms" in str(loaded["content"])
    assert refused.get("is_error") and "disable-model-invocation" in str(refused["content"])
    assert HEADING in str(model.requests[0].system)


def test_named_arguments_map_to_positions_and_a_missing_one_is_empty(tmp_path: Path) -> None:
    write_skill(
        tmp_path,
        "fix",
        "---\ndescription: d\narguments: [issue, branch]\n---\nFix $issue on $branch.\n",
    )
    tool_loader = loader(tmp_path)
    assert "Fix 42 on main." in call(tool_loader, tmp_path, skill="fix", args="42 main")
    assert "Fix 42 on ." in call(tool_loader, tmp_path, skill="fix", args="42")


def test_the_inlined_layout_puts_every_body_in_one_section() -> None:
    from harness.skills.listing import inlined_section

    section = inlined_section([("a", "Body A."), ("b", "Body B.")])
    assert section is not None
    assert '<skill name="a">\nBody A.\n</skill>' in section.text and "Body B." in section.text
    assert inlined_section([]) is None
