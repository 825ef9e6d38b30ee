"""``/metrics`` on its own listener: parses as Prometheus text, counters move with traffic,
database gauges match the store (issue 14)."""

from __future__ import annotations

import asyncio

import httpx
from litestar.testing import AsyncTestClient
from prometheus_client.parser import text_string_to_metric_families

from hq_adapters.memory import MemoryStore
from hq_apps.api import observers
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import ManualClock
from tests.unit.api.conftest import ADMIN, WORKER, Api, seed_users


def _samples(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


async def _scrape(address) -> dict[tuple[str, tuple], float]:
    host, port = address
    r = await asyncio.to_thread(httpx.get, f"http://{host}:{port}/metrics", timeout=10)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    return _samples(r.text)


async def test_metrics_listener_counts_requests_and_jobs() -> None:
    clock = ManualClock()
    store = MemoryStore(clock)
    await seed_users(store)
    app = create_app(Settings(sweep_interval_s=0, metrics_listen=("127.0.0.1", 0)), store, clock)
    async with AsyncTestClient(app) as client:
        api = Api(client, store, clock)
        address = app.state.metrics_address
        # the public port does not serve metrics
        assert (await client.get("/metrics")).status_code == 404
        before = await _scrape(address)
        await api.put_project("p")
        assert (await api.enqueue("p", [{"id": f"j{i}", "value": f"v{i}"} for i in range(3)])).status_code == 200
        r = await api.claim("p", max_jobs=2)
        jobs = r.json()["jobs"]
        done = {"worker_id": "w1", "items": [
            {"job_id": jobs[0]["job_id"], "attempt_id": jobs[0]["attempt_id"],
             "outcome": {"kind": "success"}},
            {"job_id": jobs[1]["job_id"], "attempt_id": "stale", "outcome": {"kind": "success"}},
        ]}
        assert (await api.post_worker("p", "complete", done)).status_code == 200
        await client.get("/api/v1/admin/projects/p", headers=ADMIN)
        await client.get("/nope", headers=WORKER)
        after = await _scrape(address)

    route = "/api/v1/projects/{project_id}/jobs/claim"
    key = ("hq_http_requests_total", (("method", "POST"), ("route", route), ("status", "200")))
    assert after[key] - before.get(key, 0) == 1
    assert after[("hq_http_requests_total", (("method", "GET"), ("route", "unmatched"), ("status", "404")))] >= 1
    assert after[("hq_http_request_duration_seconds_count", (("method", "POST"), ("route", route)))] >= 1
    assert after[("hq_jobs_claimed_total", (("project", "p"),))] == 2
    assert after[("hq_attempt_items_total", (("op", "complete"), ("project", "p"), ("result", "applied")))] == 1
    assert after[("hq_attempt_items_total", (("op", "complete"), ("project", "p"), ("result", "stale")))] == 1
    assert after[("hq_jobs", (("project", "p"), ("status", "todo")))] == 1
    assert after[("hq_jobs", (("project", "p"), ("status", "wip")))] == 1
    assert after[("hq_jobs", (("project", "p"), ("status", "done")))] == 1
    assert after[("hq_oldest_todo_age_seconds", (("project", "p"),))] == 0
    assert after[("hq_database_up", ())] == 1
    assert any(name == "hq_build_info" for name, _ in after)
    assert isinstance(observers.current, observers.NullObserver)  # uninstalled at shutdown
