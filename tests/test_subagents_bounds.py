"""Subagents are bounded (chapter 10): children do not nest, and a token budget is positive.

Claude Code gives its subagents no Agent tool, so a subagent cannot start another. Here the
same holds however the parent's tools are combined: with two subagent tools (a fork and a
fresh one, say), each child used to get the other tool and start a child of its own, which
started another, as deep as the model liked. Now every attempt below the first level is a
tool error the child's model reads, and the parent's run goes on.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness.loop import BaseAgent, Plugin
from harness.model import reply, tool_call
from harness.model.scripted import Request
from harness.subagents import MAX_DEPTH, NESTED, Subagent, TokenBudget, depth, fork, fresh
from harness.tools import ToolError
from tests.subagent_session import Parent, attach, make_parent

SOME = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

LEVEL = re.compile(r"\[level (\d+)\]")
STARTERS = {"subagent": False, "fork": True, "helper": False}
"""Subagent tools a parent may have, by name: whether each starts forks."""


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [str(b.get("text", "")) for b in content or [] if b.get("type") == "text"]


def nesting_model(parent: Parent, chain: list[str]) -> None:
    """Every agent on ``parent``'s model, parent and children alike, does the same: given a
    task ``[level k]`` (the parent's own prompt is level 0) it calls ``chain[k]`` with the
    task ``[level k+1]``; given the results of that call, or at the end of the chain, it
    stops. So with nothing in the way the run would go ``len(chain)`` levels deep."""

    def respond(request: Request) -> Any:
        texts = _texts(request.last_message)
        if request.last_message.get("role") != "user" or not texts:
            return reply("Stopped.")
        levels = [int(n) for text in texts for n in LEVEL.findall(text)]
        level = max(levels, default=0)
        if level >= len(chain):
            return reply("Leaf: nothing left to hand out.")
        call = tool_call(chain[level], description="deeper", prompt=f"[level {level + 1}]")
        return reply("Handing it on.", tool_calls=[call])

    parent.model.answer_when(lambda request: True, respond)


def levels_reached(parent: Parent) -> set[int]:
    """The levels of the tasks any agent was given (read from each request's user texts)."""
    return {
        int(n)
        for request in parent.model.requests
        for message in request.messages
        if message.get("role") == "user"
        for text in _texts(message)
        for n in LEVEL.findall(text)
    }


def results_for(parent: Parent, tool: str = "", level: int = 0) -> list[m.Block]:
    """Every tool result any agent got for a call of ``tool``, or for a call that hands out
    the task ``[level k]`` (read from the requests the model was sent)."""
    calls = {
        str(u["id"])
        for request in parent.model.requests
        for message in request.messages
        for u in m.tool_uses(message)
        if u.get("name") == tool or f"[level {level}]" == u.get("input", {}).get("prompt")
    }
    seen: dict[str, m.Block] = {}
    for request in parent.model.requests:
        for message in request.messages:
            for block in m.tool_results(message):
                if str(block.get("tool_use_id")) in calls:
                    seen[str(block["tool_use_id"])] = block
    return list(seen.values())


def with_starters(tmp_path: Path, names: list[str]) -> tuple[Parent, dict[str, Subagent]]:
    parent = make_parent(tmp_path)
    subs = {name: attach(parent, name=name, fork=STARTERS[name]) for name in names}
    return parent, subs


# -- the example from the issue: a fork's child starts a subagent, whose child starts ... --------


def test_a_forks_child_cannot_start_a_subagent_a_hundred_levels_down(tmp_path: Path) -> None:
    parent, subs = with_starters(tmp_path, ["fork", "subagent"])
    chain = ["fork", "subagent"] * 50
    nesting_model(parent, chain)

    events = parent.run("Start the chain.")

    assert levels_reached(parent) == {1}, "only the parent's own call started a child"
    assert len(subs["fork"].capsules) == 1 and not subs["subagent"].capsules
    (nested,) = results_for(parent, "subagent")  # the fork's attempt
    assert nested.get("is_error") is True
    assert "denied" in str(nested["content"]) and "subagent" in str(nested["content"])
    assert parent.agent.messages[-1]["role"] == "assistant"  # the parent's run went on
    assert m.text_of(parent.agent.messages[-1]) == "Stopped."
    assert events  # and ended normally, with no exception


def test_a_fresh_child_is_not_given_any_tool_that_starts_children(tmp_path: Path) -> None:
    parent, subs = with_starters(tmp_path, ["subagent", "fork", "helper"])
    nesting_model(parent, ["subagent", "helper"])

    parent.run("Start the chain.")

    child_request = next(r for r in parent.model.requests if "[level 1]" in _texts(r.last_message))
    names = {str(t["name"]) for t in child_request.tools or []}
    assert names.isdisjoint(STARTERS) and "read_file" in names
    (nested,) = results_for(parent, "helper")
    assert nested.get("is_error") is True and "Unknown tool 'helper'" in str(nested["content"])
    assert not subs["helper"].capsules and levels_reached(parent) == {1}


@SOME
@given(
    names=st.lists(st.sampled_from(sorted(STARTERS)), min_size=1, max_size=3, unique=True),
    chain_length=st.integers(1, 100),
    picks=st.lists(st.integers(0, 2), min_size=100, max_size=100),
)
def test_however_subagent_tools_are_combined_no_child_starts_a_child(
    tmp_path_factory: pytest.TempPathFactory, names: list[str], chain_length: int, picks: list[int]
) -> None:
    parent, subs = with_starters(tmp_path_factory.mktemp("bounds"), names)
    chain = [names[p % len(names)] for p in picks[:chain_length]]
    nesting_model(parent, chain)

    parent.run("Start the chain.")

    assert levels_reached(parent) <= {1}
    assert sum(len(s.capsules) for s in subs.values()) == 1  # the parent's one call
    nested = results_for(parent, level=2)
    assert len(nested) == (1 if chain_length > 1 else 0)  # the child tried once ...
    assert all(result.get("is_error") is True for result in nested)  # ... and was told no
    assert m.text_of(parent.agent.messages[-1]) == "Stopped."


# -- a subagent tool attached to a child ------------------------------------------------------


class AttachInner(Plugin):
    """Gives the child it runs in a subagent tool of its own, before its first request."""

    def __init__(self, attached: list[Subagent]) -> None:
        self.attached = attached

    def before_request(self, agent: BaseAgent) -> None:
        if not self.attached:
            self.attached.append(Subagent(name="inner").attach(agent))


def test_a_subagent_tool_attached_to_a_child_refuses_and_the_child_reads_why(
    tmp_path: Path,
) -> None:
    parent = make_parent(tmp_path)
    inner: list[Subagent] = []
    attach(parent, plugins=lambda: [AttachInner(inner)])
    nesting_model(parent, ["subagent", "inner", "inner"])

    parent.run("Start the chain.")

    (result,) = results_for(parent, "inner")
    assert result.get("is_error") is True
    assert str(result["content"]).startswith(NESTED.format(cap=MAX_DEPTH)[:40])
    assert levels_reached(parent) == {1} and not inner[0].capsules


def test_depth_counts_the_parents_above_an_agent_and_run_refuses_below_the_cap(
    tmp_path: Path,
) -> None:
    parent = make_parent(tmp_path)
    child = fresh(parent.agent)
    forked = fork(child, "look")  # a fork of a child, built by hand
    assert (depth(parent.agent), depth(child), depth(forked.agent)) == (0, 1, 2)

    with pytest.raises(ToolError, match="cannot start subagents"):
        Subagent(name="inner").attach(child).run("Go one level deeper")


# -- the token budget -------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.integers(max_value=0) | st.sampled_from([True, False, 1.5, 100.0, "100"]))
def test_a_token_budget_that_is_not_a_positive_whole_number_is_refused(budget: Any) -> None:
    with pytest.raises(ValueError, match="token budget"):
        Subagent(token_budget=budget)


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=1, max_value=10**9))
def test_any_positive_token_budget_is_kept(budget: int) -> None:
    sub = Subagent(token_budget=budget)
    (plugin,) = sub._budget()
    assert isinstance(plugin, TokenBudget) and plugin.budget == budget


def test_no_token_budget_means_none_is_applied() -> None:
    assert Subagent(token_budget=None)._budget() == []
