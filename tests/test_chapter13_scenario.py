"""Chapter 13's project and sessions say what the chapter says of them.

The workspace (``harness/notebook/extensions.py``): 30 skills whose sizes are the real
``SKILL.md`` sizes of anthropics/skills, two commands, settings with two Python hooks. The
sessions (``extensions_runs.py``): listed skills cost a small share of inlined ones, the skill
is loaded once, an edit to one skill rewrites the inlined prompt's cache and not the listed
one; the guard blocks ``rm -rf``, the formatter tidies the edited file, a declined trust
question keeps the project's hooks from running.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.events import HookReported, PromptRefused, ToolFinished
from harness.model.scripted import reply
from harness.notebook.extensions import SKILL_SIZES, SKILLS, make_workspace, skill_sizes
from harness.notebook.extensions_hooks import project_settings, write_local_settings
from harness.notebook.extensions_runs import (
    HOOK_TASK,
    SkillSession,
    edit_and_restart,
    hook_script,
    hooks_agent,
    skill_session,
)
from harness.notebook.extensions_views import hook_story, relative
from harness.settings import load_settings
from harness.skills import discover_commands, discover_skills


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, SkillSession]]:
    found = {}
    for layout in ("inlined", "listed"):
        root = make_workspace(tmp_path_factory.mktemp(layout) / "shop")
        found[layout] = (root, skill_session(root, layout))
    return found


def test_the_workspace_has_thirty_skills_sized_like_anthropics_and_two_commands(
    tmp_path: Path,
) -> None:
    root = make_workspace(tmp_path / "shop")
    catalog = discover_skills(root, home=None)
    assert len(catalog.skills) == len(SKILLS) == 30 and not catalog.problems
    sizes = {s.name: s.path.stat().st_size for s in catalog.skills}
    for (name, _), size in zip(SKILLS, skill_sizes(), strict=True):
        assert size <= sizes[name] < size + 400, name  # the last line may pass the size
    assert sorted(SKILL_SIZES)[len(SKILL_SIZES) // 2] == 9_092  # the median the chapter gives
    commands = discover_commands(root, home=None, skills=catalog)
    assert {"review", "git:fixup"} <= set(commands.names())
    assert not load_settings(root, home=None).problems


def test_listing_the_skills_costs_a_small_share_of_inlining_them(
    sessions: dict[str, tuple[Path, SkillSession]],
) -> None:
    inlined, listed = sessions["inlined"][1], sessions["listed"][1]
    assert inlined.system_tokens > 100_000 > 1_000 > listed.system_tokens
    assert len(listed.calls) == len(inlined.calls) + 1  # the Skill call
    assert sum(listed.costs()) * 15 < sum(inlined.costs())
    assert inlined.loaded_at is None and listed.loaded_at is not None


def test_an_edit_to_one_skill_rewrites_the_inlined_cache_and_not_the_listed_one(
    sessions: dict[str, tuple[Path, SkillSession]],
) -> None:
    inlined = edit_and_restart(*sessions["inlined"])
    listed = edit_and_restart(*sessions["listed"])
    assert (inlined.usage.cache_creation_input_tokens or 0) > 100_000
    assert listed.usage.cache_creation_input_tokens == 0
    assert listed.usage.cache_read_input_tokens == listed.prompt_tokens


def test_the_guard_blocks_rm_rf_and_the_formatter_tidies_the_edit(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "shop")
    hooked = hooks_agent(root, tmp_path / "trust.json", answer=True)
    events = list(hooked.agent.run(HOOK_TASK))
    results = [e for e in events if isinstance(e, ToolFinished)]
    assert results[0].is_error and "'rm -rf' is not allowed here" in results[0].content
    assert not results[1].is_error and not (root / "build" / "old.log").exists()
    line = next(x for x in (root / "app/tax.py").read_text().splitlines() if "RATE_4 =" in x)
    assert line == "RATE_4 = Decimal('0.5')  # the standard rate"  # the tab and end gone
    assert len(hooked.asked) == 1 and hooked.trust.status() is True
    assert str(tmp_path) not in hook_story(events, root)


def test_changed_hook_commands_ask_again_and_a_no_keeps_the_project_hooks_off(
    tmp_path: Path,
) -> None:
    root = make_workspace(tmp_path / "shop")
    store = tmp_path / "trust.json"
    list(hooks_agent(root, store, answer=True).agent.run(HOOK_TASK))
    banned = ("rm -rf", "git push --force", "curl")
    (root / ".claude/settings.json").write_text(json.dumps(project_settings(banned)))
    (root / "build").mkdir(exist_ok=True)
    second = hooks_agent(root, store, answer=False, steps=[*hook_script()[:1], reply("Done.")])
    events = list(second.agent.run(HOOK_TASK))
    assert len(second.asked) == 1 and second.asked[0].changed
    skipped = [e for e in events if isinstance(e, HookReported) and e.outcome == "skipped"]
    assert len(skipped) == 1 and not (root / "build").exists()


def test_paths_are_shown_relative_to_the_chapters_folder(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    text = f"{root}/.claude/settings.json and {tmp_path}/trust.json"
    assert relative(text, root) == "shop/.claude/settings.json and ./trust.json"


def test_the_local_prompt_hook_refuses_a_key_and_adds_its_note_otherwise(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "shop")
    write_local_settings(root)
    noted = hooks_agent(root, tmp_path / "trust.json", answer=True, steps=[reply("Not today.")])
    refused = list(noted.agent.run("the key is AKIAIOSFODNN7EXAMPLE"))
    assert isinstance(refused[-1], PromptRefused) and "AWS access key" in refused[-1].reason
    assert noted.agent.messages == [] and not noted.agent.model.requests  # type: ignore[attr-defined]
    list(noted.agent.run("Can we deploy today?"))
    blocks = noted.agent.messages[0]["content"]
    assert [b["text"] for b in blocks] == [
        "Can we deploy today?",
        "Release freeze until Monday: no deploys.",
    ]
