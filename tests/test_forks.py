"""Forked subagents (chapter 10): siblings share the parent's cached prefix, byte for byte.

Four sibling forks started from one parent reply (through the ``fork`` tool, in parallel
threads) or from code (``fork(parent, directive)``) must send requests that equal the first
sibling's up to the directive's block (``prefix_report`` and the offset of that block in
``serialise``), and each must read at least 90 % of its prompt from the cache simulator.
The naive fork of ``harness.notebook.subagents`` (a system prompt rebuilt per sibling) must
keep failing: it diverges at the system prompt and reads only the tools from the cache.
A fork cannot change its parent (messages, tool results, tools), cannot fork again, never
compacts, and answers every pending call of the parent's reply with the same placeholder.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.compaction.auto import AutoCompact
from harness.fork import FORK_PLACEHOLDER
from harness.loop import AgentConfig, BaseAgent, Plugin, Rewrite
from harness.model import Request, ScriptedModel, reply, said, tool_call
from harness.model.scripted import Reply
from harness.notebook.subagents import naive_fork
from harness.prompt import PromptCaching
from harness.subagents import Fork, Subagent, fork, prefix_report, serialise
from harness.tools.builtins import read_file, write_file

AREAS = "ABCD"
DIRECTIVES = [f"Review area {k} of retry.py for off-by-one bugs." for k in AREAS]
SYSTEM = "You are the parent agent of a code review. Read carefully and report bugs. " * 12
CACHE_SHARE = 0.9  # issue 15: each sibling reads at least 90 % of its prompt from the cache


# --- a parent with a conversation well over the cache minimum -----------------------------


def project(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    # About 5,000 tokens: the prefix is well over the 1,024-token cache minimum.
    (ws / "retry.py").write_text("def retry(n):\n    delay = 2 ** n\n    return delay\n" * 200)
    (ws / "notes.md").write_text("# notes\n")
    return ws


def make_parent(
    tmp_path: Path,
    steps: list[Reply],
    *,
    plugins: Iterable[Plugin] = (),
    max_turns: int = 10,
    tool: bool = True,
) -> tuple[Agent, ScriptedModel, Subagent | None]:
    clock = FakeClock()
    model = ScriptedModel(steps, clock=clock)
    parent = Agent(
        model,
        tools=[read_file, write_file],
        workspace=project(tmp_path),
        clock=clock,
        system=SYSTEM,
        plugins=[PromptCaching(), *plugins],
        approver=lambda request: True,  # the parent may write: a fork's refusals are its own
        config=AgentConfig(max_turns=max_turns),
    )
    sub = Subagent(name="fork", fork=True, max_turns=3).attach(parent) if tool else None
    return parent, model, sub


def fork_calls(extra: Iterable[Any] = ()) -> Reply:
    calls = [
        tool_call("fork", description=f"area {k}", prompt=d)
        for k, d in zip(AREAS, DIRECTIVES, strict=True)
    ]
    return reply("Splitting the review four ways.", tool_calls=[*calls, *extra])


def forked_through_the_tool(
    tmp_path: Path,
    *,
    child_steps: dict[str, list[Reply]] | None = None,
    plugins: Iterable[Plugin] = (),
    extra_calls: Iterable[Any] = (),
) -> tuple[Agent, ScriptedModel, Subagent]:
    """The parent reads retry.py, then one reply starts four forks (in parallel)."""
    parent, model, sub = make_parent(
        tmp_path,
        [
            reply(tool_calls=[tool_call("read_file", path="retry.py")]),
            fork_calls(extra_calls),
            reply("All four areas reviewed."),
        ],
        plugins=plugins,
    )
    for k, d in zip(AREAS, DIRECTIVES, strict=True):
        steps = (child_steps or {}).get(k) or [reply(f"Area {k}: no bugs found.")]
        model.script_when(said(d), steps)
    list(parent.run("Review retry.py."))
    assert sub is not None
    return parent, model, sub


def first_request_of(model: ScriptedModel, directive: str) -> Request:
    return next(r for r in model.requests if said(directive)(r))


def requests_of(model: ScriptedModel, directive: str) -> list[Request]:
    return [r for r in model.requests if said(directive)(r)]


def body(request: Request) -> dict[str, Any]:
    """A request as sent (what ``create`` received), for ``serialise``/``prefix_report``."""
    out: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": request.messages,
    }
    if request.system is not None:
        out["system"] = request.system
    if request.tools is not None:
        out["tools"] = request.tools
    return {**out, **request.extra}


def directive_offset(data: bytes) -> int:
    """Where the last block (the directive) starts in ``serialise``'s bytes."""
    return data.rstrip(b"\n").rfind(b"\n") + 1


def without_cache_control(value: Any) -> Any:
    """``value`` without the marks PromptCaching adds: ``cache_control`` keys, and the text
    block a string message becomes so that it can carry one."""
    if isinstance(value, dict) and isinstance(value.get("content"), str) and "role" in value:
        value = {**value, "content": [m.text(value["content"])]}
    if isinstance(value, dict):
        return {k: without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_control(v) for v in value]
    return value


def cache_share(request: Request) -> float:
    assert request.cache is not None
    return request.cache.read / request.input_tokens


def assert_only_the_directive_differs(requests: list[Request]) -> None:
    bodies = [body(r) for r in requests]
    report = prefix_report(bodies)
    assert len(report) == len(DIRECTIVES)
    first = serialise(bodies[0])
    start = directive_offset(first)
    assert DIRECTIVES[0].encode() in first[start:]  # the last block is the directive's
    assert report[0].shared == report[0].bytes == len(first)
    for sibling, data in zip(report[1:], map(serialise, bodies[1:]), strict=True):
        assert sibling.only_directive_differs, sibling
        assert sibling.diverges_at == sibling.directive_at
        assert directive_offset(data) == start  # the same bytes before the directive block
        assert data[:start] == first[:start]
        assert start <= sibling.shared < sibling.bytes  # it ends inside the directive's block


# --- siblings through the tool ------------------------------------------------------------


def test_four_sibling_forks_send_the_first_ones_bytes_up_to_the_directive(
    tmp_path: Path,
) -> None:
    _, model, _ = forked_through_the_tool(tmp_path)
    assert_only_the_directive_differs([first_request_of(model, d) for d in DIRECTIVES])


def test_each_sibling_fork_reads_at_least_90_percent_of_its_prompt_from_the_cache(
    tmp_path: Path,
) -> None:
    parent, model, sub = forked_through_the_tool(tmp_path)
    first = first_request_of(model, DIRECTIVES[0])
    assert first.input_tokens > 4 * 1024  # well over the cache minimum
    for d in DIRECTIVES:
        assert cache_share(first_request_of(model, d)) >= CACHE_SHARE
    capsules = list(sub.capsules.values())
    assert len(capsules) == 4 and all(c.kind == "fork" for c in capsules)
    for capsule in capsules:
        assert capsule.status == "complete"
        assert capsule.cache_read_share >= CACHE_SHARE
    # The parent's meter counts its children's calls too (they go through parent.call).
    assert len(parent.meter.calls) == 3 + 4


def test_sibling_forks_started_from_code_share_the_prefix_and_the_cache(
    tmp_path: Path,
) -> None:
    parent, model, _ = make_parent(
        tmp_path,
        [reply(tool_calls=[tool_call("read_file", path="retry.py")]), reply("I read it.")],
    )
    list(parent.run("Review retry.py."))
    assert parent.messages[-1]["role"] == "assistant" and not m.tool_uses(parent.messages[-1])
    for k, d in zip(AREAS, DIRECTIVES, strict=True):
        model.script_when(said(d), [reply(f"Area {k} is fine.")])
    forks = [fork(parent, d) for d in DIRECTIVES]
    for f in forks:
        list(f.run())
    requests = [first_request_of(model, d) for d in DIRECTIVES]
    assert_only_the_directive_differs(requests)
    for request in requests:
        assert cache_share(request) >= CACHE_SHARE
    for d, request in zip(DIRECTIVES, requests, strict=True):
        # The parent ended on a plain reply: the directive is a user message of its own.
        assert len(request.messages) == len(parent.messages) + 1
        assert [b["text"] for b in m.blocks(request.messages[-1])] == [d]


def test_sibling_forks_of_a_conversation_ending_on_a_user_message_share_the_prefix(
    tmp_path: Path,
) -> None:
    # The parent runs out of turns right after its tool results: it ends on a user message.
    parent, model, _ = make_parent(
        tmp_path,
        [
            reply(tool_calls=[tool_call("read_file", path="retry.py")]),
            reply(tool_calls=[tool_call("read_file", path="notes.md")]),
        ],
        max_turns=2,
        tool=False,
    )
    list(parent.run("Review retry.py."))
    assert parent.messages[-1]["role"] == "user"
    results = m.tool_results(parent.messages[-1])
    for d in DIRECTIVES:
        model.script_when(said(d), [reply("Fine.")])
    for d in DIRECTIVES:
        list(fork(parent, d).run())
    requests = [first_request_of(model, d) for d in DIRECTIVES]
    assert_only_the_directive_differs(requests)
    for d, request in zip(DIRECTIVES, requests, strict=True):
        # The directive joins the parent's last user message, after its tool results.
        assert len(request.messages) == len(parent.messages)
        last = m.blocks(request.messages[-1])
        assert without_cache_control(last[:-1]) == results
        assert last[-1]["type"] == "text" and last[-1]["text"] == d
        assert cache_share(request) >= CACHE_SHARE


def test_fork_request_is_what_the_fork_then_sends_apart_from_cache_markers(
    tmp_path: Path,
) -> None:
    parent, model, _ = forked_through_the_tool(tmp_path)
    directive = "Check the notes for stale entries."
    model.script_when(said(directive), [reply("The notes are current.")])
    child = fork(parent, directive)
    planned = child.request()
    assert planned.purpose == "fork"
    list(child.run())
    sent = first_request_of(model, directive)
    assert any("cache_control" in json.dumps(b) for b in sent.messages)  # the parent's layer
    assert without_cache_control(body(sent)) == without_cache_control(planned.kwargs())


# --- the naive fork: still broken ---------------------------------------------------------


def test_the_naive_fork_diverges_at_the_system_prompt_and_reads_only_the_tools_from_cache(
    tmp_path: Path,
) -> None:
    parent, model, _ = make_parent(
        tmp_path,
        [reply(tool_calls=[tool_call("read_file", path="retry.py")]), reply("I read it.")],
    )
    list(parent.run("Review retry.py."))
    for d in DIRECTIVES:
        model.script_when(said(d), [reply("Fine.")])
    for d in DIRECTIVES:
        list(naive_fork(parent, d).run())
    requests = [first_request_of(model, d) for d in DIRECTIVES]
    report = prefix_report([body(r) for r in requests])
    first = serialise(body(requests[0]))
    system_at = first.find(json.dumps(SYSTEM[:40], ensure_ascii=False)[:-1].encode())
    system_end = first.find(b"\n", system_at)
    assert 0 < system_at < system_end
    for sibling in report[1:]:
        assert not sibling.only_directive_differs
        assert sibling.diverges_at is not None and sibling.diverges_at.startswith("system")
        assert system_at <= sibling.shared < system_end  # it ends inside the system prompt
    for request in requests:
        assert request.cache is not None
        # What it reads stops at the tools: nothing of the system prompt or the messages.
        assert request.cache.read_until is None or request.cache.read_until.startswith("tools")
        assert cache_share(request) < 0.5


# --- the fork cannot change the parent ----------------------------------------------------


def test_forks_leave_the_parents_messages_tool_results_and_tools_as_they_were(
    tmp_path: Path,
) -> None:
    parent, model, _ = make_parent(
        tmp_path,
        [reply(tool_calls=[tool_call("read_file", path="retry.py")]), reply("I read it.")],
    )
    list(parent.run("Review retry.py."))
    messages = copy.deepcopy(parent.messages)
    finished = parent.tools.finished
    finished_copy = copy.deepcopy(finished)
    definitions = json.dumps(parent.tools.definitions())
    for k, d in zip(AREAS, DIRECTIVES, strict=True):
        model.script_when(
            said(d),
            [
                reply(
                    tool_calls=[
                        tool_call("write_file", path=f"area_{k}.md", content="ok\n"),
                        tool_call("read_file", path="notes.md"),
                    ]
                ),
                reply(f"Wrote area_{k}.md."),
            ],
        )
    forks = [fork(parent, d) for d in DIRECTIVES]
    for f in forks:
        events = list(f.run())
        assert events  # it ran, with tools, in a conversation of its own
        assert len(f.agent.messages) == f.start + 4
    assert parent.messages == messages
    assert parent.tools.finished is finished and parent.tools.finished == finished_copy
    assert json.dumps(parent.tools.definitions()) == definitions
    assert all((parent.workspace / f"area_{k}.md").exists() for k in AREAS)


def test_a_fork_run_inside_the_parents_tool_call_leaves_its_results_to_the_parent(
    tmp_path: Path,
) -> None:
    children = {
        k: [
            reply(tool_calls=[tool_call("read_file", path="notes.md")]),
            reply(f"Area {k}: fine."),
        ]
        for k in AREAS
    }
    parent, _, sub = forked_through_the_tool(tmp_path, child_steps=children)
    fork_reply = parent.messages[-3]
    ids = [str(u["id"]) for u in m.tool_uses(fork_reply)]
    # The parent's runner holds its own four results, the capsules, not its children's.
    assert list(parent.tools.finished) == ids
    results = m.tool_results(parent.messages[-2])
    assert [r["tool_use_id"] for r in results] == ids
    for result, k in zip(results, AREAS, strict=True):
        assert f"(area {k})" in str(result["content"])
        assert FORK_PLACEHOLDER not in str(result["content"])
    assert len(sub.capsules) == 4 and all(c.tool_calls == 1 for c in sub.capsules.values())


def test_a_forks_allowed_subset_keeps_every_definition_and_refuses_the_rest(
    tmp_path: Path,
) -> None:
    parent, model, _ = make_parent(
        tmp_path,
        [reply(tool_calls=[tool_call("read_file", path="retry.py")]), reply("I read it.")],
    )
    list(parent.run("Review retry.py."))
    directive = "Write the findings to notes.md."
    model.script_when(
        said(directive),
        [
            reply(tool_calls=[tool_call("write_file", path="notes.md", content="changed\n")]),
            reply("I could not write."),
        ],
    )
    child = fork(parent, directive, allowed=["read_file"])
    assert json.dumps(child.agent.request().tools) == json.dumps(parent.request().tools)
    assert json.dumps(child.request().tools) == json.dumps(parent.request().tools)
    list(child.run())
    result = m.tool_results(child.agent.messages[-2])[0]
    assert result.get("is_error") is True
    assert "denied" in str(result["content"]) and "write_file" in str(result["content"])
    assert (parent.workspace / "notes.md").read_text() == "# notes\n"
    # The parent itself may still write (its approver allows it): the refusal is the fork's.
    assert parent.tools.permissions.deny == []


def test_a_fork_cannot_start_a_fork(tmp_path: Path) -> None:
    nested = "Fork again and review the nested area."
    children = {
        "A": [
            reply(tool_calls=[tool_call("fork", description="nested", prompt=nested)]),
            reply("Area A: could not fork."),
        ]
    }
    _, model, sub = forked_through_the_tool(tmp_path, child_steps=children)
    second = requests_of(model, DIRECTIVES[0])[1]
    result = m.tool_results(second.messages[-1])[0]
    assert result.get("is_error") is True
    assert "denied" in str(result["content"]) and "fork" in str(result["content"])
    assert not any(said(nested)(r) for r in model.requests)
    assert len(sub.capsules) == 4


class WatchedAutoCompact(AutoCompact):
    """An AutoCompact that notes each agent it is asked about."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[BaseAgent] = []

    def before_request(self, agent: BaseAgent) -> Rewrite | None:
        self.asked.append(agent)
        return super().before_request(agent)


def test_a_fork_never_runs_the_parents_compaction(tmp_path: Path) -> None:
    watch = WatchedAutoCompact()
    children = {
        k: [reply(tool_calls=[tool_call("read_file", path="notes.md")]), reply("Fine.")]
        for k in AREAS
    }
    parent, model, _ = forked_through_the_tool(tmp_path, plugins=[watch], child_steps=children)
    assert len(requests_of(model, DIRECTIVES[0])) == 2  # each fork made two requests
    assert watch.asked and all(agent is parent for agent in watch.asked)
    assert len(watch.asked) == 3  # the parent's three requests, none of the children's
    child = fork(parent, "Anything else?")
    assert not any(isinstance(p, AutoCompact) for p in child.agent.plugins)


# --- placeholders -------------------------------------------------------------------------


def test_every_pending_call_gets_one_identical_placeholder_then_the_directive(
    tmp_path: Path,
) -> None:
    # The forking reply also asks for a plain read: it gets a placeholder too.
    parent, model, _ = forked_through_the_tool(
        tmp_path, extra_calls=[tool_call("read_file", path="notes.md")]
    )
    fork_reply = parent.messages[-3]
    calls = m.tool_uses(fork_reply)
    assert len(calls) == 5
    for d in DIRECTIVES:
        for request in requests_of(model, d):
            assert m.validate(request.messages) == []
        request = first_request_of(model, d)
        assert without_cache_control(request.messages[-2]) == fork_reply
        blocks = m.blocks(request.messages[-1])
        results, last = blocks[:-1], blocks[-1]
        assert [r["tool_use_id"] for r in results] == [u["id"] for u in calls]
        assert all(r["type"] == "tool_result" for r in results)
        assert {r["content"] for r in results} == {FORK_PLACEHOLDER}
        assert not any(r.get("is_error") for r in results)
        assert last["type"] == "text" and last["text"] == d


def test_a_forks_whole_conversation_stays_valid(tmp_path: Path) -> None:
    parent, model, _ = forked_through_the_tool(tmp_path)
    # Forked from code while the parent's last reply asks for tools (none has run yet).
    parent.messages.append(m.user("Two more reads, please."))
    parent.messages.append(
        m.assistant(
            [
                m.text("Two more reads."),
                m.tool_use("toolu_p1", "read_file", {"path": "notes.md"}),
                m.tool_use("toolu_p2", "read_file", {"path": "retry.py"}),
            ]
        )
    )
    directive = "Summarise the review in one line."
    model.script_when(
        said(directive),
        [reply(tool_calls=[tool_call("read_file", path="notes.md")]), reply("One line.")],
    )
    child: Fork = fork(parent, directive)
    placeholders = m.tool_results(child.agent.messages[-1])
    assert [r["tool_use_id"] for r in placeholders] == ["toolu_p1", "toolu_p2"]
    assert {r["content"] for r in placeholders} == {FORK_PLACEHOLDER}
    list(child.run())
    assert m.validate(child.agent.messages) == []
    assert m.text_of(child.agent.messages[-1]) == "One line."
    assert m.tool_uses(parent.messages[-1])  # the parent's calls are still its own to run
