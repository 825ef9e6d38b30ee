"""``serve`` keeps the heap built at startup out of the collector's full collections."""

from __future__ import annotations

import asyncio
import contextlib
import gc

import httpx
import pytest

from hq_apps import wiring
from hq_apps.settings import Settings
from tests.unit.api.live import free_port

pytestmark = pytest.mark.postgres


async def test_serving_freezes_the_startup_heap_and_gives_it_back(pg_dsn: str) -> None:
    await wiring.run_migrations(pg_dsn)
    gc.unfreeze()
    port = free_port()
    started = asyncio.Event()
    frozen: list[int] = []

    def on_started() -> None:
        frozen.append(gc.get_freeze_count())
        started.set()

    settings = Settings(database_url=pg_dsn, sweep_interval_s=0)
    task = asyncio.create_task(wiring.serve(settings, "127.0.0.1", port, on_started=on_started))
    try:
        await asyncio.wait_for(started.wait(), 30)
        async with httpx.AsyncClient() as client:  # and it still serves
            assert (await client.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    # The modules, the app and the store: tens of thousands of objects.
    assert frozen[0] > 10_000
    assert gc.get_freeze_count() == 0
