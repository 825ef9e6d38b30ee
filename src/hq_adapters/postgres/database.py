"""What every port class of the PostgreSQL adapter shares: the pool, the clock, and statement
and transaction helpers that turn constraint violations into domain errors.

It holds no state of any port: per-port state (the worker's claim-order hints, the enqueue
identity hints) lives in the port's own class (``worker.py``, ``enqueue.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from hq_adapters.postgres.errors import translated
from hq_adapters.postgres.fair_gate import FairGate
from hq_adapters.postgres.queries import q
from hq_domain.clock import Clock, seconds


class Database:
    """One asyncpg pool and the clock every statement's time comes from. Statements are named
    blocks of ``sql/*.sql`` (:func:`hq_adapters.postgres.queries.q`). Every connection taken
    here passes a :class:`~hq_adapters.postgres.fair_gate.FairGate` first, so requests get
    connections in the order they asked."""

    def __init__(self, pool: asyncpg.Pool, clock: Clock) -> None:
        self._pool = pool
        self._clock = clock
        self._gate = FairGate(pool.get_max_size())

    @property
    def pool(self) -> asyncpg.Pool:
        """The pool, for statements outside the named blocks (tests, readiness, metrics)."""
        return self._pool

    @property
    def clock(self) -> Clock:
        return self._clock

    def now_ns(self) -> int:
        return self._clock.now_ns()

    def now_s(self) -> int:
        return seconds(self._clock.now_ns())

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection without a transaction (a single read of several steps)."""
        await self._gate.acquire()
        try:
            with translated():
                async with self._pool.acquire() as conn:
                    yield conn
        finally:
            self._gate.release()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[asyncpg.Connection]:
        """One transaction on a pooled connection (its commit's errors are translated too)."""
        async with self.connection() as conn, conn.transaction():
            yield conn

    async def _one(self, method: str, name: str, args: tuple[Any, ...]) -> Any:
        """One statement on a pooled connection, through the gate: :meth:`connection` written
        out, as a generator-based context manager costs a few µs on the worker hot path."""
        await self._gate.acquire()
        try:
            with translated():
                async with self._pool.acquire() as conn:
                    return await getattr(conn, method)(q(name), *args)
        finally:
            self._gate.release()

    async def fetch(self, name: str, *args: Any) -> list[asyncpg.Record]:
        return await self._one("fetch", name, args)

    async def fetchrow(self, name: str, *args: Any) -> asyncpg.Record | None:
        return await self._one("fetchrow", name, args)

    async def fetchval(self, name: str, *args: Any) -> Any:
        return await self._one("fetchval", name, args)

    async def execute(self, name: str, *args: Any) -> str:
        return await self._one("execute", name, args)

    async def close(self) -> None:
        await self._pool.close()

    def pool_stats(self) -> tuple[int, int]:
        """(open connections, idle connections) of the pool, for the metrics gauge."""
        return self._pool.get_size(), self._pool.get_idle_size()


def row_count(status: str) -> int:
    """The row count of a command status such as ``UPDATE 3``."""
    return int(status.rsplit(" ", 1)[-1])
