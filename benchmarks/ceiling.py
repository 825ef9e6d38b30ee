"""What the database can do without the HTTP server: the same claim/complete cycle, driven
over asyncpg, at the same batch size and concurrency.

Two levels, both against the tracker's own database:

* ``sql`` — exactly the statements the PostgreSQL adapter runs per worker request on its fast
  path: the gate read (``worker_gate``) and then one statement (``claim_op_fifo`` for a claim,
  ``complete_op`` for a complete), each autocommit, bound with the parameters
  ``hq_adapters/postgres/worker.py`` passes and on connections with the pool's
  ``plan_cache_mode`` setting. The SQL text is read from ``src/hq_adapters/postgres/sql/*.sql``
  at run time (the named blocks), so it is always the text the adapter runs. This is the
  **ceiling** every HTTP figure is divided by: HTTP adds parsing, JSON, Python and the pool,
  but no statement.
* ``store`` — the PostgreSQL adapter in-process (``PostgresStore.worker_gate`` then ``claim`` /
  ``complete``): its pool and row mapping, but no HTTP or JSON.

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
from hq_adapters.postgres.store import connect as store_connect
from hq_adapters.postgres.worker_binding import new_attempt_ids
from hq_domain.ids import machine_token_digest
from hq_domain.projects import ProjectStatus, WorkerOp, op_allowed
from hq_domain.worker import CLAIM_SWEEP_LIMIT as DEFAULT_CLAIM_SWEEP_LIMIT

_OUTCOME = json.dumps(
    {"kind": "success", "code": 200, "uri": None, "meta": None}, separators=(",", ":")
)
# The adapter's pool setting (``store.connect``); the ceiling's connections use the same.
SERVER_SETTINGS = {"plan_cache_mode": "force_custom_plan"}


def allowed(op: WorkerOp) -> list[str]:
    """The project statuses that allow ``op`` — the adapter's last bound parameter."""
    return [s.value for s in ProjectStatus if op_allowed(s, op)]


def adapter_statements() -> dict[str, str]:
    """The gate, claim and complete statements, fresh from the adapter's SQL files."""
    blocks = queries.__wrapped__()  # bypass the cache: read the files now
    return {
        "gate": blocks["worker_gate"],
        "claim": blocks["claim_op_fifo"],
        "complete": blocks["complete_op"],
    }


class _Progress:
    def __init__(self, target: int) -> None:
        self.target = target
        self.completed = 0
        self.lat = Latencies()


async def _sql_worker(
    dsn: str,
    sql: dict[str, str],
    spec: Spec,
    project: str,
    worker_id: str,
    p: _Progress,
    *,
    user_id: str,
    token: str,
) -> None:
    conn = await asyncpg.connect(dsn, server_settings=SERVER_SETTINGS)
    digest = machine_token_digest(token)
    try:
        gate = await conn.prepare(sql["gate"])
        claim = await conn.prepare(sql["claim"])
        complete = await conn.prepare(sql["complete"])
        claim_allowed, complete_allowed = allowed(WorkerOp.CLAIM), allowed(WorkerOp.COMPLETE)
        while p.completed < p.target:
            t0 = time.perf_counter()
            await gate.fetchrow(digest, project)
            now = int(time.time())
            rows = await claim.fetch(
                project,
                [],
                spec.batch,
                new_attempt_ids(spec.batch),
                worker_id,
                now + spec.lease_seconds,
                now,
                user_id,
                DEFAULT_CLAIM_SWEEP_LIMIT,
                claim_allowed,
            )
            t1 = time.perf_counter()
            p.lat.add("claim", t1 - t0)
            if not rows[0]["fast"]:
                raise RuntimeError("claim_op_fifo declined the fast path; the ceiling is void")
            jobs = [r for r in rows if r["job_id"] is not None]
            if not jobs:
                await asyncio.sleep(0.005)
                continue
            await gate.fetchrow(digest, project)
            r = await complete.fetchrow(
                project,
                worker_id,
                [j["job_id"] for j in jobs],
                [j["attempt_id"] for j in jobs],
                [_OUTCOME] * len(jobs),
                ["null"] * len(jobs),
                int(time.time()),
                user_id,
                complete_allowed,
            )
            p.lat.add("complete", time.perf_counter() - t1)
            if not r["ok"]:
                raise RuntimeError("complete_op declined the fast path; the ceiling is void")
            p.completed += sum(1 for s in r["job_statuses"] if s == "done")
    finally:
        await conn.close()


async def _store_worker(
    store: Any, token: str, spec: Spec, project: str, worker_id: str, p: _Progress
) -> None:
    from hq_domain.jobs import Outcome
    from hq_domain.worker import ClaimRequest, CompleteItem

    request = ClaimRequest(worker_id, spec.batch, spec.lease_seconds, (), 1)
    outcome = Outcome("success", 200, None, None)
    while p.completed < p.target:
        t0 = time.perf_counter()
        principal, _ = await store.worker_gate(token, project)
        user_id = principal.user_id
        result = await store.claim(user_id, project, request)
        t1 = time.perf_counter()
        p.lat.add("claim", t1 - t0)
        if not result.jobs:
            await asyncio.sleep(0.005)
            continue
        items = [CompleteItem(j.job_id, j.attempt_id, outcome, None) for j in result.jobs]
        await store.worker_gate(token, project)
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
                _sql_worker(
                    dsn, sql, spec, project, f"ceil-w{i}", p, user_id=user_id, token=target.token
                )
                for i in range(spec.workers)
            ]
        else:
            from hq_domain.clock import SystemClock

            store = await store_connect(
                dsn, SystemClock(), min_size=spec.workers, max_size=spec.workers
            )
            workers = [
                _store_worker(store, target.token, spec, project, f"ceil-w{i}", p)
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
