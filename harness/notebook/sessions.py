"""A standard scripted coding session, shared by chapters 04 and 05 and the benchmarks.

A small Python project in a temporary workspace, and a script of ``turns`` model replies
that read files, search, edit and run shell commands the way a coding agent does, ending
with a summary. Deterministic: the same ``turns`` always gives the same requests.
"""

from __future__ import annotations

from pathlib import Path

from harness.loop import BaseAgent, Plugin
from harness.model import Step, reply, tool_call

MODULES = ["billing", "invoices", "customers", "reports", "tax", "currency", "exports", "auth"]


def make_project(root: Path, functions: int = 20) -> None:
    """Eight modules of ``functions`` functions (~6 lines each), with tests and a README."""
    (root / "app").mkdir()
    (root / "tests").mkdir()
    for i, name in enumerate(MODULES):
        lines = [f'"""The {name} module."""', "", "from decimal import Decimal", ""]
        lines += [f"RATE_{i} = Decimal('0.{i + 1}')", ""]
        for j in range(functions):
            lines += [
                f"def {name}_step_{j}(amount: Decimal, rate: Decimal = RATE_{i}) -> Decimal:",
                f'    """Step {j} of the {name} pipeline: apply the rate and round to cents."""',
                "    value = amount * (1 + rate)",
                "    return value.quantize(Decimal('0.01'))",
                "",
            ]
        (root / "app" / f"{name}.py").write_text("\n".join(lines) + "\n")
        (root / "tests" / f"test_{name}.py").write_text(
            f"from app.{name} import {name}_step_0\n\n\ndef test_{name}() -> None:\n"
            f"    assert {name}_step_0(1) > 0\n"
        )
    (root / "README.md").write_text("# Billing service\n\nRun the tests with `pytest`.\n")


def coding_script(turns: int, write_lines: int = 0) -> list[Step]:
    """``turns`` replies: tool calls cycling through read, grep, edit and bash, then a summary.

    With ``write_lines``, the bash turns write a new module of that many lines instead.
    """
    script: list[Step] = []
    for t in range(turns - 1):
        name = MODULES[t % len(MODULES)]
        kind = t % 5
        if kind in (0, 4):
            call = tool_call("read_file", path=f"app/{name}.py")
            text = f"Let me read app/{name}.py to see how the {name} steps round amounts."
        elif kind == 1:
            call = tool_call("grep", pattern=r"quantize\(", output_mode="content", head_limit=40)
            text = "I'll search for every place that rounds, to check they agree."
        elif kind == 2:
            step = t % 20
            # The docstring's opening words match exactly once, before and after earlier edits.
            opening = f'"""Step {step} of the {name} pipeline'
            call = tool_call(
                "edit_file",
                path=f"app/{name}.py",
                old_string=opening,
                new_string=f"{opening} [checked in turn {t}]",
            )
            text = f"The docstring of step {step} should say it was checked; editing it."
        elif write_lines:
            # A new module written whole: its content sits in the tool_use input, which no
            # microcompact may clear (only results are cleared), so it stays in context.
            body = "\n".join(
                f"def generated_{t}_{k}(x: int) -> int:\n    return x * {k} + {t}  # step {k}"
                for k in range(write_lines // 2)
            )
            call = tool_call("write_file", path=f"app/generated_{t}.py", content=body + "\n")
            text = f"Writing a helper module with {write_lines // 2} small functions."
        else:
            # Line counts only: `ls -l` would print owners and dates that differ by machine.
            call = tool_call("bash", command="wc -l app/*.py tests/*.py")
            text = "Checking the sizes of the modules and tests."
        script.append(reply(text, tool_calls=[call]))
    script.append(reply("All modules round to cents consistently; docstrings updated."))
    return script


class ThinkingTime(Plugin):
    """Lets ``seconds`` pass on the clock before each request (model and tool latency)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def before_request(self, agent: BaseAgent) -> None:
        clock = agent.clock
        advance = getattr(clock, "advance", None)
        if advance is not None:
            advance(self.seconds)


__all__ = ["MODULES", "ThinkingTime", "coding_script", "make_project"]
