"""A real tracker (``create_app`` under uvicorn) in a background thread, plus an admin helper.

The store is created inside the server's own event loop (asyncpg pools and asyncio locks are
bound to their loop); the test talks to it only over HTTP, like a worker would.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import uvicorn

from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import SystemClock
from hq_domain.ids import new_machine_token
from hq_domain.ports import Store
from hq_domain.users import Role

StoreFactory = Callable[[], Awaitable[Store]]
ADMIN = "sdk-admin"


class LiveTracker:
    def __init__(self, make_store: StoreFactory) -> None:
        self._make_store = make_store
        self.token = new_machine_token()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._server: uvicorn.Server | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="live-tracker", daemon=True)

    def start(self) -> LiveTracker:
        self._thread.start()
        if not self._ready.wait(30) or self._error is not None:
            raise RuntimeError(f"tracker did not start: {self._error!r}")
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        self._thread.join(15)

    def _run(self) -> None:
        # uvloop, as production runs: the default asyncio loop answers ~45 ms late here.
        import uvloop

        try:
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                runner.run(self._main())
        except BaseException as error:  # surfaced by start()
            self._error = error
            self._ready.set()

    async def _main(self) -> None:
        store = await self._make_store()
        try:
            await store.bootstrap_user(ADMIN, [Role.ADMIN, Role.WORKER], self.token)
            app = create_app(Settings(sweep_interval_s=1.0, openapi=False), store, SystemClock())
            config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on")
            self._server = uvicorn.Server(config)
            task = asyncio.create_task(self._server.serve(sockets=[self._sock]))
            while not self._server.started and not task.done():
                await asyncio.sleep(0.02)
            self._ready.set()
            await task
        finally:
            await store.close()


class Admin:
    """The admin API over plain httpx (the SDK is worker-only)."""

    def __init__(self, tracker: LiveTracker) -> None:
        self.client = httpx.Client(
            base_url=tracker.url, headers={"Authorization": f"Bearer {tracker.token}"}, timeout=30
        )

    def _ok(self, response: httpx.Response) -> Any:
        if response.status_code >= 300:
            raise AssertionError(f"{response.request.url}: {response.status_code} {response.text}")
        return response.json() if response.content else None

    def put_project(self, project_id: str, **policy: Any) -> dict:
        body = {"status": "active", "identity_mode": "none", **policy}
        return self._ok(self.client.put(f"/api/v1/admin/projects/{project_id}", json=body))

    def enqueue(self, project_id: str, n: int, prefix: str = "https://example.com/") -> None:
        jobs = [{"value": f"{prefix}{i}"} for i in range(n)]
        self._ok(self.client.post(f"/api/v1/admin/projects/{project_id}/jobs", json={"jobs": jobs}))

    def project(self, project_id: str) -> dict:
        return self._ok(self.client.get(f"/api/v1/admin/projects/{project_id}"))

    def job(self, project_id: str, job_id: int) -> dict:
        return self._ok(self.client.get(f"/api/v1/admin/projects/{project_id}/jobs/{job_id}"))

    def worker_token(self, user_id: str) -> str:
        self._ok(
            self.client.put(
                f"/api/v1/admin/users/{user_id}", json={"status": "active", "roles": ["worker"]}
            )
        )
        return self._ok(self.client.post(f"/api/v1/admin/users/{user_id}/machine-token"))["token"]

    def close(self) -> None:
        self.client.close()
