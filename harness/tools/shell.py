"""The ``bash`` tool: run a shell command in the workspace.

Said plainly: bash is NOT confined by the workspace's path checks. Its working directory
starts inside the workspace, but a command can ``cd ..``, read ``/etc/passwd`` or write
anywhere the user can. The confinement for bash is the permission system (chapter 02: ask
before running, allow/deny rules) and a sandbox (``harness.tools.sandbox``). What this tool
does guarantee:

* no secret reaches the command (invariant 4): its environment is built from an allowlist,
  so ``ANTHROPIC_API_KEY``, tokens and the rest of the parent's environment are not there;
  and, where the machine allows it (Linux with namespaces), the command cannot see the
  harness's process either, so ``/proc/$PPID/environ`` does not give the key away;
* a command that runs too long is killed, with every process it started;
* the output the model sees is bounded.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from pydantic import Field

from harness.tools.base import Tool, ToolContext, ToolError, ToolInput, tool
from harness.tools.sandbox import Sandbox, detect_sandbox, warn_if_unsandboxed
from harness.tools.storage import cap_output

# Claude Code's Bash tool: 2-minute default timeout, 10-minute maximum (it takes them in
# milliseconds, 120000 and 600000; this version takes seconds).
BASH_DEFAULT_TIMEOUT = 120.0
BASH_MAX_TIMEOUT = 600.0
# Claude Code's BASH_MAX_OUTPUT_LENGTH default: 30,000 characters, head and tail kept.
BASH_MAX_OUTPUT_CHARS = 30_000
# The only variables copied from the parent environment. Everything else stays out.
ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ")


class BashInput(ToolInput):
    command: str = Field(description="The bash command to run.")
    timeout: float = Field(
        default=BASH_DEFAULT_TIMEOUT,
        gt=0,
        le=BASH_MAX_TIMEOUT,
        description=f"Seconds before the command is killed. Default {BASH_DEFAULT_TIMEOUT:g}, "
        f"at most {BASH_MAX_TIMEOUT:g}.",
    )
    cwd: str = Field(
        default=".",
        description="The directory to run in, relative to the workspace root. Default: the root.",
    )


def command_environment(cwd: Path, home: Path) -> dict[str, str]:
    """The environment a command gets: allowlisted variables only, HOME at the workspace."""
    env = {name: os.environ[name] for name in ENV_ALLOWLIST if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env["HOME"] = str(home)
    env["PWD"] = str(cwd)
    return env


def _combine(stdout: bytes, stderr: bytes, returncode: int | None) -> str:
    parts = [
        data.decode("utf-8", errors="replace").rstrip("\n") for data in (stdout, stderr) if data
    ]
    if returncode:  # None (killed before it finished) and 0 add nothing
        parts.append(f"exit code: {returncode}")
    return "\n".join(part for part in parts if part)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(process.pid, signal.SIGKILL)


def bash_tool(sandbox: Sandbox | None = None) -> Tool[BashInput]:
    """The ``bash`` tool, running commands in ``sandbox``: by default the best this machine
    offers (:func:`~harness.tools.sandbox.detect_sandbox`, which says once if there is none)."""

    @tool(BashInput, name="bash")
    def run_bash(args: BashInput, context: ToolContext) -> str:
        """Run a bash command and return its stdout, then its stderr, then "exit code: N" if
        it failed. It starts in the workspace root (or cwd, relative to it); stdin is closed,
        so interactive commands fail instead of waiting. The command is killed after timeout
        seconds (default 120, at most 600). Output over 30,000 characters is cut in the
        middle: pipe long output through head, tail or grep. Use read_file, glob and grep
        rather than cat, find and grep in bash for files. Each call is a fresh shell: cd and
        variables do not carry over."""
        chosen = sandbox
        if chosen is None:
            chosen = detect_sandbox()
            warn_if_unsandboxed(chosen)
        return _run(args, context, chosen)

    return run_bash


def _run(args: BashInput, context: ToolContext, sandbox: Sandbox) -> str:
    try:
        cwd = context.workspace.resolve(args.cwd)
    except (PermissionError, ValueError) as error:
        raise ToolError(str(error)) from None
    if not cwd.is_dir():
        raise ToolError(f"cwd is not a directory in the workspace: {args.cwd}")
    process = subprocess.Popen(
        sandbox.argv(args.command, workspace=context.workspace.root, cwd=cwd),
        cwd=cwd,
        env=command_environment(cwd, context.workspace.root),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, so a timeout can kill all of it
    )
    try:
        stdout, stderr = process.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        try:  # communicate again: the output read so far is not lost
            stdout, stderr = process.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a grandchild left the group and holds the pipes
            stdout, stderr = b"", b""
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
        so_far = _combine(stdout, stderr, None)
        message = f"Command timed out after {args.timeout:g} s and was killed."
        if so_far:
            message += f" Output before it was killed:\n{so_far}"
        raise ToolError(cap_output(message, BASH_MAX_OUTPUT_CHARS)) from None
    finally:
        if process.poll() is None:  # interrupted some other way: leave nothing running
            _kill_group(process)
            process.wait()
    output = _combine(stdout, stderr, process.returncode)
    return cap_output(output, BASH_MAX_OUTPUT_CHARS) or "(no output)"


bash = bash_tool()
"""The ``bash`` tool, sandboxed where the machine allows it."""
