"""The lean claim (migration 0017) claims what the claim_op block claims, as it would.

tracker_claim_op_fifo/random run claim_lean_* when no lease of the project has expired. Here the
same claim runs both ways on the same rows (each in a transaction that is rolled back): through
the function, which must take its lean path, and as the claim_op block itself. The result rows,
every column of every job, the count deltas and the worker mapping must come out the same.
"""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from hq_adapters.postgres.queries import queries
from hq_adapters.postgres.worker import ALLOWED_STATUSES
from hq_domain.projects import WorkerOp

pytestmark = pytest.mark.postgres

NOW = 1_000_000
_SETTINGS = {"plan_cache_mode": "force_generic_plan", "enable_seqscan": "off",
             "enable_bitmapscan": "off", "enable_sort": "off", "jit": "off",
             "hq.counted": "on"}  # fmt: skip
_JOBS = """
INSERT INTO tracker_jobs (project_id, value, random_key, random_queue, spec, status, attempt_id,
                          worker_id, lease_expires_at, reset_count, created_at, updated_at)
SELECT $1, 'v' || g, (g * 7919) % 1009, $2, CASE WHEN g % 3 = 0 THEN '{"type":"asset"}'
       ELSE '{}' END::jsonb, 'todo', NULL, NULL, NULL, g % 2, 100 + g / 4, 100
FROM generate_series(1, 40) AS g
"""


def _ready(order: str) -> str:
    """claim_lean_ready_<order> as one boolean, with the claim parameters it does not read
    bound too (so the statement takes the function's whole argument list)."""
    return (f"SELECT EXISTS ({_block(f'claim_lean_ready_{order}')}) FROM (SELECT $2::text[], "
            "$3::integer, $4::text[], $5::text, $6::bigint, $9::integer) AS unread")


def _block(name: str) -> str:
    return "\n".join(
        line for line in queries()[name].splitlines() if not line.lstrip().startswith("--")
    ).strip()


async def _state(conn: asyncpg.Connection) -> tuple[Any, ...]:
    jobs = await conn.fetch("SELECT * FROM tracker_jobs ORDER BY job_id")
    deltas = await conn.fetch(
        "SELECT project_id, status, sum(n) FROM tracker_job_count_deltas "
        "GROUP BY 1, 2 HAVING sum(n) <> 0 ORDER BY 1, 2"
    )
    workers = await conn.fetch("SELECT * FROM tracker_workers ORDER BY worker_id")
    return [dict(r) for r in jobs], [tuple(r) for r in deltas], [tuple(r) for r in workers]


async def _claim(conn: asyncpg.Connection, sql: str, args: list[Any]) -> tuple[Any, ...]:
    tx = conn.transaction()
    await tx.start()
    try:
        rows = [tuple(r) for r in await conn.fetch(sql, *args)]
        return rows, await _state(conn)
    finally:
        await tx.rollback()


@pytest.mark.parametrize("order", ["fifo", "random"])
@pytest.mark.parametrize(
    ("max_jobs", "per_claim", "accept", "mapped"),
    [(1, 256, [], "u"), (4, 256, [], None), (16, 3, [], "other"), (5, 256, ["asset"], "u"),
     (16, 256, ["nothing"], "u")],
)  # fmt: skip
async def test_the_lean_claim_claims_what_the_claim_block_claims(
    pg_dsn: str, order: str, max_jobs: int, per_claim: int, accept: list[str], mapped: str | None
) -> None:
    conn = await asyncpg.connect(pg_dsn, server_settings=_SETTINGS)
    try:
        for user in ("u", "other"):
            await conn.execute(
                "INSERT INTO tracker_users (id, status, roles, created_at, updated_at) "
                "VALUES ($1, 'active', '{worker}', 0, 0)", user,
            )  # fmt: skip
        await conn.execute(
            "INSERT INTO tracker_projects (id, status, identity_mode, claim_order, "
            "max_jobs_per_claim, created_at, updated_at) VALUES ('p', 'active', 'none', $1, $2, "
            "0, 0)", order, per_claim,
        )  # fmt: skip
        await conn.execute(_JOBS, "p", order == "random")
        # a live lease of another worker: not expired, so the lean path applies
        await conn.execute(
            "UPDATE tracker_jobs SET status = 'wip', attempt_id = 'at_x', worker_id = 'x', "
            "lease_expires_at = $1 WHERE job_id = (SELECT min(job_id) FROM tracker_jobs)",
            NOW + 60,
        )
        if mapped:
            await conn.execute("INSERT INTO tracker_workers VALUES ('w', $1)", mapped)
        args = ["p", accept, max_jobs, [f"at_{i}" for i in range(max_jobs)], "w", NOW + 300,
                NOW, "u", 256, ALLOWED_STATUSES[WorkerOp.CLAIM]]  # fmt: skip
        assert await conn.fetchval(_ready(order), *args)
        function = f"SELECT * FROM tracker_claim_op_{order}($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        lean = await _claim(conn, function, args)
        full = await _claim(conn, _block(f"claim_op_{order}"), args)
        assert lean == full
        rows, (_, deltas, workers) = lean
        claimed = [r for r in rows if r[3] is not None]  # (fast, policy_version, ord, job_id, …)
        if accept == ["nothing"]:
            assert rows == [(True, 1, None, None, None, None, None, None, None)]
        elif not accept:
            assert len(claimed) == min(max_jobs, per_claim)
        assert ("p", "wip", len(claimed)) in deltas or not claimed
        assert workers == [("w", "u")]  # the mapping now names the claiming user
    finally:
        await conn.close()


async def test_an_expired_lease_takes_the_claim_block_and_is_swept(pg_dsn: str) -> None:
    conn = await asyncpg.connect(pg_dsn, server_settings=_SETTINGS)
    try:
        await conn.execute(
            "INSERT INTO tracker_users (id, status, roles, created_at, updated_at) "
            "VALUES ('u', 'active', '{worker}', 0, 0)"
        )
        await conn.execute(
            "INSERT INTO tracker_projects (id, status, identity_mode, claim_order, created_at, "
            "updated_at) VALUES ('p', 'active', 'none', 'fifo', 0, 0)"
        )
        await conn.execute(_JOBS, "p", False)
        expired = await conn.fetchval(
            "UPDATE tracker_jobs SET status = 'wip', attempt_id = 'at_x', worker_id = 'x', "
            "lease_expires_at = $1, created_at = 1000 "
            "WHERE job_id = (SELECT max(job_id) FROM tracker_jobs) RETURNING job_id", NOW - 1,
        )  # fmt: skip
        args = ["p", [], 1, ["at_0"], "w", NOW + 300, NOW, "u", 256,
                ALLOWED_STATUSES[WorkerOp.CLAIM]]  # fmt: skip
        assert not await conn.fetchval(_ready("fifo"), *args)
        await conn.fetch(
            "SELECT * FROM tracker_claim_op_fifo($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", *args
        )
        row = await conn.fetchrow(
            "SELECT status, reset_count, last_worker_id FROM tracker_jobs WHERE job_id = $1",
            expired,
        )
        assert tuple(row) == ("todo", 1, "x")
    finally:
        await conn.close()
