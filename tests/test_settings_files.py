"""Settings files: found in Claude Code's places, merged in its order, and never fatal.

Each hostile file (not JSON, not an object, a folder, a pipe, not UTF-8, huge...) becomes a
problem line naming the file; a bad entry in a good file skips only itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness.settings.files import (
    MAX_SETTINGS_BYTES,
    Settings,
    SettingsError,
    load_settings,
    merge_settings,
    read_settings_file,
    settings_paths,
)
from harness.settings.schema import (
    DEFAULT_TIMEOUT,
    MAX_TIMEOUT,
    ConfiguredHook,
    hooks_in,
    matcher_matches,
    unique_commands,
)


def hook(command: str, matcher: str = "", timeout: float | None = None) -> dict[str, Any]:
    handler: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        handler["timeout"] = timeout
    return {"matcher": matcher, "hooks": [handler]}


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    home, workspace = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    workspace.mkdir()
    return workspace, home


def user_file(home: Path) -> Path:
    return home / ".claude" / "settings.json"


def project_file(workspace: Path) -> Path:
    return workspace / ".claude" / "settings.json"


def local_file(workspace: Path) -> Path:
    return workspace / ".claude" / "settings.local.json"


def commands(settings: Settings, event: str = "PreToolUse") -> list[str]:
    return [h.command for h in settings.hooks if h.event == event]


# --- where the files are, and in which order they count -----------------------------------


def test_no_settings_files_means_no_hooks_and_no_problems(places: tuple[Path, Path]) -> None:
    workspace, home = places
    settings = load_settings(workspace, home)
    assert settings.files == () and settings.hooks == () and settings.problems == ()


def test_the_files_are_user_project_local_in_that_order(places: tuple[Path, Path]) -> None:
    workspace, home = places
    assert settings_paths(workspace, home) == [
        ("user", user_file(home)),
        ("project", project_file(workspace)),
        ("local", local_file(workspace)),
    ]


def test_hooks_from_every_file_add_up_rather_than_override(places: tuple[Path, Path]) -> None:
    workspace, home = places
    write(user_file(home), {"hooks": {"PreToolUse": [hook("mine", "Bash")]}})
    write(project_file(workspace), {"hooks": {"PreToolUse": [hook("team", "Bash")]}})
    write(local_file(workspace), {"hooks": {"PreToolUse": [hook("local", "Bash")]}})
    settings = load_settings(workspace, home)
    assert commands(settings) == ["mine", "team", "local"]
    assert [h.scope for h in settings.hooks] == ["user", "project", "local"]
    assert [h.source for h in settings.hooks] == [
        user_file(home),
        project_file(workspace),
        local_file(workspace),
    ]


def test_a_later_file_wins_a_value_objects_merge_and_lists_concatenate() -> None:
    user = {"model": "a", "permissions": {"allow": ["Bash(ls)", "Read"], "defaultMode": "x"}}
    project = {"model": "b", "permissions": {"allow": ["Read", "Edit"]}, "env": {"A": "1"}}
    merged = merge_settings(user, project)
    assert merged == {
        "model": "b",
        "permissions": {"allow": ["Bash(ls)", "Read", "Edit"], "defaultMode": "x"},
        "env": {"A": "1"},
    }
    assert user["model"] == "a"  # the inputs are left alone


def test_merged_lists_keep_one_and_true_apart_as_javascript_does() -> None:
    assert merge_settings({"a": [1, "x"]}, {"a": [True, 1.0, "x", {"k": 1}, {"k": 1}]}) == {
        "a": [1, "x", True, {"k": 1}, {"k": 1}]
    }


def test_settings_values_are_the_files_merged(places: tuple[Path, Path]) -> None:
    workspace, home = places
    write(user_file(home), {"model": "user-model", "env": {"A": "1"}})
    write(local_file(workspace), {"model": "local-model"})
    assert load_settings(workspace, home).values == {"model": "local-model", "env": {"A": "1"}}


def test_a_workspace_that_is_the_home_folder_reads_the_file_once_as_user(tmp_path: Path) -> None:
    write(user_file(tmp_path), {"hooks": {"Stop": [hook("once")]}})
    settings = load_settings(tmp_path, tmp_path)
    assert commands(settings, "Stop") == ["once"]
    assert [f.scope for f in settings.files] == ["user"]


def test_no_home_folder_reads_only_the_project(places: tuple[Path, Path]) -> None:
    workspace, home = places
    write(user_file(home), {"hooks": {"Stop": [hook("mine")]}})
    write(project_file(workspace), {"hooks": {"Stop": [hook("team")]}})
    assert commands(load_settings(workspace, None), "Stop") == ["team"]


# --- the hooks section ---------------------------------------------------------------------


def test_the_documented_example_becomes_one_configured_hook(places: tuple[Path, Path]) -> None:
    # The "log every Bash command" example of code.claude.com/docs/en/hooks-guide.
    workspace, home = places
    command = (
        'jq -r \'"\\(.tool_input.command) - \\(.tool_input.description // "No description")"\''
        " >> ~/.claude/bash-command-log.txt"
    )
    write(
        user_file(home),
        {
            "hooks": {
                "PreToolUse": [
                    {"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}
                ]
            }
        },
    )
    assert load_settings(workspace, home).hooks == (
        ConfiguredHook("PreToolUse", "Bash", command, DEFAULT_TIMEOUT, user_file(home), "user"),
    )


def test_a_hook_without_a_timeout_gets_claude_codes_600_seconds() -> None:
    found, problems = hooks_in({"hooks": {"Stop": [hook("x")]}}, Path("s.json"), "user")
    assert [h.timeout for h in found] == [600.0] and problems == []


def test_a_missing_matcher_is_the_empty_matcher() -> None:
    data = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 5}]}]}}
    found, _ = hooks_in(data, Path("s.json"), "project")
    assert [(h.matcher, h.timeout) for h in found] == [("", 5.0)]


@pytest.mark.parametrize(
    ("matcher", "name", "expected"),
    [
        ("", "Bash", True),
        ("*", "Write", True),
        ("Bash", "Bash", True),
        ("Bash", "BashOutput", False),  # a plain name is exact, not a prefix
        ("Edit|Write", "Write", True),
        ("Edit|Write", "Read", False),
        ("Edit, Write", "Edit", True),
        ("Notebook.*", "NotebookEdit", True),  # a regular expression, searched anywhere
        ("^Write$", "Write", True),
        ("mcp__memory", "mcp__memory__create", False),  # exact: matches no tool
        ("mcp__memory__.*", "mcp__memory__create", True),
        ("(", "(", False),  # an invalid expression matches nothing
    ],
)
def test_matchers_follow_claude_codes_rules(matcher: str, name: str, expected: bool) -> None:
    assert matcher_matches(matcher, name) is expected


def test_events_without_matchers_ignore_the_matcher() -> None:
    data = {"hooks": {"Stop": [hook("s", "Bash")], "PreToolUse": [hook("p", "Bash")]}}
    stop, pre = hooks_in(data, Path("s.json"), "user")[0]
    assert stop.matches("Write") and stop.matches(None)
    assert not pre.matches("Write") and pre.matches("Bash")


def test_other_hook_types_are_reported_and_the_command_beside_them_kept() -> None:
    data = {
        "hooks": {
            "Stop": [
                {
                    "hooks": [
                        {"type": "prompt", "prompt": "Is the task done? $ARGUMENTS"},
                        {"type": "agent", "prompt": "Verify the tests pass."},
                        {"type": "http", "url": "https://example.com/hook"},
                        {"type": "command", "command": "kept"},
                    ]
                }
            ]
        }
    }
    found, problems = hooks_in(data, Path("/p/s.json"), "project")
    assert [h.command for h in found] == ["kept"]
    assert [p.split(": ", 2)[1] for p in problems] == [
        "hooks.Stop[0].hooks[0]",
        "hooks.Stop[0].hooks[1]",
        "hooks.Stop[0].hooks[2]",
    ]
    assert all("does not run" in p for p in problems)


def test_hooks_for_events_the_harness_does_not_run_are_reported() -> None:
    found, problems = hooks_in({"hooks": {"Notification": [hook("n")]}}, Path("/p/s.json"), "user")
    assert found == []
    assert problems == [
        "/p/s.json: hooks.Notification[0].hooks[0]: is a Notification hook, "
        "an event this harness does not run"
    ]


def test_an_unknown_event_is_reported_and_the_others_kept() -> None:
    data = {"hooks": {"PreToolUze": [hook("typo")], "Stop": [hook("ok")]}}
    found, problems = hooks_in(data, Path("/p/s.json"), "user")
    assert [h.command for h in found] == ["ok"]
    assert problems == ["/p/s.json: hooks.PreToolUze: is not a Claude Code hook event (ignored)"]


BAD_HANDLERS: list[tuple[object, str]] = [
    ({"type": "command", "command": ""}, "command: must not be empty"),
    ({"type": "command", "command": "   "}, "command: must not be empty"),
    ({"type": "command", "command": 42}, "command: must be a string, not int"),
    ({"type": "command", "command": None}, "command: must be a string, not NoneType"),
    ({"type": "command"}, "command: Field required"),
    ({"type": "command", "command": "x", "timeout": -1}, "timeout: must be a positive number"),
    ({"type": "command", "command": "x", "timeout": 0}, "timeout: must be a positive number"),
    ({"type": "command", "command": "x", "timeout": "30"}, "timeout: must be a number"),
    ({"type": "command", "command": "x", "timeout": True}, "timeout: must be a number"),
    ({"type": "command", "command": "x", "timeout": [5]}, "timeout: must be a number"),
    ({"command": "x"}, 'type: is missing (must be "command"'),
    ({"type": "shell", "command": "x"}, "type: must be \"command\", not 'shell'"),
    ({"type": "command", "command": "x", "shell": "powershell"}, 'shell: only "bash"'),
    ({"type": "command", "command": "x", "if": "Bash(git *)"}, "if: conditional hooks"),
    ("echo hi", "must be an object, not str"),
]


@pytest.mark.parametrize(("handler", "message"), BAD_HANDLERS)
def test_a_bad_handler_is_skipped_with_its_field_named_and_its_neighbours_kept(
    handler: object, message: str
) -> None:
    good = {"type": "command", "command": "good"}
    data = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [good, handler, good]}]}}
    found, problems = hooks_in(data, Path("/p/s.json"), "project")
    assert [h.command for h in found] == ["good", "good"]
    assert len(problems) == 1
    assert problems[0].startswith("/p/s.json: hooks.PreToolUse[0].hooks[1]")
    assert message in problems[0]


def test_a_huge_timeout_is_lowered_to_the_cap_and_reported() -> None:
    data = {"hooks": {"Stop": [hook("x", timeout=1e12)]}}
    found, problems = hooks_in(data, Path("/p/s.json"), "user")
    assert [h.timeout for h in found] == [MAX_TIMEOUT]
    assert problems == [
        f"/p/s.json: hooks.Stop[0].hooks[0].timeout: 1000000000000.0 s is "
        f"lowered to {MAX_TIMEOUT:g} s"
    ]


def test_an_integer_timeout_too_large_for_a_float_is_lowered_too() -> None:
    found, problems = hooks_in({"hooks": {"Stop": [hook("x", timeout=10**400)]}}, Path("s"), "user")
    assert [h.timeout for h in found] == [MAX_TIMEOUT] and len(problems) == 1


def test_an_invalid_regex_matcher_drops_its_group_only() -> None:
    data = {"hooks": {"PreToolUse": [hook("bad", "Edit(|"), hook("good", "Edit|Write")]}}
    found, problems = hooks_in(data, Path("/p/s.json"), "project")
    assert [h.command for h in found] == ["good"]
    assert len(problems) == 1 and "hooks.PreToolUse[0].matcher" in problems[0]
    assert "not a valid regular expression" in problems[0]


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ([], "hooks: must be an object of events, not list"),
        ("Bash", "hooks: must be an object of events, not str"),
        ({"Stop": {"hooks": []}}, "hooks.Stop: must be a list of matcher groups, not dict"),
        ({"Stop": ["x"]}, "hooks.Stop[0]: must be an object, not str"),
        ({"Stop": [{"matcher": 5, "hooks": []}]}, "hooks.Stop[0].matcher: Input should be"),
        ({"Stop": [{"matcher": "*"}]}, "hooks.Stop[0].hooks: Field required"),
        ({"Stop": [{"hooks": "echo"}]}, "hooks.Stop[0].hooks: Input should be a valid list"),
    ],
)
def test_a_misshapen_hooks_section_is_reported_by_field(section: object, message: str) -> None:
    found, problems = hooks_in({"hooks": section}, Path("/p/s.json"), "user")
    assert found == []
    assert len(problems) == 1 and problems[0].startswith(f"/p/s.json: {message}")


def test_async_hooks_are_kept_and_reported_as_running_in_the_foreground() -> None:
    data = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "async": True}]}]}}
    found, problems = hooks_in(data, Path("/p/s.json"), "user")
    assert [h.command for h in found] == ["x"]
    assert problems == [
        "/p/s.json: hooks.Stop[0].hooks[0].async: background hooks are not supported: "
        "it runs in the foreground"
    ]


def test_an_identical_command_runs_once_in_its_first_place_with_the_last_timeout() -> None:
    def configured(command: str, timeout: float) -> ConfiguredHook:
        return ConfiguredHook("Stop", "", command, timeout, Path("s"), "user")

    matched = [configured("a", 1), configured("b", 2), configured("a", 3)]
    assert unique_commands(matched) == [configured("a", 3), configured("b", 2)]


# --- disableAllHooks and managed policy -------------------------------------------------------


def test_disable_all_hooks_in_any_file_turns_every_hook_off(places: tuple[Path, Path]) -> None:
    workspace, home = places
    write(user_file(home), {"hooks": {"Stop": [hook("mine")]}})
    write(project_file(workspace), {"hooks": {"Stop": [hook("team")]}})
    write(local_file(workspace), {"disableAllHooks": True})
    settings = load_settings(workspace, home)
    assert settings.hooks == () and settings.disable_all_hooks


def test_a_later_false_overrides_an_earlier_disable_all_hooks(places: tuple[Path, Path]) -> None:
    workspace, home = places
    write(user_file(home), {"disableAllHooks": True, "hooks": {"Stop": [hook("mine")]}})
    write(local_file(workspace), {"disableAllHooks": False})
    assert commands(load_settings(workspace, home), "Stop") == ["mine"]


def test_disable_all_hooks_that_is_not_a_boolean_is_reported_and_ignored(
    places: tuple[Path, Path],
) -> None:
    workspace, home = places
    write(user_file(home), {"disableAllHooks": "yes", "hooks": {"Stop": [hook("mine")]}})
    settings = load_settings(workspace, home)
    assert commands(settings, "Stop") == ["mine"]
    assert settings.problems == (
        f"{user_file(home)}: disableAllHooks: must be true or false, not a string (ignored)",
    )


def test_managed_hooks_come_last_and_survive_a_users_disable_all_hooks(tmp_path: Path) -> None:
    workspace, home, managed = tmp_path / "w", tmp_path / "h", tmp_path / "etc"
    write(user_file(home), {"hooks": {"Stop": [hook("mine")]}})
    write(managed / "managed-settings.json", {"hooks": {"Stop": [hook("policy")]}})
    write(managed / "managed-settings.d" / "20-b.json", {"hooks": {"Stop": [hook("drop-in b")]}})
    write(managed / "managed-settings.d" / "10-a.json", {"hooks": {"Stop": [hook("drop-in a")]}})
    write(managed / "managed-settings.d" / ".hidden.json", {"hooks": {"Stop": [hook("hidden")]}})
    settings = load_settings(workspace, home, managed_dir=managed)
    assert commands(settings, "Stop") == ["mine", "policy", "drop-in a", "drop-in b"]
    write(user_file(home), {"disableAllHooks": True, "hooks": {"Stop": [hook("mine")]}})
    settings = load_settings(workspace, home, managed_dir=managed)
    assert commands(settings, "Stop") == ["policy", "drop-in a", "drop-in b"]
    assert {h.scope for h in settings.hooks} == {"managed"}


def test_managed_policy_can_allow_only_its_hooks_or_none(tmp_path: Path) -> None:
    workspace, home, managed = tmp_path / "w", tmp_path / "h", tmp_path / "etc"
    write(project_file(workspace), {"hooks": {"Stop": [hook("team")]}})
    policy = {"allowManagedHooksOnly": True, "hooks": {"Stop": [hook("policy")]}}
    write(managed / "managed-settings.json", policy)
    assert commands(load_settings(workspace, home, managed_dir=managed), "Stop") == ["policy"]
    write(managed / "managed-settings.json", {**policy, "disableAllHooks": True})
    assert load_settings(workspace, home, managed_dir=managed).hooks == ()


# --- hostile files ---------------------------------------------------------------------------


def only_problem(settings: Settings) -> str:
    assert len(settings.problems) == 1, settings.problems
    return settings.problems[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON (Expecting property name enclosed in double quotes"),
        ('{"hooks": {}', "is not valid JSON ("),
        ("[1, 2]", "must hold a JSON object, not an array"),
        ('"hooks"', "must hold a JSON object, not a string"),
        ("null", "must hold a JSON object, not null"),
        ("3", "must hold a JSON object, not a number"),
        ('{"a": NaN}', "is not valid JSON (NaN is not JSON)"),
        ('{"a": Infinity}', "is not valid JSON (Infinity is not JSON)"),
        ("[" * 100_000 + "]" * 100_000, "is not valid JSON"),
        ('{"a":' * 100 + "1" + "}" * 100, "nests objects or lists deeper than 64 levels"),
    ],
)
def test_a_file_that_is_not_a_json_object_is_reported_and_ignored(
    places: tuple[Path, Path], content: str, message: str
) -> None:
    workspace, home = places
    write(project_file(workspace), content)
    write(user_file(home), {"hooks": {"Stop": [hook("mine")]}})
    settings = load_settings(workspace, home)
    problem = only_problem(settings)
    assert problem.startswith(f"{project_file(workspace)}: {message}")
    assert problem.endswith("(the file is ignored)")
    assert commands(settings, "Stop") == ["mine"]  # the other files still count


def test_an_empty_file_is_an_empty_object_as_in_claude_code(places: tuple[Path, Path]) -> None:
    workspace, home = places
    write(project_file(workspace), "  \n")
    settings = load_settings(workspace, home)
    assert settings.problems == () and [f.data for f in settings.files] == [{}]


def test_a_byte_order_mark_is_allowed(places: tuple[Path, Path]) -> None:
    workspace, home = places
    path = project_file(workspace)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"hooks": {"Stop": [hook("bom")]}}).encode())
    assert commands(load_settings(workspace, home), "Stop") == ["bom"]


def test_a_file_that_is_not_utf8_is_reported(places: tuple[Path, Path]) -> None:
    workspace, home = places
    path = project_file(workspace)
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"model": "caf\xe9"}')
    assert "is not UTF-8 text (bad byte at offset 14)" in only_problem(
        load_settings(workspace, home)
    )


def test_a_huge_file_is_reported_without_being_read(places: tuple[Path, Path]) -> None:
    workspace, home = places
    path = project_file(workspace)
    path.parent.mkdir(parents=True)
    with open(path, "wb") as handle:
        handle.truncate(MAX_SETTINGS_BYTES + 1)  # sparse: no disk used
    problem = only_problem(load_settings(workspace, home))
    assert f"is {MAX_SETTINGS_BYTES + 1} bytes (at most {MAX_SETTINGS_BYTES})" in problem


def test_a_folder_in_place_of_the_file_is_reported(places: tuple[Path, Path]) -> None:
    workspace, home = places
    project_file(workspace).mkdir(parents=True)
    problem = only_problem(load_settings(workspace, home))
    assert problem == f"{project_file(workspace)}: is a folder, not a file (the file is ignored)"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_in_place_of_the_file_is_reported_without_waiting_for_a_writer(
    places: tuple[Path, Path],
) -> None:
    workspace, home = places
    project_file(workspace).parent.mkdir(parents=True)
    os.mkfifo(project_file(workspace))
    assert "is not a regular file" in only_problem(load_settings(workspace, home))


def test_a_symbolic_link_loop_is_reported(places: tuple[Path, Path]) -> None:
    workspace, home = places
    path = project_file(workspace)
    path.parent.mkdir(parents=True)
    path.symlink_to(path)
    assert "cannot be read" in only_problem(load_settings(workspace, home))


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_reported(places: tuple[Path, Path]) -> None:
    workspace, home = places
    path = write(project_file(workspace), {"hooks": {}})
    path.chmod(0)
    try:
        assert "cannot be read (Permission denied)" in only_problem(load_settings(workspace, home))
    finally:
        path.chmod(0o600)


def test_a_dot_claude_that_is_a_file_means_no_project_settings(places: tuple[Path, Path]) -> None:
    workspace, home = places
    (workspace / ".claude").write_text("not a folder")
    settings = load_settings(workspace, home)
    assert settings.files == () and settings.problems == ()


def test_read_settings_file_raises_a_typed_error_naming_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "settings.json", "[]")
    with pytest.raises(SettingsError) as caught:
        read_settings_file(path)
    assert caught.value.path == path and str(caught.value).startswith(str(path))
    assert read_settings_file(tmp_path / "absent.json") is None


def test_a_bad_entry_leaves_the_rest_of_the_file_counting(places: tuple[Path, Path]) -> None:
    workspace, home = places
    write(
        project_file(workspace),
        {
            "model": "kept",
            "hooks": {
                "PreToolUse": [hook("", "Bash"), hook("ok", "Bash", timeout=-5), hook("fine")],
                "Bogus": [],
            },
        },
    )
    settings = load_settings(workspace, home)
    assert commands(settings) == ["fine"] and settings.values["model"] == "kept"
    assert len(settings.problems) == 3
    assert all(p.startswith(f"{project_file(workspace)}: hooks.") for p in settings.problems)


def test_a_file_the_system_refuses_to_open_is_reported(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same as the chmod test above, for a run as root (which may read any file).
    workspace, home = places
    refused = write(project_file(workspace), {"hooks": {}})
    real_open = os.open

    def open_refusing(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path) == refused:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_refusing)
    problem = only_problem(load_settings(workspace, home))
    assert problem == f"{refused}: cannot be read (Permission denied) (the file is ignored)"


def test_user_prompt_submit_and_session_end_hooks_default_to_shorter_timeouts(
    tmp_path: Path,
) -> None:
    group = [{"hooks": [{"type": "command", "command": "true"}]}]
    data = {"hooks": {e: group for e in ("UserPromptSubmit", "SessionEnd", "PreToolUse")}}
    found, problems = hooks_in(data, tmp_path / "settings.json", "user")
    assert problems == []
    assert {h.event: h.timeout for h in found} == {
        "UserPromptSubmit": 30.0,
        "SessionEnd": 1.5,
        "PreToolUse": 600.0,
    }
