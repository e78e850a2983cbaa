"""Settings files under generated input: whatever a settings file holds, loading never raises,
every problem names its file, every hook that comes out is well formed, and exactly the valid
command entries become hooks.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.settings.files import load_settings, merge_settings
from harness.settings.schema import (
    HARNESS_EVENTS,
    HOOK_EVENTS,
    MATCHER_EVENTS,
    MAX_TIMEOUT,
    ConfiguredHook,
    hooks_in,
    matcher_matches,
    matcher_problem,
)

json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_leaves,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=30,
)
event_names = st.sampled_from([*HOOK_EVENTS, "Bogus", "", "pretooluse"])
matchers = st.sampled_from(["", "*", "Bash", "Edit|Write", "Notebook.*", "(", "[a-", "a{2,1}"])

handler = st.fixed_dictionaries(
    {"type": st.sampled_from(["command", "prompt", "http", "agent", "bash", 1])},
    optional={
        "command": st.text(max_size=15) | json_leaves,
        "timeout": json_leaves | st.sampled_from([1e300, 5, 0.5, -1, 0]),
        "async": st.booleans(),
        "shell": st.sampled_from(["bash", "powershell"]),
        "if": st.text(max_size=5),
    },
)
group = st.fixed_dictionaries(
    {"hooks": st.lists(handler | json_values, max_size=4) | json_leaves},
    optional={"matcher": matchers | json_leaves},
)
hooks_sections = st.dictionaries(
    event_names, st.lists(group | json_leaves, max_size=3) | json_values, max_size=4
)
settings_objects = st.fixed_dictionaries(
    {},
    optional={
        "hooks": hooks_sections | json_values,
        "disableAllHooks": st.booleans() | json_leaves,
        "model": json_values,
    },
)


def well_formed(hook: ConfiguredHook, source: Path) -> bool:
    return (
        hook.event in HARNESS_EVENTS
        and isinstance(hook.command, str)
        and hook.command.strip() != ""
        and 0 < hook.timeout <= MAX_TIMEOUT
        and math.isfinite(hook.timeout)
        and hook.source == source
        and (
            hook.event not in {"PreToolUse", "PostToolUse"} or matcher_problem(hook.matcher) is None
        )
    )


def valid_command(entry: Any) -> bool:
    """The oracle: whether one handler entry should become a hook (as the docs describe it)."""
    if not isinstance(entry, dict) or entry.get("type") != "command":
        return False
    command, timeout = entry.get("command"), entry.get("timeout")
    if not isinstance(command, str) or not command.strip() or "\x00" in command:
        return False
    if "if" in entry or entry.get("shell", "bash") != "bash":
        return False
    if timeout is None:
        return "timeout" not in entry or entry["timeout"] is None
    return not isinstance(timeout, bool) and isinstance(timeout, int | float) and timeout > 0


def expected_count(section: Any) -> int:
    if not isinstance(section, dict):
        return 0
    count = 0
    for event, groups in section.items():
        if event not in HARNESS_EVENTS or not isinstance(groups, list):
            continue
        for entry in groups:
            if not isinstance(entry, dict) or not isinstance(entry.get("hooks"), list):
                continue
            matcher = entry.get("matcher", "")
            if not isinstance(matcher, str):
                continue
            if event in MATCHER_EVENTS and matcher_problem(matcher) is not None:
                continue
            count += sum(valid_command(h) for h in entry["hooks"])
    return count


@given(data=settings_objects)
def test_exactly_the_valid_command_entries_become_hooks(data: dict[str, Any]) -> None:
    source = Path("/p/.claude/settings.json")
    found, problems = hooks_in(data, source, "project")
    assert len(found) == expected_count(data.get("hooks"))
    assert all(well_formed(h, source) for h in found)
    assert all(p.startswith(f"{source}: hooks") for p in problems)


@given(data=settings_objects | json_values)
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
def test_loading_any_json_never_raises_and_names_the_file_in_each_problem(data: object) -> None:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        path = workspace / ".claude" / "settings.json"
        path.parent.mkdir()
        path.write_text(json.dumps(data), encoding="utf-8")
        loaded = load_settings(workspace, None)
        assert all(p.startswith(f"{path}: ") for p in loaded.problems)
        assert all(well_formed(h, path) for h in loaded.hooks)
        assert (len(loaded.files) == 1) == isinstance(data, dict)


@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
@settings(max_examples=60)
def test_loading_any_bytes_never_raises(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        path = workspace / ".claude" / "settings.local.json"
        path.parent.mkdir()
        path.write_bytes(raw)
        loaded = load_settings(workspace, None)
        assert len(loaded.files) + len(loaded.problems) >= 1
        assert all(p.startswith(f"{path}: ") for p in loaded.problems)


@given(matcher=st.text(max_size=30), value=st.text(max_size=30))
def test_matching_never_raises_and_a_valid_matcher_is_reported_valid(
    matcher: str, value: str
) -> None:
    assert isinstance(matcher_matches(matcher, value), bool)
    assert matcher_problem(matcher) is None or isinstance(matcher_problem(matcher), str)


@given(names=st.lists(st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,10}", fullmatch=True), min_size=1))
def test_a_list_of_names_matches_each_name_and_nothing_else(names: list[str]) -> None:
    matcher = "|".join(names)
    assert all(matcher_matches(matcher, n) for n in names)
    assert not matcher_matches(matcher, names[0] + "X") or names[0] + "X" in names


@given(files=st.lists(st.dictionaries(st.text(max_size=5), json_values, max_size=4), max_size=4))
def test_merging_files_concatenates_their_hooks_in_file_order(files: list[dict[str, Any]]) -> None:
    merged: dict[str, Any] = {}
    for number, data in enumerate(files):
        data = {**data, "hooks": {"Stop": [{"file": number}]}}
        merged = merge_settings(merged, data)
    assert merged.get("hooks", {}).get("Stop", []) == [{"file": n} for n in range(len(files))]
    assert merge_settings(merged, {}) == merged == merge_settings({}, merged)
