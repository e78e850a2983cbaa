"""Time, injected.

Nothing in the harness calls ``time.sleep`` or ``time.time`` directly: cache TTLs,
idle-time microcompact, and anything that waits (a backoff, an expiry) read a
:class:`Clock`. Tests and notebooks pass a :class:`FakeClock`, so a 32-second backoff or a
5-minute cache expiry takes no time at all and gives the same output every run.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

# 2026-01-01T00:00:00Z: where every FakeClock starts unless told otherwise, so stored
# notebook outputs (timestamps in transcripts, expiry times) are the same on every run.
FAKE_EPOCH = 1_767_225_600.0


@runtime_checkable
class Clock(Protocol):
    """Wall-clock seconds since the Unix epoch, and a way to wait."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class RealClock:
    """The machine's clock. Used in live mode."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FakeClock:
    """A clock that only moves when told to.

    ``sleep`` advances time at once and is recorded in :attr:`sleeps`, so a test can assert
    "the harness waited 0.5 s, then 1 s, then honoured Retry-After: 30".
    """

    def __init__(self, start: float = FAKE_EPOCH) -> None:
        self._now = float(start)
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self._now

    def sleep(self, seconds: float) -> None:
        # NaN and infinity would poison every later reading; time.sleep refuses them too.
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"cannot sleep a negative or non-finite time: {seconds}")
        self.sleeps.append(seconds)
        self._now += seconds

    def advance(self, seconds: float) -> None:
        """Let time pass without anyone sleeping (the user went for coffee)."""
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"time only moves forward, by a finite amount: {seconds}")
        self._now += seconds

    def __repr__(self) -> str:
        return f"FakeClock({isoformat(self._now)})"


def isoformat(timestamp: float) -> str:
    """``2026-01-01T00:00:00.000Z``: the timestamp format of Claude Code's transcripts."""
    moment = datetime.fromtimestamp(timestamp, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
