"""Operator commands: ``tracker monitor`` and ``tracker prune-claim-buckets``.

``monitor`` prints the operations runbook's minimum list from one read-only snapshot of the
store (:meth:`hq_domain.ports.MonitorPort.monitor_snapshot`: the same job counts, queue health
and history as the dashboard and ``/metrics``) plus, when given the tracker's JSON request log,
the 429 rate, the ``retry_after_ms`` distribution and claim/mutation latency
(:mod:`hq_apps.cli.ops_logs`). Windows and definitions are documented in docs/operations.md
("Monitoring"). The database URL comes from the flag or ``HQ_DATABASE_URL`` (read by the CLI
framework, :data:`hq_apps.cli.common.DatabaseUrl`), never from here.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

from cyclopts import Parameter

from hq_apps.cli.common import CliError, DatabaseUrl
from hq_apps.cli.ops_logs import read_log_stats
from hq_apps.cli.ops_render import JOB_STATUSES, render_text
from hq_domain.clock import Clock, SystemClock, seconds
from hq_domain.monitoring import MonitorSnapshot, ProjectMonitor, WorkerClaimRate, oldest_todo_age
from hq_domain.ports import MaintenancePort, MonitorPort, Store
from hq_domain.progress import progress

T = TypeVar("T")

_DURATION_RE = re.compile(r"(\d+)([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> int:
    """Seconds in ``30d``, ``12h``, ``90m``, ``45s``, ``2w`` or a sequence such as ``1h30m``."""
    value = text.strip().lower()
    if not value or _DURATION_RE.sub("", value):
        raise ValueError(f"invalid duration {text!r}: use e.g. 30d, 12h, 90m, 45s or 1h30m")
    total = sum(int(n) * _UNIT_SECONDS[u] for n, u in _DURATION_RE.findall(value))
    if total <= 0:
        raise ValueError(f"invalid duration {text!r}: must be positive")
    return total


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def project_row(p: ProjectMonitor, now_s: int) -> dict[str, Any]:
    """One project of the report; percent, rate and ETA as the progress route and the
    dashboard compute them (:func:`hq_domain.progress.progress`)."""
    project, counts, f = p.summary.project, p.summary.job_counts, p.finished
    prog = progress(p.history, counts, now_s)
    total = f.done + f.failed + f.reset_exhausted
    return {
        "project_id": project.id,
        "status": project.status.value,
        "policy_version": project.policy_version,
        "dispatch_qps": project.dispatch_qps,
        "worker_claim_qps": project.worker_claim_qps,
        "job_counts": counts.as_dict(),
        "oldest_todo_age_seconds": oldest_todo_age(p.oldest_todo_created_at, now_s),
        "expired_wip": p.expired_wip,
        "percent_done": _round(prog.percent_done),
        "rate_per_minute": _round(prog.rate_per_minute),
        "eta_seconds": prog.eta_seconds,
        "finished": {
            "done": f.done,
            "failed": f.failed,
            "reset_exhausted": f.reset_exhausted,
            "permanent_failure_rate": _ratio(f.failed, total),
            "reset_exhausted_rate": _ratio(f.reset_exhausted, total),
            "done_with_receipts": f.done_with_receipts,
            "receipt_bearing_rate": _ratio(f.done_with_receipts, f.done),
        },
    }


def worker_row(w: WorkerClaimRate) -> dict[str, Any]:
    return {
        "project_id": w.project_id,
        "worker_id": w.worker_id,
        "policy_version": w.policy_version,
        "current_policy_version": w.current_policy_version,
        "worker_claim_qps": w.worker_claim_qps,
        "buckets": w.buckets,
        "claim_requests": w.claim_requests,
        "jobs_dispatched": w.jobs_dispatched,
        "mean_claim_rps": round(w.mean_claim_rps, 4),
        "peak_claim_rps": round(w.peak_claim_rps, 4),
        "last_bucket_started_at_ms": w.last_bucket_started_at_ms,
        "stale_policy": w.stale_policy,
        "over_limit": w.over_limit,
    }


def report(snapshot: MonitorSnapshot, window_s: int, bucket_window_s: int) -> dict[str, Any]:
    """The database half of the monitoring report, as a JSON-ready dict."""
    return {
        "generated_at": snapshot.now_s,
        "window_seconds": window_s,
        "bucket_window_seconds": bucket_window_s,
        "projects": [project_row(p, snapshot.now_s) for p in snapshot.projects],
        "workers": [worker_row(w) for w in snapshot.workers],
    }


async def monitor_report(
    store: MonitorPort, *, window_s: int, bucket_window_s: int, log_file: Path | None
) -> dict[str, Any]:
    snapshot = await store.monitor_snapshot(window_s, bucket_window_s)
    out = report(snapshot, window_s, bucket_window_s)
    out["requests"] = (
        read_log_stats(log_file, since_s=snapshot.now_s - window_s)
        if log_file is not None
        else None
    )
    return out


async def prune_report(store: MaintenancePort, *, now_s: int, older_than_s: int) -> dict[str, Any]:
    cutoff_ms = (now_s - older_than_s) * 1000
    return {"deleted": await store.prune_claim_buckets(cutoff_ms), "cutoff_ms": cutoff_ms}


async def _with_store(database_url: str, clock: Clock, action: Callable[[Store], Awaitable[T]]) -> T:
    """One connection in transaction-pooler mode (no startup parameter, unnamed statements), so
    the command runs the same direct or through PgBouncer; no client-side command timeout (the
    prune bounds each statement server-side)."""
    from hq_adapters.postgres import connect

    store = await connect(database_url, clock, pooler="transaction", min_size=1, max_size=1)
    try:
        return await action(store)
    finally:
        await store.close()


def _require(database_url: str) -> str:
    if not database_url:
        raise CliError("a database URL is required (--database-url or HQ_DATABASE_URL)")
    return database_url


# --- command functions (registered in hq_apps.cli.tracker) ---------------------------------


def monitor(
    *,
    database_url: DatabaseUrl = "",
    json_output: Annotated[bool, Parameter(name="--json", negative="")] = False,
    log_file: Path | None = None,
    window: str = "1h",
    bucket_window: str = "15m",
) -> None:
    """Print job counts, queue age, expired leases, failure and receipt rates, per-worker
    claim rates and (with --log-file) 429 and latency figures. Read-only.

    Parameters
    ----------
    json_output
        Print one JSON document instead of tables.
    log_file
        The tracker's JSON request log ("-" for stdin).
    window
        Window for failure/receipt rates and log figures (e.g. 1h, 24h).
    bucket_window
        Window of claim-bucket minutes for per-worker rates (e.g. 15m).
    """
    url = _require(database_url)
    window_s, bucket_window_s = parse_duration(window), parse_duration(bucket_window)
    result = asyncio.run(
        _with_store(
            url,
            SystemClock(),
            lambda store: monitor_report(
                store, window_s=window_s, bucket_window_s=bucket_window_s, log_file=log_file
            ),
        )
    )
    if json_output:
        sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    else:
        sys.stdout.write(render_text(result))


def prune_claim_buckets(
    *,
    older_than: str,
    database_url: DatabaseUrl = "",
) -> None:
    """Delete worker claim-bucket rows older than a retention period and print the count.

    Parameters
    ----------
    older_than
        Retention, e.g. 30d or 12h: buckets that started before now minus this are deleted.
    """
    url = _require(database_url)
    older_than_s = parse_duration(older_than)
    clock = SystemClock()
    now_s = seconds(clock.now_ns())
    result = asyncio.run(
        _with_store(
            url, clock, lambda store: prune_report(store, now_s=now_s, older_than_s=older_than_s)
        )
    )
    sys.stdout.write(f"deleted {result['deleted']} claim bucket rows\n")


__all__ = ["JOB_STATUSES", "monitor", "monitor_report", "prune_claim_buckets", "prune_report"]
