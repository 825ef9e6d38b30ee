"""The enqueue route on PostgreSQL validates a ``none``-mode batch while the COPY sends it
(``PostgresEnqueue.enqueue_fields``): an invalid job anywhere in the request still answers its
400 and inserts nothing, and the pool's connection serves the next request."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from hq_adapters.postgres import connect
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import SystemClock
from hq_domain.projects import ProjectPut
from hq_domain.users import Role

pytestmark = pytest.mark.postgres
ADMIN = {"Authorization": "Bearer adm-token"}
JOBS = "/api/v1/admin/projects/p/jobs"


@pytest.fixture
async def client(pg_dsn: str) -> AsyncIterator[httpx.AsyncClient]:
    store = await connect(pg_dsn, SystemClock(), min_size=1, max_size=1)
    try:
        await store.bootstrap_user("adm", [Role.ADMIN], "adm-token")
        await store.put_project("p", ProjectPut(status="active", identity_mode="none"))
        app = create_app(Settings(sweep_interval_s=0, openapi=False), store)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            yield c
    finally:
        await store.close()


async def _todo(client: httpx.AsyncClient) -> int:
    r = await client.get("/api/v1/admin/projects/p", headers=ADMIN)
    return int(r.json()["job_counts"]["todo"])


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"value": ""}, "value must be valid UTF-8 and at most 8192 bytes"),
        ({"value": "v", "id": "x"}, "id is allowed only for external_id projects"),
        ({"value": "v", "hops": -1}, "hops"),
    ],
)
@pytest.mark.parametrize("at", [0, 650, 999])
async def test_an_invalid_job_anywhere_inserts_nothing(
    client: httpx.AsyncClient, at: int, bad: dict[str, object], message: str
) -> None:
    jobs: list[dict[str, object]] = [{"value": f"https://e/{n}"} for n in range(1000)]
    jobs[at] = bad
    r = await client.post(JOBS, json={"jobs": jobs}, headers=ADMIN)
    assert r.status_code == 400, r.text
    assert message in r.json()["error"]["message"]
    assert await _todo(client) == 0
    # the one pooled connection is fine afterwards
    r = await client.post(JOBS, json={"jobs": [{"value": f"https://e/{n}"} for n in range(1000)]}, headers=ADMIN)
    assert r.status_code == 200, r.text
    assert r.json() == {"project_id": "p", "submitted": 1000, "inserted": 1000}
    assert await _todo(client) == 1000
    r = await client.get(JOBS, params={"limit": 3}, headers=ADMIN)
    assert [j["value"] for j in r.json()["jobs"]] == ["https://e/0", "https://e/1", "https://e/2"]
