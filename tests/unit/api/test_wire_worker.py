"""A black-box worker (plain httpx over TCP, documented protocol only) drains projects."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.unit.api.live import ADMIN_TOKEN, WORKER_TOKEN, live_memory_server
from tests.unit.api.wire_worker import ApiError, WireWorker, call


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with live_memory_server() as url:
        yield url


@pytest.fixture
def http(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=10) as client:
        yield client


def admin(http: httpx.Client, method: str, path: str, body: Any = None) -> Any:
    return call(http, method, "/api/v1/admin" + path, ADMIN_TOKEN, body)


def seed(http: httpx.Client, project: str, n: int, **policy: Any) -> None:
    admin(
        http,
        "PUT",
        f"/projects/{project}",
        {"status": "active", "client_versions": ["wire/1"], **policy},
    )
    for start in range(0, n, 500):
        jobs = [
            {"id": f"job-{i}", "value": f"https://example.org/{i}"}
            for i in range(start, min(n, start + 500))
        ]
        assert admin(http, "POST", f"/projects/{project}/jobs", {"jobs": jobs})["inserted"] == len(
            jobs
        )


def decide(job: dict[str, Any], attempt: int) -> str:
    i = int(job["id"].split("-")[1])
    if i % 10 == 0:
        return "fail"
    if i % 10 == 1 and attempt == 1:
        return "retry"
    if i % 10 == 2:
        return "extend-complete"
    return "complete"


def test_worker_drains_a_project(http: httpx.Client) -> None:
    seed(http, "drain", 1000, max_resets=2)
    worker = WireWorker(http, WORKER_TOKEN, "wire/1", "drain", "wire001")
    stats = worker.drain(decide, batch=64)
    assert len(stats.seen) == 1000
    assert stats.failed == 100 + 100 and stats.retried == 100
    assert stats.extended == 100
    summary = admin(http, "GET", "/projects/drain")
    assert summary["job_counts"] == {
        "todo": 0,
        "wip": 0,
        "done": 900,
        "failed": 100,
        "reset_exhausted": 0,
    }
    page = admin(http, "GET", "/projects/drain/jobs?status=failed&limit=1")
    (failed,) = page["jobs"]
    assert failed["execution_error"] == {
        "code": "boom",
        "message": "failed on purpose",
        "details": None,
    }
    assert failed["completed_at"] is not None and failed["worker_id"] is None


def test_dispatch_pacing_with_429(http: httpx.Client) -> None:
    seed(http, "paced", 8, dispatch_qps=20)
    worker = WireWorker(http, WORKER_TOKEN, "wire/1", "paced", "wire002")
    started = time.monotonic()
    stats = worker.drain(lambda job, n: "complete", batch=64, idle_limit=1)
    elapsed = time.monotonic() - started
    assert len(stats.seen) == 8 and stats.completed == 8
    assert stats.rate_limited >= 1
    assert elapsed >= 7 / 20 * 0.9  # one token per 50 ms after the first


def test_upgrade_required_then_recovery(http: httpx.Client) -> None:
    seed(http, "versions", 1)
    old = WireWorker(http, WORKER_TOKEN, "wire/0", "versions", "wire003")
    with pytest.raises(ApiError) as info:
        old.refresh_policy()
    assert info.value.status == 426
    assert info.value.error["details"] == {
        "client_version": "wire/0",
        "client_versions": ["wire/1"],
    }
    new = WireWorker(
        http, WORKER_TOKEN, info.value.error["details"]["client_versions"][0], "versions", "wire003"
    )
    assert new.drain(lambda job, n: "complete", idle_limit=1).completed == 1


def test_expired_lease_is_swept_in_background(http: httpx.Client) -> None:
    """D2: with no further claims, the background sweeper resets an expired lease."""
    seed(http, "sweep", 1)
    worker = WireWorker(http, WORKER_TOKEN, "wire/1", "sweep", "wire004")
    worker.refresh_policy()
    body = {
        "worker_id": "wire004",
        "max_jobs": 1,
        "lease_seconds": 1,
        "accept_types": None,
        "policy_version": 1,
    }
    (job,) = worker._post("claim", body)["jobs"]
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline:
        counts = admin(http, "GET", "/projects/sweep")["job_counts"]
        if counts["todo"] == 1:
            break
        time.sleep(0.2)
    assert counts == {"todo": 1, "wip": 0, "done": 0, "failed": 0, "reset_exhausted": 0}
    ref = {"job_id": job["job_id"], "attempt_id": job["attempt_id"], "outcome": {"kind": "success"}}
    result = worker._post("complete", {"worker_id": "wire004", "items": [ref]})["results"][0]
    assert result["status"] == "rejected" and result["error"]["details"] is None
