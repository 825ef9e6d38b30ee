"""Only random projects' jobs are in the random claim index (migration 0016).

The claim contract (tests/contract/claim.py) shows the behaviour on both adapters: a switch to
random order takes in every job that can still be claimed. These tests show the PostgreSQL
side of it: which rows carry ``random_queue``, and that a switch cannot miss the rows of an
enqueue that read the project as FIFO and commits while the switch runs.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from hq_adapters.postgres import PostgresStore
from hq_domain.clock import ManualClock
from hq_domain.jobs import ExecutionError, JobSpec, Outcome
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import ClaimRequest, CompleteItem, FailItem

pytestmark = pytest.mark.postgres


@pytest.fixture
async def store(pg_dsn):
    pool = await asyncpg.create_pool(pg_dsn, min_size=1, max_size=3)
    store = PostgresStore(pool, ManualClock())
    await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
    yield store
    await store.close()


async def _flags(store: PostgresStore, project_id: str) -> dict[str, bool]:
    async with store.database.connection() as conn:
        found = await conn.fetch(
            "SELECT value, random_queue FROM tracker_jobs WHERE project_id = $1", project_id
        )
    return {r["value"]: r["random_queue"] for r in found}


def _put(order: str, identity_mode: str | None = None) -> ProjectPut:
    return ProjectPut(status="active", identity_mode=identity_mode, claim_order=order)


@pytest.mark.parametrize("identity_mode", ["none", "external_id", "unique_value"])
async def test_enqueues_put_only_random_projects_rows_in_the_random_queue(store, identity_mode):
    for project_id, order in (("f", "fifo"), ("r", "random")):
        await store.put_project(project_id, _put(order, identity_mode))
        ids = identity_mode == "external_id"
        await store.enqueue(project_id, [JobSpec("a", "a" if ids else None)])
        # a second batch meeting an existing identity takes the checking statement
        await store.enqueue(project_id, [JobSpec("a", "a" if ids else None), JobSpec("b", "b" if ids else None)])
    assert set((await _flags(store, "f")).values()) == {False}
    assert set((await _flags(store, "r")).values()) == {True}


async def test_a_switch_to_random_flags_every_row_but_the_done_ones(store):
    await store.put_project("p", _put("fifo", "none"))
    await store.enqueue("p", [JobSpec(v) for v in ("done", "failed", "wip", "todo")])
    done, failed, _wip = (await store.claim("u", "p", ClaimRequest("w", 3, 30, (), 1))).jobs
    await store.complete("u", "p", "w", [CompleteItem(done.job_id, done.attempt_id, Outcome("success"), None)])
    await store.fail("u", "p", "w", [FailItem(failed.job_id, failed.attempt_id, False, ExecutionError("e"))])
    assert set((await _flags(store, "p")).values()) == {False}
    await store.put_project("p", _put("random"))
    assert await _flags(store, "p") == {"done": False, "failed": True, "wip": True, "todo": True}
    # back to FIFO: the flags stay (the rows are still claimable in either order)
    await store.put_project("p", _put("fifo"))
    assert await _flags(store, "p") == {"done": False, "failed": True, "wip": True, "todo": True}


async def test_a_switch_waits_for_an_enqueue_that_read_the_project_as_fifo(store):
    """An enqueue holds the project row FOR KEY SHARE from its first statement and writes
    random_queue = false for a FIFO project. A switch to random committing in the middle would
    leave its rows out of the random queue for good; the switch takes the row FOR UPDATE
    first, so it waits, and its UPDATE then sees the enqueue's rows."""
    await store.put_project("p", _put("fifo", "none"))
    pool = store.database.pool
    async with pool.acquire() as enqueue:
        tx = enqueue.transaction()
        await tx.start()
        await enqueue.execute("SELECT 1 FROM tracker_projects WHERE id = 'p' FOR KEY SHARE")
        await enqueue.execute(
            "INSERT INTO tracker_jobs (project_id, value, random_key, status, created_at,"
            " updated_at, random_queue) VALUES ('p', 'late', 1, 'todo', 0, 0, false)"
        )
        switch = asyncio.create_task(store.put_project("p", _put("random")))
        # The switch is blocked on a row lock of tracker_projects, not finished.
        for _ in range(500):
            waiting = await pool.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'"
            )
            if waiting or switch.done():
                break
            await asyncio.sleep(0.01)
        assert not switch.done()
        assert waiting == 1
        await tx.commit()
    await switch
    assert await _flags(store, "p") == {"late": True}
