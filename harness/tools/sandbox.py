"""A sandbox for shell commands: they cannot see the harness, nor link files into the workspace.

``bash`` gets a clean environment (no API key in it), but that is not the whole story. On
Linux every process may read ``/proc/<pid>/environ`` of any other process of the same user,
and the harness is the command's parent: ``cat /proc/$PPID/environ`` prints the harness's
whole environment, ``ANTHROPIC_API_KEY`` included. And a command can make a hard link
(``ln /outside/secret notes.txt``) that the file tools would then read and write as if it
were a workspace file.

On Linux, ``unshare`` (util-linux, on every distribution) runs the command in new
namespaces:

* a **PID namespace with its own /proc**: the command is process 1 of a world of its own;
  the harness, and every other process of yours, are not in it, so their environments are
  out of reach;
* a **mount namespace** in which the workspace is bind-mounted onto itself, so the workspace
  is a mount point of its own: ``link()`` never crosses mount points, and a hard link from
  outside into the workspace fails with "Invalid cross-device link".

Not running as root, it needs a user namespace too (``--user --map-root-user``): inside, you
appear as root, with no more rights outside than you had. Some systems turn user namespaces
off (Ubuntu 24.04's AppArmor default, some containers); there the probe fails and the shell
tool says once, plainly, that it runs unsandboxed.

On macOS the same job falls to seatbelt (``sandbox-exec`` with a profile that denies
``process-info`` on other processes and file writes outside the workspace), which is what
Claude Code uses there; this course does not build it, and says so when the tool starts.

What Claude Code's sandbox does beyond this one (bubblewrap on Linux): the whole file system
is read-only except the working directory, and network access goes through a proxy that
allows only listed hosts. This one leaves the file system writable outside the workspace and
the network open: a command can still write to your home folder or reach the internet, which
is why ``bash`` asks before it runs.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

# Inside the namespaces: make the workspace a mount point, enter it again (the working
# directory still points into the old mount until then), and run the command.
ENTER = 'mount --bind -- "$1" "$1" && cd -- "$2" && exec bash -c "$3"'


class SandboxWarning(UserWarning):
    """Shell commands run without a sandbox on this machine."""


@dataclass(frozen=True)
class Sandbox:
    """How shell commands are run: ``name``, one sentence on what it does, and the argv prefix."""

    name: str
    detail: str
    prefix: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.prefix)

    def argv(self, command: str, *, workspace: Path, cwd: Path) -> list[str]:
        """The argv that runs ``command`` in ``cwd``, inside the sandbox if there is one."""
        if not self.active:
            return ["bash", "-c", command]
        return [*self.prefix, "bash", "-c", ENTER, "sandbox", str(workspace), str(cwd), command]


def no_sandbox(reason: str) -> Sandbox:
    return Sandbox(
        "none",
        f"no sandbox ({reason}): a command can read the environment of the harness's own "
        "process through /proc, including ANTHROPIC_API_KEY if it is set, and can hard-link "
        "files from outside into the workspace. Keep bash on 'ask' (the default mode).",
    )


@functools.cache
def detect_sandbox() -> Sandbox:
    """The best sandbox this machine offers, found once per process by running a probe."""
    if sys.platform != "linux":
        where = "macOS would use seatbelt" if sys.platform == "darwin" else "no sandbox known"
        return no_sandbox(f"{sys.platform}: {where}; not built in this course")
    unshare = shutil.which("unshare")
    if unshare is None or shutil.which("mount") is None:
        return no_sandbox("unshare or mount is not installed")
    prefix = [unshare, "--pid", "--fork", "--mount-proc", "--kill-child"]
    if os.geteuid() != 0:
        prefix[1:1] = ["--user", "--map-root-user"]
    sandbox = Sandbox(
        "unshare",
        "unshare: a PID namespace with its own /proc (the harness's process is invisible) and "
        "the workspace as a mount point of its own (no hard links from outside into it)",
        tuple(prefix),
    )
    with tempfile.TemporaryDirectory() as probe:
        root = Path(probe)
        try:  # process 1 of its own namespace, in a workspace that is a mount point of its own
            done = subprocess.run(
                sandbox.argv('[ "$$" = 1 ] && mountpoint -q .', workspace=root, cwd=root),
                cwd=root,
                env={"PATH": os.environ.get("PATH", os.defpath)},
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=10,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return no_sandbox(f"unshare could not start: {error}")
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return no_sandbox(f"unshare failed: {said[-1] if said else f'exit {done.returncode}'}")
    return sandbox


_warned: set[str] = set()


def warn_if_unsandboxed(sandbox: Sandbox) -> None:
    """Say once per process, plainly, that shell commands run without a sandbox."""
    if not sandbox.active and sandbox.detail not in _warned:
        _warned.add(sandbox.detail)
        warnings.warn(f"bash runs commands with {sandbox.detail}", SandboxWarning, stacklevel=3)
