"""Chapter 12: planning."""

from __future__ import annotations

from dataclasses import replace

from pydantic import ValidationError

from harness import messages as m
from harness.loop import ModelRequest
from harness.planning.plugin import TODO_END, TODO_HEADING
from harness.planning.todos import TodoList, parse_checklist


def remind(request: ModelRequest, reminder: str) -> ModelRequest:
    """Exercise 1: the request with ``reminder`` as the last block of its last user message."""
    messages = list(request.messages)  # a new list: the agent's own stays as it is
    if not messages or messages[-1]["role"] != "user":
        return request
    last = messages[-1]
    # A new dict for the last message: the blocks before, untouched, then the reminder.
    messages[-1] = {**last, "content": [*m.blocks(last), m.text(reminder)]}
    return replace(request, messages=messages)


def latest_list(conversation: list[m.MessageDict]) -> TodoList | None:
    """Exercise 2: the latest todo list a conversation holds, or None."""
    refused = {
        block["tool_use_id"]
        for message in conversation
        for block in m.tool_results(message)
        if block.get("is_error")
    }
    for message in reversed(conversation):
        for block in reversed(m.blocks(message)):  # a reply can write the list twice
            taken = block["type"] == "tool_use" and block["id"] not in refused
            if taken and block["name"] == "todo_write":
                try:
                    return TodoList.of(block["input"]["todos"])
                except ValidationError:
                    pass  # an input that no longer validates: look further back
            if block["type"] == "text" and TODO_HEADING in block["text"]:
                checklist = block["text"].split(TODO_HEADING)[-1].split(TODO_END)[0]
                return parse_checklist(checklist)
    return None
