"""Operator commands: ``tracker monitor`` and ``tracker prune-claim-buckets``.

``monitor`` prints the operations runbook's minimum list from direct, read-only PostgreSQL
queries (``ops.sql``) plus, when given the tracker's JSON request log, the 429 rate, the
``retry_after_ms`` distribution and claim/mutation latency (:mod:`hq_apps.cli.ops_logs`).
Windows and definitions are documented in docs/operations.md ("Monitoring").
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import asyncpg
from cyclopts import Parameter

from hq_adapters.postgres.store import one_shot_options
from hq_apps.cli.ops_logs import read_log_stats
from hq_apps.cli.ops_render import JOB_STATUSES, render_text
from hq_domain.progress import RATE_WINDOW_S, HistoryPoint, progress
from hq_domain.projects import JobCounts

OVER_LIMIT_TOLERANCE = 1.10  # a worker is flagged above 110 % of worker_claim_qps …
OVER_LIMIT_SLACK_REQUESTS = 1  # … plus one request per minute for bucket-edge effects
PRUNE_STATEMENT_TIMEOUT_MS = 300_000

_DURATION_RE = re.compile(r"(\d+)([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_NAME_RE = re.compile(r"^-- name: (\S+)\s*$", re.MULTILINE)


def _load_queries() -> dict[str, str]:
    text = resources.files("hq_apps.cli").joinpath("ops.sql").read_text()
    parts = _NAME_RE.split(text)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts), 2)}


QUERIES = _load_queries()


def parse_duration(text: str) -> int:
    """Seconds in ``30d``, ``12h``, ``90m``, ``45s``, ``2w`` or a sequence such as ``1h30m``."""
    value = text.strip().lower()
    if not value or _DURATION_RE.sub("", value):
        raise ValueError(f"invalid duration {text!r}: use e.g. 30d, 12h, 90m, 45s or 1h30m")
    total = sum(int(n) * _UNIT_SECONDS[u] for n, u in _DURATION_RE.findall(value))
    if total <= 0:
        raise ValueError(f"invalid duration {text!r}: must be positive")
    return total


def _database_url(value: str | None) -> str:
    url = value or os.environ.get("HQ_DATABASE_URL", "")
    if not url:
        raise ValueError("a database URL is required (--database-url or HQ_DATABASE_URL)")
    return url


def _progress(points: list[HistoryPoint], counts: dict[str, int], now_s: int) -> dict[str, Any]:
    """Percent done, rate and ETA as the progress route and the dashboard compute them."""
    p = progress(points, JobCounts(**{s: counts.get(s, 0) for s in JOB_STATUSES}), now_s)
    return {
        "percent_done": None if p.percent_done is None else round(p.percent_done, 3),
        "rate_per_minute": None if p.rate_per_minute is None else round(p.rate_per_minute, 3),
        "eta_seconds": p.eta_seconds,
    }


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


async def collect(
    conn: asyncpg.Connection, now_s: int, window_s: int, bucket_window_s: int
) -> dict[str, Any]:
    """The database half of the monitoring report, as a JSON-ready dict."""
    since_s = now_s - window_s
    since_ms = (now_s - bucket_window_s) * 1000
    counts: dict[str, dict[str, int]] = {}
    for r in await conn.fetch(QUERIES["job_counts"]):
        counts.setdefault(r["project_id"], {})[r["status"]] = r["n"]
    oldest = {
        r["project_id"]: r["oldest_created_at"] for r in await conn.fetch(QUERIES["oldest_todo"])
    }
    expired = {r["project_id"]: r["n"] for r in await conn.fetch(QUERIES["expired_wip"], now_s)}
    finished = {r["project_id"]: r for r in await conn.fetch(QUERIES["finished_since"], since_s)}
    history: dict[str, list[HistoryPoint]] = {}
    for r in await conn.fetch(QUERIES["history_since"], now_s - RATE_WINDOW_S):
        history.setdefault(r["project_id"], []).append(HistoryPoint(r["minute_s"], JobCounts(
            r["todo"], r["wip"], r["done"], r["failed"], r["reset_exhausted"])))

    projects = []
    for p in await conn.fetch(QUERIES["projects"]):
        pid = p["id"]
        f = finished.get(pid)
        done, failed, exhausted, receipts = (
            (f["done"], f["failed"], f["reset_exhausted"], f["done_with_receipts"])
            if f
            else (0, 0, 0, 0)
        )
        total = done + failed + exhausted
        projects.append(
            {
                "project_id": pid,
                "status": p["status"],
                "policy_version": p["policy_version"],
                "dispatch_qps": p["dispatch_qps"],
                "worker_claim_qps": p["worker_claim_qps"],
                "job_counts": {s: counts.get(pid, {}).get(s, 0) for s in JOB_STATUSES},
                "oldest_todo_age_seconds": max(0, now_s - oldest[pid]) if pid in oldest else None,
                "expired_wip": expired.get(pid, 0),
                **_progress(history.get(pid, []), counts.get(pid, {}), now_s),
                "finished": {
                    "done": done,
                    "failed": failed,
                    "reset_exhausted": exhausted,
                    "permanent_failure_rate": _ratio(failed, total),
                    "reset_exhausted_rate": _ratio(exhausted, total),
                    "done_with_receipts": receipts,
                    "receipt_bearing_rate": _ratio(receipts, done),
                },
            }
        )
    workers = [_worker_row(r) for r in await conn.fetch(QUERIES["worker_buckets"], since_ms)]
    return {
        "generated_at": now_s,
        "window_seconds": window_s,
        "bucket_window_seconds": bucket_window_s,
        "projects": projects,
        "workers": workers,
    }


def _worker_row(r: asyncpg.Record) -> dict[str, Any]:
    qps = r["worker_claim_qps"]
    buckets, requests, peak = r["buckets"], int(r["claim_requests"]), int(r["peak_claim_requests"])
    over = qps is not None and peak > qps * 60 * OVER_LIMIT_TOLERANCE + OVER_LIMIT_SLACK_REQUESTS
    return {
        "project_id": r["project_id"],
        "worker_id": r["worker_id"],
        "policy_version": r["policy_version"],
        "current_policy_version": r["current_policy_version"],
        "worker_claim_qps": qps,
        "buckets": buckets,
        "claim_requests": requests,
        "jobs_dispatched": int(r["jobs_dispatched"]),
        "mean_claim_rps": round(requests / (60.0 * buckets), 4),
        "peak_claim_rps": round(peak / 60.0, 4),
        "last_bucket_started_at_ms": r["last_bucket_ms"],
        "stale_policy": r["policy_version"] != r["current_policy_version"],
        "over_limit": over,
    }


async def monitor_report(
    database_url: str, *, now_s: int, window_s: int, bucket_window_s: int, log_file: Path | None
) -> dict[str, Any]:
    conn = await asyncpg.connect(database_url, **one_shot_options())
    try:
        async with conn.transaction(readonly=True, isolation="repeatable_read"):
            report = await collect(conn, now_s, window_s, bucket_window_s)
    finally:
        await conn.close()
    report["requests"] = (
        read_log_stats(log_file, since_s=now_s - window_s) if log_file is not None else None
    )
    return report


async def prune_buckets(conn: asyncpg.Connection, cutoff_ms: int) -> int:
    """Delete bucket rows that started before ``cutoff_ms``, one project per transaction.

    The statement timeout is ``SET LOCAL`` inside each transaction (not a session setting), so
    this also runs through a transaction-mode pooler."""
    deleted = 0
    for r in await conn.fetch(QUERIES["project_ids"]):
        async with conn.transaction():
            await conn.execute(f"SET LOCAL statement_timeout = {PRUNE_STATEMENT_TIMEOUT_MS}")
            status = await conn.execute(QUERIES["prune_project_buckets"], r["id"], cutoff_ms)
        deleted += int(status.rsplit(" ", 1)[-1])
    return deleted


async def prune_report(database_url: str, *, now_s: int, older_than_s: int) -> dict[str, Any]:
    cutoff_ms = (now_s - older_than_s) * 1000
    conn = await asyncpg.connect(database_url, **one_shot_options())
    try:
        deleted = await prune_buckets(conn, cutoff_ms)
    finally:
        await conn.close()
    return {"deleted": deleted, "cutoff_ms": cutoff_ms}


# --- command functions (registered in hq_apps.cli.tracker) ---------------------------------


def monitor(
    *,
    database_url: str | None = None,
    json_output: Annotated[bool, Parameter(name="--json", negative="")] = False,
    log_file: Path | None = None,
    window: str = "1h",
    bucket_window: str = "15m",
) -> None:
    """Print job counts, queue age, expired leases, failure and receipt rates, per-worker
    claim rates and (with --log-file) 429 and latency figures. Read-only.

    Parameters
    ----------
    database_url
        PostgreSQL URL (default: $HQ_DATABASE_URL).
    json_output
        Print one JSON document instead of tables.
    log_file
        The tracker's JSON request log ("-" for stdin).
    window
        Window for failure/receipt rates and log figures (e.g. 1h, 24h).
    bucket_window
        Window of claim-bucket minutes for per-worker rates (e.g. 15m).
    """
    report = asyncio.run(
        monitor_report(
            _database_url(database_url),
            now_s=int(time.time()),
            window_s=parse_duration(window),
            bucket_window_s=parse_duration(bucket_window),
            log_file=log_file,
        )
    )
    if json_output:
        sys.stdout.write(json.dumps(report, sort_keys=True) + "\n")
    else:
        sys.stdout.write(render_text(report))


def prune_claim_buckets(*, older_than: str, database_url: str | None = None) -> None:
    """Delete worker claim-bucket rows older than a retention period and print the count.

    Parameters
    ----------
    older_than
        Retention, e.g. 30d or 12h: buckets that started before now minus this are deleted.
    database_url
        PostgreSQL URL (default: $HQ_DATABASE_URL).
    """
    result = asyncio.run(
        prune_report(
            _database_url(database_url),
            now_s=int(time.time()),
            older_than_s=parse_duration(older_than),
        )
    )
    sys.stdout.write(f"deleted {result['deleted']} claim bucket rows\n")
