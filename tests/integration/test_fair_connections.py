"""A request that waited for a pooled connection gets it before one that asks later
(hq_adapters.postgres.fair_gate), on a real pool and server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import asyncpg
import pytest

from hq_adapters.postgres import connect
from hq_adapters.postgres.store import keep_session
from hq_domain.clock import SystemClock

pytestmark = pytest.mark.postgres

# How many loop steps after the holder is told to return its connection the newcomer asks:
# the connection comes back to asyncpg's queue a few steps later (its release runs in a task
# of its own), and the newcomer must ask in that window to get ahead of the waiter.
STEPS = range(8)

Acquire = Callable[[], AbstractAsyncContextManager[Any]]


async def _served_order(acquire: Acquire, steps: int) -> list[str]:
    """One connection held; a waiter in line; a newcomer asks ``steps`` after the release."""
    order: list[str] = []
    release = asyncio.Event()

    async def holder() -> None:
        async with acquire():
            await release.wait()

    async def ask(name: str) -> None:
        async with acquire() as conn:
            order.append(name)
            await conn.fetchval("SELECT 1")

    held = asyncio.create_task(holder())
    await asyncio.sleep(0.02)
    waiter = asyncio.create_task(ask("waiter"))
    await asyncio.sleep(0.02)  # the waiter is in line
    release.set()
    for _ in range(steps):
        await asyncio.sleep(0)
    newcomer = asyncio.create_task(ask("newcomer"))
    await asyncio.gather(held, waiter, newcomer)
    return order


async def test_the_waiter_is_always_served_before_a_newcomer(pg_dsn: str) -> None:
    store = await connect(pg_dsn, SystemClock(), min_size=1, max_size=1)
    try:
        for steps in STEPS:
            assert await _served_order(store.database.connection, steps) == ["waiter", "newcomer"]
    finally:
        await store.close()


async def test_without_the_gate_a_newcomer_can_overtake(pg_dsn: str) -> None:
    """The race the gate closes, shown on asyncpg's pool itself (the store's pool options)."""
    pool = await asyncpg.create_pool(pg_dsn, min_size=1, max_size=1, reset=keep_session)
    try:
        orders = [await _served_order(pool.acquire, steps) for steps in STEPS]
        assert ["newcomer", "waiter"] in orders
    finally:
        await pool.close()
