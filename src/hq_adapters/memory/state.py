"""The in-memory tables and the few helpers every operation module shares.

Rows are plain mutable objects owned by :class:`MemoryState`; nothing outside this package
ever sees them (reads return copies), so the asyncio lock in the store is all the isolation
a call needs. Per-project status indexes keep counts and claims from scanning done jobs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from hq_adapters.memory.indexes import LeaseHeap, TodoQueues
from hq_domain import lifecycle
from hq_domain.identity import identity_key
from hq_domain.jobs import ALL_STATUSES, Job, JobSpec, JobStatus
from hq_domain.progress import HistoryPoint
from hq_domain.projects import JobCounts, Project, ProjectSummary
from hq_domain.users import User

"""D2: the claim path resets at most this many expired rows per call."""


@dataclass(slots=True)
class TokenRow:
    digest: bytes
    plaintext: str | None
    created_at: int
    revoked_at: int | None = None


@dataclass(slots=True)
class SessionRow:
    user_id: str
    created_at: int
    expires_at: int


@dataclass(slots=True)
class ClaimBucketRow:
    claim_requests: int
    jobs_dispatched: int
    policy_version: int


@dataclass(slots=True)
class ProjectJobs:
    """A project's jobs (insertion = job_id order), its status index and identity index."""

    jobs: dict[int, Job] = field(default_factory=dict)
    by_status: dict[JobStatus, set[int]] = field(
        default_factory=lambda: {s: set() for s in ALL_STATUSES}
    )
    identities: dict[str | bytes, int] = field(default_factory=dict)
    todo: TodoQueues = field(default_factory=TodoQueues)
    leases: LeaseHeap = field(default_factory=LeaseHeap)
    resets: int = 0
    """Running total of resets (raises of reset_count), as migration 0010's trigger keeps."""

    def todo_rows(self) -> list[Job]:
        return [self.jobs[j] for j in self.by_status[JobStatus.TODO]]


@dataclass(slots=True)
class MemoryState:
    users: dict[str, User] = field(default_factory=dict)
    tokens: dict[str, TokenRow] = field(default_factory=dict)  # user_id → token
    token_owner: dict[bytes, str] = field(default_factory=dict)  # digest → user_id
    sessions: dict[bytes, SessionRow] = field(default_factory=dict)
    projects: dict[str, Project] = field(default_factory=dict)
    project_jobs: dict[str, ProjectJobs] = field(default_factory=dict)
    job_project: dict[int, str] = field(default_factory=dict)  # job_id → project_id
    claim_buckets: dict[tuple[str, str, int], ClaimBucketRow] = field(default_factory=dict)
    workers: dict[str, str] = field(default_factory=dict)  # worker_id → user_id
    # project_id → minute_s → counts snapshot (hq_domain.progress; deleted with the project)
    history: dict[str, dict[int, HistoryPoint]] = field(default_factory=dict)
    # (project_id, minute_s, worker_id) → [done, failed] (hq_domain.worker_tally)
    worker_minutes: dict[tuple[str, int, str], list[int]] = field(default_factory=dict)
    last_job_id: int = 0

    def next_job_id(self) -> int:
        self.last_job_id += 1
        return self.last_job_id

    def find_job(self, project_id: str, job_id: int) -> Job | None:
        pj = self.project_jobs.get(project_id)
        return None if pj is None else pj.jobs.get(job_id)

    def add_job(self, job: Job, key: str | bytes | None) -> None:
        pj = self.project_jobs[job.project_id]
        pj.jobs[job.job_id] = job
        pj.by_status[job.status].add(job.job_id)
        if job.status is JobStatus.TODO:
            pj.todo.push(job)
        if key is not None:
            pj.identities[key] = job.job_id
        self.job_project[job.job_id] = job.project_id

    def remove_job(self, job: Job, key: str | bytes | None) -> None:
        pj = self.project_jobs[job.project_id]
        del pj.jobs[job.job_id]
        pj.by_status[job.status].discard(job.job_id)
        if key is not None:
            pj.identities.pop(key, None)
        self.job_project.pop(job.job_id, None)

    def set_status(self, job: Job, status: JobStatus) -> None:
        """Move a job between status indexes; every status change goes through here."""
        pj = self.project_jobs[job.project_id]
        pj.by_status[job.status].discard(job.job_id)
        pj.by_status[status].add(job.job_id)
        job.status = status
        if status is JobStatus.TODO:
            pj.todo.push(job)
            if pj.todo.needs_rebuild(len(pj.by_status[JobStatus.TODO])):
                pj.todo.rebuild(pj.todo_rows())

    def set_lease(self, job: Job, deadline: int) -> None:
        """Every lease deadline change goes through here (it feeds the expiry heap)."""
        if job.lease_expires_at != deadline:
            job.lease_expires_at = deadline
            self.project_jobs[job.project_id].leases.push(job)

    def counts(self, project_id: str) -> JobCounts:
        index = self.project_jobs[project_id].by_status
        return JobCounts(**{s.value: len(index[s]) for s in ALL_STATUSES})

    def summary(self, project_id: str) -> ProjectSummary:
        return ProjectSummary(self.projects[project_id], self.counts(project_id))

    def apply(self, job: Job, changes: lifecycle.Changes) -> None:
        """Write a transition's fields (hq_domain.lifecycle); status and lease go through
        :meth:`set_status` and :meth:`set_lease`, which keep the indexes; a rise of reset_count
        is a reset and adds to the project's running total (as migration 0010's trigger)."""
        for name, value in changes.written().items():
            if name == "status":
                self.set_status(job, value)
            elif name == "lease_expires_at" and value is not None:
                self.set_lease(job, value)
            elif name == "reset_count" and value > job.reset_count:
                self.project_jobs[job.project_id].resets += 1
                job.reset_count = value
            else:
                setattr(job, name, value)

    def expire(self, job: Job, max_resets: int, now_s: int) -> None:
        """Reset one expired WIP row (spec §2.3): completed_at and execution_error kept."""
        self.apply(job, lifecycle.expire(job.reset_count, max_resets, job.worker_id, now_s))

    def pop_expired(self, project_id: str, now_s: int, limit: int) -> list[Job]:
        """Up to ``limit`` expired WIP rows of one project, oldest deadline first; the caller
        resets them or hands the rest back with :meth:`restore_expired`."""
        pj = self.project_jobs[project_id]
        return pj.leases.pop_expired(now_s, limit, pj.jobs)

    def restore_expired(self, rows: list[Job]) -> None:
        for job in rows:
            self.project_jobs[job.project_id].leases.push(job)

    def sweep_project(self, project_id: str, now_s: int, limit: int) -> int:
        project = self.projects[project_id]
        expired = self.pop_expired(project_id, now_s, limit)
        for job in expired:
            self.expire(job, project.max_resets, now_s)
        return len(expired)

    def identity_of(self, job: Job) -> str | bytes | None:
        project = self.projects[job.project_id]
        return identity_key(JobSpec(value=job.value, id=job.external_id), project.identity_mode)


def copy_job(job: Job) -> Job:
    """A detached copy for callers (stored JSON objects must not be shared)."""
    return copy.deepcopy(job)
