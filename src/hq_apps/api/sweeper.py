"""D2: reset expired leases in the background, in bounded batches, for the app's lifetime."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from hq_domain.ports import MaintenancePort

log = logging.getLogger("hq.sweeper")


async def sweep_forever(store: MaintenancePort, interval_s: float, batch: int) -> None:
    while True:
        await asyncio.sleep(interval_s)
        try:
            # A full batch means more may be waiting: keep going, still bounded per call.
            while (swept := await store.sweep_expired(batch)) >= batch:
                await asyncio.sleep(0)
            if swept:
                log.info("expired leases reset", extra={"fields": {"reset": swept}})
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("lease sweep failed")


def sweeper_lifespan(
    store: MaintenancePort, interval_s: float, batch: int
) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        if interval_s <= 0:
            yield
            return
        task = asyncio.create_task(sweep_forever(store, interval_s, batch), name="hq-sweeper")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    return lifespan
