"""Probe: claim latency when the planner's statistics underestimate ``tracker_jobs``.

This is the state right after a large project was deleted (or on a fresh database filling up)
and before autovacuum/autoanalyze catches up: ANALYZE saw an almost empty table, then new todo
rows arrive. The probe measures the adapter's own ``claim_fifo`` (text read at run time) next to
the same text with the UPDATE's join key also given as an index condition
(``AND j.job_id = ANY (ARRAY(SELECT job_id FROM picked))``), so the owners can see whether the
statement is robust to stale statistics. Runs on the bench database only.
"""

from __future__ import annotations

import time
from typing import Any

import asyncpg

from benchmarks.loadgen import admin
from benchmarks.loadgen.stats import Latencies
from benchmarks.scale import SQL
from hq_adapters.postgres.queries import queries
from hq_domain.ids import new_attempt_id

JOIN = "WHERE j.job_id = n.job_id"
ROBUST_JOIN = JOIN + " AND j.job_id = ANY (ARRAY(SELECT job_id FROM picked))"


def robust_variant(claim_sql: str) -> str | None:
    """The claim text with the extra index condition; None if the join is no longer there."""
    return claim_sql.replace(JOIN, ROBUST_JOIN, 1) if JOIN in claim_sql else None


async def _claims(
    db: asyncpg.Connection, sql: str, project: str, batch: int, n: int, lat: Latencies, kind: str
) -> None:
    stmt = await db.prepare(sql)
    for _ in range(n):
        now = int(time.time())
        t0 = time.perf_counter()
        rows = await stmt.fetch(
            project,
            [],
            batch,
            [new_attempt_id() for _ in range(batch)],
            "bench-plans",
            now + 300,
            now,
        )
        lat.add(kind, time.perf_counter() - t0)
        assert rows, "the probe ran out of todo jobs"


async def stale_statistics(
    target: admin.Target, dsn: str, *, deleted: int = 300_000, batch: int = 64, claims: int = 10
) -> dict[str, Any]:
    old, new = (f"plans-{x}-{int(time.time()) % 10**6}" for x in ("old", "new"))
    aconn = target.connection()
    db = await asyncpg.connect(dsn)
    try:
        await admin.put_project(aconn, old)
        await db.execute(SQL["insert_finished"], old, int(time.time()), 1, deleted)
        await db.execute(SQL["delete_project_jobs"], old)
        await db.execute("ANALYZE tracker_jobs")
        await admin.put_project(aconn, new)
        await admin.enqueue(aconn, new, 3 * batch * claims, prefix="plans")
        claim = queries.__wrapped__()["claim_fifo"]
        lat = Latencies()
        await _claims(db, claim, new, batch, claims, lat, "adapter claim_fifo")
        variant = robust_variant(claim)
        if variant is not None:
            await _claims(db, variant, new, batch, claims, lat, "with = ANY index condition")
        await db.execute("ANALYZE tracker_jobs")
        await _claims(db, claim, new, batch, claims, lat, "adapter claim_fifo after ANALYZE")
    finally:
        await db.close()
        await aconn.close()
    return {
        "deleted": deleted,
        "batch": batch,
        "claims": claims,
        "variant": variant is not None,
        "latency_ms": lat.summary_ms(),
    }
