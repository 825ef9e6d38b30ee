"""Issue 14: the complete/fail routes' per-worker tally reaches the store through the history
loop: a failed flush keeps the counts for the next one, and a clean shutdown flushes."""

from __future__ import annotations

import pytest
from litestar.testing import AsyncTestClient

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.api.sweeper import flush_tally
from hq_apps.settings import Settings
from hq_domain.clock import ManualClock
from hq_domain.jobs import JobStatus
from hq_domain.worker import ItemResult
from hq_domain.worker_tally import Tallies, WorkerTally
from tests.unit.api.conftest import Api, seed_users


class _FlakyStore:
    def __init__(self) -> None:
        self.calls: list[dict] = []

    async def record_worker_minutes(self, tallies: Tallies) -> int:
        self.calls.append(dict(tallies))
        if len(self.calls) == 1:
            raise ConnectionError("database away")
        return len(tallies)


async def test_a_failed_flush_keeps_the_counts() -> None:
    store, tally = _FlakyStore(), WorkerTally()
    tally.completed("p", "w", [ItemResult(1, "a", True, JobStatus.DONE)])
    with pytest.raises(ConnectionError):
        await flush_tally(store, tally)  # type: ignore[arg-type]
    tally.completed("p", "w", [ItemResult(2, "b", True, JobStatus.DONE)])
    await flush_tally(store, tally)  # type: ignore[arg-type]
    assert store.calls == [{("p", "w"): (1, 0)}, {("p", "w"): (2, 0)}]


async def test_shutdown_flushes_what_the_routes_counted() -> None:
    clock = ManualClock()
    store = MemoryStore(clock)
    await seed_users(store)
    app = create_app(Settings(sweep_interval_s=3600, history_interval_s=3600), store, clock)
    async with AsyncTestClient(app) as client:
        api = Api(client, store, clock)
        await api.put_project("p")
        await api.enqueue("p", [{"id": f"j{i}", "value": "v"} for i in range(3)])
        jobs = (await api.claim("p", max_jobs=3)).json()["jobs"]
        refs = [{"job_id": j["job_id"], "attempt_id": j["attempt_id"]} for j in jobs]
        r = await api.post_worker("p", "complete", {"worker_id": "w1", "items": [
            {**x, "outcome": {"kind": "success"}} for x in refs[:2]]})
        assert r.status_code == 200
        r = await api.post_worker("p", "fail", {"worker_id": "w1", "items": [
            {**refs[2], "retryable": True, "error": {"code": "e"}}]})
        assert r.status_code == 200
        assert await store.worker_activity("p", 0) == []  # not flushed yet, nothing in hand
    [w] = await store.worker_activity("p", 0)
    assert (w.worker_id, w.jobs_done, w.jobs_failed) == ("w1", 2, 1)
