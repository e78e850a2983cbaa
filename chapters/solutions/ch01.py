"""Chapter 01: the agent loop.

The two exercises use what the chapter's first cells define: the project's files, its two
tools and their definitions. They are repeated here so that this file runs on its own.
"""

from __future__ import annotations

from anthropic.types import Message

from harness import Plugin
from harness.loop import BaseAgent
from harness.model import DEFAULT_MODEL

FILES = {
    "README.md": "# shop\nA small web shop.\n",
    "notes.txt": "The release is on Friday.",
    "todo.md": "- fix the login bug\n- write the release notes\n",
}


def list_files() -> str:
    return "\n".join(sorted(FILES))


def read_file(path: str) -> str:
    return FILES[path]


TOOLS = {"list_files": list_files, "read_file": read_file}

TOOL_DEFINITIONS = [
    {
        "name": "list_files",
        "description": "List the files of the project.",
        "input_schema": {"type": "object", "properties": {}},
    },
    {
        "name": "read_file",
        "description": "Read one file of the project.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "The file's name."}},
            "required": ["path"],
        },
    },
]


def agent_loop_limited(model, prompt: str, max_turns: int) -> tuple[list[dict], bool]:
    """Exercise 1: your loop, with at most ``max_turns`` turns. Returns (messages, hit_limit)."""
    messages = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        response = model.create(
            model=DEFAULT_MODEL, max_tokens=1024, messages=messages, tools=TOOL_DEFINITIONS
        )
        content = [block.model_dump(exclude_none=True) for block in response.content]
        messages.append({"role": "assistant", "content": content})
        if response.stop_reason != "tool_use":
            return messages, False  # the model finished, on or before its last allowed turn
        results = [
            {"type": "tool_result", "tool_use_id": b.id, "content": TOOLS[b.name](**b.input)}
            for b in response.content
            if b.type == "tool_use"
        ]
        messages.append({"role": "user", "content": results})  # even after the last turn
    return messages, True


class StopReasons(Plugin):
    """Exercise 2: ``seen`` lists the ``stop_reason`` of every reply, in order, across runs."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []  # one list per instance, not one in the class body

    def after_reply(self, agent: BaseAgent, reply: Message) -> None:
        # Once per reply that joins the conversation, the last one included; call_model would
        # also see side requests (a compaction's summary), before_request misses the last reply.
        self.seen.append(reply.stop_reason)
