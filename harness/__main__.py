"""``python -m harness``: the command line (chapter 11; see :mod:`harness.cli`)."""

from harness.cli import run_module

if __name__ == "__main__":
    run_module()
