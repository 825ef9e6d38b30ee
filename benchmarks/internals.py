"""``uv run python -m benchmarks.internals [--quick]``: the whole benchmark set, on demand.

Creates a fresh ``bench_*`` database on the system PostgreSQL, migrates it, bootstraps an
admin+worker user from a 0600 token file, starts ``tracker serve`` as a subprocess, runs the
HTTP scenarios, the raw-SQL ceiling, the scale runs and a profile, writes
``docs/performance-internals.md`` (+ ``.png``) and drops the database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import ceiling, env, plans, profile, scale
from benchmarks import internals_report as report
from benchmarks.loadgen import scenario

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Plan:
    batches: tuple[int, ...]
    workers: tuple[int, ...]
    cycles: int
    min_jobs: int
    max_jobs: int
    qps: float
    scale_rows: tuple[int, ...]
    scale_cycles: int
    expired: int
    enqueue_jobs: int
    profile_jobs: int

    def jobs(self, batch: int, workers: int) -> int:
        return max(self.min_jobs, min(self.max_jobs, batch * workers * self.cycles))


QUICK = Plan(
    (16, 64, 256), (1, 4), 60, 2000, 20000, 2000.0, (0, 1_000_000), 100, 100_000, 20000, 20000
)
SMOKE = Plan((16, 64), (1, 2), 5, 200, 1000, 500.0, (0, 10_000), 10, 2000, 2000, 1000)
FULL = Plan(
    (1, 16, 64, 256),
    (1, 4, 16),
    150,
    2000,
    60000,
    2000.0,
    (0, 1_000_000, 10_000_000),
    200,
    100_000,
    50000,
    40000,
)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _brief(r: dict[str, Any]) -> str:
    return f"{r['name']}: {r['jobs_per_s']:.0f} jobs/s ok={r['ok']}"


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median jobs/s, annotated with every run's jobs/s."""
    ordered = sorted(runs, key=lambda r: r["jobs_per_s"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["runs_jobs_per_s"] = [r["jobs_per_s"] for r in runs]
    chosen["ok"] = all(r["ok"] for r in runs)
    return chosen


async def _throughput(
    server: env.Server, dsn: str, plan: Plan, levels: list[str], repeat: int
) -> list[dict[str, Any]]:
    """Each (B, W) point: ceiling level(s) and HTTP back to back, ``repeat`` times, median."""
    out = []
    for batch in plan.batches:
        for workers in plan.workers:
            spec = scenario.Spec(batch, workers, plan.jobs(batch, workers))
            runs: dict[str, list[dict[str, Any]]] = {}
            for _ in range(repeat):
                for level in levels:
                    r = await ceiling.run(server.target, dsn, spec, level=level)
                    runs.setdefault(level, []).append(r)
                    log(_brief(r))
                r = await scenario.run(server.target, spec)
                r["level"] = "http"
                runs.setdefault("http", []).append(r)
                log(_brief(r))
            out += [_median(v) for v in runs.values()]
    return out


async def _variants(server: env.Server, plan: Plan) -> list[dict[str, Any]]:
    out = []
    for workers in plan.workers:
        spec = scenario.Spec(
            64, workers, max(plan.min_jobs, int(plan.qps * 3)), dispatch_qps=plan.qps
        )
        out.append(await scenario.run(server.target, spec))
        log(_brief(out[-1]))
    mixed = scenario.Spec(
        64,
        max(plan.workers),
        plan.jobs(64, max(plan.workers)),
        fail_rate=0.1,
        extend_rate=0.25,
        label="mixed",
    )
    out.append(await scenario.run(server.target, mixed))
    log(_brief(out[-1]))
    return out


async def _step(results: dict[str, Any], name: str, work: Any) -> Any:
    """Run one part; a failure is logged and recorded, and the rest of the set still runs."""
    t0 = time.perf_counter()
    try:
        value = await work
    except Exception as exc:  # reported in the results and the document
        log(f"{name} FAILED: {type(exc).__name__}: {exc}")
        results.setdefault("errors", {})[name] = f"{type(exc).__name__}: {exc}"
        return None
    log(f"{name} done in {time.perf_counter() - t0:.0f} s")
    return value


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    plan = SMOKE if args.smoke else QUICK if args.quick else FULL
    if args.rows is not None:
        plan = Plan(**{**plan.__dict__, "scale_rows": tuple(args.rows)})
    results: dict[str, Any] = {
        "quick": args.quick,
        "command": " ".join(["uv run python -m benchmarks.internals", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    levels = ["sql"] + ([] if args.no_store else ["store"])
    with env.workdir() as tmp:
        work = Path(tmp)
        async with env.bench_database(args.admin_dsn) as dsn:
            results["machine"] = await env.machine_facts(dsn)
            log(f"database {dsn.rsplit('/', 1)[-1]}; {results['machine']}")
            token = env.prepare_database(dsn, work)
            async with env.tracker_server(dsn, token, work) as server:
                log(f"tracker serve pid {server.process.pid} on port {server.target.port}")
                if not args.skip_scale:  # first: it needs a table without other dead rows
                    results["plans"] = await _step(
                        results, "plans", plans.stale_statistics(server.target, dsn)
                    )
                results["throughput"] = await _throughput(
                    server, dsn, plan, levels, args.repeat or (3 if args.quick else 1)
                )
                results["variants"] = await _step(results, "variants", _variants(server, plan))
                # before the scale runs, which leave millions of rows behind
                if not args.skip_profile:
                    experiments = await _step(
                        results,
                        "experiments",
                        profile.pool_reset_experiment(server, dsn, token, work, plan.jobs, log),
                    )
                    results["profile"] = await _step(
                        results, "profile", profile.run(dsn, token, work, plan.profile_jobs, log)
                    )
                    if results["profile"]:
                        results["profile"]["experiments"] = experiments
                if not args.skip_scale:
                    results["enqueue"] = await _step(
                        results,
                        "enqueue",
                        scale.enqueue_throughput(server.target, plan.enqueue_jobs),
                    )
                    results["scale"] = await _step(
                        results,
                        "scale",
                        scale.finished_rows(
                            server.target,
                            dsn,
                            list(plan.scale_rows),
                            cycles=plan.scale_cycles,
                            log=log,
                        ),
                    )
                    results["expired"] = await _step(
                        results,
                        "expired",
                        scale.expired_backlog(
                            server.target, dsn, expired=plan.expired, cycles=plan.scale_cycles
                        ),
                    )
    results["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results.setdefault("machine", {})["load_at_end"] = env.load_average()
    return results


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt  # SIGTERM: unwind so the server stops and the database is dropped


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    parser = argparse.ArgumentParser(prog="python -m benchmarks.internals", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="B in {16,64,256} x W in {1,4}; 0 and 1M finished rows"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny sizes: checks that the harness works, figures mean nothing",
    )
    parser.add_argument(
        "--rows",
        type=lambda s: [int(float(x)) for x in s.split(",")],
        help="finished-row counts for the scale run, e.g. 0,1e6,1e7",
    )
    parser.add_argument(
        "--admin-dsn",
        default=env.ADMIN_DSN,
        help="server where bench_* databases are created and dropped",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=0,
        help="runs per throughput point, median reported (default: 3 quick, 1 full)",
    )
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--skip-profile", action="store_true")
    parser.add_argument(
        "--no-store",
        action="store_true",
        help="skip the in-process adapter level (only HTTP and raw SQL)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=ROOT / "benchmarks" / "results" / "internals.json",
        help="where the raw results go",
    )
    parser.add_argument(
        "--from-json", type=Path, help="do not measure: rewrite the report from saved results"
    )
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "performance-internals.md")
    args = parser.parse_args(argv)
    if args.from_json:
        results = json.loads(args.from_json.read_text())
    else:
        results = asyncio.run(main_async(args))
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))
        log(f"raw results in {args.json}")
    report.write(results, args.doc)
    log(f"wrote {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
