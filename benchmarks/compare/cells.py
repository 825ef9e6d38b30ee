"""Time-boxed worker cells: W keep-alive workers loop claim(B) → complete(all) against a queue
that is already full; after a warm-up the cell measures a fixed window of steady load.

Only requests that end inside the window are counted (jobs, latencies, HTTP errors), and the CPU
of the tracker process tree and of the database's PostgreSQL backends is sampled at the window's
edges. An HTTP error is counted, not raised: the pooler cells report them per cell.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.compare.procstat import BackendCpu, tree_cpu_seconds
from benchmarks.loadgen import admin
from benchmarks.loadgen.scenario import BATCH_DECODER, CLAIM_DECODER, OUTCOME, encode
from benchmarks.loadgen.stats import Latencies

PROJECT = "bench"
"""The project the template database holds the queued jobs in."""


@dataclass
class Window:
    """What the workers record; ``t0``/``t1`` are the measurement window's edges."""

    t0: float = float("inf")
    t1: float = float("inf")
    stop: bool = False
    jobs: int = 0
    applied_ids: set[int] = field(default_factory=set)
    duplicates: int = 0
    rejected: int = 0
    empty_claims: int = 0
    cycles: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    lat: Latencies = field(default_factory=Latencies)

    def inside(self, end: float) -> bool:
        return self.t0 <= end <= self.t1


async def _request(
    conn: Any, w: Window, kind: str, path: str, body: bytes
) -> tuple[int, bytes] | None:
    t0 = time.perf_counter()
    try:
        status, _, payload = await conn.request("POST", path, body)
    except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
        if w.inside(time.perf_counter()):
            w.errors[f"{kind}:{type(exc).__name__}"] += 1
        await asyncio.sleep(0.05)
        return None
    end = time.perf_counter()
    if w.inside(end):
        if status == 200:
            w.lat.add(kind, end - t0)
        else:
            w.errors[f"{kind}:{status}"] += 1
    return status, payload


async def _worker(index: int, target: admin.Target, batch: int, w: Window) -> None:
    conn = target.connection(worker=True)
    worker_id = f"bench-w{index}"
    base = f"/api/v1/projects/{PROJECT}/jobs/"
    claim_body = encode(
        {"worker_id": worker_id, "max_jobs": batch, "lease_seconds": 600, "policy_version": 1}
    )
    try:
        while not w.stop:
            got = await _request(conn, w, "claim", base + "claim", claim_body)
            if got is None or got[0] != 200:
                if got is not None and got[0] >= 500:
                    await asyncio.sleep(0.01)
                continue
            jobs = CLAIM_DECODER.decode(got[1]).jobs
            if not jobs:
                w.empty_claims += 1
                await asyncio.sleep(0.005)
                continue
            body = encode(
                {
                    "worker_id": worker_id,
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
            got = await _request(conn, w, "complete", base + "complete", body)
            if got is None or got[0] != 200:
                continue
            end = time.perf_counter()
            w.cycles += 1
            for item in BATCH_DECODER.decode(got[1]).results:
                if item.status != "applied":
                    w.rejected += 1
                    continue
                if item.job_id in w.applied_ids:
                    w.duplicates += 1
                w.applied_ids.add(item.job_id)
                if w.inside(end):
                    w.jobs += 1
    finally:
        await conn.close()


@dataclass(frozen=True)
class Timing:
    """``warmup_s`` and ``measure_s`` are minimums: a slow cell (a claim round trip of seconds)
    warms up until every worker has completed a cycle and measures until the window holds at
    least one completion per worker, each within ``cap_s``."""

    warmup_s: float
    measure_s: float
    cap_s: float = 20.0


async def run_cell(
    target: admin.Target,
    batch: int,
    workers: int,
    timing: Timing,
    pg_pids: Callable[[], Awaitable[list[int]]],
    pooler_pid: int | None = None,
) -> dict[str, Any]:
    """Warm up, measure a window of steady load, stop the workers; the figures."""
    w = Window()
    tasks = [asyncio.create_task(_worker(i, target, batch, w)) for i in range(workers)]
    pg = BackendCpu()
    try:
        start = time.perf_counter()
        await asyncio.sleep(timing.warmup_s)
        while w.cycles < workers and time.perf_counter() - start < timing.cap_s:
            await asyncio.sleep(0.1)
        warmup = time.perf_counter() - start
        pg.observe(await pg_pids())
        srv0 = tree_cpu_seconds(target.server_pid) if target.server_pid else None
        pool0 = tree_cpu_seconds(pooler_pid) if pooler_pid else None
        cpu0 = time.process_time()
        w.t0 = time.perf_counter()
        while True:
            await asyncio.sleep(0.5 if timing.measure_s >= 1 else 0.1)
            pg.observe(await pg_pids())
            elapsed = time.perf_counter() - w.t0
            completes = len(w.lat.samples.get("complete", ()))
            if elapsed >= timing.cap_s or (elapsed >= timing.measure_s and completes >= workers):
                break
        w.t1 = time.perf_counter()
        srv1 = tree_cpu_seconds(target.server_pid) if target.server_pid else None
        pool1 = tree_cpu_seconds(pooler_pid) if pooler_pid else None
        pg.observe(await pg_pids())
        client_cpu = time.process_time() - cpu0
        wall = w.t1 - w.t0
    finally:
        w.stop = True
        done, pending = await asyncio.wait(tasks, timeout=30)
        for t in pending:
            t.cancel()
    for t in done:
        if t.exception() is not None:
            w.errors[f"worker:{type(t.exception()).__name__}"] += 1
    out = summarize(batch, workers, w, wall, srv0, srv1, pg.seconds, client_cpu)
    out["warmup_s"] = warmup
    if pool0 is not None and pool1 is not None:
        out["pooler_cpu_s"] = pool1 - pool0
        out["pooler_cpu_ms_per_request"] = 1e3 * (pool1 - pool0) / max(1, out["requests"])
    return out


def summarize(
    batch: int,
    workers: int,
    w: Window,
    wall: float,
    srv0: float | None,
    srv1: float | None,
    pg_cpu_s: float,
    client_cpu_s: float,
) -> dict[str, Any]:
    requests = sum(len(v) for v in w.lat.samples.values()) + sum(w.errors.values())
    tracker_cpu = None if srv0 is None or srv1 is None else srv1 - srv0
    per = max(1, requests)
    return {
        "batch": batch,
        "workers": workers,
        "wall_s": wall,
        "jobs": w.jobs,
        "jobs_per_s": w.jobs / wall if wall > 0 else 0.0,
        "requests": requests,
        "requests_per_s": requests / wall if wall > 0 else 0.0,
        "latency_ms": w.lat.summary_ms(),
        "http_errors": sum(w.errors.values()),
        "errors": dict(w.errors),
        "empty_claims": w.empty_claims,
        "rejected": w.rejected,
        "duplicates": w.duplicates,
        "tracker_cpu_s": tracker_cpu,
        "pg_cpu_s": pg_cpu_s,
        "client_cpu_s": client_cpu_s,
        "tracker_cpu_ms_per_request": None if tracker_cpu is None else 1e3 * tracker_cpu / per,
        "pg_cpu_ms_per_request": 1e3 * pg_cpu_s / per,
    }
