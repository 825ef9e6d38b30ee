"""MonitorPort and the claim-bucket prune over MemoryState: the same figures as PostgreSQL,
built from the same reads as ``list_projects``, ``queue_health`` and ``all_history``."""

from __future__ import annotations

from hq_adapters.memory import admin_ops, observe_ops
from hq_adapters.memory.state import MemoryState
from hq_domain.jobs import JobStatus
from hq_domain.monitoring import FinishedCounts, MonitorSnapshot, ProjectMonitor, WorkerClaimRate
from hq_domain.progress import RATE_WINDOW_S

_TERMINAL = (JobStatus.DONE, JobStatus.FAILED, JobStatus.RESET_EXHAUSTED)


def finished_since(state: MemoryState, project_id: str, since_s: int) -> FinishedCounts:
    pj = state.project_jobs[project_id]
    n = dict.fromkeys(_TERMINAL, 0)
    receipts = 0
    for status in _TERMINAL:
        for job_id in pj.by_status[status]:
            job = pj.jobs[job_id]
            if job.updated_at >= since_s:
                n[status] += 1
                receipts += status is JobStatus.DONE and bool(job.artifact_receipts)
    return FinishedCounts(
        n[JobStatus.DONE], n[JobStatus.FAILED], n[JobStatus.RESET_EXHAUSTED], receipts
    )


def worker_claim_rates(state: MemoryState, since_ms: int) -> list[WorkerClaimRate]:
    # (project, worker, policy version) → [buckets, requests, jobs, peak, last_ms]
    agg: dict[tuple[str, str, int], list[int]] = {}
    for (pid, worker_id, start_ms), row in state.claim_buckets.items():
        if start_ms < since_ms:
            continue
        a = agg.setdefault((pid, worker_id, row.policy_version), [0, 0, 0, 0, 0])
        a[0] += 1
        a[1] += row.claim_requests
        a[2] += row.jobs_dispatched
        a[3] = max(a[3], row.claim_requests)
        a[4] = max(a[4], start_ms)
    out = []
    for (pid, worker_id, version), (buckets, requests, jobs, peak, last_ms) in sorted(agg.items()):
        project = state.projects[pid]
        out.append(
            WorkerClaimRate(pid, worker_id, version, project.policy_version,
                            project.worker_claim_qps, buckets, requests, jobs, peak, last_ms)
        )  # fmt: skip
    return out


def monitor_snapshot(
    state: MemoryState, now_s: int, window_s: int, bucket_window_s: int
) -> MonitorSnapshot:
    health = observe_ops.queue_health(state, now_s)
    history = observe_ops.all_history(state, now_s - RATE_WINDOW_S)
    projects = []
    for summary in admin_ops.list_projects(state):
        pid = summary.project.id
        oldest, expired = health.get(pid, (None, 0))
        projects.append(
            ProjectMonitor(summary, oldest, expired, finished_since(state, pid, now_s - window_s),
                           history.get(pid, []))
        )  # fmt: skip
    workers = worker_claim_rates(state, (now_s - bucket_window_s) * 1000)
    return MonitorSnapshot(now_s, projects, workers)


def prune_claim_buckets(state: MemoryState, before_ms: int) -> int:
    old = [key for key in state.claim_buckets if key[2] < before_ms]
    for key in old:
        del state.claim_buckets[key]
    return len(old)
