"""Worker operations: claim planning, mutation requests and item results (spec §1.7.10–15, §2.4).

The adapters perform these operations atomically; the arithmetic and the decisions that do not
need the database live here so both adapters share them.
"""

from __future__ import annotations

from dataclasses import dataclass

from hq_domain import ratelimit
from hq_domain.ids import is_id
from hq_domain.jobs import ArtifactReceipt, ClaimedJob, ExecutionError, JobStatus, Outcome
from hq_domain.projects import ClaimOrder, Project
from hq_domain.users import Principal

UNLIMITED_RETRY_AFTER_MS = 1000
MAX_BATCH_ITEMS = 256
CLAIM_SWEEP_LIMIT = 256
"""D2: a claim resets at most this many expired leases of its project before claiming, so a
backlog of expired leases costs each claim a bounded amount of work; the background sweeper
clears the rest in full batches."""


def gate_passes(
    principal: Principal | None, project: Project | None, project_id: str, client_version: str
) -> bool:
    """True when the worker-route gate (spec §1.6 steps 1–5) raises nothing: a known token of
    an active worker whose id is an ID, an existing project with an ID, and a client version
    on its allowlist. The ``gated_*`` store calls run their operation only then; the API
    raises the gate's errors, in the wire order, otherwise."""
    return (
        principal is not None
        and project is not None
        and is_id(project_id)
        and is_id(principal.user_id)
        and principal.is_active_worker
        and client_version in project.client_versions
    )


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    worker_id: str
    max_jobs: int
    lease_seconds: int
    accept_types: tuple[str, ...]  # empty = any type
    policy_version: int


@dataclass(frozen=True, slots=True)
class CompleteItem:
    job_id: int
    attempt_id: str
    outcome: Outcome
    artifact_receipts: tuple[ArtifactReceipt, ...] | None  # None = sent as null/absent


@dataclass(frozen=True, slots=True)
class FailItem:
    job_id: int
    attempt_id: str
    retryable: bool
    error: ExecutionError


@dataclass(frozen=True, slots=True)
class AttemptRef:
    job_id: int
    attempt_id: str


@dataclass(frozen=True, slots=True)
class ItemResult:
    """One item of a complete/fail/extend batch; rejected items are ``stale_attempt``."""

    job_id: int
    attempt_id: str
    applied: bool
    job_status: JobStatus | None = None
    lease_expires_at: int | None = None


@dataclass(frozen=True, slots=True)
class ClaimResult:
    project_id: str
    jobs: list[ClaimedJob]
    retry_after_ms: int
    policy_version: int


@dataclass(frozen=True, slots=True)
class ClaimPlan:
    """How many jobs a claim may take, and the refilled bucket when dispatch-limited."""

    limit: int
    tokens: float | None  # None when the project has no dispatch limit


def plan_claim(project: Project, max_jobs: int, now_ns: int) -> ClaimPlan:
    """Step 4 of spec §2.4: clamp to the project's per-claim maximum and whole tokens."""
    limit = min(max_jobs, project.max_jobs_per_claim)
    if project.dispatch_qps is None:
        return ClaimPlan(limit, None)
    tokens = ratelimit.refill(
        project.dispatch_tokens, project.dispatch_refilled_at_ns, now_ns, project.dispatch_qps
    )
    return ClaimPlan(min(limit, ratelimit.whole_tokens(tokens)), tokens)


def order_key(order: ClaimOrder, created_at: int, random_key: int, job_id: int) -> tuple[int, int]:
    """The claim order of todo rows: ``(created_at, job_id)`` or ``(random_key, job_id)``."""
    return (created_at, job_id) if order is ClaimOrder.FIFO else (random_key, job_id)


def bucket_start_ms(now_ms: int) -> int:
    """Start of the one-minute claim-audit bucket (spec §2.9)."""
    return now_ms - now_ms % 60_000
