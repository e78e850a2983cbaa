"""What a tool is: a name, a description, a pydantic input model, and a function.

The input model does double duty. Its JSON schema is the ``input_schema`` the API shows the
model, and it validates what the model sends back: arguments that do not fit are not run,
they go back to the model as an error that names the field and what was wrong, so it can
correct itself on the next turn (Claude Code validates every tool input with a Zod schema
the same way).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.clock import Clock, RealClock
from harness.messages import TOOL_NAME_PATTERN, fresh, is_valid_tool_name
from harness.tools.storage import ResultStorage
from harness.tools.workspace import Workspace

InputT = TypeVar("InputT", bound=BaseModel)

ToolOutput = str | list[dict[str, Any]]
"""What a tool returns: text, or a list of content blocks (text, image)."""


class ToolInput(BaseModel):
    """Base for tool input models: an argument the tool does not have is an error.

    Without this, pydantic drops unknown fields silently, and a model that misspells an
    argument (``paht`` for ``path``) or invents one never learns that it was ignored.
    """

    model_config = ConfigDict(extra="forbid")


class ToolError(Exception):
    """Raised by a tool to tell the model, in plain words, why the call failed.

    The message goes back as a ``tool_result`` with ``is_error: true``; the loop goes on.
    """


@dataclass
class ToolContext:
    """What a tool may use besides its input: the workspace, the clock, its own call id, and
    the storage of big results (to read one back)."""

    workspace: Workspace
    clock: Clock = field(default_factory=RealClock)
    tool_use_id: str = ""
    storage: ResultStorage | None = None


@dataclass(frozen=True)
class Tool(Generic[InputT]):
    """A tool the model can call."""

    name: str
    description: str
    input_model: type[InputT]
    function: Callable[[InputT, ToolContext], ToolOutput]
    read_only: bool = False
    """Read-only tools change nothing, so several in one turn may run in parallel."""
    spill: bool = True
    """Whether an oversized result is moved to storage. Off for the tool that reads it back
    (else reading a stored result would store it again; Claude Code exempts Read too)."""

    def __post_init__(self) -> None:
        # The API refuses a whole request for one bad name (400): refuse the tool here instead.
        if not is_valid_tool_name(self.name):
            raise ValueError(
                f"tool name {self.name!r} is not one the API accepts: it must match "
                f"{TOOL_NAME_PATTERN} (letters, digits, _ and -, 1 to 128 characters)"
            )

    def input_problem(self, raw_input: dict[str, Any]) -> ValidationError | str | None:
        """What is wrong with ``raw_input``, checked before anything runs: None when it fits.

        A pydantic error (the dispatcher words it for the model) or a text already worded; a
        tool whose schema is not a pydantic model (an MCP server's, chapter 14) answers text.
        """
        try:
            self.input_model.model_validate(raw_input)
        except ValidationError as error:
            return error
        return None

    def definition(self) -> dict[str, Any]:
        """The tool as the API takes it in ``tools=[...]`` (a fresh dict: callers may edit it)."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": fresh(_schema(self.input_model)),
        }

    def __call__(self, raw_input: dict[str, Any], context: ToolContext) -> ToolOutput:
        """Validate ``raw_input`` against the input model, then run the tool.

        Raises ``pydantic.ValidationError`` for bad arguments; the dispatcher turns that
        into an error result the model can learn from.
        """
        return self.function(self.input_model.model_validate(raw_input), context)


@functools.cache
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    # Building a JSON schema is slow in pydantic, and the loop asks for every tool's
    # definition on every request: build each once.
    return model.model_json_schema()


def tool(
    input_model: type[InputT],
    *,
    name: str | None = None,
    read_only: bool = False,
    spill: bool = True,
) -> Callable[[Callable[[InputT, ToolContext], ToolOutput]], Tool[InputT]]:
    """Make a :class:`Tool` from a function; its docstring is the description.

    >>> class Echo(BaseModel):
    ...     text: str
    >>> @tool(Echo, read_only=True)
    ... def echo(args: Echo, context: ToolContext) -> str:
    ...     '''Say the text back.'''
    ...     return args.text
    >>> echo.definition()["name"]
    'echo'
    """

    def wrap(function: Callable[[InputT, ToolContext], ToolOutput]) -> Tool[InputT]:
        description = " ".join((function.__doc__ or "").split())
        if not description:
            raise ValueError(f"tool {function.__name__!r} needs a docstring: it is the description")
        return Tool(name or function.__name__, description, input_model, function, read_only, spill)

    return wrap


class ToolRegistry:
    """The tools an agent offers, by name, in a fixed order (the order is part of the prompt)."""

    def __init__(self, tools: Iterable[Tool[Any]] = ()) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        for t in tools:
            self.add(t)

    def add(self, t: Tool[Any]) -> None:
        if t.name in self._tools:
            raise ValueError(f"a tool named {t.name!r} is already registered")
        self._tools[t.name] = t

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def definitions(self) -> list[dict[str, Any]]:
        return [t.definition() for t in self._tools.values()]

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools
