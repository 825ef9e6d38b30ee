"""Scale: claim latency as finished rows pile up, with an expired-lease backlog, and the
enqueue API's throughput.

Finished and expired rows are bulk-loaded with ``INSERT … SELECT generate_series`` straight into
``tracker_jobs`` (statements in ``scale.sql``); the measured traffic goes through the HTTP API.
Row counts are cumulative in one project: 0 → 1M → 10M adds 1M, then 9M more. The bench
database is dropped afterwards, so these projects are not cleaned up (a 10M-row DELETE would
only add minutes of dead tuples).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import asyncpg

from benchmarks.loadgen import admin
from benchmarks.loadgen.scenario import BATCH_DECODER, CLAIM_DECODER, OUTCOME, encode
from benchmarks.loadgen.stats import Latencies
from hq_adapters.postgres.queries import parse

SQL = parse((Path(__file__).parent / "scale.sql").read_text())
CHUNK = 1_000_000


async def _cycles(
    target: admin.Target,
    project: str,
    batch: int,
    cycles: int,
    lat: Latencies,
    first_kind: str | None = None,
    first_n: int = 0,
) -> None:
    """``cycles`` claim(batch) → complete cycles by one worker; the first ``first_n`` claims are
    recorded as ``first_kind``."""
    conn = target.connection(worker=True)
    base = f"/api/v1/projects/{project}/jobs/"
    claim_body = encode(
        {"worker_id": "bench-scale", "max_jobs": batch, "lease_seconds": 300, "policy_version": 1}
    )
    admin_conn = target.connection()
    try:
        for i in range(cycles):
            t0 = time.perf_counter()
            status, _, payload = await conn.request("POST", base + "claim", claim_body)
            t1 = time.perf_counter()
            assert status == 200, payload
            lat.add(first_kind if first_kind and i < first_n else "claim", t1 - t0)
            jobs = CLAIM_DECODER.decode(payload).jobs
            if not jobs:
                break
            body = encode(
                {
                    "worker_id": "bench-scale",
                    "items": [
                        {
                            "job_id": j.job_id,
                            "attempt_id": j.attempt_id,
                            "outcome": OUTCOME,
                            "artifact_receipts": None,
                        }
                        for j in jobs
                    ],
                }
            )
            status, _, payload = await conn.request("POST", base + "complete", body)
            lat.add("complete", time.perf_counter() - t1)
            assert status == 200 and all(
                r.status == "applied" for r in BATCH_DECODER.decode(payload).results
            ), payload
        t0 = time.perf_counter()
        await admin.job_counts(admin_conn, project)
        lat.add("admin_get_project", time.perf_counter() - t0)
    finally:
        await conn.close()
        await admin_conn.close()


async def finished_rows(
    target: admin.Target,
    dsn: str,
    row_counts: list[int],
    *,
    batch: int = 64,
    cycles: int = 200,
    log: Any = print,
) -> list[dict[str, Any]]:
    project = f"scale-{int(time.time()) % 10**6}"
    aconn = target.connection()
    db = await asyncpg.connect(dsn)
    out = []
    try:
        await admin.put_project(aconn, project)
        loaded = 0
        for rows in sorted(row_counts):
            t0 = time.perf_counter()
            while loaded < rows:
                upto = min(rows, loaded + CHUNK)
                await db.execute(
                    SQL["insert_finished"], project, int(time.time()) - 86400, loaded + 1, upto
                )
                loaded = upto
                log(f"  scale: {loaded:,} finished rows loaded")
            load_s = time.perf_counter() - t0
            enqueue_s = await admin.enqueue(aconn, project, batch * cycles, prefix=f"s{rows}")
            # steady state: autovacuum/autoanalyze would have processed the bulk load by now,
            # and its dirty pages are flushed so the measurement does not pay for them
            await db.execute("VACUUM (ANALYZE) tracker_jobs")
            await db.execute("CHECKPOINT")
            log(
                f"  scale: {rows:,} rows: loaded in {load_s:.0f} s, {batch * cycles:,} enqueued "
                f"in {enqueue_s:.1f} s"
            )
            lat = Latencies()
            await _cycles(target, project, batch, cycles, lat)
            out.append(
                {
                    "finished_rows": rows,
                    "load_s": load_s,
                    "batch": batch,
                    "cycles": cycles,
                    "enqueue_jobs_per_s": batch * cycles / enqueue_s,
                    "latency_ms": lat.summary_ms(),
                }
            )
            log(f"  scale: {rows:,} finished rows measured")
    finally:
        await db.close()
        await aconn.close()
    return out


async def expired_backlog(
    target: admin.Target,
    dsn: str,
    *,
    expired: int = 100_000,
    batch: int = 64,
    cycles: int = 200,
    sweeping: int = 50,
) -> dict[str, Any]:
    """Claim latency while ``expired`` expired leases wait to be swept (≤ CLAIM_SWEEP_LIMIT per claim)."""
    project = f"expired-{int(time.time()) % 10**6}"
    aconn = target.connection()
    db = await asyncpg.connect(dsn)
    try:
        await admin.put_project(aconn, project, max_resets=1000)
        now = int(time.time())
        await db.execute(SQL["insert_expired"], project, now, expired)
        await admin.enqueue(aconn, project, batch * cycles, prefix="todo")
        await db.execute("ANALYZE tracker_jobs")
        lat = Latencies()
        t0 = time.perf_counter()
        await _cycles(target, project, batch, cycles, lat, "claim_while_sweeping", sweeping)
        wall = time.perf_counter() - t0
        left = await db.fetchval(SQL["count_expired"], project, int(time.time()))
    finally:
        await db.close()
        await aconn.close()
    return {
        "expired": expired,
        "batch": batch,
        "cycles": cycles,
        "sweeping_claims": sweeping,
        "expired_left": left,
        "wall_s": wall,
        "latency_ms": lat.summary_ms(),
    }


async def enqueue_throughput(
    target: admin.Target, jobs: int, *, batch: int = 5000
) -> list[dict[str, Any]]:
    """Admin enqueue API throughput per identity mode (fresh project each)."""
    out = []
    aconn = target.connection()
    try:
        for mode in ("none", "external_id", "unique_value"):
            project = f"enqueue-{mode.replace('_', '-')}-{int(time.time()) % 10**6}"
            await admin.put_project(aconn, project, identity_mode=mode)
            seconds = await admin.enqueue(
                aconn, project, jobs, batch=batch, external_ids=mode == "external_id", prefix=mode
            )
            again = await admin.enqueue(
                aconn,
                project,
                min(jobs, batch),
                batch=batch,
                external_ids=mode == "external_id",
                prefix=mode,
            )
            out.append(
                {
                    "identity_mode": mode,
                    "jobs": jobs,
                    "batch": batch,
                    "jobs_per_s": jobs / seconds,
                    "resubmit_jobs_per_s": min(jobs, batch) / again,
                }
            )
            await admin.delete_project(aconn, project)
    finally:
        await aconn.close()
    return out
