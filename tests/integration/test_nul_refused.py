"""U+0000 from a client is refused with a 400 before it reaches PostgreSQL, whose text and
jsonb cannot hold it (each of these answered 500 before): job fields on the enqueue route and
in an uploaded source, outcome and error fields on the worker routes, a project's client
versions, and the admin routes' query parameters."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import zstandard

from hq_adapters.postgres import connect
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import SystemClock
from hq_domain.jobs import JobSpec
from hq_domain.projects import ProjectPut
from hq_domain.users import Role

pytestmark = pytest.mark.postgres
ADMIN = {"Authorization": "Bearer adm-token"}
WORKER = {**ADMIN, "X-SavewebHQ-Client-Version": "t"}


@pytest.fixture
async def client(pg_dsn: str) -> AsyncIterator[httpx.AsyncClient]:
    store = await connect(pg_dsn, SystemClock(), min_size=1, max_size=2)
    try:
        await store.bootstrap_user("adm", [Role.ADMIN, Role.WORKER], "adm-token")
        for project, mode in (("p", "none"), ("x", "external_id")):
            await store.put_project(
                project, ProjectPut(status="active", identity_mode=mode, client_versions=("t",))
            )
        await store.enqueue("p", [JobSpec(value="https://e/1")])
        app = create_app(Settings(sweep_interval_s=0, openapi=False), store)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            yield c
    finally:
        await store.close()


def refused(response: httpx.Response, message: str) -> None:
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("project", "job", "message"),
    [
        ("p", {"value": "a\u0000b"}, "value must not contain U+0000"),
        ("p", {"value": "v", "via": "\u0000"}, "via must not contain U+0000"),
        ("p", {"value": "v", "attr": {"k": ["\u0000"]}}, "invalid attr: must not contain U+0000"),
        ("x", {"id": "j1", "value": "v\u0000"}, "value must not contain U+0000"),
    ],
)
async def test_enqueue_refuses_nul(
    client: httpx.AsyncClient, project: str, job: dict[str, object], message: str
) -> None:
    good = {"value": "https://e/ok"} | ({"id": "j0"} if project == "x" else {})
    got = await client.post(f"/api/v1/admin/projects/{project}/jobs", headers=ADMIN,
                            json={"jobs": [good, job]})  # fmt: skip
    refused(got, message)
    listed = await client.get(f"/api/v1/admin/projects/{project}/jobs", headers=ADMIN)
    assert listed.status_code == 200, listed.text
    assert "https://e/ok" not in listed.text  # nothing of the batch was stored


async def test_source_upload_refuses_nul(client: httpx.AsyncClient) -> None:
    lines = b'{"value":"https://e/a"}\n{"value":"b\\u0000"}\n'
    body = zstandard.ZstdCompressor().compress(lines)
    got = await client.post(
        "/api/v1/admin/projects/p/source", headers={**ADMIN, "Content-Type": "application/zstd"},
        content=body,
    )  # fmt: skip
    assert got.status_code == 400, got.text
    assert "line 2: value must not contain U+0000" in got.json()["error"]["message"]


async def _claimed(client: httpx.AsyncClient) -> dict[str, object]:
    got = await client.post(
        "/api/v1/projects/p/jobs/claim", headers=WORKER,
        json={"worker_id": "w", "max_jobs": 1, "lease_seconds": 60, "policy_version": 1},
    )  # fmt: skip
    assert got.status_code == 200, got.text
    job = got.json()["jobs"][0]
    return {"job_id": job["job_id"], "attempt_id": job["attempt_id"]}


@pytest.mark.parametrize(
    ("outcome", "message"),
    [
        ({"kind": "success", "meta": {"k": "\u0000"}}, "invalid outcome meta: must not contain"),
        ({"kind": "success", "uri": "https://e/\u0000"}, "outcome URI must not contain U+0000"),
    ],
)
async def test_complete_refuses_nul(
    client: httpx.AsyncClient, outcome: dict[str, object], message: str
) -> None:
    ref = await _claimed(client)
    got = await client.post("/api/v1/projects/p/jobs/complete", headers=WORKER,
                            json={"worker_id": "w", "items": [{**ref, "outcome": outcome}]})  # fmt: skip
    refused(got, message)


async def test_fail_refuses_nul(client: httpx.AsyncClient) -> None:
    ref = await _claimed(client)
    error = {"code": "E", "message": "m", "details": {"\u0000": 1}}
    got = await client.post("/api/v1/projects/p/jobs/fail", headers=WORKER,
                            json={"worker_id": "w", "items": [{**ref, "error": error}]})  # fmt: skip
    refused(got, "invalid execution error details: must not contain U+0000")


async def test_project_client_versions_refuse_nul(client: httpx.AsyncClient) -> None:
    got = await client.put("/api/v1/admin/projects/q", headers=ADMIN,
                           json={"status": "active", "client_versions": ["v\u0000"]})  # fmt: skip
    refused(got, "client_versions entries must not contain U+0000")


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/admin/projects/p/jobs?status=%00",
        "/api/v1/admin/projects/p/jobs?after_job_id=%00",
        "/api/v1/admin/projects/p/jobs/1%00",
        "/api/v1/admin/projects/p%00",
        "/api/v1/admin/users/u%00",
        "/api/v1/admin/projects/p/failures?cursor=%00",
    ],
)
async def test_admin_reads_never_fail_on_nul(client: httpx.AsyncClient, path: str) -> None:
    got = await client.get(path, headers=ADMIN)
    assert got.status_code < 500, (path, got.status_code, got.text)
