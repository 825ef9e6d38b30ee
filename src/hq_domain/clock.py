"""The clock port. Every rule takes ``now`` as an argument; apps read it from a Clock.

Nanoseconds are the unit so that the dispatch bucket (ns) and leases (s) share one source.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ns(self) -> int: ...


class SystemClock:
    """Wall-clock time (UNIX epoch), as stored timestamps require."""

    def now_ns(self) -> int:
        return time.time_ns()


class ManualClock:
    """A clock that moves only when told to: for tests and virtual-time simulation."""

    def __init__(self, start_ns: int = 1_700_000_000 * 1_000_000_000) -> None:
        self._now = start_ns

    def now_ns(self) -> int:
        return self._now

    def advance(self, seconds: float = 0.0, *, ns: int = 0) -> None:
        self._now += int(seconds * 1_000_000_000) + ns

    def set_ns(self, now_ns: int) -> None:
        self._now = now_ns


def seconds(now_ns: int) -> int:
    return now_ns // 1_000_000_000


def millis(now_ns: int) -> int:
    return now_ns // 1_000_000
