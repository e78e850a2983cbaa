"""The test rig: every test runs offline, with no API key, and the network unreachable.

* ``ANTHROPIC_API_KEY`` is taken out of the environment before anything runs, so notebook
  kernels (started by nbval from this process) inherit no key and run offline too. The key,
  if there was one, is kept for the tests marked ``live``.
* An autouse fixture makes every Python socket connection (except Unix sockets) fail
  loudly, so a test that reaches for the network fails instead of silently going live.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

_LIVE_KEY: str | None = None


class NetworkBlocked(RuntimeError):
    """A test tried to open a network connection."""


def pytest_configure(config: pytest.Config) -> None:
    global _LIVE_KEY
    _LIVE_KEY = os.environ.pop("ANTHROPIC_API_KEY", None) or None
    # A developer's own model choice or gateway must not change the stored outputs either.
    for name in ("HARNESS_MODEL", "ANTHROPIC_BASE_URL"):
        os.environ.pop(name, None)


def _refuse(self: socket.socket, address: Any, *args: Any, **kwargs: Any) -> Any:
    if self.family == getattr(socket, "AF_UNIX", object()):
        return _real_connect(self, address)
    raise NetworkBlocked(f"tests run offline: connection to {address!r} refused")


_real_connect = socket.socket.connect


@pytest.fixture(autouse=True)
def no_network(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if request.node.get_closest_marker("live") is None:
        monkeypatch.setattr(socket.socket, "connect", _refuse)
        monkeypatch.setattr(socket.socket, "connect_ex", _refuse)
    yield


@pytest.fixture
def api_key() -> str:
    """The API key for live tests; skips the test with a clear reason when there is none."""
    if not _LIVE_KEY:
        pytest.skip("live test: set ANTHROPIC_API_KEY to run it against the real API")
    return _LIVE_KEY
