"""Probe: the worker statements under stale planner statistics.

This is the state right after a large project was deleted (or on a fresh database filling up)
and before autovacuum/autoanalyze catches up: ANALYZE saw an almost empty table, then new todo
rows arrive. The probe runs the statements the adapter now runs per request — ``claim_op_fifo``
then ``complete_op`` for the claimed jobs (text read at run time, parameters bound as
``ceiling`` binds them, same ``plan_cache_mode``) — before and after a fresh ANALYZE, so the
owners can see whether they are robust to stale statistics. Runs on the bench database only.
"""

from __future__ import annotations

import time
from typing import Any

import asyncpg

from benchmarks.ceiling import _OUTCOME, SERVER_SETTINGS, adapter_statements, allowed
from benchmarks.loadgen import admin
from benchmarks.loadgen.stats import Latencies
from benchmarks.scale import SQL
from hq_adapters.postgres.worker_binding import new_attempt_ids
from hq_domain.projects import WorkerOp
from hq_domain.worker import CLAIM_SWEEP_LIMIT as DEFAULT_CLAIM_SWEEP_LIMIT

WORKER = "bench-plans"


async def _cycles(
    db: asyncpg.Connection,
    sql: dict[str, str],
    project: str,
    user_id: str,
    batch: int,
    n: int,
    lat: Latencies,
    label: str,
) -> None:
    claim, complete = await db.prepare(sql["claim"]), await db.prepare(sql["complete"])
    for _ in range(n):
        now = int(time.time())
        t0 = time.perf_counter()
        rows = await claim.fetch(
            project,
            [],
            batch,
            new_attempt_ids(batch),
            WORKER,
            now + 300,
            now,
            user_id,
            DEFAULT_CLAIM_SWEEP_LIMIT,
            allowed(WorkerOp.CLAIM),
        )
        t1 = time.perf_counter()
        lat.add(f"claim_op_fifo{label}", t1 - t0)
        jobs = [r for r in rows if r["job_id"] is not None]
        assert rows[0]["fast"] and jobs, "the probe ran out of todo jobs or left the fast path"
        r = await complete.fetchrow(
            project,
            WORKER,
            [j["job_id"] for j in jobs],
            [j["attempt_id"] for j in jobs],
            [_OUTCOME] * len(jobs),
            ["null"] * len(jobs),
            int(time.time()),
            user_id,
            allowed(WorkerOp.COMPLETE),
        )
        lat.add(f"complete_op{label}", time.perf_counter() - t1)
        assert r["ok"], "complete_op left the fast path"


async def stale_statistics(
    target: admin.Target,
    dsn: str,
    *,
    deleted: int = 300_000,
    batch: int = 64,
    claims: int = 10,
    user_id: str = "bench",
) -> dict[str, Any]:
    old, new = (f"plans-{x}-{int(time.time()) % 10**6}" for x in ("old", "new"))
    aconn = target.connection()
    db = await asyncpg.connect(dsn, server_settings=SERVER_SETTINGS)
    try:
        await admin.put_project(aconn, old)
        await db.execute(SQL["insert_finished"], old, int(time.time()), 1, deleted)
        await db.execute(SQL["delete_project_jobs"], old)
        await db.execute("ANALYZE tracker_jobs")
        await admin.put_project(aconn, new)
        await admin.enqueue(aconn, new, 3 * batch * claims, prefix="plans")
        sql = adapter_statements()
        lat = Latencies()
        await _cycles(db, sql, new, user_id, batch, claims, lat, "")
        await db.execute("ANALYZE tracker_jobs")
        await _cycles(db, sql, new, user_id, batch, claims, lat, " after ANALYZE")
    finally:
        await db.close()
        await aconn.close()
    return {
        "deleted": deleted,
        "batch": batch,
        "claims": claims,
        "latency_ms": lat.summary_ms(),
    }
