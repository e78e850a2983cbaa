"""The test rig: every test runs offline, with no API key, and the network unreachable.

* ``ANTHROPIC_API_KEY`` is taken out of the environment before anything runs, so notebook
  kernels (started by nbval from this process) inherit no key and run offline too. The key,
  if there was one, is kept for the tests marked ``live``.
* The suite runs on every core (``-n auto --dist loadfile``): each test file and each
  notebook (whose cells share one kernel) stays on one worker. The files are handed out in
  collection order (``--no-loadscope-reorder``, not xdist's most-tests-first), and the
  collection puts the longest first (:data:`LONGEST_FIRST`), so no worker starts a long one
  while the other is finishing. (Not ``--dist loadgroup``: with pytest 9 xdist 3.8 cannot
  mark a test's group in its id, so every test would be a group of its own.)
* An autouse fixture makes every Python socket connection (except Unix sockets) fail
  loudly, so a test that reaches for the network fails instead of silently going live. The
  one exception is a loopback server the test started itself and named with
  :func:`reachable` (``tests/local_api.py``, a stand-in for the Messages API).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

_LIVE_KEY: str | None = None


class NetworkBlocked(RuntimeError):
    """A test tried to open a network connection."""


def pytest_configure(config: pytest.Config) -> None:
    global _LIVE_KEY
    # Keep compiled modules (and pytest's rewritten test modules) in __pycache__ even where
    # PYTHONDONTWRITEBYTECODE is set: without them every run, worker and kernel compiles the
    # harness, the tests and their libraries again (seconds each). Only this process and its
    # workers write them; the environment the kernels inherit is left as it is.
    sys.dont_write_bytecode = False
    _LIVE_KEY = os.environ.pop("ANTHROPIC_API_KEY", None) or None
    # A developer's own model choice or gateway must not change the stored outputs either.
    for name in ("HARNESS_MODEL", "ANTHROPIC_BASE_URL"):
        os.environ.pop(name, None)


LONGEST_FIRST = (
    # Seconds of one core each (``-n 0``, 2026-11): what a file costs its worker.
    "tests/test_site.py",  # 90-130: builds the website, when the site group is installed
    "tests/test_live_chapters_",  # 15-45 each: chapters run live, a kernel each
    "chapters/14_mcp.ipynb",  # 26: a notebook under nbval, its cells in one kernel
    "chapters/15_background_traces_evals.ipynb",  # 15-20 (a first measurement, unfinished)
    "tests/test_cli_mcp.py",  # 19: an MCP server process per test
    "tests/test_mcp_servers.py",  # 12-18
    "tests/test_evals.py",  # 11-27 (a first measurement, unfinished)
    "chapters/12_planning.ipynb",  # 14
    "chapters/05_compaction.ipynb",  # 12
    "chapters/04_context_budget_and_microcompact.ipynb",  # 10
    "chapters/02_tools.ipynb",  # 9.5
    "tests/test_cli_pty.py",  # 9.5
    "tests/test_mcp_hostile.py",  # 8
    "chapters/",  # the other notebooks: 3.5-8 each
    "tests/test_mcp_session.py",  # 7.5
    "tests/test_copyable.py",  # 7.5
    "tests/test_hostile_inputs.py",  # 6.5
    "tests/test_properties.py",  # 6.5
    "tests/test_crash_resume.py",  # 6.5
    "tests/test_mcp_schema.py",  # 6
    "tests/test_api_refusals.py",  # 6
    "tests/test_mcp_connection.py",  # 6
    "tests/test_fault_storm.py",  # 6
    "tests/test_progress_across_processes.py",  # 5
)
"""Where the longest files are, longest first: only the order in which the workers get
them (a file not named here comes after, in collection order). The website's build comes
first: when it runs it is by far the longest, and started last it would leave the other
worker idle for a minute or more at the end."""


def _rank(item: pytest.Item) -> int:
    where = item.nodeid
    return next(
        (i for i, start in enumerate(LONGEST_FIRST) if where.startswith(start)),
        len(LONGEST_FIRST),
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a test worker (``-n``), put the longest files first. The sort is stable, so each
    file's tests and each notebook's cells keep their order."""
    if hasattr(config, "workerinput"):
        items.sort(key=_rank)


REACHABLE: set[tuple[str, int]] = set()
"""Loopback addresses of servers a test started itself (``tests/local_api.py``): the only
addresses a test may connect to. Add one with :func:`reachable`."""


def _guard(real: Callable[..., Any]) -> Callable[..., Any]:
    def refuse(self: socket.socket, address: Any, *args: Any, **kwargs: Any) -> Any:
        if self.family == getattr(socket, "AF_UNIX", object()):
            return real(self, address)
        if isinstance(address, tuple) and (str(address[0]), int(address[1])) in REACHABLE:
            return real(self, address)
        raise NetworkBlocked(f"tests run offline: connection to {address!r} refused")

    return refuse


_refuse_connect = _guard(socket.socket.connect)
_refuse_connect_ex = _guard(socket.socket.connect_ex)


@contextlib.contextmanager
def reachable(address: tuple[str, int]) -> Iterator[None]:
    """Let this process connect to ``address`` (a loopback server the test runs) meanwhile."""
    if not address[0].startswith("127."):
        raise ValueError(f"only loopback addresses can be made reachable, not {address!r}")
    REACHABLE.add(address)
    try:
        yield
    finally:
        REACHABLE.discard(address)


@pytest.fixture(autouse=True)
def no_network(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if request.node.get_closest_marker("live") is None:
        monkeypatch.setattr(socket.socket, "connect", _refuse_connect)
        monkeypatch.setattr(socket.socket, "connect_ex", _refuse_connect_ex)
    yield


@pytest.fixture
def api_key() -> str:
    """The API key for live tests; skips the test with a clear reason when there is none."""
    if not _LIVE_KEY:
        pytest.skip("live test: set ANTHROPIC_API_KEY to run it against the real API")
    return _LIVE_KEY
