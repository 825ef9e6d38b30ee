"""The SQL re-expressions of the retry rule (fail_op, sweep_project, sweep_expired) agree
with hq_domain.lifecycle over a grid of reset counts and limits (STYLE §2)."""

from __future__ import annotations

import itertools

import asyncpg
import pytest

from hq_adapters.postgres import PostgresStore
from hq_domain import lifecycle
from hq_domain.clock import ManualClock, seconds
from hq_domain.jobs import ExecutionError, JobStatus
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import ClaimRequest, FailItem

pytestmark = pytest.mark.postgres

MAX_RESETS = (0, 1, 3)
RESET_COUNTS = (0, 1, 2, 3, 4)
_WIP = """
INSERT INTO tracker_jobs (project_id, value, random_key, spec, status, attempt_id, worker_id,
                          lease_expires_at, reset_count, completed_at, created_at, updated_at)
VALUES ($1, $2, 0, '{}', 'wip', $3, 'w', $4, $5, $6, 1, 1)
RETURNING job_id
"""


async def _store(dsn: str, clock: ManualClock) -> PostgresStore:
    store = PostgresStore(await asyncpg.create_pool(dsn, min_size=1, max_size=2), clock)
    await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
    for m in MAX_RESETS:
        await store.put_project(f"m{m}", ProjectPut(status="active", max_resets=m))
    return store


async def test_fail_matches_on_fail(pg_dsn) -> None:
    clock = ManualClock()
    now = seconds(clock.now_ns())
    store = await _store(pg_dsn, clock)
    try:
        cases = list(itertools.product(MAX_RESETS, RESET_COUNTS, (True, False)))
        for i, (m, count, retryable) in enumerate(cases):
            job_id = await store.database.pool.fetchval(_WIP, f"m{m}", f"v{i}", f"at_{i}", now + 60, count, 7)
            [result] = await store.fail(
                "u", f"m{m}", "w", [FailItem(job_id, f"at_{i}", retryable, ExecutionError("e"))]
            )
            want = lifecycle.on_fail(retryable, count, m, now)
            row = await store.get_job(f"m{m}", job_id)
            assert (result.job_status, row.status, row.reset_count, row.completed_at) == (
                want.status, want.status, want.reset_count, want.completed_at,
            ), (m, count, retryable)
    finally:
        await store.close()


@pytest.mark.parametrize("path", ["claim", "background"])
async def test_expiry_matches_on_expiry(pg_dsn, path: str) -> None:
    clock = ManualClock()
    now = seconds(clock.now_ns())
    store = await _store(pg_dsn, clock)
    try:
        rows = {}
        for i, (m, count) in enumerate(itertools.product(MAX_RESETS, RESET_COUNTS)):
            job_id = await store.database.pool.fetchval(_WIP, f"m{m}", f"v{i}", f"at_{i}", now, count, 7)
            rows[job_id] = (m, count)
        if path == "claim":
            for m in MAX_RESETS:  # max_jobs 1 of many todo rows: the sweep still covers all
                await store.claim("u", f"m{m}", ClaimRequest("w2", 1, 60, ("asset",), 1))
        else:
            assert await store.sweep_expired(1000) == len(rows)
        for job_id, (m, count) in rows.items():
            want = lifecycle.on_expiry(count, m)
            row = await store.get_job(f"m{m}", job_id)
            assert row.status in (JobStatus.TODO, JobStatus.RESET_EXHAUSTED)
            assert (row.status, row.reset_count, row.completed_at) == (
                want.status, want.reset_count, 7,  # completed_at left as stored
            ), (m, count)
            assert row.attempt_id is None and row.updated_at == now
    finally:
        await store.close()
