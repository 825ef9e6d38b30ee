"""Profile the hot path: the server under cProfile while W=4 workers drain B=64 batches.

Reports where the server's Python time goes (by package), the top functions, and how many SQL
round trips each claim+complete cycle costs (named statements, BEGIN/COMMIT, pool resets).
"""

from __future__ import annotations

import asyncio
import json
import pstats
import signal
import sys
from pathlib import Path
from typing import Any

from benchmarks import env
from benchmarks.loadgen import scenario

# (category, substring of the file name or of a C function's description)
CATEGORIES = (
    ("benchmark probe (statement counter)", "/benchmarks/"),
    ("asyncpg (driver)", "asyncpg"),
    ("litestar (framework)", "litestar"),
    ("msgspec (JSON)", "msgspec"),
    ("stdlib json", "/json/"),
    ("uvicorn/httptools (HTTP)", "uvicorn"),
    ("uvicorn/httptools (HTTP)", "httptools"),
    ("logging", "/logging/"),
    ("hq_apps (routes, auth, wire)", "hq_apps"),
    ("hq_adapters (postgres store)", "hq_adapters"),
    ("hq_domain (rules, validation)", "hq_domain"),
    ("asyncio/uvloop", "asyncio"),
    ("asyncio/uvloop", "uvloop"),
)


def category(filename: str, function: str) -> str:
    where = filename if filename != "~" else function
    for name, needle in CATEGORIES:
        if needle in where:
            return name
    return "other (builtins, stdlib)"


def summarise(stats_path: str, top: int = 20) -> dict[str, Any]:
    st = pstats.Stats(stats_path)
    by_cat: dict[str, float] = {}
    rows = []
    total = 0.0
    for (filename, line, function), (_cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        total += tt
        cat = category(filename, function)
        by_cat[cat] = by_cat.get(cat, 0.0) + tt
        short = filename.split("site-packages/")[-1].split("/src/")[-1]
        rows.append(
            {
                "function": f"{short}:{line}({function})" if filename != "~" else function,
                "calls": nc,
                "tottime_s": tt,
                "cumtime_s": ct,
            }
        )
    rows = [r for r in rows if "benchmarks/" not in r["function"]]
    rows.sort(key=lambda r: r["tottime_s"], reverse=True)
    return {
        "total_s": total,
        "categories": dict(sorted(by_cat.items(), key=lambda kv: -kv[1])),
        "top": rows[:top],
    }


async def run(dsn: str, token: str, work: Path, jobs: int, log: Any) -> dict[str, Any]:
    out = work / "server.prof"
    command = [sys.executable, "-m", "benchmarks.profile_server", "--out", str(out), "--count-sql"]
    spec = scenario.Spec(64, 4, jobs, label="profile")
    async with env.tracker_server(dsn, token, work, command, name="profile") as server:
        # warm-up outside the profile (first-request imports, prepared statements)
        await scenario.run(server.target, scenario.Spec(64, 4, 2000, label="warmup"))

        async def toggle(start: bool) -> None:
            server.process.send_signal(signal.SIGUSR1 if start else signal.SIGUSR2)
            await asyncio.sleep(0.2)

        result = await scenario.run(server.target, spec, around_drain=toggle)
        for _ in range(100):
            if Path(str(out) + ".sql.json").exists():
                break
            await asyncio.sleep(0.1)
    statements = json.loads(Path(str(out) + ".sql.json").read_text())
    lat = result["latency_ms"]
    claims = sum(v["n"] for k, v in lat.items() if k.startswith("claim"))
    completes = lat.get("complete", {}).get("n", 0)
    summary = summarise(str(out))
    log(
        f"profile: {result['jobs_per_s']:.0f} jobs/s under cProfile; "
        f"{sum(statements.values()) / max(1, claims + completes):.1f} statements/request"
    )
    return {
        "scenario": result,
        "statements": statements,
        "claims": claims,
        "completes": completes,
        **summary,
    }


EXPERIMENT_POINTS = ((16, 1), (64, 4), (256, 4))


async def pool_reset_experiment(
    baseline: env.Server, dsn: str, token: str, work: Path, jobs_for: Any, log: Any
) -> list[dict[str, Any]]:
    """The same drain against ``tracker serve`` and against the server whose pool skips the
    per-release reset query, alternating so both see the same machine load."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.profile_server",
        "--out",
        str(work / "unused.prof"),
        "--no-pool-reset",
    ]
    out = []
    async with env.tracker_server(dsn, token, work, command, name="noreset") as patched:
        for batch, workers in EXPERIMENT_POINTS:
            spec = scenario.Spec(batch, workers, jobs_for(batch, workers), label="exp")
            base = await scenario.run(baseline.target, spec)
            new = await scenario.run(patched.target, spec)
            out.append(
                {
                    "batch": batch,
                    "workers": workers,
                    "jobs": spec.jobs,
                    "baseline_jobs_per_s": base["jobs_per_s"],
                    "no_reset_jobs_per_s": new["jobs_per_s"],
                    "baseline_latency_ms": base["latency_ms"],
                    "no_reset_latency_ms": new["latency_ms"],
                    "ok": base["ok"] and new["ok"],
                }
            )
            log(
                f"pool-reset experiment B={batch} W={workers}: "
                f"{base['jobs_per_s']:.0f} → {new['jobs_per_s']:.0f} jobs/s"
            )
    return out
