"""The count triggers of migration 0004 keep exact counts whoever writes tracker_jobs, under
concurrency, and folding keeps the sums (issue 14)."""

from __future__ import annotations

import asyncio
import random

import asyncpg
import pytest

from hq_adapters.postgres import connect
from hq_adapters.postgres.worker import GENERIC_PLAN_MAX_ITEMS, PostgresWorker
from hq_domain.clock import ManualClock
from hq_domain.jobs import ExecutionError, JobSpec, Outcome
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import AttemptRef, ClaimRequest, CompleteItem, FailItem

pytestmark = pytest.mark.postgres

# The running total of resets (pseudo-status 'resets', migration 0010) equals the sum of
# reset_count while no reset job is requeued or deleted, as in these tests.
_TRUE = """
SELECT project_id, status, count(*) AS n FROM tracker_jobs GROUP BY 1, 2
UNION ALL
SELECT project_id, 'resets', sum(reset_count) FROM tracker_jobs GROUP BY 1
HAVING sum(reset_count) > 0
"""
_KEPT = """
SELECT project_id, status, sum(n)::bigint AS n
FROM (SELECT project_id, status, n FROM tracker_job_counts
      UNION ALL SELECT project_id, status, n FROM tracker_job_count_deltas) AS u
GROUP BY 1, 2 HAVING sum(n) <> 0
"""


async def _agree(conn: asyncpg.Connection) -> dict[tuple[str, str], int]:
    truth = {(r["project_id"], r["status"]): r["n"] for r in await conn.fetch(_TRUE)}
    kept = {(r["project_id"], r["status"]): r["n"] for r in await conn.fetch(_KEPT)}
    assert kept == truth
    return truth


async def test_every_writer_is_counted(pg_dsn) -> None:
    store = await connect(pg_dsn, ManualClock(), min_size=1, max_size=2)
    conn = await asyncpg.connect(pg_dsn)
    try:
        for pid in ("a", "b"):
            await store.put_project(pid, ProjectPut(status="active"))
        await store.enqueue("a", [JobSpec(f"v{i}", id=f"j{i}") for i in range(5)])
        # COPY, as a bulk import may do
        await conn.copy_records_to_table(
            "tracker_jobs",
            records=[("b", f"c{i}", "todo", 1, 1, i) for i in range(7)],
            columns=["project_id", "value", "status", "created_at", "updated_at", "random_key"],
        )
        assert await _agree(conn) == {("a", "todo"): 5, ("b", "todo"): 7}
        # manual SQL: a multi-project, multi-status statement; an update that changes nothing
        await conn.execute("UPDATE tracker_jobs SET status = 'done' WHERE job_id % 2 = 0")
        await conn.execute("UPDATE tracker_jobs SET updated_at = updated_at + 1")
        await conn.execute("DELETE FROM tracker_jobs WHERE job_id % 3 = 0")
        await _agree(conn)
        # a project delete cascades; recreating it starts from zero
        await conn.execute("DELETE FROM tracker_projects WHERE id = 'b'")
        await store.put_project("b", ProjectPut(status="active"))
        assert (await store.get_project("b")).job_counts.as_dict() == dict.fromkeys(
            ("todo", "wip", "done", "failed", "reset_exhausted"), 0)
        for table in ("tracker_job_counts", "tracker_job_count_deltas"):
            assert await conn.fetchval(f"SELECT count(*) FROM {table} WHERE project_id = 'b'") == 0
        await _agree(conn)
        await store.fold_counts()
        await _agree(conn)
        await conn.execute("TRUNCATE tracker_jobs")
        assert await conn.fetchval("SELECT count(*) FROM tracker_job_counts") == 0
        assert await conn.fetchval("SELECT count(*) FROM tracker_job_count_deltas") == 0
    finally:
        await conn.close()
        await store.close()


@pytest.mark.parametrize("generic_max", [GENERIC_PLAN_MAX_ITEMS, 0])
@pytest.mark.parametrize("order", ["fifo", "random"])
async def test_worker_statements_count_each_change_once(
    pg_dsn, generic_max: int, order: str
) -> None:
    """Migration 0013: in their functions (generic_max 16) the worker statements append
    their own deltas and the update trigger steps aside; run as plain statements (0) they
    append none and the trigger counts them. Either way every change counts once: one-item
    and batch claims (sweeping expired leases back to todo, to wip and to reset_exhausted),
    completions, retryable and final failures, and extensions (no change)."""
    clock = ManualClock()
    store = await connect(pg_dsn, clock, min_size=1, max_size=2)
    worker = PostgresWorker(store.database, generic_plan_max_items=generic_max)
    conn = await asyncpg.connect(pg_dsn)
    try:
        await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
        await store.put_project("p", ProjectPut(status="active", claim_order=order, max_resets=1))
        await store.enqueue("p", [JobSpec(f"v{i}", id=f"j{i}") for i in range(40)])

        async def claim(n: int, lease: int = 60) -> list:
            return (await worker.claim("u", "p", ClaimRequest("w", n, lease, (), 1))).jobs

        # Leases of 1 s, expired before each next claim, which sweeps them: once back to todo
        # (and picked again in the same statement), the second time out (reset_exhausted).
        for _ in range(3):
            assert len(await claim(6, lease=1)) == 6
            clock.advance(2)
            assert len(await claim(1, lease=1)) == 1
            await _agree(conn)
            assert len(await claim(8, lease=1)) == 8
            await _agree(conn)
            clock.advance(2)
        one, batch = await claim(1), await claim(5)
        await worker.extend_lease("u", "p", "w", 90, [AttemptRef(j.job_id, j.attempt_id) for j in batch])
        await worker.complete("u", "p", "w", [CompleteItem(one[0].job_id, one[0].attempt_id, Outcome("success"), None)])
        await _agree(conn)
        await worker.complete("u", "p", "w", [CompleteItem(j.job_id, j.attempt_id, Outcome("success"), None) for j in batch[:2]])
        await worker.fail("u", "p", "w", [FailItem(batch[2].job_id, batch[2].attempt_id, True, ExecutionError("e"))])
        await worker.fail("u", "p", "w", [FailItem(j.job_id, j.attempt_id, r, ExecutionError("e"))
                                          for j, r in zip(batch[3:], (True, False), strict=True)])
        assert len(await claim(2)) == 2  # held: some wip at the end
        truth = await _agree(conn)
        assert {s for p, s in truth if p == "p"} >= {"todo", "wip", "done", "failed", "reset_exhausted"}
        deltas = await conn.fetchval("SELECT count(*) FROM tracker_job_count_deltas WHERE status <> 'resets'")
        assert deltas > 0
        assert (await store.get_project("p")).job_counts.as_dict() == {
            s: truth.get(("p", s), 0) for s in ("todo", "wip", "done", "failed", "reset_exhausted")}
    finally:
        await conn.close()
        await store.close()


async def test_fold_moves_deltas_into_totals_and_keeps_sums(pg_dsn) -> None:
    store = await connect(pg_dsn, ManualClock(), min_size=1, max_size=2)
    conn = await asyncpg.connect(pg_dsn)
    try:
        await store.put_project("a", ProjectPut(status="active"))
        await store.enqueue("a", [JobSpec(f"v{i}", id=f"j{i}") for i in range(4)])
        await conn.execute("UPDATE tracker_jobs SET status = 'done' WHERE job_id % 2 = 0")
        await conn.execute("UPDATE tracker_jobs SET updated_at = 5")  # no status change
        assert await conn.fetchval("SELECT count(*) FROM tracker_job_count_deltas") == 3
        before = await _agree(conn)
        assert await store.fold_counts() == 2
        assert await conn.fetchval("SELECT count(*) FROM tracker_job_count_deltas") == 0
        rows = await conn.fetch("SELECT status, n FROM tracker_job_counts ORDER BY status")
        assert [(r["status"], r["n"]) for r in rows] == [("done", 2), ("todo", 2)]
        assert await _agree(conn) == before
        # deltas of a project that is gone are dropped by the fold
        await conn.execute("INSERT INTO tracker_job_count_deltas VALUES ('ghost', 'todo', 3)")
        assert await store.fold_counts() == 0
        assert await conn.fetchval("SELECT count(*) FROM tracker_job_counts WHERE project_id = 'ghost'") == 0
    finally:
        await conn.close()
        await store.close()


async def test_counts_stay_exact_under_concurrent_writers(pg_dsn) -> None:
    """Claimers, completers, failers, sweeps, enqueues and folds on separate
    connections; afterwards the kept counts equal a full count."""
    clock = ManualClock()
    admin = await connect(pg_dsn, clock, min_size=1, max_size=2)
    await admin.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
    for pid in ("p", "q"):
        await admin.put_project(pid, ProjectPut(status="active", max_resets=1))
        await admin.enqueue(pid, [JobSpec(f"v{i}", id=f"j{i}") for i in range(600)])
    stores = [await connect(pg_dsn, clock, min_size=1, max_size=1) for _ in range(8)]
    stop = asyncio.Event()

    async def worker(i: int, store) -> None:
        rng = random.Random(i)
        for _ in range(40):
            pid = rng.choice(("p", "q"))
            jobs = (await store.claim("u", pid, ClaimRequest(f"w{i}", rng.randint(1, 16), 1, (), 1))).jobs
            done = [CompleteItem(j.job_id, j.attempt_id, Outcome("success"), None) for j in jobs[::3]]
            failed = [FailItem(j.job_id, j.attempt_id, rng.random() < 0.5, ExecutionError("e"))
                      for j in jobs[1::3]]
            await store.complete("u", pid, f"w{i}", done)
            await store.fail("u", pid, f"w{i}", failed)
            if rng.random() < 0.2:
                await store.enqueue(pid, [JobSpec("n", id=f"n{i}-{k}-{rng.random()}") for k in range(3)])

    async def background() -> None:
        while not stop.is_set():
            clock.advance(1)  # leases of 1 s expire: the sweeps and claim-path sweeps reset them
            await admin.sweep_expired(50)
            await admin.fold_counts()  # folds race with the writers and the readers
            await admin.record_history()
            await asyncio.sleep(0.01)

    bg = asyncio.create_task(background())
    try:
        await asyncio.gather(*(worker(i, s) for i, s in enumerate(stores)))
    finally:
        stop.set()
        await bg
        for s in stores:
            await s.close()
    conn = await asyncpg.connect(pg_dsn)
    try:
        truth = await _agree(conn)
        assert len({s for _, s in truth}) >= 4 and ("p", "resets") in truth
        for pid in ("p", "q"):
            got = (await admin.get_project(pid)).job_counts.as_dict()
            assert got == {s: truth.get((pid, s), 0) for s in got}
        await admin.fold_counts()
        assert await _agree(conn) == truth
    finally:
        await conn.close()
        await admin.close()
