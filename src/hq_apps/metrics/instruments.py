"""The process-local instruments and the observer that feeds them from the request path."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata

from prometheus_client import Counter, Gauge, Histogram

from hq_domain.worker import ItemResult

REQUESTS = Counter(
    "hq_http_requests", "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
)
LATENCY = Histogram(
    "hq_http_request_duration_seconds", "Time to answer an HTTP request, by route template.",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
RATE_LIMITED = Counter(
    "hq_http_rate_limited", "Requests answered 429 (dispatch or worker claim rate), by route.",
    ["route"],
)
CLAIM_REQUESTS = Counter(
    "hq_claim_requests", "Successful claim requests, by project and whether they got jobs.",
    ["project", "result"],
)
JOBS_CLAIMED = Counter("hq_jobs_claimed", "Jobs handed out by claims, by project.", ["project"])
ATTEMPTS = Counter(
    "hq_attempt_items",
    "complete/fail/extend-lease items, by project, operation and result (applied or stale).",
    ["project", "op", "result"],
)
SWEEP_RESETS = Counter(
    "hq_sweep_resets", "Expired leases reset by the background sweep (claims also reset some)."
)
POOL = Gauge(
    "hq_db_pool_connections", "Database pool connections of the tracker, by state.", ["state"],
    multiprocess_mode="livesum",
)
BUILD = Gauge(
    "hq_build_info", "Always 1; the labels say which build is running.", ["version"],
    multiprocess_mode="max",
)


def version() -> str:
    try:
        return metadata.version("savewebhq")
    except metadata.PackageNotFoundError:  # pragma: no cover
        return "unknown"


class PrometheusObserver:
    """:class:`hq_apps.api.observers.Observer` recording into the instruments above."""

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        REQUESTS.labels(method, route, str(status)).inc()
        LATENCY.labels(method, route).observe(seconds)
        if status == 429:
            RATE_LIMITED.labels(route).inc()

    def claim(self, project_id: str, jobs: int) -> None:
        CLAIM_REQUESTS.labels(project_id, "jobs" if jobs else "empty").inc()
        if jobs:
            JOBS_CLAIMED.labels(project_id).inc(jobs)

    def items(self, project_id: str, op: str, results: Sequence[ItemResult]) -> None:
        applied = sum(1 for r in results if r.applied)
        if applied:
            ATTEMPTS.labels(project_id, op, "applied").inc(applied)
        if len(results) > applied:
            ATTEMPTS.labels(project_id, op, "stale").inc(len(results) - applied)

    def swept(self, n: int) -> None:
        if n:
            SWEEP_RESETS.inc(n)
