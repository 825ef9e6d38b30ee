"""ObservePort over PostgreSQL: history snapshots, failures, worker activity (issue 14)."""

from __future__ import annotations

from hq_adapters.postgres.database import Database, row_count
from hq_adapters.postgres.queries import q
from hq_adapters.postgres.rows import history_point, load
from hq_domain.ids import machine_token_digest
from hq_domain.progress import (
    HOUR_RETENTION_S,
    HOUR_S,
    MINUTE_RETENTION_S,
    WORKER_MINUTE_RETENTION_S,
    FailureGroup,
    HistoryPoint,
    WorkerActivity,
    group_failures,
    minute_of,
)
from hq_domain.worker_tally import Tallies

_PROBE_TOKEN = machine_token_digest("hq-readiness-probe-not-a-token")
_PROBE_PROJECT = "readyz-probe"


class PostgresObserve:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def ping(self, timeout_s: float) -> None:
        """Run the first statement of every worker request (the token and project gate)
        through the pool, exactly as a request would: same connections, same prepared or
        unnamed statement path. Raises on failure; cancelled server-side after ``timeout_s``."""
        await self._db.probe("worker_gate", _PROBE_TOKEN, _PROBE_PROJECT, timeout=timeout_s)

    async def fold_counts(self) -> int:
        return row_count(await self._db.execute("fold_job_counts"))

    async def record_history(self) -> int:
        now_s = self._db.now_s()
        async with self._db.transaction() as conn:
            status = await conn.execute(q("record_history"), minute_of(now_s))
            await conn.execute(
                q("prune_history"), HOUR_S, now_s - MINUTE_RETENTION_S, now_s - HOUR_RETENTION_S
            )
        return row_count(status)

    async def project_history(self, project_id: str, since_s: int) -> list[HistoryPoint]:
        return [history_point(r) for r in await self._db.fetch("project_history", project_id, since_s)]

    async def all_history(self, since_s: int) -> dict[str, list[HistoryPoint]]:
        out: dict[str, list[HistoryPoint]] = {}
        for r in await self._db.fetch("all_history", since_s):
            out.setdefault(r["project_id"], []).append(history_point(r))
        return out

    async def recent_failures(self, project_id: str, sample: int) -> list[FailureGroup]:
        rows = await self._db.fetch("recent_failures", project_id, sample)
        return group_failures([(r["job_id"], load(r["execution_error"])) for r in rows])

    async def worker_activity(self, project_id: str | None, since_s: int) -> list[WorkerActivity]:
        rows = await self._db.fetch("worker_activity", since_s * 1000, project_id)
        return [
            WorkerActivity(
                worker_id=r["worker_id"], user_id=r["user_id"], project_id=r["project_id"],
                last_seen_s=r["last_ms"] // 1000, claim_requests=int(r["claim_requests"]),
                jobs_claimed=int(r["jobs_claimed"]), jobs_in_hand=int(r["in_hand"]),
                jobs_done=int(r["done"]), jobs_failed=int(r["failed"]),
            )
            for r in rows
        ]

    async def queue_health(self) -> dict[str, tuple[int | None, int]]:
        oldest = {r["project_id"]: r["oldest_created_at"] for r in await self._db.fetch("oldest_todo_all")}
        expired = {r["project_id"]: r["n"] for r in await self._db.fetch("expired_wip_all", self._db.now_s())}
        return {pid: (oldest[pid], int(expired.get(pid, 0))) for pid in oldest}

    async def record_worker_minutes(self, tallies: Tallies) -> int:
        now_s = self._db.now_s()
        keys = sorted(tallies)
        async with self._db.transaction() as conn:
            status = "INSERT 0 0"
            if keys:
                status = await conn.execute(
                    q("add_worker_minutes"), minute_of(now_s),
                    [k[0] for k in keys], [k[1] for k in keys],
                    [tallies[k][0] for k in keys], [tallies[k][1] for k in keys],
                )
            await conn.execute(q("prune_worker_minutes"), now_s - WORKER_MINUTE_RETENTION_S)
        return row_count(status)
