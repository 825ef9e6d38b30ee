"""A job belongs to an existing project and goes with it (migration 0012): the reference's
foreign key with ON DELETE CASCADE, kept by statement-level triggers instead of a check per row.
Every writer is held to it (manual SQL and COPY included), also under concurrency."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from hq_adapters.postgres import connect
from hq_domain.clock import ManualClock
from hq_domain.errors import NotFound
from hq_domain.jobs import JobSpec
from hq_domain.projects import ProjectPut

pytestmark = pytest.mark.postgres

_INSERT = (
    "INSERT INTO tracker_jobs (project_id, value, random_key, status, created_at, updated_at)"
    " SELECT p, 'v', 0, 'todo', 1, 1 FROM unnest($1::text[]) AS p"
)


async def _jobs(conn: asyncpg.Connection) -> dict[str, int]:
    found = await conn.fetch("SELECT project_id, count(*) AS n FROM tracker_jobs GROUP BY 1")
    return {r["project_id"]: r["n"] for r in found}


async def _projects(dsn: str, *ids: str) -> None:
    store = await connect(dsn, ManualClock(), min_size=1, max_size=1)
    try:
        for pid in ids:
            await store.put_project(pid, ProjectPut(status="active"))
    finally:
        await store.close()


async def test_no_foreign_key_per_row(pg_dsn) -> None:
    conn = await asyncpg.connect(pg_dsn)
    try:
        fks = await conn.fetch(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'tracker_jobs'::regclass"
            " AND contype = 'f'"
        )
        assert fks == []
    finally:
        await conn.close()


async def test_an_insert_naming_a_missing_project_fails_whole(pg_dsn) -> None:
    await _projects(pg_dsn, "a")
    conn = await asyncpg.connect(pg_dsn)
    try:
        with pytest.raises(asyncpg.ForeignKeyViolationError) as exc:
            await conn.execute(_INSERT, ["a", "a", "gone", "a"])
        assert exc.value.constraint_name == "tracker_jobs_project_id_fkey"
        assert "(project_id)=(gone)" in (exc.value.detail or "")
        with pytest.raises(asyncpg.ForeignKeyViolationError):
            await conn.copy_records_to_table(
                "tracker_jobs",
                records=[("gone", "v", "todo", 1, 1, 0)],
                columns=["project_id", "value", "status", "created_at", "updated_at", "random_key"],
            )
        assert await _jobs(conn) == {}
        await conn.execute(_INSERT, ["a", "a"])
        assert await _jobs(conn) == {"a": 2}
    finally:
        await conn.close()


async def test_deleting_a_project_deletes_its_jobs_only(pg_dsn) -> None:
    await _projects(pg_dsn, "a", "b", "c")
    conn = await asyncpg.connect(pg_dsn)
    try:
        await conn.execute(_INSERT, ["a", "b", "b", "c", "c", "c"])
        await conn.execute("DELETE FROM tracker_projects WHERE id IN ('a', 'c')")
        assert await _jobs(conn) == {"b": 2}
        kept = await conn.fetch(
            "SELECT DISTINCT project_id FROM tracker_job_count_deltas"
            " UNION SELECT project_id FROM tracker_job_counts"
        )
        assert {r["project_id"] for r in kept} == {"b"}
    finally:
        await conn.close()


async def test_a_delete_waits_for_an_open_enqueue_and_takes_its_jobs(pg_dsn) -> None:
    await _projects(pg_dsn, "p")
    enq, dele = await asyncpg.connect(pg_dsn), await asyncpg.connect(pg_dsn)
    try:
        tx = enq.transaction()
        await tx.start()
        await enq.execute(_INSERT, ["p"] * 3)
        deleting = asyncio.create_task(dele.execute("DELETE FROM tracker_projects WHERE id = 'p'"))
        await asyncio.sleep(0.3)
        assert not deleting.done(), "the delete must wait for the inserting transaction"
        await tx.commit()
        assert await asyncio.wait_for(deleting, 10) == "DELETE 1"
        assert await _jobs(enq) == {}
    finally:
        await enq.close()
        await dele.close()


async def test_an_enqueue_that_waited_for_a_delete_finds_no_project(pg_dsn) -> None:
    await _projects(pg_dsn, "p")
    store = await connect(pg_dsn, ManualClock(), min_size=1, max_size=2)
    dele = await asyncpg.connect(pg_dsn)
    try:
        tx = dele.transaction()
        await tx.start()
        await dele.execute("DELETE FROM tracker_projects WHERE id = 'p'")
        # through the adapter (its FOR KEY SHARE read waits) and as raw SQL (the trigger's)
        enqueuing = asyncio.create_task(store.enqueue("p", [JobSpec("v1", id="j1")]))
        raw = await asyncpg.connect(pg_dsn)
        try:
            inserting = asyncio.create_task(raw.execute(_INSERT, ["p"]))
            await asyncio.sleep(0.3)
            assert not enqueuing.done() and not inserting.done()
            await tx.commit()
            with pytest.raises(NotFound, match=r"^project not found$"):
                await asyncio.wait_for(enqueuing, 10)
            with pytest.raises(asyncpg.ForeignKeyViolationError):
                await asyncio.wait_for(inserting, 10)
        finally:
            await raw.close()
        assert await _jobs(dele) == {}
    finally:
        await dele.close()
        await store.close()
