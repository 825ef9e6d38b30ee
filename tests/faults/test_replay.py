"""Replayed, late and duplicated mutations on PostgreSQL (a worker retrying after a lost
response, or two copies racing): for one attempt exactly one mutation applies, every other copy
is an item-level ``stale_attempt``, and the job's counters move once."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from hq_adapters.postgres import connect
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import SystemClock
from tests.faults.harness import ADMIN, WORKER, job_rows, seed

pytestmark = pytest.mark.postgres

P = "replay"
COPIES = 6


@pytest.fixture
async def client(pg_dsn: str) -> AsyncIterator[httpx.AsyncClient]:
    await seed(pg_dsn, P, 60, max_resets=3)
    store = await connect(pg_dsn, SystemClock(), min_size=2, max_size=12)
    app = create_app(Settings(sweep_interval_s=0, openapi=False), store)
    try:
        # same event loop as the pool (AsyncTestClient would run the app on a portal thread)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hq") as c:
            yield c
    finally:
        await store.close()


async def _claim(c: httpx.AsyncClient, n: int, lease: int = 60, worker: str = "w1") -> list[Any]:
    body = {"worker_id": worker, "max_jobs": n, "lease_seconds": lease, "policy_version": 1}
    r = await c.post(f"/api/v1/projects/{P}/jobs/claim", json=body, headers=WORKER)
    assert r.status_code == 200, r.text
    return r.json()["jobs"]


def _complete(job: dict[str, Any], worker: str = "w1") -> tuple[str, dict[str, Any]]:
    item = {"job_id": job["job_id"], "attempt_id": job["attempt_id"],
            "outcome": {"kind": "success", "code": 200, "uri": None, "meta": None},
            "artifact_receipts": None}  # fmt: skip
    return "complete", {"worker_id": worker, "items": [item]}


def _fail(job: dict[str, Any], retryable: bool = True) -> tuple[str, dict[str, Any]]:
    item = {"job_id": job["job_id"], "attempt_id": job["attempt_id"], "retryable": retryable,
            "error": {"code": "boom", "message": "x", "details": None}}  # fmt: skip
    return "fail", {"worker_id": "w1", "items": [item]}


async def _send(c: httpx.AsyncClient, op: str, body: dict[str, Any]) -> list[str]:
    r = await c.post(f"/api/v1/projects/{P}/jobs/{op}", json=body, headers=WORKER)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    for res in results:
        if res["status"] == "rejected":
            assert res["error"]["code"] == "stale_attempt" and res["job_status"] is None
    return [res["status"] for res in results]


async def _race(c: httpx.AsyncClient, requests: list[tuple[str, dict[str, Any]]]) -> Counter[str]:
    outcomes = await asyncio.gather(*(_send(c, op, body) for op, body in requests))
    return Counter(s for statuses in outcomes for s in statuses)


async def test_duplicated_completions_apply_once(client: httpx.AsyncClient, pg_dsn: str) -> None:
    jobs = await _claim(client, 10)
    for job in jobs:
        assert await _race(client, [_complete(job)] * COPIES) == {
            "applied": 1,
            "rejected": COPIES - 1,
        }
    # a replay long after the response was "lost"
    for job in jobs:
        assert await _send(client, *_complete(job)) == ["rejected"]
    done = {r["job_id"]: r for r in await job_rows(pg_dsn, P) if r["status"] == "done"}
    assert set(done) == {j["job_id"] for j in jobs}


async def test_duplicated_retryable_failures_reset_once(
    client: httpx.AsyncClient, pg_dsn: str
) -> None:
    jobs = await _claim(client, 10)
    for job in jobs:
        assert await _race(client, [_fail(job)] * COPIES) == {
            "applied": 1,
            "rejected": COPIES - 1,
        }
    rows = {r["job_id"]: r for r in await job_rows(pg_dsn, P)}
    for job in jobs:
        assert rows[job["job_id"]]["status"] == "todo"
        assert rows[job["job_id"]]["reset_count"] == 1  # not COPIES


async def test_complete_and_fail_racing_for_one_attempt(
    client: httpx.AsyncClient, pg_dsn: str
) -> None:
    jobs = await _claim(client, 10)
    for job in jobs:
        mixed = [_complete(job), _fail(job, retryable=False), _fail(job)] * 2
        assert await _race(client, mixed) == {"applied": 1, "rejected": len(mixed) - 1}
    rows = {r["job_id"]: r for r in await job_rows(pg_dsn, P)}
    statuses = Counter(rows[j["job_id"]]["status"] for j in jobs)
    assert sum(statuses.values()) == 10 and set(statuses) <= {"done", "failed", "todo"}


async def test_duplicates_inside_one_request(client: httpx.AsyncClient) -> None:
    [job] = await _claim(client, 1)
    op, body = _complete(job)
    body["items"] = body["items"] * 3
    assert await _send(client, op, body) == ["applied", "rejected", "rejected"]


async def test_late_and_foreign_mutations_are_stale(client: httpx.AsyncClient, pg_dsn: str) -> None:
    [job] = await _claim(client, 1, lease=1)
    assert await _send(client, *_complete(job, worker="someone-else")) == ["rejected"]
    await asyncio.sleep(2.1)  # lease expired
    assert await _send(client, *_complete(job)) == ["rejected"]
    again = [j for j in await _claim(client, 60) if j["job_id"] == job["job_id"]]
    assert again and again[0]["attempt_id"] != job["attempt_id"]
    # the old attempt's replay cannot finish the new attempt's work
    assert await _race(client, [_complete(job), _complete(again[0])] * 3) == {
        "applied": 1,
        "rejected": 5,
    }
    row = next(r for r in await job_rows(pg_dsn, P) if r["job_id"] == job["job_id"])
    assert row["status"] == "done" and row["reset_count"] == 1
    r = await client.get(f"/api/v1/admin/projects/{P}/jobs/{job['job_id']}", headers=ADMIN)
    assert r.json()["status"] == "done"
