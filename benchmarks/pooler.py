"""``uv run python -m benchmarks.pooler``: processes and the PgBouncer hop, measured interleaved.

Configurations (each its own fresh ``scale_bench_*`` database on the system PostgreSQL; one
server at a time, started for its run and stopped after it, so a shared PostgreSQL's
``max_connections`` only ever carries one configuration; runs interleave A, B, C, … C, B, A):

* ``p1`` / ``p2``: ``tracker serve --processes 1|2`` direct to PostgreSQL;
* ``pgb-p1`` / ``pgb-p2``: the same with ``HQ_DATABASE_POOLER=transaction`` through a PgBouncer
  (transaction mode, ``default_pool_size`` 20, the configuration of docs/operations.md);
* ``--base-command``: another tracker command direct (e.g. a checkout of main, for before/after);
* ``--reference BIN``: the reference ``tracker`` binary direct and through the same PgBouncer
  (it needs ``ignore_startup_parameters = extra_float_digits``, set on the shared PgBouncer).

Cells: claim(B) → complete with W workers (``benchmarks.loadgen.scenario``). Per run: jobs/s,
HTTP errors (a run stops at its first non-200 answer and is reported as failed), tracker CPU per
request (the server's whole process tree) and PostgreSQL CPU per request (the database's
backends, from /proc). Prints medians per configuration and cell; raw runs go to
``benchmarks/results/pooler-<time>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import psutil

from benchmarks import env
from benchmarks.loadgen import scenario
from benchmarks.loadgen.admin import Target
from benchmarks.loadgen.http import HttpError

RESULTS = Path(__file__).resolve().parent / "results"
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class Config:
    label: str
    command: list[str]
    processes: int = 1
    pooled: bool = False
    reference: bool = False


def _tree_cpu(pid: int) -> float:
    """User+system seconds of a process and its live descendants."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def _proc_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


async def _backend_cpu(admin: asyncpg.Connection, database: str) -> dict[int, float]:
    rows = await admin.fetch("SELECT pid FROM pg_stat_activity WHERE datname = $1", database)
    return {r["pid"]: _proc_cpu(r["pid"]) for r in rows}


def _create_db(admin_dsn: str) -> str:
    return f"scale_bench_{int(time.time())}_{secrets.token_hex(3)}"


def _prepare(command: list[str], dsn: str, workdir: Path, token: str) -> None:
    path = workdir / f"token-{secrets.token_hex(4)}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    for args in (["migrate"], ["bootstrap-user", "--user-id", env.BENCH_USER, "--roles",
                              "admin,worker", "--machine-token-file", str(path)]):  # fmt: skip
        done = subprocess.run([*command, *args, "--database-url", dsn], capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {done.stderr[-800:]}")


@asynccontextmanager
async def _server(cfg: Config, dsn: str, workdir: Path):  # type: ignore[no-untyped-def]
    port = env.free_port()
    cmd = [*cfg.command, "serve", "--database-url", dsn, "--listen", f"127.0.0.1:{port}"]
    extra = {"HQ_PROCESSES": str(cfg.processes)}
    if cfg.pooled and not cfg.reference:
        extra["HQ_DATABASE_POOLER"] = "transaction"
    log_path = workdir / f"{cfg.label}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, **extra}, cwd=env.REPO_ROOT)  # fmt: skip
    try:
        await env._wait_healthy("127.0.0.1", port, proc, timeout=60)
        deadline = time.monotonic() + 60
        while cfg.processes > 1 and b"tracker processes started" not in log_path.read_bytes():
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"{cfg.label}: the processes did not start")
            await asyncio.sleep(0.1)
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def _one(admin: asyncpg.Connection, cfg: Config, db: str, target: Target,
               spec: scenario.Spec) -> dict[str, Any]:  # fmt: skip
    pg0 = await _backend_cpu(admin, db)
    tr0 = _tree_cpu(target.server_pid or 0)
    t0 = time.perf_counter()
    error = None
    try:
        out = await scenario.run(target, spec)
    except HttpError as exc:
        out = {"ok": False, "requests": 0, "problems": [str(exc)]}
        error = str(exc)[:200]
    wall = time.perf_counter() - t0
    tr = _tree_cpu(target.server_pid or 0) - tr0
    pg1 = await _backend_cpu(admin, db)
    pg = sum(cpu - pg0.get(pid, 0.0) for pid, cpu in pg1.items())
    requests = out.get("requests") or 0
    return {
        "config": cfg.label, "batch": spec.batch, "workers": spec.workers, "jobs": spec.jobs,
        "ok": bool(out.get("ok")), "error": error, "problems": out.get("problems"),
        "jobs_per_s": out.get("jobs_per_s") if error is None else None,
        "requests": requests, "wall_s": wall,
        "tracker_cpu_ms_per_req": 1000 * tr / requests if requests else None,
        "pg_cpu_ms_per_req": 1000 * pg / requests if requests else None,
        "claim_p99_ms": (out.get("latency_ms") or {}).get("claim", {}).get("p99"),
    }  # fmt: skip


def _med(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


async def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--workers", default="16,64")
    ap.add_argument("--jobs-b1", type=int, default=1500)
    ap.add_argument("--jobs-b16", type=int, default=6000)
    ap.add_argument("--configs", default="p1,p2,pgb-p1,pgb-p2")
    ap.add_argument("--base-command", default="", help="another tracker command, label 'base'")
    ap.add_argument("--reference", default="", help="reference tracker binary")
    ap.add_argument("--pool-size", type=int, default=20)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(env.REPO_ROOT))
    from tests.support.pgbouncer import PgBouncer

    ours = env.tracker_command()
    known = {
        "p1": Config("p1", ours, 1), "p2": Config("p2", ours, 2),
        "pgb-p1": Config("pgb-p1", ours, 1, pooled=True),
        "pgb-p2": Config("pgb-p2", ours, 2, pooled=True),
    }  # fmt: skip
    configs = [known[c] for c in args.configs.split(",") if c]
    if args.base_command:
        configs.append(Config("base", args.base_command.split(), 1))
    if args.reference:
        configs += [Config("ref", [args.reference], reference=True),
                    Config("ref-pgb", [args.reference], pooled=True, reference=True)]  # fmt: skip
    admin_dsn = env.ADMIN_DSN
    bouncer = PgBouncer(admin_dsn, pool_size=args.pool_size,
                        ignore_startup_parameters="extra_float_digits").start()  # fmt: skip
    admin = await asyncpg.connect(admin_dsn)
    dbs: list[str] = []
    results: list[dict[str, Any]] = []
    started = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    try:
        with env.workdir() as tmp:
            workdir = Path(tmp)
            prepared = {}
            for cfg in configs:
                db = _create_db(admin_dsn)
                await admin.execute(f'CREATE DATABASE "{db}"')
                dbs.append(db)
                direct = env.with_database(admin_dsn, db)
                token = "hq_" + secrets.token_urlsafe(32)
                _prepare(cfg.command, direct, workdir, token)
                prepared[cfg.label] = (db, bouncer.url(db) if cfg.pooled else direct, token)
            cells = [(int(b), int(w)) for b in args.batches.split(",")
                     for w in args.workers.split(",")]  # fmt: skip
            for rnd in range(args.rounds):
                for b, w in cells:
                    jobs = args.jobs_b1 if b == 1 else args.jobs_b16
                    order = configs if rnd % 2 == 0 else list(reversed(configs))
                    for cfg in order:
                        db, url, token = prepared[cfg.label]
                        async with _server(cfg, url, workdir) as (proc, port):
                            target = Target("127.0.0.1", port, token, proc.pid)
                            spec = scenario.Spec(batch=b, workers=w, jobs=jobs)
                            r = await _one(admin, cfg, db, target, spec)
                        r["round"] = rnd
                        r["load"] = env.load_average()
                        results.append(r)
                        print(json.dumps(r), flush=True)
    finally:
        bouncer.stop()
        for db in dbs:
            await admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        await admin.close()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"pooler-{started}.json").write_text(json.dumps(results, indent=1))
    print("\nconfig  B  W  jobs/s(med)  errors  tracker_ms/req  pg_ms/req  claim_p99_ms")
    for cfg in configs:
        for b, w in sorted({(r["batch"], r["workers"]) for r in results}):
            rs = [r for r in results if r["config"] == cfg.label and (r["batch"], r["workers"]) == (b, w)]
            jps = _med([r["jobs_per_s"] for r in rs])
            errors = sum(1 for r in rs if not r["ok"])
            tr = _med([r["tracker_cpu_ms_per_req"] for r in rs])
            pg = _med([r["pg_cpu_ms_per_req"] for r in rs])
            p99 = _med([r["claim_p99_ms"] for r in rs])
            fmt = lambda v: "-" if v is None else f"{v:.3g}"  # noqa: E731
            print(f"{cfg.label:7} {b:2} {w:3} {fmt(jps):>10} {errors:>6}/{len(rs)} "
                  f"{fmt(tr):>10} {fmt(pg):>10} {fmt(p99):>10}")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
