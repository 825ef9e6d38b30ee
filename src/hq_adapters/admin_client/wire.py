"""Response shapes the admin client accepts (spec §1.7, §1.4).

Like the official Go client, every object is decoded with unknown-key rejection and every
documented key required; keys the spec marks as optional use ``UNSET``. Free-form objects
(``attr``, ``meta``, ``details``) are plain dicts.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

JsonObject = dict[str, Any]


class _In(msgspec.Struct, forbid_unknown_fields=True):
    pass


class APIErrorBody(_In):
    code: str
    message: str
    retryable: bool
    retry_after_ms: int
    details: JsonObject | None


class ErrorEnvelope(_In):
    error: APIErrorBody


class Whoami(_In):
    user_id: str


class JobCounts(_In):
    todo: int
    wip: int
    done: int
    failed: int
    reset_exhausted: int


class Progress(_In):
    """GET …/progress (issue 14; our server only: the reference answers 404)."""

    project_id: str
    job_counts: JobCounts
    percent_done: float | None
    rate_per_minute: float | None
    eta_seconds: int | None
    history_minutes: int
    resets_per_minute: float | None


class ProjectSummary(_In):
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
    job_counts: JobCounts
    created_at: int
    updated_at: int


class ProjectList(_In):
    projects: list[ProjectSummary]


class EnqueueResult(_In):
    project_id: str
    submitted: int
    inserted: int


class SourceResult(_In):
    project_id: str
    jobs: int
    inserted: int
    uncompressed_bytes: int


class Outcome(_In):
    kind: str
    code: int | None
    uri: str | None
    meta: JsonObject | None


class ArtifactReceipt(_In):
    id: str
    issuer: str
    object_id: str
    checksum: str
    size_bytes: int
    accepted_at: int


class ExecutionError(_In):
    code: str
    message: str
    details: JsonObject | None


class AdminJob(_In):
    job_id: int
    value: str
    type: str
    random_key: int
    status: str
    attempt_id: str | None
    worker_id: str | None
    lease_expires_at: int | None
    reset_count: int
    outcome: Outcome | None
    artifact_receipts: list[ArtifactReceipt] | None
    execution_error: ExecutionError | None
    created_at: int
    updated_at: int
    completed_at: int | None
    id: str | UnsetType = UNSET
    via: str | UnsetType = UNSET
    hops: int | UnsetType = UNSET
    attr: JsonObject | UnsetType = UNSET


class JobPage(_In):
    jobs: list[AdminJob]
    next_after_job_id: int | None


class User(_In):
    id: str
    status: str
    roles: list[str]
    machine_token_active: bool
    machine_token_viewable: bool
    created_at: int
    updated_at: int
    github_login: str | UnsetType = UNSET


class UserList(_In):
    users: list[User]


class MachineToken(_In):
    user_id: str
    token: str


def to_builtins(value: Any) -> Any:
    """Plain JSON-able data of a decoded response (UNSET keys dropped)."""
    return msgspec.to_builtins(value)
