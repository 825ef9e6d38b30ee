"""Projects: settings, status rules (with D1) and PUT semantics (spec §1.7.2, §2.8)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum

from hq_domain.errors import InvalidRequest, ProjectNotActive
from hq_domain.ids import is_id
from hq_domain.storable import NUL

MAX_CLAIM_JOBS = 256
"""Most jobs one claim may ask for (spec §1.7.11) and a project may allow per claim (§1.7.2)."""
MAX_LEASE_SECONDS = 3600
"""Longest lease a claim or an extension may ask for, and a project may recommend."""
MAX_RESETS_LIMIT = 1000
DEFAULT_MAX_JOBS_PER_CLAIM = MAX_CLAIM_JOBS
DEFAULT_MAX_RESETS = 3
DEFAULT_LEASE_SECONDS = 300
MAX_CLIENT_VERSIONS = 64
REFRESH_AFTER_MS = 60_000
# Go's strings.TrimSpace set (unicode.IsSpace); Python's str.strip() also trims U+001C..U+001F.
GO_WHITESPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


class ProjectStatus(StrEnum):
    ACTIVE = "active"
    DRAINING = "draining"
    ARCHIVED = "archived"


class IdentityMode(StrEnum):
    NONE = "none"
    EXTERNAL_ID = "external_id"
    UNIQUE_VALUE = "unique_value"


class ClaimOrder(StrEnum):
    FIFO = "fifo"
    RANDOM = "random"


class WorkerOp(StrEnum):
    """The five worker operations gated by project status."""

    POLICY = "policy"
    CLAIM = "claim"
    COMPLETE = "complete"
    FAIL = "fail"
    EXTEND = "extend"


@dataclass(frozen=True, slots=True)
class Project:
    id: str
    status: ProjectStatus
    identity_mode: IdentityMode
    claim_order: ClaimOrder
    dispatch_qps: float | None
    worker_claim_qps: float | None
    max_jobs_per_claim: int
    max_resets: int
    recommended_lease_seconds: int
    client_versions: tuple[str, ...]  # sorted ascending
    policy_version: int
    created_at: int
    updated_at: int
    dispatch_tokens: float | None = None
    dispatch_refilled_at_ns: int | None = None


@dataclass(frozen=True, slots=True)
class JobCounts:
    todo: int = 0
    wip: int = 0
    done: int = 0
    failed: int = 0
    reset_exhausted: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "todo": self.todo,
            "wip": self.wip,
            "done": self.done,
            "failed": self.failed,
            "reset_exhausted": self.reset_exhausted,
        }


@dataclass(frozen=True, slots=True)
class ProjectSummary:
    project: Project
    job_counts: JobCounts


@dataclass(frozen=True, slots=True)
class ProjectPut:
    """A PUT project request after decoding; ``None`` means omitted/null (spec §1.7.2)."""

    status: str
    identity_mode: str | None = None
    claim_order: str | None = None
    dispatch_qps: float | None = None
    worker_claim_qps: float | None = None
    max_jobs_per_claim: int | None = None
    max_resets: int | None = None
    recommended_lease_seconds: int | None = None
    client_versions: tuple[str, ...] | None = None


def op_allowed(status: ProjectStatus, op: WorkerOp) -> bool:
    """D1: ``draining`` refuses only new claims; ``archived`` refuses all five operations."""
    if status is ProjectStatus.ACTIVE:
        return True
    if status is ProjectStatus.DRAINING:
        return op is not WorkerOp.CLAIM
    return False


def require_op_allowed(project: Project, op: WorkerOp) -> None:
    if not op_allowed(project.status, op):
        raise ProjectNotActive("project is not active")


def require_enqueue_allowed(project: Project) -> None:
    if project.status is ProjectStatus.ARCHIVED:
        raise ProjectNotActive("archived project cannot accept jobs")


def _valid_qps(value: float | None) -> bool:
    return value is None or (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def _valid_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (possible from stdlib-json callers)
        return False
    return True


def validate_client_versions(versions: tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    """Validate and sort a client-version allowlist (spec §1.2.7)."""
    if not versions:
        return ()
    if len(versions) > MAX_CLIENT_VERSIONS:
        raise InvalidRequest("client_versions must contain at most 64 versions")
    for v in versions:
        if (
            not isinstance(v, str)
            or not v
            or len(v.encode("utf-8", "surrogatepass")) > 128
            or v != v.strip(GO_WHITESPACE)
            or not _valid_utf8(v)
        ):
            raise InvalidRequest(
                "client_versions entries must be non-empty, at most 128 bytes, "
                "and have no surrounding whitespace"
            )
    if any(NUL in v for v in versions):
        raise InvalidRequest("client_versions entries must not contain U+0000")
    if len(set(versions)) != len(versions):
        raise InvalidRequest("client_versions must be unique")
    return tuple(sorted(versions))


def _policy_key(p: Project) -> tuple[object, ...]:
    return (
        p.dispatch_qps,
        p.worker_claim_qps,
        p.max_jobs_per_claim,
        p.max_resets,
        p.recommended_lease_seconds,
        p.client_versions,
    )


def apply_put(project_id: str, existing: Project | None, put: ProjectPut, now_s: int) -> Project:
    """The project a PUT produces: create with defaults, or full replacement on update.

    Raises :class:`InvalidRequest` with the spec's messages. Policy version bumps only when a
    policy field changes; a ``dispatch_qps`` change resets the dispatch bucket to unset.
    """
    if not is_id(project_id) or put.status not in ProjectStatus.__members__.values():
        raise InvalidRequest("invalid project")
    if put.identity_mode not in (None, "", *IdentityMode.__members__.values()):
        raise InvalidRequest("invalid project identity mode")
    if put.claim_order not in (None, "", *ClaimOrder.__members__.values()):
        raise InvalidRequest("invalid project claim order")
    if not _valid_qps(put.dispatch_qps) or not _valid_qps(put.worker_claim_qps):
        raise InvalidRequest("project QPS must be a positive finite number")
    max_jobs = put.max_jobs_per_claim or DEFAULT_MAX_JOBS_PER_CLAIM
    if not 1 <= max_jobs <= MAX_CLAIM_JOBS:
        raise InvalidRequest("max_jobs_per_claim must be between 1 and 256")
    max_resets = DEFAULT_MAX_RESETS if put.max_resets is None else put.max_resets
    if not 0 <= max_resets <= MAX_RESETS_LIMIT:
        raise InvalidRequest("max_resets must be between 0 and 1000")
    lease = (
        DEFAULT_LEASE_SECONDS
        if put.recommended_lease_seconds is None
        else put.recommended_lease_seconds
    )
    if not 1 <= lease <= MAX_LEASE_SECONDS:
        raise InvalidRequest("recommended_lease_seconds must be between 1 and 3600")
    versions = validate_client_versions(put.client_versions)
    dispatch_qps = None if put.dispatch_qps is None else float(put.dispatch_qps)
    worker_qps = None if put.worker_claim_qps is None else float(put.worker_claim_qps)

    if existing is None:
        return Project(
            id=project_id,
            status=ProjectStatus(put.status),
            identity_mode=IdentityMode(put.identity_mode or IdentityMode.EXTERNAL_ID),
            claim_order=ClaimOrder(put.claim_order or ClaimOrder.FIFO),
            dispatch_qps=dispatch_qps,
            worker_claim_qps=worker_qps,
            max_jobs_per_claim=max_jobs,
            max_resets=max_resets,
            recommended_lease_seconds=lease,
            client_versions=versions,
            policy_version=1,
            created_at=now_s,
            updated_at=now_s,
        )

    if put.identity_mode and put.identity_mode != existing.identity_mode:
        raise InvalidRequest("project identity mode cannot be changed")
    updated = replace(
        existing,
        status=ProjectStatus(put.status),
        claim_order=ClaimOrder(put.claim_order) if put.claim_order else existing.claim_order,
        dispatch_qps=dispatch_qps,
        worker_claim_qps=worker_qps,
        max_jobs_per_claim=max_jobs,
        max_resets=max_resets,
        recommended_lease_seconds=lease,
        client_versions=versions,
        updated_at=now_s,
    )
    if _policy_key(updated) != _policy_key(existing):
        updated = replace(updated, policy_version=existing.policy_version + 1)
    if updated.dispatch_qps != existing.dispatch_qps:
        updated = replace(updated, dispatch_tokens=None, dispatch_refilled_at_ns=None)
    return updated
