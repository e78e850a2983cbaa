"""Generated hostile server behaviour never crashes a run.

Hypothesis plays the server: it lists tools with any names and schemas, and answers each call
with any content (blocks of unknown types, images that are not images, garbage fields, errors)
or fails the call in any way a connection can. Through the whole path a server's tool takes
(``check_tool``, ``McpTool``, the dispatcher, the loop), a run always reaches the model's last
reply, every tool the model saw is one the API accepts (the scripted model refuses anything
else, as the API would), and every result is one the API accepts.

No process is started: :class:`FakeConnection` stands where :class:`ServerConnection` does,
so hundreds of servers' worth of behaviour run in seconds; the real processes' faults are in
``test_mcp_hostile.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from harness import messages as m
from harness.agent import Agent
from harness.clock import FakeClock
from harness.events import TurnEnded
from harness.mcp.connection import McpCallError
from harness.mcp.schema import CheckedTool, check_tool
from harness.mcp.tools import mcp_tool
from harness.model import ScriptedModel, reply, tool_call

json_leaf = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
schemas = st.one_of(
    st.just({"type": "object", "properties": {"q": {"type": "string"}}}),
    st.dictionaries(
        st.sampled_from(["type", "properties", "required", "$ref", "$defs", "oneOf"]), json_value
    ),
    st.builds(
        lambda props: {"type": "object", "properties": props},
        st.dictionaries(st.text(max_size=70), json_value, max_size=3),
    ),
)
blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=200)),
    st.builds(
        lambda d, mt: {"type": "image", "data": d, "mimeType": mt},
        st.text(max_size=40),
        st.sampled_from(["image/png", "image/tiff", "text/plain", ""]),
    ),
    st.builds(lambda t: {"type": t, "whatever": 1}, st.text(max_size=10)),
    st.builds(lambda u: {"type": "resource_link", "uri": u, "name": "n"}, st.text(max_size=30)),
    st.builds(lambda r: {"type": "resource", "resource": r}, json_value),
)
answers = st.one_of(
    st.builds(
        lambda content, structured, error: mcp_types.CallToolResult.model_construct(
            content=content, structured_content=structured, is_error=error
        ),
        st.lists(blocks, max_size=4),
        st.none() | json_value,
        st.sampled_from([True, False, None, "yes"]),
    ),
    st.sampled_from(
        [
            McpCallError("MCP server 's' stopped during the call"),
            RuntimeError("the SDK could not read it"),
            ValueError("\x00binary\x1b[31m"),
        ]
    ),
    st.builds(lambda v: v, json_value),  # not a result at all
)


class FakeConnection:
    """A connection whose server answers with what hypothesis drew, in order."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers

    def call(self, tool: str, arguments: Any, *, timeout: float | None = None) -> Any:
        answer = self.answers.pop(0) if self.answers else mcp_types.CallToolResult(content=[])
        if isinstance(answer, BaseException):
            raise answer
        if not isinstance(answer, mcp_types.CallToolResult):
            raise McpCallError(f"MCP server 's' answered {type(answer).__name__}")
        return answer


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    listed=st.lists(st.tuples(st.text(max_size=40), schemas), min_size=1, max_size=5),
    replies=st.lists(answers, min_size=1, max_size=5),
    arguments=st.lists(json_value, min_size=1, max_size=5),
)
def test_any_listing_and_any_answers_end_in_a_valid_conversation(
    tmp_path: Path, listed: list[tuple[str, Any]], replies: list[Any], arguments: list[Any]
) -> None:
    offered = []
    connection: Any = FakeConnection(list(replies))
    for name, schema in listed:
        tool = mcp_types.Tool.model_construct(name=name, input_schema=schema, description="d")
        checked = check_tool("s", tool)
        if isinstance(checked, CheckedTool) and checked.name not in {t.name for t in offered}:
            offered.append(mcp_tool(checked, connection))
    assume(offered)  # a listing with no usable tool is test_mcp_hostile's and schema's case
    calls = [
        tool_call(offered[i % len(offered)].name, **(a if isinstance(a, dict) else {"x": a}))
        for i, a in enumerate(arguments)
    ]
    clock = FakeClock()
    script = [reply("Calling.", tool_calls=[c]) for c in calls] + [reply("Done.")]
    model = ScriptedModel(script, clock=clock)
    agent = Agent(model, tools=offered, workspace=tmp_path, clock=clock, approver=lambda r: True)
    events = list(agent.run("Use the server."))
    assert isinstance(events[-1], TurnEnded)
    assert m.validate(agent.messages) == []
    assert len(model.requests) == len(calls) + 1
