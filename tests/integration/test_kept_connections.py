"""Connections the Database keeps between statements instead of releasing them to asyncpg's
pool (hq_adapters.postgres.database), on a real pool and server: a clean connection is reused
as it is; anything else goes back through ``pool.release``, which cleans it up."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from hq_adapters.postgres import database
from hq_adapters.postgres.database import Database
from hq_adapters.postgres.store import keep_session
from hq_domain.clock import SystemClock

pytestmark = pytest.mark.postgres

PID = "SELECT pg_backend_pid()"


@pytest.fixture
async def db(pg_dsn):
    pool = await asyncpg.create_pool(pg_dsn, min_size=1, max_size=2, reset=keep_session)
    database = Database(pool, SystemClock())
    yield database
    await asyncio.wait_for(database.close(), 10)


async def _pid(db: Database) -> int:
    async with db.connection() as conn:
        return await conn.fetchval(PID)


async def test_a_clean_connection_is_kept_and_reused(db: Database) -> None:
    first = await _pid(db)
    assert db.pool_stats() == (1, 1)  # kept, and counted as idle
    assert await db.execute("fold_job_counts")
    assert await _pid(db) == first
    assert len(db._kept) == 1 and db.pool.get_idle_size() == 0  # asyncpg never saw it back


async def test_a_failed_statement_returns_its_connection_to_the_pool(db: Database) -> None:
    with pytest.raises(asyncpg.PostgresError):
        async with db.connection() as conn:
            await conn.execute("SELECT 1/0")
    assert db._kept == [] and db.pool.get_idle_size() == 1
    assert await _pid(db)  # and it still works


async def test_a_connection_left_in_a_transaction_is_rolled_back_not_kept(db: Database) -> None:
    async with db.connection() as conn:
        await conn.execute("BEGIN")
        await conn.execute("CREATE TEMP TABLE left_open (x int)")
    assert db._kept == []
    async with db.connection() as conn:
        assert not conn.is_in_transaction()
        assert await conn.fetchval("SELECT to_regclass('pg_temp.left_open')") is None


async def test_a_cancelled_statement_returns_its_connection_to_the_pool(db: Database) -> None:
    async def sleeper() -> None:
        async with db.connection() as conn:
            await conn.execute("SELECT pg_sleep(30)")

    task = asyncio.create_task(sleeper())
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert db._kept == []
    async with db.connection() as conn:
        assert await conn.fetchval("SELECT 1") == 1


async def test_the_probe_takes_a_kept_connection_and_gives_it_to_the_pool(db: Database) -> None:
    await asyncio.gather(_pid(db), _pid(db))
    assert len(db._kept) == 2  # the whole pool is kept
    row = await db.probe("worker_gate", b"x" * 32, "p", timeout=5)
    assert row is not None
    assert len(db._kept) == 1 and db.pool.get_idle_size() == 1
    # A holder finding nothing kept takes the probe's connection from the pool.
    await asyncio.wait_for(asyncio.gather(_pid(db), _pid(db)), 10)


async def test_close_releases_the_kept_connections(pg_dsn) -> None:
    pool = await asyncpg.create_pool(pg_dsn, min_size=1, max_size=2, reset=keep_session)
    database = Database(pool, SystemClock())
    await asyncio.gather(_pid(database), _pid(database))
    assert len(database._kept) == 2
    await asyncio.wait_for(database.close(), 10)  # pool.close() waits for every release
    assert database._kept == [] and pool.get_size() == 0


async def test_a_kept_connection_the_server_closed_is_replaced_unseen(db: Database) -> None:
    first = await _pid(db)
    async with db.pool.acquire() as other:  # the pool's second connection
        assert await other.fetchval("SELECT pg_terminate_backend($1)", first)
    for _ in range(100):  # the kept connection notices the server hung up
        if not database._open(db._kept[0]):
            break
        await asyncio.sleep(0.02)
    assert not database._open(db._kept[0])  # asyncpg took it back to the pool itself
    assert await db.execute("fold_job_counts")  # a fresh connection, no error
    assert await _pid(db) != first
