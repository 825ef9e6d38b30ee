"""Fixtures for the HTTP app on the memory adapter: a manual clock, seeded users, a client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import ManualClock
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus

ADMIN_TOKEN = "admin-token"
WORKER_TOKEN = "worker-token"
VERSION = "v1.0"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
WORKER = {"Authorization": f"Bearer {WORKER_TOKEN}", "X-SavewebHQ-Client-Version": VERSION}
NO_STORE = {
    "cache-control": "no-store, no-cache, max-age=0",
    "pragma": "no-cache",
    "cloudflare-cdn-cache-control": "no-store",
    "cdn-cache-control": "no-store",
    "expires": "0",
}


class Api:
    """Thin helpers over the test client; every call returns the raw httpx response."""

    def __init__(self, client: httpx.AsyncClient, store: MemoryStore, clock: ManualClock) -> None:
        self.client = client
        self.store = store
        self.clock = clock

    async def put_project(self, project_id: str = "p", **fields: Any) -> httpx.Response:
        body = {"status": "active", "client_versions": [VERSION], **fields}
        r = await self.client.put(f"/api/v1/admin/projects/{project_id}", json=body, headers=ADMIN)
        assert r.status_code == 200, r.text
        return r

    async def enqueue(self, project_id: str, jobs: list[dict[str, Any]]) -> httpx.Response:
        return await self.client.post(
            f"/api/v1/admin/projects/{project_id}/jobs", json={"jobs": jobs}, headers=ADMIN
        )

    async def claim(self, project_id: str = "p", **fields: Any) -> httpx.Response:
        body = {"worker_id": "w1", "max_jobs": 10, "lease_seconds": 60, "policy_version": 1}
        body.update(fields)
        return await self.client.post(
            f"/api/v1/projects/{project_id}/jobs/claim", json=body, headers=WORKER
        )

    async def post_worker(self, project_id: str, op: str, body: Any) -> httpx.Response:
        return await self.client.post(
            f"/api/v1/projects/{project_id}/jobs/{op}", json=body, headers=WORKER
        )

    async def job(self, project_id: str, job_id: int) -> dict[str, Any]:
        r = await self.client.get(
            f"/api/v1/admin/projects/{project_id}/jobs/{job_id}", headers=ADMIN
        )
        assert r.status_code == 200, r.text
        return r.json()

    async def counts(self, project_id: str = "p") -> dict[str, int]:
        r = await self.client.get(f"/api/v1/admin/projects/{project_id}", headers=ADMIN)
        return r.json()["job_counts"]


async def seed_users(store: MemoryStore) -> None:
    await store.bootstrap_user("admin", [Role.ADMIN], ADMIN_TOKEN)
    await store.bootstrap_user("worker", [Role.WORKER], WORKER_TOKEN)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def store(clock: ManualClock) -> MemoryStore:
    store = MemoryStore(clock)
    await seed_users(store)
    return store


@pytest.fixture
async def client(store: MemoryStore, clock: ManualClock) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(sweep_interval_s=0), store, clock)
    async with AsyncTestClient(app, raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def api(client: httpx.AsyncClient, store: MemoryStore, clock: ManualClock) -> Api:
    return Api(client, store, clock)


def error(r: httpx.Response) -> dict[str, Any]:
    """The error object of an envelope, checking that exactly the five keys are present."""
    body = r.json()
    assert list(body) == ["error"]
    assert set(body["error"]) == {"code", "message", "retryable", "retry_after_ms", "details"}
    return body["error"]


__all__ = ["ADMIN", "NO_STORE", "VERSION", "WORKER", "Api", "ProjectPut", "UserStatus", "error"]
