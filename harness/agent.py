"""``Agent``: the loop, with the tool runner built for you from a list of tools.

``harness.loop.BaseAgent`` runs its tools through anything that implements its ``ToolCalls``
protocol. Nearly always that is a :class:`~harness.tools.dispatch.ToolRunner`, with its
workspace, permissions, approver, hooks and result storage; ``Agent`` builds one from the
usual arguments, so that ``Agent(model, tools=[...])`` is all it takes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.clock import Clock, RealClock
from harness.loop import AgentConfig, BaseAgent, Plugin, StopHook
from harness.model.base import Model
from harness.tools.base import Tool, ToolContext, ToolRegistry
from harness.tools.dispatch import ToolRunner, turn_budget
from harness.tools.hooks import Hooks
from harness.tools.permissions import Approver, Permissions, deny_all
from harness.tools.storage import ResultStorage
from harness.tools.workspace import Workspace


class Agent(BaseAgent):
    """A model, its tools, a system prompt, and the conversation so far.

    ``tools`` is a list of tools (or a ``ToolRegistry``): they run in ``workspace`` (the
    current directory if not given), under ``permissions`` (the default mode if not given),
    asking ``approver`` when a rule says ask, with the tool ``hooks`` and result ``storage``
    (a temporary folder of its own if not given: oversized results are always stored).
    The rest are :class:`~harness.loop.BaseAgent`'s. ``agent.tools`` is the runner.
    """

    tools: ToolRunner

    def __init__(
        self,
        model: Model,
        /,
        *,
        tools: Iterable[Tool[Any]] | ToolRegistry = (),
        workspace: Workspace | str | Path | None = None,
        permissions: Permissions | None = None,
        approver: Approver = deny_all,
        hooks: Hooks | None = None,
        storage: ResultStorage | None = None,
        system: str | list[dict[str, Any]] | None = None,
        clock: Clock | None = None,
        config: AgentConfig | None = None,
        plugins: Iterable[Plugin] = (),
        stop_hooks: Iterable[StopHook] = (),
        **settings: Any,
    ) -> None:
        clock = clock or RealClock()
        space = (
            workspace if isinstance(workspace, Workspace) else Workspace(workspace or Path.cwd())
        )
        runner = ToolRunner(
            registry=tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools),
            context=ToolContext(workspace=space, clock=clock),
            permissions=permissions or Permissions(workspace=space),
            approver=approver,
            hooks=hooks or Hooks(),
            storage=storage or ResultStorage(),
        )
        super().__init__(
            model,
            tools=runner,
            system=system,
            workspace=space.root,
            clock=clock,
            config=config,
            plugins=plugins,
            stop_hooks=stop_hooks,
            **settings,
        )
        runner.turn_budget = turn_budget(self.context_window)
        runner.progress = self.tool_progress  # the plugins hear of each batch (transcripts)
