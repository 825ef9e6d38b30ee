"""MonitorPort over PostgreSQL: the operators' monitor (``tracker monitor``).

The snapshot reads every figure in one read-only repeatable-read transaction, through the same
named blocks that serve the dashboard and ``/metrics`` (``list_projects``, ``oldest_todo_all``,
``expired_wip_all``, ``all_history``) plus the monitor's own (``sql/monitor.sql``).
"""

from __future__ import annotations

import asyncpg

from hq_adapters.postgres import rows
from hq_adapters.postgres.database import Database
from hq_adapters.postgres.queries import q
from hq_domain.monitoring import FinishedCounts, MonitorSnapshot, ProjectMonitor, WorkerClaimRate
from hq_domain.progress import RATE_WINDOW_S, HistoryPoint


def _finished(r: asyncpg.Record) -> FinishedCounts:
    return FinishedCounts(r["done"], r["failed"], r["reset_exhausted"], r["done_with_receipts"])


def _worker(r: asyncpg.Record) -> WorkerClaimRate:
    return WorkerClaimRate(
        project_id=r["project_id"], worker_id=r["worker_id"], policy_version=r["policy_version"],
        current_policy_version=r["current_policy_version"],
        worker_claim_qps=r["worker_claim_qps"], buckets=r["buckets"],
        claim_requests=int(r["claim_requests"]), jobs_dispatched=int(r["jobs_dispatched"]),
        peak_claim_requests=int(r["peak_claim_requests"]),
        last_bucket_started_at_ms=r["last_bucket_ms"],
    )  # fmt: skip


class PostgresMonitor:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def monitor_snapshot(self, window_s: int, bucket_window_s: int) -> MonitorSnapshot:
        now_s = self._db.now_s()
        async with self._db.connection() as conn, conn.transaction(
            readonly=True, isolation="repeatable_read"
        ):
            summaries = [rows.summary(r) for r in await conn.fetch(q("list_projects"))]
            oldest = {r["project_id"]: r["oldest_created_at"]
                      for r in await conn.fetch(q("oldest_todo_all"))}  # fmt: skip
            expired = {r["project_id"]: int(r["n"])
                       for r in await conn.fetch(q("expired_wip_all"), now_s)}  # fmt: skip
            finished = {r["project_id"]: _finished(r)
                        for r in await conn.fetch(q("finished_since"), now_s - window_s)}  # fmt: skip
            history: dict[str, list[HistoryPoint]] = {}
            for r in await conn.fetch(q("all_history"), now_s - RATE_WINDOW_S):
                history.setdefault(r["project_id"], []).append(rows.history_point(r))
            since_ms = (now_s - bucket_window_s) * 1000
            workers = [_worker(r) for r in await conn.fetch(q("worker_claim_rates"), since_ms)]
        projects = [
            ProjectMonitor(
                s,
                oldest.get(s.project.id),
                expired.get(s.project.id, 0),
                finished.get(s.project.id, FinishedCounts()),
                history.get(s.project.id, []),
            )
            for s in summaries
        ]
        return MonitorSnapshot(now_s, projects, workers)
