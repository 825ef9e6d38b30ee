"""D2: reset expired leases in the background, in bounded batches, for the app's lifetime."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from hq_apps.api import observers
from hq_domain.ports import MaintenancePort, ObservePort
from hq_domain.worker_tally import WorkerTally

log = logging.getLogger("hq.sweeper")


async def sweep_forever(store: MaintenancePort, interval_s: float, batch: int) -> None:
    while True:
        await asyncio.sleep(interval_s)
        try:
            # A full batch means more may be waiting: keep going, still bounded per call.
            while (swept := await store.sweep_expired(batch)) >= batch:
                observers.current.swept(swept)
                await asyncio.sleep(0)
            observers.current.swept(swept)
            if swept:
                log.info("expired leases reset", extra={"fields": {"reset": swept}})
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("lease sweep failed")


async def flush_tally(store: ObservePort, tally: WorkerTally) -> None:
    """Add what this process's complete/fail routes counted to the per-worker minutes; on
    failure the counts go back into the tally for the next flush."""
    drained = tally.drain()
    try:
        await store.record_worker_minutes(drained)
    except BaseException:
        tally.restore(drained)
        raise


async def observe_forever(
    store: ObservePort,
    fold_interval_s: float,
    history_interval_s: float,
    tally: WorkerTally | None = None,
) -> None:
    """Off the request path: fold job-count deltas every ``fold_interval_s`` (keeps count
    reads cheap), snapshot the counts and flush the worker tally every
    ``history_interval_s``. Any number of processes may run this: folds never double-count,
    a minute's snapshot is an upsert and tallies add."""
    next_history = 0.0
    loop = asyncio.get_running_loop()
    while True:
        try:
            await store.fold_counts()
            if loop.time() >= next_history:
                next_history = loop.time() + history_interval_s
                await store.record_history()
                if tally is not None:
                    await flush_tally(store, tally)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("count fold, history snapshot or worker tally flush failed")
        await asyncio.sleep(fold_interval_s)


def history_lifespan(
    store: ObservePort,
    interval_s: float,
    fold_interval_s: float = 2.0,
    tally: WorkerTally | None = None,
) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        if interval_s <= 0:
            yield
            return
        task = asyncio.create_task(
            observe_forever(store, min(fold_interval_s, interval_s), interval_s, tally),
            name="hq-observe",
        )
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            if tally is not None:  # a clean shutdown loses no counts
                try:
                    await flush_tally(store, tally)
                except Exception:
                    log.exception("worker tally flush at shutdown failed")

    return lifespan


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
