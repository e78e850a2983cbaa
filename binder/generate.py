"""Write binder/requirements.txt from uv.lock, so Binder and JupyterHub install what the lock says.

    uv run python binder/generate.py          # rewrite the file
    uv run python binder/generate.py --check  # exit 1 if the file is not what the lock gives

repo2docker (what Binder and most JupyterHubs build images with) reads pip's requirements
format, not uv.lock, so this file is derived from the lock, never edited by hand. It runs
`uv export` on the lock as it is (`--frozen`: no re-resolution, `--offline`: no network).

Choices, and why:
- the `dev` group is in: it holds pytest and nbval, so a host can run the whole suite on the
  image the room will use before the day; the `browser` group is out (Binder has no Chromium);
- no hashes: pip refuses an editable requirement in hash-checking mode, and every version
  is pinned exactly anyway;
- the course's own package comes in as `-e .` (pip reads it from the repository's root,
  where repo2docker runs it), so `import harness` works and an edit to `harness/` shows
  after a kernel restart.
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "binder" / "requirements.txt"

EXPORT_ARGS = [
    "export",
    "--frozen",
    "--offline",
    "--no-hashes",
    "--no-annotate",
    "--no-header",
    "--no-default-groups",
    "--group",
    "dev",
]

HEADER = f"""\
# Generated from uv.lock by binder/generate.py: do not edit by hand. Regenerate with
#   uv run python binder/generate.py
# which runs
#   uv {" ".join(EXPORT_ARGS)}
# Binder and JupyterHub (repo2docker) install it with pip from the repository's root, where
# "-e ." is the course's own package.
"""


def find_uv() -> str | None:
    """The uv that runs us (`uv run` sets UV), else the one on PATH, else None."""
    return os.environ.get("UV") or shutil.which("uv")


def expected(uv: str) -> str:
    """The requirements file the lock gives today: the header, then `uv export`'s lines."""
    # UV_* settings from the caller's shell (UV_NO_GROUP, UV_FROZEN...) must not change the
    # export: the flags above say everything.
    env = {key: value for key, value in os.environ.items() if not key.startswith("UV_")}
    exported = subprocess.run(
        [uv, *EXPORT_ARGS],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return HEADER + exported


def main(argv: list[str]) -> int:
    uv = find_uv()
    if uv is None:
        print("uv not found: install it (pip install uv) and run this again.", file=sys.stderr)
        return 2
    text = expected(uv)
    current = REQUIREMENTS.read_text() if REQUIREMENTS.exists() else ""
    if "--check" in argv:
        if current == text:
            print("binder/requirements.txt matches uv.lock.")
            return 0
        diff = difflib.unified_diff(
            current.splitlines(keepends=True),
            text.splitlines(keepends=True),
            "binder/requirements.txt",
            "from uv.lock",
        )
        sys.stdout.writelines(diff)
        print("binder/requirements.txt is stale: run `uv run python binder/generate.py`.")
        return 1
    REQUIREMENTS.write_text(text)
    print(f"wrote binder/requirements.txt ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
