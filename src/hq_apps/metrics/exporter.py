"""The metrics listener: a separate address (never the public port), started by the app's
lifespan once the event loop runs. The scrape is served by prometheus_client's threaded WSGI
server; database gauges run their reads on the app's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, start_http_server

from hq_apps.api import observers
from hq_apps.metrics.database import DatabaseCollector
from hq_apps.metrics.instruments import BUILD, POOL, PrometheusObserver, version
from hq_domain.clock import Clock
from hq_domain.ports import Store

log = logging.getLogger("hq.metrics")
POOL_REFRESH_S = 5.0


def registry_for_scrape(store: Store, clock: Clock, loop: asyncio.AbstractEventLoop) -> CollectorRegistry:
    """With PROMETHEUS_MULTIPROC_DIR: the aggregate of every process's files; else this
    process's registry. Both plus the database collector."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = CollectorRegistry()
        registry.register(_Forward(REGISTRY))
    registry.register(DatabaseCollector(store, clock, loop))
    return registry


class _Forward:
    """Expose the default registry's metrics through another registry."""

    def __init__(self, source: CollectorRegistry) -> None:
        self._source = source

    def collect(self):  # type: ignore[no-untyped-def]
        return self._source.collect()


async def _refresh_pool(store: Store) -> None:
    stats = getattr(store, "pool_stats", None)
    while stats is not None:
        size, idle = stats()
        POOL.labels("in_use").set(size - idle)
        POOL.labels("idle").set(idle)
        await asyncio.sleep(POOL_REFRESH_S)


def metrics_lifespan(
    listen: tuple[str, int], store: Store, clock: Clock
) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        observers.install(PrometheusObserver())
        BUILD.labels(version()).set(1)
        host, port = listen
        server = None
        try:
            server, _thread = start_http_server(
                port, host, registry_for_scrape(store, clock, asyncio.get_running_loop())
            )
            app.state.metrics_address = server.server_address[:2]
            log.info("metrics listening", extra={"fields": {"listen": f"{host}:{port}"}})
        except OSError as exc:
            # Another process of this server bound it first: it serves every process's
            # metrics (multiprocess mode); this one only writes its own.
            log.info("metrics address taken", extra={"fields": {"error": str(exc)}})
        task = asyncio.create_task(_refresh_pool(store), name="hq-metrics-pool")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            if server is not None:
                server.shutdown()
                server.server_close()
            observers.reset()
            if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
                from prometheus_client import multiprocess

                # drop this process's live gauges (pool) from the others' aggregate
                multiprocess.mark_process_dead(os.getpid())

    return lifespan
