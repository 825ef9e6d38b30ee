"""``uv run python -m benchmarks.asgi_servers``: uvicorn vs granian serving the same tracker app.

Needs granian in the venv (``uv pip install granian``; not a project dependency). Every server
runs ``benchmarks.asgi_app:app`` in one worker process against its own fresh ``asgi_bench_*``
database on the system PostgreSQL (dropped afterwards). All servers run at once and are
measured interleaved, one point at a time (A, B, … then … B, A in the next repetition), so
load from other users of the machine hits them alike. Points: worker drains (``scenario.run``)
at B x W, sized from a warm-up so each lasts about ``--seconds``, ``--repeat`` times, medians;
and a tiny-request test (``GET /api/v1/whoami``, 16 connections, ``--seconds``).
Server CPU is the whole process tree (granian runs its worker in a child process).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from benchmarks import env
from benchmarks.loadgen import scenario
from benchmarks.loadgen.admin import Target
from benchmarks.loadgen.stats import Latencies, percentile, process_cpu_seconds

APP = "benchmarks.asgi_app:app"
BIN = Path(sys.executable).parent
COMMON_UVICORN = [
    "--http",
    "httptools",
    "--loop",
    "uvloop",
    "--no-access-log",
    "--lifespan",
    "on",
    "--no-server-header",
    "--timeout-keep-alive",
    "60",
    "--log-level",
    "warning",
]
COMMON_GRANIAN = [
    "--interface",
    "asgi",
    "--workers",
    "1",
    "--http",
    "1",
    "--no-ws",
    "--log-level",
    "warning",
]
SERVERS: dict[str, list[str]] = {
    "uvicorn": [sys.executable, "-m", "uvicorn", APP, *COMMON_UVICORN],
    "granian": [str(BIN / "granian"), *COMMON_GRANIAN, "--loop", "uvloop", APP],
    "granian-asyncio": [str(BIN / "granian"), *COMMON_GRANIAN, "--loop", "asyncio", APP],
    "granian-rt2": [
        str(BIN / "granian"),
        *COMMON_GRANIAN,
        "--loop",
        "uvloop",
        "--runtime-threads",
        "2",
        APP,
    ],
    "granian-st": [
        str(BIN / "granian"),
        *COMMON_GRANIAN,
        "--loop",
        "uvloop",
        "--runtime-mode",
        "st",
        APP,
    ],
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def tree_cpu_seconds(pid: int) -> float:
    """utime+stime of ``pid`` and all its descendants (still alive)."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += process_cpu_seconds(p) or 0.0
        todo += _children(p)
    return total


@dataclass
class Running:
    name: str
    process: subprocess.Popen[bytes]
    target: Target
    dsn: str


@asynccontextmanager
async def database(name: str) -> AsyncIterator[str]:
    conn = await asyncpg.connect(env.ADMIN_DSN)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    try:
        yield env.with_database(env.ADMIN_DSN, name)
    finally:
        conn = await asyncpg.connect(env.ADMIN_DSN)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


async def _healthy(port: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            line = await reader.readline()
            writer.close()
            if b" 200 " in line:
                return
        except OSError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("server did not become healthy")


@asynccontextmanager
async def server(name: str, dsn: str, token: str, work: Path) -> AsyncIterator[Running]:
    port = env.free_port()
    cmd = [*SERVERS[name], "--host", "127.0.0.1", "--port", str(port)]
    with open(work / f"{name}.log", "wb") as out:
        process = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=env.REPO_ROOT,
            env={**os.environ, "HQ_DATABASE_URL": dsn},
        )
    try:
        await _healthy(port, process)
        yield Running(name, process, Target("127.0.0.1", port, token), dsn)
    finally:
        if process.poll() is None:
            process.send_signal(2)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.returncode not in (0, -2, 130):
            log(f"{name} exited {process.returncode}: {(work / f'{name}.log').read_text()[-500:]}")


async def drain(srv: Running, spec: scenario.Spec) -> dict[str, Any]:
    """One drain; ANALYZE after the enqueue so every server's database has fresh statistics
    (the claim plan under stale ones varies by run, not by server)."""
    marks: list[float] = []

    async def around(starting: bool) -> None:
        if starting:
            conn = await asyncpg.connect(srv.dsn)
            try:
                await conn.execute("ANALYZE tracker_jobs")
            finally:
                await conn.close()
        marks.append(tree_cpu_seconds(srv.process.pid))

    r = await scenario.run(srv.target, spec, around_drain=around)
    if not r["ok"]:
        raise AssertionError(f"{srv.name} {spec.name}: {r['problems']}")
    r["server_cpu_s"] = marks[1] - marks[0]
    return r


async def whoami(srv: Running, concurrency: int, seconds: float) -> dict[str, Any]:
    lat = Latencies()
    deadline = time.perf_counter() + seconds

    async def one() -> None:
        conn = srv.target.connection(worker=True)
        try:
            while time.perf_counter() < deadline:
                t0 = time.perf_counter()
                status, _, _ = await conn.request("GET", "/api/v1/whoami")
                lat.add("whoami" if status == 200 else f"whoami_{status}", time.perf_counter() - t0)
        finally:
            await conn.close()

    cpu0, t0 = tree_cpu_seconds(srv.process.pid), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(concurrency)))
    wall, cpu = time.perf_counter() - t0, tree_cpu_seconds(srv.process.pid) - cpu0
    ok = sorted(lat.samples.get("whoami", []))
    if len(ok) != lat.requests:
        raise AssertionError(f"{srv.name} whoami: non-200 answers {lat.summary_ms()}")
    return {
        "requests_per_s": len(ok) / wall,
        "p50_ms": percentile(ok, 50) * 1000,
        "p99_ms": percentile(ok, 99) * 1000,
        "server_cpu_us_per_request": 1e6 * cpu / len(ok),
    }


def _summary(runs: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Median of each figure over the repetitions, plus the raw values of ``key``."""
    out: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    out["runs"] = [round(r[key], 1) for r in runs]
    return out


def _drain_figures(r: dict[str, Any]) -> dict[str, float]:
    lat = r["latency_ms"]
    return {
        "jobs": r["jobs"],
        "jobs_per_s": r["jobs_per_s"],
        "server_cpu_us_per_request": 1e6 * r["server_cpu_s"] / r["requests"],
        "claim_p50_ms": lat["claim"]["p50"],
        "claim_p99_ms": lat["claim"]["p99"],
        "complete_p50_ms": lat["complete"]["p50"],
        "complete_p99_ms": lat["complete"]["p99"],
    }


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    stamp = f"{int(time.time())}"
    results: dict[str, Any] = {
        "command": " ".join(["uv run python -m benchmarks.asgi_servers", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "servers": {
            n: " ".join(Path(a).name if i == 0 else a for i, a in enumerate(SERVERS[n]))
            for n in args.servers
        },
        "load": [os.getloadavg()],
        "drain": {},
        "whoami": {},
    }
    with env.workdir() as tmp:
        work = Path(tmp)
        async with AsyncExitStack() as stack:
            running: list[Running] = []
            for name in args.servers:
                dsn = await stack.enter_async_context(
                    database(f"asgi_bench_{stamp}_{name.replace('-', '_')}")
                )
                (work / name).mkdir()
                token = env.prepare_database(dsn, work / name)
                running.append(await stack.enter_async_context(server(name, dsn, token, work)))
                log(f"{name} pid {running[-1].process.pid} port {running[-1].target.port}")
            results["machine"] = await env.machine_facts(env.ADMIN_DSN)
            for batch in args.batches:
                for workers in args.workers:
                    key = f"b{batch}-w{workers}"
                    rates = []
                    for srv in running:  # warm-up, sizes the measured runs
                        r = await drain(srv, scenario.Spec(batch, workers, args.warmup_jobs))
                        rates.append(r["jobs_per_s"])
                    jobs = int(min(args.max_jobs, max(rates) * args.seconds) // batch * batch)
                    runs: dict[str, list[dict[str, Any]]] = {s.name: [] for s in running}
                    for rep in range(args.repeat):
                        for srv in running if rep % 2 == 0 else running[::-1]:
                            r = await drain(srv, scenario.Spec(batch, workers, jobs))
                            runs[srv.name].append(_drain_figures(r))
                            log(
                                f"{key} {srv.name}: {r['jobs_per_s']:.0f} jobs/s "
                                f"({r['wall_s']:.1f} s), load {os.getloadavg()[0]:.2f}"
                            )
                    results["drain"][key] = {
                        "batch": batch,
                        "workers": workers,
                        **{n: _summary(v, "jobs_per_s") for n, v in runs.items()},
                    }
                    results["load"].append(os.getloadavg())
            wruns: dict[str, list[dict[str, Any]]] = {s.name: [] for s in running}
            for rep in range(args.repeat):
                for srv in running if rep % 2 == 0 else running[::-1]:
                    r = await whoami(srv, args.concurrency, args.seconds)
                    wruns[srv.name].append(r)
                    log(
                        f"whoami {srv.name}: {r['requests_per_s']:.0f} req/s "
                        f"p50 {r['p50_ms']:.2f} p99 {r['p99_ms']:.2f} ms"
                    )
            results["whoami"] = {n: _summary(v, "requests_per_s") for n, v in wruns.items()}
            results["load"].append(os.getloadavg())
    results["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return results


def _pct(a: float, b: float) -> str:
    return f"{100 * (b - a) / a:+.0f}%"


def table(results: dict[str, Any]) -> str:
    """Markdown: one row per point, the first server is the baseline of the ± columns."""
    names = list(results["servers"])
    base = names[0]
    head = (
        ["B", "W", "jobs"]
        + [f"{n} jobs/s" for n in names]
        + [f"{n} vs {base}" for n in names[1:]]
        + [f"{n} CPU µs/req" for n in names]
        + [f"{n} claim p50/p99 ms" for n in names]
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for point in results["drain"].values():
        cells = [str(point["batch"]), str(point["workers"]), f"{point[base]['jobs']:,.0f}"]
        cells += [
            f"{point[n]['jobs_per_s']:,.0f} ({'/'.join(f'{x:.0f}' for x in point[n]['runs'])})"
            for n in names
        ]
        cells += [_pct(point[base]["jobs_per_s"], point[n]["jobs_per_s"]) for n in names[1:]]
        cells += [f"{point[n]['server_cpu_us_per_request']:.0f}" for n in names]
        cells += [f"{point[n]['claim_p50_ms']:.1f}/{point[n]['claim_p99_ms']:.1f}" for n in names]
        lines.append("| " + " | ".join(cells) + " |")
    w = results["whoami"]
    lines += [
        "",
        "| whoami, 16 connections | req/s (runs) | vs "
        + base
        + " | p50 ms | p99 ms | server CPU µs/req |",
        "|:---|---:|---:|---:|---:|---:|",
    ]
    for n in names:
        lines.append(
            f"| {n} | {w[n]['requests_per_s']:,.0f} "
            f"({'/'.join(f'{x:.0f}' for x in w[n]['runs'])}) | "
            f"{_pct(w[base]['requests_per_s'], w[n]['requests_per_s'])} | {w[n]['p50_ms']:.2f} | "
            f"{w[n]['p99_ms']:.2f} | {w[n]['server_cpu_us_per_request']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.asgi_servers", description=__doc__)
    p.add_argument("--servers", nargs="+", default=["uvicorn", "granian"], choices=list(SERVERS))
    p.add_argument("--batches", type=int, nargs="+", default=[16, 64])
    p.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0, help="target length of each run")
    p.add_argument("--warmup-jobs", type=int, default=3000)
    p.add_argument("--max-jobs", type=int, default=100_000)
    p.add_argument("--concurrency", type=int, default=16, help="whoami connections")
    p.add_argument(
        "--json", type=Path, default=env.REPO_ROOT / "benchmarks" / "results" / "asgi_servers.json"
    )
    p.add_argument("--from-json", type=Path, help="only print the table of saved results")
    args = p.parse_args(argv)
    if args.from_json:
        results = json.loads(args.from_json.read_text())
    else:
        results = asyncio.run(measure(args))
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))
        log(f"raw results in {args.json}")
    print(table(results))
    print(
        "load average (1/5/15 min) during the run: "
        + "; ".join(" ".join(f"{x:.2f}" for x in la) for la in results["load"])
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
