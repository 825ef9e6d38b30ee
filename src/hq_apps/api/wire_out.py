"""Response bodies (spec §1.2.3, §1.4, §1.7.x) and their builders from domain values.

Official clients reject unknown keys, so every response contains exactly the documented keys.
Optional JobSpec keys use ``UNSET`` (omitted from the output); nullable keys are typed
``X | None`` and always present.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from hq_domain.errors import STALE_ATTEMPT_CODE, STALE_ATTEMPT_MESSAGE, HqError
from hq_domain.jobs import ClaimedJob, Job
from hq_domain.projects import REFRESH_AFTER_MS, Project, ProjectSummary
from hq_domain.users import UserListItem
from hq_domain.worker import ClaimResult, ItemResult

JsonObject = dict[str, Any]


class _Out(msgspec.Struct):
    pass


class ErrorBody(_Out):
    code: str
    message: str
    retryable: bool
    retry_after_ms: int
    details: JsonObject


class ErrorEnvelope(_Out):
    error: ErrorBody


class ItemError(_Out):
    code: str
    message: str
    retryable: bool
    retry_after_ms: int
    details: None


class ItemResultOut(_Out):
    job_id: int
    attempt_id: str
    status: str
    job_status: str | None
    lease_expires_at: int | None
    error: ItemError | None


class BatchResultOut(_Out):
    results: list[ItemResultOut]


class ClaimedJobOut(_Out):
    job_id: int
    attempt_id: str
    lease_expires_at: int
    value: str
    type: str
    id: str | UnsetType = UNSET
    via: str | UnsetType = UNSET
    hops: int | UnsetType = UNSET
    attr: JsonObject | UnsetType = UNSET


class ClaimOut(_Out):
    project_id: str
    jobs: list[ClaimedJobOut]
    retry_after_ms: int
    policy_version: int


class PolicyOut(_Out):
    project_id: str
    dispatch_qps: float | None
    worker_claim_qps: float | None
    max_jobs_per_claim: int
    recommended_lease_seconds: int
    policy_version: int
    refresh_after_ms: int


class JobCountsOut(_Out):
    todo: int
    wip: int
    done: int
    failed: int
    reset_exhausted: int


class ProjectSummaryOut(_Out):
    id: str
    status: str
    identity_mode: str
    claim_order: str
    dispatch_qps: float | None
    worker_claim_qps: float | None
    max_jobs_per_claim: int
    max_resets: int
    recommended_lease_seconds: int
    client_versions: list[str]
    policy_version: int
    job_counts: JobCountsOut
    created_at: int
    updated_at: int


class ProjectListOut(_Out):
    projects: list[ProjectSummaryOut]


class EnqueueOut(_Out):
    project_id: str
    submitted: int
    inserted: int


class AdminJobOut(_Out):
    job_id: int
    value: str
    type: str
    random_key: int
    status: str
    attempt_id: str | None
    worker_id: str | None
    lease_expires_at: int | None
    reset_count: int
    outcome: JsonObject | None
    artifact_receipts: list[JsonObject] | None
    execution_error: JsonObject | None
    created_at: int
    updated_at: int
    completed_at: int | None
    id: str | UnsetType = UNSET
    via: str | UnsetType = UNSET
    hops: int | UnsetType = UNSET
    attr: JsonObject | UnsetType = UNSET


class JobPageOut(_Out):
    jobs: list[AdminJobOut]
    next_after_job_id: int | None


class UserOut(_Out):
    id: str
    status: str
    roles: list[str]
    machine_token_active: bool
    machine_token_viewable: bool
    created_at: int
    updated_at: int
    github_login: str | UnsetType = UNSET


class UserListOut(_Out):
    users: list[UserOut]


class TokenOut(_Out):
    user_id: str
    token: str


class WhoamiOut(_Out):
    user_id: str


class HealthOut(_Out):
    status: str


class SourceOut(_Out):
    """Route 8's response (built by the source-upload handler)."""

    project_id: str
    jobs: int
    inserted: int
    uncompressed_bytes: int


def error_envelope(exc: HqError) -> ErrorEnvelope:
    return ErrorEnvelope(
        ErrorBody(exc.code, exc.message, exc.retryable, exc.retry_after_ms, exc.details)
    )


_STALE = ItemError(STALE_ATTEMPT_CODE, STALE_ATTEMPT_MESSAGE, False, 0, None)


def item_results(results: list[ItemResult]) -> BatchResultOut:
    out = [
        ItemResultOut(
            r.job_id, r.attempt_id, "applied", str(r.job_status), r.lease_expires_at, None
        )
        if r.applied
        else ItemResultOut(r.job_id, r.attempt_id, "rejected", None, None, _STALE)
        for r in results
    ]
    return BatchResultOut(out)


def _spec_keys(spec: dict[str, Any]) -> dict[str, Any]:
    """Output-side optional JobSpec keys (spec §1.2.3) from a stored spec object."""
    out: dict[str, Any] = {"type": spec.get("type") or "seed"}
    via = spec.get("via")
    if isinstance(via, str):
        out["via"] = via
    hops = spec.get("hops")
    if hops:
        out["hops"] = hops
    attr = spec.get("attr")
    if attr:
        out["attr"] = attr
    return out


def claimed_job(job: ClaimedJob) -> ClaimedJobOut:
    extra = _spec_keys(job.spec)
    if job.external_id:
        extra["id"] = job.external_id
    return ClaimedJobOut(job.job_id, job.attempt_id, job.lease_expires_at, job.value, **extra)


def claim_out(result: ClaimResult) -> ClaimOut:
    return ClaimOut(
        result.project_id,
        [claimed_job(j) for j in result.jobs],
        result.retry_after_ms,
        result.policy_version,
    )


def policy_out(p: Project) -> PolicyOut:
    return PolicyOut(
        p.id,
        p.dispatch_qps,
        p.worker_claim_qps,
        p.max_jobs_per_claim,
        p.recommended_lease_seconds,
        p.policy_version,
        REFRESH_AFTER_MS,
    )


def project_summary(s: ProjectSummary) -> ProjectSummaryOut:
    p, c = s.project, s.job_counts
    return ProjectSummaryOut(
        id=p.id,
        status=str(p.status),
        identity_mode=str(p.identity_mode),
        claim_order=str(p.claim_order),
        dispatch_qps=p.dispatch_qps,
        worker_claim_qps=p.worker_claim_qps,
        max_jobs_per_claim=p.max_jobs_per_claim,
        max_resets=p.max_resets,
        recommended_lease_seconds=p.recommended_lease_seconds,
        client_versions=sorted(p.client_versions),
        policy_version=p.policy_version,
        job_counts=JobCountsOut(c.todo, c.wip, c.done, c.failed, c.reset_exhausted),
        created_at=p.created_at,
        updated_at=p.updated_at,
    )


def admin_job(j: Job) -> AdminJobOut:
    extra = _spec_keys(j.spec)
    if j.external_id:
        extra["id"] = j.external_id
    return AdminJobOut(
        job_id=j.job_id,
        value=j.value,
        random_key=j.random_key,
        status=str(j.status),
        attempt_id=j.attempt_id,
        worker_id=j.worker_id,
        lease_expires_at=j.lease_expires_at,
        reset_count=j.reset_count,
        outcome=j.outcome,
        artifact_receipts=j.artifact_receipts,
        execution_error=j.execution_error,
        created_at=j.created_at,
        updated_at=j.updated_at,
        completed_at=j.completed_at,
        **extra,
    )


def user_out(item: UserListItem) -> UserOut:
    u = item.user
    extra: dict[str, Any] = {"github_login": u.github_login} if u.github_login else {}
    return UserOut(
        id=u.id,
        status=str(u.status),
        roles=sorted(str(r) for r in u.roles),
        machine_token_active=item.machine_token_active,
        machine_token_viewable=item.machine_token_viewable,
        created_at=u.created_at,
        updated_at=u.updated_at,
        **extra,
    )


class ProgressOut(_Out):
    """GET /api/v1/admin/projects/{id}/progress (issue 14; not in the reference)."""

    project_id: str
    job_counts: JobCountsOut
    percent_done: float | None
    rate_per_minute: float | None
    eta_seconds: int | None
    history_minutes: int
    resets_per_minute: float | None


RESPONSE_TYPES: tuple[type[msgspec.Struct], ...] = (
    ErrorEnvelope,
    BatchResultOut,
    ClaimOut,
    PolicyOut,
    ProjectSummaryOut,
    ProjectListOut,
    EnqueueOut,
    AdminJobOut,
    JobPageOut,
    UserListOut,
    TokenOut,
    WhoamiOut,
    HealthOut,
    SourceOut,
    ProgressOut,
)
