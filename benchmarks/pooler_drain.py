"""``uv run python -m benchmarks.pooler_drain [--reference BIN]``: errors and throughput of a
drain direct vs through PgBouncer (transaction mode), ours and optionally the reference.

Unlike ``benchmarks.loadgen.scenario`` (which stops at the first non-200 answer), the workers
here count every answer by status and carry on (a failed claim or completion is retried later;
a job whose completion got a 5xx is claimed again after its lease expires), so the error count
of a tracker that fails behind the pooler is measured rather than cut short. One server at a
time; runs interleave configurations. httpx client (handles the reference's chunked bodies).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from benchmarks import env
from benchmarks.pooler import Config, _backend_cpu, _create_db, _prepare, _server, _tree_cpu

CLIENT_VERSION = "bench-1"
OUTCOME = {"kind": "success", "code": 200, "uri": None, "meta": None}


async def drain(base: str, token: str, jobs: int, batch: int, workers: int,
                lease_s: int = 5, timeout_s: float = 120) -> dict[str, Any]:  # fmt: skip
    """Create a project, enqueue ``jobs``, drain with ``workers`` claim(batch)→complete loops."""
    admin = {"Authorization": f"Bearer {token}"}
    worker = {**admin, "X-SavewebHQ-Client-Version": CLIENT_VERSION}
    project = f"pgb-{secrets.token_hex(4)}"
    statuses: Counter[int] = Counter()
    transport = 0
    done: set[int] = set()
    limits = httpx.Limits(max_connections=workers + 4, keepalive_expiry=20)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:

        async def admin_call(method: str, url: str, body: dict[str, Any]) -> None:
            """Retried on 5xx (counted): a tracker failing behind the pooler fails here too."""
            for _ in range(50):
                r = await client.request(method, url, headers=admin, json=body)
                statuses[r.status_code] += 1
                if r.status_code < 500:
                    break
                await asyncio.sleep(0.05)
            if r.status_code != 200:
                raise RuntimeError(f"{method} {url}: {r.status_code} {r.text[:300]}")

        await admin_call("PUT", f"/api/v1/admin/projects/{project}", {
            "status": "active", "identity_mode": "none", "max_resets": 1000,
            "client_versions": [CLIENT_VERSION]})  # fmt: skip
        for lo in range(0, jobs, 1000):
            vals = [{"value": f"https://example.org/{project}/{i}"}
                    for i in range(lo, min(jobs, lo + 1000))]  # fmt: skip
            await admin_call("POST", f"/api/v1/admin/projects/{project}/jobs", {"jobs": vals})
        path = f"/api/v1/projects/{project}/jobs/"
        deadline = time.monotonic() + timeout_s

        async def post(op: str, body: dict[str, Any]) -> dict[str, Any] | None:
            nonlocal transport
            try:
                r = await client.post(path + op, headers=worker, json=body)
            except httpx.TransportError:
                transport += 1
                return None
            statuses[r.status_code] += 1
            return r.json() if r.status_code == 200 else None

        async def loop(i: int) -> None:
            name = f"w{i}"
            while len(done) < jobs and time.monotonic() < deadline:
                out = await post("claim", {"worker_id": name, "max_jobs": batch,
                                           "lease_seconds": lease_s, "policy_version": 1})
                claimed = [] if out is None else out["jobs"]
                if not claimed:
                    await asyncio.sleep(0.05)
                    continue
                items = [{"job_id": j["job_id"], "attempt_id": j["attempt_id"],
                          "outcome": OUTCOME, "artifact_receipts": None} for j in claimed]
                out = await post("complete", {"worker_id": name, "items": items})
                for res in [] if out is None else out["results"]:
                    if res["status"] == "applied":
                        done.add(res["job_id"])

        t0 = time.perf_counter()
        await asyncio.gather(*(loop(i) for i in range(workers)))
        wall = time.perf_counter() - t0
        r = await client.get(f"/api/v1/admin/projects/{project}", headers=admin)
        counts = r.json().get("job_counts") if r.status_code == 200 else None
    requests = sum(statuses.values()) + transport
    return {
        "jobs_done": len(done), "wall_s": wall, "jobs_per_s": len(done) / wall,
        "requests": requests, "http_5xx": sum(n for s, n in statuses.items() if s >= 500),
        "non_200": sum(n for s, n in statuses.items() if s != 200), "transport_errors": transport,
        "statuses": dict(statuses), "counts": counts,
    }  # fmt: skip


async def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cells", default="16x8,1x16", help="BxW,…")
    ap.add_argument("--jobs", type=int, default=4000)
    ap.add_argument("--reference", default="")
    ap.add_argument("--pool-size", type=int, default=20)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(env.REPO_ROOT))
    from tests.support.pgbouncer import PgBouncer

    ours = env.tracker_command()
    configs = [Config("ours", ours), Config("ours-pgb", ours, pooled=True)]
    if args.reference:
        configs += [Config("ref", [args.reference], reference=True),
                    Config("ref-pgb", [args.reference], pooled=True, reference=True)]  # fmt: skip
    bouncer = PgBouncer(env.ADMIN_DSN, pool_size=args.pool_size,
                        ignore_startup_parameters="extra_float_digits").start()  # fmt: skip
    admin = await asyncpg.connect(env.ADMIN_DSN)
    dbs: list[str] = []
    results = []
    try:
        with env.workdir() as tmp:
            workdir = Path(tmp)
            prepared = {}
            for cfg in configs:
                db = _create_db(env.ADMIN_DSN)
                await admin.execute(f'CREATE DATABASE "{db}"')
                dbs.append(db)
                direct = env.with_database(env.ADMIN_DSN, db)
                token = "hq_" + secrets.token_urlsafe(32)
                _prepare(cfg.command, direct, workdir, token)
                prepared[cfg.label] = (db, bouncer.url(db) if cfg.pooled else direct, token)
            cells = [tuple(int(x) for x in c.split("x")) for c in args.cells.split(",")]
            for rnd in range(args.rounds):
                for b, w in cells:
                    for cfg in configs if rnd % 2 == 0 else list(reversed(configs)):
                        db, url, token = prepared[cfg.label]
                        async with _server(cfg, url, workdir) as (proc, port):
                            pg0 = await _backend_cpu(admin, db)
                            tr0 = _tree_cpu(proc.pid)
                            out = await drain(f"http://127.0.0.1:{port}", token, args.jobs, b, w)
                            tr = _tree_cpu(proc.pid) - tr0
                            pg1 = await _backend_cpu(admin, db)
                        pg = sum(c - pg0.get(pid, 0.0) for pid, c in pg1.items())
                        n = max(1, out["requests"])
                        r = {"config": cfg.label, "batch": b, "workers": w, "round": rnd, **out,
                             "tracker_cpu_ms_per_req": 1000 * tr / n,
                             "pg_cpu_ms_per_req": 1000 * pg / n, "load": env.load_average()}
                        results.append(r)
                        print(json.dumps(r), flush=True)
    finally:
        bouncer.stop()
        for db in dbs:
            await admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        await admin.close()
    print("\nconfig   B  W  jobs/s(med)  5xx(total)  non-200  requests  done/jobs")
    for cfg in configs:
        for b, w in sorted({(r["batch"], r["workers"]) for r in results}):
            rs = [r for r in results if r["config"] == cfg.label and (r["batch"], r["workers"]) == (b, w)]
            print(f"{cfg.label:8} {b:2} {w:3} {statistics.median(r['jobs_per_s'] for r in rs):10.0f} "
                  f"{sum(r['http_5xx'] for r in rs):10} {sum(r['non_200'] for r in rs):8} "
                  f"{sum(r['requests'] for r in rs):9} "
                  f"{sum(r['jobs_done'] for r in rs)}/{args.jobs * len(rs)}")  # fmt: skip
    out_dir = Path(__file__).resolve().parent / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    (out_dir / f"pooler-drain-{stamp}.json").write_text(json.dumps(results, indent=1))
    os.sync()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
