"""A value nested deeper than any decoder here can follow, stored by another implementation
(the reference accepts 10,000 levels), is served verbatim by the API and shown by the dashboard's
renderer instead of a 500 (issue 13 #3)."""

from __future__ import annotations

import asyncpg
import httpx
import pytest

from hq_adapters.postgres import connect
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_apps.web.render import pretty_json
from hq_domain.clock import SystemClock
from hq_domain.jobs import JobSpec
from hq_domain.projects import ProjectPut
from hq_domain.users import Role

pytestmark = pytest.mark.postgres
DEPTH = 5_000
DEEP = '{"a":' * DEPTH + "1" + "}" * DEPTH


async def test_deep_stored_attr_is_served_verbatim(pg_dsn: str) -> None:
    store = await connect(pg_dsn, SystemClock(), min_size=1, max_size=2)
    try:
        await store.bootstrap_user("adm", [Role.ADMIN, Role.WORKER], "adm-token")
        await store.put_project("p", ProjectPut(status="active", identity_mode="none", client_versions=("t",)))
        await store.enqueue("p", [JobSpec(value="https://e/1")])
        conn = await asyncpg.connect(pg_dsn)
        try:
            await conn.execute(
                "UPDATE tracker_jobs SET spec = jsonb_set(spec, '{attr}', $1::text::jsonb)", DEEP
            )
        finally:
            await conn.close()
        app = create_app(Settings(sweep_interval_s=0, openapi=False), store)
        auth = {"Authorization": "Bearer adm-token"}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            got = await c.get("/api/v1/admin/projects/p/jobs/1", headers=auth)
            assert got.status_code == 200, got.text
            assert got.text.replace(" ", "").count('{"a":') == DEPTH
            claim = await c.post(
                "/api/v1/projects/p/jobs/claim", headers={**auth, "X-SavewebHQ-Client-Version": "t"},
                json={"worker_id": "w", "max_jobs": 1, "lease_seconds": 30, "policy_version": 1},
            )  # fmt: skip
            assert claim.status_code == 200, claim.text
            assert claim.text.replace(" ", "").count('{"a":') == DEPTH
        job = await store.get_job("p", 1)
        assert job is not None
        assert pretty_json(job.spec["attr"]).replace(" ", "") == DEEP
    finally:
        await store.close()
