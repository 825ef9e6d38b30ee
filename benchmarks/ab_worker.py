"""``uv run python -m benchmarks.ab_worker --base SRC_A --cand SRC_B``: interleaved A/B of the
worker hot path (claim(B) → complete) between two source trees of this project.

Each variant is ``tracker serve`` run with ``PYTHONPATH=<tree>/src`` (so the same virtualenv
runs either tree's code) against its own fresh database, migrated by that tree (so a schema
change is part of what is compared). Cells run A, B, A, B… so both see the same machine load.
Reported per run: jobs/s, claim/complete p50/p99, tracker CPU µs per request (/proc of the
server) and PostgreSQL CPU µs per request (/proc of every backend of that database, sampled
before and after the drain: the pool's connections live through the run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg

from benchmarks import env
from benchmarks.loadgen import scenario
from benchmarks.loadgen.stats import process_cpu_seconds


async def _backend_cpu(admin_dsn: str, db: str) -> dict[int, float]:
    conn = await asyncpg.connect(admin_dsn)
    try:
        pids = await conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", db
        )
    finally:
        await conn.close()
    out = {}
    for r in pids:
        cpu = process_cpu_seconds(r["pid"])
        if cpu is not None:
            out[r["pid"]] = cpu
    return out


async def _one(
    server: env.Server, dsn: str, spec: scenario.Spec, admin_dsn: str
) -> dict[str, Any]:
    db = urlsplit(dsn).path.lstrip("/")
    holder: dict[str, dict[int, float]] = {}

    async def around(start: bool) -> None:
        holder["start" if start else "end"] = await _backend_cpu(admin_dsn, db)

    r = await scenario.run(server.target, spec, around_drain=around)
    start, end = holder["start"], holder["end"]
    pg = sum(end[p] - start.get(p, 0.0) for p in end)
    req = max(1, r["requests"])
    lat = r["latency_ms"]
    return {
        "jobs_per_s": r["jobs_per_s"],
        "ok": r["ok"],
        "tracker_us_req": 1e6 * r["server_cpu_s"] / req if r.get("server_cpu_s") else None,
        "pg_us_req": 1e6 * pg / req,
        "claim_p50": lat.get("claim", {}).get("p50"),
        "claim_p99": lat.get("claim", {}).get("p99"),
        "complete_p50": lat.get("complete", {}).get("p50"),
        "complete_p99": lat.get("complete", {}).get("p99"),
        "load": env.load_average(),
    }


async def main(args: argparse.Namespace) -> None:
    trees = {"A": Path(args.base).resolve(), "B": Path(args.cand).resolve()}
    cells = [tuple(int(x) for x in c.split("x")) for c in args.cells.split(",")]
    results: dict[tuple[int, int, str], list[dict[str, Any]]] = {}
    async with AsyncExitStack() as stack:
        servers: dict[str, tuple[env.Server, str]] = {}
        for name, tree in trees.items():
            dsn = await stack.enter_async_context(env.bench_database(args.admin_dsn))
            wd = Path(stack.enter_context(env.workdir()))
            os.environ["PYTHONPATH"] = str(tree / "src")
            token = env.prepare_database(dsn, wd)
            server = await stack.enter_async_context(env.tracker_server(dsn, token, wd, name=name))
            servers[name] = (server, dsn)
        os.environ.pop("PYTHONPATH", None)
        for b, w in cells:
            jobs = max(args.min_jobs, min(args.max_jobs, b * w * args.cycles))
            spec = scenario.Spec(batch=b, workers=w, jobs=jobs)
            for rep in range(args.repeat):
                order = ("A", "B") if rep % 2 == 0 else ("B", "A")
                for name in order:
                    server, dsn = servers[name]
                    r = await _one(server, dsn, spec, args.admin_dsn)
                    results.setdefault((b, w, name), []).append(r)
                    print(f"B={b} W={w} {name}: " + json.dumps(
                        {k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items()}
                    ), file=sys.stderr, flush=True)
    print("| B | W | A jobs/s | B jobs/s | ratio | A/B tracker µs/req | A/B PG µs/req | "
          "A/B claim p50/p99 ms | A/B complete p50/p99 ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def med(rs: list[dict[str, Any]], k: str) -> float:
        vals = [r[k] for r in rs if r[k] is not None]
        return statistics.median(vals) if vals else float("nan")

    for b, w in cells:
        a, c = results[(b, w, "A")], results[(b, w, "B")]
        print(
            f"| {b} | {w} | {med(a, 'jobs_per_s'):,.0f} | {med(c, 'jobs_per_s'):,.0f} | "
            f"{med(c, 'jobs_per_s') / med(a, 'jobs_per_s'):.2f} | "
            f"{med(a, 'tracker_us_req'):.0f} / {med(c, 'tracker_us_req'):.0f} | "
            f"{med(a, 'pg_us_req'):.0f} / {med(c, 'pg_us_req'):.0f} | "
            f"{med(a, 'claim_p50'):.1f}/{med(a, 'claim_p99'):.1f} vs "
            f"{med(c, 'claim_p50'):.1f}/{med(c, 'claim_p99'):.1f} | "
            f"{med(a, 'complete_p50'):.1f}/{med(a, 'complete_p99'):.1f} vs "
            f"{med(c, 'complete_p50'):.1f}/{med(c, 'complete_p99'):.1f} |"
        )
    print(f"load average at end: {env.load_average()}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--base", required=True, help="source tree A (has src/)")
    p.add_argument("--cand", default=str(env.REPO_ROOT), help="source tree B (default: this one)")
    p.add_argument("--cells", default="1x1,1x4,1x16,4x4,4x64", help="BxW,…")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--admin-dsn", default=env.ADMIN_DSN, help="server to create databases on")
    p.add_argument("--cycles", type=int, default=150)
    p.add_argument("--min-jobs", type=int, default=1000)
    p.add_argument("--max-jobs", type=int, default=20000)
    asyncio.run(main(p.parse_args()))
