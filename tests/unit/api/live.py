"""Run the real app under uvicorn on a free TCP port in a background thread (memory store), or
any ASGI app under a given uvicorn protocol (:func:`uvicorn_in_thread`)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import SystemClock
from hq_domain.users import Role

ADMIN_TOKEN = "live-admin-token"
WORKER_TOKEN = "live-worker-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def live_memory_server() -> Iterator[str]:
    port = free_port()
    ready = threading.Event()
    holder: dict[str, uvicorn.Server] = {}

    async def main() -> None:
        store = MemoryStore(SystemClock())
        await store.bootstrap_user("admin", [Role.ADMIN], ADMIN_TOKEN)
        await store.bootstrap_user("worker", [Role.WORKER], WORKER_TOKEN)
        app = create_app(Settings(sweep_interval_s=1), store)
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None,
                                access_log=False, lifespan="on", http="httptools")  # fmt: skip
        server = holder["server"] = uvicorn.Server(config)
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        ready.set()
        await task

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(10), "server did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        holder["server"].should_exit = True
        thread.join(10)
        time.sleep(0)


@contextmanager
def uvicorn_in_thread(app: Any, **config: Any) -> Iterator[tuple[str, int]]:
    """``app`` served by uvicorn with ``config`` on a loopback socket; yields (host, port)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="error", **config))
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True
    )
    thread.start()
    while not server.started:
        thread.join(0.01)
    try:
        yield sock.getsockname()[:2]
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
