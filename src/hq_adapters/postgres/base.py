"""What every part of the PostgreSQL store shares: the pool, the clock, transactions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from hq_adapters.postgres.errors import translated
from hq_adapters.postgres.queries import q
from hq_domain.clock import Clock, seconds
from hq_domain.projects import ClaimOrder
from hq_domain.worker import CLAIM_SWEEP_LIMIT

DEFAULT_CLAIM_SWEEP_LIMIT = CLAIM_SWEEP_LIMIT  # overridable per store for tests


class StoreBase:
    def __init__(
        self,
        pool: asyncpg.Pool,
        clock: Clock,
        *,
        claim_sweep_limit: int = DEFAULT_CLAIM_SWEEP_LIMIT,
    ) -> None:
        self._pool = pool
        self._clock = clock
        self._claim_sweep_limit = claim_sweep_limit
        # Last claim order seen per project: picks the fast claim statement to try first (the
        # statement checks it, so a stale hint costs one round trip, never a wrong order).
        self._claim_order_hint: dict[str, ClaimOrder] = {}
        # Projects whose last enqueued batch met existing identities: the next enqueue goes
        # straight to the checking statement (see postgres/enqueue.py).
        self._existing_identities: set[str] = set()

    def _now_s(self) -> int:
        return seconds(self._clock.now_ns())

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[asyncpg.Connection]:
        """One transaction on a pooled connection; constraint violations become domain errors."""
        with translated():
            async with self._pool.acquire() as conn, conn.transaction():
                yield conn

    async def _fetch(self, name: str, *args: Any) -> list[asyncpg.Record]:
        with translated():
            return await self._pool.fetch(q(name), *args)

    async def _fetchrow(self, name: str, *args: Any) -> asyncpg.Record | None:
        with translated():
            return await self._pool.fetchrow(q(name), *args)

    async def _fetchval(self, name: str, *args: Any) -> Any:
        with translated():
            return await self._pool.fetchval(q(name), *args)

    async def _execute(self, name: str, *args: Any) -> str:
        with translated():
            return await self._pool.execute(q(name), *args)

    async def close(self) -> None:
        await self._pool.close()

    def pool_stats(self) -> tuple[int, int]:
        """(open connections, idle connections) of the pool, for the metrics gauge."""
        return self._pool.get_size(), self._pool.get_idle_size()
