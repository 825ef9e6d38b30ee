"""The bulk scenarios: the admin enqueue route, ``source pack``, ``tracker enqueue-source``
(fresh and re-run) and ``hqctl enqueue-source``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks.compare import impls
from benchmarks.compare.cells import Timing
from benchmarks.compare.procstat import BackendCpu, tree_cpu_seconds
from benchmarks.loadgen import admin
from benchmarks.loadgen.http import HttpError
from benchmarks.loadgen.stats import Latencies

PidSource = Callable[[], Awaitable[list[int]]]
ENQUEUE_BATCH = 1000


def write_values(path: Path, count: int) -> None:
    with open(path, "w") as f:
        for i in range(count):
            f.write(f"https://example.org/item/{i}?q={i * 7919 % 100003}\n")


async def enqueue_route(
    target: admin.Target, timing: Timing, pg_pids: PidSource, pooler_pid: int | None = None
) -> dict[str, Any]:
    """One sender posts 1,000 new jobs per request to a ``none``-identity project."""
    conn = target.connection()
    lat = Latencies()
    errors = 0
    try:
        await admin.put_project(conn, "enq")
        path = "/api/v1/admin/projects/enq/jobs"
        serial = 0

        async def send(measure: bool) -> None:
            nonlocal serial, errors
            body = {
                "jobs": [
                    {"value": f"https://example.org/enq/{serial + i}"} for i in range(ENQUEUE_BATCH)
                ]
            }
            serial += ENQUEUE_BATCH
            t0 = time.perf_counter()
            try:
                await conn.json("POST", path, body)
            except HttpError:
                errors += measure
                return
            if measure:
                lat.add("enqueue", time.perf_counter() - t0)

        warm_end = time.perf_counter() + timing.warmup_s
        while time.perf_counter() < warm_end:
            await send(False)
        pg = BackendCpu()
        pg.observe(await pg_pids())
        srv0 = tree_cpu_seconds(target.server_pid or 0)
        pool0 = tree_cpu_seconds(pooler_pid) if pooler_pid else None
        t0 = time.perf_counter()
        next_sample = t0 + 0.5
        while time.perf_counter() - t0 < timing.measure_s or lat.requests < 3:
            await send(True)
            if time.perf_counter() > next_sample:
                pg.observe(await pg_pids())
                next_sample += 0.5
        wall = time.perf_counter() - t0
        srv1 = tree_cpu_seconds(target.server_pid or 0)
        pool1 = tree_cpu_seconds(pooler_pid) if pooler_pid else None
        pg.observe(await pg_pids())
    finally:
        await conn.close()
    requests = lat.requests + errors
    cpu = None if srv0 is None or srv1 is None else srv1 - srv0
    pooler = None if pool0 is None or pool1 is None else pool1 - pool0
    return {
        "pooler_cpu_ms_per_request": None if pooler is None else 1e3 * pooler / max(1, requests),
        "wall_s": wall,
        "jobs": lat.requests * ENQUEUE_BATCH,
        "jobs_per_s": lat.requests * ENQUEUE_BATCH / wall,
        "requests": requests,
        "latency_ms": lat.summary_ms(),
        "http_errors": errors,
        "tracker_cpu_s": cpu,
        "pg_cpu_s": pg.seconds,
        "tracker_cpu_ms_per_request": None if cpu is None else 1e3 * cpu / max(1, requests),
        "pg_cpu_ms_per_request": 1e3 * pg.seconds / max(1, requests),
    }


def pack(impl: impls.Impl, values: Path, out: Path) -> dict[str, Any]:
    out.unlink(missing_ok=True)
    t = impls.run_timed(
        [*impl.source, "pack", "--input", str(values), "--output", str(out),
         "--identity-mode", "external_id"],
        impl,
    )  # fmt: skip
    if t.returncode != 0:
        raise RuntimeError(f"source pack exited {t.returncode}: {t.output}")
    return {"wall_s": t.wall_s, "cli_cpu_s": t.cli_cpu, "peak_rss_mib": t.peak_rss_mib,
            "bytes": out.stat().st_size}  # fmt: skip


async def timed_with_pg(
    cmd: list[str], impl: impls.Impl, pg_pids: PidSource, server_pid: int | None = None
) -> dict[str, Any]:
    """Run a CLI to completion while sampling the database's backends (and a server's CPU)."""
    pg = BackendCpu()
    pg.observe(await pg_pids())
    srv0 = tree_cpu_seconds(server_pid) if server_pid else None
    task = asyncio.create_task(asyncio.to_thread(impls.run_timed, cmd, impl))
    while not task.done():
        await asyncio.wait([task], timeout=0.5)
        pg.observe(await pg_pids())
    t = task.result()
    srv1 = tree_cpu_seconds(server_pid) if server_pid else None
    if t.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:2])} exited {t.returncode}: {t.output}")
    return {
        "wall_s": t.wall_s,
        "cli_cpu_s": t.cli_cpu,
        "peak_rss_mib": t.peak_rss_mib,
        "pg_cpu_s": pg.seconds,
        "tracker_cpu_s": None if srv0 is None or srv1 is None else srv1 - srv0,
    }
