"""``serve`` tells the store's lanes how many client connections the process holds
(``Database.count_connections_with``), counted as uvicorn counts them."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import pytest

from hq_apps import wiring
from hq_apps.settings import Settings
from tests.unit.api.live import free_port

pytestmark = pytest.mark.postgres


async def _until(check: Any, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_serve_counts_its_open_connections_for_the_lanes(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await wiring.run_migrations(pg_dsn)
    stores: list[Any] = []
    real_open_store = wiring.open_store

    async def capturing(settings: Settings, clock: Any) -> Any:
        stores.append(await real_open_store(settings, clock))
        return stores[-1]

    monkeypatch.setattr(wiring, "open_store", capturing)
    port = free_port()
    started = asyncio.Event()
    settings = Settings(database_url=pg_dsn, sweep_interval_s=0)
    task = asyncio.create_task(wiring.serve(settings, "127.0.0.1", port, on_started=started.set))
    try:
        await asyncio.wait_for(started.wait(), 30)
        count = stores[0].database._connections
        assert count is not None and count() == 0
        url = f"http://127.0.0.1:{port}/healthz"
        async with httpx.AsyncClient() as first, httpx.AsyncClient() as second:
            assert (await first.get(url)).status_code == 200
            assert (await second.get(url)).status_code == 200
            await _until(lambda: count() == 2)  # one keep-alive connection each
            await first.aclose()
            await _until(lambda: count() == 1)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
