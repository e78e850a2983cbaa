"""Subagents and forks: hand a task to another agent, and get back a capsule, not a flood.

A child agent works in a conversation of its own, so the parent's context holds only what
the child reports. Two kinds of child, both started by one tool, :class:`Subagent`:

* **a fresh subagent** (Claude Code's Task tool, since renamed Agent) starts from the task
  alone, with a system prompt of its own, a subset of the parent's tools, its own turn
  limit and token budget. It knows nothing the task does not say.
* **a fork** (:func:`fork`) starts from the parent's conversation, to the byte: the
  parent's system prompt, tool definitions and messages, then the parent's reply with every
  tool call in it, then one user message in which each call gets the same placeholder
  result, followed by the child's directive. Sibling forks differ only in that last text
  block, so each reads everything before it from the prompt cache the parent's last
  request wrote (Claude Code's ``buildForkedMessages``; :func:`prefix_report` checks it).

Either way the child cannot change the parent's state: its conversation is a deep copy,
its tool calls run in a runner of its own (the parent's permissions and hooks still
apply), and it never compacts the parent. Nor can it start children of its own: Claude
Code gives its subagents no Agent tool, and we cap the depth at 1 too (:data:`MAX_DEPTH`;
``tool`` says how). Its model calls go through the parent's
``agent.call`` (the one path to the model, so retries and the parent's cost meter cover
them too), marked with their own ``purpose``.

What comes back is a :class:`ResultCapsule`: complete, partial or failed; a summary capped
in tokens; what it changed; its usage and cost; where its transcript is. A child that runs
out of turns, budget or output tokens still reports what it did, instead of losing the work
with the run. Its transcript is a
sidechain file in Claude Code's layout, ``<session>/subagents/agent-<id>.jsonl``, which
:func:`harness.transcript.load` reads and :meth:`Subagent.resume` continues.

:func:`ask_past_step` forks a recorded session at any entry and asks it a question,
writing the exchange to a new session: the original file is never opened for writing
(a "step ask", as a post-mortem of a workflow runner's resume proposed). Where Claude Code's
numbers and layouts come from: the sources page, ``chapters/sources.md``.

The pieces: ``capsule`` (the capsule, the token budget, reading a child's run), ``children``
(making a fresh child or a fork), ``tool`` (the tool and its plugin), ``proof`` (comparing
sibling requests), ``past`` (asking a past step).
"""

from __future__ import annotations

from harness.subagents.capsule import (
    DEFAULT_SUMMARY_TOKENS,
    BudgetSpent,
    ResultCapsule,
    SubagentFinished,
    TokenBudget,
    cap_summary,
    changes,
    outcome,
    tokens_spent,
)
from harness.subagents.children import (
    DEFAULT_SUBAGENT_TURNS,
    MAX_DEPTH,
    Fork,
    ThroughParent,
    depth,
    fork,
    fresh,
    sidechain_path,
)
from harness.subagents.past import PastStep, PastStepForked, ask_past_step
from harness.subagents.proof import SiblingPrefix, prefix_report, serialise
from harness.subagents.tool import (
    MIN_SUMMARY_TOKENS,
    NESTED,
    SUBAGENT_SYSTEM,
    WRAP_UP,
    Subagent,
    SubagentInput,
)

__all__ = [
    "DEFAULT_SUBAGENT_TURNS",
    "DEFAULT_SUMMARY_TOKENS",
    "MAX_DEPTH",
    "MIN_SUMMARY_TOKENS",
    "NESTED",
    "SUBAGENT_SYSTEM",
    "WRAP_UP",
    "BudgetSpent",
    "Fork",
    "PastStep",
    "PastStepForked",
    "ResultCapsule",
    "SiblingPrefix",
    "Subagent",
    "SubagentFinished",
    "SubagentInput",
    "ThroughParent",
    "TokenBudget",
    "ask_past_step",
    "cap_summary",
    "changes",
    "depth",
    "fork",
    "fresh",
    "outcome",
    "prefix_report",
    "serialise",
    "sidechain_path",
    "tokens_spent",
]
