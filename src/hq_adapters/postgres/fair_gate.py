"""Connections handed out in arrival order: a FIFO gate in front of asyncpg's pool.

asyncpg's pool keeps its idle connections in an ``asyncio.Queue``. When a connection comes back,
the queue wakes its longest waiter, but a request that asks in the meantime (one that has only
just arrived) takes the connection first, and the woken waiter goes to the *back* of the line.
With 64 workers on two processes of 4 connections each, that made some claims wait about
three times as long as the median (claim p99 ≈ 2.7 × p50, against ≈ 1.3 for the reference;
benchmarks/notes/optimisations.md). :class:`FairGate` admits at most the pool's size of
holders, and a holder leaving hands its place straight to the oldest waiter: nobody overtakes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque


class FairGate:
    """At most ``size`` holders at once, admitted strictly in arrival order."""

    __slots__ = ("_free", "_waiters")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("a gate needs at least one place")
        self._free = size
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        if self._free and not self._waiters:
            self._free -= 1
            return
        place = asyncio.get_running_loop().create_future()
        self._waiters.append(place)
        try:
            await place
        except asyncio.CancelledError:
            if place.done() and not place.cancelled():
                self.release()  # handed a place just as we were cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(place)
            raise

    def release(self) -> None:
        while self._waiters:
            place = self._waiters.popleft()
            if not place.done():
                place.set_result(None)  # the place goes to this waiter, not back to the pool
                return
        self._free += 1

    @property
    def free(self) -> bool:
        """Whether :meth:`acquire` would admit a caller now, without waiting."""
        return bool(self._free) and not self._waiters

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if not w.done())
