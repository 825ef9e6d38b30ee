"""Issue 14: claim→complete through the HTTP API with the job-count triggers on and off.

One ``tracker serve`` on a fresh database; for each (B, W) cell, runs alternate triggers
on / off (order swapped every repeat) and report jobs/s, tracker CPU per job and PostgreSQL
CPU per job during the drain (the client backends of the bench database, from /proc: the
server must be local; other backend types are left out).

    uv run python -m benchmarks.counts_http [--cells 1x4 1x16 64x4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics

import asyncpg

from benchmarks import env
from benchmarks.counts import (
    _cpu_s,
    alternating,
    drain_problems,
    served,
    set_triggers,
    vacuum_between_runs,
)
from benchmarks.loadgen import scenario

JOBS = {1: 2500, 64: 20000}


async def _pg_cpu(conn: asyncpg.Connection) -> dict[int, float]:
    """CPU seconds per client backend of the bench database (the tracker's pool), so a run
    takes per-backend differences: a backend that leaves or joins between two samples must
    not add or remove its whole life's CPU, as the sum of totals this replaced could. Other
    backend types (autovacuum, where it runs) are not the request path's work."""
    pids = await conn.fetch(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND backend_type = 'client backend' AND pid <> pg_backend_pid()")
    out: dict[int, float] = {}
    for r in pids:
        with contextlib.suppress(OSError):  # a backend that just exited
            out[r["pid"]] = _cpu_s(r["pid"])
    return out


async def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.counts_http", description=__doc__)
    p.add_argument("--cells", nargs="+", default=["1x4", "1x16", "64x4"])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--admin-dsn", default=env.ADMIN_DSN)
    args = p.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    async with served(args.admin_dsn) as (target, conn):
        print("cell        triggers  jobs/s  tracker CPU µs/job  pg CPU µs/job  runs (jobs/s)")
        for cell in args.cells:
            b, w = (int(x) for x in cell.split("x"))
            spec = scenario.Spec(b, w, JOBS.get(b, 20000))
            res: dict[bool, list[dict]] = {True: [], False: []}
            for on in alternating(args.repeat):
                await set_triggers(conn, on)
                await vacuum_between_runs(conn)
                seen: dict[bool, dict[int, float]] = {}

                async def around(
                    start: bool, seen: dict[bool, dict[int, float]] = seen
                ) -> None:
                    seen[start] = await _pg_cpu(conn)

                # the drain only (not the enqueue, check and delete around it)
                out = await scenario.run(target, spec, around_drain=around)
                pg = sum(v - seen[True].get(p, 0.0) for p, v in seen[False].items())
                problems = drain_problems(out, on)
                assert not problems, problems
                res[on].append({"jobs_per_s": out["jobs_per_s"],
                                "srv": 1e6 * out["server_cpu_s"] / spec.jobs,
                                "pg": 1e6 * pg / spec.jobs})
            for on in (True, False):
                m = {k: statistics.median(x[k] for x in res[on]) for k in res[on][0]}
                runs = " ".join(f"{x['jobs_per_s']:.0f}" for x in res[on])
                print(f"B={b:<3} W={w:<3} {'on ' if on else 'off'}   {m['jobs_per_s']:8.0f}"
                      f"  {m['srv']:12.0f}  {m['pg']:14.0f}     {runs}", flush=True)
            on_, off_ = ({k: statistics.median(x[k] for x in res[v]) for k in ("jobs_per_s", "pg", "srv")}
                         for v in (True, False))
            print(f"           → throughput {100 * (on_['jobs_per_s'] / off_['jobs_per_s'] - 1):+.1f} %,"
                  f" pg CPU/job {100 * (on_['pg'] / off_['pg'] - 1):+.1f} %,"
                  f" tracker CPU/job {100 * (on_['srv'] / off_['srv'] - 1):+.1f} %", flush=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
