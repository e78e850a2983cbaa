"""Claude Code's MCP configuration: ``.mcp.json`` and ``~/.claude.json``, read as written.

The ``DOCS_*`` files are the examples of https://code.claude.com/docs/en/mcp verbatim (the
page's copy at github.com/thevibeworks/claude-code-docs, commit 3f1ef7c2, file
``content/en/docs/claude-code/mcp.md``); behaviour is Claude Code's
(github.com/Gitlawb/openclaude at 421f4599, ``src/services/mcp/config.ts``,
``envExpansion.ts``, ``types.ts``) except where ``harness.mcp.config`` says otherwise.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.mcp.config import (
    ConfigProblem,
    McpConfig,
    ServerConfig,
    expand_variables,
    load_mcp_config,
    project_fingerprint,
)

# "From an mcpServers JSON block"
DOCS_NPX = """{
  "mcpServers": {
    "example": {
      "command": "npx",
      "args": ["-y", "@example/mcp-server"]
    }
  }
}"""

# "Project scope": the file `claude mcp add --scope project` writes
DOCS_PROJECT_HTTP = """{
  "mcpServers": {
    "shared-server": {
      "type": "http",
      "url": "https://example.com/mcp"
    }
  }
}"""

# "Environment variable expansion in .mcp.json"
DOCS_EXPANSION = """{
  "mcpServers": {
    "api-server": {
      "type": "http",
      "url": "${API_BASE_URL:-https://api.example.com}/mcp",
      "headers": {
        "Authorization": "Bearer ${API_KEY}"
      }
    }
  }
}"""

# "Example plugin MCP configuration" (a plugin's .mcp.json; here as a project's)
DOCS_PLUGIN = """{
  "mcpServers": {
    "database-tools": {
      "command": "${CLAUDE_PLUGIN_ROOT}/servers/db-server",
      "args": ["--config", "${CLAUDE_PLUGIN_ROOT}/config.json"],
      "env": {
        "DB_URL": "${DB_URL}"
      }
    }
  }
}"""

# "Use Claude Code as an MCP server" (claude_desktop_config.json, the same shape)
DOCS_STDIO = """{
  "mcpServers": {
    "claude-code": {
      "type": "stdio",
      "command": "claude",
      "args": ["mcp", "serve"],
      "env": {}
    }
  }
}"""

# "Exempt a server from deferral"
DOCS_ALWAYS_LOAD = """{
  "mcpServers": {
    "core-tools": {
      "type": "http",
      "url": "https://mcp.example.com/mcp",
      "alwaysLoad": true
    }
  }
}"""

# "Local scope": what `claude mcp add` writes into ~/.claude.json from /path/to/your/project
DOCS_LOCAL = """{
  "projects": {
    "/path/to/your/project": {
      "mcpServers": {
        "stripe": {
          "type": "http",
          "url": "https://mcp.stripe.com"
        }
      }
    }
  }
}"""


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    workspace, home = tmp_path / "project", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    return workspace, home


def write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def stdio(command: str = "run", *args: str, **env: str) -> dict[str, Any]:
    return {"command": command, "args": list(args), "env": env}


def reasons(config: McpConfig) -> list[str]:
    return [str(p) for p in config.problems]


# --- the docs' examples ---------------------------------------------------------------


def test_the_docs_npx_block_is_a_stdio_server(places: tuple[Path, Path]) -> None:
    workspace, home = places
    source = write(workspace / ".mcp.json", DOCS_NPX)
    config = load_mcp_config(workspace, home, environ={})
    assert config.servers == (
        ServerConfig("example", "npx", ("-y", "@example/mcp-server"), {}, "project", source),
    )
    assert config.problems == ()


def test_the_docs_stdio_entry_with_an_explicit_type_loads(places: tuple[Path, Path]) -> None:
    workspace, home = places
    write(workspace / ".mcp.json", DOCS_STDIO)
    server = load_mcp_config(workspace, home, environ={}).get("claude-code")
    assert server is not None
    assert (server.command, server.args, server.env) == ("claude", ("mcp", "serve"), {})


@pytest.mark.parametrize("text", [DOCS_PROJECT_HTTP, DOCS_EXPANSION, DOCS_ALWAYS_LOAD])
def test_the_docs_remote_servers_are_reported_as_unsupported(
    places: tuple[Path, Path], text: str
) -> None:
    workspace, home = places
    write(workspace / ".mcp.json", text)
    config = load_mcp_config(workspace, home, environ={})
    assert config.servers == ()
    [problem] = config.problems
    assert "has type 'http'; only stdio servers are supported" in str(problem)


def test_the_docs_plugin_entry_loads_with_its_missing_variables_reported(
    places: tuple[Path, Path],
) -> None:
    workspace, home = places
    write(workspace / ".mcp.json", DOCS_PLUGIN)
    config = load_mcp_config(workspace, home, environ={})
    server = config.get("database-tools")
    assert server is not None  # Claude Code still loads it, with the text as written
    assert server.command == "${CLAUDE_PLUGIN_ROOT}/servers/db-server"
    assert server.env == {"DB_URL": "${DB_URL}"}
    [problem] = config.problems
    assert problem.server == "database-tools"
    assert "missing environment variables: CLAUDE_PLUGIN_ROOT, DB_URL" in problem.reason


def test_the_docs_local_scope_entry_is_found_under_the_projects_path(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    workspace = tmp_path / "path" / "to" / "your" / "project"
    workspace.mkdir(parents=True)
    text = DOCS_LOCAL.replace("/path/to/your/project", workspace.resolve().as_posix())
    write(home / ".claude.json", text)
    config = load_mcp_config(workspace, home, environ={})
    [problem] = config.problems
    assert problem.server == "stripe" and "type 'http'" in problem.reason


# --- scopes ---------------------------------------------------------------------------


def claude_json(home: Path, workspace: Path, user: dict[str, Any], local: dict[str, Any]) -> None:
    key = workspace.resolve().as_posix()
    write(home / ".claude.json", {"mcpServers": user, "projects": {key: {"mcpServers": local}}})


def test_local_beats_project_beats_user_by_name(places: tuple[Path, Path]) -> None:
    workspace, home = places
    claude_json(
        home,
        workspace,
        user={"a": stdio("user-a"), "b": stdio("user-b"), "c": stdio("user-c")},
        local={"a": stdio("local-a")},
    )
    write(workspace / ".mcp.json", {"mcpServers": {"a": stdio("proj-a"), "b": stdio("proj-b")}})
    config = load_mcp_config(workspace, home, environ={})
    assert [(s.name, s.command, s.scope) for s in config.servers] == [
        ("a", "local-a", "local"),
        ("b", "proj-b", "project"),
        ("c", "user-c", "user"),
    ]


def test_the_whole_entry_of_the_winning_scope_is_used_fields_are_not_merged(
    places: tuple[Path, Path],
) -> None:
    workspace, home = places
    claude_json(home, workspace, user={"a": stdio("u", "--x", KEY="1")}, local={})
    write(workspace / ".mcp.json", {"mcpServers": {"a": {"command": "p"}}})
    server = load_mcp_config(workspace, home, environ={}).get("a")
    assert server == ServerConfig("a", "p", (), {}, "project", workspace / ".mcp.json")


def test_a_remote_entry_at_a_higher_scope_hides_a_stdio_one_below(
    places: tuple[Path, Path],
) -> None:
    workspace, home = places
    claude_json(home, workspace, user={"a": stdio("u")}, local={})
    write(workspace / ".mcp.json", {"mcpServers": {"a": {"type": "sse", "url": "https://x"}}})
    config = load_mcp_config(workspace, home, environ={})
    assert config.servers == ()
    assert "type 'sse'" in reasons(config)[0]


def test_a_broken_entry_drops_only_itself_and_a_lower_scope_entry_stands(
    places: tuple[Path, Path],
) -> None:
    workspace, home = places
    claude_json(home, workspace, user={"a": stdio("u")}, local={})
    write(workspace / ".mcp.json", {"mcpServers": {"a": {"command": 3}, "b": stdio("b")}})
    config = load_mcp_config(workspace, home, environ={})
    assert [(s.name, s.scope) for s in config.servers] == [("a", "user"), ("b", "project")]
    assert reasons(config) == [
        f"{workspace / '.mcp.json'}: server 'a': mcpServers.a.command must be a string, "
        "not a number"
    ]


def test_without_a_home_only_the_project_file_is_read(places: tuple[Path, Path]) -> None:
    workspace, _ = places
    write(workspace / ".mcp.json", DOCS_NPX)
    assert [s.name for s in load_mcp_config(workspace, None, environ={}).servers] == ["example"]


def test_no_files_at_all_is_no_servers_and_no_problems(places: tuple[Path, Path]) -> None:
    workspace, home = places
    assert load_mcp_config(workspace, home, environ={}) == McpConfig()


def test_a_claude_json_without_this_project_gives_only_user_servers(
    places: tuple[Path, Path],
) -> None:
    workspace, home = places
    write(home / ".claude.json", {"mcpServers": {"u": stdio()}, "projects": {"/else": {}}})
    assert [s.scope for s in load_mcp_config(workspace, home, environ={}).servers] == ["user"]


def test_null_mcp_servers_in_claude_json_is_none_as_in_claude_code(
    places: tuple[Path, Path],
) -> None:
    workspace, home = places
    key = workspace.resolve().as_posix()
    write(home / ".claude.json", {"mcpServers": None, "projects": {key: {"mcpServers": None}}})
    assert load_mcp_config(workspace, home, environ={}) == McpConfig()


def test_a_server_config_can_be_a_set_member() -> None:
    server = ServerConfig("a", "x", ("1",), {"K": "v"})
    assert {server, ServerConfig("a", "x", ("1",), {"K": "v"})} == {server}


def test_unknown_keys_are_ignored_as_zod_strips_them(places: tuple[Path, Path]) -> None:
    workspace, home = places
    entry = {**stdio("x"), "alwaysLoad": True, "timeout": 5, "comment": ["anything"]}
    write(workspace / ".mcp.json", {"mcpServers": {"a": entry}, "other": 1})
    config = load_mcp_config(workspace, home, environ={})
    assert [s.command for s in config.servers] == ["x"] and config.problems == ()


# --- environment expansion ------------------------------------------------------------


def test_a_set_variable_is_replaced() -> None:
    assert expand_variables("${HOME}/bin", {"HOME": "/h"}) == ("/h/bin", [])


def test_a_default_is_used_when_the_variable_is_unset() -> None:
    assert expand_variables("${PORT:-8080}", {}) == ("8080", [])


def test_an_empty_variable_is_used_as_it_is_not_replaced_by_the_default() -> None:
    assert expand_variables("[${X:-d}]", {"X": ""}) == ("[]", [])


def test_the_default_runs_to_the_end_past_a_second_separator() -> None:
    assert expand_variables("${A:-x:-y}", {}) == ("x:-y", [])


def test_a_missing_variable_stays_as_written_and_is_named_once() -> None:
    assert expand_variables("${K} ${K} ${J}", {}) == ("${K} ${K} ${J}", ["K", "J"])


def test_text_that_is_not_a_reference_is_left_alone() -> None:
    assert expand_variables("$HOME ${ } {X} $${", {"HOME": "h", " ": "space"}) == (
        "$HOME space {X} $${",
        [],
    )


def test_command_args_and_env_values_are_expanded(places: tuple[Path, Path]) -> None:
    workspace, home = places
    entry = stdio("${BIN}/srv", "--root", "${ROOT:-.}", TOKEN="${TOKEN}")
    write(workspace / ".mcp.json", {"mcpServers": {"s": entry}})
    environ = {"BIN": "/opt", "TOKEN": "t0k"}
    server = load_mcp_config(workspace, home, environ=environ).get("s")
    assert server is not None
    assert (server.command, server.args, server.env) == (
        "/opt/srv",
        ("--root", "."),
        {"TOKEN": "t0k"},
    )


def test_the_environment_defaults_to_the_process_environment(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, home = places
    monkeypatch.setenv("HARNESS_TEST_MCP_BIN", "/from/env")
    write(workspace / ".mcp.json", {"mcpServers": {"s": stdio("${HARNESS_TEST_MCP_BIN}")}})
    server = load_mcp_config(workspace, home).get("s")
    assert server is not None and server.command == "/from/env"


# --- hostile files --------------------------------------------------------------------


def one_problem(workspace: Path, home: Path) -> ConfigProblem:
    config = load_mcp_config(workspace, home, environ={})
    assert config.servers == ()
    [problem] = config.problems
    assert "\n" not in str(problem)
    return problem


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must hold a JSON object, not an array"),
        ('"text"', "must hold a JSON object, not a string"),
        ('{"mcpServers": NaN}', "not valid JSON"),
        ("{}", "has no mcpServers object"),
        ('{"mcpServers": []}', "mcpServers must be an object, not an array"),
        ('{"mcpServers": {"a": "npx"}}', "mcpServers.a must be an object, not a string"),
        ('{"mcpServers": {"a": {}}}', "mcpServers.a.command must be a string, not null"),
        ('{"mcpServers": {"a": {"command": ""}}}', "mcpServers.a.command cannot be empty"),
        ('{"mcpServers": {"a": {"command": "x", "args": "-v"}}}', "args must be an array"),
        (
            '{"mcpServers": {"a": {"command": "x", "args": ["ok", 2]}}}',
            "args[1] must be a string, not a number",
        ),
        ('{"mcpServers": {"a": {"command": "x", "env": ["A=1"]}}}', "env must be an object"),
        ('{"mcpServers": {"a": {"command": "x", "env": {"A": 1}}}}', "env.A must be a string"),
        (
            '{"mcpServers": {"a": {"command": "x", "env": {"A=B": "1"}}}}',
            "which no environment can hold",
        ),
        ('{"mcpServers": {"a": {"command": "x\\u0000y"}}}', "NUL character"),
        (
            '{"mcpServers": {"a": {"type": "carrier-pigeon", "command": "x"}}}',
            'not "carrier-pigeon"',
        ),
        ('{"mcpServers": {"a": {"type": 7, "command": "x"}}}', "type must be one of stdio"),
        ('{"mcpServers": {"": {"command": "x"}}}', "has an empty name"),
    ],
)
def test_a_bad_project_file_is_one_problem_never_an_exception(
    places: tuple[Path, Path], content: str, says: str
) -> None:
    workspace, home = places
    write(workspace / ".mcp.json", content)
    problem = one_problem(workspace, home)
    assert says in problem.reason
    assert problem.source == workspace / ".mcp.json"


def test_a_server_name_too_long_for_its_tools_names_is_refused(places: tuple[Path, Path]) -> None:
    workspace, home = places
    write(workspace / ".mcp.json", {"mcpServers": {"s" * 121: stdio(), "t" * 120: stdio()}})
    config = load_mcp_config(workspace, home, environ={})
    assert [s.name for s in config.servers] == ["t" * 120]
    assert "longer than the 128 the API accepts" in reasons(config)[0]


def test_a_name_with_other_characters_is_kept_as_claude_code_normalizes_it(
    places: tuple[Path, Path],
) -> None:
    workspace, home = places
    write(workspace / ".mcp.json", {"mcpServers": {"my.server": stdio()}})
    assert [s.name for s in load_mcp_config(workspace, home, environ={}).servers] == ["my.server"]


def test_the_second_of_two_servers_that_normalize_alike_is_not_started(
    places: tuple[Path, Path],
) -> None:
    workspace, home = places
    write(workspace / ".mcp.json", {"mcpServers": {"my.server": stdio(), "my_server": stdio()}})
    config = load_mcp_config(workspace, home, environ={})
    assert [s.name for s in config.servers] == ["my.server"]
    assert "same tool names as server 'my.server'" in reasons(config)[0]


def test_a_folder_named_mcp_json_is_a_problem(places: tuple[Path, Path]) -> None:
    workspace, home = places
    (workspace / ".mcp.json").mkdir()
    assert "folder" in one_problem(workspace, home).reason


def test_a_file_that_is_not_utf8_is_a_problem(places: tuple[Path, Path]) -> None:
    workspace, home = places
    (workspace / ".mcp.json").write_bytes(b'{"mcpServers": {"\xff": {}}}')
    assert "UTF-8" in one_problem(workspace, home).reason


def test_a_huge_file_is_a_problem_and_is_not_read_whole(places: tuple[Path, Path]) -> None:
    workspace, home = places
    with (workspace / ".mcp.json").open("wb") as f:
        f.truncate(8 * 1024 * 1024)
    assert "bytes" in one_problem(workspace, home).reason


def test_a_symbolic_link_loop_is_a_problem(places: tuple[Path, Path]) -> None:
    workspace, home = places
    (workspace / ".mcp.json").symlink_to(workspace / "loop")
    (workspace / "loop").symlink_to(workspace / ".mcp.json")
    assert "cannot be read" in one_problem(workspace, home).reason


def test_a_bad_claude_json_is_a_problem_and_the_project_still_loads(
    places: tuple[Path, Path],
) -> None:
    workspace, home = places
    write(home / ".claude.json", "{oops")
    write(workspace / ".mcp.json", DOCS_NPX)
    config = load_mcp_config(workspace, home, environ={})
    assert [s.name for s in config.servers] == ["example"]
    assert [p.source for p in config.problems] == [home / ".claude.json"]


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"mcpServers": "x"}, "mcpServers must be an object, not a string"),
        ({"projects": []}, "projects must be an object, not an array"),
        ({"projects": {"KEY": 3}}, "must be an object, not a number"),
        ({"projects": {"KEY": {"mcpServers": [1]}}}, "].mcpServers must be an object"),
    ],
)
def test_wrong_shapes_in_claude_json_are_problems(
    places: tuple[Path, Path], data: dict[str, Any], says: str
) -> None:
    workspace, home = places
    text = json.dumps(data).replace("KEY", workspace.resolve().as_posix())
    write(home / ".claude.json", text)
    problem = one_problem(workspace, home)
    assert says in problem.reason and problem.source == home / ".claude.json"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["type", "command", "args", "env", "x", ""]) | st.text(max_size=4),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)
entries = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["stdio", "http", "bogus"]) | json_values,
        "command": st.text(max_size=8) | json_values,
        "args": st.lists(st.text(max_size=6) | json_values, max_size=3) | json_values,
        "env": st.dictionaries(st.text(max_size=4), st.text(max_size=6) | json_values, max_size=3)
        | json_values,
    },
)
files = (
    st.fixed_dictionaries(
        {"mcpServers": st.dictionaries(st.text(max_size=6), entries | json_values, max_size=4)}
    )
    | json_values
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(project=files, user=files, raw=st.binary(max_size=40), use_raw=st.booleans())
def test_generated_files_give_valid_servers_or_problems_never_exceptions(
    project: object, user: object, raw: bytes, use_raw: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        workspace, home = Path(folder, "w"), Path(folder, "h")
        workspace.mkdir()
        home.mkdir()
        if use_raw:
            (workspace / ".mcp.json").write_bytes(raw)
        else:
            write(workspace / ".mcp.json", json.dumps(project))
        write(
            home / ".claude.json",
            json.dumps({"mcpServers": user} if isinstance(user, dict) else user),
        )
        config = load_mcp_config(workspace, home, environ={"A": "1"})
    names = [s.name for s in config.servers]
    assert len(names) == len(set(names))
    for server in config.servers:
        assert server.command and isinstance(server.command, str)
        assert all(isinstance(a, str) and "\0" not in a for a in server.args)
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in server.env.items())
    for problem in config.problems:
        assert "\n" not in str(problem)


# --- the fingerprint ------------------------------------------------------------------


def config_of(*servers: ServerConfig) -> McpConfig:
    return McpConfig(servers=servers)


def test_the_fingerprint_is_stable_and_ignores_order() -> None:
    a, b = ServerConfig("a", "x"), ServerConfig("b", "y", ("1",), {"K": "v"})
    assert project_fingerprint(config_of(a, b)) == project_fingerprint(config_of(b, a))
    assert len(project_fingerprint(config_of(a))) == 64


@pytest.mark.parametrize(
    "changed",
    [
        ServerConfig("a", "other"),
        ServerConfig("a", "x", ("--flag",)),
        ServerConfig("a", "x", (), {"K": "v"}),
        ServerConfig("renamed", "x"),
    ],
)
def test_the_fingerprint_changes_when_what_would_run_changes(changed: ServerConfig) -> None:
    before = project_fingerprint(config_of(ServerConfig("a", "x")))
    assert project_fingerprint(config_of(changed)) != before


def test_the_fingerprint_ignores_user_and_local_servers() -> None:
    project = ServerConfig("a", "x")
    mine = ServerConfig("b", "y", scope="user")
    local = ServerConfig("c", "z", scope="local")
    assert project_fingerprint(config_of(project, mine, local)) == project_fingerprint(
        config_of(project)
    )


def test_the_fingerprint_of_a_real_file_changes_when_the_file_does(
    places: tuple[Path, Path],
) -> None:
    workspace, home = places
    write(workspace / ".mcp.json", DOCS_NPX)
    before = project_fingerprint(load_mcp_config(workspace, home, environ={}))
    write(workspace / ".mcp.json", DOCS_NPX.replace("-y", "--yes"))
    assert project_fingerprint(load_mcp_config(workspace, home, environ={})) != before


def test_problems_read_as_one_line_naming_file_and_server() -> None:
    problem = ConfigProblem(Path("/p/.mcp.json"), "s", "bad\nthing")
    assert str(problem) == "/p/.mcp.json: server 's': bad thing"
    assert str(ConfigProblem(Path("f"), "", "x")) == "f: x"


def test_os_environ_is_not_changed(places: tuple[Path, Path]) -> None:
    workspace, home = places
    before = dict(os.environ)
    write(workspace / ".mcp.json", DOCS_PLUGIN)
    load_mcp_config(workspace, home)
    assert dict(os.environ) == before
