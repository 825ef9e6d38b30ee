"""Worker requests that wait for a connection run joined, one statement for several
(hq_adapters.postgres.joined), on a real server: each request gets exactly its own answer, a
failing call fails alone, and nothing runs twice. The HTTP case sends the requests through
the real app."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from hq_adapters.postgres import PostgresStore, joined
from hq_adapters.postgres import database as database_module
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.jobs import Outcome
from hq_domain.worker import ClaimRequest, CompleteItem
from tests.support.seeded_store import TOKEN, seeded_store

pytestmark = pytest.mark.postgres
JOBS = 40


def _seeded(pg_dsn: str, **pool: Any) -> contextlib.AbstractAsyncContextManager[PostgresStore]:
    """A store (``connect``'s pool options ``pool``) with a worker token and project "p" of
    ``JOBS`` queued jobs, closed afterwards."""
    return seeded_store(pg_dsn, JOBS, **pool)


@pytest.fixture
async def store(pg_dsn: str) -> AsyncIterator[PostgresStore]:
    async with _seeded(pg_dsn, max_size=1) as store:  # one connection
        yield store


@pytest.fixture
def joined_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many calls each joined statement carried."""
    sizes: list[int] = []
    real = database_module.run_joined

    async def counted(conn: Any, text: str, calls: Any) -> bool:
        sizes.append(len(calls))
        return await real(conn, text, calls)

    monkeypatch.setattr(database_module, "run_joined", counted)
    return sizes


async def _while_busy(store: PostgresStore, *calls: Any) -> list[Any]:
    """Run ``calls`` while the only connection is taken, so they all wait for it."""
    async with store.database.connection():
        tasks = [asyncio.ensure_future(c) for c in calls]
        await asyncio.sleep(0.05)
        assert not any(t.done() for t in tasks)
    return await asyncio.gather(*tasks, return_exceptions=True)


async def test_waiting_claims_and_completes_join_and_each_gets_its_own(
    store: PostgresStore, joined_runs: list[int]
) -> None:
    sizes = [3, 1, 3, 2, 3, 4, 3]
    accept = [(), (), ("nothing-has-this-type",), (), (), (), ()]
    claims = await _while_busy(store, *(
        store.worker.gated_claim(TOKEN, "p", "t", ClaimRequest(f"w{i}", n, 60, types, 1))
        for i, (n, types) in enumerate(zip(sizes, accept, strict=True))
    ))  # fmt: skip
    assert joined_runs == [7]
    assert [len(result.jobs) for _p, _q, result in claims] == [3, 1, 0, 2, 3, 4, 3]
    got = {f"w{i}": result.jobs for i, (_p, _q, result) in enumerate(claims) if result.jobs}
    ids = [j.job_id for jobs in got.values() for j in jobs]
    assert len(set(ids)) == 16
    attempts = [j.attempt_id for jobs in got.values() for j in jobs]
    assert len(set(attempts)) == 16
    completes = await _while_busy(store, *(
        store.worker.gated_complete(TOKEN, "p", "t", worker, [
            CompleteItem(j.job_id, j.attempt_id, Outcome("success"), None) for j in jobs
        ])
        for worker, jobs in got.items()
    ))  # fmt: skip
    assert joined_runs == [7, 6]
    assert [[(r.applied, r.job_status) for r in results] for _p, _q, results in completes] == [
        [(True, "done")] * len(jobs) for jobs in got.values()
    ]
    counts = (await store.get_project("p")).job_counts
    assert (counts.done, counts.wip, counts.todo) == (16, 0, JOBS - 16)


async def test_a_call_that_fails_fails_alone_and_the_others_run_once(
    store: PostgresStore, joined_runs: list[int]
) -> None:
    (_principal, _project, claimed) = await store.worker.gated_claim(
        TOKEN, "p", "t", ClaimRequest("w", 4, 60, (), 1)
    )
    jobs = claimed.jobs
    db = store.database
    digest = store.worker._gate_args(TOKEN, "p", "t")
    statuses = ["active"]

    def complete(job: Any, outcome: str) -> Any:
        now = db.now_s()
        args = (*digest, "w", [job.job_id], [job.attempt_id], [outcome], ["null"], now, statuses)
        return db.fetchrow_joined("gated_complete", "gated_complete_joined", "p", args, 1)

    rows = await _while_busy(
        store,
        complete(jobs[0], '{"status":"success"}'),
        complete(jobs[1], "not json"),  # PostgreSQL refuses the cast: the statement fails
        complete(jobs[2], '{"status":"success"}'),
    )
    assert joined_runs == [3]
    assert [r["job_statuses"] for r in (rows[0], rows[2])] == [["done"], ["done"]]
    assert "json" in str(rows[1]).lower()
    counts = (await store.get_project("p")).job_counts
    assert (counts.done, counts.wip) == (2, 2)  # the joined attempt committed nothing


async def test_a_call_with_a_free_connection_runs_alone(
    store: PostgresStore, joined_runs: list[int]
) -> None:
    for i in range(3):
        await store.worker.gated_claim(TOKEN, "p", "t", ClaimRequest(f"w{i}", 1, 60, (), 1))
    assert joined_runs == []


async def test_waiting_http_requests_each_get_their_own_answer(
    store: PostgresStore, joined_runs: list[int]
) -> None:
    app = create_app(Settings(sweep_interval_s=0, openapi=False), store)
    headers = {"Authorization": f"Bearer {TOKEN}", "X-SavewebHQ-Client-Version": "t"}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t", headers=headers
    ) as client:
        def claim(i: int) -> Any:
            body = {"worker_id": f"h{i}", "max_jobs": 2, "lease_seconds": 60, "policy_version": 1}
            return client.post("/api/v1/projects/p/jobs/claim", json=body)

        answers = await _while_busy(store, *(claim(i) for i in range(5)))
        assert [a.status_code for a in answers] == [200] * 5, [a.text for a in answers]
        ids = [j["job_id"] for a in answers for j in a.json()["jobs"]]
        assert len(ids) == 10 and len(set(ids)) == 10
        assert joined_runs and sum(joined_runs) >= 2
        bad = {**headers, "Authorization": "Bearer nobody"}
        mixed = await _while_busy(store, *(
            client.post("/api/v1/projects/p/jobs/claim", headers=bad if i == 1 else headers,
                        json={"worker_id": f"m{i}", "max_jobs": 1, "lease_seconds": 60,
                              "policy_version": 1})
            for i in range(3)
        ))  # fmt: skip
        assert [a.status_code for a in mixed] == [200, 401, 200], [a.text for a in mixed]


async def test_large_requests_wait_alone(store: PostgresStore, joined_runs: list[int]) -> None:
    n = joined.MAX_ITEMS + 1
    claims = await _while_busy(store, *(
        store.worker.gated_claim(TOKEN, "p", "t", ClaimRequest(f"w{i}", n, 60, (), 1))
        for i in range(2)
    ))  # fmt: skip
    assert [len(result.jobs) for _p, _q, result in claims] == [n, n]
    assert joined_runs == []


async def test_calls_beyond_the_worker_lanes_join_while_connections_are_free(
    pg_dsn: str, joined_runs: list[int]
) -> None:
    async with _seeded(pg_dsn, max_size=3, worker_lanes=1) as store:
        claims = await asyncio.gather(*(
            store.worker.gated_claim(TOKEN, "p", "t", ClaimRequest(f"w{i}", 2, 60, (), 1))
            for i in range(5)
        ))  # fmt: skip
        assert joined_runs == [4]  # the first took the one lane; the other four joined
        ids = [j.job_id for _p, _q, result in claims for j in result.jobs]
        assert len(ids) == 10 and len(set(ids)) == 10

        await store.database._lanes.acquire()  # a worker statement holds the only lane
        waiting = asyncio.create_task(
            store.worker.gated_claim(TOKEN, "p", "t", ClaimRequest("late", 1, 60, (), 1))
        )
        await asyncio.sleep(0.05)
        assert not waiting.done()  # the worker call waits for the lane …
        summary = await asyncio.wait_for(store.get_project("p"), 5)  # … other statements do not
        assert summary is not None and summary.job_counts.wip == 10
        store.database._lanes.release()
        assert len((await waiting)[2].jobs) == 1


async def test_a_call_nobody_could_join_takes_a_free_connection_instead_of_waiting(
    pg_dsn: str, joined_runs: list[int]
) -> None:
    async with _seeded(pg_dsn, max_size=3, worker_lanes=1) as store:
        connections = [2]
        store.count_connections_with(lambda: connections[0])

        def claim(worker: str) -> Any:
            return store.worker.gated_claim(TOKEN, "p", "t", ClaimRequest(worker, 1, 60, (), 1))

        await store.database._lanes.acquire()  # a worker statement holds the only lane
        try:
            # Two connections and one lane: the other request is the one on the lane, so
            # nothing could join this call, and it runs at once on a free connection.
            alone = await asyncio.wait_for(claim("alone"), 5)
            assert len(alone[2].jobs) == 1
            # A third connection could send a request to join it: the call waits.
            connections[0] = 3
            waiting = asyncio.create_task(claim("late"))
            await asyncio.sleep(0.05)
            assert not waiting.done()
        finally:
            store.database._lanes.release()
        assert len((await waiting)[2].jobs) == 1
        assert joined_runs == []


async def test_the_connection_rule_never_takes_a_connection_that_is_not_free(
    store: PostgresStore, joined_runs: list[int]
) -> None:
    store.count_connections_with(lambda: 1)
    claims = await _while_busy(store, *(
        store.worker.gated_claim(TOKEN, "p", "t", ClaimRequest(f"w{i}", 1, 60, (), 1))
        for i in range(2)
    ))  # fmt: skip
    assert [len(result.jobs) for _p, _q, result in claims] == [1, 1]
    assert joined_runs == [2]  # they waited for the one connection and ran as one statement
