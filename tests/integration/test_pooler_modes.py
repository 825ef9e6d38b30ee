"""Both connection modes plan every execution with its actual parameters.

The probe: ``SELECT probe($1) FROM generate_series(1, 0)`` where ``probe`` is an IMMUTABLE
function that raises a NOTICE. A custom plan folds ``probe(<value>)`` to a constant while
planning (one NOTICE per execution); a generic plan keeps ``probe($1)`` for the executor, which
never calls it because there are no rows (no NOTICE). The control shows the probe sees generic plans: named prepared statements under
``plan_cache_mode = auto`` switch to the generic plan after five executions. Direct mode
(``force_custom_plan`` startup parameter) and transaction mode (unnamed statements, the server's
default ``auto``, i.e. what a pooled server connection has) never do.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from hq_adapters.postgres import connect
from hq_domain.clock import SystemClock

pytestmark = pytest.mark.postgres

PROBE = """
CREATE FUNCTION hq_plan_probe(v int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
BEGIN
    RAISE NOTICE 'probe';
    RETURN v;
END $$
"""
QUERY = "SELECT hq_plan_probe($1) FROM generate_series(1, 0)"
RUNS = 10


@pytest.fixture
async def probe_dsn(pg_dsn: str) -> AsyncIterator[str]:
    conn = await asyncpg.connect(pg_dsn)
    try:
        await conn.execute(PROBE)
    finally:
        await conn.close()
    yield pg_dsn


async def calls_per_execution(conn: Any) -> list[int]:
    """NOTICEs seen per execution of QUERY: 1 = custom plan, 0 = generic plan."""
    seen: list[str] = []

    def listener(_conn: Any, message: Any) -> None:
        seen.append(message.message)

    conn.add_log_listener(listener)
    out = []
    try:
        for i in range(RUNS):
            before = len(seen)
            assert await conn.fetchval(QUERY, i) is None
            await asyncio.sleep(0.01)  # asyncpg delivers notices through call_soon
            out.append(len(seen) - before)
    finally:
        conn.remove_log_listener(listener)
    return out


async def test_the_probe_detects_generic_plans(probe_dsn: str) -> None:
    conn = await asyncpg.connect(probe_dsn, server_settings={"plan_cache_mode": "auto"})
    try:
        calls = await calls_per_execution(conn)
    finally:
        await conn.close()
    assert calls[:5] == [1] * 5 and 0 in calls[5:], calls


@pytest.mark.parametrize("pooler", ["none", "transaction"])
async def test_every_execution_gets_a_custom_plan(probe_dsn: str, pooler: str) -> None:
    store = await connect(probe_dsn, SystemClock(), pooler=pooler, min_size=1, max_size=1)
    try:
        async with store.database.pool.acquire() as conn:
            mode = await conn.fetchval("SELECT current_setting('plan_cache_mode')")
            assert mode == ("force_custom_plan" if pooler == "none" else "auto")
            calls = await calls_per_execution(conn)
    finally:
        await store.close()
    assert calls == [1] * RUNS, calls
