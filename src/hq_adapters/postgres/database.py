"""What every port class of the PostgreSQL adapter shares: the pool, the clock, and statement
and transaction helpers that turn constraint violations into domain errors.

It holds no state of any port: per-port state (the worker's claim-order hints, the enqueue
identity hints) lives in the port's own class (``worker.py``, ``enqueue.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from hq_adapters.postgres.errors import translated
from hq_adapters.postgres.fair_gate import FairGate
from hq_adapters.postgres.joined import (
    MAX_ITEMS,
    Call,
    Group,
    Joiner,
    fail_all,
    run_alone,
    run_joined,
)
from hq_adapters.postgres.queries import q
from hq_domain.clock import Clock, seconds


class Database:
    """One asyncpg pool and the clock every statement's time comes from. Statements are named
    blocks of ``sql/*.sql`` (:func:`hq_adapters.postgres.queries.q`). Every connection taken
    here passes a :class:`~hq_adapters.postgres.fair_gate.FairGate` first, so requests get
    connections in the order they asked.

    A connection that ends its statement or transaction cleanly is *kept* here rather than
    released to the pool, and the next holder takes it straight from :attr:`_kept`: asyncpg's
    acquire and release (a proxy, a future, an inactivity timer, a shielded task and a timeout
    each time) were about a tenth of the tracker's CPU per worker request
    (benchmarks/notes/optimisations.md, row 28). The gate admits at most the pool's size of
    holders, so kept plus held connections never exceed it. A connection that fails, is
    cancelled or is left in a transaction goes back through ``pool.release``, which cleans it
    up or replaces it, as before. Kept connections skip the pool's ``max_queries`` and idle
    lifetime: at most the pool's size stay open while the process lives. One Database per
    pool: ``pool.close()`` waits for every connection, and only this Database's
    :meth:`close` hands back the ones it keeps.
    """

    def __init__(
        self, pool: asyncpg.Pool, clock: Clock, *, worker_lanes: int | None = None
    ) -> None:
        self._pool = pool
        self._clock = clock
        self._gate = FairGate(pool.get_max_size())
        # worker calls that may join (fetchrow_joined) run at most this many at once
        self._lane_count = min(worker_lanes or pool.get_max_size(), pool.get_max_size())
        self._lanes = FairGate(self._lane_count)
        self._connections: Callable[[], int] | None = None
        self._kept: list[Any] = []
        self._closing = False
        self._joiner = Joiner(self._run_group)

    @property
    def pool(self) -> asyncpg.Pool:
        """The pool, for tests that need it whole. Connections kept here are not among its
        idle ones: take a connection with :meth:`connection` instead of ``pool.acquire``."""
        return self._pool

    @property
    def clock(self) -> Clock:
        return self._clock

    def now_ns(self) -> int:
        return self._clock.now_ns()

    def now_s(self) -> int:
        return seconds(self._clock.now_ns())

    async def _take(self) -> Any:
        """A kept connection, or one from the pool. A kept one the server closed meanwhile
        (a restart, a failover, a terminated backend) goes back to the pool, which replaces
        it, as its ``acquire`` would have: the request never sees it."""
        kept = self._kept
        while kept:
            conn = kept.pop()
            if _open(conn):
                return conn
            await self._pool.release(conn)  # a no-op when the pool took it back itself
        return await self._pool.acquire()

    async def _give_back(self, conn: Any, clean: bool) -> None:
        if clean and not self._closing and _open(conn) and not conn.is_in_transaction():
            self._kept.append(conn)
        else:
            await self._pool.release(conn)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection without a transaction (a single read of several steps)."""
        await self._gate.acquire()
        try:
            with translated():
                conn = await self._take()
                clean = False
                try:
                    yield conn
                    clean = True
                finally:
                    await self._give_back(conn, clean)
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
                kept = self._kept  # :meth:`_take`'s usual case inline, the rest left to it
                conn = kept.pop() if kept and _open(kept[-1]) else await self._take()
                clean = False
                try:
                    result = await getattr(conn, method)(q(name), *args)
                    clean = True
                    return result
                finally:
                    await self._give_back(conn, clean)
        finally:
            self._gate.release()

    async def fetchrow_joined(
        self, name: str, joined: str, key: str, args: tuple[Any, ...], items: int
    ) -> Any:
        """:meth:`fetchrow` of the one-row statement ``name``, which may run with other
        callers' calls of it on the same ``key`` as the block ``joined`` when it has to wait
        (:mod:`hq_adapters.postgres.joined`). With a lane and a connection free it runs alone,
        as :meth:`fetchrow` does.

        At most ``worker_lanes`` such calls (or groups) hold a connection at once; the rest of
        the pool stays for everything else. Fewer lanes than connections make more calls
        join: on two cores, one lane per process served more jobs/s at every measured size
        than four (benchmarks/notes/optimisations.md, row 45). A call of more than
        ``MAX_ITEMS`` items (jobs claimed or completed) always runs alone, outside the lanes,
        and so does a call that no other request could come to join
        (:meth:`count_connections_with`)."""
        if items > MAX_ITEMS:
            return await self._one("fetchrow", name, args)
        if self._gate.free:
            if self._lanes.free:
                await self._lanes.acquire()  # free: returns at once
                try:
                    return await self._one("fetchrow", name, args)
                finally:
                    self._lanes.release()
            if self._nobody_could_join():
                return await self._one("fetchrow", name, args)
        return await self._joiner.join(name, joined, key, args)

    def count_connections_with(self, count: Callable[[], int]) -> None:
        """``count()`` is how many client connections this process holds; the serving
        process sets it (``hq_apps.wiring.serve``).

        A worker call waits for a lane only so that other calls can join it. Each connection
        has at most one request in flight, so while the process holds no more connections than
        its lanes plus one, every other request is already running on a lane, and a waiting
        call would wait alone: it takes a free connection instead. On two processes with two
        workers each, that served 8–10 % more jobs/s at W=4 on an Intel Xeon VM and made no
        measurable difference on an AMD EPYC one (benchmarks/notes/optimisations.md, row 49
        and the twenty-eighth session). With more connections the calls wait and join as
        before."""
        self._connections = count

    def _nobody_could_join(self) -> bool:
        count = self._connections
        return count is not None and count() <= self._lane_count + 1

    async def _run_group(self, group: Group) -> None:
        """A group's task: wait for a lane and then in the gate's line, then run the group's
        live calls."""
        try:
            await self._lanes.acquire()
            try:
                await self._gate.acquire()
            except BaseException:
                self._lanes.release()
                raise
        except BaseException as exc:
            fail_all(self._joiner.close(group), exc)
            raise
        try:
            calls = self._joiner.close(group)
            if calls:
                await self._run_calls(group, calls)
        finally:
            self._gate.release()
            self._lanes.release()

    async def _run_calls(self, group: Group, calls: list[Call]) -> None:
        conn = None
        clean = False
        try:
            conn = await self._take()
            if len(calls) == 1 or not await run_joined(conn, q(group.joined), calls):
                for args, future in calls:
                    await run_alone(conn, q(group.name), args, future)
            fail_all(calls, RuntimeError("a joined call got no answer"))  # none is left waiting
            clean = True
        except BaseException as exc:
            fail_all(calls, exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            if conn is not None:
                await self._give_back(conn, clean)

    async def fetch(self, name: str, *args: Any) -> list[asyncpg.Record]:
        return await self._one("fetch", name, args)

    async def fetchrow(self, name: str, *args: Any) -> asyncpg.Record | None:
        return await self._one("fetchrow", name, args)

    async def fetchval(self, name: str, *args: Any) -> Any:
        return await self._one("fetchval", name, args)

    async def execute(self, name: str, *args: Any) -> str:
        return await self._one("execute", name, args)

    async def probe(self, name: str, *args: Any, timeout: float) -> asyncpg.Record | None:
        """``fetchrow`` outside the gate's line (readiness asks whether a statement runs now,
        not how long the queue is), cancelled server-side after ``timeout`` seconds. Its
        connection always goes back to the pool, where a holder may be waiting for it: one
        kept here would not wake that holder."""
        conn = await self._take()
        try:
            return await conn.fetchrow(q(name), *args, timeout=timeout)
        finally:
            await self._pool.release(conn)

    async def close(self) -> None:
        self._closing = True
        await self._joiner.aclose()
        kept, self._kept = self._kept, []
        for conn in kept:
            await self._pool.release(conn)
        await self._pool.close()

    def pool_stats(self) -> tuple[int, int]:
        """(open connections, idle connections) of the pool, for the metrics gauge."""
        return self._pool.get_size(), self._pool.get_idle_size() + len(self._kept)


def _open(conn: Any) -> bool:
    """Whether a pool connection is still usable: not closed, and not already taken back by
    the pool (asyncpg does that itself when the server closes the connection, and the proxy
    then refuses every call)."""
    try:
        return not conn.is_closed()
    except asyncpg.InterfaceError:
        return False


def row_count(status: str) -> int:
    """The row count of a command status such as ``UPDATE 3``."""
    return int(status.rsplit(" ", 1)[-1])
