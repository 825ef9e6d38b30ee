"""What the operators' monitor reads (docs/operations.md, "Monitoring") and its flag rules.

A :class:`MonitorSnapshot` is one consistent read of every project's live figures: the job
counts and queue health that the dashboard and ``/metrics`` also show, the progress history,
the jobs that reached a terminal state in a window, and the per-worker claim-bucket totals.
The rules that turn those into flags (an over-limit worker, a stale policy) live here.
"""

from __future__ import annotations

from dataclasses import dataclass

from hq_domain.progress import HistoryPoint
from hq_domain.projects import ProjectSummary

OVER_LIMIT_TOLERANCE = 1.10
"""A worker is flagged above 110 % of ``worker_claim_qps`` …"""
OVER_LIMIT_SLACK_REQUESTS = 1
"""… plus one request per minute for bucket-edge effects."""
BUCKET_S = 60
"""One claim-bucket row covers one minute."""


def oldest_todo_age(created_at: int | None, now_s: int) -> int | None:
    """Seconds the oldest waiting job has waited (never negative), None when none waits."""
    return None if created_at is None else max(0, now_s - created_at)


@dataclass(frozen=True, slots=True)
class FinishedCounts:
    """Jobs whose current status is terminal and whose row changed in the window (an expiry
    that exhausts the resets leaves ``completed_at`` empty, so the window is on ``updated_at``).
    A receipt-bearing completion is a done job with a non-empty list of artifact receipts."""

    done: int = 0
    failed: int = 0
    reset_exhausted: int = 0
    done_with_receipts: int = 0


@dataclass(frozen=True, slots=True)
class ProjectMonitor:
    summary: ProjectSummary
    oldest_todo_created_at: int | None
    expired_wip: int
    """WIP jobs whose lease ran out (``lease_expires_at <= now``) that no sweep reset yet."""
    finished: FinishedCounts
    history: list[HistoryPoint]
    """Count snapshots of the last :data:`hq_domain.progress.RATE_WINDOW_S`, oldest first."""


@dataclass(frozen=True, slots=True)
class WorkerClaimRate:
    """One worker's claim buckets in the window, for one policy version it reported."""

    project_id: str
    worker_id: str
    policy_version: int
    current_policy_version: int
    worker_claim_qps: float | None
    buckets: int
    claim_requests: int
    jobs_dispatched: int
    peak_claim_requests: int
    """The most claim requests in any one bucket (minute)."""
    last_bucket_started_at_ms: int

    @property
    def stale_policy(self) -> bool:
        return self.policy_version != self.current_policy_version

    @property
    def over_limit(self) -> bool:
        """The busiest minute went past the project's per-worker limit (with tolerance); a
        project whose limit was removed since has nothing to compare against."""
        qps = self.worker_claim_qps
        limit = None if qps is None else qps * BUCKET_S * OVER_LIMIT_TOLERANCE
        return limit is not None and self.peak_claim_requests > limit + OVER_LIMIT_SLACK_REQUESTS

    @property
    def mean_claim_rps(self) -> float:
        return self.claim_requests / (BUCKET_S * self.buckets)

    @property
    def peak_claim_rps(self) -> float:
        return self.peak_claim_requests / BUCKET_S


@dataclass(frozen=True, slots=True)
class MonitorSnapshot:
    now_s: int
    """The instant of the read: expiry is ``<= now_s``, windows end at it."""
    projects: list[ProjectMonitor]
    """Every project, by id."""
    workers: list[WorkerClaimRate]
    """By project, worker and policy version."""
