"""Projects, enqueue and job administration on the in-memory state (spec §1.7.2–1.7.8, §2.6)."""

from __future__ import annotations

import copy
from collections.abc import Sequence

from hq_adapters.memory.state import MemoryState, ProjectJobs, copy_job
from hq_domain import lifecycle
from hq_domain.clock import seconds
from hq_domain.errors import InvalidRequest, NotFound
from hq_domain.identity import assign_random_key, check_stored, collapse_batch, identity_key
from hq_domain.jobs import Job, JobSpec, JobStatus
from hq_domain.ports import JobPage
from hq_domain.projects import ProjectPut, ProjectSummary, apply_put, require_enqueue_allowed
from hq_domain.validation import check_identity_id


def list_projects(state: MemoryState) -> list[ProjectSummary]:
    return [state.summary(pid) for pid in sorted(state.projects)]


def get_project(state: MemoryState, project_id: str) -> ProjectSummary | None:
    return state.summary(project_id) if project_id in state.projects else None


def put_project(state: MemoryState, project_id: str, put: ProjectPut, now_ns: int) -> ProjectSummary:
    project = apply_put(project_id, state.projects.get(project_id), put, seconds(now_ns))
    state.projects[project_id] = project
    state.project_jobs.setdefault(project_id, ProjectJobs())
    return state.summary(project_id)


def delete_project(state: MemoryState, project_id: str) -> None:
    if project_id not in state.projects:
        raise NotFound("project not found")
    pj = state.project_jobs[project_id]
    if pj.by_status[JobStatus.WIP]:
        raise InvalidRequest("project has WIP jobs")
    for job_id in pj.jobs:
        state.job_project.pop(job_id, None)
    del state.project_jobs[project_id]
    del state.projects[project_id]
    state.history.pop(project_id, None)
    for key in [k for k in state.claim_buckets if k[0] == project_id]:
        del state.claim_buckets[key]
    for wkey in [k for k in state.worker_minutes if k[0] == project_id]:
        del state.worker_minutes[wkey]


def enqueue(state: MemoryState, project_id: str, jobs: Sequence[JobSpec], now_ns: int) -> int:
    """Check everything first, then insert: any error leaves the state untouched."""
    return enqueue_batches(state, project_id, [jobs], now_ns)[0]


def enqueue_batches(
    state: MemoryState, project_id: str, batches: Sequence[Sequence[JobSpec]], now_ns: int
) -> list[int]:
    """Each batch as its own enqueue, in order, all or nothing: a later batch sees the
    identities an earlier one adds. Returns the rows inserted per batch."""
    project = state.projects.get(project_id)
    if project is None:
        raise NotFound("project not found")
    require_enqueue_allowed(project)
    mode = project.identity_mode
    pj = state.project_jobs[project_id]
    added: dict[str | bytes, JobSpec] = {}  # identities added by earlier batches of this call
    plans: list[list[tuple[JobSpec, str | bytes | None]]] = []
    for jobs in batches:
        for spec in jobs:
            check_identity_id(spec, mode)
        fresh: list[tuple[JobSpec, str | bytes | None]] = []
        for spec in collapse_batch(jobs, mode):
            key = identity_key(spec, mode)
            stored_id = None if key is None else pj.identities.get(key)
            if stored_id is not None:
                stored = pj.jobs[stored_id]
                check_stored(mode, stored.value, stored.spec, spec)
            elif key is not None and key in added:
                first = added[key]
                check_stored(mode, first.value, first.spec_fields(), spec)
            else:
                if key is not None:
                    added[key] = spec
                fresh.append((spec, key))
        plans.append(fresh)
    now_s = seconds(now_ns)
    for fresh in plans:
        for spec, key in fresh:
            _add(state, project_id, spec, key, now_s)
    return [len(fresh) for fresh in plans]


def _add(
    state: MemoryState, project_id: str, spec: JobSpec, key: str | bytes | None, now_s: int
) -> None:
    job = Job(
        job_id=state.next_job_id(),
        project_id=project_id,
        value=spec.value,
        external_id=spec.id,
        spec=_stored_spec(spec),
        random_key=assign_random_key(spec),
        created_at=now_s,
        **lifecycle.enqueue(now_s).written(),
    )
    state.add_job(job, key)


def _stored_spec(spec: JobSpec) -> dict[str, object]:
    """The row's own copy of the spec. ``spec_fields()`` builds a fresh dict whose values are
    immutable except ``attr``, so only that needs a deep copy (a bulk-load hot spot)."""
    fields = spec.spec_fields()
    if "attr" in fields:
        fields["attr"] = copy.deepcopy(fields["attr"])
    return fields


def list_jobs(
    state: MemoryState, project_id: str, status: JobStatus | None, after_job_id: int, limit: int
) -> JobPage:
    if project_id not in state.projects:
        raise NotFound("project not found")
    pj = state.project_jobs[project_id]
    ids = pj.jobs if status is None else pj.by_status[status]
    page = sorted(j for j in ids if j > after_job_id)[: limit + 1]
    more = len(page) > limit
    page = page[:limit]
    return JobPage(
        [copy_job(pj.jobs[j]) for j in page], page[-1] if more and page else None
    )


def get_job(state: MemoryState, project_id: str, job_id: int) -> Job | None:
    job = state.find_job(project_id, job_id)
    return None if job is None else copy_job(job)


def requeue_job(state: MemoryState, project_id: str, job_id: int, now_ns: int) -> None:
    job = state.find_job(project_id, job_id)
    if job is None or not lifecycle.requeueable(job.status):
        raise InvalidRequest("job is not failed or reset_exhausted")
    state.apply(job, lifecycle.requeue(seconds(now_ns)))


def delete_job(state: MemoryState, project_id: str, job_id: int) -> None:
    job = state.find_job(project_id, job_id)
    if job is None or not lifecycle.deletable(job.status):
        raise InvalidRequest("job not found or is WIP")
    state.remove_job(job, state.identity_of(job))
