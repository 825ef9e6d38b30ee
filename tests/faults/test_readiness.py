"""``/readyz`` reflects database reachability within a bounded time; ``/healthz`` never does."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.api.readiness import readiness_handler
from hq_apps.settings import Settings
from hq_domain.clock import ManualClock
from tests.faults.live import ensure_optional_routes

KEYS = {"code", "message", "retryable", "retry_after_ms", "details"}


class FlakyStore(MemoryStore):
    """A memory store whose probe can be made to hang or fail."""

    mode = "ok"

    async def gate_project(self, project_id: str) -> Any:
        if self.mode == "hang":
            await asyncio.sleep(3600)
        if self.mode == "stubborn":  # like asyncpg: cancelling a query first talks to the server
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                await asyncio.sleep(4)
                raise
        if self.mode == "fail":
            raise ConnectionRefusedError("database is down")
        return await super().gate_project(project_id)


async def test_readyz_follows_the_database_and_healthz_does_not() -> None:
    store = FlakyStore(ManualClock())
    app = create_app(Settings(sweep_interval_s=0, openapi=False), store)
    if "/readyz" not in {r.path for r in app.routes}:  # until the lead mounts it
        app.register(readiness_handler(store, timeout_s=0.3))
    async with AsyncTestClient(app) as client:
        r = await client.get("/readyz")
        assert r.status_code == 200 and r.json() == {"status": "ok"}
        for mode in ("fail", "hang", "stubborn"):
            store.mode = mode
            t0 = time.monotonic()
            r = await client.get("/readyz")
            assert time.monotonic() - t0 < 2.5, mode
            assert r.status_code == 503, r.text
            assert r.headers["content-type"] == "application/json"
            err = r.json()["error"]
            assert set(err) == KEYS and err["code"] == "internal_error" and err["retryable"]
            assert (await client.get("/healthz")).status_code == 200
        store.mode = "ok"
        assert (await client.get("/readyz")).status_code == 200


def test_helper_mounts_missing_routes() -> None:
    store = MemoryStore(ManualClock())
    app = ensure_optional_routes(create_app(Settings(sweep_interval_s=0), store), store)
    paths = {r.path for r in app.routes}
    assert "/readyz" in paths and any(p.endswith("/source") for p in paths)


@pytest.mark.postgres
async def test_readiness_runs_a_worker_statement_on_postgres(pg_dsn: str) -> None:
    """The PostgreSQL probe (what /readyz awaits) is the worker gate, a token and project
    lookup, through the request pool: a lock that blocks worker authentication makes it fail
    in bounded time even though project reads (the old trivial probe) still succeed."""
    import asyncpg

    from hq_adapters.postgres import connect
    from hq_apps.api.readiness import database_ready
    from hq_domain.clock import SystemClock

    store = await connect(pg_dsn, SystemClock(), min_size=1, max_size=4)
    blocker = await asyncpg.connect(pg_dsn)
    try:
        assert await database_ready(store, 1.0)
        async with blocker.transaction():
            await blocker.execute("LOCK TABLE tracker_machine_tokens IN ACCESS EXCLUSIVE MODE")
            assert await store.gate_project("p") is None  # the old probe would pass
            t0 = time.monotonic()
            assert not await database_ready(store, 0.5)
            assert time.monotonic() - t0 < 1.5
        assert await database_ready(store, 1.0)
    finally:
        await blocker.close()
        await store.close()
