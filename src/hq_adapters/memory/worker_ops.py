"""Worker operations on the in-memory state: policy, claim (spec §2.4) and the three
attempt mutations (spec §1.7.12–15). Each function runs under the store's lock."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import replace

from hq_adapters.memory.state import ClaimBucketRow, MemoryState
from hq_domain import lifecycle, ratelimit
from hq_domain.clock import millis, seconds
from hq_domain.errors import NotFound, PermissionDenied, ProjectDispatchRateLimited
from hq_domain.ids import new_attempt_id
from hq_domain.jobs import ClaimedJob, Job, JobStatus
from hq_domain.projects import Project, WorkerOp, require_op_allowed
from hq_domain.users import require_worker
from hq_domain.worker import (
    CLAIM_SWEEP_LIMIT,
    UNLIMITED_RETRY_AFTER_MS,
    AttemptRef,
    ClaimRequest,
    ClaimResult,
    CompleteItem,
    FailItem,
    ItemResult,
    bucket_start_ms,
    plan_claim,
)


def checked_project(state: MemoryState, user_id: str, project_id: str, op: WorkerOp) -> Project:
    """Re-read user and project: active worker (403), known project (404), D1 status (409)."""
    user = state.users.get(user_id)
    if user is None:
        raise PermissionDenied("active worker role required")
    require_worker(user.status, user.roles)
    project = state.projects.get(project_id)
    if project is None:
        raise NotFound("project not found")
    require_op_allowed(project, op)
    return project


def policy(state: MemoryState, user_id: str, project_id: str) -> Project:
    return checked_project(state, user_id, project_id, WorkerOp.POLICY)


def _record_claim_bucket(
    state: MemoryState, project: Project, request: ClaimRequest, now_ns: int, n: int
) -> None:
    if project.worker_claim_qps is None:
        return
    key = (project.id, request.worker_id, bucket_start_ms(millis(now_ns)))
    row = state.claim_buckets.get(key)
    if row is None:
        state.claim_buckets[key] = ClaimBucketRow(1, n, request.policy_version)
    else:
        row.claim_requests += 1
        row.jobs_dispatched += n
        row.policy_version = request.policy_version


def _store_bucket(state: MemoryState, project: Project, tokens: float, now_ns: int) -> Project:
    refilled = ratelimit.advance_refill_time(project.dispatch_refilled_at_ns, now_ns)
    project = replace(project, dispatch_tokens=tokens, dispatch_refilled_at_ns=refilled)
    state.projects[project.id] = project
    return project


def claim(
    state: MemoryState, user_id: str, project_id: str, request: ClaimRequest, now_ns: int
) -> ClaimResult:
    project = checked_project(state, user_id, project_id, WorkerOp.CLAIM)
    now_s = seconds(now_ns)
    state.workers[request.worker_id] = user_id
    plan = plan_claim(project, request.max_jobs, now_ns)
    state.sweep_project(project_id, now_s, CLAIM_SWEEP_LIMIT)

    pj = state.project_jobs[project_id]
    if plan.limit < 1:
        assert plan.tokens is not None and project.dispatch_qps is not None
        project = _store_bucket(state, project, plan.tokens, now_ns)
        _record_claim_bucket(state, project, request, now_ns, 0)
        if pj.todo.any(project.claim_order, request.accept_types, pj.jobs):
            wait = ratelimit.retry_after_ms(plan.tokens, project.dispatch_qps)
            raise ProjectDispatchRateLimited(project_id, project.policy_version, wait)
        return ClaimResult(project_id, [], UNLIMITED_RETRY_AFTER_MS, project.policy_version)

    chosen = pj.todo.take(project.claim_order, request.accept_types, plan.limit, pj.jobs)
    lease = now_s + request.lease_seconds
    claimed: list[ClaimedJob] = []
    for job in chosen:
        attempt_id = new_attempt_id()
        state.apply(job, lifecycle.claim(attempt_id, request.worker_id, lease, now_s))
        claimed.append(
            ClaimedJob(
                job.job_id, attempt_id, lease, job.value, job.external_id, copy.deepcopy(job.spec)
            )
        )

    retry_after = UNLIMITED_RETRY_AFTER_MS
    if plan.tokens is not None and claimed:
        assert project.dispatch_qps is not None
        bucket, retry_after = ratelimit.after_claim(
            plan.tokens, len(claimed), project.dispatch_refilled_at_ns, now_ns, project.dispatch_qps
        )
        project = _store_bucket(state, project, bucket.tokens, now_ns)
    _record_claim_bucket(state, project, request, now_ns, len(claimed))
    return ClaimResult(project_id, claimed, retry_after, project.policy_version)


def _matching(
    state: MemoryState, project_id: str, worker_id: str, ref: AttemptRef, now_s: int
) -> Job | None:
    """The row an item may mutate: same project, and the item holds its attempt."""
    job = state.find_job(project_id, ref.job_id)
    if job is None or not lifecycle.holds(
        job.status, job.attempt_id, job.worker_id, job.lease_expires_at, ref.attempt_id,
        worker_id, now_s,
    ):
        return None
    return job


def _mutate(
    state: MemoryState,
    user_id: str,
    project_id: str,
    worker_id: str,
    op: WorkerOp,
    items: Sequence[AttemptRef | CompleteItem | FailItem],
    now_ns: int,
    apply: Callable[[Project, Job, object, int], ItemResult],
) -> list[ItemResult]:
    """The shared shape of complete/fail/extend: gate, mapping, per-item match in input order.

    A repeated (job_id, attempt_id) pair is rejected after its first occurrence."""
    project = checked_project(state, user_id, project_id, op)
    now_s = seconds(now_ns)
    state.workers[worker_id] = user_id
    firsts = lifecycle.first_items((item.job_id, item.attempt_id) for item in items)
    results: list[ItemResult] = []
    for item, first in zip(items, firsts, strict=True):
        job = _matching(state, project_id, worker_id, item, now_s) if first else None  # type: ignore[arg-type]
        if job is None:
            results.append(ItemResult(item.job_id, item.attempt_id, applied=False))
        else:
            results.append(apply(project, job, item, now_s))
    return results


def complete(
    state: MemoryState,
    user_id: str,
    project_id: str,
    worker_id: str,
    items: Sequence[CompleteItem],
    now_ns: int,
) -> list[ItemResult]:
    def apply(project: Project, job: Job, item: object, now_s: int) -> ItemResult:
        assert isinstance(item, CompleteItem)
        receipts = item.artifact_receipts
        state.apply(job, lifecycle.complete(
            job.worker_id, copy.deepcopy(item.outcome.to_json()),
            None if receipts is None else [r.to_json() for r in receipts], now_s,
        ))
        return ItemResult(item.job_id, item.attempt_id, applied=True, job_status=JobStatus.DONE)

    return _mutate(state, user_id, project_id, worker_id, WorkerOp.COMPLETE, items, now_ns, apply)


def fail(
    state: MemoryState,
    user_id: str,
    project_id: str,
    worker_id: str,
    items: Sequence[FailItem],
    now_ns: int,
) -> list[ItemResult]:
    def apply(project: Project, job: Job, item: object, now_s: int) -> ItemResult:
        assert isinstance(item, FailItem)
        change = lifecycle.fail(
            item.retryable, job.reset_count, project.max_resets, job.worker_id,
            copy.deepcopy(item.error.to_json()), now_s,
        )
        state.apply(job, change)
        return ItemResult(item.job_id, item.attempt_id, applied=True, job_status=job.status)

    return _mutate(state, user_id, project_id, worker_id, WorkerOp.FAIL, items, now_ns, apply)


def extend_lease(
    state: MemoryState,
    user_id: str,
    project_id: str,
    worker_id: str,
    extend_seconds: int,
    items: Sequence[AttemptRef],
    now_ns: int,
) -> list[ItemResult]:
    def apply(project: Project, job: Job, item: object, now_s: int) -> ItemResult:
        assert isinstance(item, AttemptRef)
        deadline = now_s + extend_seconds
        state.apply(job, lifecycle.extend(job.lease_expires_at, extend_seconds, now_s))
        return ItemResult(
            item.job_id, item.attempt_id, applied=True, job_status=JobStatus.WIP,
            lease_expires_at=deadline,
        )

    return _mutate(state, user_id, project_id, worker_id, WorkerOp.EXTEND, items, now_ns, apply)
