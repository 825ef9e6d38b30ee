"""ObservePort over MemoryState: the same history, retention and groupings as PostgreSQL."""

from __future__ import annotations

from hq_adapters.memory.state import MemoryState
from hq_domain.jobs import JobStatus
from hq_domain.progress import (
    MINUTE_S,
    WORKER_MINUTE_RETENTION_S,
    FailureGroup,
    HistoryPoint,
    WorkerActivity,
    group_failures,
    keep_point,
    minute_of,
)
from hq_domain.worker_tally import Tallies


def record_history(state: MemoryState, now_s: int) -> int:
    minute = minute_of(now_s)
    for pid in state.projects:
        state.history.setdefault(pid, {})[minute] = HistoryPoint(
            minute, state.counts(pid), state.project_jobs[pid].resets
        )
    for points in state.history.values():
        for t in [t for t in points if not keep_point(t, now_s)]:
            del points[t]
    return len(state.projects)


def project_history(state: MemoryState, project_id: str, since_s: int) -> list[HistoryPoint]:
    points = state.history.get(project_id, {})
    return [points[t] for t in sorted(points) if t >= since_s]


def all_history(state: MemoryState, since_s: int) -> dict[str, list[HistoryPoint]]:
    out = {pid: project_history(state, pid, since_s) for pid in sorted(state.history)}
    return {pid: pts for pid, pts in out.items() if pts}


def recent_failures(state: MemoryState, project_id: str, sample: int) -> list[FailureGroup]:
    pj = state.project_jobs.get(project_id)
    if pj is None:
        return []
    rows = []
    for status in (JobStatus.FAILED, JobStatus.RESET_EXHAUSTED):
        for job_id in sorted(pj.by_status[status], reverse=True)[:sample]:
            rows.append((job_id, pj.jobs[job_id].execution_error))
    return group_failures(rows)


def worker_activity(
    state: MemoryState, project_id: str | None, since_s: int
) -> list[WorkerActivity]:
    agg: dict[tuple[str, str], list[int]] = {}  # → [last_ms, requests, claimed, in_hand, done, failed]
    for (pid, worker_id, start_ms), row in state.claim_buckets.items():
        if start_ms < since_s * 1000 or (project_id is not None and pid != project_id):
            continue
        a = agg.setdefault((pid, worker_id), [0] * 6)
        a[0] = max(a[0], start_ms)
        a[1] += row.claim_requests
        a[2] += row.jobs_dispatched
    for pid, pj in state.project_jobs.items():
        if project_id is not None and pid != project_id:
            continue
        for job_id in pj.by_status[JobStatus.WIP]:
            job = pj.jobs[job_id]
            a = agg.setdefault((pid, job.worker_id or ""), [0] * 6)
            a[0] = max(a[0], job.updated_at * 1000)
            a[3] += 1
    for (pid, minute, worker_id), (done, failed) in state.worker_minutes.items():
        if minute + MINUTE_S <= since_s or (project_id is not None and pid != project_id):
            continue
        a = agg.setdefault((pid, worker_id), [0] * 6)
        a[0] = max(a[0], minute * 1000)
        a[4] += done
        a[5] += failed
    out = [
        WorkerActivity(worker_id, state.workers.get(worker_id), pid, last_ms // 1000,
                       requests, claimed, in_hand, done, failed)
        for (pid, worker_id), (last_ms, requests, claimed, in_hand, done, failed) in agg.items()
    ]
    return sorted(out, key=lambda w: (-w.last_seen_s, w.project_id, w.worker_id))


def queue_health(state: MemoryState, now_s: int) -> dict[str, tuple[int | None, int]]:
    out = {}
    for pid, pj in state.project_jobs.items():
        todo = [pj.jobs[j].created_at for j in pj.by_status[JobStatus.TODO]]
        expired = sum(
            1 for j in pj.by_status[JobStatus.WIP]
            if (pj.jobs[j].lease_expires_at or 0) <= now_s
        )
        out[pid] = (min(todo) if todo else None, expired)
    return out


def record_worker_minutes(state: MemoryState, tallies: Tallies, now_s: int) -> int:
    minute = minute_of(now_s)
    written = 0
    for (pid, worker_id), (done, failed) in tallies.items():
        if pid not in state.projects:
            continue
        row = state.worker_minutes.setdefault((pid, minute, worker_id), [0, 0])
        row[0] += done
        row[1] += failed
        written += 1
    cutoff = now_s - WORKER_MINUTE_RETENTION_S
    for key in [k for k in state.worker_minutes if k[1] < cutoff]:
        del state.worker_minutes[key]
    return written
