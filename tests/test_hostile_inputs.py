"""What a hostile model or a careless user can send, by class, over generated inputs.

The rule for each: whatever a tool call contains, its answer is a ``tool_result`` (an error
that says what was wrong, when it is one), the run goes on, nothing leaves the workspace, and
the conversation stays one the API accepts. ``Agent.run`` never raises because of what a
model or a user sent.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Message, ToolUseBlock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.events import Event, HookReported, PromptRefused, ToolFinished, TurnEnded
from harness.model import ScriptedModel, reply, tool_call
from harness.tools import Permissions, ResultStorage, ToolContext, Workspace, builtin_tools, tool
from harness.tools.builtins import edit_file, grep, read_file, write_file
from harness.tools.sandbox import SandboxWarning, detect_sandbox, no_sandbox
from harness.tools.shell import bash_tool
from harness.tools.storage import MAX_RESULT_CHARS
from harness.tools.workspace import BadPath, PathEscape

HOSTILE = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
FILE_TOOLS = [t for t in builtin_tools() if t.name != "bash"]  # no arbitrary commands here

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
odd_paths = st.one_of(
    st.text(max_size=40),
    st.text(max_size=10).map(lambda s: s + "\0" + s),  # a NUL byte
    st.text(max_size=10).map(lambda s: s + "\ud800"),  # a lone surrogate
    st.integers(256, 3000).map(lambda n: "a" * n),  # a name over 255 bytes
    st.integers(1100, 1500).map(lambda n: "/".join(["abc"] * n)),  # a path over 4,095 bytes
    st.sampled_from(["..", "../x", "/etc/passwd", "~", "~nobody-here/x", ".", "", "a/../../b"]),
)


class HostileModel:
    """A scripted model whose tool calls carry whatever inputs it is given.

    Requests go to a :class:`ScriptedModel`, which refuses what the API refuses; the first
    reply's tool calls then get their names and inputs swapped for the hostile ones (the SDK's
    own types, built without validation, as a gateway or a buggy model might send them).
    """

    def __init__(self, calls: Sequence[tuple[str, object]]) -> None:
        self.calls = list(calls)
        placeholders = [tool_call("placeholder") for _ in self.calls]
        self.scripted = ScriptedModel([reply(tool_calls=placeholders), reply("Done.")])

    def count_tokens(self, **kwargs: Any) -> int:
        return self.scripted.count_tokens(**kwargs)

    def create(self, **kwargs: Any) -> Message:
        message = self.scripted.create(**kwargs)
        if len(self.scripted.requests) > 1:
            return message
        content = [
            ToolUseBlock.model_construct(type="tool_use", id=block.id, name=name, input=value)
            for block, (name, value) in zip(message.content, self.calls, strict=True)
        ]
        return message.model_copy(update={"content": content})


def run_all(agent: Agent, prompt: str) -> list[Event]:
    return list(agent.run(prompt))


def assert_answered_and_valid(agent: Agent, events: list[Event]) -> None:
    assert isinstance(events[-1], TurnEnded), events[-1]
    assert m.validate(agent.messages) == []
    for message in agent.messages:
        for result in m.tool_results(message):
            content = result["content"]
            assert isinstance(content, str) and content.strip()
            assert len(content) <= MAX_RESULT_CHARS
            content.encode("utf-8")  # valid Unicode, or the SDK could not send it
            if result.get("is_error"):
                assert str(agent.workspace) not in content


# --- the loop never crashes on a tool call --------------------------------------------------


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")  # the SDK type, misused
@HOSTILE
@given(
    calls=st.lists(
        st.tuples(
            st.sampled_from([t.name for t in FILE_TOOLS]) | st.text(max_size=12),
            json_values | st.fixed_dictionaries({"path": odd_paths}),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_whatever_a_tool_call_contains_it_gets_a_result_and_the_run_goes_on(
    tmp_path_factory: pytest.TempPathFactory, calls: list[tuple[str, object]]
) -> None:
    space = tmp_path_factory.mktemp("ws")
    (space / "a.txt").write_text("hello\n")
    agent = Agent(
        HostileModel(calls),
        tools=FILE_TOOLS,
        workspace=space,
        permissions=Permissions(mode="bypass"),
        clock=FakeClock(),
    )

    events = run_all(agent, "Go.")

    assert_answered_and_valid(agent, events)
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert len(finished) == len(calls)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize("value", [["a.txt"], "not json", 42, None, '["a.txt"]'])
def test_an_input_that_is_not_an_object_is_an_error_that_says_so(
    tmp_path: Path, value: object
) -> None:
    agent = Agent(HostileModel([("read_file", value)]), tools=FILE_TOOLS, workspace=tmp_path)

    events = run_all(agent, "Read it.")

    (result,) = m.tool_results(agent.messages[2])
    assert result["is_error"] is True
    assert "was not a JSON object" in result["content"]
    assert m.tool_uses(agent.messages[1])[0]["input"] == {}  # what the API is sent back
    assert_answered_and_valid(agent, events)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_an_object_sent_as_a_json_string_is_taken_as_that_object(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    agent = Agent(
        HostileModel([("read_file", '{"path": "a.txt"}')]), tools=FILE_TOOLS, workspace=tmp_path
    )

    run_all(agent, "Read it.")

    (result,) = m.tool_results(agent.messages[2])
    assert "hello" in result["content"] and not result.get("is_error")
    assert m.tool_uses(agent.messages[1])[0]["input"] == {"path": "a.txt"}


# --- paths: every one is inside, refused clearly, or unusable, and never shows the root -----


@HOSTILE
@given(path=odd_paths)
def test_any_path_resolves_inside_or_is_refused_without_showing_the_root(
    tmp_path_factory: pytest.TempPathFactory, path: str
) -> None:
    space = Workspace(tmp_path_factory.mktemp("ws"))
    try:
        real = space.resolve(path)
    except (PathEscape, BadPath) as error:
        assert str(space.root) not in str(error)
        assert len(str(error)) < 400
    else:
        assert real == space.root or real.is_relative_to(space.root)


@HOSTILE
@given(path=odd_paths, tool=st.sampled_from(FILE_TOOLS))
def test_a_file_tool_answers_any_path_with_a_result_never_an_exception(
    tmp_path_factory: pytest.TempPathFactory, path: str, tool: Any
) -> None:
    space = tmp_path_factory.mktemp("ws")
    inputs = {
        "read_file": {"path": path},
        "write_file": {"path": path, "content": "x"},
        "edit_file": {"path": path, "old_string": "a", "new_string": "b"},
        "glob": {"pattern": "*", "path": path},
        "grep": {"pattern": "a", "path": path},
    }[tool.name]
    agent = Agent(
        ScriptedModel([reply(tool_calls=[tool_call(tool.name, inputs)]), reply("Done.")]),
        tools=FILE_TOOLS,
        workspace=space,
        permissions=Permissions(mode="bypass"),
    )

    events = run_all(agent, "Go.")

    assert_answered_and_valid(agent, events)
    assert not any(p.name == "x" for p in space.parent.iterdir())


# --- hard links: no file tool reads or writes through one ---------------------------------


@HOSTILE
@given(
    name=st.from_regex(r"[a-z]{1,8}(/[a-z]{1,8}){0,2}\.txt", fullmatch=True),
    secret=st.text(max_size=50).filter(lambda s: "\r" not in s).map(lambda s: "SECRET:" + s),
)
def test_a_hard_link_to_an_outside_file_is_neither_read_nor_written(
    tmp_path_factory: pytest.TempPathFactory, name: str, secret: str
) -> None:
    base = tmp_path_factory.mktemp("case")
    space, outside = base / "ws", base / "outside.txt"
    space.mkdir()
    outside.write_text(secret, encoding="utf-8")
    link = space / name
    link.parent.mkdir(parents=True, exist_ok=True)
    os.link(outside, link)
    context = ToolContext(workspace=Workspace(space))

    calls = [
        (read_file, {"path": name}),
        (write_file, {"path": name, "content": "overwritten"}),
        (edit_file, {"path": name, "old_string": "SECRET", "new_string": "!"}),
        (grep, {"pattern": ".", "output_mode": "content"}),
    ]
    for file_tool, arguments in calls:
        try:
            output = file_tool(arguments, context)
        except Exception as error:
            assert "hard links" in str(error), (file_tool.name, error)
        else:
            assert "SECRET:" not in str(output), (file_tool.name, output)

    assert outside.read_text(encoding="utf-8") == secret


# --- output sizes: every result is capped, whatever the tool and the arguments ---------------


@settings(max_examples=25, deadline=None)
@given(
    lines=st.integers(1, 60_000),
    width=st.integers(0, 3_000),
    limit=st.integers(1, 10**7) | st.none(),
    head_limit=st.integers(1, 10**9),
)
def test_read_and_grep_results_stay_under_the_cap_on_an_agent_built_with_defaults(
    tmp_path_factory: pytest.TempPathFactory,
    lines: int,
    width: int,
    limit: int | None,
    head_limit: int,
) -> None:
    space = tmp_path_factory.mktemp("ws")
    (space / "big.txt").write_text(("x" * width + "\n") * lines)
    read = {"path": "big.txt", "offset": 1, **({"limit": limit} if limit else {})}
    search = {"pattern": "x*", "output_mode": "content", "head_limit": head_limit}
    agent = Agent(
        ScriptedModel(
            [
                reply(tool_calls=[tool_call("read_file", read), tool_call("grep", search)]),
                reply("Done."),
            ]
        ),
        tools=FILE_TOOLS,
        workspace=space,
    )

    events = run_all(agent, "Read it all.")

    assert_answered_and_valid(agent, events)
    for result in m.tool_results(agent.messages[2]):
        assert len(result["content"]) <= MAX_RESULT_CHARS


def test_a_read_of_a_million_lines_stops_at_the_cap_and_says_where_to_go_on(
    tmp_path: Path,
) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 1_000_001)))

    output = read_file({"path": "big.txt", "offset": 1, "limit": 1_000_000}, context_in(tmp_path))

    assert isinstance(output, str) and len(output) <= MAX_RESULT_CHARS
    assert "(a read returns at most 100,000 characters)" in output
    last = int(output.rsplit("offset=", 1)[1].split(" ")[0])
    assert f"{last - 1:>6}\tline {last - 1}" in output


def test_a_line_with_no_end_is_never_read_whole(tmp_path: Path) -> None:
    with (tmp_path / "one-line.txt").open("w") as f:
        for _ in range(64):
            f.write("y" * 1_000_000)  # 64 MB, no newline

    output = read_file({"path": "one-line.txt", "offset": 1, "limit": 1}, context_in(tmp_path))

    assert isinstance(output, str)
    assert output.endswith(f"… [line cut: {64_000_000 - 2_000} more chars]")


def context_in(root: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root))


# --- grep: linear time, whatever the pattern ----------------------------------------------


@contextmanager
def watchdog(seconds: int) -> Iterator[None]:
    """Fail a test that hangs (a backtracking engine would run for minutes), not time it."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


CATASTROPHIC = ["(a+)+$", "(a|a)+$", "(a*)*b", "(a|aa)+c", "^(a+)+x", "(.*a){12}z"]


@settings(max_examples=30, deadline=None)
@given(pattern=st.sampled_from(CATASTROPHIC), n=st.integers(30, 5_000))
def test_grep_finishes_on_a_catastrophic_pattern(
    tmp_path_factory: pytest.TempPathFactory, pattern: str, n: int
) -> None:
    space = tmp_path_factory.mktemp("ws")
    (space / "a.txt").write_text("a" * n + "!\n")
    with watchdog(20):
        output = grep({"pattern": pattern, "output_mode": "count"}, context_in(space))
    assert output == "No matches found"


simple_patterns = st.lists(
    st.sampled_from(["a", "b", "ab", ".", "[ab]", "a*", "b+", "(ab|ba)", "x?", "\\d", "^", "$"]),
    min_size=1,
    max_size=5,
).map("".join)


@settings(max_examples=80, deadline=None)
@given(pattern=simple_patterns, lines=st.lists(st.text("ab1x ", max_size=12), max_size=8))
def test_grep_finds_the_lines_pythons_re_finds_for_patterns_both_engines_take(
    tmp_path_factory: pytest.TempPathFactory, pattern: str, lines: list[str]
) -> None:
    import re

    space = tmp_path_factory.mktemp("ws")
    (space / "a.txt").write_text("".join(line + "\n" for line in lines))
    expected = [f"a.txt:{i}:{line}" for i, line in enumerate(lines, 1) if re.search(pattern, line)]

    output = grep({"pattern": pattern, "output_mode": "content"}, context_in(space))

    assert output == ("\n".join(expected) if expected else "No matches found")


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?=a)b", r"(?<!x)y", "(unclosed"])
def test_a_pattern_the_engine_cannot_take_is_an_error_that_says_why(
    tmp_path: Path, pattern: str
) -> None:
    with pytest.raises(Exception, match="invalid regular expression") as caught:
        grep({"pattern": pattern}, context_in(tmp_path))
    assert "RE2" in str(caught.value)


# --- blank input from a user or a hook ----------------------------------------------------

blank = st.text(alphabet=" \t\n\r\x0b\x0c\u00a0\u2003\u3000", max_size=10)


@settings(max_examples=40, deadline=None)
@given(prompt=blank | st.text(max_size=5).map(lambda s: s + "\udc80"))
def test_a_blank_or_invalid_prompt_is_refused_before_anything_is_sent(prompt: str) -> None:
    model = ScriptedModel([reply("Hello.")])
    agent = Agent(model, workspace=Path.cwd())
    before = [dict(msg) for msg in agent.messages]

    events = run_all(agent, prompt)

    assert len(events) == 1 and isinstance(events[0], PromptRefused)
    assert model.requests == [] and agent.messages == before
    events = run_all(agent, "Now a real question.")  # and the agent still works
    assert isinstance(events[-1], TurnEnded)


@settings(max_examples=40, deadline=None)
@given(reason=blank.filter(bool))
def test_a_stop_hook_that_returns_only_whitespace_is_ignored_and_said(reason: str) -> None:
    model = ScriptedModel([reply("Finished."), reply("Finished again.")])
    agent = Agent(model, workspace=Path.cwd(), stop_hooks=[lambda _reply: reason])

    events = run_all(agent, "Do it.")

    assert isinstance(events[-1], TurnEnded)
    ignored = [e for e in events if isinstance(e, HookReported) and e.outcome == "ignored"]
    assert len(ignored) == 1 and "whitespace" in ignored[0].detail
    assert m.validate(agent.messages) == [] and len(model.requests) == 1


# --- the shell tool cannot see the harness's process, nor link files in ----------------------

sandboxed = pytest.mark.skipif(
    not detect_sandbox().active, reason=f"this machine has {detect_sandbox().detail}"
)

PARENT_LOOKUPS = [
    "cat /proc/$PPID/environ",
    "cat /proc/1/environ",
    "cat /proc/*/environ",
    "for p in /proc/[0-9]*; do cat $p/environ; done",
    "ps -eo pid= | while read p; do cat /proc/$p/environ; done",
    "cat /proc/self/../$PPID/environ",
]


SECRET = "sk-ant-test-" + "7" * 20

CHILD = """
import json, sys
from harness.tools import ToolContext, Workspace
from harness.tools.sandbox import no_sandbox
from harness.tools.shell import bash, bash_tool
context = ToolContext(workspace=Workspace(sys.argv[1]))
commands = json.loads(sys.argv[2])
unsandboxed = bash_tool(no_sandbox("off for this test"))
outputs = {c: bash({"command": c + " 2>/dev/null | tr '\\\\0' '\\\\n'"}, context) for c in commands}
parent = "tr '\\\\0' '\\\\n' < /proc/$PPID/environ"
outputs["unsandboxed"] = unsandboxed({"command": parent}, context)
print(json.dumps(outputs))
"""


@pytest.fixture(scope="module")
def lookups(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Every lookup, run by the bash tool of a fresh Python process whose environment holds a
    key, as the harness's does when ANTHROPIC_API_KEY is set (os.environ set later would not
    show in /proc/<pid>/environ: that file is the environment a process started with)."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            str(tmp_path_factory.mktemp("ws")),
            json.dumps(PARENT_LOOKUPS),
        ],
        env={**os.environ, "ANTHROPIC_API_KEY": SECRET},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    outputs: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return outputs


@sandboxed
@pytest.mark.parametrize("command", PARENT_LOOKUPS)
def test_no_command_finds_the_harnesss_key_in_proc(lookups: dict[str, str], command: str) -> None:
    assert SECRET not in lookups[command]
    if "environ" in command and "$PPID" not in command:  # it did read environments: its own
        assert "PATH=" in lookups[command]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_without_a_sandbox_the_parents_environment_is_readable(lookups: dict[str, str]) -> None:
    """The failure the sandbox exists for, shown on purpose (chapter 02 shows it first)."""
    assert f"ANTHROPIC_API_KEY={SECRET}" in lookups["unsandboxed"]


@sandboxed
@given(name=st.from_regex(r"[a-z]{1,10}\.txt", fullmatch=True))
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
def test_a_sandboxed_command_cannot_hard_link_an_outside_file_into_the_workspace(
    tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    base = tmp_path_factory.mktemp("case")
    space = base / "ws"
    space.mkdir()
    (base / "secret.txt").write_text("password=hunter2\n")

    output = bash_tool()({"command": f"ln ../secret.txt {name}"}, context_in(space))

    assert "Invalid cross-device link" in str(output)
    assert not (space / name).exists()


def test_the_sandbox_is_chosen_once_and_says_what_it_is() -> None:
    sandbox = detect_sandbox()
    assert detect_sandbox() is sandbox
    assert sandbox.name in ("unshare", "none") and sandbox.detail


@sandboxed
def test_a_sandboxed_command_still_works_in_its_workspace(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")

    output = bash_tool()({"command": "cat a.txt && pwd && echo $HOME"}, context_in(tmp_path))

    assert output == f"hello\n{tmp_path.resolve()}\n{tmp_path.resolve()}"


# --- every result has a ceiling, and storage cannot be redirected ----------------------------


class SizeInput(BaseModel):
    n: int


@settings(max_examples=20, deadline=None)
@given(n=st.integers(0, 3_000_000), spill=st.booleans(), broken_storage=st.booleans())
def test_no_tool_result_is_over_the_ceiling_whatever_the_tool_returns(
    tmp_path_factory: pytest.TempPathFactory, n: int, spill: bool, broken_storage: bool
) -> None:
    base = tmp_path_factory.mktemp("case")

    @tool(SizeInput, name="produce", read_only=True, spill=spill)
    def produce(args: SizeInput, context: ToolContext) -> str:
        """Return n characters."""
        return "z" * args.n

    (base / "not-a-folder").write_text("a file where the storage folder should be")
    storage = ResultStorage(base / ("not-a-folder" if broken_storage else "results"))
    agent = Agent(
        ScriptedModel([reply(tool_calls=[tool_call("produce", n=n)]), reply("Done.")]),
        tools=[produce],
        workspace=base,
        storage=storage,
    )

    events = run_all(agent, "Produce.")

    assert_answered_and_valid(agent, events)
    (result,) = m.tool_results(agent.messages[2])
    assert len(result["content"]) <= MAX_RESULT_CHARS
    if broken_storage and spill and n > storage.threshold:
        assert result["content"].startswith("[The full output could not be stored (")


def test_an_agent_stores_big_results_outside_its_workspace_by_default(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("needle\n" * 20_000)
    agent = Agent(
        ScriptedModel(
            [
                reply(
                    tool_calls=[
                        tool_call("grep", pattern="needle", output_mode="content", head_limit=10**6)
                    ]
                ),
                reply("Found them."),
            ]
        ),
        tools=FILE_TOOLS,
        workspace=tmp_path,
    )

    run_all(agent, "Find the needles.")

    (result,) = m.tool_results(agent.messages[2])
    assert "Full output saved to: @tool-results/toolu_0001.txt" in result["content"]
    assert not agent.tools.storage.directory.is_relative_to(tmp_path)
    assert list(tmp_path.iterdir()) == [tmp_path / "big.txt"]


def test_without_a_sandbox_the_shell_tool_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.tools import sandbox as sandbox_module

    monkeypatch.setattr(sandbox_module, "_warned", set())
    monkeypatch.setattr(
        "harness.tools.shell.detect_sandbox", lambda: no_sandbox("this test has none")
    )
    tool_ = bash_tool()

    with pytest.warns(SandboxWarning, match="this test has none") as caught:
        tool_({"command": "true"}, context_in(tmp_path))
        tool_({"command": "true"}, context_in(tmp_path))

    assert len(caught) == 1
    assert "ANTHROPIC_API_KEY" in str(caught[0].message)
