"""What the database can do without the HTTP server: the same claim/complete cycle, driven
over asyncpg, at the same batch size and concurrency.

Two levels, both against the tracker's own database:

* ``sql`` — only the adapter's ``claim_fifo`` and ``complete_batch`` statements, each its own
  (implicit) transaction, exactly the two round trips a cycle cannot avoid. The SQL text is read
  from ``src/hq_adapters/postgres/sql/*.sql`` at run time (the named blocks), so it is always the
  text the adapter runs. This is the **ceiling** every HTTP figure is divided by.
* ``store`` — the PostgreSQL adapter in-process (``PostgresStore.claim`` / ``complete``): its
  context/sweep statements and transactions, but no HTTP, JSON or token lookup.

Why not pgbench: a cycle has to feed the B ``(job_id, attempt_id)`` pairs returned by the claim
into the complete statement. pgbench's ``\\gset`` takes exactly one row, and the claim is a
data-modifying ``WITH`` that PostgreSQL does not allow inside a subquery, so its rows cannot be
aggregated into one; the claim also binds B fresh attempt ids as an array. A small asyncpg
driver (asyncpg's protocol is Cython; its client CPU is reported next to the figures) keeps the
statements verbatim.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import asyncpg

from benchmarks.loadgen import admin
from benchmarks.loadgen.scenario import Spec
from benchmarks.loadgen.stats import CpuWatch, Latencies
from hq_adapters.postgres.queries import queries
from hq_domain.ids import new_attempt_id

_OUTCOME = json.dumps(
    {"kind": "success", "code": 200, "uri": None, "meta": None}, separators=(",", ":")
)


def adapter_statements() -> dict[str, str]:
    """The claim and complete statements, fresh from the adapter's SQL files."""
    blocks = queries.__wrapped__()  # bypass the cache: read the files now
    return {"claim": blocks["claim_fifo"], "complete": blocks["complete_batch"]}


class _Progress:
    def __init__(self, target: int) -> None:
        self.target = target
        self.completed = 0
        self.lat = Latencies()


async def _sql_worker(
    dsn: str, sql: dict[str, str], spec: Spec, project: str, worker_id: str, p: _Progress
) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        claim = await conn.prepare(sql["claim"])
        complete = await conn.prepare(sql["complete"])
        while p.completed < p.target:
            now = int(time.time())
            t0 = time.perf_counter()
            rows = await claim.fetch(
                project,
                [],
                spec.batch,
                [new_attempt_id() for _ in range(spec.batch)],
                worker_id,
                now + spec.lease_seconds,
                now,
            )
            t1 = time.perf_counter()
            p.lat.add("claim", t1 - t0)
            if not rows:
                await asyncio.sleep(0.005)
                continue
            results = await complete.fetch(
                project,
                worker_id,
                [r["job_id"] for r in rows],
                [r["attempt_id"] for r in rows],
                [_OUTCOME] * len(rows),
                ["null"] * len(rows),
                int(time.time()),
            )
            p.lat.add("complete", time.perf_counter() - t1)
            p.completed += sum(1 for r in results if r["job_status"] == "done")
    finally:
        await conn.close()


async def _store_worker(
    store: Any, user_id: str, spec: Spec, project: str, worker_id: str, p: _Progress
) -> None:
    from hq_domain.jobs import Outcome
    from hq_domain.worker import ClaimRequest, CompleteItem

    request = ClaimRequest(worker_id, spec.batch, spec.lease_seconds, (), 1)
    outcome = Outcome("success", 200, None, None)
    while p.completed < p.target:
        t0 = time.perf_counter()
        result = await store.claim(user_id, project, request)
        t1 = time.perf_counter()
        p.lat.add("claim", t1 - t0)
        if not result.jobs:
            await asyncio.sleep(0.005)
            continue
        items = [CompleteItem(j.job_id, j.attempt_id, outcome, None) for j in result.jobs]
        results = await store.complete(user_id, project, worker_id, items)
        p.lat.add("complete", time.perf_counter() - t1)
        p.completed += sum(1 for r in results if r.applied)


async def run(
    target: admin.Target, dsn: str, spec: Spec, *, level: str = "sql", user_id: str = "bench"
) -> dict[str, Any]:
    """Enqueue through the admin API, then drain with ``spec.workers`` direct connections."""
    project = f"ceil-{level}-b{spec.batch}-w{spec.workers}-{int(time.time() * 1000) % 10**8}"
    aconn = target.connection()
    store = None
    try:
        await admin.put_project(aconn, project)
        await admin.enqueue(aconn, project, spec.jobs)
        p = _Progress(spec.jobs)
        if level == "sql":
            sql = adapter_statements()
            workers = [
                _sql_worker(dsn, sql, spec, project, f"ceil-w{i}", p) for i in range(spec.workers)
            ]
        else:
            from hq_adapters.postgres import connect
            from hq_domain.clock import SystemClock

            store = await connect(dsn, SystemClock(), min_size=spec.workers, max_size=spec.workers)
            workers = [
                _store_worker(store, user_id, spec, project, f"ceil-w{i}", p)
                for i in range(spec.workers)
            ]
        watch = CpuWatch()
        await asyncio.gather(*workers)
        cpu = watch.stop()
        counts = await admin.job_counts(aconn, project)
        ok = counts["done"] == spec.jobs and p.completed == spec.jobs
        if ok:
            await admin.delete_project(aconn, project)
    finally:
        if store is not None:
            await store.close()
        await aconn.close()
    wall = cpu["wall_s"] or 1e-9
    return {
        "name": f"ceiling-{level}-b{spec.batch}-w{spec.workers}",
        "level": level,
        "batch": spec.batch,
        "workers": spec.workers,
        "jobs": spec.jobs,
        **cpu,
        "jobs_per_s": spec.jobs / wall,
        "requests": p.lat.requests,
        "requests_per_s": p.lat.requests / wall,
        "latency_ms": p.lat.summary_ms(),
        "counts": counts,
        "ok": ok,
    }
