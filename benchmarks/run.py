"""``uv run python -m benchmarks.run``: this tracker side by side with the reference.

With ``HQ_REF_BIN_DIR`` (a directory holding the reference's ``tracker``, ``source`` and
``hqctl``) every scenario runs ours and the reference interleaved — ours, ref, ours, ref … — each
run on its own fresh ``bench_*`` database of the same PostgreSQL server, dropped afterwards;
without it, ours only. Results go to a JSON file; ``python -m benchmarks.report`` renders
``docs/performance.md`` from it (this command does both unless ``--no-doc``).

Scenarios (``--scenarios``): ``claim`` (claim(B) → complete(all), B × W cells, time-boxed:
warm-up, then a fixed window of steady load), ``enqueue`` (admin route, 1,000 jobs per request,
one sender), ``pack`` (``source pack``), ``import`` (``tracker enqueue-source`` into an
external_id project, fresh and re-run) and ``hqctl`` (``hqctl enqueue-source`` over HTTP).
``--pgbouncer`` adds a PgBouncer (transaction mode) path next to the direct one for the
``claim`` and ``enqueue`` scenarios. ``HQ_REF_NOTE`` (free text: which commit, which toolchain)
is recorded with the results and printed where the document says what the reference is.
``HQ_OURS_PYTHON`` (a virtualenv's ``python`` with this project installed) runs our commands
on that interpreter instead of this one (``benchmarks/compare/impls.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from benchmarks import env
from benchmarks.compare import impls, imports, machine_speed, pgbouncer
from benchmarks.compare.cells import PROJECT, Timing, run_cell
from benchmarks.loadgen import admin

ROOT = Path(__file__).resolve().parent.parent
BUSY_RETRIES = 5
BUSY_WAIT_S = 20.0
SCENARIOS = ("claim", "enqueue", "pack", "import", "hqctl")
DIRECT = "direct"
POOLED = "pgbouncer"
PG_PIDS = "SELECT pid FROM pg_stat_activity WHERE datname = $1 OR backend_type = 'walwriter'"
PG_CPU = "backends+walwriter"
"""``plan.pg_cpu`` of a run whose PostgreSQL CPU includes the WAL writer (earlier runs: the
backends alone); benchmarks/report.py words its method from it."""


@dataclass(frozen=True)
class Plan:
    batches: tuple[int, ...]
    workers: tuple[int, ...]
    timing: Timing
    queue_jobs: int
    import_jobs: int
    repeat: int


FULL = Plan((1, 4, 16, 64, 256), (1, 4, 16, 64, 256), Timing(1.0, 3.0), 300_000, 500_000, 2)
QUICK = Plan((1, 16, 256), (1, 16, 256), Timing(1.0, 2.0), 60_000, 100_000, 2)
SMOKE = Plan((1, 16), (1, 4), Timing(0.5, 1.0), 5_000, 5_000, 2)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse_cells(text: str) -> set[tuple[int, int]]:
    """``"1x4,16x64"`` → {(1, 4), (16, 64)} (B x W)."""
    out = set()
    for part in text.split(","):
        b, _, w = part.strip().lower().partition("x")
        out.add((int(b), int(w)))
    return out


class Bench:
    """Templates, the pooler and the monitor connection shared by every run of one invocation."""

    def __init__(self, args: argparse.Namespace, plan: Plan, workdir: Path) -> None:
        self.args = args
        self.plan = plan
        self.workdir = workdir
        self.admin_dsn: str = args.admin_dsn
        self.templates: dict[tuple[str, str], tuple[str, str]] = {}  # (impl, kind) -> (db, token)
        self.bouncer: pgbouncer.Bouncer | None = None
        self.monitor: asyncpg.Connection | None = None
        self.runs: list[dict[str, Any]] = []
        self.failures: list[str] = []

    def dsn(self, db: str, mode: str = DIRECT) -> str:
        direct = env.with_database(self.admin_dsn, db)
        if mode == POOLED:
            assert self.bouncer is not None
            return self.bouncer.dsn(direct)
        return direct

    def pid_source(self, db: str) -> Callable[[], Awaitable[list[int]]]:
        """The PostgreSQL processes whose CPU a run is charged: the backends of its database
        and the WAL writer. The runs never overlap, so the WAL writer works for this run alone
        while it lasts, and it does the flushing that asynchronous commits leave to it
        (ours' claims since migration 0021): leaving it out would flatter them."""

        async def pids() -> list[int]:
            assert self.monitor is not None
            rows = await self.monitor.fetch(PG_PIDS, db)
            return [r["pid"] for r in rows]

        return pids

    async def template(self, impl: impls.Impl, kind: str) -> tuple[str, str]:
        """A migrated database with the bench user (``empty``) or also a project full of jobs
        enqueued through the implementation's own admin route (``queue``)."""
        key = (impl.name, kind)
        if key in self.templates:
            return self.templates[key]
        t0 = time.perf_counter()
        db = await impls.create_database(self.admin_dsn)
        self.templates[key] = (db, "")
        token, token_file = impls.write_token(self.workdir)
        dsn = self.dsn(db)
        await asyncio.to_thread(impls.bootstrap, impl, dsn, token_file)
        if kind == "queue":
            async with impls.serve(impl, dsn, token, self.workdir) as server:
                conn = server.target.connection()
                try:
                    await admin.put_project(conn, PROJECT)
                    await admin.enqueue(conn, PROJECT, self.plan.queue_jobs, batch=1000)
                finally:
                    await conn.close()
            conn = await impls.admin_connect(dsn)
            try:
                await conn.execute("VACUUM ANALYZE")
            finally:
                await conn.close()
        await impls.freeze_template(self.admin_dsn, db)
        self.templates[key] = (db, token)
        log(f"template {impl.name}/{kind} = {db} in {time.perf_counter() - t0:.1f} s")
        return self.templates[key]

    @asynccontextmanager
    async def fresh(self, impl: impls.Impl, kind: str) -> AsyncIterator[tuple[str, str]]:
        template, token = await self.template(impl, kind)
        db = await impls.create_database(self.admin_dsn, template)
        try:
            yield db, token
        finally:
            await impls.drop_database(self.admin_dsn, db)

    async def drop_templates(self) -> None:
        for db, _ in self.templates.values():
            await impls.drop_database(self.admin_dsn, db, template=True)

    def record(self, run: dict[str, Any]) -> None:
        self.runs.append(run)
        if run.get("error"):
            self.failures.append(f"{run['scenario']} {run['case']} {run['impl']}: {run['error']}")

    async def measured(
        self,
        scenario: str,
        case: str,
        impl: impls.Impl,
        mode: str,
        rep: int,
        work: Callable[[], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """Run one measurement (``work()``); a failure is recorded and the rest still runs.
        A run that failed only because the shared server had no free connection is retried."""
        base = {
            "scenario": scenario,
            "case": case,
            "impl": impl.name,
            "mode": mode,
            "rep": rep,
            "load_before": env.load_average(),
            "speed_probe_ms": round(machine_speed.speed_probe_ms(), 3),
            "started": time.strftime("%H:%M:%S", time.gmtime()),
        }
        ticks = machine_speed.cpu_ticks()
        retries = 0
        while True:
            try:
                out = await work()
            except Exception as exc:  # recorded in the results and the document
                out = {"error": f"{type(exc).__name__}: {str(exc)[-600:]}"}
                if "too many clients" in out["error"] and retries < BUSY_RETRIES:
                    retries += 1  # the shared server was full: not a result, try again later
                    log(f"{scenario} {case} {impl.name}/{mode}: server full, retry {retries}")
                    await asyncio.sleep(BUSY_WAIT_S)
                    continue
            break
        out["busy_retries"] = retries
        steal = machine_speed.steal_pct(ticks, machine_speed.cpu_ticks())
        run = {**base, **out, "load_after": env.load_average(), "steal_pct": steal}
        self.record(run)
        brief = (
            f"{run['jobs_per_s']:,.0f} jobs/s" if "jobs_per_s" in run else
            f"{run['wall_s']:.2f} s" if "wall_s" in run else run.get("error", "?")
        )  # fmt: skip
        errs = f" http_errors={run['http_errors']}" if run.get("http_errors") else ""
        log(f"{scenario} {case} {impl.name}/{mode} #{rep}: {brief}{errs}")
        return run


def modes_for(args: argparse.Namespace, cell: tuple[int, int] | None) -> list[str]:
    if not args.pgbouncer:
        return [DIRECT]
    if cell is not None and args.pgbouncer_cells and cell not in args.pgbouncer_cells:
        return [DIRECT]
    return [DIRECT, POOLED]


async def claim_scenario(bench: Bench, impl_list: list[impls.Impl]) -> None:
    plan, args = bench.plan, bench.args
    cells = [(b, w) for b in plan.batches for w in plan.workers]
    if args.cells:
        cells = sorted(args.cells)
    for batch, workers in cells:
        for rep in range(plan.repeat):
            for mode in modes_for(args, (batch, workers)):
                for impl in impl_list:
                    await bench.measured(
                        "claim", f"B={batch} W={workers}", impl, mode, rep,
                        lambda i=impl, m=mode, b=batch, w=workers: one_cell(bench, i, m, b, w),
                    )  # fmt: skip


async def one_cell(
    bench: Bench, impl: impls.Impl, mode: str, batch: int, workers: int
) -> dict[str, Any]:
    run_impl = impl.pooled() if mode == POOLED else impl
    pooler = bench.bouncer.process.pid if mode == POOLED and bench.bouncer else None
    async with AsyncExitStack() as stack:
        db, token = await stack.enter_async_context(bench.fresh(impl, "queue"))
        server = await stack.enter_async_context(
            impls.serve(run_impl, bench.dsn(db, mode), token, bench.workdir)
        )
        out = await run_cell(
            server.target, batch, workers, bench.plan.timing, bench.pid_source(db), pooler
        )
    out["queue_jobs"] = bench.plan.queue_jobs
    return out


async def enqueue_scenario(bench: Bench, impl_list: list[impls.Impl]) -> None:
    for rep in range(bench.plan.repeat):
        for mode in modes_for(bench.args, None):
            for impl in impl_list:

                async def work(impl: impls.Impl = impl, mode: str = mode) -> dict[str, Any]:
                    run_impl = impl.pooled() if mode == POOLED else impl
                    async with bench.fresh(impl, "empty") as (db, token):
                        dsn = bench.dsn(db, mode)
                        async with impls.serve(run_impl, dsn, token, bench.workdir) as server:
                            pooler = bench.bouncer.process.pid if mode == POOLED else None
                            return await imports.enqueue_route(
                                server.target, bench.plan.timing, bench.pid_source(db), pooler
                            )

                await bench.measured("enqueue", "1000/request", impl, mode, rep, work)


async def pack_scenario(bench: Bench, impl_list: list[impls.Impl], values: Path) -> None:
    n = bench.plan.import_jobs
    for rep in range(bench.plan.repeat):
        for impl in impl_list:
            out = bench.workdir / f"pack-{impl.name}.jsonl.zst"
            await bench.measured(
                "pack", f"{n:,} URLs", impl, DIRECT, rep,
                lambda i=impl, o=out: asyncio.to_thread(_pack_result, i, values, o, n),
            )  # fmt: skip


def _pack_result(impl: impls.Impl, values: Path, out: Path, n: int) -> dict[str, Any]:
    r = imports.pack(impl, values, out)
    return {**r, "jobs": n, "jobs_per_s": n / r["wall_s"]}


async def import_scenario(bench: Bench, impl_list: list[impls.Impl], packed: Path) -> None:
    """Fresh import then the same file again, on one fresh database per implementation and
    repeat; the re-run is measured only after a successful fresh import."""
    n = bench.plan.import_jobs
    for rep in range(bench.plan.repeat):
        for impl in impl_list:
            state: dict[str, Any] = {}

            async def fresh(impl: impls.Impl = impl, state: dict[str, Any] = state) -> dict:
                if "ctx" in state:  # a retry after the server was full
                    await state.pop("ctx").__aexit__(None, None, None)
                ctx = bench.fresh(impl, "empty")
                db, _token = await ctx.__aenter__()
                state["ctx"], state["db"] = ctx, db
                dsn = bench.dsn(db)
                await asyncio.to_thread(
                    impls.run_cli,
                    [*impl.tracker, "put-project", "--database-url", dsn,
                     "--project-id", "src", "--identity-mode", "external_id"],
                    impl,
                )  # fmt: skip
                state["cmd"] = [*impl.tracker, "enqueue-source", "--database-url", dsn,
                                "--project-id", "src", "--input", str(packed)]  # fmt: skip
                return await _with_rate(
                    imports.timed_with_pg(state["cmd"], impl, bench.pid_source(db)), n
                )

            async def rerun(impl: impls.Impl = impl, state: dict[str, Any] = state) -> dict:
                if "cmd" not in state:
                    raise RuntimeError("the fresh import did not run")
                return await _with_rate(
                    imports.timed_with_pg(state["cmd"], impl, bench.pid_source(state["db"])), n
                )

            try:
                first = await bench.measured("import", "fresh", impl, DIRECT, rep, fresh)
                if not first.get("error"):
                    await bench.measured("import", "re-run", impl, DIRECT, rep, rerun)
            finally:
                if "ctx" in state:
                    await state["ctx"].__aexit__(None, None, None)


async def hqctl_scenario(bench: Bench, impl_list: list[impls.Impl], packed: Path) -> None:
    n = bench.plan.import_jobs
    for rep in range(bench.plan.repeat):
        for impl in impl_list:

            async def work(impl: impls.Impl = impl) -> dict[str, Any]:
                async with bench.fresh(impl, "empty") as (db, token):
                    _, token_file = impls.write_token(bench.workdir)
                    token_file.write_text(token + "\n")
                    async with impls.serve(impl, bench.dsn(db), token, bench.workdir) as server:
                        conn = server.target.connection()
                        try:
                            await admin.put_project(conn, "src", identity_mode="external_id")
                            cmd = [*impl.hqctl, "enqueue-source", "--url", server.url,
                                   "--allow-http", "--project-id", "src", "--machine-token-file",
                                   str(token_file), "--input", str(packed)]  # fmt: skip
                            out = await imports.timed_with_pg(
                                cmd, impl, bench.pid_source(db), server.target.server_pid
                            )
                            counts = await admin.job_counts(conn, "src")
                        finally:
                            await conn.close()
                if counts.get("todo") != n:
                    raise AssertionError(f"after hqctl enqueue-source: {counts}")
                return {**out, "jobs": n, "jobs_per_s": n / out["wall_s"]}

            await bench.measured("hqctl", "enqueue-source", impl, DIRECT, rep, work)


async def _with_rate(work: Any, n: int) -> dict[str, Any]:
    out = await work
    return {**out, "jobs": n, "jobs_per_s": n / out["wall_s"]}


def git_head() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
    except OSError:
        return "unknown"


@contextmanager
def maybe_bouncer(bench: Bench) -> Iterator[None]:
    if not bench.args.pgbouncer:
        yield
        return
    with pgbouncer.running(bench.admin_dsn) as bouncer:
        bench.bouncer = bouncer
        log(f"pgbouncer on 127.0.0.1:{bouncer.port} (transaction mode, pool {pgbouncer.POOL_SIZE})")
        yield


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    plan = SMOKE if args.smoke else QUICK if args.quick else FULL
    if args.repeat:
        plan = Plan(**{**plan.__dict__, "repeat": args.repeat})
    if args.queue_jobs:
        plan = Plan(**{**plan.__dict__, "queue_jobs": args.queue_jobs})
    if args.import_jobs:
        plan = Plan(**{**plan.__dict__, "import_jobs": args.import_jobs})
    if args.measure or args.warmup:
        timing = Timing(args.warmup or plan.timing.warmup_s, args.measure or plan.timing.measure_s)
        plan = Plan(**{**plan.__dict__, "timing": timing})
    impl_list = [impls.ours(args.processes)]
    ref_dir = os.environ.get("HQ_REF_BIN_DIR")
    if ref_dir:
        impl_list.append(impls.reference(Path(ref_dir)))
    scenarios = args.scenarios or list(SCENARIOS)
    t_start = time.perf_counter()
    results: dict[str, Any] = {
        "command": " ".join(
            ([f"HQ_REF_BIN_DIR={ref_dir}"] if ref_dir else [])
            + (
                [f"{impls.OURS_PYTHON_ENV}={os.environ[impls.OURS_PYTHON_ENV]}"]
                if os.environ.get(impls.OURS_PYTHON_ENV)
                else []
            )
            + ["uv run python -m benchmarks.run", *sys.argv[1:]]
        ),
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "ours_commit": git_head(),
        "reference": {"bin_dir": ref_dir, "note": os.environ.get("HQ_REF_NOTE", "")}
        if ref_dir
        else None,
        "note": args.note,
        "plan": {
            "batches": plan.batches,
            "workers": plan.workers,
            "warmup_s": plan.timing.warmup_s,
            "measure_s": plan.timing.measure_s,
            "queue_jobs": plan.queue_jobs,
            "import_jobs": plan.import_jobs,
            "repeat": plan.repeat,
            "processes": args.processes,
            "scenarios": scenarios,
            "pgbouncer": bool(args.pgbouncer),
            "pgbouncer_pool_size": pgbouncer.POOL_SIZE if args.pgbouncer else None,
            "cells": sorted(args.cells) if args.cells else None,
            "pg_cpu": PG_CPU,
        },
        "implementations": [i.name for i in impl_list],
    }
    with env.workdir() as tmp:
        work = Path(tmp)
        bench = Bench(args, plan, work)
        results["machine"] = await env.machine_facts(args.admin_dsn)
        results["machine"]["ours_python"] = machine_speed.interpreter_facts(impls.ours_python())
        log(f"machine {results['machine']}")
        log(f"ours compiled to bytecode in {impls.compile_bytecode():.1f} s (as the image does)")
        async with AsyncExitStack() as stack:
            bench.monitor = await impls.admin_connect(args.admin_dsn)
            stack.push_async_callback(bench.monitor.close)
            stack.push_async_callback(bench.drop_templates)
            stack.enter_context(maybe_bouncer(bench))
            if "claim" in scenarios:
                await claim_scenario(bench, impl_list)
            if "enqueue" in scenarios:
                await enqueue_scenario(bench, impl_list)
            if {"pack", "import", "hqctl"} & set(scenarios):
                values = work / "values.txt"
                imports.write_values(values, plan.import_jobs)
                if "pack" in scenarios:
                    await pack_scenario(bench, impl_list, values)
                packed = work / "import.jsonl.zst"
                imports.pack(impl_list[0], values, packed)  # ours packs the file both import
                if "import" in scenarios:
                    await import_scenario(bench, impl_list, packed)
                if "hqctl" in scenarios:
                    await hqctl_scenario(bench, impl_list, packed)
        results["runs"] = bench.runs
        results["failures"] = bench.failures
    results["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results["duration_s"] = time.perf_counter() - t_start
    results["machine"]["load_at_end"] = env.load_average()
    return results


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt  # SIGTERM: unwind so servers stop and databases are dropped


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="B,W in {1,16,256}; 2 s windows")
    size.add_argument("--smoke", action="store_true", help="tiny sizes: proves the harness runs")
    p.add_argument("--scenarios", type=lambda s: s.split(","), help=f"subset of {SCENARIOS}")
    p.add_argument("--cells", type=parse_cells, help="claim cells as BxW list, e.g. 1x4,16x64")
    p.add_argument("--repeat", type=int, default=0, help="runs per implementation (median)")
    p.add_argument("--measure", type=float, default=0, help="seconds measured per cell")
    p.add_argument("--warmup", type=float, default=0, help="seconds of warm-up per cell")
    p.add_argument("--queue-jobs", type=int, default=0, help="jobs queued for the claim cells")
    p.add_argument("--import-jobs", type=int, default=0, help="URLs for pack/import/hqctl")
    p.add_argument("--processes", type=int, default=1, help="ours: tracker serve --processes N")
    p.add_argument("--pgbouncer", action="store_true", help="also run through PgBouncer")
    p.add_argument(
        "--pgbouncer-cells", type=parse_cells, help="claim cells to run pooled (default: all)"
    )
    p.add_argument("--admin-dsn", default=env.ADMIN_DSN, help="server for the bench_* databases")
    p.add_argument("--note", default="", help="free text recorded with the results")
    p.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "compare.json")
    p.add_argument("--doc", type=Path, default=ROOT / "docs" / "performance.md")
    p.add_argument("--no-doc", action="store_true", help="only write the JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    args = parser().parse_args(argv)
    unknown = set(args.scenarios or ()) - set(SCENARIOS)
    if unknown:
        raise SystemExit(f"unknown scenarios {sorted(unknown)}; choose from {SCENARIOS}")
    results = asyncio.run(main_async(args))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1))
    log(f"raw results in {args.json} ({results['duration_s'] / 60:.1f} min)")
    if not args.no_doc:
        from benchmarks import report

        report.write(results, args.doc, report.kept_runs(args.json))
        log(f"wrote {args.doc}")
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
