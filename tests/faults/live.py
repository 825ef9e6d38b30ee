"""The real app over PostgreSQL under uvicorn on a free 127.0.0.1 port, in a background thread.

Used where a test needs a real TCP peer (a client that drops its connection) but not a separate
process. Routes another task has written but the lead has not yet mounted in ``create_app``
(route 8, ``/readyz``) are registered here so the tests can run either way.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from litestar import Litestar

from hq_adapters.postgres import connect
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import SystemClock
from tests.unit.api.live import free_port

SOURCE_PATH = "/api/v1/admin/projects/{project_id:str}/source"


def ensure_optional_routes(app: Litestar, store: Any) -> Litestar:
    paths = {r.path for r in app.routes}
    if SOURCE_PATH not in paths:
        from hq_apps.api.source_upload import source_handlers

        for handler in source_handlers(store):
            app.register(handler)
    if "/readyz" not in paths:
        from hq_apps.api.readiness import readiness_handler

        app.register(readiness_handler(store))
    return app


@contextmanager
def live_pg_server(dsn: str) -> Iterator[str]:
    port = free_port()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    async def main() -> None:
        store = await connect(dsn, SystemClock(), min_size=1, max_size=8)
        try:
            app = ensure_optional_routes(create_app(Settings(sweep_interval_s=0), store), store)
            config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None,
                                    access_log=False, lifespan="on", http="httptools")  # fmt: skip
            server = holder["server"] = uvicorn.Server(config)
            task = asyncio.create_task(server.serve())
            while not server.started and not task.done():
                await asyncio.sleep(0.01)
            ready.set()
            await task
        finally:
            await store.close()

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(20), "server did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        holder["server"].should_exit = True
        thread.join(15)
